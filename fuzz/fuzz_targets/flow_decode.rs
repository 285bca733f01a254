//! Flow decoding (`core/src/flow/decode`) at generated types, and the
//! canonical text (`core/src/flow/canonical.rs`) of what it decodes.
//!
//! The first input byte picks the mode (and, by its bit 2, tight limits
//! instead of the defaults, so short inputs reach every limit's edge):
//! - 0: a type model (records, enums, generics, recursion) built from the
//!   bytes that follow, then the rest as the text to decode at its root;
//! - 1: the rest is the text, and the type is read off the text itself
//!   (then changed here and there), so a real payload decodes deep;
//! - 2: a type model and a value of its root type, both built from the
//!   bytes: the value's canonical text must decode back to the value.
//!
//! Checks: decoding never panics; json.Value's fast canonical path writes
//! what parsing then writing does; a refusal names a path that exists in
//! the text (when `serde_json` reads it too); a decoded value's canonical
//! text is within `max_bytes`, is JSON, decodes under the same limits to
//! the same value, and is a fixed point (decode → canonical → decode →
//! canonical gives the same text: one text per value).
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::flow::canonical::{json_to_canonical_vec, to_canonical_vec};
use limen_core::flow::decode::{
    canonicalize_json, decode_with_params, parse_json_value, DecodeError, DecodeErrorKind, Limits,
    Segment,
};
use limen_core::flow::{Type, TypeEnv, Value};
use limen_core::json::Tokenizer;
use limen_fuzz::model::model;
use limen_fuzz::value::{infer, value, Bindings};
use limen_fuzz::{fnv1a, SplitMix};

/// The root's free parameters `T` and `U`, bound.
fn params() -> Vec<(String, Type)> {
    vec![
        ("T".into(), Type::Int),
        ("U".into(), Type::option(Type::Text)),
    ]
}

fn tight() -> Limits {
    Limits {
        max_bytes: 512,
        max_depth: 6,
        max_int_digits: 24,
        max_decimal_digits: 24,
        max_decimal_exponent: 30,
        max_string_bytes: 16,
        max_collection_len: 6,
    }
}

/// Whether `path` leads somewhere in `doc`.
fn exists(doc: &serde_json::Value, path: &[Segment]) -> bool {
    let mut at = doc;
    for s in path {
        at = match (s, at) {
            (Segment::Key(k), serde_json::Value::Object(m)) => match m.get(k) {
                Some(v) => v,
                None => return false,
            },
            (Segment::Index(i), serde_json::Value::Array(a)) => match a.get(*i) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    true
}

fn is_json(text: &[u8]) -> bool {
    Tokenizer::new(text).read_to_end().is_ok()
}

/// The round trip every decoded (or built) value must make.
fn round_trip(v: &Value, ty: &Type, env: &TypeEnv, limits: &Limits) {
    let canonical = to_canonical_vec(v);
    assert!(
        is_json(&canonical),
        "{}",
        String::from_utf8_lossy(&canonical)
    );
    let again = decode_with_params(&canonical, ty, env, &params(), limits).unwrap_or_else(|e| {
        panic!(
            "the canonical text {} of {v:?} does not decode: {e}",
            String::from_utf8_lossy(&canonical)
        )
    });
    assert_eq!(&again, v, "{}", String::from_utf8_lossy(&canonical));
    assert_eq!(to_canonical_vec(&again), canonical, "not a fixed point");
}

fn check_refusal(e: &DecodeError, text: &[u8]) {
    assert!(!e.message.is_empty());
    assert!(e.to_string().starts_with('$'), "{e}");
    if e.kind == DecodeErrorKind::Syntax {
        return;
    }
    if let Ok(doc) = serde_json::from_slice::<serde_json::Value>(text) {
        assert!(exists(&doc, &e.path.0), "{e} names a place not in the text");
    }
}

/// json.Value's fast path, `canonicalize_json`, writes what parsing then
/// writing does, and its output is its own canonical text.
fn json_fast_path(text: &[u8], limits: &Limits) {
    let fast = canonicalize_json(text, limits);
    let slow = parse_json_value(text, limits).map(|v| json_to_canonical_vec(&v));
    assert_eq!(fast, slow);
    if let Ok(c) = fast {
        assert_eq!(
            canonicalize_json(&c, limits).as_ref(),
            Ok(&c),
            "not a fixed point"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let limits = if mode & 4 != 0 {
        tight()
    } else {
        Limits::default()
    };
    json_fast_path(rest, &limits);
    match mode % 3 {
        0 | 2 => {
            let mut u = Unstructured::new(rest);
            let Ok(m) = model(&mut u, true) else {
                return;
            };
            if mode % 3 == 0 {
                let text = u.bytes(u.len()).unwrap_or_default();
                match decode_with_params(text, &m.root, &m.env, &params(), &limits) {
                    Ok(v) => {
                        assert!(to_canonical_vec(&v).len() <= limits.max_bytes);
                        round_trip(&v, &m.root, &m.env, &limits);
                    }
                    Err(e) => check_refusal(&e, text),
                }
            } else {
                let (names, args): (Vec<String>, Vec<Type>) = params().into_iter().unzip();
                let scope = Bindings {
                    names: &names,
                    args: &args,
                    parent: None,
                };
                let Ok(Some(v)) = value(&mut u, &m.root, &m.env, &scope) else {
                    return;
                };
                // A value built in code may be past the limits; within them
                // (its text decodes), it must come back as itself.
                let canonical = to_canonical_vec(&v);
                if let Ok(back) =
                    decode_with_params(&canonical, &m.root, &m.env, &params(), &limits)
                {
                    assert_eq!(back, v, "{}", String::from_utf8_lossy(&canonical));
                } else {
                    let generous = Limits {
                        max_bytes: 1 << 24,
                        max_int_digits: 100,
                        max_decimal_digits: 100,
                        max_decimal_exponent: 2000,
                        ..Limits::default()
                    };
                    round_trip(&v, &m.root, &m.env, &generous);
                }
            }
        }
        _ => {
            let mut env = TypeEnv::new();
            let doc = serde_json::from_slice::<serde_json::Value>(rest)
                .unwrap_or(serde_json::Value::Null);
            let ty = infer(&doc, &mut env, &mut SplitMix::new(fnv1a(rest)), 0);
            match decode_with_params(rest, &ty, &env, &params(), &limits) {
                Ok(v) => {
                    assert!(to_canonical_vec(&v).len() <= limits.max_bytes);
                    round_trip(&v, &ty, &env, &limits);
                }
                Err(e) => check_refusal(&e, rest),
            }
        }
    }
});
