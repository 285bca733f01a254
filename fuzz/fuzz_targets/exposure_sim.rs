//! The exposure machine (`core/src/hale/runtime/exposure.rs`) driven by an
//! arbitrary schedule of requests, completions, losses, receiver births,
//! drains and departures, `stop()`, teardowns and the passing of time.
//!
//! `sim::run` checks the invariants of § The request lifecycle after every
//! step (each accepted request ends exactly once, delivered or dropped on a
//! connection the transport was told to close; nothing refused is
//! dispatched; one call per receiver at a time, to its current
//! incarnation and generation; the table never past its bound) and that a
//! final `stop()` settles everything. Any broken invariant names its step.
#![no_main]

use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::sim::{run, Schedule};

fuzz_target!(|schedule: Schedule| {
    if let Err(e) = run(&schedule) {
        panic!("{e}\nschedule: {schedule:?}");
    }
});
