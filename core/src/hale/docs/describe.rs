//! One exposure's description for one caller (§ The description): the
//! document a listener serves at `GET /.description` or `{"describe": true}`,
//! and the one `hale check --api --exposure NAME --caller P --holds R`
//! prints from the rows alone.
//!
//! Both go through [`DescriptionPlan`]: everything of the document that
//! does not depend on the caller, built once from the rows, and
//! [`DescriptionPlan::document`], which lists what a caller's roles admit.
//! The live exposure hands it the caller, the roles it holds among those
//! the rows require and the members it may call, as admission decided them
//! ([`ExposureDescriber`]); the offline check computes the same two from
//! `--holds` ([`describe_offline`]). So the two cannot disagree.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::book::{Slot, TypeBook};
use super::error::DocError;
use super::outcomes::{
    Encoding, HUB_AUTHORIZATION, HUB_DISCOVERY, HUB_LIFECYCLE, NOTE_AUTHORIZATION, NOTE_DISCOVERY,
    NOTE_LIFECYCLE,
};
use super::rows::{exposure_listener, exposure_names, hub_streams, listener, member, stream};
use crate::hale::model::{Hub, Program, Row, TransportKind};
use crate::hale::runtime::{Describer, Principal};

/// Where a description's `$ref`s point.
pub const DOC_REFS: &str = "#/schemas/";

/// A member or a stream as a plan holds it.
#[derive(Clone, Debug)]
struct Item {
    /// Its document.
    document: Value,
    /// Its requires, each once.
    requires: Vec<String>,
    /// The schemas it reaches.
    reaches: BTreeSet<String>,
}

/// Everything of an exposure's description that does not depend on the
/// caller, built once from the rows.
#[derive(Clone, Debug)]
pub struct DescriptionPlan {
    /// `description` through `codec`, in the schema's key order.
    head: Map<String, Value>,
    /// The transport, for a caller named by a bare name.
    transport: TransportKind,
    /// Whether this is a hub's exposure (members empty, the hub's notes).
    hub: bool,
    /// The roles the rows and streams require, sorted, each once.
    required: Vec<String>,
    /// The members in the surface's row order: index `i` is the
    /// surface's `i`-th row, as [`ExposureSpec::members`] holds them.
    ///
    /// [`ExposureSpec::members`]: crate::hale::runtime::ExposureSpec
    members: Vec<Item>,
    /// The member indices in document order (by name as bytes).
    member_order: Vec<usize>,
    /// The streams of the hubs at the listener, in topic order.
    streams: Vec<Item>,
    /// The outcome encoding.
    outcomes: Value,
    /// Every schema a listed item can reach, by name.
    schemas: Map<String, Value>,
    /// The notes.
    notes: Value,
}

fn item(document: Value, requires: Vec<String>, book: &TypeBook, slots: &[&Slot]) -> Item {
    Item {
        document,
        requires,
        reaches: book.reach(slots.iter().copied()),
    }
}

impl DescriptionPlan {
    /// The plan of the exposure `name`: a serve site's (its surface over
    /// its transport), else a hub's (its stream rows). `bound` is the
    /// listener's bound address, which a live exposure describes (a bind
    /// of port 0 by the port the kernel gave); `None` describes the
    /// address as written.
    pub fn for_exposure(
        program: &Program,
        name: &str,
        bound: Option<&str>,
    ) -> Result<DescriptionPlan, DocError> {
        if let Some(e) = program.exposure(name) {
            return Self::for_serve_site(program, e, bound);
        }
        if let Some(h) = program.hub(name) {
            return Self::for_hub(program, h, bound);
        }
        Err(DocError::NoExposure {
            name: name.to_string(),
            known: exposure_names(program),
        })
    }

    fn for_serve_site(
        program: &Program,
        e: &crate::hale::model::Exposure,
        bound: Option<&str>,
    ) -> Result<DescriptionPlan, DocError> {
        let name = e.name.clone().unwrap_or_default();
        let l = exposure_listener(e)?;
        let outcomes = match l.transport {
            TransportKind::Http => Encoding::Http,
            TransportKind::Mcp => Encoding::Mcp,
            TransportKind::Grpc => Encoding::Grpc,
            // The fixture transport answers as Unix JSON lines, and a
            // surface over a hub replies with the Unix reply's fields.
            TransportKind::Unix | TransportKind::Test | TransportKind::Ws => Encoding::Unix,
            ref other => {
                return Err(DocError::NoOutcomes {
                    exposure: name,
                    transport: other.as_str().to_string(),
                })
            }
        };
        let surface = e.surface.clone().unwrap_or_default();
        let digest = program.surface_digest(&surface)?;
        let mut book = TypeBook::new();
        let rows: &[Row] = program
            .surface(&surface)
            .map(|s| s.rows.as_slice())
            .unwrap_or_default();
        let mut members = Vec::with_capacity(rows.len());
        for row in rows {
            let m = member(program, row, &mut book)?;
            let slots: Vec<&Slot> = m.slots().collect();
            members.push(item(m.document(DOC_REFS), m.requires(), &book, &slots));
        }
        let mut member_order: Vec<usize> = (0..rows.len()).collect();
        member_order.sort_by(|&a, &b| rows[a].member.as_bytes().cmp(rows[b].member.as_bytes()));
        // The hubs at this exposure's listener: its own hub when the
        // surface is served over one, any hub bound to the same address.
        let mut hubs: Vec<&Hub> = program
            .hubs
            .iter()
            .filter(|h| h.literal.address.is_some() && h.literal.address == l.address)
            .collect();
        hubs.sort_by(|a, b| a.name().cmp(&b.name()));
        let mut streams = Vec::new();
        for h in hubs {
            streams.extend(Self::streams_of(program, h, &mut book)?);
        }
        let head = head(
            json!(format!("{surface}@{digest}/{name}")),
            &name,
            json!(surface),
            &digest.to_string(),
            listener(l, bound),
            &e.codec,
        );
        Ok(Self::assemble(
            head,
            l.transport.clone(),
            false,
            members,
            member_order,
            streams,
            outcomes.document(),
            &book,
            json!({
                "authorization": NOTE_AUTHORIZATION,
                "lifecycle": NOTE_LIFECYCLE,
                "discovery": NOTE_DISCOVERY,
            }),
        ))
    }

