//! Schema → type: the inverse of [`schema_of`](super::schema_of).
//!
//! The reader accepts exactly the schemas the generator writes, keyword for
//! keyword, so that reading and writing again gives the same schema. Any
//! other keyword, value or shape is refused with the JSON pointer of the
//! part that is not ours. Key order is not checked: a JSON object has none.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::generate::Scope;
use super::{child, def_key_of_ref, def_ref, SchemaError, DIALECT};
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, Payload, Type, TypeBody, TypeDecl, TypeEnv};

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

    /// A `$defs` entry as the declaration it describes.
    fn decl(&self, def: &Def<'s>, refs: &mut BTreeSet<usize>) -> Result<TypeDecl, SchemaError> {
        let (obj, at) = (def.body, def.at.as_str());
        let doc = doc(obj, at, true)?;
        let scope = Scope::Bound(&def.params);
        const HEAD: [&str; 2] = ["description", "$generic"];
        let body = if obj.contains_key("oneOf") {
            only(obj, at, &[&HEAD[..], &["oneOf"]].concat(), "an enum")?;
            let branches = match obj.get("oneOf") {
                Some(Value::Array(b)) if !b.is_empty() => b,
                _ => {
                    return Err(SchemaError::at(
                        &child(at, "oneOf"),
                        "an enum's `oneOf` is an array of one branch per constructor",
                    ))
                }
            };
            let mut constructors: Vec<Constructor> = Vec::with_capacity(branches.len());
            for (i, branch) in branches.iter().enumerate() {
                let at = child(&child(at, "oneOf"), &i.to_string());
                let c = self.constructor(branch, &at, scope, refs)?;
                if constructors.iter().any(|k| k.name == c.name) {
                    return Err(SchemaError::at(
                        &at,
                        format!("a second constructor `{}`", c.name),
                    ));
                }
                constructors.push(c);
            }
            TypeBody::Enum(constructors)
        } else if obj.contains_key("not") {
            only(
                obj,
                at,
                &[&HEAD[..], &["not"]].concat(),
                "an enum without constructors",
            )?;
            if !is_empty_object(&obj["not"]) {
                return Err(SchemaError::at(
                    &child(at, "not"),
                    "an enum without constructors is `\"not\": {}`",
                ));
            }
            TypeBody::Enum(Vec::new())
        } else if obj.contains_key("type") {
            let allowed = [&HEAD[..], &["type", "properties", "required", "$required"]].concat();
            TypeBody::Record(self.fields(obj, at, &allowed, scope, refs)?)
        } else {
            return Err(SchemaError::at(
                at,
                "a `$defs` entry is a record's object or an enum's `oneOf`",
            ));
        };
        Ok(TypeDecl {
            identity: def.identity.clone(),
            doc,
            params: def.params.clone(),
            body,
        })
    }

    /// A record's (or a named payload's) object as its fields.
    fn fields(
        &self,
        obj: &Map<String, Value>,
        at: &str,
        allowed: &[&str],
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Vec<Field>, SchemaError> {
        only(obj, at, allowed, "a record's object")?;
        if obj.get("type") != Some(&Value::from("object")) {
            return Err(SchemaError::at(
                &child(at, "type"),
                "a record's `type` is `\"object\"`",
            ));
        }
        let Some(Value::Object(properties)) = obj.get("properties") else {
            return Err(SchemaError::at(
                at,
                "a record's object has `properties`, one per field",
            ));
        };
        let listed = |key: &str| -> Result<Vec<String>, SchemaError> {
            obj.get(key)
                .map_or(Ok(Vec::new()), |v| names(v, &child(at, key), "field"))
        };
        let required = listed("required")?;
        let by_parameter = listed("$required")?;
        let mut fields = Vec::with_capacity(properties.len());
        let (mut expect_required, mut expect_by_parameter) = (Vec::new(), Vec::new());
        for (name, schema) in properties {
            let at = child(&child(at, "properties"), name);
            let (ty, doc) = self.ty(schema, &at, scope, true, refs)?;
            let (in_required, by_param) = (required.contains(name), by_parameter.contains(name));
            let bare = matches!(ty, Type::Param(_));
            let misplaced = match (bare, in_required, by_param) {
                (_, true, true) => Some("the field is listed in both `required` and `$required`"),
                (true, true, false) => Some(
                    "a field whose type is a bare type parameter is listed in `$required`, not \
                     `required`",
                ),
                (false, false, true) => {
                    Some("`$required` lists only fields whose type is a bare type parameter")
                }
                _ => None,
            };
            if let Some(reason) = misplaced {
                return Err(SchemaError::at(&at, reason));
            }
            let ty = if in_required {
                expect_required.push(name.clone());
                ty
            } else if by_param {
                expect_by_parameter.push(name.clone());
                ty
            } else {
                // Not required: an Option field, its property the inner type's.
                Type::option(ty)
            };
            fields.push(Field {
                name: name.clone(),
                doc,
                ty,
            });
        }
        if required != expect_required {
            return Err(SchemaError::at(
                &child(at, "required"),
                format!(
                    "`required` lists the fields that are neither an Option nor a bare type \
                     parameter, in property order: {expect_required:?}"
                ),
            ));
        }
        if by_parameter != expect_by_parameter {
            return Err(SchemaError::at(
                &child(at, "$required"),
                format!(
                    "`$required` lists the fields whose type is a bare type parameter, in \
                     property order: {expect_by_parameter:?}"
                ),
            ));
        }
        Ok(fields)
    }

    /// One `oneOf` branch of an enum as its constructor.
    fn constructor(
        &self,
        branch: &Value,
        at: &str,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Constructor, SchemaError> {
        let obj = object(branch, at, "an enum's branch")?;
        let doc = doc(obj, at, true)?;
        if let Some(name) = obj.get("const") {
            only(
                obj,
                at,
                &["description", "const"],
                "a constructor without payload",
            )?;
            let Value::String(name) = name else {
                return Err(SchemaError::at(
                    &child(at, "const"),
                    "a constructor without payload is its name, a string",
                ));
            };
            return Ok(Constructor {
                name: name.clone(),
                doc,
                payload: Payload::Unit,
            });
        }
        let (name, payload_schema, payload_at) = tagged(obj, at, true)?;
        let payload_obj = object(payload_schema, &payload_at, "a payload schema")?;
        let payload = if payload_obj.contains_key("properties") {
            let allowed = ["type", "properties", "required", "$required"];
            Payload::Fields(self.fields(payload_obj, &payload_at, &allowed, scope, refs)?)
        } else {
            Payload::Value(self.ty(payload_schema, &payload_at, scope, false, refs)?.0)
        };
        Ok(Constructor {
            name: name.to_owned(),
            doc,
            payload,
        })
    }

    /// The type a schema written where a type is used stands for, and its
    /// description when `allow_doc` (a field's or a parameter's).
    fn ty(
        &self,
        schema: &Value,
        at: &str,
        scope: Scope<'_>,
        allow_doc: bool,
        refs: &mut BTreeSet<usize>,
    ) -> Result<(Type, Option<String>), SchemaError> {
        let obj = object(schema, at, "a type's schema")?;
        let doc = doc(obj, at, allow_doc)?;
        let d: &[&str] = if allow_doc { &["description"] } else { &[] };
        let only = |allowed: &[&str], what: &str| only(obj, at, &[d, allowed].concat(), what);
        let get = |key: &str| obj.get(key);
        let ty =
            if let Some(reference) = get("$ref") {
                only(&["$ref", "$args"], "a named type's reference")?;
                self.named(reference, get("$args"), at, scope, refs)?
            } else if let Some(name) = get("$param") {
                only(&["$param"], "a type parameter")?;
                let Value::String(name) = name else {
                    return Err(SchemaError::at(
                        &child(at, "$param"),
                        "a type parameter's name is a string",
                    ));
                };
                if let Scope::Bound(names) = scope {
                    if !names.contains(name) {
                        return Err(SchemaError::at(
                            &child(at, "$param"),
                            format!(
                            "type parameter `{name}` is not declared here (declared: {names:?})"
                        ),
                        ));
                    }
                }
                Type::Param(name.clone())
            } else if let Some(flag) = get("$hostToken") {
                only(&["$hostToken"], "a host token")?;
                if *flag != Value::Bool(true) {
                    return Err(SchemaError::at(
                        &child(at, "$hostToken"),
                        "a host token is `\"$hostToken\": true`",
                    ));
                }
                Type::HostToken
            } else if let Some(not) = get("not") {
                only(&["not"], "Never")?;
                if !is_empty_object(not) {
                    return Err(SchemaError::at(
                        &child(at, "not"),
                        "Never is `{\"not\": {}}`",
                    ));
                }
                Type::Never
            } else if let Some(branches) = get("oneOf") {
                only(&["oneOf"], "an Option or a Result")?;
                self.option_or_result(branches, &child(at, "oneOf"), scope, refs)?
            } else if let Some(ty) = get("type") {
                match ty {
                    Value::String(t) => match t.as_str() {
                        "integer" | "number" | "boolean" => {
                            only(&["type"], "a scalar")?;
                            match t.as_str() {
                                "integer" => Type::Int,
                                "number" => Type::Decimal,
                                _ => Type::Bool,
                            }
                        }
                        "string" => {
                            only(&["type", "contentEncoding", "format"], "a string")?;
                            match (get("contentEncoding"), get("format")) {
                                (None, None) => Type::Text,
                                (Some(e), None) if e == "base64" => Type::Bytes,
                                (None, Some(f)) if f == "date-time" => Type::Instant,
                                (None, Some(f)) if f == "duration" => Type::Duration,
                                (Some(_), None) => {
                                    return Err(SchemaError::at(
                                        &child(at, "contentEncoding"),
                                        "Bytes are `\"contentEncoding\": \"base64\"`",
                                    ))
                                }
                                _ => return Err(SchemaError::at(
                                    &child(at, "format"),
                                    "a string's `format` is `date-time` (Instant) or `duration` \
                                     (Duration), alone",
                                )),
                            }
                        }
                        "array" => self.array(obj, at, allow_doc, scope, refs)?,
                        "object" => {
                            if obj.contains_key("properties") {
                                return Err(SchemaError::at(
                                &child(at, "properties"),
                                "a record is a named type: its object sits under `$defs` and is \
                                 referred to by `$ref`",
                            ));
                            }
                            only(&["type", "additionalProperties"], "a Dict<Text, V>")?;
                            let Some(value) = get("additionalProperties") else {
                                return Err(SchemaError::at(
                                    at,
                                    "a Dict<Text, V> is an object with `additionalProperties`",
                                ));
                            };
                            let v = self.ty(
                                value,
                                &child(at, "additionalProperties"),
                                scope,
                                false,
                                refs,
                            )?;
                            Type::dict(Type::Text, v.0)
                        }
                        other => {
                            return Err(SchemaError::at(
                                &child(at, "type"),
                                format!("`{other}` is not a type we write"),
                            ))
                        }
                    },
                    Value::Array(_) if *ty == serde_json::json!(["object", "array"]) => {
                        only(
                            &["type", "additionalProperties", "items", "$dict"],
                            "a dict keyed by a type parameter",
                        )?;
                        let (key, value) = self.pairs(obj, at, scope, refs)?;
                        if !matches!(key, Type::Param(_)) {
                            return Err(SchemaError::at(
                            &child(at, "type"),
                            "only a dict keyed by a type parameter may be an object or an array",
                        ));
                        }
                        let Some(v) = get("additionalProperties") else {
                            return Err(SchemaError::at(
                                at,
                                "a dict keyed by a type parameter has `additionalProperties`",
                            ));
                        };
                        let (v, _) =
                            self.ty(v, &child(at, "additionalProperties"), scope, false, refs)?;
                        if v != value {
                            return Err(SchemaError::at(
                                &child(at, "additionalProperties"),
                                "differs from the value type of the dict's pairs",
                            ));
                        }
                        Type::dict(key, value)
                    }
                    _ => return Err(SchemaError::at(
                        &child(at, "type"),
                        "`type` is a string (or `[\"object\", \"array\"]` for a dict keyed by a \
                         type parameter)",
                    )),
                }
            } else if let Some((key, _)) = obj.iter().find(|(k, _)| !d.contains(&k.as_str())) {
                return Err(SchemaError::at(
                    &child(at, key),
                    format!("`{key}` is not a keyword of a schema we write"),
                ));
            } else {
                Type::Json
            };
        Ok((ty, doc))
    }

    /// A list, a set, a tuple or a dict not keyed by Text.
    fn array(
        &self,
        obj: &Map<String, Value>,
        at: &str,
        allow_doc: bool,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Type, SchemaError> {
        let d: &[&str] = if allow_doc { &["description"] } else { &[] };
        let only = |allowed: &[&str], what: &str| only(obj, at, &[d, allowed].concat(), what);
        if obj.contains_key("$dict") {
            only(&["type", "items", "$dict"], "a dict")?;
            let (key, value) = self.pairs(obj, at, scope, refs)?;
            return match key {
                Type::Text => Err(SchemaError::at(
                    &child(at, "items"),
                    "a Dict<Text, V> is an object with `additionalProperties`",
                )),
                Type::Param(_) => Err(SchemaError::at(
                    &child(at, "type"),
                    "a dict keyed by a type parameter is `\"type\": [\"object\", \"array\"]`",
                )),
                key => Ok(Type::dict(key, value)),
            };
        }
        match obj.get("items") {
            Some(Value::Bool(false)) => {
                only(&["type", "prefixItems", "items", "minItems"], "a tuple")?;
                let items =
                    match obj.get("prefixItems") {
                        None => Vec::new(),
                        Some(Value::Array(items)) if !items.is_empty() => items
                            .iter()
                            .enumerate()
                            .map(|(i, s)| {
                                let at = child(&child(at, "prefixItems"), &i.to_string());
                                self.ty(s, &at, scope, false, refs).map(|t| t.0)
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                        Some(_) => return Err(SchemaError::at(
                            &child(at, "prefixItems"),
                            "a tuple's `prefixItems` is a non-empty array (the empty tuple has \
                             none)",
                        )),
                    };
                let min = obj.get("minItems");
                let expected = (!items.is_empty()).then(|| Value::from(items.len()));
                if min != expected.as_ref() {
                    return Err(SchemaError::at(
                        &child(at, "minItems"),
                        format!(
                            "a tuple of {} element(s) has `minItems` {}",
                            items.len(),
                            expected.map_or("left out".to_owned(), |v| v.to_string())
                        ),
                    ));
                }
                Ok(Type::Tuple(items))
            }
            Some(items) => {
                only(&["type", "items", "uniqueItems"], "a list or a set")?;
                let (item, _) = self.ty(items, &child(at, "items"), scope, false, refs)?;
                match obj.get("uniqueItems") {
                    None => Ok(Type::list(item)),
                    Some(Value::Bool(true)) => Ok(Type::set(item)),
                    Some(_) => Err(SchemaError::at(
                        &child(at, "uniqueItems"),
                        "a set is `\"uniqueItems\": true`; a list has no `uniqueItems`",
                    )),
                }
            }
            None => Err(SchemaError::at(
                at,
                "an array schema has `items`: a schema for a list or a set, `false` for a tuple",
            )),
        }
    }

    /// The key and value types of a dict's `items`, a two-element tuple.
    fn pairs(
        &self,
        obj: &Map<String, Value>,
        at: &str,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<(Type, Type), SchemaError> {
        if obj.get("$dict") != Some(&Value::Bool(true)) {
            return Err(SchemaError::at(
                &child(at, "$dict"),
                "a dict is `\"$dict\": true`",
            ));
        }
        let at = child(at, "items");
        let Some(items) = obj.get("items") else {
            return Err(SchemaError::at(
                &at,
                "a dict's `items` is its [key, value] pair",
            ));
        };
        match self.ty(items, &at, scope, false, refs)?.0 {
            Type::Tuple(mut kv) if kv.len() == 2 => {
                let value = kv.pop().unwrap_or(Type::Never);
                let key = kv.pop().unwrap_or(Type::Never);
                Ok((key, value))
            }
            _ => Err(SchemaError::at(
                &at,
                "a dict's `items` is a two-element tuple, its [key, value] pair",
            )),
        }
    }

    /// `"None" | {"Some": T}` or `{"Ok": T} | {"Err": E}`.
    fn option_or_result(
        &self,
        branches: &Value,
        at: &str,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Type, SchemaError> {
        const FORMS: &str = "an inline `oneOf` is Option's (\"None\" | {\"Some\": T}) or \
                             Result's ({\"Ok\": T} | {\"Err\": E}); an enum is a named type, \
                             referred to by `$ref`";
        let Value::Array(b) = branches else {
            return Err(SchemaError::at(at, FORMS));
        };
        let [first, second] = b.as_slice() else {
            return Err(SchemaError::at(at, FORMS));
        };
        let at0 = child(at, "0");
        let at1 = child(at, "1");
        let mut payload = |v: &Value, at: &str, name: &str| -> Result<Type, SchemaError> {
            let obj = object(v, at, "a branch")?;
            let (tag, schema, payload_at) = tagged(obj, at, false)?;
            if tag != name {
                return Err(SchemaError::at(
                    &child(at, "properties"),
                    format!("this branch is `{name}`'s: {FORMS}"),
                ));
            }
            Ok(self.ty(schema, &payload_at, scope, false, refs)?.0)
        };
        if first.as_object().is_some_and(|o| o.contains_key("const")) {
            if *first != serde_json::json!({"const": "None"}) {
                return Err(SchemaError::at(&at0, FORMS));
            }
            Ok(Type::option(payload(second, &at1, "Some")?))
        } else {
            let ok = payload(first, &at0, "Ok")?;
            let err = payload(second, &at1, "Err")?;
            Ok(Type::result(ok, err))
        }
    }

    /// A `$ref` (with its `$args`) as the named type it names.
    fn named(
        &self,
        reference: &Value,
        args: Option<&Value>,
        at: &str,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Type, SchemaError> {
        let ref_at = child(at, "$ref");
        let Value::String(reference) = reference else {
            return Err(SchemaError::at(&ref_at, "`$ref` is a string"));
        };
        let Some(&i) = self.by_ref.get(reference) else {
            let reason = match def_key_of_ref(reference) {
                Some(key) if self.by_ref.contains_key(&def_ref(&key)) => {
                    format!("`$defs/{key}` is referred to as `{}`", def_ref(&key))
                }
                _ => "names no entry of this schema's `$defs`".to_owned(),
            };
            return Err(SchemaError::at(&ref_at, reason));
        };
        refs.insert(i);
        let def = &self.defs[i];
        let args_at = child(at, "$args");
        let args = match args {
            None if def.params.is_empty() => Vec::new(),
            Some(Value::Array(args)) if args.len() == def.params.len() && !args.is_empty() => args
                .iter()
                .enumerate()
                .map(|(j, a)| {
                    self.ty(a, &child(&args_at, &j.to_string()), scope, false, refs)
                        .map(|t| t.0)
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(SchemaError::at(
                    &args_at,
                    format!(
                        "`{}` takes {} type argument(s), given in `$args` (left out for none)",
                        def.identity,
                        def.params.len()
                    ),
                ))
            }
        };
        Ok(Type::applied(def.identity.clone(), args))
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
