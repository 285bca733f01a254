//! The Flow Tool host's I/O: implementation processes and the host that
//! binds and calls them.
//!
//! - [`process`]: one implementation process behind its machine (the Tool
//!   protocol's or the MCP adapter's): spawned when needed, restarted for
//!   the next call after it ends, standard error drained and kept.
//! - [`host`]: a run's Tools bound before anything runs (overrides, then
//!   `flow-tool.toml`), and calls dispatched to their processes or to
//!   implementations registered in process ([`Registry`]).

pub mod host;
pub mod process;

pub use host::{Binding, Host, HostOptions, InProcess, InProcessFn, Registry};
pub use process::{Process, Spawn};
