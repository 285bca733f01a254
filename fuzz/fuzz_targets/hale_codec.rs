//! The Hale JSON codec (`core/src/hale/codec.rs`), structure-aware: a
//! request shape built from the input's first bytes, or read off the
//! payload and changed, then the payload.
//!
//! Checks: decoding ends without a panic; a decoded payload is JSON
//! `serde_json` reads too (or refuses only for a number past `f64`) and
//! holds exactly what the shape names, each field the value `serde_json`
//! reads for it (a float, the correctly rounded value of the token
//! `serde_json` hands over); a refusal is one of § Codecs' reasons naming a place in
//! the shape; and `decode` (whose fast path takes plain structs of scalar
//! fields) answers what the tokenizer's path alone answers, key order
//! included.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::hale::codec::{decode, decode_tokenized, FieldShape, Shape};
use limen_fuzz::shape::{conforms, infer, names_a_place, shape};
use limen_fuzz::{fnv1a, SplitMix};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug)]
struct Input<'a> {
    shape: Shape,
    payload: &'a [u8],
}

impl<'a> Input<'a> {
    /// The first byte picks how the shape is made: even, built from the
    /// bytes that follow (the payload is what remains); odd, read off the
    /// rest (the payload, when it is JSON) and changed by its hash, so a
    /// real payload as a seed reaches the codec's every path.
    fn new(data: &'a [u8]) -> Option<Input<'a>> {
        let (&mode, rest) = data.split_first()?;
        if mode % 2 == 0 {
            let mut u = Unstructured::new(rest);
            let shape = shape(&mut u, 0).ok()?;
            let payload = u.bytes(u.len()).ok()?;
            Some(Input { shape, payload })
        } else {
            let v = serde_json::from_slice::<Value>(rest).unwrap_or(Value::Null);
            let shape = infer(&v, &mut SplitMix::new(fnv1a(rest)), 0);
            Some(Input {
                shape,
                payload: rest,
            })
        }
    }
}

/// Each field the payload gives is decoded as `serde_json` reads it; a
/// float as Rust's correctly rounded `parse` reads its token (which
/// `serde_json` hands over as it stands), since `serde_json`'s own float
/// parsing may be a few units in the last place off for long numerals.
fn same_fields(ours: &Value, theirs: &RawValue, shape: &Shape) {
    let value = || serde_json::from_str::<Value>(theirs.get()).expect("read before");
    match (shape, ours) {
        (Shape::Struct(fields), Value::Object(o)) => {
            let Ok(t) = serde_json::from_str::<HashMap<String, &RawValue>>(theirs.get()) else {
                return assert_eq!(ours, &value(), "decoded differently from serde_json");
            };
            for FieldShape { key, shape, .. } in fields {
                if let (Some(a), Some(b)) = (o.get(key), t.get(key)) {
                    same_fields(a, b, shape);
                }
            }
        }
        (Shape::Float, Value::Number(a)) => {
            let a = a.as_f64().unwrap();
            let b: f64 = theirs.get().trim().parse().expect("a JSON number");
            assert_eq!(a, b, "float {a} but the token {} reads {b}", theirs.get());
        }
        (Shape::Int { .. }, Value::Number(a)) => {
            // serde_json reads `-0` as the float -0.0.
            let b = value();
            let b = b
                .as_i64()
                .or_else(|| b.as_f64().filter(|f| *f == 0.0).map(|_| 0));
            assert_eq!(a.as_i64(), b, "int {a} but serde_json reads {b:?}");
        }
        (_, a) => assert_eq!(a, &value(), "decoded differently from serde_json"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(Input { shape, payload }) = Input::new(data) else {
        return;
    };
    let decoded = decode(&shape, payload);
    let general = decode_tokenized(&shape, payload);
    assert_eq!(
        decoded.as_ref().map(Value::to_string),
        general.as_ref().map(Value::to_string),
        "the fast path differs"
    );
    match decoded {
        Ok(v) => {
            assert!(conforms(&v, &shape), "{v} does not conform to {shape:?}");
            match serde_json::from_slice::<&RawValue>(payload) {
                Ok(theirs) => same_fields(&v, theirs, &shape),
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
