//! The Python toolkit's value conversions (`toolkits/python`) held to
//! core's decoding: every vector (`support/vectors.rs`, shared with the
//! TypeScript toolkit's test) is decoded by core and by the toolkit at the
//! same schema, and the two must agree on the outcome, on the canonical
//! text of an accepted value (the toolkit writes it from the value it
//! decoded, so its writer is checked too) and on the path of a refusal.
//! Also `mypy --strict` over the package. The venv under `.peers` is a
//! peer: absent, the test skips (`LIMEN_REQUIRE_PEERS=1` fails instead).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

#[path = "support/vectors.rs"]
mod vectors;

use vectors::root;

fn python() -> Option<PathBuf> {
    let p = root().join(".peers/venv/bin/python");
    if p.exists() {
        Some(p)
    } else {
        limen_clients::absent("the peers' Python venv (.peers/venv) is absent");
        None
    }
}

#[test]
fn conversions_agree_with_core_on_every_vector() {
    let Some(python) = python() else { return };
    let cases = vectors::cases();

    let mut child = Command::new(python)
        .arg(root().join("toolkits/python/tests/vectors.py"))
        .env("PYTHONPATH", root().join("toolkits/python/src"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(vectors::input(&cases).as_bytes())
        .expect("the cases are written");
    let out = child.wait_with_output().expect("python answers");
    assert!(out.status.success(), "vectors.py failed");
    let differ = vectors::differences(
        &cases,
        &String::from_utf8(out.stdout).expect("UTF-8"),
        false,
    );
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
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
