//! The client side of HTTP/1.1 (`core/src/wire/http1/client.rs`): the
//! response reader the CLI, the recorder and the conformance checker read
//! a server's bytes with, fed the input as a server's bytes, then its EOF.
//!
//! Mode byte (its low bits: the request was `GET`, `HEAD` or `CONNECT`;
//! bit 2: small limits, a 128-byte head, four headers, a 64-byte body, so
//! the limits' paths are reached by short inputs), then the server's
//! bytes. Checks: the same response, error (kind, byte and words) and rest
//! whether the bytes come whole, byte by byte or in arbitrary pieces; a
//! response whole before the EOF is the one read with it, and is whole at
//! the same point in any longer input; an error's byte lies within the
//! input; a response keeps within its limits, a body framed by
//! `Content-Length` is exactly that long (`1*DIGIT`, RFC 9112 § 6.3) and a
//! bodiless response (HEAD, 1xx, 204, 304) has none; and a response read
//! whole, written again with its body's length, reads back as itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::wire::http1::client::{
    read_response, Limits, Response, ResponseError, ResponseReader,
};
use limen_fuzz::{feeds, hex};

/// What one feed reads: the response or the error, whether it was whole
/// before the EOF, and the bytes past it.
type Read = (Result<Response, ResponseError>, bool, Vec<u8>);

fn run(method: &str, limits: Limits, feed: &[&[u8]]) -> Read {
    let mut r = ResponseReader::new(method, limits);
    let mut whole_before_eof = false;
    let mut got = None;
    for piece in feed {
        if let Err(e) = r.handle_data(piece) {
            return (Err(e), false, Vec::new());
        }
        if let Some(response) = r.poll_response() {
            assert!(got.is_none(), "a second response from one reader");
            got = Some(response);
            whole_before_eof = true;
        }
    }
    if let Err(e) = r.handle_eof() {
        assert!(got.is_none(), "an error after the response was whole");
        return (Err(e), false, Vec::new());
    }
    if let Some(response) = r.poll_response() {
        assert!(got.is_none(), "a second response from one reader");
        got = Some(response);
    }
    let response = got.expect("after the EOF a response is whole or an error");
    assert!(r.is_done());
    (Ok(response), whole_before_eof, r.take_rest())
}

fn check(method: &str, limits: Limits, data: &[u8]) {
    let all = feeds(data);
    let first = run(method, limits, &all[0]);
    for feed in &all[1..] {
        assert_eq!(
            first,
            run(method, limits, feed),
            "whole and split differ; pieces: {:?}",
            feed.iter().map(|p| hex(p)).collect::<Vec<_>>()
        );
    }
    let (result, whole_before_eof, rest) = first;
    // Read from scratch, as the conformance runner reads its replies.
    let open = read_response(method, data, false, limits);
    match &result {
        Err(e) => {
            assert!(
                e.offset <= data.len() as u64,
                "{e} past {} bytes",
                data.len()
            );
            assert!(!e.reason.is_empty());
            assert!(
                !matches!(open, Ok(Some(_))),
                "whole without the EOF, refused with it"
            );
        }
        Ok(r) => {
            assert_eq!(
                open,
                Ok(whole_before_eof.then(|| r.clone())),
                "a response read from scratch differs"
            );
            if whole_before_eof {
                // Whole at a point: what follows changes nothing.
                let mut longer = data.to_vec();
                longer.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
                assert_eq!(
                    read_response(method, &longer, false, limits),
                    Ok(Some(r.clone()))
                );
            } else {
                assert!(rest.is_empty());
            }
            assert!(r.body.len() <= limits.max_body);
            assert!(r.headers.len() <= limits.max_headers);
            assert!(
                (100..600).contains(&r.status),
                "status {} (RFC 9110 § 15)",
                r.status
            );
            let bodiless = method == "HEAD"
                || matches!(r.status, 101 | 204 | 304)
                || (method == "CONNECT" && (200..300).contains(&r.status));
            if bodiless {
                assert!(r.body.is_empty());
            } else if r.header("transfer-encoding").is_none() {
                if let Some(v) = r.header("content-length") {
                    let s = std::str::from_utf8(v).expect("an accepted length is text");
                    let s = s.trim_matches([' ', '\t']);
                    assert!(
                        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
                        "Content-Length {s:?} is not 1*DIGIT (RFC 9112 § 6.3)"
                    );
                    assert_eq!(r.body.len() as u64, s.parse::<u64>().unwrap());
                }
            }
            if !bodiless && !(100..200).contains(&r.status) {
                round_trip(method, r);
            }
        }
    }
}

/// The response written again (its headers but the framing ones, its body
/// with its length) reads back as itself.
fn round_trip(method: &str, r: &Response) {
    let mut out = format!("HTTP/1.{} {} {}\r\n", r.version, r.status, r.reason).into_bytes();
    let framing = ["content-length", "transfer-encoding"];
    for (name, value) in &r.headers {
        if framing.iter().any(|f| name.eq_ignore_ascii_case(f)) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", r.body.len()).as_bytes());
    out.extend_from_slice(&r.body);
    let limits = Limits {
        max_head: out.len(),
        max_headers: r.headers.len() + 1,
        max_body: r.body.len(),
    };
    let again = read_response(method, &out, false, limits)
        .unwrap_or_else(|e| panic!("written again, refused: {e}: {}", hex(&out)))
        .expect("written again with its length, whole");
    assert_eq!((again.version, again.status), (r.version, r.status));
    assert_eq!(again.reason, r.reason);
    assert_eq!(again.body, r.body);
    let kept = |h: &[(String, Vec<u8>)]| {
        h.iter()
            .filter(|(n, _)| !framing.iter().any(|f| n.eq_ignore_ascii_case(f)))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(kept(&again.headers), kept(&r.headers));
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let method = ["GET", "HEAD", "CONNECT", "POST"][usize::from(mode & 3)];
    let limits = if mode & 4 == 0 {
        Limits::default()
    } else {
        Limits {
            max_head: 128,
            max_headers: 4,
            max_body: 64,
        }
    };
    check(method, limits, input);
});
