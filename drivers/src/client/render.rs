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
