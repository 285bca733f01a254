//! The tokenizer and the json.Value parser against an independent parser
//! (serde_json), on generated JSON texts and byte-level mutations of them:
//! both must agree on what is JSON, except where limen refuses by design
//! (a repeated key, a number past the limits) — and neither may panic.
//!
//! Also: the tokenizer alone accepts every JSONTestSuite y_ file (duplicate
//! keys included: refusing them is the consumer's job) and refuses every n_
//! file.

use std::path::Path;

use limen_core::flow::decode::{parse_json_value, DecodeErrorKind, Limits};
use limen_core::json::Tokenizer;
use proptest::prelude::*;

/// Runs the tokenizer over `bytes` to the end: `true` if it is one JSON text.
fn tokenizes(bytes: &[u8]) -> bool {
    Tokenizer::new(bytes).read_to_end().is_ok()
}

fn text() -> impl Strategy<Value = String> {
    let ws = prop::sample::select(vec!["", " ", "\n", "\t", "\r\n  "]);
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        (-1_000_000i64..1_000_000).prop_map(|i| i.to_string()),
        (any::<i32>(), 0u32..6, -20i32..20).prop_map(|(c, f, e)| format!("{c}.{f:0>3}e{e}")),
        "[a-z\\\\\"/é😂\\u{1}-\\u{1f}]{0,8}".prop_map(|s| {
            let mut out = Vec::new();
            limen_core::json::write_string(&s, &mut out);
            String::from_utf8(out).unwrap()
        }),
        Just("\"\\ud83d\\ude02\\u00e9\\/\\b\"".to_owned()),
    ];
    leaf.prop_recursive(4, 32, 5, move |inner| {
        let ws = ws.clone();
        prop_oneof![
            (prop::collection::vec((inner.clone(), ws.clone()), 0..5)).prop_map(|items| {
                let body: Vec<String> = items
                    .into_iter()
                    .map(|(v, w)| format!("{w}{v}{w}"))
                    .collect();
                format!("[{}]", body.join(","))
            }),
            (prop::collection::vec(("[a-c]{1,2}", inner, ws), 0..5)).prop_map(|members| {
                let body: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, w)| format!("{w}\"{k}\"{w}:{w}{v}"))
                    .collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, u8),
    Delete(usize),
    Replace(usize, u8),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let byte = prop::sample::select(
        b"{}[]:,\"\\/ \t\n0123456789-+.eEtrufalsn\x00\x1f\x7f\xc3\xa9\xed\xa0\xef\xbb\xbf\xff"
            .to_vec(),
    );
    prop::collection::vec(
        prop_oneof![
            (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
            any::<usize>().prop_map(Edit::Delete),
            (any::<usize>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
        ],
        0..3,
    )
}

fn apply(text: &str, edits: &[Edit]) -> Vec<u8> {
    let mut b = text.as_bytes().to_vec();
    for e in edits {
        let n = b.len();
        match *e {
            Edit::Insert(i, x) => b.insert(i % (n + 1), x),
            Edit::Delete(i) if n > 0 => {
                b.remove(i % n);
            }
            Edit::Replace(i, x) if n > 0 => b[i % n] = x,
            _ => {}
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn agrees_with_serde_json_on_what_is_json(text in text(), edits in edits()) {
        let bytes = apply(&text, &edits);
        let theirs = serde_json::from_slice::<serde_json::Value>(&bytes);
        // serde_json refuses numbers past f64's range (limen holds them
        // exactly) and stops reading there: no verdict to compare with.
        if matches!(&theirs, Err(e) if e.to_string().starts_with("number out of range")) {
            return Ok(());
        }
        let theirs = theirs.is_ok();
        let tokenized = tokenizes(&bytes);
        match parse_json_value(&bytes, &Limits::default()) {
            Ok(_) => {
                prop_assert!(theirs, "limen accepted {:?}", String::from_utf8_lossy(&bytes));
                prop_assert!(tokenized);
            }
            // Refused by design; parsing stopped there, so what follows
            // was never read and may be anything.
            Err(e) if matches!(e.kind, DecodeErrorKind::Duplicate | DecodeErrorKind::Limit) => {}
            Err(e) => {
                prop_assert!(!theirs, "limen refused {:?}: {e}", String::from_utf8_lossy(&bytes));
                prop_assert!(!tokenized);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = tokenizes(&bytes);
        let _ = parse_json_value(&bytes, &Limits::default());
    }
}

#[test]
fn tokenizer_alone_holds_the_suite() {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/JSONTestSuite/test_parsing"
    ));
    if !dir.is_dir() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let bytes = std::fs::read(&path).unwrap();
        if name.starts_with("y_") {
            assert!(tokenizes(&bytes), "{name} refused");
            seen += 1;
        } else if name.starts_with("n_") {
            assert!(!tokenizes(&bytes), "{name} accepted");
            seen += 1;
        }
    }
    assert!(seen > 270, "only {seen} files");
}
