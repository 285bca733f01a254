//! Reading a record's values at their JSON paths, and the error that names
//! the path of what is wrong (`$.peer.uid: expected an integer`): the
//! bottom layer, which the transports and the record format both read with.

use limen_core::hale::runtime::PeerCredentials;
use serde_json::Value;

/// Why a record (or a part of one) could not be read: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// The JSON path of what is wrong (`$` for the whole record).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for RecordError {}

/// The error `message` at `path`.
pub fn error(path: &str, message: impl Into<String>) -> RecordError {
    RecordError {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// `v` as an object.
pub fn object<'a>(
    v: &'a Value,
    path: &str,
) -> Result<&'a serde_json::Map<String, Value>, RecordError> {
    v.as_object()
        .ok_or_else(|| error(path, "expected an object"))
}

/// `v` as a string, present.
pub fn string<'a>(v: Option<&'a Value>, path: &str) -> Result<&'a str, RecordError> {
    match v {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(error(path, "expected a string")),
        None => Err(error(path, "missing")),
    }
}

/// `v` as an integer, present.
pub fn int(v: Option<&Value>, path: &str) -> Result<i64, RecordError> {
    match v {
        Some(v) => v.as_i64().ok_or_else(|| error(path, "expected an integer")),
        None => Err(error(path, "missing")),
    }
}

/// A peer's `{"uid", "gid", "pid"}`.
pub fn peer(v: &Value, path: &str) -> Result<PeerCredentials, RecordError> {
    let o = object(v, path)?;
    Ok(PeerCredentials {
        uid: int(o.get("uid"), &format!("{path}.uid"))?,
        gid: int(o.get("gid"), &format!("{path}.gid"))?,
        pid: int(o.get("pid"), &format!("{path}.pid"))?,
        groups: None,
    })
}
