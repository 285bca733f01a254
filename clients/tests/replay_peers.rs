//! The replay against the HTTP libraries the generated clients are written
//! on: Node's `fetch` and Python's `http.client` writing the witness's
//! `result` request by hand match it (the headers they add by themselves
//! are the transport's), read its reply, and see `Lost` as a connection
//! that ended with no reply.

use std::process::Command;

use limen_clients::replay::{witness_records, Mode, Replay, Transport, WireRecord};
use limen_clients::{node, python};

/// The witness's HTTP `result` record.
fn result_record() -> Option<WireRecord> {
    witness_records(Transport::Http)?
        .into_iter()
        .find(|r| r.name == "result")
}

/// Runs `program` with `args`; its stdout, trimmed, when it exits 0.
fn run(program: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} failed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `fetch` of the record's request; prints `STATUS BODY`, or `lost` when
/// the fetch rejects.
const NODE: &str = r#"
const [url, member, bearer, digest, body] = process.argv.slice(1);
fetch(url + "/call/" + member, { method: "POST", body, headers: {
  "Authorization": "Bearer " + bearer,
  "Content-Type": "application/json",
  "Hale-Surface-Digest": digest,
}}).then(async r => console.log(r.status, await r.text()), () => console.log("lost"));
"#;

/// `http.client` of the record's request; prints `STATUS BODY`, or `lost`
/// when the connection ends with no reply.
const PYTHON: &str = r#"
import http.client, sys
url, member, bearer, digest, body = sys.argv[1:]
host, port = url.removeprefix("http://").split(":")
c = http.client.HTTPConnection(host, int(port), timeout=10)
try:
    c.request("POST", "/call/" + member, body=body.encode(), headers={
        "Authorization": "Bearer " + bearer,
        "Content-Type": "application/json",
        "Hale-Surface-Digest": digest,
    })
    r = c.getresponse()
    print(r.status, r.read().decode())
except (http.client.RemoteDisconnected, ConnectionError):
    print("lost")
"#;

fn drive(program: &std::path::Path, flag: &str, script: &str, record: &WireRecord) {
    for mode in [Mode::Answer, Mode::Lost] {
        let replay = Replay::serve(record, mode).unwrap();
        let out = run(
            program,
            &[
                flag,
                script,
                replay.endpoint(),
                &record.member,
                record.bearer.as_deref().unwrap(),
                &record.digest,
                &record.payload.to_string(),
            ],
        );
        replay
            .finish()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        match mode {
            Mode::Answer => {
                let (status, body) = out.split_once(' ').unwrap();
                assert_eq!(status, record.reply()["status"].to_string());
                let body: serde_json::Value = serde_json::from_str(body).unwrap();
                assert_eq!(body, record.reply()["body"]);
            }
            Mode::Lost => assert_eq!(out, "lost"),
        }
    }
}

#[test]
fn nodes_fetch_matches_the_record() {
    let (Some(record), Some(node)) = (result_record(), node()) else {
        return;
    };
    drive(&node, "-e", NODE, &record);
}

#[test]
fn pythons_http_client_matches_the_record() {
    let (Some(record), Some(python)) = (result_record(), python()) else {
        return;
    };
    drive(&python, "-c", PYTHON, &record);
}
