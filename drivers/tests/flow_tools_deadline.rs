//! `flow tools call`'s call deadline (`--timeout`), run as a user runs it
//! against the rogue fixture: a Tool that holds a call, and one that never
//! ends its reply line. Each run is held to a hang guard, so a host with no
//! deadline fails here instead of hanging the suite.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FLOW: &str = env!("CARGO_BIN_EXE_flow");
const ROGUE: &str = env!("CARGO_BIN_EXE_tool-fixture-rogue");
const TOOL: &str = "example.com/limen-fixtures@0.3.0/echo.flow.echo";
/// Far past any deadline these tests set: a run still going then hangs.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn listing() -> String {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../toolkit/tests/fixtures/listing.json"
    ))
    .display()
    .to_string()
}

/// `flow ARGS`: its exit status, stdout and stderr; killed and failed at
/// the hang guard.
fn flow(args: &[&str]) -> (i32, String, String) {
    let mut child = Command::new(FLOW)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "flow {args:?} was still waiting after {HANG_GUARD:?}: the call has no \
                 deadline (stderr: {})",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // A hang guard's poll, not a synchronization.
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn call(text: &str, extra: &[&str]) -> (i32, String, String) {
    let listing = listing();
    let bind = format!("{TOOL}={ROGUE}");
    let args = format!("{{\"text\":\"{text}\"}}");
    let mut argv = vec![
        "tools",
        "call",
        "--listing",
        &listing,
        "--tool",
        TOOL,
        "--args",
        &args,
        "--bind",
        &bind,
    ];
    argv.extend_from_slice(extra);
    flow(&argv)
}

/// What a call past its deadline prints: the outcome Unknown, and on
/// stderr the Tool, the method and the deadline.
fn assert_past_deadline((code, out, err): (i32, String, String), said: &str) {
    let why = format!(
        "{TOOL} did not reply to `call` within {said} (the call deadline): a cancel was sent, \
         and whether the call happened is not known"
    );
    assert_eq!(code, 3, "Unknown's exit status; stderr: {err}");
    let outcome: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(outcome, serde_json::json!({ "Unknown": why }));
    assert!(
        err.starts_with(&format!("flow tools call: {why}\n")),
        "stderr names the Tool, the method and the deadline: {err}"
    );
}

#[test]
fn a_call_the_tool_holds_is_cancelled_at_the_deadline() {
    assert_past_deadline(call("hold", &["--timeout", "1s"]), "1 s");
}

#[test]
fn a_reply_line_never_ended_is_given_up_at_the_deadline() {
    assert_past_deadline(call("half", &["--timeout", "700ms"]), "700 ms");
}

#[test]
fn a_call_answered_in_time_is_untouched_by_the_deadline() {
    let (code, out, err) = call("quick", &["--timeout", "30s"]);
    assert_eq!((code, out.as_str()), (0, "{\"Ok\":\"quick\"}\n"), "{err}");
}

#[test]
fn the_deadline_and_its_default_are_in_the_help() {
    let (code, out, _) = flow(&["tools", "call", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--timeout <DURATION>"), "{out}");
    assert!(out.contains("[default: 60s]"), "{out}");
    assert!(
        out.contains("3 Unknown (a call past its deadline among them)"),
        "{out}"
    );
    for bad in ["0s", "soon", "5 s", "1.5s"] {
        let (code, _, err) = call("quick", &["--timeout", bad]);
        assert_eq!(code, 64, "--timeout {bad}: {err}");
        assert!(err.contains("--timeout"), "{err}");
    }
}

/// A host that reads its process's output on its own thread
/// (`Process::queued`) sees a call closed at its deadline in the wait
/// under way, not when that wait's own time is up.
#[test]
fn a_queued_wait_sees_the_call_closed_at_its_deadline() {
    use limen_core::flow::tool::{Call, CallKey, HostConn, Limits, Listing, Outcome};
    use limen_core::flow::Value;
    use limen_drivers::tool::{Process, Spawn};

    let listing = Listing::parse(&std::fs::read(listing()).unwrap()).unwrap();
    let tool = listing
        .tools
        .iter()
        .find(|t| t.identity().to_string() == TOOL)
        .unwrap()
        .clone();
    let limits = Limits {
        call_timeout: 300_000_000,
        ..Limits::default()
    };
    let process = Process::queued(Spawn::new(ROGUE, &[]), Box::new(HostConn::new(limits)));
    process
        .send(Call {
            key: CallKey::new("run-q", "held"),
            tool,
            args: vec![Value::text("hold")],
            type_args: Vec::new(),
        })
        .unwrap();
    let mut got = Vec::new();
    // One wait, far longer than the deadline: it ends with the outcome,
    // long before its own end (the guard is 200 times the deadline).
    let start = Instant::now();
    let n = process.wait(&mut got, HANG_GUARD);
    assert!(
        start.elapsed() < HANG_GUARD / 2,
        "the wait ran {:?}: the closed call waited for the wait's end",
        start.elapsed()
    );
    assert_eq!(n, 1, "{got:?}");
    let Outcome::Unknown(why) = &got[0].1 else {
        panic!("{got:?}")
    };
    assert!(why.contains("within 300 ms (the call deadline)"), "{why}");
    process.shutdown();
}
