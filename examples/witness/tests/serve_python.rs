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

use std::path::{Path, PathBuf};

/// `examples/witness/python`.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
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
