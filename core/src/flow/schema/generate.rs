//! Type → schema.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::{def_ref, GenerateError, DIALECT};
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, Payload, Type, TypeBody, TypeDecl, TypeEnv};

/// The schema of `ty`, its named types under `$defs`, as describe lists it:
/// doc comments as descriptions, `$defs` keys with their versions.
///
/// A type parameter `ty` mentions outside any declaration is free and
/// written `{"$param": "T"}`; inside a declaration only the declaration's
/// own parameters may appear.
pub fn schema_of(ty: &Type, env: &TypeEnv) -> Result<Value, GenerateError> {
    Generator::new(env, Form::DESCRIBED).root(ty, None, &Scope::Free, "the type")
}

/// Which of the two written forms: the described one (describe's
/// signature) or the canonical one (the fingerprint's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Form {
    /// Write doc comments as `description`.
    pub descriptions: bool,
    /// Write `$defs` keys (and so `$ref`s) with the repository's version.
    pub versions: bool,
}

impl Form {
    /// As § Schemas writes a schema.
    pub(crate) const DESCRIBED: Form = Form {
        descriptions: true,
        versions: true,
    };
    /// As the canonical signature holds it: no description, no version.
    pub(crate) const CANONICAL: Form = Form {
        descriptions: false,
        versions: false,
    };
}

/// The type parameters a schema may mention.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope<'a> {
    /// Any: a standalone type with free parameters.
    Free,
    /// Only these: a declaration's or a generic Tool's.
    Bound(&'a [String]),
}

impl Scope<'_> {
    fn admits(&self, name: &str) -> bool {
        match self {
            Scope::Free => true,
            Scope::Bound(names) => names.iter().any(|n| n == name),
        }
    }
}

/// Writes schemas of types over one [`TypeEnv`].
pub(crate) struct Generator<'e> {
    env: &'e TypeEnv,
    form: Form,
}

/// The named types one root schema reaches, in the order they are first
/// referred to (the root's body first, then each entry in turn).
struct Defs {
    order: Vec<Identity>,
    seen: BTreeSet<Identity>,
}

