//! The Unix JSON-lines machine (`core/src/wire/line.rs`), behind the Unix
//! transport front that frames its requests and answers what is not one
//! (`core/src/wire/front.rs`), fed the input as a peer's bytes, then its
//! EOF.
//!
//! Checks, under the default limits and under a 64-byte line (so the
//! limit's paths are reached by short inputs): the same events and the same
//! output whether the bytes come whole, byte by byte or in arbitrary
//! pieces; events in their only possible order (requests, then `Lost`
//! once, then `Closed` once); a framed payload and id are one JSON value
//! each, and every request carries the peer as its credential; every line
//! the front writes by itself is a malformed refusal with `request_id` 0;
//! once its output is written a draining connection closes; the
//! stalled-write timer fires at the deadline `poll_timeout` names, not a
//! nanosecond before; and every line reads the same through `parse_line`
//! (whose fast path takes plain calls) as through the tokenizer alone, and
//! as through `parse_line_keeping` (the WebSocket hub's frame reader).
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::{Credential, Payload, PeerCredentials, RequestKind};
use limen_core::json::Tokenizer;
use limen_core::wire::front::{Front, FrontEvent, Machine};
use limen_core::wire::line::{
    parse_line, parse_line_keeping, parse_line_tokenized, Limits, LineConn,
};
use limen_core::wire::unix::UnixFront;
use limen_core::SECOND;
use limen_fuzz::{feeds, hex};

const PEER: PeerCredentials = PeerCredentials {
    uid: 1000,
    gid: 1000,
    pid: 4242,
    groups: None,
};

/// Whether `text` is one JSON value (the tokenizer refuses empty and blank
/// text, so no count of events is needed).
fn one_json_value(text: &[u8]) -> bool {
    Tokenizer::new(text).read_to_end().is_ok()
}

#[derive(Debug, PartialEq)]
struct Run {
    events: Vec<FrontEvent>,
    output: Vec<u8>,
    closed: bool,
}

fn run(limits: Limits, feed: &[&[u8]]) -> Run {
    let mut c = UnixFront::new(0, limits, PEER, 1);
    let mut events = Vec::new();
    for piece in feed {
        c.handle_data(0, piece);
        events.extend(std::iter::from_fn(|| c.poll_event()));
    }
    c.handle_eof(0);
    events.extend(std::iter::from_fn(|| c.poll_event()));
    Run {
        output: c.pending_output().to_vec(),
        closed: c.is_closed(),
        events,
    }
}

fn check(limits: Limits, data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        assert_eq!(
            parse_line(line),
            parse_line_tokenized(line),
            "the fast path differs on {}",
            hex(line)
        );
        // A hub's frame reader (the same pass, keeping `type` and `topic`)
        // reads the same request.
        assert_eq!(
            parse_line_keeping(line, ["type", "topic"]).map(|(r, _)| r),
            parse_line_tokenized(line),
            "keeping keys differs on {}",
            hex(line)
        );
    }
    let all = feeds(data);
    let first = run(limits, &all[0]);
    for feed in &all[1..] {
        let other = run(limits, feed);
        assert_eq!(
            first,
            other,
            "whole and split differ; pieces: {:?}",
            feed.iter().map(|p| hex(p)).collect::<Vec<_>>()
        );
    }

    // Requests, then Lost once (the EOF, or the refused line), then Close.
    let mut ev = first.events.iter().peekable();
    while let Some(FrontEvent::Request { request, raw }) = ev.peek() {
        assert!(raw.is_none());
        assert_eq!(request.correlation, 1);
        assert_eq!(request.credential, Credential::Peer(PEER));
        if let RequestKind::Call {
            payload: Payload::Json(payload),
            ..
        } = &request.kind
        {
            assert!(one_json_value(payload), "payload {}", hex(payload));
        }
        if let Some(id) = &request.client_id {
            assert!(one_json_value(id.as_bytes()), "id {id}");
        }
        ev.next();
    }
    assert_eq!(ev.next(), Some(&FrontEvent::Lost), "{:?}", first.events);
    let rest: Vec<_> = ev.collect();
    assert_eq!(rest.is_empty(), !first.closed, "{:?}", first.events);
    if first.closed {
        assert_eq!(rest, [&FrontEvent::Closed]);
        assert!(first.output.is_empty());
    }

    // What the front wrote by itself: one malformed refusal, request_id 0.
    if !first.output.is_empty() {
        assert_eq!(first.output.last(), Some(&b'\n'));
        let lines: Vec<&[u8]> = first.output[..first.output.len() - 1]
            .split(|&b| b == b'\n')
            .collect();
        assert_eq!(lines.len(), 1, "{}", String::from_utf8_lossy(&first.output));
        let reply: serde_json::Value =
            serde_json::from_slice(lines[0]).expect("the refusal is JSON");
        assert_eq!(reply["request_id"], 0);
        assert_eq!(reply["ok"], false);
        assert_eq!(reply["refusal"]["kind"], "malformed");
    }

    // The stalled-write timer: no-op before its deadline, fires at it; and
    // a draining connection closes once its output is written.
    let mut c = UnixFront::new(0, limits, PEER, 1);
    c.handle_data(0, data);
    while c.poll_event().is_some() {}
    let queued = !c.pending_output().is_empty();
    let mut raw = LineConn::new(0, limits);
    raw.send_line(SECOND, b"{\"request_id\":1}");
    let deadline = raw.poll_timeout().expect("output is queued");
    assert_eq!(deadline, SECOND + limits.stalled_write);
    raw.handle_timeout(deadline - 1);
    assert!(!raw.is_closed(), "the timer fired before its deadline");
    raw.handle_timeout(deadline);
    assert!(raw.is_closed(), "the timer did not fire at its deadline");
    if !queued {
        return;
    }
    // The front's own answer was queued at 0.
    let deadline = c.poll_timeout().expect("output is queued");
    assert_eq!(deadline, limits.stalled_write);
    c.handle_timeout(deadline - 1);
    assert!(!c.is_closed(), "the timer fired before its deadline");
    c.handle_timeout(deadline);
    assert!(c.is_closed(), "the timer did not fire at its deadline");
    assert_eq!(c.poll_timeout(), None);

    let mut c = UnixFront::new(0, limits, PEER, 1);
    c.handle_data(0, data);
    c.handle_eof(0);
    while c.poll_event().is_some() {}
    let n = c.pending_output().len();
    c.consume_output(0, n);
    while c.poll_event().is_some() {}
    assert!(c.is_closed());
    assert_eq!(c.poll_timeout(), None);
}

fuzz_target!(|data: &[u8]| {
    check(Limits::default(), data);
    check(
        Limits {
            max_line: 64,
            max_output: 256,
            ..Limits::default()
        },
        data,
    );
});
