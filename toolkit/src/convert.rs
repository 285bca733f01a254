//! Rust values to and from Flow values, under the encoding's types.
//!
//! Int is the exact [`Int`] and Decimal the exact [`Decimal`]: never a
//! fixed width, never binary floating point. Narrowing is the author's
//! checked conversion (`i64::try_from(&int.0)`). Where a Rust type would
//! mean two Flow types, a newtype says which: [`Bytes`], [`Set`], [`Dict`],
//! [`HostToken`].

use std::collections::BTreeMap;

use limen_core::flow::{Decimal, Duration, EnumPayload, Instant, Int, JsonValue, Value};

/// A Flow value read as a Rust value. Decoding has already checked the
/// value's type, so a failure here means a value built by hand was not of
/// the declared type.
pub trait FromValue: Sized {
    /// The Rust value `value` stands for.
    fn from_value(value: Value) -> Result<Self, String>;
}

/// A Rust value written as a Flow value.
pub trait IntoValue {
    /// The Flow value.
    fn into_value(self) -> Value;
}

/// `json.Value`, and a generic Tool's type parameter values: raw JSON with
/// exact numbers.
pub type Json = JsonValue;

/// A `Bytes` value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bytes(pub Vec<u8>);

/// A `Set<T>`: its elements in canonical order without duplicates when
/// decoded; put in that order when written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Set<T>(pub Vec<T>);

/// A `Dict<K, V>` whose keys are not `Text` (a `Dict<Text, V>` is a
/// [`BTreeMap`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dict<K, V>(pub Vec<(K, V)>);

/// A host token: the host's JSON, handed back unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostToken(pub JsonValue);

/// `Never`: no value exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Never {}

fn wrong(want: &str, got: &Value) -> String {
    let got = match got {
        Value::Int(_) => "an Int",
        Value::Decimal(_) => "a Decimal",
        Value::Text(_) => "a Text",
        Value::Bool(_) => "a Bool",
        Value::Bytes(_) => "a Bytes",
        Value::Instant(_) => "an Instant",
        Value::Duration(_) => "a Duration",
        Value::List(_) => "a List",
        Value::Set(_) => "a Set",
        Value::Tuple(_) => "a tuple",
        Value::Dict(_) | Value::TextDict(_) => "a Dict",
        Value::Option(_) => "an Option",
        Value::Result(_) => "a Result",
        Value::Record(_) => "a record",
        Value::Enum { .. } => "an enum value",
        Value::Json(_) => "a json.Value",
        Value::HostToken(_) => "a host token",
    };
    format!("expected {want}, found {got}")
}

macro_rules! scalar {
    ($ty:ty, $variant:ident, $want:literal) => {
        impl FromValue for $ty {
            fn from_value(value: Value) -> Result<Self, String> {
                match value {
                    Value::$variant(v) => Ok(v),
                    other => Err(wrong($want, &other)),
                }
            }
        }
        impl IntoValue for $ty {
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
        }
    };
}

scalar!(Int, Int, "an Int");
scalar!(Decimal, Decimal, "a Decimal");
scalar!(String, Text, "a Text");
scalar!(bool, Bool, "a Bool");
scalar!(Instant, Instant, "an Instant");
scalar!(Duration, Duration, "a Duration");

impl FromValue for Bytes {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Bytes(b) => Ok(Bytes(b)),
            other => Err(wrong("a Bytes", &other)),
        }
    }
}
impl IntoValue for Bytes {
    fn into_value(self) -> Value {
        Value::Bytes(self.0)
    }
}

impl FromValue for JsonValue {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Json(j) => Ok(j),
            other => Err(wrong("a json.Value", &other)),
        }
    }
}
impl IntoValue for JsonValue {
    fn into_value(self) -> Value {
        Value::Json(self)
    }
}

impl FromValue for HostToken {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::HostToken(j) => Ok(HostToken(j)),
            other => Err(wrong("a host token", &other)),
        }
    }
}
impl IntoValue for HostToken {
    fn into_value(self) -> Value {
        Value::HostToken(self.0)
    }
}

impl FromValue for Never {
    fn from_value(value: Value) -> Result<Self, String> {
        Err(wrong("nothing (Never has no values)", &value))
    }
}
impl IntoValue for Never {
    fn into_value(self) -> Value {
        match self {}
    }
}

impl<T: FromValue> FromValue for Box<T> {
    fn from_value(value: Value) -> Result<Self, String> {
        T::from_value(value).map(Box::new)
    }
}
impl<T: IntoValue> IntoValue for Box<T> {
    fn into_value(self) -> Value {
        (*self).into_value()
    }
}

fn all<T: FromValue>(items: Vec<Value>) -> Result<Vec<T>, String> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| T::from_value(v).map_err(|e| format!("[{i}]: {e}")))
        .collect()
}

impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::List(items) => all(items),
            other => Err(wrong("a List", &other)),
        }
    }
}
impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::List(self.into_iter().map(IntoValue::into_value).collect())
    }
}

impl<T: FromValue> FromValue for Set<T> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Set(items) => all(items).map(Set),
            other => Err(wrong("a Set", &other)),
        }
    }
}
impl<T: IntoValue> IntoValue for Set<T> {
    fn into_value(self) -> Value {
        Value::set(self.0.into_iter().map(IntoValue::into_value).collect())
    }
}

impl<V: FromValue> FromValue for BTreeMap<String, V> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::TextDict(entries) => entries
                .into_iter()
                .map(|(k, v)| {
                    let v = V::from_value(v).map_err(|e| format!("[{k:?}]: {e}"))?;
                    Ok((k, v))
                })
                .collect(),
            other => Err(wrong("a Dict<Text, _>", &other)),
        }
    }
}
impl<V: IntoValue> IntoValue for BTreeMap<String, V> {
    fn into_value(self) -> Value {
        Value::text_dict(self.into_iter().map(|(k, v)| (k, v.into_value())).collect())
    }
}