    fn streams_of(program: &Program, h: &Hub, book: &mut TypeBook) -> Result<Vec<Item>, DocError> {
        program.hub_digest(h.name().unwrap_or_default())?;
        let mut out = Vec::new();
        for row in hub_streams(h) {
            let (document, payload) = stream(program, h, row, book, DOC_REFS)?;
            let slots: Vec<&Slot> = payload.iter().collect();
            out.push(item(
                document,
                super::rows::unique(&row.requires),
                book,
                &slots,
            ));
        }
        Ok(out)
    }

    fn for_hub(
        program: &Program,
        h: &Hub,
        bound: Option<&str>,
    ) -> Result<DescriptionPlan, DocError> {
        let name = h.name().unwrap_or_default().to_string();
        let digest = program.hub_digest(&name)?;
        let mut book = TypeBook::new();
        let streams = Self::streams_of(program, h, &mut book)?;
        let l = crate::hale::model::Listener {
            transport: h.literal.kind.clone(),
            address: h.literal.address.clone(),
        };
        let head = head(
            json!(format!("hub@{digest}/{name}")),
            &name,
            Value::Null,
            &digest.to_string(),
            listener(&l, bound),
            &h.literal.codec,
        );
        let encoding = if h.literal.kind == TransportKind::Udp {
            Encoding::Udp
        } else {
            Encoding::Ws
        };
        Ok(Self::assemble(
            head,
            h.literal.kind.clone(),
            true,
            Vec::new(),
            Vec::new(),
            streams,
            encoding.document(),
            &book,
            json!({
                "authorization": HUB_AUTHORIZATION,
                "lifecycle": HUB_LIFECYCLE,
                "discovery": HUB_DISCOVERY,
            }),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        head: Map<String, Value>,
        transport: TransportKind,
        hub: bool,
        members: Vec<Item>,
        member_order: Vec<usize>,
        streams: Vec<Item>,
        outcomes: Value,
        book: &TypeBook,
        notes: Value,
    ) -> DescriptionPlan {
        let mut required: Vec<String> = members
            .iter()
            .chain(&streams)
            .flat_map(|i| i.requires.iter().cloned())
            .collect();
        required.sort();
        required.dedup();
        let schemas = match book.all_schemas(DOC_REFS) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        DescriptionPlan {
            head,
            transport,
            hub,
            required,
            members,
            member_order,
            streams,
            outcomes,
            schemas,
            notes,
        }
    }

    /// The transport of the exposure's listener.
    pub fn transport(&self) -> &TransportKind {
        &self.transport
    }

    /// Every role the exposure's rows and streams require, sorted, each once.
    pub fn required_roles(&self) -> &[String] {
        &self.required
    }

    /// How many members the plan holds (the surface's rows; none for a hub).
    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    /// The members a caller holding `roles` may call: every row whose
    /// requires it holds, by index in the surface's row order.
    pub fn members_admitted(&self, roles: &[String]) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| self.members[i].requires.iter().all(|r| roles.contains(r)))
            .collect()
    }

