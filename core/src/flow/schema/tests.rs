//! Every bullet of § Schemas, asserted on the generated JSON; the reader's
//! refusals; the round trip of each sample.

use serde_json::{json, Value};

use super::*;
use crate::flow::identity::Identity;
use crate::flow::types::{Constructor, Field, Type, TypeDecl, TypeEnv};

fn id(name: &str) -> Identity {
    Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", name)
}

fn key(name: &str) -> String {
    id(name).to_string()
}

fn reference(name: &str) -> String {
    format!("#/$defs/github.com~1acme~1tools@1.4.0~1search.flow.{name}")
}

/// The schema of `ty`, after checking that it reads back as `ty` and the
/// declarations it reaches.
fn schema(ty: &Type, env: &TypeEnv) -> Value {
    let s = schema_of(ty, env).unwrap();
    let (back, back_env) = type_from_schema(&s).unwrap();
    assert_eq!(&back, ty, "{s:#}");
    for decl in back_env.iter() {
        assert_eq!(Some(decl), env.get(&decl.identity));
    }
    assert_eq!(schema_of(&back, &back_env).unwrap(), s);
    s
}

/// The schema of an anonymous type without its `$schema`.
fn body(ty: &Type) -> Value {
    let mut s = schema(ty, &TypeEnv::new());
    let obj = s.as_object_mut().unwrap();
    assert_eq!(obj.shift_remove("$schema"), Some(json!(DIALECT)));
    s
}

fn def(s: &Value, name: &str) -> Value {
    s["$defs"][key(name)].clone()
}

fn env(decls: Vec<TypeDecl>) -> TypeEnv {
    let mut env = TypeEnv::new();
    for d in decls {
        env.declare(d);
    }
    env
}

#[test]
fn a_record_is_an_object_with_its_fields_as_properties() {
    let env = env(vec![TypeDecl::record(
        id("Hit"),
        vec![
            Field::new("title", Type::Text),
            Field::new("score", Type::Decimal),
            Field::new("note", Type::option(Type::Text)),
        ],
    )]);
    let s = schema(&Type::named(id("Hit")), &env);
    assert_eq!(
        s,
        json!({
            "$schema": DIALECT,
            "$ref": reference("Hit"),
            "$defs": {
                key("Hit"): {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "score": {"type": "number"},
                        "note": {"type": "string"}
                    },
                    "required": ["title", "score"]
                }
            }
        })
    );
    // Replies may carry extra fields: additionalProperties is not restricted.
    assert!(def(&s, "Hit").get("additionalProperties").is_none());
}

#[test]
fn an_option_field_holding_an_option_is_the_inner_options_enum_form() {
    let env = env(vec![TypeDecl::record(
        id("R"),
        vec![Field::new("maybe", Type::option(Type::option(Type::Int)))],
    )]);
    let s = schema(&Type::named(id("R")), &env);
    assert_eq!(
        def(&s, "R"),
        json!({
            "type": "object",
            "properties": {"maybe": body(&Type::option(Type::Int))}
        })
    );
}

#[test]
fn an_enum_is_a_one_of_with_a_branch_per_constructor() {
    let env = env(vec![TypeDecl::enumeration(
        id("Shape"),
        vec![
            Constructor::unit("Empty"),
            Constructor::value("Circle", Type::Decimal),
            Constructor::fields(
                "Rect",
                vec![
                    Field::new("w", Type::Int),
                    Field::new("h", Type::option(Type::Int)),
                ],
            ),
        ],
    )]);
    let s = schema(&Type::named(id("Shape")), &env);
    assert_eq!(
        def(&s, "Shape"),
        json!({"oneOf": [
            {"const": "Empty"},
            {
                "type": "object",
                "properties": {"Circle": {"type": "number"}},
                "required": ["Circle"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {"Rect": {
                    "type": "object",
                    "properties": {"w": {"type": "integer"}, "h": {"type": "integer"}},
                    "required": ["w"]
                }},
                "required": ["Rect"],
                "additionalProperties": false
            }
        ]})
    );
}

#[test]
fn an_enum_without_constructors_has_no_values() {
    let env = env(vec![TypeDecl::enumeration(id("Void"), vec![])]);
    let s = schema(&Type::named(id("Void")), &env);
    assert_eq!(def(&s, "Void"), json!({"not": {}}));
}

#[test]
fn scalars() {
    assert_eq!(body(&Type::Int), json!({"type": "integer"}));
    assert_eq!(body(&Type::Decimal), json!({"type": "number"}));
    assert_eq!(body(&Type::Text), json!({"type": "string"}));
    assert_eq!(body(&Type::Bool), json!({"type": "boolean"}));
    assert_eq!(
        body(&Type::Bytes),
        json!({"type": "string", "contentEncoding": "base64"})
    );
    assert_eq!(
        body(&Type::Instant),
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        body(&Type::Duration),
        json!({"type": "string", "format": "duration"})
    );
}

#[test]
fn lists_sets_and_tuples() {
    assert_eq!(
        body(&Type::list(Type::Int)),
        json!({"type": "array", "items": {"type": "integer"}})
    );
    assert_eq!(
        body(&Type::set(Type::Text)),
        json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true})
    );
    assert_eq!(
        body(&Type::Tuple(vec![Type::Int, Type::Text])),
        json!({
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "items": false,
            "minItems": 2
        })
    );
    assert_eq!(
        body(&Type::Tuple(vec![])),
        json!({"type": "array", "items": false})
    );
}

