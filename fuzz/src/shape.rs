//! Request shapes for the Hale JSON codec, built from a fuzzer's bytes, and
//! what a decoded value must look like by its shape.

use arbitrary::{Result, Unstructured};
use limen_core::hale::codec::{FieldShape, Shape};
use serde_json::Value;

/// Field names: the witness's own, a nested one, keys that look like JSON
/// syntax, a space and letters outside ASCII.
pub const NAMES: &[&str] = &[
    "symbol", "qty", "limit", "order", "ship", "city", "floor", "a", "b", "x y", "é", "\"", "😂",
];

/// The deepest shape built (the codec reads nested structs recursively).
pub const MAX_DEPTH: u32 = 5;

fn pick<'a>(u: &mut Unstructured, from: &[&'a str]) -> Result<&'a str> {
    Ok(from[usize::from(u.arbitrary::<u8>()?) % from.len()])
}

fn bound(u: &mut Unstructured) -> Result<Option<i64>> {
    Ok(match u.arbitrary::<u8>()? % 6 {
        0 => None,
        1 => Some(0),
        2 => Some(100),
        3 => Some(i64::MIN),
        4 => Some(i64::MAX),
        _ => Some(u.arbitrary()?),
    })
}

/// A default: mostly of the field's own kind, sometimes any JSON at all
/// (a declaration's default is the declaration's business, not the
/// payload's).
fn default(u: &mut Unstructured) -> Result<Option<Value>> {
    Ok(match u.arbitrary::<u8>()? % 8 {
        0 => Some(Value::from(u.arbitrary::<i64>()?)),
        1 => Some(Value::from(pick(u, NAMES)?)),
        2 => Some(Value::Bool(u.arbitrary()?)),
        3 => Some(serde_json::json!({"nested": [1, 2]})),
        _ => None,
    })
}

/// A shape at nesting `depth`.
pub fn shape(u: &mut Unstructured, depth: u32) -> Result<Shape> {
    let kind = u.arbitrary::<u8>()? % if depth < MAX_DEPTH { 7 } else { 5 };
    Ok(match kind {
        0 => Shape::INT,
        1 => Shape::Int {
            min: bound(u)?,
            max: bound(u)?,
        },
        2 => Shape::Float,
        3 => Shape::Bool,
        4 => Shape::String,
        _ => {
            let n = u.int_in_range(0..=5)?;
            let mut fields: Vec<FieldShape> = Vec::new();
            for _ in 0..n {
                let name = pick(u, NAMES)?;
                // A `json:"key"` tag, now and then.
                let key = if u.ratio(1, 4)? {
                    pick(u, NAMES)?
                } else {
                    name
                };
                // A declaration names each field and each key once.
                if fields.iter().any(|f| f.name == name || f.key == key) {
                    continue;
                }
                fields.push(FieldShape {
                    name: name.to_owned(),
                    key: key.to_owned(),
                    shape: shape(u, depth + 1)?,
                    default: default(u)?,
                });
            }
            Shape::Struct(fields)
        }
    })
}

/// Whether `v` is what decoding at `shape` may produce: the shape's kind,
/// within its range, a struct holding exactly its fields' keys in
/// declaration order (a field may hold its literal default instead).
pub fn conforms(v: &Value, shape: &Shape) -> bool {
    match (shape, v) {
        (Shape::Int { min, max }, Value::Number(n)) => n
            .as_i64()
            .is_some_and(|i| !min.is_some_and(|m| i < m) && !max.is_some_and(|m| i > m)),
        (Shape::Float, Value::Number(n)) => n.as_f64().is_some_and(f64::is_finite),
        (Shape::Bool, Value::Bool(_)) | (Shape::String, Value::String(_)) => true,
        (Shape::Struct(fields), Value::Object(map)) => {
            map.len() == fields.len()
                && fields.iter().zip(map).all(|(f, (k, v))| {
                    *k == f.key && (conforms(v, &f.shape) || f.default.as_ref() == Some(v))
                })
        }
        _ => false,
    }
}

/// Whether `path` (a decode error's `payload`, `ship`, `ship.city`) names a
/// place in `shape`.
pub fn names_a_place(shape: &Shape, path: &str) -> bool {
    if path == "payload" {
        return true;
    }
    let mut here = shape;
    for part in path.split('.') {
        let Shape::Struct(fields) = here else {
            return false;
        };
        match fields.iter().find(|f| f.name == part) {
            Some(f) => here = &f.shape,
            None => return false,
        }
    }
    true
}
