//! The types a document names, read as the JSON codec reads them (§ Codecs):
//! `Int`, `Float`, `Bool`, `String`, an identity, a range or a quantity (its
//! integer, named by `x-hale-type`, a quantity's unit by `x-hale-unit`), and
//! structs of those, a `json:"key"` tag renaming a key. Anything else (a
//! list, an enum, `Bytes`, a point, a type the program does not declare) is
//! refused naming the slot and the field, never approximated.
//!
//! One [`TypeBook`] collects the records a document reaches; the JSON
//! Schema forms and the `.proto` both render from it, so they cannot
//! disagree about a record's fields.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::error::{DocError, Form};
use crate::hale::model::types::{FieldRef, Prim, Resolved, TypeTable};
use crate::hale::syntax::ast::TypeExpr;

/// A scalar as the JSON codec carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scalar {
    /// The JSON Schema type: `integer`, `number`, `boolean`, `string`.
    pub json: &'static str,
    /// The named type it stands for (an identity, a range, a quantity).
    pub hale_type: Option<String>,
    /// A quantity's `q(<denomination>)` tag.
    pub unit: Option<String>,
}

impl Scalar {
    /// The scalar's JSON Schema: its type, `x-hale-type`, `x-hale-unit`.
    pub fn schema(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), self.json.into());
        if let Some(t) = &self.hale_type {
            m.insert("x-hale-type".into(), t.clone().into());
        }
        if let Some(u) = &self.unit {
            m.insert("x-hale-unit".into(), u.clone().into());
        }
        Value::Object(m)
    }
}

/// What a slot (a request, a field) is: a scalar, or a record by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A scalar, written inline.
    Scalar(Scalar),
    /// A record of the book, by name.
    Record(String),
}

impl Slot {
    /// The slot's JSON Schema, a record by `$ref` under `base`
    /// (`#/schemas/`, `#/$defs/`, `#/components/schemas/`).
    pub fn schema(&self, base: &str) -> Value {
        match self {
            Slot::Scalar(s) => s.schema(),
            Slot::Record(name) => json!({ "$ref": format!("{base}{name}") }),
        }
    }
}

/// One field of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordField {
    /// The declared name.
    pub name: String,
    /// The key the JSON codec carries it under (`json:"key"`, else the name).
    pub key: String,
    /// What it is.
    pub slot: Slot,
    /// Whether a value must carry it: it has no literal default.
    pub required: bool,
}

/// A struct the book reached, its fields in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The fields.
    pub fields: Vec<RecordField>,
}

impl Record {
    /// The record's JSON Schema: an object of its keys, those without a
    /// default required.
    pub fn schema(&self, base: &str) -> Value {
        let properties: Map<String, Value> = self
            .fields
            .iter()
            .map(|f| (f.key.clone(), f.slot.schema(base)))
            .collect();
        let required: Vec<Value> = self
            .fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.key.clone().into())
            .collect();
        json!({ "type": "object", "properties": properties, "required": required })
    }
}

/// The records a document reaches, by name (a name's order is its bytes').
#[derive(Clone, Debug, Default)]
pub struct TypeBook {
    records: BTreeMap<String, Record>,
}

/// What the codec makes of a type, before any record is read.
enum Class<'a> {
    Scalar(Scalar),
    Struct(&'a str, Vec<FieldRef<'a>>),
    Not,
}

fn prim_json(p: Prim) -> Option<&'static str> {
    match p {
        Prim::Int => Some("integer"),
        Prim::Float => Some("number"),
        Prim::Bool => Some("boolean"),
        Prim::String => Some("string"),
        _ => None,
    }
}

fn classify<'a>(types: &'a TypeTable, ty: &'a TypeExpr) -> Class<'a> {
    let named = |name: &str| Scalar {
        json: "integer",
        hale_type: Some(name.to_string()),
        unit: None,
    };
    match types.resolve(ty) {
        Resolved::Prim(p) => prim_class(p),
        Resolved::Identity(n) | Resolved::Range(n) => Class::Scalar(named(n)),
        Resolved::Quantity(n, d) => Class::Scalar(Scalar {
            unit: Some(format!("q({d})")),
            ..named(n)
        }),
        Resolved::Struct(name, fields) => Class::Struct(name, fields),
        _ => Class::Not,
    }
}

