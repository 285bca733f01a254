//! JSONTestSuite (nst/JSONTestSuite) against `parse_json_value`: every y_
//! file accepted except the duplicate-key ones (refused by design), every
//! n_ file refused, every i_ file as `docs/decisions.md` decides, and every
//! test_transform case with its decided canonical text or refusal.

use std::path::{Path, PathBuf};

use limen_core::flow::decode::{canonicalize_json, parse_json_value, DecodeErrorKind, Limits};

fn suite() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/JSONTestSuite"
    ));
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("skipped: {} is absent", dir.display());
        None
    }
}

fn files(dir: &Path, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

const DUPLICATE_KEY_CASES: [&str; 2] = [
    "y_object_duplicated_key.json",
    "y_object_duplicated_key_and_value.json",
];

#[test]
fn y_files_are_accepted_except_duplicate_keys() {
    let Some(dir) = suite() else { return };
    let cases = files(&dir.join("test_parsing"), "y_");
    assert!(cases.len() > 90, "only {} y_ files", cases.len());
    for (name, bytes) in cases {
        let got = parse_json_value(&bytes, &Limits::default());
        if DUPLICATE_KEY_CASES.contains(&name.as_str()) {
            let e = got.expect_err(&name);
            assert_eq!(e.kind, DecodeErrorKind::Duplicate, "{name}: {e}");
        } else {
            assert!(got.is_ok(), "{name}: {}", got.unwrap_err());
        }
    }
}

#[test]
fn n_files_are_refused() {
    let Some(dir) = suite() else { return };
    let cases = files(&dir.join("test_parsing"), "n_");
    assert!(cases.len() > 180, "only {} n_ files", cases.len());
    for (name, bytes) in cases {
        assert!(
            parse_json_value(&bytes, &Limits::default()).is_err(),
            "{name} was accepted"
        );
    }
}

/// The table of i_ outcomes in docs/decisions.md: `file → accepted/refused`.
fn decided_i_outcomes() -> Vec<(String, bool)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/decisions.md"))
        .unwrap();
    doc.lines()
        .filter(|l| l.starts_with("| `i_"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let file = cells[1].trim_matches('`').to_owned();
            let accepted = match cells[2] {
                "accepted" => true,
                "refused" => false,
                other => panic!("{file}: outcome {other:?} is neither accepted nor refused"),
            };
            (file, accepted)
        })
        .collect()
}

#[test]
fn i_files_have_the_outcome_decisions_md_lists() {
    let Some(dir) = suite() else { return };
    let table = decided_i_outcomes();
    let cases = files(&dir.join("test_parsing"), "i_");
    let listed: Vec<&str> = table.iter().map(|(f, _)| f.as_str()).collect();
    let present: Vec<&str> = cases.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        listed, present,
        "docs/decisions.md lists exactly the i_ files, in order"
    );
    for ((name, bytes), (_, accepted)) in cases.iter().zip(&table) {
        let got = parse_json_value(bytes, &Limits::default());
        assert_eq!(got.is_ok(), *accepted, "{name}: {got:?}");
    }
}

/// The decided output of each test_transform case (also tabled in
/// docs/decisions.md): its canonical text, or `None` for a refusal.
fn transform_expectation(name: &str) -> Option<String> {
    let text = match name {
        "number_-9223372036854775808.json" => "[-9223372036854775808]",
        "number_-9223372036854775809.json" => "[-9223372036854775809]",
        "number_1.0.json" => "[1]",
        "number_1.000000000000000005.json" => "[1.000000000000000005]",
        "number_1000000000000000.json" => "[1000000000000000]",
        "number_10000000000000000999.json" => "[10000000000000000999]",
        "number_1e-999.json" => return Some(format!("[0.{}1]", "0".repeat(998))),
        "number_1e6.json" => "[1000000]",
        "number_9223372036854775807.json" => "[9223372036854775807]",
        "number_9223372036854775808.json" => "[9223372036854775808]",
        // Keys are not normalized: U+0065 U+0301 sorts before U+00E9.
        "object_key_nfc_nfd.json" | "object_key_nfd_nfc.json" => {
            "{\"e\u{301}\":\"NFD\",\"\u{e9}\":\"NFC\"}"
        }
        "object_same_key_different_values.json"
        | "object_same_key_same_value.json"
        | "object_same_key_unclear_values.json"
        | "string_1_escaped_invalid_codepoint.json"
        | "string_1_invalid_codepoint.json"
        | "string_2_escaped_invalid_codepoints.json"
        | "string_2_invalid_codepoints.json"
        | "string_3_escaped_invalid_codepoints.json"
        | "string_3_invalid_codepoints.json" => return None,
        "string_with_escaped_NULL.json" => "[\"A\\u0000B\"]",
        other => panic!("test_transform/{other} has no decided output"),
    };
    Some(text.to_owned())
}

#[test]
fn transform_cases_have_their_decided_output() {
    let Some(dir) = suite() else { return };
    let cases = files(&dir.join("test_transform"), "");
    assert_eq!(cases.len(), 22);
    for (name, bytes) in cases {
        let got = canonicalize_json(&bytes, &Limits::default())
            .map(|t| String::from_utf8(t).unwrap())
            .ok();
        assert_eq!(got, transform_expectation(&name), "{name}");
    }
}
