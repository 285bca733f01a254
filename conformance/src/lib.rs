//! limen-conformance: the project's own corpus and the replay runner.
#![warn(missing_docs)]
