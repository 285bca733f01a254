//! A test fixture, not a tool to ship: a Tool process that breaks the
//! protocol on request, to hold the host to its rules.
//!
//! It describes the fixture listing (`toolkit/tests/fixtures/listing.json`)
//! and answers calls to `echo.flow.echo` by the command in `text`:
//!
//! - `hold`: no reply yet; `flush` replies to every held call, last first,
//!   then to itself (replies out of order);
//! - `half`: begins a reply line and never ends it (no newline, ever);
//! - `twice`: replies twice; `stranger`: replies, and replies for a call
//!   that was never made; `garbage`: a line that is not JSON, then a reply;
//! - `big:N`: replies Ok with a text of N bytes;
//! - `crash`: exits at once, leaving held calls out; `stall`: stops reading
//!   its input, waits 300 ms, then exits;
//! - `seen`: replies Ok with the keys of every call this incarnation and
//!   the ones before it received, `run/call` joined by `,`;
//! - `notrun`: replies NotRun;
//! - anything else: replies Ok with the text.
//!
//! Every `cancel` it reads is written to standard error as
//! `rogue: cancel RUN/CALL`.
//!
//! Flags change its describe: `--major N` (data version `N.0`),
//! `--mismatch` (echo listed with another fingerprint), and, from the
//! second start on (counted in the file named by `--state FILE`):
//! `--restart-drops` (echo no longer listed), `--restart-major N`,
//! `--restart-dies` (exits before describing).
#![forbid(unsafe_code)]

use std::io::{BufRead, Write};

const LISTING: &str = include_str!("../../../toolkit/tests/fixtures/listing.json");
const ECHO: &str = "example.com/limen-fixtures@0.3.0/echo.flow.echo";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let state = value("--state");
    let mut start = 1;
    let mut seen_before = String::new();
    if let Some(path) = &state {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let mut lines = old.lines();
        start = lines
            .next()
            .and_then(|l| l.parse::<u32>().ok())
            .unwrap_or(0)
            + 1;
        seen_before = lines.next().unwrap_or("").to_owned();
    }
    let save = |start: u32, seen: &str| {
        if let Some(path) = &state {
            let _ = std::fs::write(path, format!("{start}\n{seen}\n"));
        }
    };
    save(start, &seen_before);
    eprintln!("rogue: start {start}");
    let restarted = start > 1;
    let mut listing: serde_json::Value = serde_json::from_str(LISTING).expect("the listing");
    if let Some(major) = value("--major") {
        listing["data"] = format!("{major}.0").into();
    }
    if restarted {
        if let Some(major) = value("--restart-major") {
            listing["data"] = format!("{major}.0").into();
        }
    }
    let tools = listing["tools"].as_array_mut().expect("tools");
    if flag("--mismatch") {
        for t in tools.iter_mut() {
            if t["tool"] == ECHO {
                t["fingerprint"] = format!("sha256:{}", "ab".repeat(32)).into();
            }
        }
    }
    if restarted && flag("--restart-drops") {
        tools.retain(|t| t["tool"] != ECHO);
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut held: Vec<(String, String)> = Vec::new();
    let mut seen = seen_before;
    let reply = |out: &mut std::io::Stdout, run: &str, call: &str, outcome: serde_json::Value| {
        let line = serde_json::json!({"jsonrpc": "2.0", "method": "reply",
            "params": {"runId": run, "callId": call, "outcome": outcome}});
        let _ = writeln!(out, "{line}");
    };
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if msg["method"] == "describe" {
            if restarted && flag("--restart-dies") {
                std::process::exit(4);
            }
            let response =
                serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": listing});
            let _ = writeln!(out, "{response}");
            let _ = out.flush();
            continue;
        }
        if msg["method"] == "cancel" {
            let p = &msg["params"];
            eprintln!(
                "rogue: cancel {}/{}",
                p["runId"].as_str().unwrap_or(""),
                p["callId"].as_str().unwrap_or("")
            );
            continue;
        }
        if msg["method"] != "call" {
            continue;
        }
        let p = &msg["params"];
        let (run, call) = (
            p["runId"].as_str().unwrap_or("").to_owned(),
            p["callId"].as_str().unwrap_or("").to_owned(),
        );
        if !seen.is_empty() {
            seen.push(',');
        }
        seen.push_str(&format!("{run}/{call}"));
        save(start, &seen);
        let text = p["args"]["text"].as_str().unwrap_or("").to_owned();
        match text.as_str() {
            "hold" => held.push((run, call)),
            "half" => {
                let _ = write!(
                    out,
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{{\"runId\":\"{run}\","
                );
            }
            "flush" => {
                for (r, c) in held.drain(..).rev() {
                    reply(
                        &mut out,
                        &r,
                        &c,
                        serde_json::json!({"Ok": format!("held {c}")}),
                    );
                }
                reply(&mut out, &run, &call, serde_json::json!({"Ok": "flushed"}));
            }
            "twice" => {
                reply(&mut out, &run, &call, serde_json::json!({"Ok": "first"}));
                reply(&mut out, &run, &call, serde_json::json!({"Ok": "second"}));
            }
            "stranger" => {
                reply(
                    &mut out,
                    &run,
                    "no-such-call",
                    serde_json::json!({"Ok": "stranger"}),
                );
                reply(&mut out, &run, &call, serde_json::json!({"Ok": "stranger"}));
            }
            "garbage" => {
                let _ = writeln!(out, "this line is not JSON");
                reply(
                    &mut out,
                    &run,
                    &call,
                    serde_json::json!({"Ok": "after garbage"}),
                );
            }
            "crash" => {
                let _ = out.flush();
                std::process::exit(3);
            }
            "stall" => {
                let _ = out.flush();
                std::thread::sleep(std::time::Duration::from_millis(300));
                std::process::exit(5);
            }
            "notrun" => reply(
                &mut out,
                &run,
                &call,
                serde_json::json!({"NotRun": "asked not to run"}),
            ),
            "seen" => reply(&mut out, &run, &call, serde_json::json!({"Ok": seen})),
            t if t.starts_with("big:") => {
                let n: usize = t[4..].parse().unwrap_or(0);
                reply(
                    &mut out,
                    &run,
                    &call,
                    serde_json::json!({"Ok": "x".repeat(n)}),
                );
            }
            _ => reply(&mut out, &run, &call, serde_json::json!({"Ok": text})),
        }
        let _ = out.flush();
    }
}
