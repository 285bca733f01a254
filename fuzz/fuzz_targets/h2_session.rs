//! The HTTP/2 session (`nghttp2/src/lib.rs`, nghttp2 behind the project's
//! binding): the client preface and an empty SETTINGS, then the input's
//! bytes in the splits its first byte picks, every request answered (with
//! a body and trailers, or trailers-only) and every body consumed.
//!
//! Checks: no panic and no crash across the binding; after an error the
//! session takes nothing more and still serializes what it queued; every
//! event names a client stream (odd, positive) but a GOAWAY; output is
//! whole frames (nine-byte headers whose lengths add up); the header bytes
//! held for blocks not yet whole stay within the header list's limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_fuzz::h2::{assert_whole_frames, EMPTY_SETTINGS, PREFACE};
use limen_nghttp2::{H2Event, Limits, Session};

fuzz_target!(|data: &[u8]| {
    let Some((&split, data)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(split % 32) + 1;
    let mut session = Session::server(Limits::default()).expect("a session");
    let mut out = Vec::new();
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(EMPTY_SETTINGS);
    input.extend_from_slice(data);
    let mut failed = false;
    for piece in input.chunks(chunk) {
        if failed {
            break;
        }
        failed = session.handle_data(0, piece).is_err();
        let limit = Limits::default().max_header_list_size as usize;
        assert!(session.header_bytes_held() <= limit);
        while let Some(event) = session.poll_event() {
            match event {
                H2Event::GoAway { .. } | H2Event::Trailers { .. } => {}
                H2Event::Headers {
                    stream, end_stream, ..
                } => {
                    assert!(stream > 0 && stream % 2 == 1, "{stream}");
                    if end_stream {
                        let _ = session.respond_headers_only(stream, &[(b":status", b"200")]);
                    }
                }
                H2Event::Data { stream, bytes } => {
                    assert!(stream > 0 && stream % 2 == 1, "{stream}");
                    let _ = session.consume(stream, bytes.len());
                }
                H2Event::EndStream { stream } => {
                    let _ = session.respond(
                        stream,
                        &[(b":status", b"200")],
                        b"body".to_vec(),
                        vec![(b"grpc-status".to_vec(), b"0".to_vec())],
                    );
                }
                H2Event::HeadersTooLarge { stream, .. } => {
                    assert!(stream > 0 && stream % 2 == 1, "{stream}");
                    let _ = session.respond_headers_only(stream, &[(b":status", b"431")]);
                    session.reset_after_response(stream);
                }
                H2Event::Reset { stream, .. } | H2Event::Closed { stream, .. } => {
                    assert!(stream > 0 && stream % 2 == 1, "{stream}");
                }
            }
        }
        while session.flush().is_ok() {
            let bytes = session.pending_output();
            if bytes.is_empty() {
                break;
            }
            let n = bytes.len();
            out.extend_from_slice(bytes);
            session.consume_output(0, n);
        }
    }
    assert_whole_frames(&out);
});
