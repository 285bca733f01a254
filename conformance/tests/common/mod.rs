//! What the conformance tests share: the binary, the corpora, temporary
//! folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `limen-conformance` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_limen-conformance");

/// The reference fixtures, or `None` (with a message) when they are absent.
pub fn reference() -> Option<PathBuf> {
    let dir = limen_conformance::reference_corpus();
    if dir.join("wire").is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/hale-witness is absent");
        None
    }
}

/// The project's corpus.
pub fn project() -> PathBuf {
    limen_conformance::project_corpus()
}

/// Runs the binary: its exit status, stdout and stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A fresh temporary folder, removed when dropped (kept when
/// `LIMEN_CONFORMANCE_KEEP` is set, for looking at what a run recorded).
pub struct Temp(pub PathBuf);

impl Temp {
    pub fn new(tag: &str) -> Temp {
        let dir = std::env::temp_dir().join(format!("limen-conf-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Temp(dir)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if std::env::var_os("LIMEN_CONFORMANCE_KEEP").is_some() {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Copies the records `names` (`unix/result`) of corpus `from` into a new
/// corpus at `to`, with `program` as its program.
pub fn select(from: &Path, names: &[&str], program: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(program, to.join("program.hl")).unwrap();
    for name in names {
        let src = from.join("wire").join(format!("{name}.json"));
        let dst = to.join("wire").join(format!("{name}.json"));
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    }
}

/// The names of the reference records of `transport`.
pub fn reference_names(reference: &Path, transport: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(reference.join("wire").join(transport))
        .unwrap()
        .flatten()
        .map(|e| {
            format!(
                "{transport}/{}",
                e.path().file_stem().unwrap().to_string_lossy()
            )
        })
        .collect();
    names.sort();
    names
}

/// The project's witness declarations.
pub fn desk() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/programs/desk.hl"))
}

/// Rewrites the record `name` (`http/result`) of the corpus in `dir`.
pub fn edit(dir: &Path, name: &str, f: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("wire").join(format!("{name}.json"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}