#[test]
fn dicts() {
    assert_eq!(
        body(&Type::dict(Type::Text, Type::Int)),
        json!({"type": "object", "additionalProperties": {"type": "integer"}})
    );
    assert_eq!(
        body(&Type::dict(Type::Int, Type::Bool)),
        json!({
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "boolean"}],
                "items": false,
                "minItems": 2
            },
            "$dict": true
        })
    );
    // Not a list of pairs, which reads back as itself.
    let pairs = Type::list(Type::Tuple(vec![Type::Int, Type::Bool]));
    assert_ne!(body(&pairs), body(&Type::dict(Type::Int, Type::Bool)));
}

#[test]
fn a_dict_keyed_by_a_type_parameter_is_an_object_or_an_array() {
    assert_eq!(
        body(&Type::dict(Type::param("K"), Type::Int)),
        json!({
            "type": ["object", "array"],
            "additionalProperties": {"type": "integer"},
            "items": {
                "type": "array",
                "prefixItems": [{"$param": "K"}, {"type": "integer"}],
                "items": false,
                "minItems": 2
            },
            "$dict": true
        })
    );
}

#[test]
fn option_and_result_outside_a_record_field_are_their_enum_forms() {
    let tag = |name: &str, payload: Value| {
        json!({
            "type": "object",
            "properties": {name: payload},
            "required": [name],
            "additionalProperties": false
        })
    };
    assert_eq!(
        body(&Type::option(Type::Int)),
        json!({"oneOf": [{"const": "None"}, tag("Some", json!({"type": "integer"}))]})
    );
    assert_eq!(
        body(&Type::result(Type::Text, Type::Int)),
        json!({"oneOf": [
            tag("Ok", json!({"type": "string"})),
            tag("Err", json!({"type": "integer"}))
        ]})
    );
    // A list of options: the option is not a record field.
    assert_eq!(
        body(&Type::list(Type::option(Type::Int))),
        json!({"type": "array", "items": body(&Type::option(Type::Int))})
    );
}

#[test]
fn json_value_is_the_empty_schema_host_tokens_and_never_are_marked() {
    assert_eq!(body(&Type::Json), json!({}));
    assert_eq!(body(&Type::HostToken), json!({"$hostToken": true}));
    assert_eq!(body(&Type::Never), json!({"not": {}}));
    // Result<T, Never> crosses like any other.
    assert_eq!(
        body(&Type::result(Type::Int, Type::Never))["oneOf"][1]["properties"]["Err"],
        json!({"not": {}})
    );
}

#[test]
fn named_types_are_keyed_by_identity_and_referenced_by_escaped_pointer() {
    let env = env(vec![
        TypeDecl::record(
            id("Hit"),
            vec![Field::new("src", Type::named(id("Source")))],
        ),
        TypeDecl::record(id("Source"), vec![Field::new("url", Type::Text)]),
    ]);
    let s = schema(&Type::list(Type::named(id("Hit"))), &env);
    assert_eq!(
        s["items"]["$ref"],
        "#/$defs/github.com~1acme~1tools@1.4.0~1search.flow.Hit"
    );
    let keys: Vec<&String> = s["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "github.com/acme/tools@1.4.0/search.flow.Hit",
            "github.com/acme/tools@1.4.0/search.flow.Source"
        ]
    );
    assert_eq!(
        def(&s, "Hit")["properties"]["src"]["$ref"],
        reference("Source")
    );
}

