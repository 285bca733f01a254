//! A `$defs` entry as the declaration it describes.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{doc, is_empty_object, names, object, tagged, Def, Root};
use crate::flow::schema::generate::Scope;
use crate::flow::schema::{child, SchemaError};
use crate::flow::types::{Constructor, Field, Payload, Type, TypeBody, TypeDecl};

impl<'s> Root<'s> {
    /// A `$defs` entry as the declaration it describes.
    pub(super) fn decl(
        &self,
        def: &Def<'s>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<TypeDecl, SchemaError> {
        let (obj, at) = (def.body, def.at.as_str());
        let doc = doc(obj, at, true)?;
        let scope = Scope::Bound(&def.params);
        const HEAD: [&str; 2] = ["description", "$generic"];
        let body = if obj.contains_key("oneOf") {
            self.only(obj, at, &[&HEAD[..], &["oneOf"]].concat(), "an enum")?;
            TypeBody::Enum(self.constructors(&obj["oneOf"], &child(at, "oneOf"), scope, refs)?)
        } else if self.plain && obj.contains_key("enum") {
            self.only(obj, at, &[&HEAD[..], &["enum", "type"]].concat(), "an enum")?;
            TypeBody::Enum(self.names_enum(obj, at)?)
        } else if obj.contains_key("not") {
            self.only(
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
            let allowed = if self.plain {
                [&allowed[..], &["additionalProperties"]].concat()
            } else {
                allowed
            };
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
    pub(super) fn fields(
        &self,
        obj: &Map<String, Value>,
        at: &str,
        allowed: &[&str],
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Vec<Field>, SchemaError> {
        self.only(obj, at, allowed, "a record's object")?;
        if let Some(open) = obj.get("additionalProperties") {
            if *open != Value::Bool(true) {
                return Err(SchemaError::at(
                    &child(at, "additionalProperties"),
                    "a record reads past fields it does not name (§ Schemas: \
                     `additionalProperties` is not restricted), so only `true` may be written here",
                ));
            }
        }
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
        if self.plain {
            // Written by hand: `required` in any order, naming properties.
            if let Some((i, name)) = required
                .iter()
                .enumerate()
                .find(|(_, r)| !properties.contains_key(*r))
            {
                return Err(SchemaError::at(
                    &child(&child(at, "required"), &i.to_string()),
                    format!("`{name}` is required but no property"),
                ));
            }
            return Ok(fields);
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

    /// An enum's `oneOf` (at `at`) as its constructors.
    pub(super) fn constructors(
        &self,
        branches: &Value,
        at: &str,
        scope: Scope<'_>,
        refs: &mut BTreeSet<usize>,
    ) -> Result<Vec<Constructor>, SchemaError> {
        let branches = match branches {
            Value::Array(b) if !b.is_empty() => b,
            _ => {
                return Err(SchemaError::at(
                    at,
                    "an enum's `oneOf` is an array of one branch per constructor",
                ))
            }
        };
        let mut constructors: Vec<Constructor> = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            let at = child(at, &i.to_string());
            let c = self.constructor(branch, &at, scope, refs)?;
            if constructors.iter().any(|k| k.name == c.name) {
                return Err(SchemaError::at(
                    &at,
                    format!("a second constructor `{}`", c.name),
                ));
            }
            constructors.push(c);
        }
        Ok(constructors)
    }

    /// A plain schema's `{"enum": ["A", "B"]}` (`"type": "string"` beside
    /// it or not) as constructors without payload.
    pub(super) fn names_enum(
        &self,
        obj: &Map<String, Value>,
        at: &str,
    ) -> Result<Vec<Constructor>, SchemaError> {
        if obj.get("type").is_some_and(|t| t != "string") {
            return Err(SchemaError::at(
                &child(at, "type"),
                "an `enum` is read as constructors without payload: its values are strings",
            ));
        }
        let at = child(at, "enum");
        let names = match &obj["enum"] {
            Value::Array(items) if !items.is_empty() => items,
            _ => return Err(SchemaError::at(&at, "an `enum` is a non-empty array")),
        };
        let mut constructors: Vec<Constructor> = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let at = child(&at, &i.to_string());
            let Value::String(name) = name else {
                return Err(SchemaError::at(
                    &at,
                    "an `enum` is read as constructors without payload: its values are strings",
                ));
            };
            if constructors.iter().any(|k| k.name == *name) {
                return Err(SchemaError::at(
                    &at,
                    format!("a second constructor `{name}`"),
                ));
            }
            constructors.push(Constructor::unit(name));
        }
        Ok(constructors)
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
            self.only(
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
        let (name, payload_schema, payload_at) = tagged(obj, at, true, self.plain)?;
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
}
