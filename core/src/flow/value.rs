//! Flow data values.
//!
//! A [`Value`] carries enough structure to be written canonically without
//! its type: records know their fields, options and enums their
//! constructors. Decoding builds values from JSON at a declared type; code
//! builds them directly.
//!
//! Sets and dicts hold their elements in canonical order (ascending by the
//! elements' or keys' canonical text as bytes) without duplicates; build them
//! with [`Value::set`] and [`Value::dict`], which establish that order, so
//! that derived equality is value equality (they are written in
//! [`canonical`](super::canonical), with the text the order is by).

use super::number::{Decimal, Int};
use super::time::{Duration, Instant};

/// A Flow data value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// An exact integer.
    Int(Int),
    /// An exact decimal.
    Decimal(Decimal),
    /// A text.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// A byte string.
    Bytes(Vec<u8>),
    /// An instant.
    Instant(Instant),
    /// A duration.
    Duration(Duration),
    /// A list, in order.
    List(Vec<Value>),
    /// A set, in canonical order without duplicates (see [`Value::set`]).
    Set(Vec<Value>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A dict whose keys are not `Text`: its entries in canonical key order
    /// without duplicate keys (see [`Value::dict`]). Written as an array of
    /// `[key, value]` pairs.
    Dict(Vec<(Value, Value)>),
    /// A `Dict<Text, V>`: its entries sorted by key in code-point order
    /// without duplicate keys (see [`Value::text_dict`]). Written as an
    /// object. It is a variant of its own because an empty dict's text
    /// (`{}` or `[]`) depends on its key type.
    TextDict(Vec<(String, Value)>),
    /// An option.
    Option(Option<Box<Value>>),
    /// A result.
    Result(Result<Box<Value>, Box<Value>>),
    /// A record: every declared field in declaration order. A field of an
    /// `Option` type holds `Value::Option`, `None` included.
    Record(Vec<(String, Value)>),
    /// An enum value: its constructor and payload.
    Enum {
        /// The constructor's name.
        constructor: String,
        /// What the constructor carries.
        payload: EnumPayload,
    },
    /// A `json.Value`.
    Json(JsonValue),
    /// A host token, as the host that made it wrote it.
    HostToken(JsonValue),
}

/// The payload of an enum value, matching its constructor's
/// [`Payload`](super::types::Payload).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EnumPayload {
    /// No payload.
    Unit,
    /// One value.
    Value(Box<Value>),
    /// Named fields in declaration order, read as a record's fields are.
    Fields(Vec<(String, Value)>),
}

/// A raw JSON value, as `json.Value` stands for it.
///
/// Numbers are exact decimals. Object members are held sorted by key in
/// ascending code-point order with no duplicate key (see
/// [`JsonValue::object`]), so derived equality is JSON value equality.
///
/// Strings, arrays and objects are boxed slices rather than growable
/// `String`s and `Vec`s: a value is 24 bytes instead of 32, which is most of
/// a parsed document's memory (see `benches/RESULTS.md`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum JsonValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly.
    Number(Decimal),
    /// A string.
    String(Box<str>),
    /// An array.
    Array(Box<[JsonValue]>),
    /// An object's members, sorted by key.
    Object(Box<[(Box<str>, JsonValue)]>),
}

/// Two members of one object share a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey(pub String);

impl JsonValue {
    /// An object from its members, sorted by key (code-point order, which is
    /// the byte order of UTF-8). A key given twice is refused.
    pub fn object(members: Vec<(String, JsonValue)>) -> Result<JsonValue, DuplicateKey> {
        let members: Vec<(Box<str>, JsonValue)> = members
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v))
            .collect();
        JsonValue::object_from_boxed(members)
    }

    /// [`JsonValue::object`] of members whose keys are already boxed.
    pub fn object_from_boxed(
        mut members: Vec<(Box<str>, JsonValue)>,
    ) -> Result<JsonValue, DuplicateKey> {
        if !members.windows(2).all(|w| w[0].0 < w[1].0) {
            members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = members.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(DuplicateKey(w[0].0.to_string()));
            }
        }
        Ok(JsonValue::Object(members.into_boxed_slice()))
    }

    /// An array of `items`.
    pub fn array(items: Vec<JsonValue>) -> JsonValue {
        JsonValue::Array(items.into_boxed_slice())
    }

    /// A string.
    pub fn string(s: &str) -> JsonValue {
        JsonValue::String(s.into())
    }
}

impl Value {
    /// A text value.
    pub fn text(s: &str) -> Value {
        Value::Text(s.to_owned())
    }

    /// An integer value.
    pub fn int(v: i64) -> Value {
        Value::Int(Int::from(v))
    }

    /// `Some(v)`.
    pub fn some(v: Value) -> Value {
        Value::Option(Some(Box::new(v)))
    }

    /// `None`.
    pub fn none() -> Value {
        Value::Option(None)
    }

    /// A record from its fields in declaration order.
    pub fn record(fields: Vec<(&str, Value)>) -> Value {
        Value::Record(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// An enum value of a constructor without payload.
    pub fn unit_enum(constructor: &str) -> Value {
        Value::Enum {
            constructor: constructor.to_owned(),
            payload: EnumPayload::Unit,
        }
    }

    /// An enum value of a constructor with one payload value.
    pub fn enum_value(constructor: &str, payload: Value) -> Value {
        Value::Enum {
            constructor: constructor.to_owned(),
            payload: EnumPayload::Value(Box::new(payload)),
        }
    }

    /// A `Dict<Text, V>` of `entries`, sorted by key in code-point order. A
    /// key given twice keeps its last value.
    pub fn text_dict(entries: Vec<(String, Value)>) -> Value {
        let mut entries = entries;
        entries.reverse();
        // Stable sort of the reversed entries puts the last of equal keys first.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|a, b| a.0 == b.0);
        Value::TextDict(entries)
    }
}
