//! limen-benches: shared helpers for the benches in `benches/benches/`.
#![warn(missing_docs)]

pub mod alloc;
pub mod paired;
