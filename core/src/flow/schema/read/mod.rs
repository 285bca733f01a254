//! Schema → type: the inverse of [`schema_of`](super::schema_of).
//!
//! [`decl`] reads a `$defs` entry (a record's object, an enum's `oneOf`),
//! [`ty`] a schema where a type is used.
//!
//! The reader accepts exactly the schemas the generator writes, keyword for
//! keyword, so that reading and writing again gives the same schema. Any
//! other keyword, value or shape is refused with the JSON pointer of the
//! part that is not ours. Key order is not checked: a JSON object has none.
//!
//! [`type_from_plain_schema`] is the same reader made lenient for the
//! schemas people write by hand (`flow canon --schema`): a root without
//! `$schema` is draft 2020-12, an object schema written inline is an
//! anonymous record, an inline `oneOf` (or `enum` of strings) an anonymous
//! enum, `required` in any order, annotations (`title`, `description`,
//! `$comment`, `examples`, `$id`) anywhere, and `$defs` keys that are not
//! identities. A listing keeps the strict reader: it is a contract.

mod decl;
mod ty;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::generate::Scope;
use super::{child, def_ref, SchemaError, DIALECT};
use crate::flow::identity::Identity;
use crate::flow::types::{Type, TypeBody, TypeDecl, TypeEnv};

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

/// Rebuilds the type a schema written by hand describes: what
/// [`type_from_schema`] reads, and besides
///
/// - a root without `$schema`, read as draft 2020-12 (a `$schema` naming
///   another dialect is still refused);
/// - an object schema with `properties` written where a type is used: an
///   anonymous record, its fields the properties in order, those not in
///   `required` (in any order) Options; `additionalProperties` absent or
///   `true`, since a record reads past fields it does not name;
/// - an inline `oneOf` of constants (`{"const": "C"}`) and single-property
///   objects (`{"properties": {"C": …}, "required": ["C"]}`): an anonymous
///   enum, one constructor per branch; `{"enum": ["A", "B"]}` the enum of
///   those constructors without payload;
/// - `title`, `description`, `$comment` and `examples` anywhere, `$id` at
///   the root, all ignored;
/// - `$defs` keys that are not identities, each declared as one under the
///   path `/$defs`, and `$defs` entries nothing refers to.
///
/// An anonymous type is declared under the path [`ANONYMOUS`], named
/// `Inline` and its order of reading (`/schema.Inline0`).
pub fn type_from_plain_schema(schema: &Value) -> Result<(Type, TypeEnv), SchemaError> {
    let mut env = TypeEnv::new();
    let mut reader = Reader::new(&mut env);
    reader.plain = true;
    let (ty, _) = reader.root(schema, "", Scope::Free, false)?;
    Ok((ty, env))
}

/// The path under which [`type_from_plain_schema`] declares the anonymous
/// records and enums it reads.
pub const ANONYMOUS: &str = "/schema";

/// The annotations a plain schema may carry anywhere; the reader ignores
/// them.
const ANNOTATIONS: [&str; 4] = ["title", "description", "$comment", "examples"];

/// Reads root schemas into one [`TypeEnv`], refusing two roots whose
/// `$defs` declare one identity differently.
pub(crate) struct Reader<'env> {
    env: &'env mut TypeEnv,
    /// Read schemas written by hand ([`type_from_plain_schema`]).
    plain: bool,
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
    /// Read leniently ([`type_from_plain_schema`]).
    plain: bool,
    /// The anonymous records and enums read so far (plain schemas only).
    anonymous: RefCell<Vec<TypeDecl>>,
}

impl<'env> Reader<'env> {
    pub(crate) fn new(env: &'env mut TypeEnv) -> Reader<'env> {
        Reader { env, plain: false }
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
            None if self.plain => {}
            None => {
                return Err(SchemaError::at(
                    at,
                    format!("a root schema names its dialect: `\"$schema\": \"{DIALECT}\"`"),
                ))
            }
        }
        let plain = self.plain;
        let root = match obj.get("$defs") {
            None => Root {
                defs: Vec::new(),
                by_ref: BTreeMap::new(),
                plain,
                anonymous: RefCell::new(Vec::new()),
            },
            Some(defs) => Root::new(defs, &child(at, "$defs"), plain)?,
        };
        let body: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| *k != "$schema" && *k != "$defs" && !(plain && *k == "$id"))
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
            .find(|(i, _)| !plain && !reached.contains(i))
        {
            return Err(SchemaError::at(
                &def.1.at,
                "nothing in the schema refers to this `$defs` entry",
            ));
        }
        for decl in root.anonymous.take() {
            self.env.declare(decl);
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
    /// Indexes `$defs` (at pointer `at`) by the `$ref` that names each
    /// entry; `plain`: read leniently ([`type_from_plain_schema`]).
    fn new(defs: &'s Value, at: &str, plain: bool) -> Result<Root<'s>, SchemaError> {
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
            plain,
            anonymous: RefCell::new(Vec::new()),
        };
        for (key, body) in map {
            let at = child(at, key);
            let identity = match Identity::parse(key) {
                Ok(i) if i.to_string() == *key => i,
                // A key written by hand names its type under `/$defs`.
                _ if plain => Identity::at_path("/$defs", &key.replace('.', "_")),
                Ok(i) => i,
                Err(e) => return Err(SchemaError::at(&at, e.to_string())),
            };
            if identity.to_string() != *key && !plain {
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

impl Root<'_> {
    /// Refuses the first key of `obj` that `allowed` does not hold; a plain
    /// schema's annotations are allowed too.
    fn only(
        &self,
        obj: &Map<String, Value>,
        at: &str,
        allowed: &[&str],
        what: &str,
    ) -> Result<(), SchemaError> {
        if self.plain {
            only(obj, at, &[allowed, &ANNOTATIONS[..]].concat(), what)
        } else {
            only(obj, at, allowed, what)
        }
    }

    /// Declares an anonymous record or enum of a plain schema and returns
    /// its identity.
    fn anonymous(&self, body: TypeBody) -> Identity {
        let mut anonymous = self.anonymous.borrow_mut();
        let identity = Identity::at_path(ANONYMOUS, &format!("Inline{}", anonymous.len()));
        anonymous.push(TypeDecl {
            identity: identity.clone(),
            doc: None,
            params: Vec::new(),
            body,
        });
        identity
    }
}

/// `{"type": "object", "properties": {"C": payload}, "required": ["C"],
/// "additionalProperties": false}`: the constructor's name, its payload's
/// schema and that schema's pointer. `plain`: `type` and
/// `additionalProperties` may be left out, and annotations are allowed.
fn tagged<'v>(
    obj: &'v Map<String, Value>,
    at: &str,
    allow_doc: bool,
    plain: bool,
) -> Result<(&'v str, &'v Value, String), SchemaError> {
    let keys = ["type", "properties", "required", "additionalProperties"];
    let d: &[&str] = match (plain, allow_doc) {
        (true, _) => &ANNOTATIONS,
        (false, true) => &["description"],
        (false, false) => &[],
    };
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
    if obj.get("type") != Some(&Value::from("object")) && !(plain && obj.get("type").is_none()) {
        return Err(SchemaError::at(&child(at, "type"), shape));
    }
    if obj.get("required") != Some(&Value::Array(vec![Value::from(name.as_str())])) {
        return Err(SchemaError::at(&child(at, "required"), shape));
    }
    let closed = obj.get("additionalProperties");
    if closed != Some(&Value::Bool(false)) && !(plain && closed.is_none()) {
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
