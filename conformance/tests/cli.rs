//! `limen-conformance`'s command line, read by clap: `--help` on every
//! command and `--version` answer on stdout with exit 0 and name the
//! flags; an unknown flag, a bad value or a missing one is a usage error
//! on stderr with the command's usage line, exit 2; a flag given twice
//! takes its last value, as before.

mod common;

use common::*;

/// Each command and the flags its help must name.
const COMMANDS: [(&str, &[&str]); 3] = [
    ("replay", &["--corpus", "--scenarios", "--feed"]),
    (
        "check",
        &[
            "--endpoint",
            "--transport",
            "--bearer",
            "--corpus",
            "--scenarios",
            "--control",
            "--exposure",
            "--with",
            "--as-peer",
            "--settle",
            "--timeout",
            "--max-wait",
        ],
    ),
    ("compare", &["--corpus", "--reference"]),
];

#[test]
fn every_command_answers_help_naming_its_flags_and_exit_statuses() {
    for (command, flags) in COMMANDS {
        for help in [
            vec![command, "--help"],
            vec![command, "-h"],
            vec!["help", command],
        ] {
            let (code, out, err) = run(&help);
            assert_eq!(code, 0, "{help:?}: {err}");
            assert!(err.is_empty(), "{help:?}: {err}");
            assert!(
                out.contains(&format!("Usage: limen-conformance {command}")),
                "{help:?}: {out}"
            );
            for flag in flags {
                assert!(out.contains(flag), "{help:?} names {flag}: {out}");
            }
            assert!(
                out.contains("Exit status: 0 nothing failed, 1 something failed, 2 usage"),
                "{help:?}: {out}"
            );
        }
    }
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for (command, _) in COMMANDS {
        assert!(out.contains(command), "{out}");
    }
    assert!(out.contains("--version"), "{out}");
}

#[test]
fn version_prints_the_crate_version() {
    for flag in ["--version", "-V"] {
        let (code, out, err) = run(&[flag]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!("limen-conformance {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn an_unknown_flag_is_a_usage_error_with_exit_2() {
    for (command, _) in COMMANDS {
        let (code, out, err) = run(&[command, "--bogus"]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.starts_with("error: unexpected argument '--bogus' found"),
            "{command}: {err}"
        );
        assert!(
            err.contains(&format!("Usage: limen-conformance {command}")),
            "{command}: {err}"
        );
    }
    let (code, _, err) = run(&["bogus"]);
    assert_eq!(code, 2);
    assert!(err.contains("unrecognized subcommand 'bogus'"), "{err}");
    let (code, _, err) = run(&["replay", "--feed", "halves"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'halves' for '--feed"), "{err}");
    let (code, _, err) = run(&["check", "--transport", "http"]);
    assert_eq!(code, 2);
    assert!(err.contains("--endpoint <URL>"), "{err}");
    let (code, _, err) = run(&[
        "check",
        "--endpoint",
        "x",
        "--transport",
        "http",
        "--settle",
        "soon",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value 'soon' for '--settle <MS>'"),
        "{err}"
    );
}

/// What is read after clap keeps its words: a transport that does not
/// speak to the endpoint, named with the check's usage line.
#[test]
fn a_transport_that_does_not_speak_to_the_endpoint_is_a_usage_error() {
    let (code, _, err) = run(&[
        "check",
        "--endpoint",
        "unix:/nonexistent/limen.sock",
        "--transport",
        "http",
        "--as-peer",
        "-1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error: --transport http does not speak to unix:/nonexistent/limen.sock"),
        "{err}"
    );
    assert!(err.contains("Usage: limen-conformance check"), "{err}");
    let (code, _, err) = run(&[
        "check",
        "--endpoint",
        "http://127.0.0.1:1",
        "--transport",
        "carrier-pigeon",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--transport unix|http|mcp|grpc|ws, not `carrier-pigeon`"),
        "{err}"
    );
}

#[test]
fn a_flag_given_twice_takes_its_last_value() {
    let (code, _, err) = run(&[
        "compare",
        "--corpus",
        "/nonexistent/first",
        "--corpus",
        "/nonexistent/second",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/second"), "{err}");
    assert!(!err.contains("/nonexistent/first"), "{err}");
}
