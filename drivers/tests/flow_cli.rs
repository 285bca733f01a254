//! The `flow` binary: `flow canon` at a schema's type, its refusals and
//! limits, and `flow fingerprint` over a listing.

use std::io::Write;
use std::process::{Command, Stdio};

use limen_core::flow::{schema_of, Declaration, Field, Identity, Param, Type, TypeDecl, TypeEnv};

const FLOW: &str = env!("CARGO_BIN_EXE_flow");
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/order.schema.json");

fn order() -> (Type, TypeEnv) {
    let id = Identity::in_repository("github.com/acme/shop", "1.0.0", "order.flow", "Order");
    let mut env = TypeEnv::new();
    env.declare(
        TypeDecl::record(
            id.clone(),
            vec![
                Field::new("id", Type::Int).doc("The order's number."),
                Field::new("items", Type::list(Type::Text)),
                Field::new("note", Type::option(Type::Text)),
                Field::new("placed", Type::Instant),
                Field::new("total", Type::Decimal),
            ],
        )
        .doc("An order as the shop records it."),
    );
    (Type::named(id), env)
}

fn flow(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(FLOW)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A usage error exits before reading stdin: a closed pipe is no failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_schema_is_the_one_limen_generates() {
    let (ty, env) = order();
    let generated = schema_of(&ty, &env).unwrap();
    if std::env::var("LIMEN_WRITE_EXAMPLE").is_ok() {
        std::fs::write(
            EXAMPLE,
            serde_json::to_string_pretty(&generated).unwrap() + "\n",
        )
        .unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(EXAMPLE).unwrap()).unwrap();
    assert_eq!(committed, generated, "examples/order.schema.json is stale");
}

#[test]
fn canon_prints_the_canonical_text() {
    let input = r#"{ "total": 12.50, "placed": "2026-12-01T10:00:00.500+01:00",
                     "items": ["b", "a"], "id": 1e3, "extra": true }"#;
    let (code, out, err) = flow(&["canon", "--schema", EXAMPLE], input);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, "{\"id\":1000,\"items\":[\"b\",\"a\"],\"placed\":\"2026-12-01T09:00:00.5Z\",\"total\":12.5}\n");
}

#[test]
fn canon_refuses_with_the_path_and_the_reason() {
    let (code, out, err) = flow(
        &["canon", "--schema", EXAMPLE],
        r#"{"id": "x", "items": [], "placed": "2026-12-01T00:00:00Z", "total": 1}"#,
    );
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err, "refused: $.id: expected Int, found \"x\"\n");
    let (code, _, err) = flow(
        &["canon", "--schema", EXAMPLE, "--max-int-digits", "3"],
        r#"{"id": 1e5000, "items": [], "placed": "2026-12-01T00:00:00Z", "total": 1}"#,
    );
    assert_eq!(code, 1);
    assert!(err.starts_with("refused: $.id: "), "{err}");
    let (code, _, err) = flow(
        &["canon", "--schema", EXAMPLE, "--max-collection-len=1"],
        r#"{"id": 1, "items": ["a", "b"], "placed": "2026-12-01T00:00:00Z", "total": 1}"#,
    );
    assert_eq!(code, 1);
    assert!(err.starts_with("refused: $.items"), "{err}");
}

/// A schema written as people write them, in a scratch file.
fn plain_schema(name: &str, schema: &serde_json::Value) -> String {
    // A folder of its own: tests run in parallel and another one removes
    // its scratch folder when it ends.
    let dir = std::env::temp_dir().join(format!("limen-flow-cli-plain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, schema.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn canon_reads_the_schemas_people_write() {
    // No `$schema`: draft 2020-12.
    let int = plain_schema("int.json", &serde_json::json!({"type": "integer"}));
    assert_eq!(
        flow(&["canon", "--schema", &int], "12.0e1"),
        (0, "120\n".into(), String::new())
    );
    // An object schema written inline: an anonymous record.
    let point = plain_schema(
        "point.json",
        &serde_json::json!({
            "title": "Point",
            "type": "object",
            "properties": {"y": {"type": "number"}, "x": {"type": "number"}},
            "required": ["x", "y"]
        }),
    );
    assert_eq!(
        flow(
            &["canon", "--schema", &point],
            r#"{"y": 2.50, "x": -0.0, "z": 1}"#
        ),
        (0, "{\"x\":0,\"y\":2.5}\n".into(), String::new())
    );
    let (code, out, err) = flow(&["canon", "--schema", &point], r#"{"x": 1}"#);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("refused: $"), "{err}");
    // A `oneOf` of constants and single-property objects: an anonymous enum.
    let state = plain_schema(
        "state.json",
        &serde_json::json!({"oneOf": [
            {"const": "Idle"},
            {"type": "object", "properties": {"Busy": {"type": "integer"}}, "required": ["Busy"]}
        ]}),
    );
    assert_eq!(
        flow(&["canon", "--schema", &state], r#" "Idle" "#).1,
        "\"Idle\"\n"
    );
    assert_eq!(
        flow(&["canon", "--schema", &state], r#"{"Busy": 1E1}"#).1,
        "{\"Busy\":10}\n"
    );
    assert_eq!(flow(&["canon", "--schema", &state], r#""Gone""#).0, 1);
    // What the encoding would not keep is still refused, at its pointer.
    let closed = plain_schema(
        "closed.json",
        &serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
    );
    let (code, _, err) = flow(&["canon", "--schema", &closed], "{}");
    assert_eq!(code, 2);
    assert!(err.contains("/additionalProperties"), "{err}");
}

#[test]
fn canon_usage_errors_exit_2() {
    for args in [
        &["canon"][..],
        &["canon", "--schema"],
        &["canon", "--schema", EXAMPLE, "--max-depth", "deep"],
        &["canon", "--schema", EXAMPLE, "--colour"],
        &["canon", "--schema", "/nonexistent.json"],
        &["frobnicate"],
    ] {
        assert_eq!(flow(args, "{}").0, 2, "{args:?}");
    }
}

#[test]
fn fingerprint_lists_and_checks_every_tool() {
    let (ty, env) = order();
    let decl = Declaration::new(
        Identity::in_repository("github.com/acme/shop", "1.0.0", "order.flow", "place"),
        vec![Param::new("order", ty)],
        Type::Int,
        Type::Text,
    );
    let entry = decl.describe_entry(&env).unwrap();
    let fingerprint = decl.fingerprint(&env).unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("limen-flow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listing = dir.join("listing.json");
    std::fs::write(
        &listing,
        serde_json::json!({"data": "1.0", "tools": [entry.clone()]}).to_string(),
    )
    .unwrap();
    let path = listing.to_str().unwrap();
    let (code, out, err) = flow(&["fingerprint", path], "");
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        format!("github.com/acme/shop@1.0.0/order.flow.place {fingerprint}\n")
    );
    let mut tampered = entry;
    tampered["fingerprint"] = format!("sha256:{}", "0".repeat(64)).into();
    std::fs::write(
        &listing,
        serde_json::json!({"data": "1.0", "tools": [tampered]}).to_string(),
    )
    .unwrap();
    let (code, _, err) = flow(&["fingerprint", path], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("github.com/acme/shop@1.0.0/order.flow.place: lists sha256:000")
            && err.contains(&fingerprint),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
