//! Our schemas and fingerprints checked by a validator nobody here wrote:
//! Python's `jsonschema` (installed by `scripts/install-peers` into
//! `.peers/venv`), driven by `tests/peer/jsonschema_check.py`.
//!
//! Every generated schema must be valid against the draft 2020-12
//! meta-schema with every `$ref` resolving; the canonical text of values of
//! its type must validate and texts that break a rule of the encoding must
//! not; and the fingerprint of a listed signature, recomputed in Python
//! from the specification alone, must be ours. Skips when the venv is
//! missing unless `LIMEN_REQUIRE_PEERS=1`.

mod support;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use limen_core::flow::canonical::to_canonical_string;
use limen_core::flow::{
    schema_of, Constructor, Decimal, Declaration, EnumPayload, Field, Identity, Instant, Param,
    Type, TypeDecl, TypeEnv, Value,
};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{json, Value as Json};

fn python() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers/venv/bin/python");
    if path.exists() {
        return Some(path);
    }
    missing(&format!("{} is not there", path.display()));
    None
}

fn missing(what: &str) {
    let required = std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1");
    assert!(
        !required,
        "jsonschema peer missing ({what}); run scripts/install-peers"
    );
    eprintln!("skipped: jsonschema peer missing ({what}); run scripts/install-peers");
}

/// Runs the checker over `job`; panics with its report on any failure.
fn check(job: &Json) {
    let Some(python) = python() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peer/jsonschema_check.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the jsonschema checker");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if out.status.code() == Some(77) {
        missing(stderr.trim());
        return;
    }
    assert!(out.status.success(), "{stdout}{stderr}");
    eprintln!("{}", stdout.trim());
}

fn id(name: &str) -> Identity {
    Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", name)
}

fn case(name: &str, ty: &Type, env: &TypeEnv, valid: &[Value], invalid: &[Json]) -> Json {
    json!({
        "name": name,
        "schema": schema_of(ty, env).unwrap(),
        "valid": valid.iter().map(to_canonical_string).collect::<Vec<_>>(),
        "invalid": invalid.iter().map(Json::to_string).collect::<Vec<_>>(),
    })
}

/// Types of every bullet of § Schemas, with values and rule-breaking texts.
fn sample_env() -> TypeEnv {
    let mut env = TypeEnv::new();
    env.declare(
        TypeDecl::record(
            id("Hit"),
            vec![
                Field::new("title", Type::Text).doc("The title."),
                Field::new("score", Type::Decimal),
                Field::new("rank", Type::Int),
                Field::new("note", Type::option(Type::Text)),
                Field::new("description", Type::Text),
                Field::new("kind", Type::named(id("Kind"))),
            ],
        )
        .doc("A hit."),
    );
    env.declare(TypeDecl::enumeration(
        id("Kind"),
        vec![
            Constructor::unit("Page").doc("A page."),
            Constructor::value("Other", Type::Text),
            Constructor::fields(
                "File",
                vec![
                    Field::new("path", Type::Text).doc("Where."),
                    Field::new("size", Type::option(Type::Int)),
                ],
            ),
        ],
    ));
    env.declare(TypeDecl::record(
        id("Tree"),
        vec![
            Field::new("value", Type::Int),
            Field::new("children", Type::list(Type::named(id("Tree")))),
        ],
    ));
    env.declare(
        TypeDecl::record(
            id("Pair"),
            vec![
                Field::new("first", Type::param("T")),
                Field::new("second", Type::option(Type::param("T"))),
            ],
        )
        .generic(&["T"]),
    );
    env.declare(TypeDecl::enumeration(id("Void"), vec![]));
    env
}

fn hit(title: &str, kind: Value) -> Value {
    Value::record(vec![
        ("title", Value::text(title)),
        ("score", Value::Decimal(Decimal::new(15.into(), -1))),
        ("rank", Value::int(3)),
        ("note", Value::none()),
        ("description", Value::text("d")),
        ("kind", kind),
    ])
}

fn tree(value: i64, children: Vec<Value>) -> Value {
    Value::record(vec![
        ("value", Value::int(value)),
        ("children", Value::List(children)),
    ])
}

fn pair(first: Value, second: Option<Value>) -> Value {
    Value::record(vec![
        ("first", first),
        ("second", second.map_or_else(Value::none, Value::some)),
    ])
}

