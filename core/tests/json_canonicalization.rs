//! The RFC 8785 vectors (cyberphone/json-canonicalization) against the Flow
//! canonical text of json.Value: byte for byte where the two forms agree,
//! and exactly the differences docs/decisions.md records where they do not.

use std::path::Path;

use limen_core::flow::decode::{canonicalize_json, Limits};

fn vectors() -> Option<&'static Path> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/json-canonicalization"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: {} is absent", dir.display());
        None
    }
}

fn ours(dir: &Path, name: &str) -> String {
    let input = std::fs::read(dir.join("input").join(name)).unwrap();
    String::from_utf8(canonicalize_json(&input, &Limits::default()).unwrap()).unwrap()
}

fn jcs(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("output").join(name)).unwrap()
}

#[test]
fn agrees_with_jcs_where_the_forms_agree() {
    let Some(dir) = vectors() else { return };
    for name in [
        "arrays.json",
        "french.json",
        "structures.json",
        "unicode.json",
    ] {
        assert_eq!(ours(dir, name), jcs(dir, name), "{name}");
    }
}

#[test]
fn values_differ_only_in_exact_plain_numbers() {
    let Some(dir) = vectors() else { return };
    let expected = concat!(
        r#"{"literals":[null,true,false],"#,
        r#""numbers":[333333333.33333329,1000000000000000000000000000000,4.5,0.002,0.000000000000000000000000001],"#,
        r#""string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
    assert_eq!(ours(dir, "values.json"), expected);
    // The JCS text differs in exactly the three numbers JCS writes as doubles.
    let theirs = jcs(dir, "values.json");
    let rewritten = theirs
        .replace("333333333.3333333,", "333333333.33333329,")
        .replace("1e+30", &format!("1{}", "0".repeat(30)))
        .replace("1e-27", &format!("0.{}1", "0".repeat(26)));
    assert_eq!(rewritten, expected);
}

#[test]
fn weird_differs_only_in_code_point_key_order() {
    let Some(dir) = vectors() else { return };
    let expected = concat!(
        "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",",
        "\"</script>\":\"Browser Challenge\",\"\u{80}\":\"Control\u{7f}\",",
        "\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",",
        "\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\",\"😂\":\"Smiley\"}"
    );
    assert_eq!(ours(dir, "weird.json"), expected);
    // JCS has the same members, with U+1F602 before U+FB33 (UTF-16 order).
    let theirs = jcs(dir, "weird.json");
    let smiley = ",\"😂\":\"Smiley\"";
    let dalet = ",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"";
    assert_eq!(
        theirs.replace(&format!("{smiley}{dalet}"), &format!("{dalet}{smiley}")),
        expected
    );
}
