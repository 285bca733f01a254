//! `hale serve` of the witness program with its receivers answered by
//! `examples/witness/python/handlers.py`: the witness's handlers written
//! in Python with limen-toolkit (toolkits/python), one process per
//! instance, configured by the committed `python/serve.toml`, and held to
//! the corpus by `limen-conformance check` as `serve.rs` holds
//! `witness-tool` (the same checks: `support`).
//!
//! Also: each instance's process answers describe and a run of calls
//! (the violations, the declared errors, Ints past 64 bits) byte for
//! byte as `witness-tool` does; the committed listings are what `hale api tools` writes today,
//! and the committed Python modules what `flow toolkit python` generates
//! from them (`LIMEN_BLESS=1` writes both again).
//!
//! Without `python3` (3.10 or later) on the PATH the served tests skip
//! (`LIMEN_REQUIRE_PEERS=1` fails instead).

mod support;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
        .args(["--strict", "--no-incremental", "--python-version", "3.10"])
        .args(["handlers.py", "witness.py"])
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

/// One Tool process, driven line by line: each request written, its one
/// answer read.
struct Tool {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl Tool {
    fn start(mut command: Command) -> Tool {
        let mut child = command
            .env_remove("HALE_CONTROL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the Tool process starts");
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        Tool { child, out }
    }

    fn ask(&mut self, line: &str) -> String {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        self.out.read_line(&mut answer).unwrap();
        answer
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A call as the host writes it.
fn call_line(n: usize, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"c{n}","tool":"hale.api@0/{tool}","args":{args}}}}}"#
    )
}

#[test]
fn the_python_handlers_answer_each_call_as_witness_tool_does() {
    if !python3() {
        return;
    }
    let ctx = r#"{"caller":{"mode":"bearer","name":"alice"},"request_id":1,"via":"http","role":"trader"}"#;
    let place = |qty: &str, limit: &str| {
        (
            "Orders.place",
            format!(r#"{{"o":{{"symbol":"ACME","qty":{qty},"limit":{limit}}}}}"#),
        )
    };
    let cancel = |order: &str| {
        (
            "Orders.cancel",
            format!(r#"{{"c":{{"order":{order}}},"ctx":{ctx}}}"#),
        )
    };
    let orders = vec![
        cancel("41"),
        place("10", "12500"),
        place("10000", "1"),
        place("10001", "1"),
        // The notional past 64 bits; an Int past 64 bits, read as 0.
        place("2", "9223372036854775807"),
        place("18446744073709551616", "5"),
        cancel("41"),
        cancel("40"),
        cancel("43"),
        cancel("44"),
        cancel("-99999999999999999999"),
    ];
    let rebalance = |book: &str| {
        (
            "Ledger.rebalance",
            format!(r#"{{"r":{{"book":"{book}"}}}}"#),
        )
    };
    let ledger = vec![rebalance("desk"), rebalance(""), rebalance("desk")];
    for (instance, calls) in [
        ("orders", &orders),
        ("partner_orders", &orders),
        ("ledger", &ledger),
    ] {
        let mut rust = Command::new(env!("CARGO_BIN_EXE_witness-tool"));
        rust.args(["--instance", instance]);
        let mut python = Command::new("python3");
        python
            .args(["handlers.py", "--instance", instance])
            .env("PYTHONPATH", here().join("../../../toolkits/python/src"))
            .current_dir(here());
        let (mut rust, mut python) = (Tool::start(rust), Tool::start(python));
        let describe = r#"{"jsonrpc":"2.0","id":1,"method":"describe","params":{}}"#;
        assert_eq!(
            python.ask(describe),
            rust.ask(describe),
            "{instance}: describe"
        );
        for (n, (tool, args)) in calls.iter().enumerate() {
            let line = call_line(n, tool, args);
            let want = rust.ask(&line);
            assert!(want.contains(r#""outcome""#), "{instance}: {line}: {want}");
            assert_eq!(python.ask(&line), want, "{instance}: {line}");
        }
    }
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