#[test]
fn every_bullet_of_schemas_validates_its_values_and_refuses_the_rest() {
    let env = sample_env();
    let named = |n: &str| Type::named(id(n));
    let file = Value::Enum {
        constructor: "File".into(),
        payload: EnumPayload::Fields(vec![
            ("path".into(), Value::text("/a")),
            ("size".into(), Value::some(Value::int(9))),
        ]),
    };
    let cases = vec![
        case(
            "record",
            &named("Hit"),
            &env,
            &[
                hit("a", Value::unit_enum("Page")),
                hit("b", Value::enum_value("Other", Value::text("x"))),
                hit("c", file),
            ],
            &[
                // A required field left out; a field of the wrong type.
                json!({"score": 1, "rank": 1, "description": "d", "kind": "Page"}),
                json!({"title": "a", "score": "1.5", "rank": 1, "description": "d", "kind": "Page"}),
                json!({"title": "a", "score": 1, "rank": 1.5, "description": "d", "kind": "Page"}),
                // An enum value with two members, one with an unknown member,
                // a payload where there is none, an unknown constructor.
                json!({"title": "a", "score": 1, "rank": 1, "description": "d",
                       "kind": {"Other": "x", "Page": "y"}}),
                json!({"title": "a", "score": 1, "rank": 1, "description": "d",
                       "kind": {"Page": 1}}),
                json!({"title": "a", "score": 1, "rank": 1, "description": "d", "kind": "Pages"}),
                // A named payload without its required field.
                json!({"title": "a", "score": 1, "rank": 1, "description": "d",
                       "kind": {"File": {"size": 1}}}),
            ],
        ),
        // Replies may carry extra fields.
        {
            let mut c = case("record with extra fields", &named("Hit"), &env, &[], &[]);
            c["valid"] = json!([
                json!({"title": "a", "score": 1, "rank": 1, "description": "d",
                                       "kind": "Page", "extra": [1]})
                .to_string()
            ]);
            c
        },
        case(
            "recursive tree",
            &named("Tree"),
            &env,
            &[tree(
                1,
                vec![tree(2, vec![]), tree(3, vec![tree(4, vec![])])],
            )],
            &[json!({"value": 1, "children": [{"children": []}]})],
        ),
        case(
            "generic pair",
            &Type::applied(id("Pair"), vec![Type::Int]),
            &env,
            &[
                pair(Value::int(1), Some(Value::int(2))),
                pair(Value::int(1), None),
            ],
            &[json!([1, 2])],
        ),
        case(
            "generic pair of options",
            &Type::applied(id("Pair"), vec![Type::option(Type::Int)]),
            &env,
            // `first` holds None and is left out, as the encoding does.
            &[
                pair(Value::none(), Some(Value::none())),
                pair(Value::some(Value::int(1)), None),
            ],
            &[],
        ),
        case(
            "scalars",
            &Type::Tuple(vec![
                Type::Int,
                Type::Decimal,
                Type::Text,
                Type::Bool,
                Type::Bytes,
                Type::Instant,
                Type::Duration,
            ]),
            &env,
            &[Value::Tuple(vec![
                Value::Int(limen_core::flow::Int(dashu_int::IBig::from(10u8).pow(30))),
                Value::Decimal(Decimal::new((-25).into(), -3)),
                Value::text("é\n"),
                Value::Bool(true),
                Value::Bytes(vec![0, 255, 7]),
                Value::Instant(Instant::from_unix_nanos(1_500_000_000)),
                Value::Duration(limen_core::flow::Duration::from_nanos(-250_000_000)),
            ])],
            &[
                json!([1.5, 1, "t", true, "AA==", "1970-01-01T00:00:00Z", "PT1S"]),
                json!([1, "1", "t", true, "AA==", "1970-01-01T00:00:00Z", "PT1S"]),
                json!([1, 1, 1, true, "AA==", "1970-01-01T00:00:00Z", "PT1S"]),
                json!([1, 1, "t", "true", "AA==", "1970-01-01T00:00:00Z", "PT1S"]),
                json!([1, 1, "t", true, 0, "1970-01-01T00:00:00Z", "PT1S"]),
                json!([1, 1, "t", true, "AA==", 0, "PT1S"]),
                json!([1, 1, "t", true, "AA==", "1970-01-01T00:00:00Z", 1]),
                // Too short, too long.
                json!([1, 1, "t", true, "AA==", "1970-01-01T00:00:00Z"]),
                json!([1, 1, "t", true, "AA==", "1970-01-01T00:00:00Z", "PT1S", 0]),
            ],
        ),
        case(
            "list and set",
            &Type::Tuple(vec![Type::list(Type::Int), Type::set(Type::Text)]),
            &env,
            &[Value::Tuple(vec![
                Value::List(vec![Value::int(1), Value::int(1)]),
                Value::set(vec![Value::text("b"), Value::text("a")]),
            ])],
            &[json!([[1, "a"], []]), json!([[], ["a", "a"]])],
        ),
        case(
            "empty tuple",
            &Type::Tuple(vec![]),
            &env,
            &[Value::Tuple(vec![])],
            &[json!([1])],
        ),
        case(
            "dicts",
            &Type::Tuple(vec![
                Type::dict(Type::Text, Type::Int),
                Type::dict(Type::Int, Type::Bool),
            ]),
            &env,
            &[Value::Tuple(vec![
                Value::text_dict(vec![
                    ("b".into(), Value::int(2)),
                    ("a".into(), Value::int(1)),
                ]),
                Value::dict(vec![
                    (Value::int(2), Value::Bool(false)),
                    (Value::int(10), Value::Bool(true)),
                ]),
            ])],
            &[
                json!([{"a": "x"}, []]),
                json!([{}, {"1": true}]),
                json!([{}, [[1, true, 2]]]),
                json!([{}, [[1]]]),
                json!([{}, [["1", true]]]),
            ],
        ),
        case(
            "option and result outside a record",
            &Type::list(Type::Tuple(vec![
                Type::option(Type::Int),
                Type::result(Type::Text, Type::Never),
            ])),
            &env,
            &[Value::List(vec![
                Value::Tuple(vec![
                    Value::none(),
                    Value::Result(Ok(Box::new(Value::text("x")))),
                ]),
                Value::Tuple(vec![
                    Value::some(Value::int(1)),
                    Value::Result(Ok(Box::new(Value::text("y")))),
                ]),
            ])],
            &[
                json!([[1, {"Ok": "x"}]]),
                json!([[null, {"Ok": "x"}]]),
                json!([["None", {"Err": 1}]]),
                json!([["None", {"Ok": "x", "Err": 1}]]),
                json!([[{"Some": 1, "x": 2}, {"Ok": "x"}]]),
            ],
        ),
        case(
            "json value and host token",
            &Type::Tuple(vec![Type::Json, Type::HostToken]),
            &env,
            &[Value::Tuple(vec![
                Value::Json(limen_core::flow::JsonValue::Null),
                Value::HostToken(limen_core::flow::JsonValue::String("tok".into())),
            ])],
            &[json!([1])],
        ),
        case(
            "never",
            &Type::Tuple(vec![Type::Never, named("Void")]),
            &env,
            &[],
            &[json!([null, null]), json!([{}, "A"])],
        ),
    ];
    check(&json!({"cases": cases, "signatures": []}));
}

