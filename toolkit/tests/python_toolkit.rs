//! The Python toolkit's value conversions (`toolkits/python`) held to
//! core's decoding: every vector (`support/vectors.rs`, shared with the
//! TypeScript toolkit's test) is decoded by core and by the toolkit at the
//! same schema, and the two must agree on the outcome, on the canonical
//! text of an accepted value (the toolkit writes it from the value it
//! decoded, so its writer is checked too) and on the path and the reason
//! of a refusal, word for word; so must they on a seeded campaign of the
//! vectors' mutants and on numbers that grow when written out.
//! Also `mypy --strict` over the package. The venv under `.peers` is a
//! peer: absent, the test skips (`LIMEN_REQUIRE_PEERS=1` fails instead).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use limen_clients::python;
use serde_json::Value as Json;

#[path = "support/vectors.rs"]
mod vectors;

use vectors::root;

/// Runs `tests/vectors.py` over `cases`: where its answers differ from
/// core's, reasons compared word for word (the toolkit words a refusal as
/// core does).
fn differences<T: AsRef<str>>(python: &Path, cases: &[(Json, T)]) -> Vec<String> {
    let mut child = Command::new(python)
        .arg(root().join("toolkits/python/tests/vectors.py"))
        .env("PYTHONPATH", root().join("toolkits/python/src"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = vectors::input(cases);
    // Written from a thread: the answers come while the cases go in.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python answers");
    writer
        .join()
        .expect("the writer")
        .expect("the cases are written");
    assert!(out.status.success(), "vectors.py failed");
    vectors::differences(cases, &String::from_utf8(out.stdout).expect("UTF-8"), true)
}

fn assert_none(differ: Vec<String>) {
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ
            .iter()
            .map(|d| {
                // The text and the answers; a long schema or text elided.
                let chars: Vec<char> = d.chars().collect();
                if chars.len() <= 600 {
                    return d.clone();
                }
                let head: String = chars[..100].iter().collect();
                let tail: String = chars[chars.len() - 400..].iter().collect();
                format!("{head} … {tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn conversions_agree_with_core_on_every_vector() {
    let Some(python) = python() else { return };
    assert_none(differences(&python, &vectors::cases()));
}

/// The reader and the decoder on texts a step away from the vectors' (the
/// TypeScript toolkit's campaign, `vectors::campaign`): what core accepts
/// the toolkit accepts with the same canonical text, and what core refuses
/// it refuses at the same path with the same reason (or as not JSON).
#[test]
fn conversions_agree_with_core_on_mutants_of_the_vectors() {
    let Some(python) = python() else { return };
    assert_none(differences(&python, &vectors::campaign()));
}

/// Numbers that grow when written out: core bounds the canonical text of
/// a value by the text limit, and so does the toolkit, at the same element.
#[test]
fn a_value_whose_canonical_text_would_pass_the_limit_is_refused_as_core_refuses_it() {
    let Some(python) = python() else { return };
    assert_none(differences(&python, &vectors::growth_cases()));
}

#[test]
fn writing_refuses_what_is_not_of_the_type() {
    let Some(python) = python() else { return };
    let out = Command::new(python)
        .arg(root().join("toolkits/python/tests/encode_refusals.py"))
        .env("PYTHONPATH", root().join("toolkits/python/src"))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "encode_refusals.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_package_is_mypy_strict_clean() {
    let mypy = root().join(".peers/venv/bin/mypy");
    if !mypy.exists() {
        limen_clients::absent("mypy in the peers' venv is absent");
        return;
    }
    let out = Command::new(mypy)
        .args(["--strict", "--no-incremental", "--cache-dir=/dev/null"])
        .arg(root().join("toolkits/python/src/limen_toolkit"))
        .arg(root().join("toolkits/python/tests"))
        .env("MYPYPATH", root().join("toolkits/python/src"))
        .output()
        .expect("mypy runs");
    assert!(
        out.status.success(),
        "mypy --strict: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
