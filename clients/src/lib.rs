//! Test support for the generated clients of `hale api client` (issue #29):
//! what `tests/ts.rs`, `tests/python.rs` and `tests/hale.rs` share, and
//! what the other crates' live tests share with them (the examples' and
//! the drivers' tests depend on it as a dev-dependency).
//!
//! - [`replay`]: a server that answers one witness wire record
//!   (`../shared/hale-witness/wire/`) over HTTP or a Unix socket and holds
//!   the request a client wrote to the record's, as values.
//! - The peers a client is checked with, found under the workspace's
//!   `.peers/` (`scripts/install-peers` puts them there): [`tsc`], [`node`],
//!   [`python`], [`mypy`]; and the workspace's [`hale`] binary.
//! - [`absent`]: the rule every peer test follows when a peer is missing.
//! - [`served`]: a served program's banner and endpoints, a workspace
//!   binary, and a peer script driven by a JSON plan and report.

pub mod replay;
pub mod served;

pub use served::{banner_endpoint, read_banner, report, spawn_plan, workspace_bin};

use std::path::{Path, PathBuf};

/// A peer a test needs is absent: skip with a message on stderr, unless
/// `LIMEN_REQUIRE_PEERS=1` (CI sets it) makes that a failure. The rule of
/// `drivers/tests/support` and the examples' tests, for this crate's tests.
pub fn absent(why: &str) {
    missing(
        why,
        "run scripts/install-peers",
        "scripts/install-peers installs it",
    );
}

/// [`absent`] with the remedy spelled for what is missing (`hint` after the
/// panic, `skip_hint` after the skip).
pub(crate) fn missing(why: &str, hint: &str, skip_hint: &str) {
    assert!(
        std::env::var("LIMEN_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{why} (LIMEN_REQUIRE_PEERS=1); {hint}"
    );
    eprintln!("skipped: {why}; {skip_hint}");
}

/// The workspace root, where `.peers/` is.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("clients/ sits in the workspace")
        .to_path_buf()
}

/// The reference fixtures, `../shared/hale-witness/` beside the checkout
/// (`program.hl`, the documents, `wire/`), or `None` after a skip message
/// when absent; under `LIMEN_REQUIRE_PEERS=1` their absence panics, since
/// CI runs with `shared/` beside the clone.
pub fn witness() -> Option<PathBuf> {
    let dir = root().join("../shared/hale-witness");
    if dir.join("wire").is_dir() {
        Some(dir)
    } else {
        missing(
            "../shared/hale-witness is absent",
            "the reference fixtures sit in shared/ beside the checkout",
            "the reference fixtures sit in shared/ beside the checkout",
        );
        None
    }
}

/// A peer under `.peers/` at `rel`, or `None` after [`absent`].
fn peer(rel: &str, what: &str) -> Option<PathBuf> {
    let path = root().join(".peers").join(rel);
    if path.is_file() {
        Some(path)
    } else {
        absent(&format!("{what} ({}) is absent", path.display()));
        None
    }
}

/// TypeScript's compiler, `tsc` 7 from npm (`.peers/node/node_modules/.bin/tsc`).
pub fn tsc() -> Option<PathBuf> {
    peer("node/node_modules/.bin/tsc", "TypeScript's tsc")
}

/// Node, the runtime the TypeScript clients run under: the `node` on the
/// PATH (install-peers installs npm packages for it, not Node itself).
/// Node 20 needs `--experimental-websocket` for a global `WebSocket`.
pub fn node() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("node"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        absent("node is not on the PATH");
    }
    found
}

/// The peers' Python, the venv's (`.peers/venv/bin/python`), which has mypy
/// and websockets beside the standard library.
pub fn python() -> Option<PathBuf> {
    peer("venv/bin/python", "the peers' Python venv")
}

/// mypy, in the peers' venv (`.peers/venv/bin/mypy`).
pub fn mypy() -> Option<PathBuf> {
    peer("venv/bin/mypy", "mypy")
}

/// The workspace's `hale` binary, beside the running test's
/// (`target/debug/hale`). Only `cargo test --workspace` (or a build of
/// limen-drivers) builds it: a test of this crate alone does not, so its
/// absence panics with the command that builds it.
pub fn hale() -> PathBuf {
    workspace_bin("hale")
}

// The TypeScript toolkit and its fixture Tool, compiled for the tests that
// run them (issue #30).
pub mod ts_toolkit;

pub use ts_toolkit::{run_tsc, ts_fixture_command, ts_toolkit};
