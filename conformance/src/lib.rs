//! limen-conformance: the project's corpus of recorded exchanges, the
//! deterministic replay runner, and the live check that holds any
//! implementation's endpoint to the recorded contract.
//!
//! The modules read downward:
//!
//! - [`jsonpath`], [`mask`], [`report`]: reading values at their JSON
//!   paths, the comparison as values with what differs between runs
//!   masked, and what a runner prints.
//! - [`transport`]: one module per transport behind one trait — a record's
//!   request as bytes, bytes as a record's reply, the outcome a reply
//!   encodes, what is masked, how the world serves it and how a check
//!   reaches it.
//! - [`record`]: the record format (`docs/conformance.md`) and corpora;
//!   [`scenario`]: what a record's exchange assumes of the server, stated
//!   or derived ([`steps`]: the steps a runner takes for it).
//! - [`world`]: a served program in memory, driven through the real
//!   machines with a virtual clock.
//! - [`hub`]: the hubs' records (`wire/ws`, `wire/udp`), a sequence of
//!   frames rather than a request and a reply, and their replay through
//!   the hub machines ([`hub_record`]: a hub record's form, below
//!   [`record`]); `hub_check`: those records against a live hub
//!   (with the `live` feature, the one part that reaches limen-drivers).
//! - [`replay`], [`check`], [`compare`]: the three commands of the
//!   `limen-conformance` binary ([`cli`]).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod check;
pub mod cli;
pub mod compare;
pub mod hub;
#[cfg(feature = "live")]
pub mod hub_check;
pub mod hub_record;
pub mod jsonpath;
pub mod mask;
pub mod record;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod steps;
pub mod transport;
pub mod world;

use std::path::PathBuf;

/// The project's own corpus, `conformance/corpus`.
pub fn project_corpus() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/corpus"))
}

/// The reference fixtures, `../shared/hale-witness` beside the checkout.
pub fn reference_corpus() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ))
}
