//! limen-conformance: the project's own corpus (`programs/`, the witness
//! declarations among them) and the replay runner.
#![warn(missing_docs)]
