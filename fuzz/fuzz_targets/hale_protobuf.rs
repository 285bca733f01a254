//! The Hale protobuf codec (`core/src/hale/protobuf.rs`): a request shape
//! built from the input's first bytes, then a message of the bytes left.
//!
//! Checks: decoding ends without a panic; a decoded message holds exactly
//! what the shape names (the JSON codec's value); a refusal is one of §
//! Codecs' reasons naming a place in the shape (or `value`, the field a
//! scalar rides in); and what decodes encodes to a message that decodes to
//! the same bytes again (encoding writes every field, so the second
//! message is the canonical one; a Float's default written as an integer
//! reads back as a float, so the values are compared through their bytes).
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::hale::codec::{FieldShape, Shape};
use limen_core::hale::protobuf::{decode, encode, SCALAR_FIELD};
use limen_fuzz::shape::{conforms, names_a_place, shape};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(shape) = shape(&mut u, 0) else {
        return;
    };
    let shape = typed_defaults(shape);
    let Ok(message) = u.bytes(u.len()) else {
        return;
    };
    match decode(&shape, message) {
        Ok(value) => {
            assert!(conforms(&value, &shape), "{value} is not a {shape:?}");
            let again = encode(&shape, &value).expect("a decoded value encodes");
            let reread = decode(&shape, &again).expect("an encoded value decodes");
            assert!(conforms(&reread, &shape), "{reread} is not a {shape:?}");
            assert_eq!(encode(&shape, &reread).as_ref(), Ok(&again));
        }
        Err(reason) => {
            let (kind, place) = reason.split_once(": ").expect("kind: place");
            assert!(matches!(kind, "wrong_type" | "missing_field"), "{reason}");
            let scalar = !matches!(shape, Shape::Struct(_));
            assert!(
                names_a_place(&shape, place) || (scalar && place == SCALAR_FIELD),
                "{reason} names no place of {shape:?}"
            );
        }
    }
});

/// `shape` with each literal default kept only where it is of its field's
/// type, as the checker holds a program's defaults (the shape builder draws
/// them at random).
fn typed_defaults(shape: Shape) -> Shape {
    match shape {
        Shape::Struct(fields) => Shape::Struct(
            fields
                .into_iter()
                .map(|f| {
                    let shape = typed_defaults(f.shape);
                    let default = f.default.filter(|d| conforms(d, &shape));
                    FieldShape {
                        shape,
                        default,
                        ..f
                    }
                })
                .collect(),
        ),
        other => other,
    }
}
