//! A surface's OpenAPI 3.1 form (§ The description, GH #1107's forms): a
//! `POST /call/<member>` per row, its body the request, `200` its
//! response, `422` its handler error, `500` a `ClosureViolation` row's
//! server error, the refusals by their statuses, and the digest in `info`
//! and as the `Hale-Surface-Digest` header a request may carry.

use serde_json::{json, Map, Value};

use super::book::TypeBook;
use super::error::DocError;
use super::outcomes::{NOTE_AUTHORIZATION, NOTE_LIFECYCLE};
use super::rows::{surface_members, unique, ErrorSlot};
use crate::hale::model::Program;

const REFS: &str = "#/components/schemas/";

/// The component a refusal's body is; every component the form adds that
/// is no user type is under `hale.`, which no Hale identifier can spell.
pub const REFUSAL: &str = "hale.Refusal";

/// A row's roles in prose: `Requires trader under the exposure's role
/// source`, or `Requires no role`.
pub fn requires_text(roles: &[String]) -> String {
    if roles.is_empty() {
        "Requires no role".to_string()
    } else {
        format!(
            "Requires {} under the exposure's role source",
            roles.join(", ")
        )
    }
}

fn content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn refusal(what: &str) -> Value {
    json!({
        "description": what,
        "content": content(json!({ "$ref": format!("{REFS}{REFUSAL}") })),
    })
}

/// The OpenAPI document of `surface`.
pub fn openapi(program: &Program, surface: &str) -> Result<Value, DocError> {
    let mut book = TypeBook::new();
    let (digest, members) = surface_members(program, surface, &mut book)?;
    let digest = digest.to_string();
    let mut paths = Map::new();
    for m in &members {
        let row = m.row;
        let roles = unique(&row.requires);
        let mut op = Map::new();
        op.insert("operationId".into(), row.member.clone().into());
        op.insert("summary".into(), format!("rpc {}", row.member).into());
        op.insert(
            "description".into(),
            format!(
                "{}; the server still authorizes every request.",
                requires_text(&roles)
            )
            .into(),
        );
        op.insert(
            "parameters".into(),
            json!([{
                "name": "Hale-Surface-Digest",
                "in": "header",
                "required": false,
                "schema": { "type": "string", "const": digest },
            }]),
        );
        if let Some(req) = &m.request {
            op.insert(
                "requestBody".into(),
                json!({ "required": true, "content": content(req.schema(REFS)) }),
            );
        }
        let mut responses = Map::new();
        let mut ok = Map::new();
        ok.insert("description".into(), "result: the handler returned".into());
        if let Some(resp) = &m.response {
            ok.insert("content".into(), content(resp.schema(REFS)));
        }
        responses.insert("200".into(), Value::Object(ok));
        for (status, what) in [
            ("400", "refusal: malformed"),
            ("401", "refusal: unauthenticated"),
            ("403", "refusal: unauthorized"),
            ("409", "refusal: digest_mismatch"),
        ] {
            responses.insert(status.into(), refusal(what));
        }
        if let ErrorSlot::Type(e) = &m.error {
            let shown = row.error.as_ref().map(|t| t.text()).unwrap_or_default();
            responses.insert(
                "422".into(),
                json!({
                    "description": format!("handler error: {shown}"),
                    "content": content(e.schema(REFS)),
                }),
            );
        }
        responses.insert("429".into(), refusal("refusal: full"));
        if m.error == ErrorSlot::ClosureViolation {
            responses.insert(
                "500".into(),
                refusal("server error: the handler violated (ClosureViolation)"),
            );
        }
        responses.insert("503".into(), refusal("refusal: shutting_down, unavailable"));
        op.insert("responses".into(), Value::Object(responses));
        op.insert("security".into(), json!([{ "bearer": [] }]));
        op.insert("x-hale-requires".into(), roles.into());
        paths.insert(
            format!("/call/{}", row.member),
            json!({ "post": Value::Object(op) }),
        );
    }
    let mut schemas = match book.all_schemas(REFS) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    schemas.insert(
        REFUSAL.into(),
        json!({
            "type": "object",
            "properties": {
                "refusal": {
                    "type": "object",
                    "properties": {
                        "kind": { "type": "string" },
                        "reason": { "type": "string" },
                        "served": { "type": "string" },
                        "requires": { "type": "array", "items": { "type": "string" } },
                    },
                    "required": ["kind"],
                },
            },
            "required": ["refusal"],
        }),
    );
    Ok(json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{surface} surface"),
            "version": digest,
            "description": format!(
                "The surface {surface} over HTTP (spec/api.md § Outcomes): POST /call/<member>, the body by the JSON codec. {NOTE_AUTHORIZATION}; {NOTE_LIFECYCLE}."
            ),
            "x-hale-surface": surface,
            "x-hale-digest": digest,
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    }))
}
