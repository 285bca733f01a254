//! The bearer check's reasons held to the records: `hale::runtime::bearer::
//! authenticate` under the witness's own token table (read from
//! `../shared/hale-witness/program.hl`: its tokens and its `refused()`)
//! answers every HTTP wire record's bearer as the record's reply does —
//! admitted, or refused unauthenticated with the record's reason — and a
//! spent credential's words are the ones the records hold: the project's
//! `wire/ws` record of a subscribe after expiry (§ Streams' words), and
//! the witness descriptions' `expired` (§ The HTTP transport's word,
//! which a hub's `unauthorized` frame names too). Skipped, with a message,
//! when the fixtures are absent.

use std::path::{Path, PathBuf};

use limen_core::hale::runtime::bearer::{authenticate, BearerRefusal};
use limen_core::hale::runtime::outcome::reasons;
use limen_core::hale::runtime::TokenTable;
use serde_json::Value;

fn witness_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ));
    if dir.join("program.hl").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: the witness fixtures are absent ({})",
            dir.display()
        );
        None
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The quoted texts of `line` in order.
fn quoted(line: &str) -> Vec<&str> {
    line.split('"').skip(1).step_by(2).collect()
}

/// The witness's `locus Tokens`: `if token == "t-x" { return … name: "x" }`
/// for each token, and `fn refused() -> String { return "…"; }`.
fn witness_tokens(program: &str) -> TokenTable {
    let body = program
        .split("locus Tokens {")
        .nth(1)
        .expect("program.hl declares locus Tokens");
    let body = &body[..body.find("\n}").expect("locus Tokens ends")];
    let refused = body
        .lines()
        .find(|l| l.contains("fn refused()"))
        .and_then(|l| quoted(l).first().copied());
    let mut table = TokenTable::new(refused);
    for line in body.lines().filter(|l| l.contains("if token ==")) {
        let q = quoted(line);
        // token, mode, name
        table = table.with(q[0], q[2]);
    }
    table
}

fn bearer_of(request: &Value) -> Option<&str> {
    request["headers"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))?
        .1
        .as_str()?
        .strip_prefix("Bearer ")
}

#[test]
fn the_bearer_reasons_are_the_records() {
    let Some(dir) = witness_dir() else { return };
    let table = witness_tokens(&std::fs::read_to_string(dir.join("program.hl")).unwrap());
    let mut refused = 0;
    let mut records: Vec<PathBuf> = std::fs::read_dir(dir.join("wire/http"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    assert!(!records.is_empty());
    for path in &records {
        let record = json(path);
        let got = authenticate(Some(&table), bearer_of(&record["request"]), 0);
        if record["kind"] == "unauthenticated" {
            refused += 1;
            let want = record["reply"]["body"]["refusal"]["reason"]
                .as_str()
                .unwrap();
            let refusal = got.expect_err(&path.display().to_string());
            assert_eq!(refusal.reason(), want, "{}", path.display());
        } else {
            assert!(got.is_ok(), "{}: {got:?}", path.display());
        }
    }
    assert_eq!(
        refused, 1,
        "the witness has one unauthenticated HTTP record"
    );
    // The Unix transport's refusal, in the same set of reasons.
    let unix = json(&dir.join("wire/unix/refusal_unauthenticated.json"));
    assert_eq!(
        unix["reply"]["refusal"]["reason"],
        Value::from(reasons::UNNAMED_PEER)
    );

    // A spent credential: `expired` for a call, a word the witness's hub
    // descriptions list for the hub's own invalidation too.
    let spent = TokenTable::new(None).with_expiry("t-dave", "dave", 10);
    let refusal = authenticate(Some(&spent), Some("t-dave"), 10).unwrap_err();
    assert!(matches!(&refusal, BearerRefusal::Expired(p) if p.name == "dave"));
    let fills = json(&dir.join("fills.dave.description.json"));
    let listed = fills.to_string();
    assert!(
        listed.contains(&format!("\"{}\"", refusal.reason())),
        "{listed}"
    );
    // And a subscribe after it, in the words of the project's record.
    let record = json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/corpus/wire/ws/refusal_unauthenticated.expired.json"),
    );
    let last = record["frames"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["frame"]["refusal"]["reason"],
        Value::from(refusal.subscribe_reason())
    );
}