impl<K: FromValue, V: FromValue> FromValue for Dict<K, V> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Dict(entries) => entries
                .into_iter()
                .enumerate()
                .map(|(i, (k, v))| {
                    let k = K::from_value(k).map_err(|e| format!("[{i}][0]: {e}"))?;
                    let v = V::from_value(v).map_err(|e| format!("[{i}][1]: {e}"))?;
                    Ok((k, v))
                })
                .collect::<Result<Vec<_>, String>>()
                .map(Dict),
            other => Err(wrong("a Dict", &other)),
        }
    }
}
impl<K: IntoValue, V: IntoValue> IntoValue for Dict<K, V> {
    fn into_value(self) -> Value {
        Value::dict(
            self.0
                .into_iter()
                .map(|(k, v)| (k.into_value(), v.into_value()))
                .collect(),
        )
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Option(None) => Ok(None),
            Value::Option(Some(v)) => T::from_value(*v).map(Some),
            other => Err(wrong("an Option", &other)),
        }
    }
}
impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        Value::Option(self.map(|v| Box::new(v.into_value())))
    }
}

impl<T: FromValue, E: FromValue> FromValue for Result<T, E> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Result(Ok(v)) => T::from_value(*v).map(Ok),
            Value::Result(Err(e)) => E::from_value(*e).map(Err),
            other => Err(wrong("a Result", &other)),
        }
    }
}
impl<T: IntoValue, E: IntoValue> IntoValue for Result<T, E> {
    fn into_value(self) -> Value {
        Value::Result(match self {
            Ok(v) => Ok(Box::new(v.into_value())),
            Err(e) => Err(Box::new(e.into_value())),
        })
    }
}

macro_rules! tuple {
    ($n:literal; $($t:ident $i:tt),*) => {
        impl<$($t: FromValue),*> FromValue for ($($t,)*) {
            #[allow(unused_variables, unused_mut)]
            fn from_value(value: Value) -> Result<Self, String> {
                match value {
                    Value::Tuple(items) if items.len() == $n => {
                        let mut items = items.into_iter();
                        Ok(($({
                            let v = items.next().ok_or("a tuple is short")?;
                            $t::from_value(v).map_err(|e| format!("[{}]: {e}", $i))?
                        },)*))
                    }
                    other => Err(wrong(concat!("a tuple of ", $n), &other)),
                }
            }
        }
        impl<$($t: IntoValue),*> IntoValue for ($($t,)*) {
            fn into_value(self) -> Value {
                Value::Tuple(vec![$(self.$i.into_value()),*])
            }
        }
    };
}

tuple!(0;);
tuple!(1; A 0);
tuple!(2; A 0, B 1);
tuple!(3; A 0, B 1, C 2);
tuple!(4; A 0, B 1, C 2, D 3);
tuple!(5; A 0, B 1, C 2, D 3, E 4);
tuple!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// The fields of a record value, in declaration order, for generated code.
pub fn record_fields(
    value: Value,
    name: &str,
) -> Result<std::vec::IntoIter<(String, Value)>, String> {
    match value {
        Value::Record(fields) => Ok(fields.into_iter()),
        other => Err(wrong(&format!("a record {name}"), &other)),
    }
}

/// The next field of a record, which must be `name`, for generated code.
pub fn field<T: FromValue>(
    fields: &mut std::vec::IntoIter<(String, Value)>,
    name: &str,
) -> Result<T, String> {
    match fields.next() {
        Some((k, v)) if k == name => T::from_value(v).map_err(|e| format!(".{name}: {e}")),
        Some((k, _)) => Err(format!("expected the field `{name}`, found `{k}`")),
        None => Err(format!("the field `{name}` is missing")),
    }
}

/// The constructor and payload of an enum value, for generated code.
pub fn enum_parts(value: Value, name: &str) -> Result<(String, EnumPayload), String> {
    match value {
        Value::Enum {
            constructor,
            payload,
        } => Ok((constructor, payload)),
        other => Err(wrong(&format!("an enum {name}"), &other)),
    }
}

/// The one payload value of a constructor, for generated code.
pub fn payload_value<T: FromValue>(payload: EnumPayload, constructor: &str) -> Result<T, String> {
    match payload {
        EnumPayload::Value(v) => T::from_value(*v).map_err(|e| format!(".{constructor}: {e}")),
        _ => Err(format!("the constructor `{constructor}` carries one value")),
    }
}

/// The payload fields of a constructor, for generated code.
pub fn payload_fields(
    payload: EnumPayload,
    constructor: &str,
) -> Result<std::vec::IntoIter<(String, Value)>, String> {
    match payload {
        EnumPayload::Fields(f) => Ok(f.into_iter()),
        _ => Err(format!(
            "the constructor `{constructor}` carries named fields"
        )),
    }
}

/// An enum value of a constructor without payload, for generated code.
pub fn unit(constructor: &str) -> Value {
    Value::unit_enum(constructor)
}

/// An enum value of a constructor with one payload value, for generated
/// code.
pub fn with_value(constructor: &str, value: Value) -> Value {
    Value::enum_value(constructor, value)
}

/// An enum value of a constructor with named fields, for generated code.
pub fn with_fields(constructor: &str, fields: Vec<(&str, Value)>) -> Value {
    Value::Enum {
        constructor: constructor.to_owned(),
        payload: EnumPayload::Fields(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
    }
}

/// A record value of fields in declaration order, for generated code.
pub fn record(fields: Vec<(&str, Value)>) -> Value {
    Value::record(fields)
}