impl<'e> Generator<'e> {
    pub(crate) fn new(env: &'e TypeEnv, form: Form) -> Generator<'e> {
        Generator { env, form }
    }

    /// A root schema: `$schema`, the description `doc` if any, the body of
    /// `ty`, then `$defs` when it reaches a named type. `at` names the root
    /// in errors.
    pub(crate) fn root(
        &self,
        ty: &Type,
        doc: Option<&str>,
        scope: &Scope<'_>,
        at: &str,
    ) -> Result<Value, GenerateError> {
        let mut defs = Defs {
            order: Vec::new(),
            seen: BTreeSet::new(),
        };
        let body = self.ty(ty, scope, &mut defs, at)?;
        let mut entries = Map::new();
        // Keys written without versions must still name one type each.
        let mut keyed: BTreeMap<String, Identity> = BTreeMap::new();
        let mut i = 0;
        while i < defs.order.len() {
            let identity = defs.order[i].clone();
            i += 1;
            // Every identity in `order` was looked up when it was queued.
            let Some(decl) = self.env.get(&identity) else {
                continue;
            };
            let key = self.key(&identity);
            if let Some(other) = keyed.insert(key.clone(), identity.clone()) {
                return Err(GenerateError {
                    at: at.to_owned(),
                    reason: format!(
                        "it reaches both `{other}` and `{identity}`, one type at two versions"
                    ),
                });
            }
            let entry = self.decl(decl, &mut defs)?;
            entries.insert(key, Value::Object(entry));
        }
        let mut root = Map::new();
        root.insert("$schema".into(), DIALECT.into());
        root.extend(self.describe(doc, body));
        if !entries.is_empty() {
            root.insert("$defs".into(), Value::Object(entries));
        }
        Ok(Value::Object(root))
    }

    /// The `$defs` key of `identity`: `repository@version/file.Name`, or
    /// without `@version` in the canonical form.
    fn key(&self, identity: &Identity) -> String {
        if self.form.versions {
            identity.to_string()
        } else {
            identity.without_version()
        }
    }

    /// `doc` as the first member of `map` (when descriptions are written).
    fn describe(&self, doc: Option<&str>, map: Map<String, Value>) -> Map<String, Value> {
        match doc {
            Some(doc) if self.form.descriptions => {
                let mut out = Map::new();
                out.insert("description".into(), doc.into());
                out.extend(map);
                out
            }
            _ => map,
        }
    }

    /// A `$defs` entry: description, `$generic`, then the record's object
    /// or the enum's `oneOf`.
    fn decl(&self, decl: &TypeDecl, defs: &mut Defs) -> Result<Map<String, Value>, GenerateError> {
        let at = decl.identity.to_string();
        if Identity::parse(&at).as_ref() != Ok(&decl.identity) {
            return Err(GenerateError {
                at,
                reason: "the identity does not read back as itself (a repository holding `@`, \
                         a version holding `/` or a name holding `.`)"
                    .into(),
            });
        }
        unique(
            decl.params.iter().map(String::as_str),
            "type parameter",
            &at,
        )?;
        let mut entry = Map::new();
        if !decl.params.is_empty() {
            entry.insert("$generic".into(), json!(decl.params));
        }
        let scope = Scope::Bound(&decl.params);
        match &decl.body {
            TypeBody::Record(fields) => entry.extend(self.fields(fields, &scope, defs, &at)?),
            TypeBody::Enum(constructors) if constructors.is_empty() => {
                // `oneOf` must hold a branch; an enum without constructors
                // has no values, as Never has none.
                entry.insert("not".into(), json!({}));
            }
            TypeBody::Enum(constructors) => {
                unique(
                    constructors.iter().map(|c| c.name.as_str()),
                    "constructor",
                    &at,
                )?;
                let branches = constructors
                    .iter()
                    .map(|c| self.constructor(c, &scope, defs, &at).map(Value::Object))
                    .collect::<Result<Vec<_>, _>>()?;
                entry.insert("oneOf".into(), Value::Array(branches));
            }
        }
        Ok(self.describe(decl.doc.as_deref(), entry))
    }

    /// A record's (or a named payload's) object: `properties` in
    /// declaration order; `required` the fields that are neither an Option
    /// nor a bare type parameter; `$required` the bare-parameter fields,
    /// which are required as declared but which the encoding leaves out
    /// when the parameter is instantiated with an Option holding None.
    fn fields(
        &self,
        fields: &[Field],
        scope: &Scope<'_>,
        defs: &mut Defs,
        at: &str,
    ) -> Result<Map<String, Value>, GenerateError> {
        unique(fields.iter().map(|f| f.name.as_str()), "field", at)?;
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut by_parameter = Vec::new();
        for field in fields {
            let at = format!("{at}, field `{}`", field.name);
            let ty = match &field.ty {
                Type::Option(inner) => inner,
                Type::Param(_) => {
                    by_parameter.push(field.name.clone());
                    &field.ty
                }
                other => {
                    required.push(field.name.clone());
                    other
                }
            };
            let schema = self.ty(ty, scope, defs, &at)?;
            properties.insert(
                field.name.clone(),
                Value::Object(self.describe(field.doc.as_deref(), schema)),
            );
        }
        let mut out = Map::new();
        out.insert("type".into(), "object".into());
        out.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            out.insert("required".into(), json!(required));
        }
        if !by_parameter.is_empty() {
            out.insert("$required".into(), json!(by_parameter));
        }
        Ok(out)
    }

    /// One `oneOf` branch: `{"const": "C"}` or `{"C": payload}`'s object.
    fn constructor(
        &self,
        c: &Constructor,
        scope: &Scope<'_>,
        defs: &mut Defs,
        at: &str,
    ) -> Result<Map<String, Value>, GenerateError> {
        let at = format!("{at}, constructor `{}`", c.name);
        let branch = match &c.payload {
            Payload::Unit => {
                let mut m = Map::new();
                m.insert("const".into(), c.name.as_str().into());
                m
            }
            Payload::Value(ty) => tagged(&c.name, self.ty(ty, scope, defs, &at)?),
            Payload::Fields(fields) => tagged(&c.name, self.fields(fields, scope, defs, &at)?),
        };
        Ok(self.describe(c.doc.as_deref(), branch))
    }

