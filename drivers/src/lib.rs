//! limen-drivers: the I/O half of limen.
//!
//! Event loops, listeners, connections, child processes, timers and handler
//! threads that feed the pure machines of `limen-core`, and the code behind
//! the `flow` and `hale` command-line tools.
#![warn(missing_docs)]
// `unsafe` only where allowed by name: the one system call with no safe
// binding (serve::net, SO_PEERGROUPS).
#![deny(unsafe_code)]

/// What `hale` and `flow` share on top of `clap` (its own crate, so
/// `limen-conformance` can share it without linking this one).
pub use limen_cli_support as cli_support;
pub mod client;
pub mod demo;
pub mod flow_cli;
pub mod hale_cli;
pub mod program;
pub mod serve;
pub mod tool;
