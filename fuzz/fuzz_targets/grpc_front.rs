//! The gRPC front (`grpc/src/lib.rs`: limen-grpc's stream table over the
//! nghttp2 session and `wire::grpc::Framing`): the client preface and an
//! empty SETTINGS, then the input's bytes in the splits its first byte
//! picks; every request framed is answered at once with an outcome the
//! input's second byte cycles through (a result, a handler error, a
//! refusal, the server error, a description), and now and then the front
//! is stopped or timed out. When the second byte's bit 3 is set, the input
//! is preceded by the HEADERS of a server reflection call on stream 1 (v1,
//! or v1alpha by bit 2), so its DATA frames reach the reflection stream:
//! each whole message asks the caller again (a Describe, answered with a
//! description, or with the cycled outcome when bit 1 is set too), and the
//! answers, the ends and stop() run through the open response.
//!
//! Checks: no panic and no crash across the binding; every request names
//! the front's correlation and a client stream (odd, positive) as its
//! client id, each stream framed at most once (a reflection stream asks
//! once per message); the table never holds more than its limit; output
//! is whole frames; `Closed` comes once, last, and nothing is written
//! after it.
#![no_main]

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::{Delivery, Outcome, Principal, Refusal, RefusalKind, RequestKind};
use limen_core::wire::front::FrontEvent;
use limen_core::wire::grpc::Framing;
use limen_grpc::{GrpcFront, GrpcLimits};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
const CORRELATION: u64 = 77;

const SRC: &str = "type Place { qty: Int; } type Receipt { order: Int; } type Err { code: String; }\n\
    api Desk { rpc Book::place; rpc Book::cancel; }\n\
    locus Book { fn place(p: Place) -> Receipt { } fn cancel(p: Place) -> Receipt fallible(Err) { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    locus T { fn principal(t: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
    main locus M {\n\
      params { b: Book = Book { }; g: G = G { }; t: T = T { }; }\n\
      run() { let s = api::serve(Desk, grpc::Rpc { bind: \"127.0.0.1:0\", codec: json, principals: self.t, roles: self.g }, as: \"desk\", bound: 4, on_full: refuse); }\n\
    }\n";

fn framing() -> Arc<Framing> {
    static FRAMING: OnceLock<Arc<Framing>> = OnceLock::new();
    FRAMING
        .get_or_init(|| {
            let p = parse_program("f.hl", SRC).expect("the program parses");
            Arc::new(Framing::new(&p, p.exposure("desk").expect("desk")).expect("a framing"))
        })
        .clone()
}

fn outcome(pick: u8) -> Outcome {
    match pick % 5 {
        0 => Outcome::Result(br#"{"order": 1}"#.to_vec()),
        1 => Outcome::HandlerError(br#"{"code": "x"}"#.to_vec()),
        2 => Outcome::from(Refusal::new(RefusalKind::Malformed, "why é %")),
        3 => Outcome::ServerError,
        _ => Outcome::Description(b"{}".to_vec()),
    }
}

/// HPACK's literal header field without indexing, a new name, no Huffman
/// (every name and value here is under 127 bytes).
fn hpack(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        out.push(0);
        out.push(n.len() as u8);
        out.extend_from_slice(n.as_bytes());
        out.push(v.len() as u8);
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// The HEADERS frame (END_HEADERS) of a reflection call on stream 1.
fn reflection_headers(alpha: bool) -> Vec<u8> {
    let path = if alpha {
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
    } else {
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
    };
    let block = hpack(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "x"),
        ("content-type", "application/grpc"),
        ("authorization", "Bearer t"),
    ]);
    let mut out = (block.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[1, 4, 0, 0, 0, 1]);
    out.extend_from_slice(&block);
    out
}

fuzz_target!(|data: &[u8]| {
    let [split, pick, data @ ..] = data else {
        return;
    };
    let chunk = usize::from(split % 32) + 1;
    let limits = GrpcLimits {
        max_streams: 3,
        ..GrpcLimits::default()
    };
    let mut front = GrpcFront::new(0, limits, framing(), CORRELATION).expect("a front");
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(EMPTY_SETTINGS);
    if pick & 8 != 0 {
        input.extend(reflection_headers(pick & 4 != 0));
    }
    input.extend_from_slice(data);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut closed = false;
    let mut now = 0;
    for (i, piece) in input.chunks(chunk).enumerate() {
        now += 1;
        front.handle_data(now, piece);
        match (pick >> 4, i) {
            (1, 3) => front.stop(now),
            (2, 5) => front.handle_timeout(now + limits.write_stall),
            _ => {}
        }
        loop {
            while let Some(event) = front.poll_event() {
                assert!(!closed, "an event after Closed: {event:?}");
                match event {
                    FrontEvent::Request { request, .. } => {
                        assert_eq!(request.correlation, CORRELATION);
                        let stream: i32 = request
                            .client_id
                            .as_deref()
                            .and_then(|s| s.parse().ok())
                            .expect("the stream as client id");
                        assert!(stream > 0 && stream % 2 == 1, "{stream}");
                        let describe = request.kind == RequestKind::Describe;
                        // A reflection stream asks once per message.
                        assert!(
                            describe || seen.insert(stream),
                            "stream {stream} framed twice"
                        );
                        let outcome = if describe && pick & 2 == 0 {
                            Outcome::Description(b"{}".to_vec())
                        } else {
                            outcome(*pick)
                        };
                        front.deliver(
                            now,
                            Delivery {
                                correlation: CORRELATION,
                                request_id: 1,
                                client_id: request.client_id,
                                caller: Principal::bearer("x"),
                                outcome,
                            },
                        );
                    }
                    FrontEvent::Lost => {}
                    FrontEvent::Closed => closed = true,
                }
            }
            assert!(front.streams_held() <= limits.max_streams);
            let bytes = front.pending_output();
            if bytes.is_empty() {
                break;
            }
            assert!(!closed, "output after Closed");
            let n = bytes.len();
            out.extend_from_slice(bytes);
            front.consume_output(now, n);
        }
        if closed {
            break;
        }
    }
    // Whole frames.
    let mut at = 0;
    while at < out.len() {
        assert!(at + 9 <= out.len(), "a cut frame header");
        let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
        at += 9 + len;
    }
    assert_eq!(at, out.len(), "a cut frame");
});
