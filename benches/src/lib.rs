//! limen-benches: shared helpers for the benches in `benches/benches/`.
#![warn(missing_docs)]
// `unsafe` only in the counting allocator (alloc.rs), a measuring instrument.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod alloc;
pub mod paired;
