//! What every document reads of the rows: a surface's rows in name order
//! with their slots, a hub's stream rows, an exposure's listener and
//! sources, each rendered the one way every document renders it.

use serde_json::{json, Value};

use super::book::{Slot, TypeBook};
use super::error::DocError;
use super::outcomes::loss;
use crate::hale::digest::Digest;
use crate::hale::model::{Exposure, Hub, Listener, Program, Row, Source, StreamRow, TransportKind};
use crate::hale::syntax::ast::Ident;

/// The address a listener with none written is described by: the
/// in-process fixture transport's.
pub const IN_PROCESS: &str = "in-process";

/// A member's error column as documents show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorSlot {
    /// Not fallible: `null`.
    None,
    /// `fallible(ClosureViolation)`: the string `ClosureViolation`, no schema.
    ClosureViolation,
    /// `fallible(E)`: E's schema.
    Type(Slot),
}

/// One row read for a document.
#[derive(Clone, Debug)]
pub struct MemberSlots<'p> {
    /// The row.
    pub row: &'p Row,
    /// Its request, when it takes one.
    pub request: Option<Slot>,
    /// Its response, when it returns one.
    pub response: Option<Slot>,
    /// Its error.
    pub error: ErrorSlot,
}

impl MemberSlots<'_> {
    /// The slots that name schemas.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> {
        let error = match &self.error {
            ErrorSlot::Type(s) => Some(s),
            _ => None,
        };
        self.request.iter().chain(self.response.iter()).chain(error)
    }

    /// The member as descriptions, the inventory and the JSON Schema form
    /// list it, its schemas by `$ref` under `base`.
    pub fn document(&self, base: &str) -> Value {
        let slot = |s: &Option<Slot>| s.as_ref().map_or(Value::Null, |s| s.schema(base));
        let error = match &self.error {
            ErrorSlot::None => Value::Null,
            ErrorSlot::ClosureViolation => "ClosureViolation".into(),
            ErrorSlot::Type(s) => s.schema(base),
        };
        json!({
            "name": self.row.member,
            "request": slot(&self.request),
            "response": slot(&self.response),
            "error": error,
            "requires": requires(&self.row.requires),
        })
    }

    /// The required roles as a set, as written.
    pub fn requires(&self) -> Vec<String> {
        unique(&self.row.requires)
    }
}

/// Roles as written, each once, in the order first written (a document's
/// `requires` is a set: `uniqueItems`).
pub fn unique(roles: &[Ident]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(roles.len());
    for r in roles {
        if !out.contains(&r.name) {
            out.push(r.name.clone());
        }
    }
    out
}

/// [`unique`] as a JSON array.
pub fn requires(roles: &[Ident]) -> Value {
    unique(roles).into()
}

/// A surface's digest and its rows in name order (as bytes), each read into
/// `book`.
pub fn surface_members<'p>(
    program: &'p Program,
    surface: &str,
    book: &mut TypeBook,
) -> Result<(Digest, Vec<MemberSlots<'p>>), DocError> {
    let s = program
        .surface(surface)
        .ok_or_else(|| DocError::NoSurface {
            name: surface.to_string(),
            known: program.surfaces.iter().map(|s| s.name.clone()).collect(),
        })?;
    let digest = program.surface_digest(surface)?;
    let mut rows: Vec<&Row> = s.rows.iter().collect();
    rows.sort_by(|a, b| a.member.as_bytes().cmp(b.member.as_bytes()));
    let members = rows
        .into_iter()
        .map(|row| member(program, row, book))
        .collect::<Result<_, _>>()?;
    Ok((digest, members))
}

/// One row read into `book`.
pub fn member<'p>(
    program: &'p Program,
    row: &'p Row,
    book: &mut TypeBook,
) -> Result<MemberSlots<'p>, DocError> {
    let owner = format!("rpc `{}`", row.member);
    let types = &program.types;
    let request = row
        .request
        .as_ref()
        .map(|t| book.slot(types, t, &owner, "request"))
        .transpose()?;
    let response = row
        .response
        .as_ref()
        .map(|t| book.slot(types, t, &owner, "response"))
        .transpose()?;
    let error = match &row.error {
        None => ErrorSlot::None,
        Some(_) if row.error_is_closure_violation() => ErrorSlot::ClosureViolation,
        Some(t) => ErrorSlot::Type(book.slot(types, t, &owner, "error")?),
    };
    Ok(MemberSlots {
        row,
        request,
        response,
        error,
    })
}

