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

use libfuzzer_sys::fuzz_target;
use limen_fuzz::grpc::drive;

fuzz_target!(|data: &[u8]| {
    let [split, pick, data @ ..] = data else {
        return;
    };
    drive(data, usize::from(split % 32) + 1, *pick);
});
