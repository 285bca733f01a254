//! One tools/call's CPU through the machines, from request bytes to
//! response bytes, beside the same call over plain HTTP, in one run: the
//! transport front ([`Front`], the same the server drives) reads the request
//! and frames it for the exposure, the exposure admits,
//! dispatches and completes it with the witness's receipt, and the outcome
//! is encoded and written as the response. What a socket costs is the same
//! on both sides and is `benches/scripts/mcp-vs-http`'s.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use limen_core::hale::docs::McpDescriber;
use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::*;
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::wire::front::{Front, FrontEvent};
use limen_core::wire::http::HttpFront;
use limen_core::wire::{http1, mcp};
use std::sync::Arc;

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const DIGEST: &str = "fnv1a64:a8930d6e7998e986";
const RECEIPT: &[u8] = br#"{"order":41,"notional":125000}"#;

fn exposure(via: &str) -> (Exposure, Arc<mcp::Framing>) {
    let program = parse_program("desk.hl", DESK).expect("desk.hl parses");
    let e = program.exposure("public").expect("public");
    let spec = exposure_spec(&program, e, via).expect("a spec");
    let framing = Arc::new(mcp::Framing::new(&spec));
    let tokens = TokenTable::new(Some("no such token")).with("t-alice", "alice");
    let roles = RoleTable::new().grant("alice", "trader");
    let mut ex = Exposure::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(roles),
        Box::new(ShapeCodec::new(&program, e).expect("a codec")),
        Box::new(McpDescriber::new(&program, e).expect("a describer")),
    );
    ex.handle_input(
        0,
        Input::ReceiverBorn {
            receiver: 0,
            stamp: 1,
        },
    );
    (ex, framing)
}

fn head(path: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t-alice\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Runs one request's bytes through the machines; the response's length.
fn trip(
    ex: &mut Exposure,
    framing: Option<&Arc<mcp::Framing>>,
    bytes: &[u8],
    correlation: u64,
) -> usize {
    let limits = http1::Limits::default();
    let mut front: Box<dyn Front> = match framing {
        Some(f) => Box::new(mcp::McpFront::new(0, limits, f.clone(), correlation)),
        None => Box::new(HttpFront::new(0, limits, correlation)),
    };
    front.handle_data(0, bytes);
    let Some(FrontEvent::Request { request, .. }) = front.poll_event() else {
        panic!("a request")
    };
    ex.handle_input(0, Input::Request { request, wall: 0 });
    while let Some(event) = ex.poll_event() {
        match event {
            Event::Dispatch(d) => {
                let completion = Completion::Returned(RECEIPT.to_vec());
                let request_id = d.request_id;
                ex.handle_input(
                    0,
                    Input::Completion {
                        request_id,
                        completion,
                    },
                );
            }
            Event::Deliver(d) => {
                front.deliver(0, d);
            }
            _ => {}
        }
    }
    let n = front.pending_output().len();
    front.consume_output(0, n);
    n
}

fn bench(c: &mut Criterion) {
    let (mut over_mcp, framing) = exposure("mcp");
    let (mut over_http, _) = exposure("http");
    let mcp_bytes = head(
        "/mcp",
        "Accept: application/json, text/event-stream\r\n",
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"Orders__place","arguments":{{"symbol":"ACME","qty":10,"limit":12500}},"_meta":{{"hale/digest":"{DIGEST}"}}}}}}"#
        ),
    );
    let http_bytes = head(
        "/call/Orders::place",
        &format!("Hale-Surface-Digest: {DIGEST}\r\n"),
        r#"{"symbol":"ACME","qty":10,"limit":12500}"#,
    );
    assert!(trip(&mut over_mcp, Some(&framing), &mcp_bytes, 1) > 0);
    assert!(trip(&mut over_http, None, &http_bytes, 1) > 0);
    let (mut a, mut b) = (0u64, 0u64);
    let p = limen_benches::paired::paired(
        60,
        20_000,
        || {
            a += 1;
            black_box(trip(
                &mut over_mcp,
                Some(&framing),
                black_box(&mcp_bytes),
                a,
            ));
        },
        || {
            b += 1;
            black_box(trip(&mut over_http, None, black_box(&http_bytes), b));
        },
    );
    println!(
        "paired, per call: fastest mcp {:.0} ns, http {:.0} ns (mcp/http time {:.2}); medians {:.0} ns and {:.0} ns ({:.2})",
        p.fastest[0],
        p.fastest[1],
        p.fastest[0] / p.fastest[1],
        p.median[0],
        p.median[1],
        p.median[0] / p.median[1]
    );
    let mut g = c.benchmark_group("tools_call");
    g.bench_function("mcp tools/call, bytes to bytes", |bch| {
        bch.iter(|| {
            a += 1;
            black_box(trip(
                &mut over_mcp,
                Some(&framing),
                black_box(&mcp_bytes),
                a,
            ))
        })
    });
    g.bench_function("http /call, bytes to bytes", |bch| {
        bch.iter(|| {
            b += 1;
            black_box(trip(&mut over_http, None, black_box(&http_bytes), b))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
