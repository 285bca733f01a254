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

/// The shape a payload would be decoded at, read off the payload itself
/// and then changed here and there by `rng` (a field dropped, added with
/// or without a default, renamed by a tag, an integer narrowed, a kind
/// swapped): so a fuzzer's mutations of a real payload keep reaching the
/// paths past the first wrong field.
pub fn infer(v: &Value, rng: &mut crate::SplitMix, depth: u32) -> Shape {
    let r = rng.next_u64();
    let swap = r.is_multiple_of(16);
    let shape = match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => match r >> 8 & 3 {
            0 => Shape::Int {
                min: Some(0),
                max: Some(100),
            },
            _ => Shape::INT,
        },
        Value::Number(_) => Shape::Float,
        Value::Bool(_) => Shape::Bool,
        Value::String(_) => Shape::String,
        Value::Object(map) if depth < MAX_DEPTH => {
            let mut fields: Vec<FieldShape> = Vec::new();
            for (k, child) in map {
                let r = rng.next_u64();
                if r.is_multiple_of(8) || fields.iter().any(|f| f.key == *k) {
                    continue;
                }
                fields.push(FieldShape {
                    // A declared name is an identifier: no `.`, which would
                    // read as a path in a refusal.
                    name: if r >> 8 & 7 == 0 {
                        format!("{}_", k.replace('.', "_"))
                    } else {
                        k.replace('.', "_")
                    },
                    key: k.clone(),
                    shape: infer(child, rng, depth + 1),
                    default: (r >> 12 & 7 == 0).then(|| Value::from(7)),
                });
            }
            if r >> 16 & 3 == 0 {
                let name = NAMES[(r >> 20) as usize % NAMES.len()];
                if fields.iter().all(|f| f.name != name && f.key != name) {
                    fields.push(FieldShape {
                        name: name.to_owned(),
                        key: name.to_owned(),
                        shape: Shape::String,
                        default: (r >> 24 & 1 == 0).then(|| Value::from("d")),
                    });
                }
            }
            Shape::Struct(fields)
        }
        _ => Shape::Struct(Vec::new()),
    };
    if swap {
        match shape {
            Shape::String => Shape::INT,
            Shape::Struct(_) => Shape::Bool,
            _ => Shape::String,
        }
    } else {
        shape
    }
}
