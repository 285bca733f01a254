//! The readable rendering of a description (§ Driving a served program).
//!
//! ```text
//! Public@fnv1a64:a8930d6e7998e986/public  [http 127.0.0.1:8080]
//! caller: bearer alice; roles: trader
//!   Orders::cancel(order: Int (OrderId)) -> Cancelled, error OrderError  requires: trader
//! ```

use serde_json::Value;

/// Renders a description document.
pub fn render(doc: &Value) -> String {
    let mut out = String::new();
    let listener = &doc["listener"];
    out.push_str(&format!(
        "{}  [{} {}]\n",
        text(&doc["exposure"]),
        text(&listener["transport"]),
        text(&listener["address"])
    ));
    let caller = &doc["caller"];
    let principal = &caller["principal"];
    let roles: Vec<&str> = caller["roles"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str(&format!(
        "caller: {} {}; roles: {}\n",
        text(&principal["mode"]),
        text(&principal["name"]),
        if roles.is_empty() {
            "-".to_owned()
        } else {
            roles.join(", ")
        }
    ));
    let schemas = &doc["schemas"];
    for m in doc["members"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}\n", member_line(m, schemas)));
    }
    for s in doc["streams"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  stream {} -> {}  requires: {}\n",
            text(&s["topic"]),
            type_word(&s["payload"]),
            requires(&s["requires"])
        ));
    }
    out
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

fn requires(v: &Value) -> String {
    let roles: Vec<&str> = v
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if roles.is_empty() {
        "-".to_owned()
    } else {
        roles.join(", ")
    }
}

/// `Orders::place(symbol: String, …) -> OrderReceipt, error ClosureViolation  requires: -`
pub fn member_line(m: &Value, schemas: &Value) -> String {
    let request = match &m["request"] {
        Value::Null => String::new(),
        r => match resolve(r, schemas) {
            Some(obj) if obj.get("properties").is_some() => fields(obj),
            _ => type_word(r),
        },
    };
    let response = match &m["response"] {
        Value::Null => "()".to_owned(),
        r => type_word(r),
    };
    let error = match &m["error"] {
        Value::Null => String::new(),
        Value::String(s) => format!(", error {s}"),
        e => format!(", error {}", type_word(e)),
    };
    format!(
        "{}({request}) -> {response}{error}  requires: {}",
        text(&m["name"]),
        requires(&m["requires"])
    )
}

/// The schema a `$ref` names in the document's schemas, or the schema
/// itself.
pub fn resolve<'a>(schema: &'a Value, schemas: &'a Value) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => schemas.get(r.rsplit('/').next()?),
        None => Some(schema),
    }
}

