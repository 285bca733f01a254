//! The Tool process protocol, binding, `flow-tool.toml`, toolkits and the
//! MCP adapter (§ The Tool process protocol, § Binding, § flow-tool.toml,
//! § Toolkits, § Adapters), as pure machines.
//!
//! The exact messages are in `docs/tool-protocol.md`; every choice the
//! specification leaves open is in `docs/decisions.md` (§ Flow Tool
//! protocol, binding and toolkits).
//!
//! - [`listing`]: declarations read from a `flow tools` listing (the shape
//!   of describe's result), and what an implementation's describe says.
//! - [`mod@config`]: the file `flow-tool.toml`, read.
//! - [`binding`]: which implementation answers each declaration, and the
//!   refusal of a run that cannot be bound.
//! - [`protocol`]: the four messages, written and read.
//! - [`host`]: the host's side of one implementation process
//!   ([`HostConn`]): calls in flight, replies, restarts.
//! - [`mcp`]: the MCP adapter ([`McpConn`]), the same interface in front of
//!   an MCP server.
//! - [`inprocess`]: an implementation registered in process: what it
//!   declares, the fields of a call as values, its answer admitted at the
//!   declared types.
//! - [`toolkit`]: the implementation's side ([`ToolkitConn`]), what a
//!   toolkit library drives.
//! - [`fuzz_host_replies`]: the host machine fed arbitrary reply lines, for
//!   a fuzz target.

pub mod binding;
pub mod config;
mod conn;
mod decoding;
mod exact;
mod fuzz;
pub mod host;
pub mod inprocess;
pub mod listing;
pub mod mcp;
mod oversize;
pub mod protocol;
pub mod toolkit;

use std::fmt;
use std::sync::Arc;

pub use binding::{plan, BindingReport, Implementation, Planned, Source, Status};
pub use config::{split_command, ConfigError, Entry, ToolConfig};
pub use conn::{HostEvent, Limits, SendError, ToolConn, CALL_DEADLINE};
pub use decoding::DecodeLimits;
pub use fuzz::{fuzz_echo_tool, fuzz_host_replies};
pub use host::HostConn;
pub use inprocess::InProcessCall;
pub use listing::{Described, Listing, ListingError, Tool};
pub use mcp::McpConn;
pub use toolkit::{Incoming, Reply, ToolkitConn, ToolkitEvent};

/// What a caught panic said: its message when it was a string, else "a
/// panic". An implementation's panic is the outcome Unknown, and the reason
/// names what the code said (the toolkit's and the in-process host's
/// reasons alike).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

use super::value::Value;

/// The data version this implementation speaks: the value encoding, this
/// protocol and the history format share it (§ Versioning).
pub const DATA_VERSION: &str = "1.0";

/// A data version, `MAJOR.MINOR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DataVersion {
    /// A change of meaning.
    pub major: u64,
    /// Additions within a major.
    pub minor: u64,
}

impl DataVersion {
    /// Ours: [`DATA_VERSION`].
    pub fn ours() -> DataVersion {
        DataVersion { major: 1, minor: 0 }
    }

    /// Reads `MAJOR.MINOR`, each a decimal number without leading zeros.
    pub fn parse(text: &str) -> Option<DataVersion> {
        let number = |s: &str| {
            let plain = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s == "0" || !s.starts_with('0'));
            plain.then(|| s.parse::<u64>().ok()).flatten()
        };
        let (major, minor) = text.split_once('.')?;
        Some(DataVersion {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl fmt::Display for DataVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The only correlation key of a call: the host's run id and the call's
/// history id. Both are texts, chosen by the host.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallKey {
    /// The run id.
    pub run: KeyText,
    /// The call's history id.
    pub call: KeyText,
}

impl CallKey {
    /// The key of call `call` of run `run`.
    pub fn new(run: &str, call: &str) -> CallKey {
        CallKey {
            run: run.into(),
            call: call.into(),
        }
    }
}

impl fmt::Display for CallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run {:?}, call {:?}",
            self.run.as_str(),
            self.call.as_str()
        )
    }
}

/// One of a [`CallKey`]'s texts: read as a `str`, and cheap to make and to
/// copy, since every call's key is made from its line, kept while the call
/// is open and handed to whoever answers it. A text of up to 23 bytes (a
/// call's history id, most run ids) is held in place, with no allocation;
/// a longer one is shared, so a copy only counts a reference. It hashes,
/// compares and orders as the `str` it holds.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyText(smol_str::SmolStr);

impl KeyText {
    /// The text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl std::ops::Deref for KeyText {
    type Target = str;

    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for KeyText {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl std::borrow::Borrow<str> for KeyText {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for KeyText {
    fn from(text: &str) -> KeyText {
        KeyText(smol_str::SmolStr::new(text))
    }
}

impl From<String> for KeyText {
    fn from(text: String) -> KeyText {
        KeyText(smol_str::SmolStr::from(text))
    }
}

impl From<&String> for KeyText {
    fn from(text: &String) -> KeyText {
        KeyText(smol_str::SmolStr::new(text))
    }
}

impl From<KeyText> for String {
    fn from(text: KeyText) -> String {
        text.0.into()
    }
}

impl PartialEq<str> for KeyText {
    fn eq(&self, other: &str) -> bool {
        self.0.as_str() == other
    }
}

impl PartialEq<&str> for KeyText {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_str() == *other
    }
}

impl PartialEq<String> for KeyText {
    fn eq(&self, other: &String) -> bool {
        self.0.as_str() == other.as_str()
    }
}

impl fmt::Debug for KeyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_str(), f)
    }
}

impl fmt::Display for KeyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// How a call ended, as the host admits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The declared success value, decoded at the success type.
    Ok(Value),
    /// The declared error value, decoded at the error type.
    Failed(Value),
    /// The call definitely did not happen.
    NotRun(String),
    /// The call may or may not have happened.
    Unknown(String),
    /// A reply that does not decode, is malformed or too large: never sent,
    /// only decided by the host.
    BadReply(String),
}

impl Outcome {
    /// The outcome's name: `Ok`, `Failed`, `NotRun`, `Unknown`, `BadReply`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "Ok",
            Outcome::Failed(_) => "Failed",
            Outcome::NotRun(_) => "NotRun",
            Outcome::Unknown(_) => "Unknown",
            Outcome::BadReply(_) => "BadReply",
        }
    }

    /// `{"Ok": v}`, `{"Failed": e}`, `{"NotRun": r}`, `{"Unknown": r}` or
    /// `{"BadReply": r}`, values in their canonical text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        out.push(b'{');
        crate::json::write_string(self.name(), &mut out);
        out.push(b':');
        match self {
            Outcome::Ok(v) | Outcome::Failed(v) => super::canonical::write_canonical(v, &mut out),
            Outcome::NotRun(r) | Outcome::Unknown(r) | Outcome::BadReply(r) => {
                crate::json::write_string(r, &mut out)
            }
        }
        out.push(b'}');
        String::from_utf8(out).unwrap_or_default()
    }
}

/// One call the host sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// Its correlation key.
    pub key: CallKey,
    /// The declaration it calls.
    pub tool: Arc<Tool>,
    /// Its arguments, one per parameter in declaration order.
    pub args: Vec<Value>,
    /// For a generic Tool, the type each type parameter stands for at this
    /// call, in the declaration's order of type parameters; empty otherwise.
    pub type_args: Vec<super::types::Type>,
}

#[cfg(test)]
mod tests;
