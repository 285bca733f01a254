//! A call's payload from typed flags, checked against the member's schema
//! before anything is sent (§ Driving a served program).

use serde_json::{Map, Value};

use super::render::resolve;

/// The verb's own flag names: a payload field of one of these is given
/// with `--json`.
pub const OWN_FLAGS: [&str; 5] = ["json", "bearer", "id", "digest", "raw"];

/// One `--field value` (or `--field=value`, or a bare `--field`) as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The name after `--`, as written.
    pub name: String,
    /// The value, when one was given.
    pub value: Option<String>,
}

/// Builds the payload object of a member whose request schema is `request`
/// (a `$ref` into `schemas`) from typed flags. The error names the field,
/// its schema, and the path of a nested value.
pub fn build(request: &Value, schemas: &Value, flags: &[Flag]) -> Result<Value, String> {
    let schema =
        resolve(request, schemas).ok_or("the member's request schema is not in the description")?;
    let props = schema["properties"]
        .as_object()
        .ok_or("the member's request is not a record: give it with --json")?;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut object = Map::new();
    for flag in flags {
        let field = props
            .keys()
            .find(|k| *k == &flag.name || k.replace('_', "-") == flag.name)
            .ok_or_else(|| {
                let names: Vec<String> = props
                    .keys()
                    .map(|k| format!("--{}", k.replace('_', "-")))
                    .collect();
                format!(
                    "--{} names no field of the payload; its fields are {}",
                    flag.name,
                    names.join(", ")
                )
            })?;
        if object.contains_key(field) {
            return Err(format!("--{} is given twice", flag.name));
        }
        let field_schema = &props[field];
        let value = typed(field, field_schema, schemas, flag.value.as_deref())?;
        object.insert(field.clone(), value);
    }
    for r in required {
        if !object.contains_key(r) {
            return Err(format!(
                "--{} is required: {} ({})",
                r.replace('_', "-"),
                r,
                super::render::type_word(&props[r])
            ));
        }
    }
    Ok(Value::Object(object))
}

/// A flag's value, parsed as its field's type.
fn typed(
    field: &str,
    schema: &Value,
    schemas: &Value,
    value: Option<&str>,
) -> Result<Value, String> {
    let target = resolve(schema, schemas).unwrap_or(schema);
    let kind = target["type"].as_str().unwrap_or("");
    let bad = |why: &str| {
        format!(
            "--{} ({}): {why}",
            field.replace('_', "-"),
            super::render::type_word(schema)
        )
    };
    match (kind, value) {
        ("boolean", None) => Ok(Value::Bool(true)),
        (_, None) => Err(bad("needs a value")),
        ("integer", Some(v)) => v
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| bad(&format!("`{v}` is not an integer"))),
        ("number", Some(v)) => v
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| bad(&format!("`{v}` is not a number"))),
        ("boolean", Some("true")) => Ok(Value::Bool(true)),
        ("boolean", Some("false")) => Ok(Value::Bool(false)),
        ("boolean", Some(v)) => Err(bad(&format!("`{v}` is neither true nor false"))),
        ("string", Some(v)) => Ok(Value::String(v.to_owned())),
        (_, Some(v)) => {
            let parsed: Value =
                serde_json::from_str(v).map_err(|_| bad(&format!("`{v}` is not JSON")))?;
            check(&parsed, schema, schemas, field).map_err(|e| bad(&e))?;
            Ok(parsed)
        }
    }
}

/// Checks a JSON value against a schema recursively: a record has every
/// required field, no unknown field, each of its type; a list's items are
/// of the item type. The error names the path (`ship.city`, `items[0]`).
pub fn check(value: &Value, schema: &Value, schemas: &Value, path: &str) -> Result<(), String> {
    let schema = resolve(schema, schemas).unwrap_or(schema);
    let wrong = || format!("{path} is not {}", super::render::type_word(schema));
    match schema["type"].as_str() {
        Some("integer") => value.as_i64().map(|_| ()).ok_or_else(wrong),
        Some("number") => value.as_f64().map(|_| ()).ok_or_else(wrong),
        Some("boolean") => value.as_bool().map(|_| ()).ok_or_else(wrong),
        Some("string") => value.as_str().map(|_| ()).ok_or_else(wrong),
        Some("array") => {
            let items = value.as_array().ok_or_else(wrong)?;
            for (i, item) in items.iter().enumerate() {
                check(item, &schema["items"], schemas, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        Some("object") => {
            let object = value.as_object().ok_or_else(wrong)?;
            let props = schema["properties"].as_object();
            for (k, v) in object {
                let Some(s) = props.and_then(|p| p.get(k)) else {
                    return Err(format!(
                        "{path}.{k} is no field of {}",
                        super::render::type_word(schema)
                    ));
                };
                check(v, s, schemas, &format!("{path}.{k}"))?;
            }
            for r in schema["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or("");
                if !object.contains_key(r) {
                    return Err(format!("{path}.{r} is required"));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> Value {
        serde_json::json!({
            "Ship": {"type": "object", "properties": {"city": {"type": "string"}, "floor": {"type": "integer"}}, "required": ["city"]},
            "Order": {"type": "object", "properties": {
                "qty": {"type": "integer"}, "price": {"type": "number"}, "rush": {"type": "boolean"},
                "ship_to": {"$ref": "#/schemas/Ship"}, "items": {"type": "array", "items": {"type": "integer"}},
                "note": {"type": "string"}
            }, "required": ["qty", "ship_to"]}
        })
    }

    fn flag(name: &str, value: Option<&str>) -> Flag {
        Flag {
            name: name.into(),
            value: value.map(Into::into),
        }
    }

    fn req() -> Value {
        serde_json::json!({"$ref": "#/schemas/Order"})
    }

    #[test]
    fn typed_flags_build_the_payload() {
        let p = build(
            &req(),
            &schemas(),
            &[
                flag("qty", Some("3")),
                flag("rush", None),
                flag("ship-to", Some(r#"{"city": "Oslo"}"#)),
                flag("items", Some("[1,2]")),
            ],
        )
        .unwrap();
        assert_eq!(
            p,
            serde_json::json!({"qty": 3, "rush": true, "ship_to": {"city": "Oslo"}, "items": [1, 2]})
        );
    }

    #[test]
    fn typed_flags_are_refused_naming_the_field_and_path() {
        let s = schemas();
        let err = |flags: &[Flag]| build(&req(), &s, flags).unwrap_err();
        assert_eq!(
            err(&[flag("ship-to", Some("{\"city\":\"a\"}"))]),
            "--qty is required: qty (Int)"
        );
        assert!(err(&[flag("qty", Some("x"))]).contains("`x` is not an integer"));
        assert!(err(&[flag("nope", Some("1"))]).contains("--nope names no field"));
        assert!(err(&[flag("qty", Some("1")), flag("qty", Some("2"))]).contains("given twice"));
        assert!(err(&[
            flag("qty", Some("1")),
            flag("ship-to", Some(r#"{"city": 3}"#))
        ])
        .contains("ship_to.city is not String"));
        assert!(err(&[flag("qty", Some("1")), flag("ship-to", Some("{}"))])
            .contains("ship_to.city is required"));
        assert!(err(&[
            flag("qty", Some("1")),
            flag("ship-to", Some(r#"{"city":"a"}"#)),
            flag("items", Some(r#"[1,"x"]"#))
        ])
        .contains("items[1] is not Int"));
    }
}
