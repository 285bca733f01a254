//! [`type_from_plain_schema`]: the schemas people write by hand, read as
//! the types they describe and held by decoding values at them; the strict
//! reader still refuses each.

use serde_json::{json, Value};

use super::*;
use crate::flow::canonical::write_canonical;
use crate::flow::decode::{decode, Limits};
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, Type, TypeBody};

/// The canonical text of `text` decoded at the type of the plain `schema`,
/// or the refusal's text.
fn canon(schema: &Value, text: &str) -> Result<String, String> {
    let (ty, env) = type_from_plain_schema(schema).map_err(|e| format!("schema: {e}"))?;
    let value =
        decode(text.as_bytes(), &ty, &env, &Limits::default()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    write_canonical(&value, &mut out);
    Ok(String::from_utf8(out).unwrap())
}

fn anonymous(n: usize) -> Identity {
    Identity::at_path(ANONYMOUS, &format!("Inline{n}"))
}

#[test]
fn a_root_without_dialect_is_draft_2020_12() {
    let schema = json!({"type": "integer"});
    assert!(
        type_from_schema(&schema).is_err(),
        "the strict reader wants $schema"
    );
    assert_eq!(type_from_plain_schema(&schema).unwrap().0, Type::Int);
    assert_eq!(canon(&schema, "1e3"), Ok("1000".into()));
    assert!(canon(&schema, "\"1\"").is_err());
    // Named, the dialect must still be ours.
    let other = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"});
    let e = type_from_plain_schema(&other).unwrap_err();
    assert_eq!(e.pointer, "/$schema");
}

#[test]
fn an_inline_object_schema_is_an_anonymous_record() {
    let schema = json!({
        "$id": "https://example.com/point.json",
        "title": "A point",
        "type": "object",
        "properties": {
            "y": {"type": "integer", "description": "up"},
            "x": {"type": "integer"},
            "label": {"type": "string"}
        },
        "required": ["x", "y"]
    });
    assert!(type_from_schema(&schema).is_err());
    let (ty, env) = type_from_plain_schema(&schema).unwrap();
    assert_eq!(ty, Type::named(anonymous(0)));
    let decl = env.get(&anonymous(0)).unwrap();
    assert_eq!(
        decl.body,
        TypeBody::Record(vec![
            Field::new("y", Type::Int).doc("up"),
            Field::new("x", Type::Int),
            Field::new("label", Type::option(Type::Text)),
        ])
    );
    // Keys sorted, the Option left out when absent, extra fields read past.
    assert_eq!(
        canon(&schema, r#"{"y": 2, "x": 1.0, "extra": true}"#),
        Ok(r#"{"x":1,"y":2}"#.into())
    );
    assert_eq!(
        canon(&schema, r#"{"label": "o", "x": 0, "y": 0}"#),
        Ok(r#"{"label":"o","x":0,"y":0}"#.into())
    );
    let refused = canon(&schema, r#"{"x": 1}"#).unwrap_err();
    assert!(refused.contains('y'), "{refused}");
}

#[test]
fn records_nest_and_each_is_its_own_anonymous_type() {
    let schema = json!({
        "type": "object",
        "properties": {
            "from": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "to": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
            "hops": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["to", "from", "hops"],
        "additionalProperties": true
    });
    let (_, env) = type_from_plain_schema(&schema).unwrap();
    assert_eq!(env.len(), 3);
    assert_eq!(
        canon(
            &schema,
            r#"{"to": {"x": 1.50}, "from": {"x": 2}, "hops": ["a"]}"#
        ),
        Ok(r#"{"from":{"x":2},"hops":["a"],"to":{"x":1.5}}"#.into())
    );
    assert!(canon(
        &schema,
        r#"{"to": {"x": 1}, "from": {"x": 2.5}, "hops": []}"#
    )
    .is_err());
}

#[test]
fn an_inline_one_of_is_an_anonymous_enum() {
    let schema = json!({
        "oneOf": [
            {"const": "Idle"},
            {"type": "object", "properties": {"Busy": {"type": "integer"}}, "required": ["Busy"],
             "additionalProperties": false},
            {"properties": {"Moved": {"type": "object", "properties": {"to": {"type": "string"}},
             "required": ["to"]}}, "required": ["Moved"], "description": "elsewhere"}
        ]
    });
    let (ty, env) = type_from_plain_schema(&schema).unwrap();
    // A payload written as an object is the constructor's named fields.
    assert_eq!(ty, Type::named(anonymous(0)));
    assert_eq!(env.len(), 1);
    assert_eq!(
        env.get(&anonymous(0)).unwrap().body,
        TypeBody::Enum(vec![
            Constructor::unit("Idle"),
            Constructor::value("Busy", Type::Int),
            Constructor::fields("Moved", vec![Field::new("to", Type::Text)]).doc("elsewhere"),
        ])
    );
    assert_eq!(canon(&schema, r#""Idle""#), Ok(r#""Idle""#.into()));
    assert_eq!(canon(&schema, r#"{"Busy": 3}"#), Ok(r#"{"Busy":3}"#.into()));
    assert_eq!(
        canon(&schema, r#"{"Moved": {"to": "x"}}"#),
        Ok(r#"{"Moved":{"to":"x"}}"#.into())
    );
    assert!(canon(&schema, r#""Asleep""#).is_err());
    assert!(canon(&schema, r#"{"Busy": 3, "Idle": 1}"#).is_err());
    // An `enum` of strings is the enum of those constructors.
    let names = json!({"type": "string", "enum": ["red", "green"]});
    assert_eq!(canon(&names, r#""green""#), Ok(r#""green""#.into()));
    assert!(canon(&names, r#""blue""#).is_err());
}

#[test]
fn defs_keyed_by_hand_are_named_under_their_key() {
    let schema = json!({
        "type": "array",
        "items": {"$ref": "#/$defs/Point"},
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "Unused": {"oneOf": [{"const": "A"}]}
        }
    });
    assert!(type_from_schema(&schema).is_err());
    let (ty, env) = type_from_plain_schema(&schema).unwrap();
    let point = Identity::at_path("/$defs", "Point");
    assert_eq!(ty, Type::list(Type::named(point.clone())));
    assert!(env.get(&point).is_some());
    assert_eq!(
        canon(&schema, r#"[{"x": 1}, {"x": 2}]"#),
        Ok(r#"[{"x":1},{"x":2}]"#.into())
    );
}

#[test]
fn what_a_plain_schema_says_and_the_encoding_does_not_keep_is_refused() {
    for (schema, at) in [
        // A closed record: the encoding reads past extra fields.
        (
            json!({"type": "object", "properties": {"x": {"type": "integer"}},
                   "additionalProperties": false}),
            "/additionalProperties",
        ),
        // `required` names no property.
        (
            json!({"type": "object", "properties": {"x": {"type": "integer"}},
                   "required": ["y"]}),
            "/required/0",
        ),
        // A branch that is neither a constant nor one property.
        (
            json!({"oneOf": [{"type": "string"}]}),
            "/oneOf/0/properties",
        ),
        (json!({"enum": [1, 2]}), "/enum/0"),
        (json!({"type": "string", "minLength": 1}), "/minLength"),
    ] {
        let e = type_from_plain_schema(&schema).unwrap_err();
        assert_eq!(e.pointer, at, "{schema}: {e}");
    }
}

#[test]
fn a_schema_we_write_reads_alike_both_ways() {
    let point = Identity::in_repository("github.com/acme/tools", "1.0.0", "geo.flow", "Point");
    let mut env = crate::flow::types::TypeEnv::new();
    env.declare(crate::flow::types::TypeDecl::record(
        point.clone(),
        vec![
            Field::new("x", Type::Int),
            Field::new("y", Type::option(Type::Decimal)),
        ],
    ));
    let ty = Type::list(Type::named(point));
    let schema = schema_of(&ty, &env).unwrap();
    let strict = type_from_schema(&schema).unwrap();
    let plain = type_from_plain_schema(&schema).unwrap();
    assert_eq!(strict.0, plain.0);
    assert_eq!(
        strict.1.iter().collect::<Vec<_>>(),
        plain.1.iter().collect::<Vec<_>>()
    );
}