/// The tool (and gRPC rpc) name of a member: its segments joined by `__`,
/// a segment that holds `__` or starts or ends with `_` writing each `_` as
/// `_-` (§ The MCP transport), so no two members share a name.
pub fn tool_name(member: &str) -> String {
    member
        .split("::")
        .map(|seg| {
            if seg.contains("__") || seg.starts_with('_') || seg.ends_with('_') {
                seg.replace('_', "_-")
            } else {
                seg.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("__")
}

/// A hub's stream rows in topic order (as bytes).
pub fn hub_streams(hub: &Hub) -> Vec<&StreamRow> {
    let mut rows: Vec<&StreamRow> = hub.streams.iter().collect();
    rows.sort_by(|a, b| a.topic.name.as_bytes().cmp(b.topic.name.as_bytes()));
    rows
}

/// One stream row read into `book`, with its document (`$ref`s under
/// `base`). The hub's digest must have been computed: it holds the row's
/// payload, direction, bound and on_full.
pub fn stream(
    program: &Program,
    hub: &Hub,
    row: &StreamRow,
    book: &mut TypeBook,
    base: &str,
) -> Result<(Value, Option<Slot>), DocError> {
    let owner = format!("stream `{}`", row.topic.name);
    let payload = row
        .payload
        .as_ref()
        .map(|t| book.slot(&program.types, t, &owner, "payload"))
        .transpose()?;
    let on_full = row.on_full.clone().unwrap_or_default();
    let document = json!({
        "topic": row.topic.name,
        "subject": row.subject.clone().unwrap_or_default(),
        "direction": row.direction.map_or("", |d| d.as_str()),
        "payload": payload.as_ref().map_or(Value::Null, |p| p.schema(base)),
        "codec": row.codec,
        "bound": row.bound.unwrap_or_default(),
        "on_full": on_full,
        "loss": loss(&on_full, hub.literal.kind == TransportKind::Udp),
        "replay": row.replay,
        "requires": requires(&row.requires),
    });
    Ok((document, payload))
}

/// A listener: its transport and its address (the bound one when given,
/// else the one written; the fixture transport's, which binds nothing, is
/// [`IN_PROCESS`]).
pub fn listener(l: &Listener, bound: Option<&str>) -> Value {
    let address = match (bound, &l.address) {
        (Some(b), _) => b.to_string(),
        (None, Some(a)) => a.clone(),
        (None, None) if l.transport == TransportKind::Test => IN_PROCESS.to_string(),
        (None, None) => String::new(),
    };
    json!({ "transport": l.transport.as_str(), "address": address })
}

/// A source as the inventory names it: the param and its type, `kernel`
/// for a Unix peer's credentials, a literal by its type, `none`.
pub fn source(s: &Source) -> Value {
    match s {
        Source::Param { ty: Some(t), .. } => json!({ "source": s.text(), "type": t }),
        Source::Literal(t) => json!({ "source": t, "type": t }),
        Source::None => json!({ "source": "none" }),
        _ => json!({ "source": s.text() }),
    }
}

/// An exposure's listener, or why it has none.
pub fn exposure_listener(e: &Exposure) -> Result<&Listener, DocError> {
    e.listener.as_ref().ok_or_else(|| DocError::NoTransport {
        exposure: e.name.clone().unwrap_or_default(),
    })
}

/// Every exposure name the program serves (serve sites and hubs), sorted.
pub fn exposure_names(program: &Program) -> Vec<String> {
    let mut names: Vec<String> = program
        .exposures
        .iter()
        .filter_map(|e| e.name.clone())
        .chain(
            program
                .hubs
                .iter()
                .filter_map(|h| h.name().map(str::to_string)),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}
