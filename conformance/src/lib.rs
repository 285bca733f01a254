//! limen-conformance: the project's own corpus and the replay runner.
//!
//! - [`witness`]: the witness program's declarations (`programs/desk.hl`)
//!   and its loci implemented in Rust, as `hale demo` serves them.
#![warn(missing_docs)]

pub mod witness;
