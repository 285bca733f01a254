//! The canonical signature of a listed (described) signature.
//!
//! This works on the JSON as listed, not on a type model rebuilt from it,
//! so that `flow fingerprint` applies § Identity and fingerprints' rule to
//! any listing: it strips the `description` keyword of every schema object
//! (never a property *named* `description`, never a value under `const`),
//! and writes every `$defs` key and every `$ref` naming one without its
//! `@version`.

use serde_json::{Map, Value};

use super::Fingerprint;
use crate::flow::identity::Identity;
use crate::flow::schema::{child, def_key_of_ref, def_ref, SchemaError};

/// A listed signature's members.
pub(super) struct Members<'s> {
    pub(super) description: Option<&'s str>,
    pub(super) params: Vec<(String, &'s Value)>,
    pub(super) ok: &'s Value,
    pub(super) err: &'s Value,
    pub(super) generic: Vec<String>,
}

/// Reads the members of a listed signature: `params`, `ok`, `err`,
/// `generic`, and the Tool's `description` if any.
pub(super) fn members(signature: &Value) -> Result<Members<'_>, SchemaError> {
    let Value::Object(obj) = signature else {
        return Err(SchemaError::at(
            "",
            "a signature is an object: {\"params\", \"ok\", \"err\", \"generic\"}",
        ));
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !["description", "params", "ok", "err", "generic"].contains(&k.as_str()))
    {
        return Err(SchemaError::at(
            &child("", key),
            format!("`{key}` is not a member of a signature"),
        ));
    }
    let get = |key: &str| {
        obj.get(key)
            .ok_or_else(|| SchemaError::at("", format!("a signature has `{key}`")))
    };
    let description = match obj.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            return Err(SchemaError::at(
                "/description",
                "a Tool's description is a string",
            ))
        }
    };
    let Value::Array(listed) = get("params")? else {
        return Err(SchemaError::at(
            "/params",
            "`params` is an array of [name, schema] pairs",
        ));
    };
    let mut params = Vec::with_capacity(listed.len());
    for (i, pair) in listed.iter().enumerate() {
        match pair.as_array().map(Vec::as_slice) {
            Some([Value::String(name), schema]) => params.push((name.clone(), schema)),
            _ => {
                return Err(SchemaError::at(
                    &format!("/params/{i}"),
                    "a parameter is a [name, schema] pair",
                ))
            }
        }
    }
    let Value::Array(names) = get("generic")? else {
        return Err(SchemaError::at(
            "/generic",
            "`generic` is an array of type parameter names",
        ));
    };
    let mut generic: Vec<String> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        match name {
            Value::String(n) if !generic.contains(n) => generic.push(n.clone()),
            _ => {
                return Err(SchemaError::at(
                    &format!("/generic/{i}"),
                    "a type parameter name is a string, listed once",
                ))
            }
        }
    }
    Ok(Members {
        description,
        params,
        ok: get("ok")?,
        err: get("err")?,
        generic,
    })
}

/// The canonical signature of a listed signature: its four members, every
/// schema stripped of descriptions and versions.
pub fn canonical_signature(listed: &Value) -> Result<Value, SchemaError> {
    let m = members(listed)?;
    let params = m
        .params
        .iter()
        .enumerate()
        .map(|(i, (name, schema))| {
            let schema = strip(schema, &format!("/params/{i}/1"))?;
            Ok(Value::Array(vec![name.as_str().into(), schema]))
        })
        .collect::<Result<Vec<_>, SchemaError>>()?;
    let mut out = Map::new();
    out.insert("params".into(), Value::Array(params));
    out.insert("ok".into(), strip(m.ok, "/ok")?);
    out.insert("err".into(), strip(m.err, "/err")?);
    out.insert("generic".into(), serde_json::json!(m.generic));
    Ok(Value::Object(out))
}

/// The fingerprint of a listed signature (describe's `"signature"`).
pub fn fingerprint_of_signature(listed: &Value) -> Result<Fingerprint, SchemaError> {
    Ok(Fingerprint::of_canonical_signature(&canonical_signature(
        listed,
    )?))
}

/// One entry of a listing's `tools` (describe's result) checked against
/// its own signature ([`check_listed_entry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedEntry {
    /// The tool's name as listed, or `tools[i]` when it lists none.
    pub name: String,
    /// The fingerprint its signature computes to, when it has one limen
    /// reads.
    pub computed: Option<Fingerprint>,
    /// What is wrong with the entry, named by its tool: a signature limen
    /// does not read or none, a fingerprint that is not the computed one
    /// or none.
    pub wrong: Option<String>,
}

