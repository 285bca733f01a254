//! The gRPC transport, live: `hale demo --grpc` run as a process and
//! driven by clients nobody here wrote (`drivers/tests/peer/grpc_client.py`):
//! grpcio with stubs grpcio-tools generates from the `Public.proto` that
//! `hale api export` writes (application/grpc, details read by
//! grpcio-status's `rpc_status.from_call`, which refuses details whose code
//! or message differ from the status), and h2, a raw HTTP/2 client, for
//! application/grpc+json, +proto and what a stub cannot send.
//!
//! § Outcomes: the gRPC transport takes the recorded HTTP calls of the
//! reference fixtures (`../shared/hale-witness/wire/http/*.json`) as unary
//! calls and answers each outcome as the gRPC column says: the recorded
//! response as the response message under status 0, or a trailers-only
//! response whose details carry the recorded error or refusal as the value
//! of their one Any. The peers are installed by `scripts/install-peers`
//! under `<repo>/.peers/`; a test skips with a message when one is absent,
//! unless `LIMEN_REQUIRE_PEERS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use limen_core::hale::docs::rows::tool_name;
use serde_json::{json, Value};

mod support;

use support::{
    export_public, grpc_demo, grpc_stubs, report, root, scratch, spawn_plan, venv_python,
};

fn witness() -> Option<PathBuf> {
    let dir = root().join("../shared/hale-witness/wire/http");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipped: ../shared/hale-witness is absent");
        None
    }
}

fn record(dir: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The Python peers, with stubs generated from the exported Public.proto
/// in `dir`.
struct Peer {
    python: PathBuf,
    stubs: PathBuf,
}

fn peer(dir: &Path) -> Option<Peer> {
    let python = venv_python(
        "grpc, grpc_tools, grpc_status, h2",
        "grpcio, grpcio-tools, grpcio-status, h2",
    )?;
    let api = dir.join("api");
    let stubs = dir.join("stubs");
    export_public(&api);
    grpc_stubs(&python, &api, "Public.proto", &stubs);
    Some(Peer { python, stubs })
}

impl Peer {
    /// Runs `calls` against `target`: one result per call.
    fn run(&self, target: &str, calls: Vec<Value>) -> Vec<Value> {
        let report = self.scenario(target, json!({"calls": calls}));
        report["calls"].as_array().unwrap().clone()
    }

    fn one(&self, target: &str, call: Value) -> Value {
        self.run(target, vec![call]).remove(0)
    }
}

/// How a call is sent: the client and its content type.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// grpcio's generated stub: application/grpc.
    Stub,
    /// h2, application/grpc+proto.
    Proto,
    /// h2, application/grpc+json.
    Json,
}

impl Via {
    fn json(self) -> bool {
        matches!(self, Via::Json)
    }

    /// The content type sent, which the answer goes under (§ gRPC).
    fn content_type(self) -> &'static str {
        match self {
            Via::Stub => "application/grpc",
            Via::Proto => "application/grpc+proto",
            Via::Json => "application/grpc+json",
        }
    }
}

/// A recorded HTTP call as a gRPC call sent `via`.
fn call_of(rec: &Value, via: Via) -> Value {
    let request = &rec["request"];
    let member = request["path"]
        .as_str()
        .unwrap()
        .trim_start_matches("/call/");
    let mut metadata = Vec::new();
    for (name, value) in request["headers"].as_object().unwrap() {
        match name.to_ascii_lowercase().as_str() {
            "authorization" | "hale-surface-digest" => {
                metadata.push(json!([name.to_ascii_lowercase(), value]))
            }
            _ => {}
        }
    }
    let mut call = json!({
        "rpc": tool_name(member),
        "metadata": metadata,
        "body": request["body"],
    });
    match via {
        Via::Stub => call["client"] = json!("grpcio"),
        Via::Proto | Via::Json => {
            call["client"] = json!("h2");
            call["content_type"] = json!(via.content_type());
        }
    }
    call
}

/// § Outcomes' gRPC column: a refusal kind's status.
fn refusal_code(kind: &str) -> u64 {
    match kind {
        "malformed" => 3,
        "digest_mismatch" => 9,
        "unauthenticated" => 16,
        "unauthorized" => 7,
        "full" => 8,
        "shutting_down" | "unavailable" => 14,
        other => panic!("no refusal kind {other}"),
    }
}