    /// The schema of `ty` where it is used (no `$schema`, no `$defs`).
    fn ty(
        &self,
        ty: &Type,
        scope: &Scope<'_>,
        defs: &mut Defs,
        at: &str,
    ) -> Result<Map<String, Value>, GenerateError> {
        let obj = |v: Value| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(match ty {
            Type::Int => obj(json!({"type": "integer"})),
            Type::Decimal => obj(json!({"type": "number"})),
            Type::Text => obj(json!({"type": "string"})),
            Type::Bool => obj(json!({"type": "boolean"})),
            Type::Bytes => obj(json!({"type": "string", "contentEncoding": "base64"})),
            Type::Instant => obj(json!({"type": "string", "format": "date-time"})),
            Type::Duration => obj(json!({"type": "string", "format": "duration"})),
            Type::List(item) => {
                let mut m = obj(json!({"type": "array"}));
                m.insert("items".into(), self.value(item, scope, defs, at)?);
                m
            }
            Type::Set(item) => {
                let mut m = obj(json!({"type": "array"}));
                m.insert("items".into(), self.value(item, scope, defs, at)?);
                m.insert("uniqueItems".into(), true.into());
                m
            }
            Type::Tuple(items) => self.tuple(items, scope, defs, at)?,
            Type::Dict(key, value) => {
                let v = self.value(value, scope, defs, at)?;
                match &**key {
                    Type::Text => {
                        let mut m = obj(json!({"type": "object"}));
                        m.insert("additionalProperties".into(), v);
                        m
                    }
                    _ => {
                        let pair =
                            self.tuple(&[(**key).clone(), (**value).clone()], scope, defs, at)?;
                        let mut m = Map::new();
                        if let Type::Param(_) = &**key {
                            // Instantiated with Text the dict is an object,
                            // otherwise an array of pairs: say both.
                            m.insert("type".into(), json!(["object", "array"]));
                            m.insert("additionalProperties".into(), v);
                        } else {
                            m.insert("type".into(), "array".into());
                        }
                        m.insert("items".into(), Value::Object(pair));
                        m.insert("$dict".into(), true.into());
                        m
                    }
                }
            }
            Type::Option(inner) => {
                let some = tagged("Some", self.ty(inner, scope, defs, at)?);
                let mut m = Map::new();
                m.insert("oneOf".into(), json!([{"const": "None"}, some]));
                m
            }
            Type::Result(ok, err) => {
                let ok = tagged("Ok", self.ty(ok, scope, defs, at)?);
                let err = tagged("Err", self.ty(err, scope, defs, at)?);
                let mut m = Map::new();
                m.insert("oneOf".into(), json!([ok, err]));
                m
            }
            Type::Json => Map::new(),
            Type::HostToken => obj(json!({"$hostToken": true})),
            Type::Never => obj(json!({"not": {}})),
            Type::Param(name) => {
                if !scope.admits(name) {
                    return Err(GenerateError {
                        at: at.to_owned(),
                        reason: format!("type parameter `{name}` is not declared here"),
                    });
                }
                obj(json!({"$param": name}))
            }
            Type::Named { identity, args } => {
                let Some(decl) = self.env.get(identity) else {
                    return Err(GenerateError {
                        at: at.to_owned(),
                        reason: format!("`{identity}` is not declared"),
                    });
                };
                if decl.params.len() != args.len() {
                    return Err(GenerateError {
                        at: at.to_owned(),
                        reason: format!(
                            "`{identity}` takes {} type argument(s), given {}",
                            decl.params.len(),
                            args.len()
                        ),
                    });
                }
                if defs.seen.insert(identity.clone()) {
                    defs.order.push(identity.clone());
                }
                let mut m = Map::new();
                m.insert("$ref".into(), def_ref(&self.key(identity)).into());
                if !args.is_empty() {
                    let args = args
                        .iter()
                        .map(|a| self.value(a, scope, defs, at))
                        .collect::<Result<Vec<_>, _>>()?;
                    m.insert("$args".into(), Value::Array(args));
                }
                m
            }
        })
    }

    fn value(
        &self,
        ty: &Type,
        scope: &Scope<'_>,
        defs: &mut Defs,
        at: &str,
    ) -> Result<Value, GenerateError> {
        self.ty(ty, scope, defs, at).map(Value::Object)
    }

    /// An array of exactly `items.len()` elements: `prefixItems`, then
    /// `items: false` and `minItems` to hold the length (the empty tuple is
    /// `items: false` alone, since `prefixItems` may not be empty).
    fn tuple(
        &self,
        items: &[Type],
        scope: &Scope<'_>,
        defs: &mut Defs,
        at: &str,
    ) -> Result<Map<String, Value>, GenerateError> {
        let mut m = Map::new();
        m.insert("type".into(), "array".into());
        if !items.is_empty() {
            let prefix = items
                .iter()
                .map(|t| self.value(t, scope, defs, at))
                .collect::<Result<Vec<_>, _>>()?;
            m.insert("prefixItems".into(), Value::Array(prefix));
        }
        m.insert("items".into(), false.into());
        if !items.is_empty() {
            m.insert("minItems".into(), items.len().into());
        }
        Ok(m)
    }
}

/// `{"C": payload}`'s object: exactly that one member.
fn tagged(name: &str, payload: Map<String, Value>) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert(name.to_owned(), Value::Object(payload));
    let mut m = Map::new();
    m.insert("type".into(), "object".into());
    m.insert("properties".into(), Value::Object(properties));
    m.insert("required".into(), json!([name]));
    m.insert("additionalProperties".into(), false.into());
    m
}

/// Refuses a name given twice.
pub(crate) fn unique<'a>(
    names: impl Iterator<Item = &'a str>,
    what: &str,
    at: &str,
) -> Result<(), GenerateError> {
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(GenerateError {
                at: at.to_owned(),
                reason: format!("{what} `{name}` is declared twice"),
            });
        }
    }
    Ok(())
}
