//! A served program started by a test (`hale serve`, `hale demo`): its
//! banner read, an exposure's endpoint found in it, and a peer script
//! that reads a JSON plan and prints a JSON report.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A binary of the workspace beside the running test's
/// (`target/debug/NAME`): `cargo test --workspace` builds them all; a test
/// of one crate alone does not, so its absence panics naming the command.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    // target/debug/deps/<test> -> target/debug
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from target/<profile>/deps");
    let bin = dir.join(name);
    assert!(
        bin.is_file(),
        "{} is not built: run `cargo build --workspace` (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// Reads `child`'s banner from its standard output up to its last line,
/// `stop with Ctrl-C`; a process that ends first fails the test with the
/// banner so far and its standard error, `who` naming it. The listeners
/// and the control socket are bound before that line is written.
pub fn read_banner(child: &mut Child, who: &str) -> String {
    let mut banner = String::new();
    let mut out = BufReader::new(child.stdout.take().expect("stdout piped"));
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("{who} ended at boot:\n{banner}\n{err}");
        }
        banner.push_str(&line);
        if line.starts_with("stop with Ctrl-C") {
            return banner;
        }
    }
}

/// The endpoint a banner prints for the exposure `name`: the line whose
/// identity ends `/<name>`, its second word (`http://127.0.0.1:PORT`,
/// `unix:PATH`, `ws://…`).
pub fn banner_endpoint(banner: &str, name: &str) -> String {
    banner
        .lines()
        .find(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|id| id.ends_with(&format!("/{name}")))
        })
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("no {name} in the banner:\n{banner}"))
        .to_owned()
}

/// Spawns a peer script that reads its plan as JSON on stdin and prints
/// one JSON report on stdout; the plan is written at once, so a test can
/// start several peers before it collects any with [`report`].
pub fn spawn_plan(command: &mut Command, plan: &serde_json::Value) -> Child {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the peer starts");
    child
        .stdin
        .take()
        .expect("stdin piped")
        .write_all(plan.to_string().as_bytes())
        .expect("the plan is written");
    child
}

/// Waits for a peer [`spawn_plan`] started and parses its report (its
/// stdout, or its last line when it printed more); a peer that printed none fails the test with both its
/// streams, `who` naming it.
pub fn report(child: Child, who: &str) -> serde_json::Value {
    let out = child.wait_with_output().expect("the peer ends");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .ok()
        .or_else(|| {
            text.lines()
                .last()
                .and_then(|l| serde_json::from_str(l.trim()).ok())
        })
        .unwrap_or_else(|| {
            panic!(
                "{who}: no report; stdout {text}, stderr {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}
