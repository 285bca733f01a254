//! `hale` and `flow` as a user first meets them: every command's `--help`
//! on stdout with exit 0, `--version`, completion scripts, and usage errors
//! that name the flag, show the command's usage line, and exit with the
//! status each command fixes.

use std::process::{Command, Stdio};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(bin: &str, args: &[&str]) -> Run {
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const HALE: &str = env!("CARGO_BIN_EXE_hale");
const FLOW: &str = env!("CARGO_BIN_EXE_flow");

/// Every command of each binary, as the words that name it.
const HALE_COMMANDS: &[&[&str]] = &[
    &[],
    &["check"],
    &["demo"],
    &["api"],
    &["api", "export"],
    &["api", "describe"],
    &["api", "call"],
    &["describe"],
    &["call"],
    &["mcp"],
    &["completions"],
];
const FLOW_COMMANDS: &[&[&str]] = &[
    &[],
    &["canon"],
    &["fingerprint"],
    &["tools"],
    &["tools", "describe"],
    &["tools", "check"],
    &["tools", "call"],
    &["toolkit"],
    &["toolkit", "rust"],
    &["completions"],
];

#[test]
fn every_command_answers_help_on_stdout() {
    for (bin, name, commands) in [(HALE, "hale", HALE_COMMANDS), (FLOW, "flow", FLOW_COMMANDS)] {
        for words in commands {
            for help in ["--help", "-h"] {
                let mut args = words.to_vec();
                args.push(help);
                let r = run(bin, &args);
                assert_eq!(r.code, 0, "{name} {args:?}: {}", r.stderr);
                assert!(r.stderr.is_empty(), "{name} {args:?}: {}", r.stderr);
                let usage = format!("Usage: {name}");
                let line = if words.is_empty() {
                    usage
                } else {
                    format!("{usage} {}", words.join(" "))
                };
                assert!(r.stdout.contains(&line), "{name} {args:?}:\n{}", r.stdout);
            }
        }
    }
}

#[test]
fn help_names_the_flags_a_command_takes() {
    let r = run(HALE, &["demo", "--help"]);
    for flag in [
        "--public",
        "--partner",
        "--admin-socket",
        "--mcp",
        "--operator",
        "--bound",
        "--loops",
        "--control",
        "--record",
    ] {
        assert!(r.stdout.contains(flag), "{flag}:\n{}", r.stdout);
    }
    let r = run(HALE, &["api", "call", "--help"]);
    for flag in [
        "--json",
        "--bearer",
        "--id",
        "--digest",
        "--raw",
        "--FIELD VALUE",
    ] {
        assert!(r.stdout.contains(flag), "{flag}:\n{}", r.stdout);
    }
    assert!(r.stdout.contains("5 usage"), "{}", r.stdout);
    let r = run(FLOW, &["canon", "--help"]);
    for flag in ["--schema", "--max-bytes", "--max-collection-len"] {
        assert!(r.stdout.contains(flag), "{flag}:\n{}", r.stdout);
    }
    // Help after the positional arguments is help too.
    let r = run(HALE, &["api", "call", "unix:/nowhere", "A::b", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Usage: hale api call"), "{}", r.stdout);
}

#[test]
fn both_binaries_have_a_version() {
    let version = env!("CARGO_PKG_VERSION");
    let r = run(HALE, &["--version"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, format!("hale {version}+limen\n").as_str())
    );
    let r = run(FLOW, &["--version"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, format!("flow {version}\n").as_str())
    );
    assert_eq!(run(HALE, &["-V"]).stdout, run(HALE, &["--version"]).stdout);
}

#[test]
fn completion_scripts_for_three_shells() {
    for (bin, name) in [(HALE, "hale"), (FLOW, "flow")] {
        for (shell, marker) in [
            ("bash", format!("complete -F _{name}")),
            ("zsh", format!("#compdef {name}")),
            ("fish", format!("complete -c {name}")),
        ] {
            let r = run(bin, &["completions", shell]);
            assert_eq!(r.code, 0, "{name} {shell}: {}", r.stderr);
            assert!(r.stdout.contains(&marker), "{name} {shell}:\n{}", r.stdout);
        }
        let r = run(bin, &["completions", "tcsh"]);
        assert_ne!(r.code, 0);
        assert!(r.stderr.contains("'tcsh'"), "{}", r.stderr);
    }
    // The scripts know the subcommands and their flags.
    let bash = run(HALE, &["completions", "bash"]).stdout;
    for word in ["demo", "export", "--loops", "--surface", "--json-schema"] {
        assert!(bash.contains(word), "{word}");
    }
    let fish = run(FLOW, &["completions", "fish"]).stdout;
    for word in ["canon", "fingerprint", "max-bytes", "listing"] {
        assert!(fish.contains(word), "{word}");
    }
}

/// Runs `bin args` with its stdout closed before it writes, and holds that
/// it ends with status 0 and no panic.
fn ends_quietly_on_a_closed_pipe(bin: &str, args: &[&str]) {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{bin} {args:?}: {stderr}");
    assert_eq!(out.status.code(), Some(0), "{bin} {args:?}: {stderr}");
}

#[test]
fn a_completion_script_read_in_part_ends_quietly() {
    // `hale completions bash | head -c0`: the reader closes the pipe
    // before the script is written (the pipe's buffer would hold it all
    // otherwise); the writer must not panic on the broken pipe.
    for bin in [HALE, FLOW] {
        ends_quietly_on_a_closed_pipe(bin, &["completions", "bash"]);
    }
}

#[test]
fn a_document_read_in_part_ends_quietly() {
    // `hale check --api … | head -c0`: a reader that closed the pipe has
    // read all it wanted; the writer ends with status 0, not a panic.
    let program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/program.hl"
    );
    if !std::path::Path::new(program).exists() {
        eprintln!("skipped: the witness fixtures are absent");
        return;
    }
    for args in [
        &["check", "--api", program][..],
        &[
            "check",
            "--api",
            "--surface",
            "Public",
            "--openapi",
            program,
        ][..],
    ] {
        ends_quietly_on_a_closed_pipe(HALE, args);
    }
}

/// A usage error: its exit status, the flag named, the command's usage
/// line, nothing on stdout.
fn refused(bin: &str, args: &[&str], code: i32, names: &str, usage: &str) {
    let r = run(bin, args);
    assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    assert!(
        r.stderr.contains(names),
        "{args:?} names {names}:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(usage),
        "{args:?} shows {usage}:\n{}",
        r.stderr
    );
}

#[test]
fn usage_errors_name_the_flag_and_the_command_s_usage() {
    refused(HALE, &["demo", "--nope"], 5, "'--nope'", "Usage: hale demo");
    refused(
        HALE,
        &["demo", "--loops", "0"],
        5,
        "--loops",
        "Usage: hale demo",
    );
    refused(
        HALE,
        &["demo", "--loops", "x"],
        5,
        "from 1 to 1024",
        "Usage: hale demo",
    );
    refused(
        HALE,
        &["demo", "--operator", "root"],
        5,
        "uid:<n>",
        "Usage: hale demo",
    );
    refused(HALE, &["demo", "--bound"], 5, "--bound", "Usage: hale demo");
    refused(
        HALE,
        &["check", "--surface", "S", "--mcp", "x.hl"],
        5,
        "--api",
        "Usage: hale check",
    );
    refused(
        HALE,
        &["check", "--api", "--api", "x.hl"],
        5,
        "--api",
        "Usage: hale check",
    );
    refused(
        HALE,
        &["api", "export", "--surface", "S", "x.hl"],
        5,
        "--out",
        "Usage: hale api export",
    );
    refused(
        HALE,
        &["api", "describe", "unix:/x", "--nope"],
        5,
        "'--nope'",
        "Usage: hale api describe",
    );
    refused(
        HALE,
        &["api", "describe", "nonsense"],
        5,
        "unix:<path>",
        "Usage: hale api describe",
    );
    refused(
        HALE,
        &["call", "unix:/x"],
        5,
        "<MEMBER>",
        "Usage: hale call",
    );
    refused(HALE, &["api", "frob"], 5, "'frob'", "Usage: hale api");
    refused(HALE, &["mcp", "--app"], 5, "--app", "Usage: hale mcp");
    refused(
        HALE,
        &["mcp", "--app", "ws://h:1/x"],
        5,
        "mcp://host:port",
        "Usage: hale mcp",
    );
    refused(FLOW, &["canon"], 2, "--schema", "Usage: flow canon");
    refused(
        FLOW,
        &["canon", "--schema"],
        2,
        "--schema",
        "Usage: flow canon",
    );
    refused(
        FLOW,
        &["canon", "--schema", "s.json", "--max-bytes", "x"],
        2,
        "--max-bytes",
        "Usage: flow canon",
    );
    refused(
        FLOW,
        &["canon", "--schema", "/nonexistent/s.json"],
        2,
        "/nonexistent/s.json",
        "Usage: flow canon",
    );
    refused(
        FLOW,
        &["fingerprint"],
        2,
        "<LISTING>",
        "Usage: flow fingerprint",
    );
    refused(FLOW, &["frob"], 2, "'frob'", "Usage: flow");
    refused(
        FLOW,
        &["tools", "call", "--listing", "l.json"],
        64,
        "--tool",
        "Usage: flow tools call",
    );
    refused(
        FLOW,
        &["tools", "check", "--bind", "x"],
        64,
        "IDENTITY=CMD",
        "Usage: flow tools check",
    );
    refused(
        FLOW,
        &["tools", "describe"],
        64,
        "<CMD>",
        "Usage: flow tools describe",
    );
    refused(
        FLOW,
        &["toolkit", "rust"],
        64,
        "<LISTING>",
        "Usage: flow toolkit rust",
    );
    refused(
        FLOW,
        &["toolkit", "go", "l.json"],
        64,
        "'go'",
        "Usage: flow toolkit",
    );
}

#[test]
fn no_command_is_a_usage_error() {
    let r = run(HALE, &[]);
    assert_eq!(r.code, 5);
    assert!(r.stderr.contains("Usage: hale"), "{}", r.stderr);
    let r = run(FLOW, &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("Usage: flow"), "{}", r.stderr);
}