/// Holds `got` to what § gRPC says a recorded outcome is.
fn check(rec: &Value, via: Via, got: &Value) {
    let what = format!("{} {} via {via:?}: {got}", rec["outcome"], rec["kind"]);
    let body = &rec["reply"]["body"];
    let json = via.json();
    let (code, message, url, value) = match rec["outcome"].as_str().unwrap() {
        "result" => {
            assert_eq!(got["code"], 0, "{what}");
            assert_eq!(&got["response"], body, "{what}");
            if !matches!(via, Via::Stub) {
                // HEADERS, DATA, trailers, in the codec asked.
                assert_eq!(got["trailers_only"], false, "{what}");
                assert_eq!(got["content_type"], via.content_type(), "{what}");
            }
            return;
        }
        "handler_error" => (
            9,
            "handler_error".to_string(),
            if json {
                "type.hale.dev/hale.api.HandlerError"
            } else {
                "type.hale.dev/OrderError"
            },
            body.clone(),
        ),
        "server_error" => (
            13,
            "server_error".to_string(),
            if json {
                "type.hale.dev/hale.api.Refusal"
            } else {
                "type.hale.dev/HaleRefusal"
            },
            json!({"kind": "server"}),
        ),
        "refusal" => {
            let refusal = &body["refusal"];
            (
                refusal_code(refusal["kind"].as_str().unwrap()),
                refusal["reason"].as_str().unwrap().to_string(),
                if json {
                    "type.hale.dev/hale.api.Refusal"
                } else {
                    "type.hale.dev/HaleRefusal"
                },
                refusal.clone(),
            )
        }
        other => panic!("outcome {other}"),
    };
    assert_eq!(got["code"], code, "{what}");
    assert_eq!(got["message"], message, "{what}");
    assert_eq!(got["response"], Value::Null, "{what}");
    let detail = &got["detail"];
    assert_eq!(
        (&detail["code"], &detail["message"], &detail["type_url"]),
        (&json!(code), &json!(message), &json!(url)),
        "{what}"
    );
    assert_eq!(detail["value"], value, "{what}");
    if !matches!(via, Via::Stub) {
        // Every outcome but a result is trailers-only, in the codec asked.
        assert_eq!(got["trailers_only"], true, "{what}");
        assert_eq!(got["content_type"], via.content_type(), "{what}");
    }
}