#[test]
fn a_tilde_is_written_tilde_zero_and_unsafe_characters_percent_encoded() {
    let odd = Identity::at_path("/home/me/~my tools/run%1.flow", "X");
    let env = env(vec![TypeDecl::record(odd.clone(), vec![])]);
    let s = schema(&Type::named(odd), &env);
    assert_eq!(
        s["$ref"],
        "#/$defs/~1home~1me~1~0my%20tools~1run%251.flow.X"
    );
    assert!(s["$defs"].get("/home/me/~my tools/run%1.flow.X").is_some());
    assert_eq!(
        def_key_of_ref("#/$defs/~1home~1me~1~0my%20tools~1run%251.flow.X").as_deref(),
        Some("/home/me/~my tools/run%1.flow.X")
    );
}

#[test]
fn a_recursive_type_has_a_finite_schema() {
    let tree = id("Tree");
    let env = env(vec![TypeDecl::record(
        tree.clone(),
        vec![
            Field::new("value", Type::Int),
            Field::new("children", Type::list(Type::named(tree.clone()))),
        ],
    )]);
    let s = schema(&Type::named(tree), &env);
    assert_eq!(s["$defs"].as_object().unwrap().len(), 1);
    assert_eq!(
        def(&s, "Tree")["properties"]["children"],
        json!({"type": "array", "items": {"$ref": reference("Tree")}})
    );
}

#[test]
fn doc_comments_become_descriptions_where_the_specification_puts_them() {
    let env = env(vec![
        TypeDecl::record(
            id("Hit"),
            vec![
                Field::new("title", Type::Text).doc("The page title."),
                Field::new("kind", Type::named(id("Kind"))).doc("What was hit."),
                Field::new("note", Type::option(Type::Json)).doc("Anything."),
            ],
        )
        .doc("A search hit."),
        TypeDecl::enumeration(
            id("Kind"),
            vec![
                Constructor::unit("Page").doc("A web page."),
                Constructor::value("Other", Type::Text).doc("Something else."),
                Constructor::fields(
                    "File",
                    vec![Field::new("path", Type::Text).doc("Where it is.")],
                )
                .doc("A file."),
            ],
        ),
    ]);
    let s = schema(&Type::named(id("Hit")), &env);
    let hit = def(&s, "Hit");
    assert_eq!(hit["description"], "A search hit.");
    assert_eq!(
        hit["properties"]["title"],
        json!({"description": "The page title.", "type": "string"})
    );
    assert_eq!(
        hit["properties"]["kind"],
        json!({"description": "What was hit.", "$ref": reference("Kind")})
    );
    assert_eq!(
        hit["properties"]["note"],
        json!({"description": "Anything."})
    );
    let kind = def(&s, "Kind");
    assert!(kind.get("description").is_none());
    assert_eq!(
        kind["oneOf"][0],
        json!({"description": "A web page.", "const": "Page"})
    );
    assert_eq!(kind["oneOf"][1]["description"], "Something else.");
    assert_eq!(kind["oneOf"][2]["description"], "A file.");
    assert_eq!(
        kind["oneOf"][2]["properties"]["File"]["properties"]["path"],
        json!({"description": "Where it is.", "type": "string"})
    );
}

#[test]
fn a_field_named_description_is_a_property() {
    let env = env(vec![TypeDecl::record(
        id("Item"),
        vec![Field::new("description", Type::Text).doc("The item's description.")],
    )]);
    let s = schema(&Type::named(id("Item")), &env);
    assert_eq!(
        def(&s, "Item"),
        json!({
            "type": "object",
            "properties": {
                "description": {"description": "The item's description.", "type": "string"}
            },
            "required": ["description"]
        })
    );
}

#[test]
fn a_generic_type_is_one_entry_with_parameters_and_references_carry_arguments() {
    let pair = id("Pair");
    let env = env(vec![TypeDecl::record(
        pair.clone(),
        vec![
            Field::new("first", Type::param("T")),
            Field::new("second", Type::option(Type::param("T"))),
            Field::new("all", Type::list(Type::param("T"))),
        ],
    )
    .generic(&["T"])]);
    let ty = Type::Tuple(vec![
        Type::applied(pair.clone(), vec![Type::Int]),
        Type::applied(pair.clone(), vec![Type::applied(pair, vec![Type::Text])]),
    ]);
    let s = schema(&ty, &env);
    assert_eq!(
        s["prefixItems"][0],
        json!({"$ref": reference("Pair"), "$args": [{"type": "integer"}]})
    );
    assert_eq!(
        s["prefixItems"][1],
        json!({"$ref": reference("Pair"), "$args": [
            {"$ref": reference("Pair"), "$args": [{"type": "string"}]}
        ]})
    );
    assert_eq!(
        def(&s, "Pair"),
        json!({
            "$generic": ["T"],
            "type": "object",
            "properties": {
                "first": {"$param": "T"},
                "second": {"$param": "T"},
                "all": {"type": "array", "items": {"$param": "T"}}
            },
            "required": ["all"],
            "$required": ["first"]
        })
    );
}

