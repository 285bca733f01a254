//! The value-conversion vectors every toolkit is held to (issue #30): types
//! and texts decoded by core and by a toolkit at the same schema, which
//! must agree on the outcome, on the canonical text of an accepted value
//! (the toolkit writes it from the value it decoded, so its writer is
//! checked too) and on the path of a refusal. Used by `python_toolkit.rs`
//! and `typescript_toolkit.rs` (`#[path = "support/vectors.rs"] mod
//! vectors;`), each of which runs its toolkit over [`cases`] and hands the
//! answers to [`differences`].

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use limen_core::flow::canonical::to_canonical_string;
use limen_core::flow::decode::{decode, Limits};
use limen_core::flow::schema::{schema_of, type_from_schema};
use limen_core::flow::types::{Constructor, Field, TypeDecl};
use limen_core::flow::{Identity, Type, TypeEnv};
use serde_json::{json, Value as Json};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn id(name: &str) -> Identity {
    Identity::in_repository("github.com/acme/tools", "1.0.0", "search.flow", name)
}

/// The declarations of core's own decoding tests (`decode/tests/mod.rs`).
pub fn env() -> TypeEnv {
    let mut env = TypeEnv::new();
    env.declare(TypeDecl::record(
        id("Hit"),
        vec![
            Field::new("score", Type::Int),
            Field::new("title", Type::Text),
            Field::new("note", Type::option(Type::Text)),
        ],
    ));
    env.declare(TypeDecl::record(
        id("Search"),
        vec![Field::new("hits", Type::list(Type::named(id("Hit"))))],
    ));
    env.declare(TypeDecl::enumeration(
        id("Shape"),
        vec![
            Constructor::unit("Empty"),
            Constructor::value("Circle", Type::Decimal),
            Constructor::fields(
                "Rect",
                vec![Field::new("w", Type::Int), Field::new("h", Type::Int)],
            ),
        ],
    ));
    env.declare(
        TypeDecl::record(id("Boxed"), vec![Field::new("value", Type::param("T"))]).generic(&["T"]),
    );
    env
}

