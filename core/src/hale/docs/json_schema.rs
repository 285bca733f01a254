//! A surface's JSON Schema form (§ The description): every type its rows
//! name under `$defs`, and each member's request, response and error by
//! reference under `x-hale-members`.

use serde_json::{json, Map, Value};

use super::book::TypeBook;
use super::error::DocError;
use super::rows::surface_members;
use crate::hale::model::Program;

const REFS: &str = "#/$defs/";

/// The JSON Schema document of `surface`.
pub fn json_schema(program: &Program, surface: &str) -> Result<Value, DocError> {
    let mut book = TypeBook::new();
    let (digest, members) = surface_members(program, surface, &mut book)?;
    let members: Map<String, Value> = members
        .iter()
        .map(|m| (m.row.member.clone(), m.document(REFS)))
        .collect();
    Ok(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("urn:hale:surface:{surface}@{digest}"),
        "title": format!("{surface} surface"),
        "x-hale-surface": surface,
        "x-hale-digest": digest.to_string(),
        "x-hale-members": members,
        "$defs": book.all_schemas(REFS),
    }))
}
