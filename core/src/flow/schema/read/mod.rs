//! Schema → type: the inverse of [`schema_of`](super::schema_of).
//!
//! [`decl`] reads a `$defs` entry (a record's object, an enum's `oneOf`),
//! [`ty`] a schema where a type is used.
//!
//! The reader accepts exactly the schemas the generator writes, keyword for
//! keyword, so that reading and writing again gives the same schema. Any
//! other keyword, value or shape is refused with the JSON pointer of the
//! part that is not ours. Key order is not checked: a JSON object has none.

mod decl;
mod ty;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::generate::Scope;
use super::{child, def_ref, SchemaError, DIALECT};
use crate::flow::identity::Identity;
use crate::flow::types::{Type, TypeEnv};

/// Rebuilds the type a root schema describes, and the declarations of the
/// named types under its `$defs`.
///
/// The schema must be one [`schema_of`](super::schema_of) writes: a root
/// with `$schema` naming draft 2020-12, every `$defs` entry keyed by an
/// identity and reached from the root. A type parameter outside every
/// declaration is free, as `schema_of` writes it.
pub fn type_from_schema(schema: &Value) -> Result<(Type, TypeEnv), SchemaError> {
    let mut env = TypeEnv::new();
    let (ty, _) = Reader::new(&mut env).root(schema, "", Scope::Free, false)?;
    Ok((ty, env))
}

/// Reads root schemas into one [`TypeEnv`], refusing two roots whose
/// `$defs` declare one identity differently.
pub(crate) struct Reader<'env> {
    env: &'env mut TypeEnv,
}

/// One `$defs` entry of the root being read.
struct Def<'s> {
    identity: Identity,
    at: String,
    body: &'s Map<String, Value>,
    params: Vec<String>,
}

/// The `$defs` of the root being read, and which entries refer to which.
struct Root<'s> {
    defs: Vec<Def<'s>>,
    by_ref: BTreeMap<String, usize>,
}

impl<'env> Reader<'env> {
    pub(crate) fn new(env: &'env mut TypeEnv) -> Reader<'env> {
        Reader { env }
    }

    /// Reads the root schema `schema`, found at pointer `at`. A root
    /// `description` is accepted (and returned) only when `allow_doc`.
    pub(crate) fn root(
        &mut self,
        schema: &Value,
        at: &str,
        scope: Scope<'_>,
        allow_doc: bool,
    ) -> Result<(Type, Option<String>), SchemaError> {
        let obj = object(schema, at, "a root schema")?;
        match obj.get("$schema") {
            Some(Value::String(s)) if s == DIALECT => {}
            Some(_) => {
                return Err(SchemaError::at(
                    &child(at, "$schema"),
                    format!("`$schema` must be `{DIALECT}`"),
                ))
            }
            None => {
                return Err(SchemaError::at(
                    at,
                    format!("a root schema names its dialect: `\"$schema\": \"{DIALECT}\"`"),
                ))
            }
        }
        let root = match obj.get("$defs") {
            None => Root {
                defs: Vec::new(),
                by_ref: BTreeMap::new(),
            },
            Some(defs) => Root::new(defs, &child(at, "$defs"))?,
        };
        let body: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| *k != "$schema" && *k != "$defs")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut reached = BTreeSet::new();
        let read = root.ty(&Value::Object(body), at, scope, allow_doc, &mut reached)?;
        let mut decls = Vec::with_capacity(root.defs.len());
        let mut edges = Vec::with_capacity(root.defs.len());
        for def in &root.defs {
            let mut refs = BTreeSet::new();
            decls.push(root.decl(def, &mut refs)?);
            edges.push(refs);
        }
        let mut queue: Vec<usize> = reached.iter().copied().collect();
        while let Some(i) = queue.pop() {
            for &j in &edges[i] {
                if reached.insert(j) {
                    queue.push(j);
                }
            }
        }
        if let Some(def) = root
            .defs
            .iter()
            .enumerate()
            .find(|(i, _)| !reached.contains(i))
        {
            return Err(SchemaError::at(
                &def.1.at,
                "nothing in the schema refers to this `$defs` entry",
            ));
        }
        for (def, decl) in root.defs.iter().zip(decls) {
            match self.env.get(&decl.identity) {
                Some(known) if *known != decl => {
                    return Err(SchemaError::at(
                        &def.at,
                        format!(
                            "`{}` is declared differently by another schema read with this one",
                            decl.identity
                        ),
                    ))
                }
                Some(_) => {}
                None => self.env.declare(decl),
            }
        }
        Ok(read)
    }
}