#[test]
fn a_generic_recursive_type_is_finite() {
    // Nested<T> = Leaf(T) | Nest(Nested<List<T>>): each level a new argument.
    let nested = id("Nested");
    let env = env(vec![TypeDecl::enumeration(
        nested.clone(),
        vec![
            Constructor::value("Leaf", Type::param("T")),
            Constructor::value(
                "Nest",
                Type::applied(nested.clone(), vec![Type::list(Type::param("T"))]),
            ),
        ],
    )
    .generic(&["T"])]);
    let s = schema(&Type::applied(nested, vec![Type::Int]), &env);
    assert_eq!(s["$defs"].as_object().unwrap().len(), 1);
}

#[test]
fn a_free_type_parameter_is_written_as_the_specification_says() {
    assert_eq!(body(&Type::param("T")), json!({"$param": "T"}));
}

#[test]
fn a_model_without_a_schema_is_refused_naming_where() {
    let none = TypeEnv::new();
    let e = schema_of(&Type::named(id("Gone")), &none).unwrap_err();
    assert!(
        e.reason.contains("search.flow.Gone` is not declared"),
        "{e}"
    );

    let pair = env(vec![TypeDecl::record(id("Pair"), vec![]).generic(&["T"])]);
    let e = schema_of(&Type::named(id("Pair")), &pair).unwrap_err();
    assert!(
        e.reason.contains("takes 1 type argument(s), given 0"),
        "{e}"
    );

    let unbound = env(vec![TypeDecl::record(
        id("R"),
        vec![Field::new("x", Type::param("U"))],
    )]);
    let e = schema_of(&Type::named(id("R")), &unbound).unwrap_err();
    assert_eq!(e.at, format!("{}, field `x`", key("R")));
    assert!(e.reason.contains("`U` is not declared"), "{e}");

    let twice = env(vec![TypeDecl::record(
        id("R"),
        vec![Field::new("x", Type::Int), Field::new("x", Type::Text)],
    )]);
    let e = schema_of(&Type::named(id("R")), &twice).unwrap_err();
    assert!(e.reason.contains("field `x` is declared twice"), "{e}");

    let twice = env(vec![TypeDecl::enumeration(
        id("E"),
        vec![Constructor::unit("A"), Constructor::value("A", Type::Int)],
    )]);
    let e = schema_of(&Type::named(id("E")), &twice).unwrap_err();
    assert!(
        e.reason.contains("constructor `A` is declared twice"),
        "{e}"
    );

    let bad = Identity::in_repository("r@x", "1", "f.flow", "T");
    let e = schema_of(
        &Type::named(bad.clone()),
        &env(vec![TypeDecl::record(bad, vec![])]),
    )
    .unwrap_err();
    assert!(e.reason.contains("does not read back"), "{e}");
}

