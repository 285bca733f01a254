//! The Python client of a surface (§ Generated specs and clients; beyond the
//! spec, which names Hale and TypeScript): one `.py` module, standard
//! library only, `mypy --strict` clean.
//!
//! What it holds, in this order: the header ([`super::header`]), a
//! docstring listing the members and streams, `SURFACE` and `DIGEST`, the
//! runtime every client shares (`python_runtime.py`, included as text: the
//! outcome and stream classes, `TransportError`, the HTTP and Unix calls,
//! a small RFC 6455 client for the hubs), a frozen dataclass per record with `to_json` and
//! `from_json`, per member an outcome alias and a function, `MEMBERS`, and
//! per stream row of a `ws://` hub an item alias and a `subscribe_<topic>`.
//!
//! Names: a Hale name that Python cannot carry as it is written (a
//! keyword, a name the module or a class body already uses) takes a
//! trailing `_`, and the JSON keeps its key; `lib::Item` is `lib_Item`. Two
//! Hale names that would be one Python name are refused, naming both
//! (docs/decisions.md, "The Python client").

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{ClientError, ClientHub, ClientMember, ClientStream, ClientSurface, Lang};
use crate::hale::docs::book::{Record, Scalar, Slot};
use crate::words::PYTHON_KEYWORDS;

/// The module-level names the client defines or imports before the
/// generated part, and the builtins its runtime calls: a record, a member
/// function or an alias named so would shadow it. A unit test holds this
/// list to [`RUNTIME`]'s own definitions.
const MODULE_NAMES: &[&str] = &[
    // Imports.
    "annotations",
    "base64",
    "hashlib",
    "http",
    "json",
    "os",
    "socket",
    "urllib",
    "Callable",
    "Iterator",
    "dataclass",
    "Generic",
    "TypeVar",
    "Union",
    "final",
    // Constants and type variables.
    "SURFACE",
    "DIGEST",
    "DEFAULT_TIMEOUT",
    "MEMBERS",
    "_T",
    "_E",
    "_P",
    // The runtime's classes and functions.
    "TransportError",
    "DecodeError",
    "Result",
    "HandlerError",
    "Refusal",
    "ServerError",
    "Event",
    "Expired",
    "Revoked",
    "Closed",
    "Lost",
    "StreamEnd",
    "Subscription",
    "_here",
    "_object",
    "_int",
    "_float",
    "_bool",
    "_str",
    "_none",
    "_req",
    "_opt",
    "_Answered",
    "_refusal",
    "_json",
    "_call",
    "_http",
    "_unix",
    "_line_reply",
    "_hub",
    "_value",
    "_answer",
    "_answer_or_error",
    "_WS_GUID",
    "_Ended",
    "_Ws",
    // Builtins the runtime and the records call.
    "isinstance",
    "bool",
    "int",
    "float",
    "str",
    "dict",
    "list",
    "tuple",
    "object",
    "bytes",
    "bytearray",
    "all",
    "len",
    "Exception",
    "ValueError",
    "OSError",
    "TimeoutError",
    "StopIteration",
    "staticmethod",
    "enumerate",
    "super",
    "type",
    "property",
    "print",
    "repr",
    "iter",
    "next",
    "range",
    "AssertionError",
];

/// The names a record's class body uses besides the record names: a field
/// named so would shadow it for the annotations after it (mypy reads a
/// class body's names first), so it takes a trailing `_`.
const CLASS_NAMES: &[&str] = &[
    "int",
    "float",
    "bool",
    "str",
    "dict",
    "object",
    "staticmethod",
    "to_json",
    "from_json",
];

/// Why a Hale name is refused as a Python identifier ([`is_identifier`]).
const NOT_AN_IDENTIFIER: &str =
    "is no Python identifier this client can carry (ASCII letters, digits and `_`, not starting with `__`)";

