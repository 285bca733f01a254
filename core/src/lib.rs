//! limen-core: the pure half of limen.
//!
//! Everything here is computation over bytes and events: no sockets, files,
//! threads, processes, clocks or entropy. Time and randomness come in as
//! arguments, so every machine can be fuzzed, embedded through the C ABI and
//! replayed deterministically from a recording. `scripts/check-core-purity`
//! enforces this in CI.
//!
//! - [`json`]: the strict JSON tokenizer every parser here shares, the
//!   string escaper every writer shares, and JSON-RPC 2.0.
//! - [`flow`]: the Flow host boundary — values, canonical text, decoding,
//!   schemas, fingerprints and the Tool protocol machines.
//! - [`hale`]: the Hale API surface — declarations, rows, digests, laws,
//!   documents and the exposure runtime.
//! - [`wire`]: one module per wire protocol machine.
//!
//! Each imports only from those listed before it (with `json`, the fixed
//! map hasher and [`percent`] at the bottom); `scripts/check-core-purity`
//! holds it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod flow;
pub mod hale;
pub mod hash;
pub mod json;
#[cfg(test)]
mod mutations;
pub mod percent;
pub mod wire;
pub mod words;

/// A point in time as the machines see it: nanoseconds on the driver's
/// monotonic clock (or a virtual clock in replay), passed in, never read.
pub type Timestamp = u64;

/// One second, in [`Timestamp`] units.
pub const SECOND: Timestamp = 1_000_000_000;
/// One millisecond, as a [`Timestamp`] counts it.
pub const MILLISECOND: Timestamp = 1_000_000;
