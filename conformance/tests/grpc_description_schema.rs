//! A gRPC exposure's description against the description schema: the
//! witness's `api-description.schema.json` with limen's gRPC outcome form
//! (`conformance/schema/outcomes_grpc.schema.json`) added to its
//! `outcomes`, validated by Python's `jsonschema` (a validator nobody here
//! wrote, from `.peers/venv`; the test skips without it unless
//! `LIMEN_REQUIRE_PEERS=1`). The documents are the corpus's recorded gRPC
//! describes, and the form the core writes is the schema's, member for
//! member.

mod common;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;
use limen_core::hale::docs::outcomes::{Encoding, GRPC_REFUSAL_STATUS, REFUSAL_KINDS};
use serde_json::{json, Value};

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ours() -> Value {
    read(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/outcomes_grpc.schema.json"
    )))
}

/// The gRPC descriptions the corpus records (a Describe's reply message).
fn recorded() -> Vec<(String, Value)> {
    let dir = project().join("wire/grpc");
    let mut docs: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("describe.grpc."))
        })
        .map(|p| {
            let record = read(&p);
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                record["reply"]["message"].clone(),
            )
        })
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    docs
}

/// The form the core writes is the one the schema states, and every
/// recorded description carries it.
#[test]
fn the_core_writes_the_schema_s_grpc_form() {
    let schema = ours();
    let doc = Encoding::Grpc.document();
    let props = schema["properties"].as_object().unwrap();
    for (key, value) in doc.as_object().unwrap() {
        let want = props[key].get("const").unwrap();
        assert_eq!(value, want, "outcomes.{key}");
    }
    assert_eq!(doc.as_object().unwrap().len(), props.len());
    assert_eq!(
        GRPC_REFUSAL_STATUS.map(|(k, _)| k),
        REFUSAL_KINDS,
        "every refusal kind has its status, in § Outcomes' order"
    );
    let docs = recorded();
    assert_eq!(docs.len(), 2, "describe.grpc.alice and .bob");
    for (name, d) in &docs {
        assert_eq!(d["outcomes"], doc, "{name}");
    }
}

fn required() -> bool {
    std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1")
}

/// Validates each of `docs` against `schema`: the failures, one line
/// each; `None` when the validator is not installed.
fn validate(schema: &Value, docs: &[(String, Value)]) -> Option<Vec<String>> {
    let python = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../.peers/venv/bin/python"
    ));
    let script = r#"
import json, sys
try:
    from jsonschema import Draft202012Validator
except ImportError as e:
    print(f"jsonschema is not installed: {e}", file=sys.stderr)
    sys.exit(77)
job = json.load(sys.stdin)
Draft202012Validator.check_schema(job["schema"])
v = Draft202012Validator(job["schema"])
for name, doc in job["docs"]:
    for e in sorted(v.iter_errors(doc), key=lambda e: list(e.path))[:3]:
        print(f"{name}: {list(e.absolute_path)}: {e.message[:200]}")
"#;
    let Ok(mut child) = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return None;
    };
    let job = json!({"schema": schema, "docs": docs});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(77) {
        return None;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn recorded_grpc_descriptions_pass_the_schema_with_our_grpc_form() {
    let Some(witness) = reference() else { return };
    let mut schema = read(&witness.join("api-description.schema.json"));
    schema["$defs"]["outcomes_grpc"] = ours();
    schema["$defs"]["outcomes"]["oneOf"]
        .as_array_mut()
        .unwrap()
        .push(json!({"$ref": "#/$defs/outcomes_grpc"}));
    let docs = recorded();
    // The form written before, in gRPC codes and `detail`: refused.
    let mut old = docs[0].1.clone();
    old["outcomes"]["result"] = json!({"status": 0, "message": "response"});
    old["outcomes"]["handler_error"] =
        json!({"status": 9, "message": "handler_error", "detail": "error"});
    let mut all = docs.clone();
    all.push(("the codes form".into(), old));
    let Some(failures) = validate(&schema, &all) else {
        assert!(
            !required(),
            "peer missing (jsonschema); run scripts/install-peers"
        );
        eprintln!("skipped: peer missing (jsonschema); run scripts/install-peers");
        return;
    };
    let (ours, control): (Vec<_>, Vec<_>) = failures
        .iter()
        .partition(|f| !f.starts_with("the codes form"));
    assert!(ours.is_empty(), "{ours:#?}");
    assert!(!control.is_empty(), "the schema refuses the codes form");
    // The witness schema alone has no gRPC form at all.
    let witness_only = read(&witness.join("api-description.schema.json"));
    let failures = validate(&witness_only, &docs).unwrap();
    assert!(!failures.is_empty(), "the witness schema has no gRPC form");
}