/// The Python client of `surface`.
pub fn generate(surface: &ClientSurface) -> Result<String, ClientError> {
    let names = Names::new(surface)?;
    let mut out = super::header(surface, Lang::Python);
    docstring(&mut out, surface, &names);
    out.push_str(IMPORTS);
    let _ = writeln!(out, "SURFACE = {}", py_str(&surface.surface));
    let _ = writeln!(
        out,
        "\"\"\"The surface this client calls.\"\"\"\n\nDIGEST = {}",
        py_str(&surface.digest)
    );
    out.push_str(
        "\"\"\"The surface's digest, sent on every call: a program that changed under this\n\
         client refuses with digest_mismatch and the digest it serves.\"\"\"\n\n\
         DEFAULT_TIMEOUT = 10.0\n\
         \"\"\"Seconds a call waits for its reply, a subscribe for its answer.\"\"\"\n\n\
         _T = TypeVar(\"_T\")\n_E = TypeVar(\"_E\")\n_P = TypeVar(\"_P\")\n",
    );
    out.push_str(RUNTIME);
    for (name, record) in &surface.records {
        out.push_str("\n\n");
        record_class(&mut out, name, record, &names);
    }
    for m in &surface.members {
        out.push_str("\n\n");
        member(&mut out, m, &names);
    }
    out.push_str("\n\nMEMBERS: dict[str, Callable[..., object]] = {\n");
    for m in &surface.members {
        let _ = writeln!(out, "    {}: {},", py_str(&m.name), names.member(&m.name));
    }
    out.push_str("}\n\"\"\"Each member's function by the name the wire gives the member.\"\"\"\n");
    for (hub, stream) in surface.ws_streams() {
        subscription(&mut out, hub, stream, &names);
    }
    Ok(out)
}

/// A stream row's item alias and its `subscribe_<topic>` function.
fn subscription(out: &mut String, hub: &ClientHub, stream: &ClientStream, names: &Names) {
    let (func, item) = names.stream(&hub.name, &stream.topic);
    let payload = stream.payload.as_ref();
    let ty = payload.map_or_else(|| "None".to_string(), |s| names.annotation(s));
    let _ = write!(
        out,
        "\n\n{item} = Union[Event[{ty}], StreamEnd]\n\
         \"\"\"What a subscription to `{topic}` yields.\"\"\"\n\n\n\
         def {func}(\n    endpoint: str, bearer: str | None, *, timeout: float = DEFAULT_TIMEOUT\n\
         ) -> Subscription[{ty}]:\n",
        topic = stream.topic,
    );
    let requires = roles(&stream.requires);
    let address = hub.address.as_deref().map_or_else(String::new, |a| {
        format!(" (the program binds it at {})", doc_text(a))
    });
    let _ = write!(
        out,
        "    \"\"\"Subscribes to `{topic}` on the hub `{hub}`{address}: ``endpoint`` is\n    \
         ``ws://host:port``, ``bearer`` the credential presented at the upgrade.\n    \
         Requires {requires}; the hub holds {bound} frames per subscription and\n    \
         sheds by {on_full}{replay}.\"\"\"\n    \
         return Subscription.open(endpoint, bearer, {topic_str}, {read}, timeout=timeout)\n",
        topic = stream.topic,
        hub = doc_text(&hub.name),
        bound = stream.bound,
        on_full = stream.on_full,
        replay = if stream.replay {
            "; a reconnect replays"
        } else {
            "; a reconnect does not replay"
        },
        topic_str = py_str(&stream.topic),
        read = payload.map_or_else(|| "_none".to_string(), |s| names.reader(s)),
    );
}

/// What the module imports, after its docstring.
const IMPORTS: &str = "
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar, Union, final

";

/// The module docstring: what the client is, its members and streams.
fn docstring(out: &mut String, surface: &ClientSurface, names: &Names) {
    let _ = write!(
        out,
        "\"\"\"The Python client of the surface `{s}` of `{app}`, at {digest}.\n\n\
         One function per member takes the endpoint (``http://host:port``,\n\
         ``unix:PATH``, or ``ws://host:port`` for a surface served over a hub),\n\
         the bearer (``None`` for none; a Unix socket names its caller by the\n\
         kernel, not a bearer) and the request, and answers the\n\
         outcome: ``Result``, ``HandlerError`` (only a member whose row declares\n\
         one), ``Refusal`` or ``ServerError``. A connection that never answered\n\
         raises ``TransportError``; it is never a refusal. Python 3.10 or later,\n\
         the standard library only.\n",
        s = surface.surface,
        app = doc_text(&surface.app),
        digest = surface.digest,
    );
    if !surface.members.is_empty() {
        out.push_str("\nMembers:\n");
        for m in &surface.members {
            let _ = writeln!(
                out,
                "    {} -- {}, requires {}",
                names.member(&m.name),
                m.name,
                roles(&m.requires)
            );
        }
    }
    let streams: Vec<_> = surface.ws_streams().collect();
    if !streams.is_empty() {
        out.push_str("\nStreams (ws://, each a Subscription of typed events with their seq):\n");
        for (hub, st) in streams {
            let _ = writeln!(
                out,
                "    {} -- {} on the hub {}, requires {}",
                names.stream(&hub.name, &st.topic).0,
                st.topic,
                doc_text(&hub.name),
                roles(&st.requires)
            );
        }
    }
    out.push_str("\"\"\"\n");
}