impl<'s> Root<'s> {
    /// Indexes `$defs` (at pointer `at`) by the `$ref` that names each entry.
    fn new(defs: &'s Value, at: &str) -> Result<Root<'s>, SchemaError> {
        let map = object(defs, at, "`$defs`")?;
        if map.is_empty() {
            return Err(SchemaError::at(
                at,
                "an empty `$defs` is left out of the schemas we write",
            ));
        }
        let mut root = Root {
            defs: Vec::with_capacity(map.len()),
            by_ref: BTreeMap::new(),
        };
        for (key, body) in map {
            let at = child(at, key);
            let identity = Identity::parse(key).map_err(|e| SchemaError::at(&at, e.to_string()))?;
            if identity.to_string() != *key {
                return Err(SchemaError::at(
                    &at,
                    format!("the key is not written as the identity `{identity}` is"),
                ));
            }
            let body = object(body, &at, "a `$defs` entry")?;
            let params = match body.get("$generic") {
                None => Vec::new(),
                Some(v) => names(v, &child(&at, "$generic"), "type parameter")?,
            };
            root.by_ref.insert(def_ref(key), root.defs.len());
            root.defs.push(Def {
                identity,
                at,
                body,
                params,
            });
        }
        Ok(root)
    }
}

/// `{"type": "object", "properties": {"C": payload}, "required": ["C"],
/// "additionalProperties": false}`: the constructor's name, its payload's
/// schema and that schema's pointer.
fn tagged<'v>(
    obj: &'v Map<String, Value>,
    at: &str,
    allow_doc: bool,
) -> Result<(&'v str, &'v Value, String), SchemaError> {
    let keys = ["type", "properties", "required", "additionalProperties"];
    let d: &[&str] = if allow_doc { &["description"] } else { &[] };
    only(
        obj,
        at,
        &[d, &keys[..]].concat(),
        "a constructor with a payload",
    )?;
    let shape = "a constructor with a payload is `{\"type\": \"object\", \"properties\": {\"C\": \
                 …}, \"required\": [\"C\"], \"additionalProperties\": false}`";
    let (name, schema) = match obj.get("properties") {
        Some(Value::Object(p)) if p.len() == 1 => {
            p.iter().next().ok_or_else(|| SchemaError::at(at, shape))?
        }
        _ => return Err(SchemaError::at(&child(at, "properties"), shape)),
    };
    if obj.get("type") != Some(&Value::from("object")) {
        return Err(SchemaError::at(&child(at, "type"), shape));
    }
    if obj.get("required") != Some(&Value::Array(vec![Value::from(name.as_str())])) {
        return Err(SchemaError::at(&child(at, "required"), shape));
    }
    if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(SchemaError::at(&child(at, "additionalProperties"), shape));
    }
    let payload_at = child(&child(at, "properties"), name);
    Ok((name.as_str(), schema, payload_at))
}

fn object<'v>(v: &'v Value, at: &str, what: &str) -> Result<&'v Map<String, Value>, SchemaError> {
    v.as_object().ok_or_else(|| {
        let hint = if v.is_boolean() {
            " (a boolean schema is not one we write; Never is `{\"not\": {}}`)"
        } else {
            ""
        };
        SchemaError::at(at, format!("{what} is a JSON object{hint}"))
    })
}

fn is_empty_object(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty)
}

/// Refuses the first key of `obj` that `allowed` does not hold.
fn only(
    obj: &Map<String, Value>,
    at: &str,
    allowed: &[&str],
    what: &str,
) -> Result<(), SchemaError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(SchemaError::at(
            &child(at, key),
            format!("`{key}` is not a keyword of {what} as we write it"),
        )),
    }
}

/// The `description` of `obj`, which is only written where `allow_doc`.
fn doc(obj: &Map<String, Value>, at: &str, allow_doc: bool) -> Result<Option<String>, SchemaError> {
    match obj.get("description") {
        None => Ok(None),
        Some(Value::String(s)) if allow_doc => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(SchemaError::at(
            &child(at, "description"),
            "no doc comment is written here: a description belongs to a type's `$defs` entry, \
             a field's property, a constructor's branch or a parameter's schema",
        )),
        Some(_) => Err(SchemaError::at(
            &child(at, "description"),
            "a description is a string",
        )),
    }
}

/// A non-empty array of distinct strings (a `required`, a `$generic`).
pub(crate) fn names(v: &Value, at: &str, what: &str) -> Result<Vec<String>, SchemaError> {
    let Value::Array(items) = v else {
        return Err(SchemaError::at(at, format!("a list of {what} names")));
    };
    if items.is_empty() {
        return Err(SchemaError::at(
            at,
            "an empty list is left out of the schemas we write",
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = child(at, &i.to_string());
        let Value::String(s) = item else {
            return Err(SchemaError::at(&at, format!("a {what} name is a string")));
        };
        if out.contains(s) {
            return Err(SchemaError::at(
                &at,
                format!("{what} `{s}` is listed twice"),
            ));
        }
        out.push(s.clone());
    }
    Ok(out)
}
