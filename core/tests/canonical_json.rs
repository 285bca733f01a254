//! `canonical_json_text` against RFC 8785's vectors where JCS's rules and
//! the Flow canonical form agree (arrays, french, structures, unicode, as
//! `../shared/data/json-canonicalization/README.md` says), byte for byte.

use std::path::PathBuf;

use limen_core::flow::canonical_json_text;

#[test]
fn agrees_with_rfc_8785_where_the_rules_agree() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/json-canonicalization");
    if !dir.exists() {
        eprintln!("skipped: {} is not there", dir.display());
        return;
    }
    for name in ["arrays", "french", "structures", "unicode"] {
        let file = format!("{name}.json");
        let input = std::fs::read_to_string(dir.join("input").join(&file)).unwrap();
        let output = std::fs::read_to_string(dir.join("output").join(&file)).unwrap();
        let value: serde_json::Value = serde_json::from_str(&input).unwrap();
        assert_eq!(canonical_json_text(&value), output, "{name}");
    }
}

/// Where the rules differ, ours hold: keys by code point, not UTF-16 code
/// unit (U+FB33 sorts before U+1F602 by code point, after it by UTF-16).
#[test]
fn keys_sort_by_code_point_where_rfc_8785_sorts_by_utf16() {
    let value = serde_json::json!({"\u{1f602}": 1, "\u{fb33}": 2});
    assert_eq!(
        canonical_json_text(&value),
        "{\"\u{fb33}\":2,\"\u{1f602}\":1}"
    );
}