/// The roles a row requires, as the docstrings name them.
fn roles(requires: &[String]) -> String {
    if requires.is_empty() {
        "no role".to_string()
    } else {
        requires.join(", ")
    }
}

/// A Python string literal of `s`: JSON's escapes are Python's.
fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `s` as text inside a docstring: a backslash or a quote escaped, so a
/// name the program writes as a string (a hub's `as:`, an address) cannot
/// end the docstring or start an escape.
fn doc_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Whether `name` is one of Python's keywords.
fn is_keyword(name: &str) -> bool {
    PYTHON_KEYWORDS.contains(&name)
}

/// `lib::Item` as one identifier: `lib_Item`.
fn flat(name: &str) -> String {
    name.replace("::", "_")
}

/// `OrderBook` as `order_book`: an `_` before an upper-case letter that
/// follows a lower-case one or a digit, then lower case.
fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in flat(name).chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `place_order` as `PlaceOrder`: each `_`-separated part capitalised.
fn camel(name: &str) -> String {
    flat(name)
        .split('_')
        .map(|part| {
            let mut cs = part.chars();
            cs.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + cs.as_str()
            })
        })
        .collect()
}

/// Whether `name` is an identifier Python reads as one and keeps as it is
/// (ASCII only: a Hale name outside ASCII is refused rather than left to
/// Python's NFKC folding, which could make two names one).
fn is_identifier(name: &str) -> bool {
    // A name starting with `__` is mangled inside a class body (a record's
    // field, or a record named in another's annotations), so it is refused
    // too.
    if name.starts_with("__") {
        return false;
    }
    let mut cs = name.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every module-level name the generated part defines, read once: the
/// records' classes, the members' functions and outcome aliases, the
/// streams' functions and item aliases, and each record's field names.
struct Names {
    records: BTreeMap<String, String>,
    members: BTreeMap<String, (String, String)>,
    streams: BTreeMap<(String, String), (String, String)>,
    fields: BTreeMap<String, Vec<String>>,
}

impl Names {
    fn new(surface: &ClientSurface) -> Result<Names, ClientError> {
        // Each Python name with the Hale thing it stands for, to name both
        // when two would be one.
        let mut taken: BTreeMap<String, String> = BTreeMap::new();
        let mut claim = |py: String, owner: String| -> Result<String, ClientError> {
            if !is_identifier(&py) {
                return Err(ClientError::Refused {
                    owner,
                    field: py,
                    why: NOT_AN_IDENTIFIER.to_string(),
                });
            }
            if let Some(first) = taken.get(&py) {
                return Err(ClientError::Refused {
                    owner,
                    field: py,
                    why: format!("{first} has that Python name too; rename one of them"),
                });
            }
            taken.insert(py.clone(), owner);
            Ok(py)
        };
        let mut members = BTreeMap::new();
        for m in &surface.members {
            let base = if m.locus.is_empty() {
                snake(&m.function)
            } else {
                format!("{}_{}", snake(&m.locus), snake(&m.function))
            };
            let func = module_safe(base);
            let alias = module_safe(format!("{}{}Outcome", camel(&m.locus), camel(&m.function)));
            let owner = format!("rpc `{}`", m.name);
            let func = claim(func, owner.clone())?;
            let alias = claim(alias, owner)?;
            members.insert(m.name.clone(), (func, alias));
        }
        let mut streams = BTreeMap::new();
        for (hub, st) in surface.ws_streams() {
            let owner = format!("stream `{}` of the hub `{}`", st.topic, hub.name);
            let func = claim(format!("subscribe_{}", snake(&st.topic)), owner.clone())?;
            let item = claim(module_safe(format!("{}Item", camel(&st.topic))), owner)?;
            streams.insert((hub.name.clone(), st.topic.clone()), (func, item));
        }
        let mut records = BTreeMap::new();
        for name in surface.records.keys() {
            let py = claim(module_safe(flat(name)), format!("type `{name}`"))?;
            records.insert(name.clone(), py);
        }
        let mut fields = BTreeMap::new();
        for (name, record) in &surface.records {
            let mut own: BTreeMap<String, String> = BTreeMap::new();
            let mut list = Vec::new();
            for f in &record.fields {
                let mut py = f.name.clone();
                if is_keyword(&py)
                    || CLASS_NAMES.contains(&py.as_str())
                    || records.values().any(|r| *r == py)
                {
                    py.push('_');
                }
                let owner = format!("type `{name}`");
                if !is_identifier(&py) {
                    return Err(ClientError::Refused {
                        owner,
                        field: f.name.clone(),
                        why: NOT_AN_IDENTIFIER.to_string(),
                    });
                }
                if let Some(first) = own.get(&py) {
                    return Err(ClientError::Refused {
                        owner,
                        field: f.name.clone(),
                        why: format!(
                            "the field `{first}` has the Python name `{py}` too; rename one of them"
                        ),
                    });
                }
                own.insert(py.clone(), f.name.clone());
                list.push(py);
            }
            fields.insert(name.clone(), list);
        }
        Ok(Names {
            records,
            members,
            streams,
            fields,
        })
    }

    fn record<'a>(&'a self, name: &'a str) -> &'a str {
        self.records.get(name).map_or(name, String::as_str)
    }

    fn member<'a>(&'a self, name: &'a str) -> &'a str {
        self.members.get(name).map_or(name, |(f, _)| f.as_str())
    }

    fn outcome<'a>(&'a self, name: &'a str) -> &'a str {
        self.members.get(name).map_or(name, |(_, a)| a.as_str())
    }

    fn stream<'a>(&'a self, hub: &str, topic: &'a str) -> (&'a str, &'a str) {
        self.streams
            .get(&(hub.to_string(), topic.to_string()))
            .map_or((topic, topic), |(f, i)| (f.as_str(), i.as_str()))
    }

    /// The Python type a slot is annotated with.
    fn annotation(&self, slot: &Slot) -> String {
        match slot {
            Slot::Scalar(s) => scalar_type(s).to_string(),
            Slot::Record(r) => self.record(r).to_string(),
        }
    }

    /// The function reading a slot's JSON value: `(value, at) -> T`.
    fn reader(&self, slot: &Slot) -> String {
        match slot {
            Slot::Scalar(s) => format!("_{}", scalar_type(s)),
            Slot::Record(r) => format!("{}.from_json", self.record(r)),
        }
    }
}

