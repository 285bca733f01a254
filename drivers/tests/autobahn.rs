//! RFC 6455 conformance of the core's WebSocket codec: the Autobahn
//! TestSuite's cases (sections 1 to 7 and 10, and 9 with 16 MiB messages), run by `kosoku` (PyPI, a
//! runner of the Autobahn case files that works offline) as the fuzzing
//! client against an echo server built on `wire::ws::WsConn` with the
//! hub's 64 KiB limit and fragments and binary messages taken
//! ([`Limits::fragments`], [`Limits::binary`]). Every case must be OK,
//! NON-STRICT or INFORMATIONAL; none FAILED. The runner is installed by
//! `scripts/install-peers` into `<repo>/.peers/venv`; the test skips with a
//! message when it is absent, unless `LIMEN_REQUIRE_PEERS=1`. The report
//! is written under `target/autobahn/`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use limen_core::wire::http1::{self, HttpConn, HttpEvent};
use limen_core::wire::machine::Machine;
use limen_core::wire::ws::{self, Limits, WsConn, WsEvent};
use serde_json::Value;

mod support;

use support::root;

/// One connection: the upgrade, then every message echoed under `limits`.
fn echo(mut stream: TcpStream, limits: Limits) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; 64 * 1024];
    let mut http = HttpConn::new(0, http1::Limits::default());
    let request = loop {
        if let Some(HttpEvent::Request(r)) = http.poll_event() {
            break r;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => http.handle_data(0, &buf[..n]),
        }
    };
    let Ok(head) = ws::upgrade(&request) else {
        return;
    };
    if stream.write_all(&head).is_err() {
        return;
    }
    let mut conn = WsConn::new(limits);
    conn.handle_data(0, &http.take_rest());
    loop {
        while let Some(event) = conn.poll_event() {
            match event {
                WsEvent::Text(t) => conn.send_text(0, &t),
                WsEvent::Binary(b) => conn.send_binary(0, &b),
                WsEvent::Closed { .. } => {}
            }
        }
        let out = conn.pending_output().to_vec();
        if !out.is_empty() {
            if stream.write_all(&out).is_err() {
                return;
            }
            conn.consume_output(0, out.len());
        }
        if conn.is_closed() {
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => conn.handle_eof(0),
            Ok(n) => conn.handle_data(0, &buf[..n]),
        }
    }
}

/// The echo's limits: the hub's, with fragments and binary messages taken,
/// and messages up to `max_message` bytes.
fn echo_limits(max_message: usize) -> Limits {
    Limits {
        fragments: true,
        binary: true,
        max_message,
    }
}

/// Runs kosoku's cases `sections` against an echo under `limits`, writing
/// the report under `target/autobahn/NAME`; the count of each behavior,
/// and the cases that are neither OK, NON-STRICT nor INFORMATIONAL (or
/// whose close is not OK or INFORMATIONAL). `None` when kosoku is absent.
fn run_cases(
    name: &str,
    sections: &[&str],
    limits: Limits,
) -> Option<(std::collections::BTreeMap<String, usize>, Vec<String>)> {
    let kosoku = root().join(".peers/venv/bin/kosoku");
    if !kosoku.exists() {
        support::absent(&format!("kosoku is absent ({})", kosoku.display()));
        return None;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || echo(stream, limits));
        }
    });
    let out_dir = root().join("target/autobahn").join(name);
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd = Command::new(&kosoku);
    cmd.args(["-m", "fuzzingclient", "-p", "4", "-o"])
        .arg(&out_dir);
    for section in sections {
        cmd.args(["-i", section]);
    }
    let run = cmd.arg(&addr).output().unwrap();
    assert!(
        run.status.success(),
        "kosoku: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let index = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n == "index.json"))
        .expect("kosoku writes index.json");
    let index: Value = serde_json::from_str(&std::fs::read_to_string(index).unwrap()).unwrap();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut failed = Vec::new();
    for cases in index.as_object().unwrap().values() {
        for (case, result) in cases.as_object().unwrap() {
            let behavior = result["behavior"].as_str().unwrap_or("?").to_owned();
            let close = result["behaviorClose"].as_str().unwrap_or("?").to_owned();
            *counts.entry(behavior.clone()).or_default() += 1;
            if !matches!(behavior.as_str(), "OK" | "NON-STRICT" | "INFORMATIONAL")
                || !matches!(close.as_str(), "OK" | "INFORMATIONAL")
            {
                failed.push(format!("{case}: {behavior} (close {close})"));
            }
        }
    }
    eprintln!("autobahn {name}: {counts:?}");
    Some((counts, failed))
}

#[test]
fn the_codec_passes_the_autobahn_cases_1_to_7_and_10() {
    let sections = ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*"];
    let Some((counts, failed)) = run_cases("1-7,10", &sections, echo_limits(64 * 1024)) else {
        return;
    };
    // Sections 1 to 7 and 10 hold 247 cases.
    assert!(counts.values().sum::<usize>() >= 247, "{counts:?}");
    assert!(
        failed.is_empty(),
        "{} cases failed: {failed:#?}",
        failed.len()
    );
}

/// Section 9 (limits and performance: text and binary messages of 64 KiB to
/// 16 MiB, whole, in fragments of 64 B to 4 MiB, and written in chops of 1
/// to 4 KiB) against the echo with a 16 MiB message limit: the codec's
/// large-message paths, which the hub's 64 KiB limit never reaches.
#[test]
fn the_codec_passes_the_autobahn_section_9_with_16_mib_messages() {
    let Some((counts, failed)) = run_cases("9", &["9.*"], echo_limits(16 << 20)) else {
        return;
    };
    // Section 9 holds 54 cases.
    assert!(counts.values().sum::<usize>() >= 54, "{counts:?}");
    assert!(
        failed.is_empty(),
        "{} cases failed: {failed:#?}",
        failed.len()
    );
}