/// Checks the `i`-th entry of a listing's `tools`: its signature's
/// fingerprint computed and compared with the one it lists.
pub fn check_listed_entry(i: usize, entry: &Value) -> ListedEntry {
    let name = entry
        .get("tool")
        .and_then(|t| t.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("tools[{i}]"));
    let computed = match entry.get("signature").map(fingerprint_of_signature) {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            let wrong = Some(format!("{name}: its signature is not one limen reads: {e}"));
            return ListedEntry {
                name,
                computed: None,
                wrong,
            };
        }
        None => {
            let wrong = Some(format!("{name}: it lists no signature"));
            return ListedEntry {
                name,
                computed: None,
                wrong,
            };
        }
    };
    let listed = entry.get("fingerprint").and_then(|f| f.as_str());
    let wrong = match listed.map(Fingerprint::parse) {
        Some(Ok(f)) if f == computed => None,
        Some(_) => Some(format!(
            "{name}: lists {}, its signature's fingerprint is {computed}",
            listed.unwrap_or_default()
        )),
        None => Some(format!(
            "{name}: lists no fingerprint; its signature's is {computed}"
        )),
    };
    ListedEntry {
        name,
        computed: Some(computed),
        wrong,
    }
}

/// Keywords whose value is one schema.
const ONE: &[&str] = &[
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of schemas (`$args` is ours).
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "$args"];
/// Keywords whose value maps names to schemas: the names are not keywords.
const NAMED: &[&str] = &["properties", "patternProperties", "dependentSchemas"];

/// `schema` (at pointer `at`) without descriptions or versions. Only the
/// positions JSON Schema 2020-12 defines as holding schemas are walked;
/// every other keyword's value (`const`, `required`, `default`, …) is kept
/// as it is.
fn strip(schema: &Value, at: &str) -> Result<Value, SchemaError> {
    let obj = match schema {
        Value::Bool(_) => return Ok(schema.clone()),
        Value::Object(obj) => obj,
        _ => {
            return Err(SchemaError::at(
                at,
                "a schema is a JSON object or a boolean",
            ))
        }
    };
    let mut out = Map::new();
    for (key, value) in obj {
        let at = child(at, key);
        let k = key.as_str();
        let stripped = match k {
            "description" => continue,
            "$ref" => Value::String(unversioned_ref(value, &at)?),
            "$defs" => {
                let Value::Object(defs) = value else {
                    return Err(SchemaError::at(&at, "`$defs` is an object"));
                };
                let mut entries = Map::new();
                for (key, entry) in defs {
                    let entry_at = child(&at, key);
                    let identity = Identity::parse(key)
                        .map_err(|e| SchemaError::at(&entry_at, e.to_string()))?;
                    let unversioned = identity.without_version();
                    if entries.contains_key(&unversioned) {
                        return Err(SchemaError::at(
                            &entry_at,
                            format!(
                                "a second `$defs` entry for `{unversioned}` at another version"
                            ),
                        ));
                    }
                    entries.insert(unversioned, strip(entry, &entry_at)?);
                }
                Value::Object(entries)
            }
            _ if ONE.contains(&k) => strip(value, &at)?,
            _ if MANY.contains(&k) => {
                let Value::Array(items) = value else {
                    return Err(SchemaError::at(
                        &at,
                        format!("`{key}` is an array of schemas"),
                    ));
                };
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| strip(s, &child(&at, &i.to_string())))
                    .collect::<Result<Vec<_>, _>>()?;
                Value::Array(items)
            }
            _ if NAMED.contains(&k) => {
                let Value::Object(named) = value else {
                    return Err(SchemaError::at(
                        &at,
                        format!("`{key}` maps names to schemas"),
                    ));
                };
                let mut entries = Map::new();
                for (name, s) in named {
                    entries.insert(name.clone(), strip(s, &child(&at, name))?);
                }
                Value::Object(entries)
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), stripped);
    }
    Ok(Value::Object(out))
}

/// A `$ref` naming a `$defs` entry, rewritten to name it without its
/// version.
fn unversioned_ref(reference: &Value, at: &str) -> Result<String, SchemaError> {
    let key = match reference {
        Value::String(r) => def_key_of_ref(r),
        _ => None,
    };
    let Some(key) = key else {
        return Err(SchemaError::at(
            at,
            "a `$ref` names a `$defs` entry by identity (`#/$defs/…`); no other can be written \
             without its version",
        ));
    };
    let identity = Identity::parse(&key).map_err(|e| SchemaError::at(at, e.to_string()))?;
    Ok(def_ref(&identity.without_version()))
}
