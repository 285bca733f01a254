//! Flow schemas (`core/src/flow/schema`), both ways.
//!
//! The first input byte picks the mode:
//! - even: the rest is a JSON document read as a schema. A schema we did
//!   not write is refused naming a JSON pointer that exists in it; one we
//!   did reads back as a type whose schema is that document again (as a
//!   JSON value).
//! - odd: the rest builds a type model (named records and enums, generic
//!   and recursive). Its schema reads back as the same type over the named
//!   types it reaches, and the schema of that is the same text.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use limen_core::flow::{schema_of, type_from_schema};
use limen_fuzz::model::model;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let Ok(doc) = serde_json::from_slice::<Value>(rest) else {
            return;
        };
        match type_from_schema(&doc) {
            Ok((ty, env)) => {
                let again = schema_of(&ty, &env).expect("a type read from a schema has one");
                // Equal as JSON values: members in another order are the
                // same schema.
                assert_eq!(again, doc, "read as {ty:?}, which writes another schema");
            }
            Err(e) => {
                assert!(
                    doc.pointer(&e.pointer).is_some(),
                    "{e} points at nothing in the schema"
                );
                assert!(!e.reason.is_empty());
            }
        }
    } else {
        let mut u = Unstructured::new(rest);
        let Ok(m) = model(&mut u, true) else {
            return;
        };
        let schema = match schema_of(&m.root, &m.env) {
            Ok(s) => s,
            Err(e) => panic!("a well-formed model has no schema: {e}\n{m:?}"),
        };
        let (back, back_env) = match type_from_schema(&schema) {
            Ok(t) => t,
            Err(e) => panic!("our own schema is refused: {e}\n{schema:#}"),
        };
        assert_eq!(back, m.root, "{schema:#}");
        let again = schema_of(&back, &back_env).expect("read back, it has a schema");
        assert_eq!(
            serde_json::to_string(&again).unwrap(),
            serde_json::to_string(&schema).unwrap()
        );
    }
});
