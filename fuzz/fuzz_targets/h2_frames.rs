//! The gRPC front over HTTP/2 (`grpc/src/lib.rs` over `nghttp2/src/lib.rs`)
//! fed frame sequences rather than raw bytes: HEADERS, CONTINUATION, DATA
//! with and without gRPC message prefixes, SETTINGS, PING, PRIORITY,
//! RST_STREAM, GOAWAY, WINDOW_UPDATE and frames of any type, built by
//! `limen_fuzz::h2` from the input, so the streams' deeper states are
//! reached (a header block cut by CONTINUATION, a half-closed stream, a
//! spent window, a message split across frames).
//!
//! Checks: those of `limen_fuzz::grpc::drive` (no panic or crash across the
//! binding, each stream framed once and as the client id, the stream
//! table's limit, whole frames out, nothing after `Closed`), and the
//! bounds of issue 26: a header block held as decoded to the header list's
//! limit however the HPACK bomb (`Field::Bomb`) expands, partial messages
//! to the connection's budget, whatever the deadlines end.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_fuzz::grpc::{drive, RPCS, SURFACE};
use limen_fuzz::h2::{encode, Frame};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let (Ok(split), Ok(pick)) = (u.arbitrary::<u8>(), u.arbitrary::<u8>()) else {
        return;
    };
    let Ok(frames) = u.arbitrary::<Vec<Frame>>() else {
        return;
    };
    let bytes = encode(&frames, SURFACE, RPCS);
    // Pieces of 1 to 32 bytes, or the whole sequence at once.
    let chunk = if split >= 224 {
        bytes.len() + 1
    } else {
        usize::from(split % 32) + 1
    };
    drive(&bytes, chunk, pick);
});
