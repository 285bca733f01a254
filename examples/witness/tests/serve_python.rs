//! `hale serve` of the witness program with its receivers answered by
//! `examples/witness/python/handlers.py`: the witness's handlers written
//! in Python with limen-toolkit (toolkits/python), one process per
//! instance, configured by the committed `python/serve.toml`, and held to
//! the corpus by `limen-conformance check` as `serve.rs` holds
//! `witness-tool` (the same checks: `support`).
//!
//! Also: the committed listings are what `hale api tools` writes today,
//! and the committed Python modules what `flow toolkit python` generates
//! from them (`LIMEN_BLESS=1` writes both again).
//!
//! Without `python3` (3.10 or later) on the PATH the served tests skip
//! (`LIMEN_REQUIRE_PEERS=1` fails instead).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use limen_clients::absent;
use support::{program, scratch, Served};

/// `examples/witness/python`.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// Whether `python3` on the PATH is one the toolkit runs on (3.10 or
/// later): serve.toml runs `python3 handlers.py`.
fn python3() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import sys; sys.exit(sys.version_info < (3, 10))"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        absent("python3 (3.10 or later) is not on the PATH");
    }
    ok
}

/// The witness served with the Python handlers of the committed
/// `python/serve.toml`; `None` when the program or python3 is missing.
fn served(name: &str) -> Option<Served> {
    let program = program()?;
    if !python3() {
        return None;
    }
    let config = here().join("serve.toml");
    Some(Served::serve(&program, scratch(name), &config, &[]))
}

/// `have` is the committed file `path`, or (`LIMEN_BLESS=1`) becomes it.
fn holds(path: &Path, want: &str) {
    if std::env::var_os("LIMEN_BLESS").is_some() {
        std::fs::write(path, want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what the code writes; run with LIMEN_BLESS=1 to write it again",
        path.display()
    );
}

/// The loci of the witness's receiver instances (`orders` and
/// `partner_orders` are both `Orders`).
const LOCI: [&str; 2] = ["Orders", "Ledger"];

#[test]
fn the_listings_are_what_hale_api_tools_writes() {
    // `hale api tools` prints `tools::listing` pretty, and a newline.
    let program = limen_witness::program();
    for locus in LOCI {
        let listing = limen_core::hale::tools::listing(&program, locus).unwrap();
        let text = serde_json::to_string_pretty(&listing).unwrap() + "\n";
        holds(&here().join(format!("listings/{locus}.json")), &text);
    }
}

/// The generated module of each listing: `orders_tools.py`, `ledger_tools.py`.
fn module(locus: &str) -> PathBuf {
    here().join(format!("{}_tools.py", locus.to_lowercase()))
}

#[test]
fn the_python_modules_are_what_flow_toolkit_python_generates() {
    for locus in LOCI {
        let listing =
            std::fs::read_to_string(here().join(format!("listings/{locus}.json"))).unwrap();
        let code = limen_toolkit::codegen::python(&listing).unwrap();
        holds(&module(locus), &code);
    }
}

#[test]
fn the_handlers_are_mypy_strict_clean() {
    // The peers' venv has mypy (scripts/install-peers).
    let mypy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/mypy");
    if !mypy.exists() {
        absent("mypy in the peers' venv is absent");
        return;
    }
    let out = Command::new(mypy)
        .args(["--strict", "--no-incremental", "handlers.py", "witness.py"])
        .arg(module("Orders"))
        .arg(module("Ledger"))
        .env("MYPYPATH", here().join("../../../toolkits/python/src"))
        .current_dir(here())
        .output()
        .expect("mypy runs");
    assert!(
        out.status.success(),
        "mypy --strict: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn public_passes_the_check_with_the_python_handlers() {
    if let Some(served) = served("py-public") {
        served.passes_public();
    }
}

#[test]
fn partner_passes_the_check_with_the_python_handlers() {
    if let Some(served) = served("py-partner") {
        served.passes_partner();
    }
}

#[test]
fn admin_over_unix_passes_the_check_with_the_python_handlers() {
    if let Some(served) = served("py-admin") {
        served.passes_admin();
    }
}

#[test]
fn the_hub_passes_the_check_with_the_python_handlers() {
    if let Some(served) = served("py-hub") {
        served.passes_hub();
    }
}
