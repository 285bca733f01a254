//! A surface's MCP form (§ The description, § The MCP transport): a tool per
//! row, named as the member with `::` written `__`, its input the request's
//! schema made self-contained (the types it reaches under `$defs`). A
//! request that is no object is wrapped as an object with one required
//! property named after the handler's parameter, which the MCP transport
//! unwraps before decoding by shape.
//!
//! The same tools are what an MCP exposure lists live ([`McpDescriber`]:
//! `tools/list` for one caller, the rows admission decided that caller may
//! call) and what `hale mcp --app` lists from a served description
//! ([`tools_from_description`]). Neither lists a member whose request is no
//! object: the wrapping needs the handler's parameter name, which neither a
//! description nor the transport's framing carries (§ Open points).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::book::{Slot, TypeBook};
use super::describe::DOC_REFS;
use super::error::DocError;
use super::openapi::requires_text;
use super::outcomes::{NOTE_AUTHORIZATION, NOTE_LIFECYCLE};
use super::rows::{surface_members, tool_name, unique, ErrorSlot};
use crate::hale::model::{Exposure, Program};
use crate::hale::runtime::{Describer, Principal};

const REFS: &str = "#/$defs/";

/// A tool's input schema for a request `slot`, self-contained; `param` is
/// the handler's parameter name, for a request that is no object.
fn input_schema(book: &TypeBook, slot: Option<&Slot>, param: &str) -> Value {
    match slot {
        None => json!({ "type": "object", "properties": {} }),
        Some(Slot::Scalar(s)) => json!({
            "type": "object",
            "properties": { param: s.schema() },
            "required": [param],
        }),
        Some(root_slot @ Slot::Record(name)) => {
            let reached = book.reach([root_slot]);
            let Some(record) = book.records().get(name) else {
                return json!({ "type": "object" });
            };
            let mut root = match record.schema(REFS) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            // The root is in `$defs` only when a type it reaches (itself
            // included) refers back to it.
            let back = reached.iter().any(|n| {
                book.records()
                    .get(n)
                    .is_some_and(|r| r.fields.iter().any(|f| f.slot == *root_slot))
            });
            let defs: Vec<&String> = reached.iter().filter(|n| back || *n != name).collect();
            if !defs.is_empty() {
                root.insert("$defs".into(), book.schemas(defs, REFS));
            }
            Value::Object(root)
        }
    }
}

/// How a member fails, as a tool's description says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFailure<'a> {
    /// Not fallible.
    None,
    /// `fallible(ClosureViolation)`: the server error.
    ClosureViolation,
    /// `fallible(E)`: the handler error, `E` by its name.
    Handler(&'a str),
}

/// A tool's description: what the member returns, how it fails and what it
/// requires. `returns` is the response type's name, `None` for `()`.
pub fn tool_description(
    member: &str,
    surface: &str,
    returns: Option<&str>,
    failure: ToolFailure<'_>,
    roles: &[String],
) -> String {
    let fails = match failure {
        ToolFailure::ClosureViolation => "; a violation is the server error".to_string(),
        ToolFailure::Handler(e) => format!("; its failure is the handler error {e}"),
        ToolFailure::None => String::new(),
    };
    format!(
        "rpc {member} of {surface}: returns {}{fails}. {}; the server still authorizes every request.",
        returns.unwrap_or("nothing"),
        requires_text(roles)
    )
}

/// One tool of a surface's MCP form.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceTool {
    /// The member the tool calls (`Orders::place`).
    pub member: String,
    /// The tool as `tools/list` and the `--mcp` form write it.
    pub tool: Value,
    /// Whether the request is an object (or absent): a tool the transport
    /// and the bridge list. A wrapped scalar request is the `--mcp` form's
    /// alone.
    pub object_request: bool,
}

/// The surface's tools, one per row in member-name order, and its digest.
pub fn tools(program: &Program, surface: &str) -> Result<(String, Vec<SurfaceTool>), DocError> {
    let mut book = TypeBook::new();
    let (digest, members) = surface_members(program, surface, &mut book)?;
    let mut tools = Vec::with_capacity(members.len());
    for m in &members {
        let row = m.row;
        let param = program
            .handler(row)
            .and_then(|f| f.params.first())
            .map_or("request", |p| p.name.name.as_str());
        let returns = row.response.as_ref().map(|t| t.text());
        let error = row.error.as_ref().map(|t| t.text()).unwrap_or_default();
        let failure = match &m.error {
            ErrorSlot::ClosureViolation => ToolFailure::ClosureViolation,
            ErrorSlot::Type(_) => ToolFailure::Handler(&error),
            ErrorSlot::None => ToolFailure::None,
        };
        let roles = unique(&row.requires);
        tools.push(SurfaceTool {
            member: row.member.clone(),
            tool: json!({
                "name": tool_name(&row.member),
                "description": tool_description(&row.member, surface, returns.as_deref(), failure, &roles),
                "inputSchema": input_schema(&book, m.request.as_ref(), param),
                "x-hale-requires": roles,
            }),
            object_request: !matches!(m.request, Some(Slot::Scalar(_))),
        });
    }
    Ok((digest.to_string(), tools))
}

/// The MCP document of `surface`.
pub fn mcp(program: &Program, surface: &str) -> Result<Value, DocError> {
    let (digest, tools) = tools(program, surface)?;
    let tools: Vec<Value> = tools.into_iter().map(|t| t.tool).collect();
    Ok(json!({
        "x-hale-surface": surface,
        "x-hale-digest": digest,
        "tools": tools,
        "notes": { "authorization": NOTE_AUTHORIZATION, "lifecycle": NOTE_LIFECYCLE },
    }))
}

