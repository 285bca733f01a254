//! `flow toolkit typescript`: the committed fixture module
//! (`toolkits/typescript/test/fixture/echo-tools.ts`, which the TypeScript
//! fixture Tool `echo-tool.ts` is written over) is what the generator writes
//! today (`LIMEN_BLESS=1` writes it again).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed generated module of the fixture listing.
fn fixture_module() -> PathBuf {
    root().join("toolkits/typescript/test/fixture/echo-tools.ts")
}

fn fixture_listing() -> String {
    std::fs::read_to_string(root().join("toolkit/tests/fixtures/listing.json")).unwrap()
}

#[test]
fn the_committed_fixture_module_is_what_the_generator_writes() {
    let code = limen_toolkit::codegen::typescript(&fixture_listing()).unwrap();
    let path = fixture_module();
    if std::env::var_os("LIMEN_BLESS").is_some() {
        std::fs::write(&path, &code).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == code,
        "{} is not what the code writes; run with LIMEN_BLESS=1 to write it again",
        path.display()
    );
}
