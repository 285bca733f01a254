//! Core's gRPC stream table (`core/src/wire/grpc/streams.rs`) driven by
//! HTTP/2 events alone, without nghttp2: header blocks (a call,
//! reflection v1 and v1alpha, another path; protobuf or `+json`; ended or
//! not), blocks past the header limit, body bytes and whole messages,
//! ends, resets, the peer's GOAWAY, deliveries of every outcome to the
//! requests framed, time passing past the deadlines, stop and the end of
//! the connection, in the order the input picks.
//!
//! Checks (`limen_fuzz::grpc::drive_streams`): no panic; the table never
//! holds more streams than its limit nor more bytes than its budget; every
//! request names the correlation and a stream that was opened; every
//! command names a stream that was opened; nothing is submitted or
//! emitted after `Closed`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_fuzz::grpc::{drive_streams, StreamStep};

fuzz_target!(|steps: Vec<StreamStep>| {
    drive_streams(steps);
});
