//! The Hale JSON codec (`core/src/hale/codec.rs`), structure-aware: an
//! arbitrary request shape, then the rest of the input as the payload.
//!
//! Checks: decoding ends without a panic; a decoded payload is JSON
//! `serde_json` reads too (or refuses only for a number past `f64`) and
//! holds exactly what the shape names, each field the value `serde_json`
//! reads for it; a refusal is one of § Codecs' reasons naming a place in
//! the shape.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use limen_core::hale::codec::{decode, FieldShape, Shape};
use limen_fuzz::shape::{conforms, names_a_place, shape};
use serde_json::Value;

#[derive(Debug)]
struct Input<'a> {
    shape: Shape,
    payload: &'a [u8],
}

impl<'a> Arbitrary<'a> for Input<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let shape = shape(u, 0)?;
        let payload = u.bytes(u.len())?;
        Ok(Input { shape, payload })
    }
    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

/// Each field the payload gives is decoded as `serde_json` reads it.
fn same_fields(ours: &Value, theirs: &Value, shape: &Shape) {
    match (shape, ours, theirs) {
        (Shape::Struct(fields), Value::Object(o), Value::Object(t)) => {
            for FieldShape { key, shape, .. } in fields {
                if let (Some(a), Some(b)) = (o.get(key), t.get(key)) {
                    same_fields(a, b, shape);
                }
            }
        }
        (Shape::Float, Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            // serde_json's default float parsing may be one unit in the last
            // place off; ours is Rust's correctly rounded `parse`.
            assert!(
                a == b || ((a - b) / a).abs() < 1e-15,
                "float {a} but serde_json reads {b}"
            );
        }
        (Shape::Int { .. }, Value::Number(a), Value::Number(b)) => {
            // serde_json reads `-0` as the float -0.0.
            let b = b
                .as_i64()
                .or_else(|| b.as_f64().filter(|f| *f == 0.0).map(|_| 0));
            assert_eq!(a.as_i64(), b, "int {a} but serde_json reads {b:?}");
        }
        (_, a, b) => assert_eq!(a, b, "decoded differently from serde_json"),
    }
}

fuzz_target!(|input: Input<'_>| {
    let Input { shape, payload } = input;
    match decode(&shape, payload) {
        Ok(v) => {
            assert!(conforms(&v, &shape), "{v} does not conform to {shape:?}");
            match serde_json::from_slice::<Value>(payload) {
                Ok(theirs) => same_fields(&v, &theirs, &shape),
                Err(e) => assert!(
                    e.to_string().contains("number out of range"),
                    "decoded what serde_json refuses: {e}"
                ),
            }
        }
        Err(reason) => {
            let (kind, path) = reason
                .split_once(": ")
                .unwrap_or_else(|| panic!("a reason without its kind: {reason}"));
            match kind {
                "wrong_type" | "missing_field" => assert!(
                    names_a_place(&shape, path),
                    "{reason} names no place in {shape:?}"
                ),
                "duplicate_key" => {}
                _ => panic!("not a codec reason: {reason}"),
            }
        }
    }
});
