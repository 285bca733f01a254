//! A schema where a type is used as the type it stands for.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{doc, is_empty_object, object, only, tagged, Root, ANNOTATIONS};
use crate::flow::schema::generate::Scope;
use crate::flow::schema::{child, def_key_of_ref, def_ref, SchemaError};
use crate::flow::types::{Type, TypeBody};

impl Root<'_> {
    /// The type a schema written where a type is used stands for, and its
    /// description when `allow_doc` (a field's or a parameter's).
    pub(super) fn ty(
        &self,
        schema: &Value,
        at: &str,
        scope: Scope<'_>,
        allow_doc: bool,
        refs: &mut BTreeSet<usize>,
    ) -> Result<(Type, Option<String>), SchemaError> {
        let obj = object(schema, at, "a type's schema")?;
        let doc = doc(obj, at, allow_doc || self.plain)?;
        let d: &[&str] = match (self.plain, allow_doc) {
            (true, _) => &ANNOTATIONS,
            (false, true) => &["description"],
            (false, false) => &[],
        };
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
                if self.plain {
                    // Written by hand: an anonymous enum (an Option's or a
                    // Result's `oneOf` among them, encoded alike).
                    only(&["oneOf"], "an enum")?;
                    let constructors =
                        self.constructors(branches, &child(at, "oneOf"), scope, refs)?;
                    Type::named(self.anonymous(TypeBody::Enum(constructors)))
                } else {
                    only(&["oneOf"], "an Option or a Result")?;
                    self.option_or_result(branches, &child(at, "oneOf"), scope, refs)?
                }
            } else if self.plain && obj.contains_key("enum") {
                only(&["enum", "type"], "an enum")?;
                Type::named(self.anonymous(TypeBody::Enum(self.names_enum(obj, at)?)))
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
                        "object" if self.plain && obj.contains_key("properties") => {
                            // Written by hand: an anonymous record.
                            let allowed = [
                                d,
                                &["type", "properties", "required", "additionalProperties"][..],
                            ]
                            .concat();
                            let fields = self.fields(obj, at, &allowed, scope, refs)?;
                            Type::named(self.anonymous(TypeBody::Record(fields)))
                        }
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
        let d: &[&str] = match (self.plain, allow_doc) {
            (true, _) => &ANNOTATIONS,
            (false, true) => &["description"],
            (false, false) => &[],
        };
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
            let (tag, schema, payload_at) = tagged(obj, at, false, false)?;
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
