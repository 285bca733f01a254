//! `flow tools describe | check | call` and `flow toolkit rust | python`, run as a
//! user runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

const FLOW: &str = env!("CARGO_BIN_EXE_flow");
const ECHO: &str = env!("CARGO_BIN_EXE_tool-fixture-echo");
const ROGUE: &str = env!("CARGO_BIN_EXE_tool-fixture-rogue");
const TOOL: &str = "example.com/limen-fixtures@0.3.0/echo.flow";

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../toolkit/tests/fixtures"
    ))
}

fn listing() -> String {
    fixtures().join("listing.json").display().to_string()
}

fn flow(args: &[&str]) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(FLOW).args(args).output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

/// A folder holding a flow-tool.toml of `text`.
fn config(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("limen-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("flow-tool.toml");
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

fn echo_config() -> String {
    config(
        "echo",
        &format!("[tools.\"echo.flow\"]\ncommand = \"{ECHO}\"\n"),
    )
}

#[test]
fn describe_prints_the_implementations_describe_result() {
    let (code, out, _) = flow(&["tools", "describe", "--", ECHO]);
    assert_eq!(code, 0);
    let described: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(listing()).unwrap()).unwrap();
    assert_eq!(
        described, listed,
        "the toolkit describes the listing it was generated from"
    );
    let (code, _, err) = flow(&["tools", "describe", "--", "/nonexistent/tool"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "flow tools describe: the implementation could not be started: `/nonexistent/tool`: No \
         such file or directory (os error 2)\n"
    );
}

#[test]
fn check_prints_each_declaration_and_exits_one_when_a_run_would_be_refused() {
    let (code, out, _) = flow(&["tools", "check", "--listing", &listing()]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 9);
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "{TOOL}.echo: unbound: no host override, and repository example.com/limen-fixtures \
             has no flow-tool.toml"
        )
    );
    let file = echo_config();
    let (code, out, _) = flow(&["tools", "check", "--listing", &listing(), "--config", &file]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines().all(|l| l.contains(": bound to command")),
        "{out}"
    );
    // The host's override wins over the file.
    let bind = format!("{TOOL}.echo='{ROGUE}' --mismatch");
    let (code, out, _) = flow(&[
        "tools",
        "check",
        "--listing",
        &listing(),
        "--config",
        &file,
        "--bind",
        &bind,
    ]);
    assert_eq!(code, 1);
    assert!(
        out.lines().next().unwrap().starts_with(&format!(
            "{TOOL}.echo: mismatch: bound to command `'{ROGUE}' --mismatch` (the host's override), \
             whose describe lists fingerprint sha256:abab"
        )),
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.contains(": bound to command") && !l.contains("mismatch"))
            .count(),
        8
    );
}

#[test]
fn a_configuration_error_refuses_the_run_naming_file_table_and_key() {
    let file = config(
        "bad",
        "[tools.\"echo.flow\"]\ncommand = \"x\"\nmpc = \"y\"\n",
    );
    let (code, out, err) = flow(&["tools", "check", "--listing", &listing(), "--config", &file]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "flow tools check: the run is refused: {file}: [tools.\"echo.flow\"]: unknown key \
             `mpc`: a table names exactly one of `command` or `mcp`\n"
        )
    );
}

fn call(tool: &str, args: &str, extra: &[&str]) -> (i32, String, String) {
    let tool = format!("{TOOL}.{tool}");
    let listing = listing();
    let mut argv = vec![
        "tools",
        "call",
        "--listing",
        &listing,
        "--tool",
        &tool,
        "--args",
        args,
    ];
    argv.extend_from_slice(extra);
    flow(&argv)
}

#[test]
fn call_prints_the_outcome_and_exits_by_its_kind() {
    let file = echo_config();
    let cfg = ["--config", file.as_str()];
    assert_eq!(call("echo", r#"{"text":"hi"}"#, &cfg).0, 0);
    assert_eq!(
        call("echo", r#"{"text":"hi"}"#, &cfg).1,
        "{\"Ok\":\"hi\"}\n"
    );
    let (code, out, _) = call("fail", r#"{"reason":"no"}"#, &cfg);
    assert_eq!(
        (code, out.as_str()),
        (1, "{\"Failed\":{\"Refused\":\"no\"}}\n")
    );
    let (code, out, err) = call("crash", r#"{"how":"panic"}"#, &cfg);
    assert_eq!(
        (code, out.as_str()),
        (
            3,
            "{\"Unknown\":\"the Tool's code panicked: asked to panic\"}\n"
        )
    );
    assert!(
        err.contains("asked to panic"),
        "the process's stderr is relayed: {err}"
    );
    let rogue = format!("{TOOL}.echo={ROGUE}");
    let bind = ["--bind", rogue.as_str()];
    let (code, out, _) = call("echo", r#"{"text":"notrun"}"#, &bind);
    assert_eq!(
        (code, out.as_str()),
        (2, "{\"NotRun\":\"asked not to run\"}\n")
    );
    let bind_small = ["--bind", rogue.as_str(), "--max-reply", "40000"];
    let (code, out, _) = call("echo", r#"{"text":"big:100000"}"#, &bind_small);
    assert_eq!(code, 4);
    assert_eq!(
        out,
        "{\"BadReply\":\"the reply is 100104 bytes, over the host's limit of 40000 bytes\"}\n"
    );
    let (code, out, err) = call("echo", r#"{"text":1}"#, &cfg);
    assert_eq!((code, out.as_str()), (5, ""));
    assert_eq!(
        err,
        "flow tools call: the run is refused: the args do not decode: the argument `text` does \
         not decode: $: expected Text, found 1\n"
    );
    let (code, _, err) = call("echo", r#"{"text":"x"}"#, &[]);
    assert_eq!(code, 5);
    assert_eq!(
        err,
        format!(
            "flow tools call: the run is refused: the run is refused: 1 of 1 declarations is not \
             bound\n  {TOOL}.echo: unbound: no host override, and repository \
             example.com/limen-fixtures has no flow-tool.toml\n"
        )
    );
    assert_eq!(flow(&["tools", "call", "--listing"]).0, 64);
}

#[test]
fn toolkit_rust_writes_the_generated_code() {
    let (code, out, _) = flow(&["toolkit", "rust", &listing()]);
    assert_eq!(code, 0);
    let golden = std::fs::read_to_string(fixtures().join("tools.rs")).unwrap();
    assert_eq!(out, golden);
}

#[test]
fn toolkit_python_writes_the_generated_code() {
    let (code, out, _) = flow(&["toolkit", "python", &listing()]);
    assert_eq!(code, 0);
    let golden = std::fs::read_to_string(
        fixtures().join("../../../toolkits/python/tests/fixture/echo_tools.py"),
    )
    .unwrap();
    assert_eq!(out, golden);
}

#[test]
fn toolkit_typescript_writes_the_generated_code() {
    let (code, out, _) = flow(&["toolkit", "typescript", &listing()]);
    assert_eq!(code, 0);
    let golden = std::fs::read_to_string(
        fixtures().join("../../../toolkits/typescript/test/fixture/echo-tools.ts"),
    )
    .unwrap();
    assert_eq!(out, golden);
}
