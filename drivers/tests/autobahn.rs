//! RFC 6455 conformance of the core's WebSocket codec: the Autobahn
//! TestSuite's cases (sections 1 to 7 and 10), run by `kosoku` (PyPI, a
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
use std::path::{Path, PathBuf};
use std::process::Command;

use limen_core::wire::http1::{self, HttpConn, HttpEvent};
use limen_core::wire::ws::{self, Limits, WsConn, WsEvent};
use serde_json::Value;

mod support;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One connection: the upgrade, then every message echoed.
fn echo(mut stream: TcpStream) {
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
    let limits = Limits {
        fragments: true,
        binary: true,
        ..Limits::default()
    };
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

#[test]
fn the_codec_passes_the_autobahn_cases_1_to_7_and_10() {
    let kosoku = root().join(".peers/venv/bin/kosoku");
    if !kosoku.exists() {
        support::absent(&format!("kosoku is absent ({})", kosoku.display()));
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || echo(stream));
        }
    });
    let out_dir = root().join("target/autobahn");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd = Command::new(&kosoku);
    cmd.args(["-m", "fuzzingclient", "-p", "4", "-o"])
        .arg(&out_dir);
    for section in ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*"] {
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
    eprintln!("autobahn: {counts:?}");
    // Sections 1 to 7 and 10 hold 247 cases.
    assert!(counts.values().sum::<usize>() >= 247, "{counts:?}");
    assert!(
        failed.is_empty(),
        "{} cases failed: {failed:#?}",
        failed.len()
    );
}
