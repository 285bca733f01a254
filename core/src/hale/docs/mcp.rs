//! A surface's MCP form (§ The description, § The MCP transport): a tool per
//! row, named as the member with `::` written `__`, its input the request's
//! schema made self-contained (the types it reaches under `$defs`). A
//! request that is no object is wrapped as an object with one required
//! property named after the handler's parameter, which the MCP transport
//! unwraps before decoding by shape.

use serde_json::{json, Map, Value};

use super::book::{Slot, TypeBook};
use super::error::DocError;
use super::openapi::requires_text;
use super::outcomes::{NOTE_AUTHORIZATION, NOTE_LIFECYCLE};
use super::rows::{surface_members, tool_name, unique, ErrorSlot};
use crate::hale::model::Program;

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

/// The MCP document of `surface`.
pub fn mcp(program: &Program, surface: &str) -> Result<Value, DocError> {
    let mut book = TypeBook::new();
    let (digest, members) = surface_members(program, surface, &mut book)?;
    let mut tools = Vec::with_capacity(members.len());
    for m in &members {
        let row = m.row;
        let param = program
            .handler(row)
            .and_then(|f| f.params.first())
            .map_or("request", |p| p.name.name.as_str());
        let returns = row
            .response
            .as_ref()
            .map_or_else(|| "nothing".to_string(), |t| t.text());
        let fails = match &m.error {
            ErrorSlot::ClosureViolation => "; a violation is the server error".to_string(),
            ErrorSlot::Type(_) => format!(
                "; its failure is the handler error {}",
                row.error.as_ref().map(|t| t.text()).unwrap_or_default()
            ),
            ErrorSlot::None => String::new(),
        };
        let roles = unique(&row.requires);
        tools.push(json!({
            "name": tool_name(&row.member),
            "description": format!(
                "rpc {} of {surface}: returns {returns}{fails}. {}; the server still authorizes every request.",
                row.member,
                requires_text(&roles)
            ),
            "inputSchema": input_schema(&book, m.request.as_ref(), param),
            "x-hale-requires": roles,
        }));
    }
    Ok(json!({
        "x-hale-surface": surface,
        "x-hale-digest": digest.to_string(),
        "tools": tools,
        "notes": { "authorization": NOTE_AUTHORIZATION, "lifecycle": NOTE_LIFECYCLE },
    }))
}