/// The pointer a refused schema is refused at.
fn refused(schema: Value) -> SchemaError {
    match type_from_schema(&schema) {
        Ok(t) => panic!("read {schema:#} as {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_schema_we_did_not_write_is_refused_at_its_pointer() {
    let hit = key("Hit");
    let hit_ptr = "/$defs/github.com~1acme~1tools@1.4.0~1search.flow.Hit";
    let record = |body: Value| json!({"$schema": DIALECT, "$ref": reference("Hit"), "$defs": {hit.clone(): body}});
    let cases: Vec<(Value, String, &str)> = vec![
        (json!({"type": "integer"}), "".into(), "names its dialect"),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}),
            "/$schema".into(),
            "must be",
        ),
        (json!(true), "".into(), "boolean schema"),
        (
            json!({"$schema": DIALECT, "type": "integer", "minimum": 0}),
            "/minimum".into(),
            "not a keyword",
        ),
        (
            json!({"$schema": DIALECT, "type": "object", "properties": {}}),
            "/properties".into(),
            "named type",
        ),
        (
            json!({"$schema": DIALECT, "type": "array", "items": {"type": "array", "items": {"type": "strin"}}}),
            "/items/items/type".into(),
            "not a type we write",
        ),
        (
            json!({"$schema": DIALECT, "description": "x", "type": "integer"}),
            "/description".into(),
            "no doc comment is written here",
        ),
        (
            json!({"$schema": DIALECT, "$ref": "#/$defs/nowhere"}),
            "/$ref".into(),
            "names no entry",
        ),
        (
            json!({"$schema": DIALECT, "type": "array", "prefixItems": [{}], "items": false, "minItems": 2}),
            "/minItems".into(),
            "has `minItems` 1",
        ),
        (
            record(
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["b", "a"]}),
            ),
            format!("{hit_ptr}/required"),
            "in property order",
        ),
        (
            record(
                json!({"type": "object", "properties": {"a": {"type": "integer", "format": "int32"}}}),
            ),
            format!("{hit_ptr}/properties/a/format"),
            "`format`",
        ),
        (
            record(json!({"type": "object", "properties": {}, "additionalProperties": false})),
            format!("{hit_ptr}/additionalProperties"),
            "not a keyword",
        ),
        (
            json!({"$schema": DIALECT, "type": "integer", "$defs": {hit.clone(): {"type": "object", "properties": {}}}}),
            hit_ptr.into(),
            "nothing in the schema refers",
        ),
        (
            json!({"$schema": DIALECT, "$ref": "#/$defs/x", "$defs": {"x": {"type": "object", "properties": {}}}}),
            "/$defs/x".into(),
            "not an identity",
        ),
        (
            json!({"$schema": DIALECT, "oneOf": [{"const": "A"}, {"const": "B"}]}),
            "/oneOf/0".into(),
            "Option's",
        ),
        (
            record(
                json!({"oneOf": [{"type": "object", "properties": {"A": {}, "B": {}}, "required": ["A"], "additionalProperties": false}]}),
            ),
            format!("{hit_ptr}/oneOf/0/properties"),
            "constructor with a payload",
        ),
        (
            record(json!({"oneOf": [{"const": "A"}, {"description": 1, "const": "B"}]})),
            format!("{hit_ptr}/oneOf/1/description"),
            "a string",
        ),
        (
            json!({"$schema": DIALECT, "not": false}),
            "/not".into(),
            "Never is",
        ),
        (
            record(
                json!({"type": "object", "properties": {"a": {"$param": "T"}}, "$required": ["a"]}),
            ),
            format!("{hit_ptr}/properties/a/$param"),
            "not declared here",
        ),
    ];
    for (schema, pointer, reason) in cases {
        let e = refused(schema.clone());
        assert_eq!(e.pointer, pointer, "{schema:#}: {e}");
        assert!(e.reason.contains(reason), "{schema:#}: {e}");
    }
}

#[test]
fn a_reference_written_another_way_is_refused_saying_how_we_write_it() {
    let s = json!({
        "$schema": DIALECT,
        "$ref": "#/$defs/github.com~1acme~1tools%401.4.0~1search.flow.Hit",
        "$defs": {key("Hit"): {"type": "object", "properties": {}}}
    });
    let e = refused(s);
    assert_eq!(e.pointer, "/$ref");
    assert!(e.reason.contains(&reference("Hit")), "{e}");
}

#[test]
fn keys_are_written_in_a_fixed_order() {
    let env = env(vec![TypeDecl::record(
        id("Pair"),
        vec![
            Field::new("b", Type::param("T")).doc("Second."),
            Field::new("a", Type::Int),
        ],
    )
    .generic(&["T"])
    .doc("Two.")]);
    let ty = Type::applied(id("Pair"), vec![Type::Text]);
    let s = Generator::new(&env, Form::DESCRIBED)
        .root(&ty, Some("A pair."), &Scope::Free, "root")
        .unwrap();
    let text = serde_json::to_string(&s).unwrap();
    let expected = format!(
        concat!(
            r#"{{"$schema":"{}","description":"A pair.","$ref":"{}","$args":[{{"type":"string"}}],"#,
            r#""$defs":{{"{}":{{"description":"Two.","$generic":["T"],"type":"object","#,
            r#""properties":{{"b":{{"description":"Second.","$param":"T"}},"a":{{"type":"integer"}}}},"#,
            r#""required":["a"],"$required":["b"]}}}}}}"#
        ),
        DIALECT,
        reference("Pair"),
        key("Pair")
    );
    assert_eq!(text, expected);
}