#[test]
fn every_recorded_outcome_over_grpc_in_each_codec() {
    let Some(records) = witness() else { return };
    let dir = scratch("grpc", "outcomes");
    let Some(peer) = peer(&dir) else { return };
    let names = [
        // First: the result's recorded order is the demo's first.
        "result",
        "handler_error",
        "refusal_malformed",
        "refusal_digest_mismatch",
        "refusal_unauthenticated",
        "refusal_unauthorized",
        "server_error",
    ];
    for via in [Via::Stub, Via::Proto, Via::Json] {
        let d = grpc_demo(&format!("outcomes-{via:?}"), &[]);
        let recs: Vec<Value> = names.iter().map(|n| record(&records, n)).collect();
        let calls = recs.iter().map(|r| call_of(r, via)).collect();
        let got = peer.run(&d.grpc, calls);
        for (rec, got) in recs.iter().zip(&got) {
            check(rec, via, got);
        }
        // unavailable: the receiver drains.
        d.control("drain orders");
        let rec = record(&records, "refusal_unavailable");
        check(&rec, via, &peer.one(&d.grpc, call_of(&rec, via)));
        d.control("resume orders");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A raw h2 call to Orders::place under alice.
fn raw(content_type: &str, extra: Value) -> Value {
    let mut call = json!({
        "client": "h2",
        "rpc": "Orders__place",
        "content_type": content_type,
        "metadata": [["authorization", "Bearer t-alice"]],
        "body": {"symbol": "ACME", "qty": 10, "limit": 12500},
    });
    for (k, v) in extra.as_object().unwrap() {
        call[k] = v.clone();
    }
    call
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn every_malformed_call_is_invalid_argument_and_fails_alone() {
    let dir = scratch("grpc", "malformed");
    let Some(peer) = peer(&dir) else { return };
    let d = grpc_demo("malformed", &[]);
    let json_ct = "application/grpc+json";
    let proto_ct = "application/grpc";
    let one_json = [&[0u8, 0, 0, 0, 2][..], b"{}"].concat();
    let cases: Vec<(Value, &str)> = vec![
        (raw(json_ct, json!({"method": "GET"})), "method_not_allowed"),
        (
            raw(json_ct, json!({"path": "/Admin/Orders__place"})),
            "unknown_service: Admin",
        ),
        (raw(json_ct, json!({"path": "/Public"})), "not_a_grpc_path"),
        (
            raw("application/grpc+xml", json!({})),
            "unsupported_content_type",
        ),
        (
            raw("application/json", json!({})),
            "unsupported_content_type",
        ),
        (
            raw(json_ct, json!({"raw": b64(&[1, 0, 0, 0, 0])})),
            "compressed_message",
        ),
        (
            raw(json_ct, json!({"raw": b64(&[2, 0, 0, 0, 0])})),
            "bad_compression_flag",
        ),
        (
            raw(
                json_ct,
                json!({"metadata": [["authorization", "Bearer t-alice"], ["grpc-encoding", "gzip"]]}),
            ),
            "unsupported_encoding: gzip",
        ),
        (raw(json_ct, json!({"raw": b64(&[0, 0, 0])})), "cut_message"),
        (
            raw(json_ct, json!({"raw": b64(&[0, 0, 0, 0, 9, b'{'])})),
            "cut_message",
        ),
        (raw(json_ct, json!({"raw": ""})), "no_message"),
        (
            raw(
                json_ct,
                json!({"raw": b64(&[one_json.clone(), one_json].concat())}),
            ),
            "more_than_one_message",
        ),
        (
            raw(json_ct, json!({"raw": b64(&[0, 0, 0x10, 0, 1])})),
            "message_too_large",
        ),
        (
            raw(json_ct, json!({"raw": b64(&[0, 0, 0, 0, 0])})),
            "not_json_text",
        ),
        // A +json message that begins `pb:` is JSON text like any other
        // (issue #27: no text form smuggles protobuf), refused by the JSON
        // codec.
        (
            raw(
                json_ct,
                json!({"raw": b64(&[&[0u8, 0, 0, 0, 8][..], b"pb:X:AA="].concat())}),
            ),
            "wrong_type: payload",
        ),
        (
            raw(
                json_ct,
                json!({"raw": b64(&[&[0u8, 0, 0, 0, 1][..], b"["].concat())}),
            ),
            "wrong_type",
        ),
        (
            raw(proto_ct, json!({"raw": b64(&[0, 0, 0, 0, 1, 0x08])})),
            "wrong_type: payload",
        ),
        (
            raw(proto_ct, json!({"body": {"symbol": "ACME", "limit": 1}})),
            "missing_field: qty",
        ),
        (
            raw(json_ct, json!({"path": "/Public/Orders__nope"})),
            "unknown_member",
        ),
    ];
    let (calls, wants): (Vec<Value>, Vec<&str>) = cases.into_iter().unzip();
    let got = peer.run(&d.grpc, calls.clone());
    for ((call, want), got) in calls.iter().zip(&wants).zip(&got) {
        let what = format!("{call} -> {got}");
        assert_eq!(got["code"], 3, "{what}");
        let message = got["message"].as_str().unwrap();
        assert!(message.starts_with(want), "{what}");
        assert_eq!(got["detail"]["value"]["kind"], "malformed", "{what}");
        assert_eq!(got["detail"]["value"]["reason"], message, "{what}");
        assert_eq!(got["trailers_only"], true, "{what}");
    }
    // The connection and the listener go on: every older spelling of the
    // rpc names the member, in either protobuf content type.
    for (path, ct) in [
        ("/Public/Orders.place", "application/grpc+proto"),
        ("/Public/Orders::place", "application/grpc"),
        ("/Public/Orders%3A%3Aplace", "application/grpc+proto"),
        ("/Public/Orders%3a%3aplace", "application/grpc+json"),
    ] {
        let got = peer.one(&d.grpc, raw(ct, json!({"path": path})));
        assert_eq!(got["code"], 0, "{path}: {got}");
        assert_eq!(got["response"]["notional"], 125000, "{path}: {got}");
        // Answered under the content type asked.
        assert_eq!(got["content_type"], ct, "{path}");
    }
}

/// Runs `call` on a thread: a call that waits at a gate.
fn background(peer: &Peer, target: &str, call: Value) -> std::thread::JoinHandle<Value> {
    let (python, stubs, target) = (peer.python.clone(), peer.stubs.clone(), target.to_owned());
    let h = std::thread::spawn(move || Peer { python, stubs }.one(&target, call));
    // The peer's interpreter starts and its call is admitted meanwhile.
    std::thread::sleep(Duration::from_millis(2500));
    h
}

#[test]
fn full_and_shutting_down_over_grpc() {
    let Some(records) = witness() else { return };
    let dir = scratch("grpc", "lifecycle");
    let Some(peer) = peer(&dir) else { return };
    let result = record(&records, "result");

    // full: a gated receiver holds the bound of one.
    let d = grpc_demo("grpc-full", &["--bound", "1"]);
    d.control("gate orders");
    let held = background(&peer, &d.grpc, call_of(&result, Via::Stub));
    let rec = record(&records, "refusal_full");
    check(
        &rec,
        Via::Json,
        &peer.one(&d.grpc, call_of(&rec, Via::Json)),
    );
    d.control("open orders");
    assert_eq!(held.join().unwrap()["code"], 0);
    drop(d);

    // shutting_down: one executing, the recorded one queued, then stop():
    // the queued is refused, the executing answered, then GOAWAY ends the
    // connections and the demo exits.
    let mut d = grpc_demo("grpc-down", &[]);
    d.control("gate orders");
    let executing = background(&peer, &d.grpc, call_of(&result, Via::Stub));
    let rec = record(&records, "refusal_shutting_down");
    let queued = background(&peer, &d.grpc, call_of(&rec, Via::Proto));
    d.control("stop");
    check(&rec, Via::Proto, &queued.join().unwrap());
    d.control("open orders");
    let got = executing.join().unwrap();
    assert_eq!(got["code"], 0, "the executing call is answered: {got}");
    assert!(
        d.wait_exit(Duration::from_secs(10)).is_some(),
        "the demo ends once its gRPC connections are done"
    );
}

#[test]
fn describe_answers_the_callers_document_in_each_codec() {
    let dir = scratch("grpc", "describe");
    let Some(peer) = peer(&dir) else { return };
    let d = grpc_demo("grpc-describe", &[]);
    let describe = |content_type: &str, token: &str| {
        json!({
            "client": "h2",
            "rpc": "Describe",
            "path": "/hale.api.Description/Describe",
            "content_type": content_type,
            "metadata": [["authorization", format!("Bearer {token}")]],
            "raw": b64(&[0, 0, 0, 0, 0]),
            "raw_response": true,
        })
    };
    let got = peer.run(
        &d.grpc,
        vec![
            describe("application/grpc+json", "t-alice"),
            describe("application/grpc", "t-alice"),
            describe("application/grpc+json", "t-mallory"),
        ],
    );
    let message = |got: &Value| {
        assert_eq!(got["code"], 0, "{got}");
        base64::engine::general_purpose::STANDARD
            .decode(got["response"].as_str().unwrap())
            .unwrap()
    };
    // Under +json the message is the document.
    let doc: Value = serde_json::from_slice(&message(&got[0])).unwrap();
    // Under protobuf, DescriptionDocument { string json = 1; }: the same
    // document as that field.
    let pb = message(&got[1]);
    assert_eq!(pb[0], 0x0a, "field 1, length-delimited");
    let (len, at) = {
        let (mut v, mut i) = (0usize, 1);
        loop {
            v |= usize::from(pb[i] & 0x7f) << (7 * (i - 1));
            i += 1;
            if pb[i - 1] < 0x80 {
                break (v, i);
            }
        }
    };
    assert_eq!(pb.len(), at + len);
    let inner: Value = serde_json::from_slice(&pb[at..]).unwrap();
    assert_eq!(inner, doc);
    // The listener grpc and § gRPC's outcome encoding; otherwise the
    // document public's HTTP listener serves the same caller.
    assert_eq!(
        doc["listener"],
        json!({"transport": "grpc", "address": d.grpc})
    );
    assert_eq!(doc["outcomes"]["transport"], "grpc");
    assert_eq!(
        doc["outcomes"]["refusal"]["status"]["unauthorized"],
        "PERMISSION_DENIED"
    );
    let http = limen_drivers::client::wire::http_exchange(
        &d.public,
        "GET",
        "/.description",
        &[("Authorization", "Bearer t-alice".to_string())],
        b"",
    )
    .unwrap();
    let public: Value = serde_json::from_slice(&http.body).unwrap();
    for key in ["surface", "digest", "caller", "members", "schemas", "notes"] {
        assert_eq!(doc[key], public[key], "{key}");
    }
    // A caller nobody names gets the same UNAUTHENTICATED as a call.
    assert_eq!(got[2]["code"], 16, "{}", got[2]);
    assert_eq!(got[2]["detail"]["value"]["kind"], "unauthenticated");
}

impl Peer {
    /// Runs a scenario of the peer script (`streams`, `protocol_error`).
    fn scenario(&self, target: &str, plan: Value) -> Value {
        let mut plan = plan;
        plan["target"] = json!(target);
        plan["stubs"] = json!(self.stubs);
        let mut command = Command::new(&self.python);
        command.arg(root().join("drivers/tests/peer/grpc_client.py"));
        report(spawn_plan(&mut command, &plan), "grpc_client.py")
    }
}

#[test]
fn the_stream_past_4096_held_is_refused_and_the_connection_goes_on() {
    let dir = scratch("grpc", "streams");
    let Some(peer) = peer(&dir) else { return };
    let d = grpc_demo("grpc-streams", &[]);
    // § gRPC: at most 4096 streams held; one past that is REFUSED_STREAM.
    let got = peer.scenario(&d.grpc, json!({"scenario": "streams", "streams": 4097}));
    assert_eq!(got["goaway"], Value::Null, "{got}");
    assert_eq!(got["resets"], json!([[got["last"], 7]]), "{got}");
    // The streams held are served: the first one's call completes.
    assert_eq!(got["first"], 0, "{got}");
}

#[test]
fn a_protocol_error_is_goaway_and_the_server_goes_on() {
    let dir = scratch("grpc", "protocol");
    let Some(peer) = peer(&dir) else { return };
    let d = grpc_demo("grpc-protocol", &[]);
    let got = peer.scenario(&d.grpc, json!({"scenario": "protocol_error"}));
    assert_eq!(got, json!({"goaway": 1, "closed": true}), "PROTOCOL_ERROR");
    // Another connection is served.
    let call = raw("application/grpc+json", json!({}));
    assert_eq!(peer.one(&d.grpc, call)["code"], 0);
}

/// A recorded call's body as one length-prefixed +json message, in a file.
fn json_message_file(dir: &Path, rec: &Value) -> PathBuf {
    let json = rec["request"]["body"].to_string().into_bytes();
    let mut body = vec![0];
    body.extend_from_slice(&(json.len() as u32).to_be_bytes());
    body.extend_from_slice(&json);
    let path = dir.join("message.bin");
    std::fs::write(&path, body).unwrap();
    path
}

/// One +json call through `curl --http2-prior-knowledge`: the header
/// blocks as curl dumps them (trailers included) and the body.
fn curl_grpc(addr: &str, rpc: &str, token: &str, body: &Path) -> (String, Vec<u8>) {
    let out = Command::new("curl")
        .args(["-s", "--http2-prior-knowledge", "-D", "-", "-o", "-"])
        .args(["-H", "content-type: application/grpc+json"])
        .args(["-H", &format!("authorization: Bearer {token}")])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!("http://{addr}/Public/{rpc}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // -D - and -o - share stdout: the head, then the body, then (for a
    // response with a body) the trailers.
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.stdout,
    )
}

#[test]
fn curl_and_h2load_speak_grpc_json() {
    let Some(records) = witness() else { return };
    if !support::peer("curl") || !support::peer("h2load") {
        return;
    }
    let dir = scratch("grpc", "curl");
    let d = grpc_demo("grpc-curl", &["--loops", "2", "--bound", "1000"]);
    let result = record(&records, "result");
    let body = json_message_file(&dir, &result);
    let (text, bytes) = curl_grpc(&d.grpc, "Orders__place", "t-alice", &body);
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    assert!(
        text.contains("content-type: application/grpc+json"),
        "{text}"
    );
    // The message: five bytes of prefix, then the recorded response.
    let at = bytes
        .windows(5)
        .position(|w| w[0] == 0 && w[1..4] == [0, 0, 0])
        .unwrap();
    let len = bytes[at + 4] as usize;
    let message: Value = serde_json::from_slice(&bytes[at + 5..at + 5 + len]).unwrap();
    assert_eq!(message, result["reply"]["body"]);
    let trailers = String::from_utf8_lossy(&bytes[at + 5 + len..]);
    assert!(trailers.contains("grpc-status: 0"), "{trailers}");
    // A refusal: trailers-only, the status and reason in the one block.
    let rec = record(&records, "refusal_unauthorized");
    let (text, _) = curl_grpc(
        &d.grpc,
        "Orders__cancel",
        "t-bob",
        &json_message_file(&dir, &rec),
    );
    let reason = rec["reply"]["body"]["refusal"]["reason"].as_str().unwrap();
    assert!(text.contains("grpc-status: 7\r\n"), "{text}");
    assert!(
        text.contains(&format!("grpc-message: {reason}\r\n")),
        "{text}"
    );
    // Under load, over two loops: every stream answered.
    let out = Command::new("h2load")
        .args(["-n", "4000", "-c", "8", "-m", "10"])
        .args(["-H", "content-type: application/grpc+json"])
        .args(["-H", "authorization: Bearer t-alice"])
        .arg("-d")
        .arg(&body)
        .arg(format!("http://{}/Public/Orders__place", d.grpc))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed, 0 errored"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
