//! The gRPC transport under attack (issue 26), live: `hale demo --grpc`
//! run as a process and attacked with raw HTTP/2 frames by
//! `drivers/tests/peer/grpc_attack.py` (hpack, h2's decoder, reads the
//! answers), each attack bounded in size and followed by a good call that
//! must still be answered. Memory is read as the demo's peak RSS (VmHWM),
//! before and after: a bound in bytes, not in time. The deadlines of idle
//! streams and connections are held on the virtual clock in
//! `grpc/tests/front.rs`; here only the preface's, short enough to wait.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

mod support;

use support::{grpc_demo, report, root, spawn_plan, venv_python, Demo};

const MIB: u64 = 1 << 20;

fn attack_peer() -> Option<PathBuf> {
    venv_python("h2, hpack", "h2 and hpack")
}

fn attack(python: &PathBuf, d: &Demo, mut plan: Value) -> Value {
    plan["target"] = json!(d.grpc);
    let script = root().join("drivers/tests/peer/grpc_attack.py");
    let child = spawn_plan(Command::new(python).arg(script), &plan);
    report(child, "grpc_attack.py")
}

/// The demo's peak resident set, in bytes.
fn peak_rss(d: &Demo) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn an_hpack_bomb_is_refused_resource_exhausted_and_memory_stays_flat() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-bomb", &[]);
    let before = peak_rss(&d);
    // 131 KB of HEADERS and CONTINUATION, 511 MB of header list decoded.
    let got = attack(
        &python,
        &d,
        json!({"scenario": "bomb", "end_headers": true}),
    );
    let grown = peak_rss(&d).saturating_sub(before);
    assert!(grown < 32 * MIB, "grew {grown} bytes: {got}");
    // RESOURCE_EXHAUSTED, then RST_STREAM(NO_ERROR): the request had not
    // ended (RFC 9113 § 8.1).
    assert_eq!(got["status"], 8, "{got}");
    assert_eq!(got["reset"], 0, "{got}");
    // The connection goes on, and so do the others.
    assert_eq!(got["same_connection"], 0, "{got}");
    assert_eq!(got["good"], 0, "{got}");
}

#[test]
fn an_hpack_bomb_left_without_end_headers_holds_no_memory() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-bomb-open", &[]);
    let before = peak_rss(&d);
    let got = attack(
        &python,
        &d,
        json!({"scenario": "bomb", "end_headers": false}),
    );
    let grown = peak_rss(&d).saturating_sub(before);
    assert!(grown < 32 * MIB, "grew {grown} bytes: {got}");
    assert_eq!(got["beside"], 0, "{got}");
    assert_eq!(got["good"], 0, "{got}");
}

#[test]
fn partial_messages_on_500_streams_stop_at_the_connections_budget() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-partial", &[]);
    let before = peak_rss(&d);
    // 500 streams, each 64 KiB into a message of 1 MiB: 32 MiB sent.
    let got = attack(
        &python,
        &d,
        json!({"scenario": "partial", "streams": 500, "size": 65536}),
    );
    let grown = peak_rss(&d).saturating_sub(before);
    // The budget (GrpcLimits::max_buffered, 4 MiB) and the buffers
    // around it, far under the 32 MiB sent.
    assert!(grown < 16 * MIB, "grew {grown} bytes: {got}");
    assert!(got["refused"].as_u64().unwrap() > 0, "{got}");
    assert_eq!(got["statuses"], json!([8]), "RESOURCE_EXHAUSTED: {got}");
    // A call on another connection is served.
    assert_eq!(got["good"], 0, "{got}");
}

#[test]
fn a_window_update_flood_is_goaway_enhance_your_calm() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-flood", &[]);
    let got = attack(&python, &d, json!({"scenario": "flood", "frames": 200_000}));
    assert_eq!(got["goaway"], 0xb, "ENHANCE_YOUR_CALM: {got}");
    assert_eq!(got["good"], 0, "{got}");
}

#[test]
fn data_after_an_early_answer_is_stopped_by_rst_stream_no_error() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-after", &[]);
    // message_too_large from the prefix alone, the body never ended.
    let got = attack(&python, &d, json!({"scenario": "after_answer"}));
    assert_eq!(got["status"], 3, "{got}");
    assert_eq!(got["ended"], true, "{got}");
    assert_eq!(got["reset"], 0, "RST_STREAM(NO_ERROR): {got}");
    assert_eq!(got["same_connection"], 0, "{got}");
}

#[test]
fn the_server_speaks_first_its_settings() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-first", &[]);
    // A client that waits for the server's preface before its own.
    let got = attack(&python, &d, json!({"scenario": "server_first"}));
    assert_eq!(got["first"], json!([4, 0, 0]), "SETTINGS: {got}");
}

#[test]
fn a_connection_that_never_finishes_its_preface_is_closed() {
    let Some(python) = attack_peer() else { return };
    let d = grpc_demo("grpc-preface", &[]);
    // GrpcLimits::preface is 5 s; 60 s is only the hang guard.
    let got = attack(
        &python,
        &d,
        json!({"scenario": "preface_deadline", "limit": 60}),
    );
    assert_eq!(got["closed"], true, "{got}");
}