fn fields(obj: &Value) -> String {
    let required: Vec<&str> = obj["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parts = Vec::new();
    if let Some(props) = obj["properties"].as_object() {
        for (name, schema) in props {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            parts.push(format!("{name}{optional}: {}", type_word(schema)));
        }
    }
    parts.join(", ")
}

/// The language's word for a schema: Int, Float, Bool, String, `[T]`, a
/// record by its name; a distinct or quantity type adds its name and unit.
pub fn type_word(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_owned();
    }
    let base = match schema["type"].as_str() {
        Some("integer") => "Int".to_owned(),
        Some("number") => "Float".to_owned(),
        Some("boolean") => "Bool".to_owned(),
        Some("string") => "String".to_owned(),
        Some("array") => format!("[{}]", type_word(&schema["items"])),
        Some("object") => "Object".to_owned(),
        _ => "Any".to_owned(),
    };
    match (
        schema["x-hale-type"].as_str(),
        schema["x-hale-unit"].as_str(),
    ) {
        (Some(t), Some(u)) => format!("{base} ({t}, {u})"),
        (Some(t), None) => format!("{base} ({t})"),
        (None, Some(u)) => format!("{base} ({u})"),
        (None, None) => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A witness description, when the shared fixtures are present.
    fn witness(name: &str) -> Option<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/hale-witness")
            .join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(serde_json::from_str(&text).unwrap()),
            Err(_) => {
                eprintln!("skipping: {} is absent", path.display());
                None
            }
        }
    }

    #[test]
    fn the_witness_public_description_for_alice() {
        let Some(doc) = witness("public.alice.description.json") else {
            return;
        };
        assert_eq!(
            render(&doc),
            "Public@fnv1a64:a8930d6e7998e986/public  [http 127.0.0.1:8080]\n\
             caller: bearer alice; roles: trader\n\
             \x20 Orders::cancel(order: Int (OrderId)) -> Cancelled, error OrderError  requires: trader\n\
             \x20 Orders::place(symbol: String, qty: Int, limit: Int (Money, q(cent))) -> OrderReceipt, \
             error ClosureViolation  requires: -\n"
        );
    }

    #[test]
    fn every_witness_description_renders_a_line_per_member_and_stream() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/hale-witness");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: {} is absent", dir.display());
            return;
        };
        let mut seen = 0;
        for e in entries {
            let path = e.unwrap().path();
            if !path.to_string_lossy().ends_with(".description.json") {
                continue;
            }
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let text = render(&doc);
            let lines: Vec<&str> = text.lines().collect();
            let members = doc["members"].as_array().unwrap();
            let streams = doc["streams"].as_array().unwrap();
            assert_eq!(
                lines.len(),
                2 + members.len() + streams.len(),
                "{}",
                path.display()
            );
            assert!(lines[0].starts_with(doc["exposure"].as_str().unwrap()));
            assert!(lines[1].starts_with(&format!(
                "caller: {} ",
                doc["caller"]["principal"]["mode"].as_str().unwrap()
            )));
            for (line, m) in lines[2..].iter().zip(members) {
                let name = m["name"].as_str().unwrap();
                assert!(line.starts_with(&format!("  {name}(")), "{line}");
                assert!(
                    line.ends_with(&format!("requires: {}", requires(&m["requires"]))),
                    "{line}"
                );
            }
            for (line, s) in lines[2 + members.len()..].iter().zip(streams) {
                let topic = s["topic"].as_str().unwrap();
                assert!(line.starts_with(&format!("  stream {topic} -> ")), "{line}");
            }
            seen += 1;
        }
        assert!(seen > 0, "no description fixtures in {}", dir.display());
    }

    #[test]
    fn optional_fields_lists_streams_and_absent_parts() {
        let doc = json!({
            "exposure": "Admin@fnv1a64:0000000000000001/admin",
            "listener": {"transport": "unix", "address": null},
            "caller": {"principal": {"mode": "unix", "name": "uid:1000"}, "roles": []},
            "members": [
                {"name": "Ledger::tags", "request": {"$ref": "#/schemas/Query"},
                 "response": {"type": "array", "items": {"$ref": "#/schemas/Tag"}},
                 "error": null, "requires": ["operator", "auditor"]},
                {"name": "Ledger::ping", "request": null, "response": null, "error": null,
                 "requires": []},
                {"name": "Ledger::raw", "request": {"type": "number"}, "response": {},
                 "error": {"type": "string"}, "requires": []}
            ],
            "streams": [
                {"topic": "fills", "payload": {"$ref": "#/schemas/Fill"}, "requires": ["trader"]}
            ],
            "schemas": {
                "Query": {"type": "object",
                          "properties": {"prefix": {"type": "string"},
                                         "limit": {"type": "integer", "x-hale-unit": "q(item)"},
                                         "flags": {"type": "array", "items": {"type": "boolean"}}},
                          "required": ["prefix"]}
            }
        });
        assert_eq!(
            render(&doc),
            "Admin@fnv1a64:0000000000000001/admin  [unix -]\n\
             caller: unix uid:1000; roles: -\n\
             \x20 Ledger::tags(prefix: String, limit?: Int (q(item)), flags?: [Bool]) -> [Tag]  requires: operator, auditor\n\
             \x20 Ledger::ping() -> ()  requires: -\n\
             \x20 Ledger::raw(Float) -> Any, error String  requires: -\n\
             \x20 stream fills -> Fill  requires: trader\n"
        );
    }

    #[test]
    fn a_reference_resolves_by_its_last_segment() {
        let schemas = json!({"A": {"type": "object"}});
        assert_eq!(
            resolve(&json!({"$ref": "#/schemas/A"}), &schemas),
            Some(&schemas["A"])
        );
        assert_eq!(resolve(&json!({"$ref": "#/schemas/B"}), &schemas), None);
        let inline = json!({"type": "integer"});
        assert_eq!(resolve(&inline, &schemas), Some(&inline));
        // An unresolved reference is still named by it.
        let m = json!({"name": "A::b", "request": {"$ref": "#/schemas/B"}, "response": null,
                       "error": null, "requires": []});
        assert_eq!(member_line(&m, &schemas), "A::b(B) -> ()  requires: -");
    }
}