/// Types and texts: core's rules (`decode/tests/rules.rs`) by kind, the
/// numbers the issue names (past 2^64, 40 digits), every scalar's edges.
pub fn vectors() -> Vec<(Type, Vec<&'static str>)> {
    let hit = Type::named(id("Hit"));
    let shape = Type::named(id("Shape"));
    let boxed = |t: Type| Type::Named {
        identity: id("Boxed"),
        args: vec![t],
    };
    vec![
        (
            Type::Int,
            vec![
                "0",
                "-0",
                "1e2",
                "100.0",
                "1000e-1",
                "1.5",
                "18446744073709551616",
                "-340282366920938463463374607431768211457",
                "1e5000",
                "\"1\"",
                "true",
                "[1]",
                "1 2",
                "01",
                "NaN",
                "1e4299",
                "1e4300",
            ],
        ),
        (
            Type::Decimal,
            vec![
                "1.50",
                "0.1234567890123456789012345678901234567890",
                "-0.0",
                "1e-999",
                "1e-1001",
                "1.5e+9999",
                "123.456e-789",
                "12345678901234567890.1234567890123456789",
                "\"1.5\"",
            ],
        ),
        (
            Type::Text,
            vec![
                r#""a\u00e9\n\"""#,
                r#""\ud800""#,
                r#""\ud83d\ude02""#,
                "\"\u{7f}\u{2028}\"",
                "null",
                "\"a\u{1}\"",
            ],
        ),
        (Type::Bool, vec!["true", "false", "0", "\"true\""]),
        (
            Type::Bytes,
            vec![
                r#""QQ==""#,
                r#""QR==""#,
                r#""QQ""#,
                r#""AAEC""#,
                r#""Q Q==""#,
                r#""""#,
                r#""-_8=""#,
            ],
        ),
        (
            Type::Instant,
            vec![
                r#""2024-02-29T12:00:00Z""#,
                r#""2023-02-29T12:00:00Z""#,
                r#""2024-01-01T01:00:00+02:00""#,
                r#""2024-01-01t00:00:00.500z""#,
                r#""2024-01-01T00:00:00-00:00""#,
                r#""2024-01-01 00:00:00Z""#,
                r#""2024-01-01T00:00:60Z""#,
                r#""2024-01-01T00:00:00+0100""#,
                r#""+10000-01-01T00:00:00Z""#,
                r#""-0001-12-31T23:59:59.999999999Z""#,
                r#""+2024-01-01T00:00:00Z""#,
                r#""-0000-01-01T00:00:00Z""#,
                r#""2024-01-01T00:00:00.1234567890Z""#,
                r#""2024-01-01T00:00:00.1234567891Z""#,
                r#""2024-01-01T24:00:00Z""#,
                r#""1969-12-31T23:59:59.9Z""#,
            ],
        ),
        (
            Type::Duration,
            vec![
                r#""PT90S""#,
                r#""PT0.25S""#,
                r#""PT-5S""#,
                r#""PT1.50S""#,
                r#""PT-0S""#,
                r#""PT1M30S""#,
                r#""P1D""#,
                r#""PT+1S""#,
                r#""PT01S""#,
                r#""pt1s""#,
                r#""PT1e3S""#,
                r#""PT0.0000000001S""#,
                r#""PT0.1000000000S""#,
            ],
        ),
        (
            Type::list(hit.clone()),
            vec![
                r#"[{"score": 1e2, "extra": true}]"#,
                r#"[{"score": 1}, {"score": "x"}]"#,
                r#"[{"title": "a"}]"#,
                r#"[{"score": 1, "note": null}]"#,
                r#"[{"score": 1, "note": "n", "x y": [1, {"x": null}]}]"#,
                r#"[{"score": 1, "score": 2}]"#,
                r#"[{"score": 1, "extra": {"a": 1, "a": 2}}]"#,
            ],
        ),
        (
            Type::named(id("Search")),
            vec![r#"{"hits": [{"score": 1, "title": "a"}, {"score": "x", "title": "d"}]}"#],
        ),
        (
            shape.clone(),
            vec![
                r#""Empty""#,
                r#"{"Circle": 1.50}"#,
                r#"{"Rect": {"w": 1, "h": 2, "z": 0}}"#,
                r#"{"Empty": null}"#,
                r#""Circle""#,
                r#""Square""#,
                r#"{"Rect": {"w": 1}}"#,
                r#"{"Circle": 1, "Empty": 2}"#,
            ],
        ),
        (
            Type::option(Type::option(Type::Int)),
            vec![
                r#""None""#,
                r#"{"Some": "None"}"#,
                r#"{"Some": {"Some": 3}}"#,
                "null",
                "3",
            ],
        ),
        (
            Type::result(Type::Int, Type::Text),
            vec![
                r#"{"Ok": 1}"#,
                r#"{"Err": "e"}"#,
                r#"{"Ok": 1, "Err": "e"}"#,
                r#""Ok""#,
            ],
        ),
        (
            Type::result(Type::Int, Type::Never),
            vec![r#"{"Ok": 1}"#, r#"{"Err": "e"}"#],
        ),
        (Type::Never, vec!["1", "null", r#""x""#]),
        (
            Type::Json,
            vec![
                r#"{"b": 1.50, "a": [null, true, 1e2, -0, "x"]}"#,
                r#"{"a": 1, "a": 2}"#,
                "1e999",
                "1e1001",
                "[]",
            ],
        ),
        (Type::HostToken, vec![r#"{"b":1.50, "a":2}"#, r#""tok""#]),
        (
            Type::set(Type::Int),
            vec!["[3, 1, 2]", "[1, 2, 1]", "[]", "[1e0, 1]"],
        ),
        (Type::set(Type::Text), vec![r#"["b", "a", "é", "e\u0301"]"#]),
        (
            Type::dict(Type::Text, Type::Int),
            vec![
                r#"{"b": 1, "a": 2}"#,
                r#"{"a": 1, "a": 1}"#,
                r#"[["a", 1]]"#,
            ],
        ),
        (
            Type::dict(Type::Int, Type::Text),
            vec![
                r#"[[2, "b"], [1, "a"]]"#,
                r#"[[1, "a"], [1, "b"]]"#,
                r#"[[1]]"#,
                r#"{"1": "a"}"#,
            ],
        ),
        (
            Type::Tuple(vec![Type::Int, Type::Text]),
            vec![r#"[1, "a"]"#, r#"[1]"#, r#"[1, "a", 2]"#],
        ),
        (Type::Tuple(vec![]), vec!["[]", "[1]"]),
        (
            boxed(Type::option(Type::Int)),
            vec![r#"{}"#, r#"{"value": 3}"#, r#"{"value": "None"}"#],
        ),
        (
            boxed(Type::list(shape)),
            vec![r#"{"value": ["Empty", {"Circle": 2}]}"#, r#"{}"#],
        ),
        (
            Type::Int,
            vec!["", "[", "{}x", "\u{feff}1", "[1,]", "\"\\ud800\\u0041\""],
        ),
    ]
}

/// The fixture listing's every parameter, success and error schema, each
/// with texts that fit some and not others.
pub fn listing_cases() -> Vec<(Json, &'static str)> {
    let listing: Json = serde_json::from_str(
        &std::fs::read_to_string(root().join("toolkit/tests/fixtures/listing.json"))
            .expect("the fixture listing"),
    )
    .expect("the fixture listing is JSON");
    let texts = [
        r#""hello""#,
        "18446744073709551617",
        r#"{"Refused": "no"}"#,
        r#"{"TooBig": {"limit": 3}}"#,
        "1.0000000000000000000000000000000000000001",
        "[]",
        "{}",
        "null",
    ];
    let mut out = Vec::new();
    for tool in listing["tools"].as_array().expect("tools") {
        let sig = &tool["signature"];
        let mut schemas: Vec<&Json> = sig["params"]
            .as_array()
            .expect("params")
            .iter()
            .map(|p| &p[1])
            .collect();
        schemas.push(&sig["ok"]);
        schemas.push(&sig["err"]);
        for s in schemas {
            out.extend(texts.iter().map(|t| (s.clone(), *t)));
        }
    }
    out
}

/// Core's answer: the canonical text, or the refusal's path and reason.
pub fn core_answer(schema: &Json, text: &str) -> Json {
    let (ty, env) = type_from_schema(schema).expect("a schema core reads");
    match decode(text.as_bytes(), &ty, &env, &Limits::default()) {
        Ok(v) => json!({"ok": to_canonical_string(&v)}),
        Err(e) => {
            let message = e.to_string();
            let path = message.split(": ").next().unwrap_or("$").to_owned();
            let reason = message
                .split_once(": ")
                .map(|x| x.1)
                .unwrap_or("")
                .to_owned();
            json!({"refused": path, "reason": reason})
        }
    }
}

/// Every case: each vector's type as a schema with its texts, then the
/// fixture listing's.
pub fn cases() -> Vec<(Json, &'static str)> {
    let env = env();
    let mut cases: Vec<(Json, &str)> = Vec::new();
    for (ty, texts) in vectors() {
        let schema = schema_of(&ty, &env).expect("a schema");
        cases.extend(texts.into_iter().map(|t| (schema.clone(), t)));
    }
    cases.extend(listing_cases());
    cases
}

/// The cases as the toolkits' harnesses read them: one JSON line
/// `{"schema", "text"}` each.
pub fn input<T: AsRef<str>>(cases: &[(Json, T)]) -> String {
    let mut input = String::new();
    for (schema, text) in cases {
        input.push_str(&json!({"schema": schema, "text": text.as_ref()}).to_string());
        input.push('\n');
    }
    input
}

/// Where a toolkit's answers (`{"ok": text}` or `{"refused": path,
/// "reason": why}`, one line per case) differ from core's, one line each:
/// the outcome, the canonical text, the refusal's path, and with `reasons`
/// its reason word for word (a text that is not JSON excepted: the
/// toolkits' readers word that their own way).
pub fn differences<T: AsRef<str>>(cases: &[(Json, T)], stdout: &str, reasons: bool) -> Vec<String> {
    let answers: Vec<Json> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("an answer line"))
        .collect();
    assert_eq!(answers.len(), cases.len(), "one answer per case");
    let mut differ = Vec::new();
    for ((schema, text), got) in cases.iter().zip(&answers) {
        let text = text.as_ref();
        let want = core_answer(schema, text);
        let same = match (want.get("ok"), got.get("ok")) {
            (Some(w), Some(g)) => w == g,
            (None, None) => {
                // A text that is not JSON is refused at `$` by the toolkit,
                // which parses before the type directs; core names where.
                let not_json = got["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("not JSON"));
                not_json
                    || (want["refused"] == got["refused"]
                        && (!reasons || want["reason"] == got["reason"]))
            }
            _ => false,
        };
        if !same {
            differ.push(format!("{text} at {schema}: core {want}, toolkit {got}"));
        }
    }
    differ
}

/// Mutants of every case's text (`per_case` each): a character deleted,
/// one of JSON's own inserted, a piece doubled, two swapped; from a fixed
/// seed, so a failure is found again. What a toolkit's reader and core's
/// must also agree on.
pub fn mutants(per_case: usize, seed: u64) -> Vec<(Json, String)> {
    const PIECES: &[&str] = &[
        ",", "]", "}", "[", "{", "\"", "\\", "0", "-", "e", "E", ".", " ", "1", "9", "\\u", "null",
        "true", "é", "😀", ":", "\"None\"", "+", "\u{1}",
    ];
    let mut state = seed | 1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    let mut out = Vec::new();
    for (schema, text) in cases() {
        for _ in 0..per_case {
            let mut chars: Vec<char> = text.chars().collect();
            for _ in 0..1 + next(3) {
                let at = next(chars.len() + 1);
                match next(4) {
                    0 if !chars.is_empty() => {
                        chars.remove(at.min(chars.len() - 1));
                    }
                    1 => {
                        let piece: Vec<char> = PIECES[next(PIECES.len())].chars().collect();
                        chars.splice(at..at, piece);
                    }
                    2 => {
                        let end = (at + 1 + next(6)).min(chars.len());
                        let piece: Vec<char> = chars[at.min(end)..end].to_vec();
                        chars.splice(end..end, piece);
                    }
                    _ if chars.len() > 1 => {
                        let (last, other) = (chars.len() - 1, next(chars.len()));
                        chars.swap(at.min(last), other);
                    }
                    _ => {}
                }
            }
            out.push((schema.clone(), chars.into_iter().collect()));
        }
    }
    out
}