#[test]
fn a_path_identity_with_odd_characters_resolves() {
    let odd = Identity::at_path("/home/me/~my tools/run%1é.flow", "X");
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        odd.clone(),
        vec![Field::new("n", Type::Int)],
    ));
    let c = case(
        "odd identity",
        &Type::named(odd),
        &env,
        &[Value::record(vec![("n", Value::int(1))])],
        &[json!({"n": "1"}), json!({})],
    );
    check(&json!({"cases": [c], "signatures": []}));
}

/// Generated models: every schema valid and resolving, sampled values of
/// each type validating; generated declarations: fingerprints recomputed
/// independently.
#[test]
fn generated_schemas_and_values_validate_and_fingerprints_recompute() {
    let mut runner = TestRunner::deterministic();
    let mut rng = support::Rng::new(7);
    let models = support::arb_model();
    let (mut cases, mut sampled) = (Vec::new(), 0);
    for i in 0..300 {
        let (env, ty) = models.new_tree(&mut runner).unwrap().current();
        let valid: Vec<Value> = (0..4)
            .filter_map(|_| support::sample(&ty, &env, &mut rng, 3))
            .collect();
        sampled += usize::from(!valid.is_empty());
        cases.push(case(&format!("model {i}"), &ty, &env, &valid, &[]));
    }
    // Most types have values the sampler finds (Never and types without a
    // finite value have none): the check is not run over empty lists.
    assert!(
        sampled > 200,
        "only {sampled} of 300 models have sampled values"
    );
    let declarations = support::arb_declaration();
    let mut signatures = Vec::new();
    for i in 0..200 {
        let (decl, env) = declarations.new_tree(&mut runner).unwrap().current();
        signatures.push(json!({
            "name": format!("declaration {i}"),
            "signature": decl.signature(&env).unwrap(),
            "fingerprint": decl.fingerprint(&env).unwrap().to_string(),
        }));
    }
    // And the one a reader can check by hand.
    let ping = Declaration::new(
        id("ping"),
        vec![Param::new("times", Type::Int).doc("How often.")],
        Type::Bool,
        Type::Never,
    );
    signatures.push(json!({
        "name": "ping",
        "signature": ping.signature(&TypeEnv::new()).unwrap(),
        "fingerprint": ping.fingerprint(&TypeEnv::new()).unwrap().to_string(),
    }));
    check(&json!({"cases": cases, "signatures": signatures}));
}