/// A module-level name that would shadow the runtime's, or a keyword, takes
/// a trailing `_`.
fn module_safe(mut name: String) -> String {
    if is_keyword(&name) || MODULE_NAMES.contains(&name.as_str()) {
        name.push('_');
    }
    name
}

/// The Python type of a scalar the JSON codec carries.
fn scalar_type(s: &Scalar) -> &'static str {
    match s.json {
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        _ => "str",
    }
}

/// The Hale type a scalar stands for, as the field's comment names it.
fn hale_type(s: &Scalar) -> String {
    let base = s.hale_type.clone().unwrap_or_else(|| {
        match s.json {
            "integer" => "Int",
            "number" => "Float",
            "boolean" => "Bool",
            _ => "String",
        }
        .to_string()
    });
    match &s.unit {
        Some(u) => format!("{base}, {u}"),
        None => base,
    }
}

/// A record's frozen dataclass, its `to_json` and its `from_json`.
fn record_class(out: &mut String, name: &str, record: &Record, names: &Names) {
    let py = names.record(name);
    let fields = names.fields.get(name).cloned().unwrap_or_default();
    let optional = if record.fields.iter().any(|f| !f.required) {
        " A field that may be ``None`` has a\n    \
         default in the program: left ``None``, it is not sent and the server's\n    \
         default applies."
    } else {
        ""
    };
    let _ = write!(
        out,
        "@final\n@dataclass(frozen=True, kw_only=True)\nclass {py}:\n    \
         \"\"\"The record `{name}`.{optional}\"\"\"\n\n"
    );
    for (f, py_field) in record.fields.iter().zip(&fields) {
        let ty = names.annotation(&f.slot);
        let comment = match &f.slot {
            Slot::Scalar(s) => format!("  # {}", hale_type(s)),
            Slot::Record(_) => String::new(),
        };
        let key = if f.key == *py_field {
            String::new()
        } else if comment.is_empty() {
            format!("  # JSON key {}", py_str(&f.key))
        } else {
            format!(", JSON key {}", py_str(&f.key))
        };
        if f.required {
            let _ = writeln!(out, "    {py_field}: {ty}{comment}{key}");
        } else {
            let _ = writeln!(out, "    {py_field}: {ty} | None = None{comment}{key}");
        }
    }
    if !record.fields.is_empty() {
        out.push('\n');
    }
    out.push_str(
        "    def to_json(self) -> dict[str, object]:\n        \
         \"\"\"The record as the JSON codec carries it.\"\"\"\n        \
         out: dict[str, object] = {}\n",
    );
    for (f, py_field) in record.fields.iter().zip(&fields) {
        let value = match &f.slot {
            Slot::Record(_) => format!("self.{py_field}.to_json()"),
            Slot::Scalar(_) => format!("self.{py_field}"),
        };
        if f.required {
            let _ = writeln!(out, "        out[{}] = {value}", py_str(&f.key));
        } else {
            let _ = writeln!(
                out,
                "        if self.{py_field} is not None:\n            out[{}] = {value}",
                py_str(&f.key)
            );
        }
    }
    let _ = write!(
        out,
        "        return out\n\n    \
         @staticmethod\n    \
         def from_json(value: object, at: str = \"\") -> {py}:\n        \
         \"\"\"Reads the record from a JSON value; raises ``DecodeError``.\"\"\"\n"
    );
    if record.fields.is_empty() {
        let _ = writeln!(out, "        _object(value, at)\n        return {py}()");
        return;
    }
    let _ = writeln!(out, "        o = _object(value, at)\n        return {py}(");
    for (f, py_field) in record.fields.iter().zip(&fields) {
        let read = if f.required { "_req" } else { "_opt" };
        let _ = writeln!(
            out,
            "            {py_field}={read}(o, {}, at, {}),",
            py_str(&f.key),
            names.reader(&f.slot)
        );
    }
    out.push_str("        )\n");
}