    /// The document for `caller`, who holds `roles` (among those the rows
    /// require; others are ignored) and may call `members` (indices in the
    /// surface's row order; out-of-range ones are ignored). The streams
    /// listed are those whose requires `roles` hold; the schemas those the
    /// listed members and streams reach, and no other.
    pub fn document(&self, caller: &Principal, roles: &[String], members: &[usize]) -> Value {
        let roles: Vec<&String> = self.required.iter().filter(|r| roles.contains(r)).collect();
        let listed: Vec<&Item> = if self.hub {
            Vec::new()
        } else {
            self.member_order
                .iter()
                .filter(|i| members.contains(i))
                .map(|&i| &self.members[i])
                .collect()
        };
        let streams: Vec<&Item> = self
            .streams
            .iter()
            .filter(|s| s.requires.iter().all(|r| roles.contains(&r)))
            .collect();
        let reached: BTreeSet<&String> = listed
            .iter()
            .chain(&streams)
            .flat_map(|i| &i.reaches)
            .collect();
        let schemas: Map<String, Value> = self
            .schemas
            .iter()
            .filter(|(k, _)| reached.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut doc = self.head.clone();
        doc.insert(
            "caller".into(),
            json!({ "principal": caller.to_json(), "roles": roles }),
        );
        doc.insert(
            "members".into(),
            listed.iter().map(|i| i.document.clone()).collect(),
        );
        doc.insert(
            "streams".into(),
            streams.iter().map(|i| i.document.clone()).collect(),
        );
        doc.insert("outcomes".into(), self.outcomes.clone());
        doc.insert("schemas".into(), Value::Object(schemas));
        doc.insert("notes".into(), self.notes.clone());
        Value::Object(doc)
    }
}

fn head(
    exposure: Value,
    name: &str,
    surface: Value,
    digest: &str,
    listener: Value,
    codec: &str,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("description".into(), 1.into());
    m.insert("exposure".into(), exposure);
    m.insert("name".into(), name.into());
    m.insert("surface".into(), surface);
    m.insert("digest".into(), digest.into());
    m.insert("listener".into(), listener);
    m.insert("codec".into(), codec.into());
    m
}

/// The principal `--caller` names: a JSON principal object
/// (`{"mode": "unix", "name": "uid:1000", "uid": 1000, …}`, its fields
/// `mode`, `name`, `uid`, `gid`, `pid`) or a bare name, whose mode is the
/// transport's: `unix` over the Unix socket, `bearer` otherwise.
pub fn caller_principal(arg: &str, transport: &TransportKind) -> Result<Principal, DocError> {
    if !arg.trim_start().starts_with('{') {
        let mode = if *transport == TransportKind::Unix {
            "unix"
        } else {
            "bearer"
        };
        return Ok(Principal::new(mode, arg, Vec::new()));
    }
    let value: Value = serde_json::from_str(arg)
        .map_err(|e| DocError::Caller(format!("not a JSON principal object: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| DocError::Caller("a principal is a JSON object".into()))?;
    const FIELDS: [&str; 3] = ["uid", "gid", "pid"];
    if let Some(k) = object
        .keys()
        .find(|k| !matches!(k.as_str(), "mode" | "name") && !FIELDS.contains(&k.as_str()))
    {
        return Err(DocError::Caller(format!(
            "a principal has `mode`, `name`, `uid`, `gid` and `pid`, not `{k}`"
        )));
    }
    let mut p = Principal::from_json(&value).map_err(DocError::Caller)?;
    if !matches!(&*p.mode, "unix" | "bearer" | "local") {
        return Err(DocError::Caller(format!(
            "a principal's mode is `unix`, `bearer` or `local`, not `{}`",
            p.mode
        )));
    }
    p.data_mut()
        .fields
        .sort_by_key(|(k, _)| FIELDS.iter().position(|f| f == k));
    Ok(p)
}

/// One exposure's description for one caller from the rows alone (`hale
/// check --api --exposure NAME --caller P --holds R,…`): the roles the
/// caller holds are `holds`, as its role source would answer; the
/// members listed are those whose requires it holds.
pub fn describe_offline(
    program: &Program,
    exposure: &str,
    caller: &str,
    holds: &[String],
) -> Result<Value, DocError> {
    let plan = DescriptionPlan::for_exposure(program, exposure, None)?;
    let principal = caller_principal(caller, plan.transport())?;
    let roles: Vec<String> = plan
        .required_roles()
        .iter()
        .filter(|r| holds.contains(r))
        .cloned()
        .collect();
    let members = plan.members_admitted(&roles);
    Ok(plan.document(&principal, &roles, &members))
}

/// The runtime's [`Describer`] for an exposure of the model: the plan built
/// once, the document written per caller as compact JSON, keys in the
/// schema's order.
#[derive(Clone, Debug)]
pub struct ExposureDescriber {
    plan: DescriptionPlan,
}

impl ExposureDescriber {
    /// The describer of the exposure `name`, whose listener is bound at
    /// `bound` (`host:<bound port>`, the socket's path; `None` for a
    /// listener that binds nothing, which is described as written).
    pub fn new(
        program: &Program,
        name: &str,
        bound: Option<&str>,
    ) -> Result<ExposureDescriber, DocError> {
        Ok(ExposureDescriber {
            plan: DescriptionPlan::for_exposure(program, name, bound)?,
        })
    }

    /// The plan the describer writes from.
    pub fn plan(&self) -> &DescriptionPlan {
        &self.plan
    }
}

impl Describer for ExposureDescriber {
    fn describe(&self, caller: &Principal, roles: &[String], members: &[usize]) -> Vec<u8> {
        serde_json::to_vec(&self.plan.document(caller, roles, members)).unwrap_or_default()
    }
}