fn prim_class<'a>(p: Prim) -> Class<'a> {
    prim_json(p).map_or(Class::Not, |json| {
        Class::Scalar(Scalar {
            json,
            hale_type: None,
            unit: None,
        })
    })
}

impl TypeBook {
    /// An empty book.
    pub fn new() -> TypeBook {
        TypeBook::default()
    }

    /// The records, by name.
    pub fn records(&self) -> &BTreeMap<String, Record> {
        &self.records
    }

    /// Reads `ty`, the `slot` of `owner` (for the error: ``rpc `X` ``,
    /// `request`), adding every record it reaches. Iterative, so a chain of
    /// nested structs however long costs no stack.
    pub fn slot<'a>(
        &mut self,
        types: &'a TypeTable,
        ty: &'a TypeExpr,
        owner: &str,
        slot: &'static str,
    ) -> Result<Slot, DocError> {
        let refuse = |field: Option<(String, String)>| DocError::NotCarried {
            owner: owner.to_string(),
            slot,
            ty: ty.text(),
            field,
            form: Form::Json,
        };
        let (name, fields) = match classify(types, ty) {
            Class::Scalar(s) => return Ok(Slot::Scalar(s)),
            Class::Not => return Err(refuse(None)),
            Class::Struct(name, fields) => (name, fields),
        };
        let root = Slot::Record(name.to_string());
        if self.records.contains_key(name) {
            return Ok(root);
        }
        // Records found but not yet read: (name, fields, path to it).
        let mut work = vec![(name, fields, String::new())];
        let mut seen: BTreeSet<&str> = BTreeSet::from([name]);
        let mut found = Vec::new();
        while let Some((name, fields, path)) = work.pop() {
            let mut record = Record { fields: Vec::new() };
            for f in &fields {
                let here = if path.is_empty() {
                    f.name().to_string()
                } else {
                    format!("{path}.{}", f.name())
                };
                let (class, fty, default) = match f {
                    FieldRef::Declared(d) => {
                        (classify(types, &d.ty), d.ty.text(), d.default.is_some())
                    }
                    FieldRef::Builtin(_, p) => (prim_class(*p), p.name().to_string(), false),
                };
                let slot = match class {
                    Class::Scalar(s) => Slot::Scalar(s),
                    Class::Not => return Err(refuse(Some((here, fty)))),
                    Class::Struct(inner, inner_fields) => {
                        if !self.records.contains_key(inner) && seen.insert(inner) {
                            work.push((inner, inner_fields, here));
                        }
                        Slot::Record(inner.to_string())
                    }
                };
                record.fields.push(RecordField {
                    name: f.name().to_string(),
                    key: f.json_key().to_string(),
                    slot,
                    required: !default,
                });
            }
            found.push((name.to_string(), record));
        }
        self.records.extend(found);
        Ok(root)
    }

    /// The names of the records `slots` reach, each once, by name.
    pub fn reach<'s>(&self, slots: impl IntoIterator<Item = &'s Slot>) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut work: Vec<&str> = slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Record(n) => Some(n.as_str()),
                Slot::Scalar(_) => None,
            })
            .collect();
        while let Some(n) = work.pop() {
            if !out.insert(n.to_string()) {
                continue;
            }
            if let Some(r) = self.records.get(n) {
                for f in &r.fields {
                    if let Slot::Record(inner) = &f.slot {
                        work.push(inner);
                    }
                }
            }
        }
        out
    }

    /// The schemas of `names` (records of the book), in name order, each
    /// `$ref` under `base`.
    pub fn schemas<'n>(&self, names: impl IntoIterator<Item = &'n String>, base: &str) -> Value {
        let mut names: Vec<&String> = names.into_iter().collect();
        names.sort();
        names.dedup();
        Value::Object(
            names
                .into_iter()
                .filter_map(|n| self.records.get(n).map(|r| (n.clone(), r.schema(base))))
                .collect(),
        )
    }

    /// Every record's schema, in name order.
    pub fn all_schemas(&self, base: &str) -> Value {
        self.schemas(self.records.keys(), base)
    }
}