/// A member's outcome alias and its function.
fn member(out: &mut String, m: &ClientMember, names: &Names) {
    let func = names.member(&m.name);
    let alias = names.outcome(&m.name);
    let value = m
        .response
        .as_ref()
        .map_or_else(|| "None".to_string(), |s| names.annotation(s));
    let read = m
        .response
        .as_ref()
        .map_or_else(|| "_none".to_string(), |s| names.reader(s));
    let error = m.handler_error();
    let handler = error.map_or_else(String::new, |e| {
        format!("HandlerError[{}], ", names.annotation(e))
    });
    let _ = writeln!(
        out,
        "{alias} = Union[Result[{value}], {handler}Refusal, ServerError]\n\
         \"\"\"What `{}` answers.\"\"\"\n\n",
        m.name
    );
    let (param, payload) = match &m.request {
        None => (String::new(), "{}".to_string()),
        Some(slot @ Slot::Record(_)) => (
            format!(" request: {},", names.annotation(slot)),
            "request.to_json()".to_string(),
        ),
        Some(slot) => (
            format!(" request: {},", names.annotation(slot)),
            "request".to_string(),
        ),
    };
    let _ = write!(
        out,
        "def {func}(\n    endpoint: str,\n    bearer: str | None,\n"
    );
    if !param.is_empty() {
        let _ = writeln!(out, "   {param}");
    }
    let failure = match (error, &m.error) {
        (Some(e), _) => format!(
            "a failure is ``HandlerError`` with its ``{}``",
            names.annotation(e)
        ),
        (None, crate::hale::docs::rows::ErrorSlot::ClosureViolation) => {
            "a failure is the ``ServerError`` (ClosureViolation)".to_string()
        }
        (None, _) => "it declares no failure".to_string(),
    };
    let takes = if m.request.is_some() {
        ""
    } else {
        " It takes no request."
    };
    let _ = write!(
        out,
        "    *,\n    id: object = None,\n    timeout: float = DEFAULT_TIMEOUT,\n) -> {alias}:\n    \
         \"\"\"Calls `{name}` (requires {requires}): {failure}.{takes}\n    \
         ``id`` is echoed over a Unix socket or a hub; ``timeout`` bounds each wait, in seconds.\"\"\"\n    \
         reply = _call(endpoint, bearer, {name_str}, {payload}, id, timeout)\n",
        name = m.name,
        requires = roles(&m.requires),
        name_str = py_str(&m.name),
    );
    match error {
        Some(e) => {
            let _ = writeln!(
                out,
                "    return _answer_or_error(reply, {}, {read}, {})",
                py_str(&m.name),
                names.reader(e)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "    return _answer(reply, {}, {read})",
                py_str(&m.name)
            );
        }
    }
}

/// The part of every Python client that does not depend on the surface:
/// the outcome and stream classes, the JSON readers, the calls over HTTP
/// and a Unix socket, and the WebSocket client the subscriptions use.
const RUNTIME: &str = include_str!("python_runtime.py");

#[cfg(test)]
#[path = "python_tests.rs"]
mod tests;