/// The live [`Describer`] of an MCP exposure: the answer to `tools/list`
/// (`{"tools": […]}`, compact) for one caller — the `--mcp` form's tools of
/// the members admission decided the caller may call, in name order, less
/// those whose request is no object.
#[derive(Clone, Debug)]
pub struct McpDescriber {
    /// (the member's index in the exposure's spec, its tool as JSON text),
    /// in tool order.
    tools: Vec<(usize, Vec<u8>)>,
}

impl McpDescriber {
    /// The describer of `exposure` of `program`: its members indexed as
    /// the exposure's spec indexes them (the surface's row order).
    pub fn new(program: &Program, exposure: &Exposure) -> Result<McpDescriber, DocError> {
        let surface = exposure.surface.clone().unwrap_or_default();
        let (_, all) = tools(program, &surface)?;
        let served: Vec<String> = program
            .served_rows(exposure)
            .iter()
            .map(|r| r.row.member.clone())
            .collect();
        let tools = all
            .into_iter()
            .filter(|t| t.object_request)
            .filter_map(|t| {
                let index = served.iter().position(|m| *m == t.member)?;
                Some((index, serde_json::to_vec(&t.tool).unwrap_or_default()))
            })
            .collect();
        Ok(McpDescriber { tools })
    }
}

impl Describer for McpDescriber {
    fn describe(&self, _caller: &Principal, _roles: &[String], members: &[usize]) -> Vec<u8> {
        let mut out = b"{\"tools\":[".to_vec();
        let mut first = true;
        for (index, tool) in &self.tools {
            if members.contains(index) {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(tool);
            }
        }
        out.extend_from_slice(b"]}");
        out
    }
}

/// The tools of a served description (§ The description) as `tools/list`
/// lists them: one per member the document lists whose request is an
/// object or absent, in the document's order, its input the request's
/// schema made self-contained. What `hale mcp --app` serves a host.
pub fn tools_from_description(doc: &Value) -> Vec<Value> {
    let surface = doc["surface"].as_str().unwrap_or_default();
    let schemas = doc["schemas"].as_object().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for m in doc["members"].as_array().into_iter().flatten() {
        let Some(member) = m["name"].as_str() else {
            continue;
        };
        let Some(input) = input_from_description(&m["request"], &schemas) else {
            continue;
        };
        let roles: Vec<String> = m["requires"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        let returns = match &m["response"] {
            Value::Null => None,
            r => Some(type_word(r)),
        };
        let error = type_word(&m["error"]);
        let failure = match &m["error"] {
            Value::Null => ToolFailure::None,
            Value::String(s) if s == "ClosureViolation" => ToolFailure::ClosureViolation,
            _ => ToolFailure::Handler(&error),
        };
        out.push(json!({
            "name": tool_name(member),
            "description": tool_description(member, surface, returns.as_deref(), failure, &roles),
            "inputSchema": input,
            "x-hale-requires": roles,
        }));
    }
    out
}

/// A schema's type as a tool's description names it: a record by its name,
/// a named scalar by its `x-hale-type`, else the language's word.
fn type_word(schema: &Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_owned();
    }
    if let Some(t) = schema["x-hale-type"].as_str() {
        return t.to_owned();
    }
    match schema["type"].as_str() {
        Some("integer") => "Int".into(),
        Some("number") => "Float".into(),
        Some("boolean") => "Bool".into(),
        Some("string") => "String".into(),
        Some("array") => format!("[{}]", type_word(&schema["items"])),
        _ => schema.as_str().unwrap_or("a value").to_owned(),
    }
}

/// A description's request schema as a self-contained tool input: `None`
/// when the request is no object.
fn input_from_description(request: &Value, schemas: &Map<String, Value>) -> Option<Value> {
    let name = match request {
        Value::Null => return Some(json!({ "type": "object", "properties": {} })),
        r => r["$ref"].as_str()?.strip_prefix(DOC_REFS)?,
    };
    let root = schemas.get(name)?;
    if root["type"] != "object" {
        return None;
    }
    // The records the root reaches, itself included, and whether any of
    // them refers back to it.
    let mut reached = BTreeSet::new();
    let mut back = false;
    let mut work = vec![name.to_owned()];
    while let Some(n) = work.pop() {
        if !reached.insert(n.clone()) {
            continue;
        }
        let mut refs = Vec::new();
        if let Some(s) = schemas.get(&n) {
            collect_refs(s, &mut refs);
        }
        back |= refs.iter().any(|r| r == name);
        work.extend(refs);
    }
    let mut input = match rebase(root) {
        Value::Object(m) => m,
        _ => return None,
    };
    let defs: Map<String, Value> = reached
        .iter()
        .filter(|n| back || n.as_str() != name)
        .filter_map(|n| schemas.get(n).map(|s| (n.clone(), rebase(s))))
        .collect();
    if !defs.is_empty() {
        input.insert("$defs".into(), Value::Object(defs));
    }
    Some(Value::Object(input))
}

/// The record names a schema's `$ref`s name under the description's base.
fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(n) = r.strip_prefix(DOC_REFS) {
                            out.push(n.to_owned());
                        }
                    }
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// A schema with its `$ref`s moved from the description's base to `$defs`.
fn rebase(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => (
                        k.clone(),
                        Value::String(match r.strip_prefix(DOC_REFS) {
                            Some(n) => format!("{REFS}{n}"),
                            None => r.clone(),
                        }),
                    ),
                    _ => (k.clone(), rebase(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(rebase).collect()),
        other => other.clone(),
    }
}
