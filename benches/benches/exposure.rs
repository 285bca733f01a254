//! One call's trip through the exposure machine — admission's eight
//! checks, the strict decode of the witness's PlaceOrder payload, dispatch,
//! completion with the encoded receipt, and the HTTP encoding of the
//! outcome — beside a bare serde_json decode of the same payload into a
//! struct and encode of the same receipt, in one run.
//!
//! Before timing, the heap held per pending request is measured with the
//! counting allocator: the live bytes with N accepted, undispatched
//! requests, divided by N, less the payload's own bytes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use limen_benches::alloc::{live_during, Counting};
use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::*;
use limen_core::hale::serving::{exposure_spec, ShapeCodec};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const PAYLOAD: &[u8] = br#"{"symbol":"ACME","qty":10,"limit":12500}"#;

struct NoDoc;
impl Describer for NoDoc {
    fn describe(&self, _: &Principal, _: &[String], _: &[usize]) -> Vec<u8> {
        Vec::new()
    }
}

fn exposure(bound: usize) -> Exposure {
    let program = parse_program("desk.hl", DESK).expect("desk.hl parses");
    let e = program.exposure("public").expect("public");
    let mut spec = exposure_spec(&program, e, "http").expect("a spec");
    spec.bound = bound;
    let codec = ShapeCodec::new(&program, e).expect("a codec");
    let tokens = TokenTable::new(Some("no such token")).with("t-alice", "alice");
    let roles = RoleTable::new().grant("alice", "trader");
    let mut ex = Exposure::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(roles),
        Box::new(codec),
        Box::new(NoDoc),
    );
    ex.handle_input(
        0,
        Input::ReceiverBorn {
            receiver: 0,
            stamp: 1,
        },
    );
    ex
}

fn request(correlation: u64) -> Request {
    Request {
        correlation,
        kind: RequestKind::Call {
            member: "Orders::place".into(),
            payload: Payload::Json(PAYLOAD.to_vec()),
        },
        digest: Some("fnv1a64:a8930d6e7998e986".into()),
        credential: Credential::Bearer(Some("t-alice".into())),
        client_id: None,
    }
}

/// The handler's work both sides share: read the order, write the receipt.
#[derive(serde::Deserialize)]
struct PlaceOrder {
    #[allow(dead_code)]
    symbol: String,
    qty: i64,
    limit: i64,
}

#[derive(serde::Serialize)]
struct OrderReceipt {
    order: i64,
    notional: i64,
}

fn receipt(qty: i64, limit: i64) -> Vec<u8> {
    serde_json::to_vec(&OrderReceipt {
        order: 41,
        notional: qty * limit,
    })
    .expect("a receipt")
}

fn trip(ex: &mut Exposure, correlation: u64) -> (u16, Vec<u8>) {
    let request = request(correlation);
    ex.handle_input(0, Input::Request { request, wall: 0 });
    let mut out = (0, Vec::new());
    while let Some(event) = ex.poll_event() {
        match event {
            Event::Dispatch(d) => {
                let qty = d.payload["qty"].as_i64().unwrap_or(0);
                let limit = d.payload["limit"].as_i64().unwrap_or(0);
                let completion = Completion::Returned(receipt(qty, limit));
                let request_id = d.request_id;
                ex.handle_input(
                    0,
                    Input::Completion {
                        request_id,
                        completion,
                    },
                );
            }
            Event::Deliver(d) => out = d.outcome.into_http(),
            _ => {}
        }
    }
    out
}

fn bare(payload: &[u8]) -> Vec<u8> {
    let order: PlaceOrder = serde_json::from_slice(payload).expect("a PlaceOrder");
    receipt(order.qty, order.limit)
}

fn per_pending() {
    const N: usize = 10_000;
    let mut ex = exposure(N);
    // An unannounced receiver: every request is accepted and waits queued.
    let mut fresh = {
        let program = parse_program("desk.hl", DESK).expect("desk.hl parses");
        let e = program.exposure("public").expect("public");
        let mut spec = exposure_spec(&program, e, "http").expect("a spec");
        spec.bound = N;
        let codec = ShapeCodec::new(&program, e).expect("a codec");
        let tokens = TokenTable::new(None).with("t-alice", "alice");
        Exposure::new(
            spec,
            Some(Box::new(tokens)),
            Box::new(RoleTable::new()),
            Box::new(codec),
            Box::new(NoDoc),
        )
    };
    let requests: Vec<Request> = (0..N as u64).map(request).collect();
    let live = live_during(|| {
        for r in requests {
            fresh.handle_input(
                0,
                Input::Request {
                    request: r,
                    wall: 0,
                },
            );
            while fresh.poll_event().is_some() {}
        }
    });
    assert_eq!(fresh.pending_len(), N);
    // The decoded payload is the request's own; the rest is the machine's.
    let payload = serde_json::json!({"symbol":"ACME","qty":10,"limit":12500});
    let payload_bytes = live_during(|| vec![payload.clone(); 1]).saturating_sub(24);
    println!(
        "memory per pending request: {} bytes live in all, of which the decoded payload {} bytes: {} bytes beyond it",
        live / N,
        payload_bytes,
        (live / N).saturating_sub(payload_bytes)
    );
    let _ = trip(&mut ex, 0);
}

fn bench(c: &mut Criterion) {
    per_pending();
    let mut ex = exposure(64);
    let mut n = 0;
    let p = limen_benches::paired::paired(
        60,
        20_000,
        || {
            n += 1;
            black_box(trip(&mut ex, n));
        },
        || {
            black_box(bare(black_box(PAYLOAD)));
        },
    );
    println!(
        "paired, per call: fastest trip {:.0} ns, bare serde_json {:.0} ns: machine overhead {:.0} ns; medians {:.0} ns and {:.0} ns: overhead {:.0} ns",
        p.fastest[0],
        p.fastest[1],
        p.fastest[0] - p.fastest[1],
        p.median[0],
        p.median[1],
        p.median[0] - p.median[1]
    );
    let mut g = c.benchmark_group("place_order");
    g.bench_function("limen exposure trip", |b| {
        b.iter(|| {
            n += 1;
            black_box(trip(&mut ex, n))
        })
    });
    g.bench_function("serde_json decode + encode", |b| {
        b.iter(|| black_box(bare(black_box(PAYLOAD))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
