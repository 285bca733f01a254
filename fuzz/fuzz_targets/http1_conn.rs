//! The HTTP/1.1 machine (`core/src/wire/http1.rs`) and Hale's framing of
//! its requests (`core/src/wire/http.rs`), fed the input as a peer's
//! bytes, then its EOF.
//!
//! Checks, under the default limits and under small ones (a 256-byte head,
//! a 64-byte body, four headers, so the limits' paths are reached by short
//! inputs): the same events whether the bytes come whole, byte by byte or
//! in arbitrary pieces; at most one request (or malformed one) a
//! connection, its body exactly its `Content-Length` (`1*DIGIT`); the
//! events in their only possible order; Hale's framing takes any request
//! and percent-decodes its target as RFC 3986 does; a response is written
//! whole, in any pieces, and then the connection closes; the read and write
//! timers act at the deadline `poll_timeout` names, not before; a close
//! lingers (RFC 9112 § 9.6) only once a response is written whole, always
//! after a refusal of a request not read whole, never after a timer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::{Payload, RequestKind};
use limen_core::wire::http::{frame, frame_malformed, percent_decode};
use limen_core::wire::http1::{HttpConn, HttpEvent, Limits};
use limen_core::wire::machine::Machine;
use limen_core::SECOND;
use limen_fuzz::{feeds, hex, pieces};

/// RFC 3986's `pct-encoded = "%" HEXDIG HEXDIG`, decoded independently of
/// the code under test; `None` for a broken escape or text that is not
/// UTF-8.
fn percent_decoded(s: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hi = (bytes.next()? as char).to_digit(16)?;
            let lo = (bytes.next()? as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

fn run(limits: Limits, feed: &[&[u8]]) -> (Vec<HttpEvent>, bool) {
    let mut c = HttpConn::new(0, limits);
    let mut events = Vec::new();
    for piece in feed {
        c.handle_data(0, piece);
        events.extend(std::iter::from_fn(|| c.poll_event()));
    }
    c.handle_eof(0);
    events.extend(std::iter::from_fn(|| c.poll_event()));
    (events, c.is_closed())
}

fn check(limits: Limits, data: &[u8]) {
    let all = feeds(data);
    let first = run(limits, &all[0]);
    for feed in &all[1..] {
        assert_eq!(
            first,
            run(limits, feed),
            "whole and split differ; pieces: {:?}",
            feed.iter().map(|p| hex(p)).collect::<Vec<_>>()
        );
    }
    let (events, closed) = first;
    match &events[..] {
        // Cut off, or refused by the peer's EOF before it was whole.
        [HttpEvent::Close] => assert!(closed),
        [HttpEvent::Request(r), HttpEvent::Lost] => {
            assert!(!closed);
            let length = r
                .header("content-length")
                .map(|v| {
                    let s = std::str::from_utf8(v).expect("an accepted length is text");
                    let s = s.trim_matches([' ', '\t']);
                    assert!(
                        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
                        "Content-Length {s:?} is not 1*DIGIT (RFC 9112 § 6.3)"
                    );
                    s.parse::<usize>().unwrap()
                })
                .unwrap_or(0);
            assert_eq!(r.body.len(), length);
            assert!(r.body.len() <= limits.max_body);
            assert!(r.headers.len() <= limits.max_headers);
            let framed = frame(r, 7);
            assert_eq!(framed.correlation, 7);
            if let RequestKind::Call { member, payload } = &framed.kind {
                assert!(!member.is_empty());
                assert_eq!(payload, &Payload::Json(r.body.clone()));
            }
            assert_eq!(percent_decode(&r.target), percent_decoded(&r.target));
        }
        [HttpEvent::Malformed { reason, head }, HttpEvent::Lost] => {
            assert!(!closed);
            assert!(!reason.is_empty());
            let framed = frame_malformed(reason, head.as_ref(), 7);
            assert!(matches!(framed.kind, RequestKind::Malformed { .. }));
        }
        other => panic!("events out of order: {other:?}"),
    }

    // The read timer: silence after the last byte, 10 s in all.
    let mut c = HttpConn::new(0, limits);
    c.handle_data(SECOND, data);
    let taken: Vec<HttpEvent> = std::iter::from_fn(|| c.poll_event()).collect();
    let waiting = !taken.is_empty();
    let refused = matches!(taken[..], [HttpEvent::Malformed { .. }]);
    match c.poll_timeout() {
        Some(deadline) => {
            assert!(!waiting);
            let expect = if data.is_empty() { 0 } else { SECOND } + limits.silence;
            assert_eq!(deadline, expect.min(limits.request));
            c.handle_timeout(deadline - 1);
            assert!(!c.is_closed(), "the read timer fired before its deadline");
            c.handle_timeout(deadline);
            assert!(c.is_closed(), "the read timer did not fire at its deadline");
            assert!(!c.lingers(), "nothing was written: nothing to linger for");
        }
        None => {
            assert!(waiting);
            // A response written in pieces, with the stalled-write timer
            // pushed back by each, and the connection closed once it is out.
            c.send_json(2 * SECOND, 422, b"{\"refusal\":{\"kind\":\"malformed\"}}");
            let out = c.pending_output().to_vec();
            assert!(out.starts_with(b"HTTP/1.1 422 Unprocessable Content\r\n"));
            let mut now = 2 * SECOND;
            let cuts = pieces(&out, limen_fuzz::fnv1a(data));
            for (i, piece) in cuts.iter().enumerate() {
                assert!(!c.is_closed());
                assert!(!c.lingers(), "the response is not written whole");
                assert_eq!(c.poll_timeout(), Some(now + limits.stalled_write));
                c.handle_timeout(now + limits.stalled_write - 1);
                assert!(!c.is_closed(), "the write timer fired before its deadline");
                if !piece.is_empty() {
                    now += 1;
                }
                assert_eq!(c.pending_output(), &out[cuts[..i].concat().len()..]);
                c.consume_output(now, piece.len());
            }
            assert!(c.is_closed());
            if refused {
                assert!(c.lingers(), "a refusal before the request was read");
            }
            if c.lingers() && !refused {
                assert!(
                    data.len() > taken_len(&taken),
                    "lingers with nothing past the request"
                );
            }
            assert_eq!(
                std::iter::from_fn(|| c.poll_event()).last(),
                Some(HttpEvent::Close)
            );
            assert_eq!(c.poll_timeout(), None);
        }
    }
}

/// The body's length of the one request taken: the input is longer than
/// it when anything came past the request (its head adds more).
fn taken_len(events: &[HttpEvent]) -> usize {
    match events {
        [HttpEvent::Request(r)] => r.body.len(),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    check(Limits::default(), data);
    check(
        Limits {
            max_head: 256,
            max_body: 64,
            max_headers: 4,
            ..Limits::default()
        },
        data,
    );
});
