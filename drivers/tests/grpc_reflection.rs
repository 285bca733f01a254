//! gRPC server reflection, live (§ gRPC, Server reflection): `hale demo
//! --grpc` run as a process and asked by reflection clients nobody here
//! wrote (`drivers/tests/peer/reflection_client.py`): stubs grpcio-tools
//! generates from Debian's grpc-proto `grpc/reflection/v1/reflection.proto`,
//! grpcio-reflection's stock `ProtoReflectionDescriptorDatabase` (v1alpha),
//! a client that does what grpcurl does, and h2 for the frames; `protoc`
//! compiles what reflection returns, and the descriptor is held to the one
//! protoc makes of the exported `Public.proto`.
//!
//! The peers are installed by `scripts/install-peers` (the venv under
//! `<repo>/.peers/`, the `grpc-proto` and `protobuf-compiler` packages); a
//! test skips with a message when one is absent, unless
//! `LIMEN_REQUIRE_PEERS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use limen_core::hale::protobuf;
use serde_json::{json, Value};

mod support;

use support::{
    absent, demo, export_public, grpc_demo, grpc_stubs, root, scratch, spawn_plan, venv_python,
};

/// Debian's grpc-proto: gRPC's own reflection files.
const DEBIAN_PROTO: &str = "/usr/share/grpc-proto";

const V1: &str = "grpc.reflection.v1.ServerReflection";
const V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap())
        .unwrap()
}

/// The peers: the venv's Python with grpcio, grpcio-tools,
/// grpcio-reflection and h2, v1 stubs from Debian's reflection.proto, and
/// the exported Public.proto.
struct Peer {
    python: PathBuf,
    v1_stubs: PathBuf,
    api: PathBuf,
    dir: PathBuf,
}

fn peer(tag: &str) -> Option<Peer> {
    let python = venv_python(
        "grpc, grpc_tools, grpc_reflection, h2",
        "grpcio, grpcio-tools, grpcio-reflection, h2",
    )?;
    let debian = Path::new(DEBIAN_PROTO).join("grpc/reflection/v1/reflection.proto");
    if !debian.is_file() {
        absent("Debian's grpc-proto (grpc/reflection/v1/reflection.proto) is absent");
        return None;
    }
    if !support::peer("protoc") {
        return None;
    }
    let dir = scratch("refl", tag);
    // The stubs are generated from a copy under another directory: a
    // `grpc/` folder on the stubs' path would hide grpcio's own package.
    let src = dir.join("src/reflection_v1");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(&debian, src.join("reflection.proto")).unwrap();
    let v1_stubs = dir.join("stubs");
    grpc_stubs(
        &python,
        &dir.join("src"),
        "reflection_v1/reflection.proto",
        &v1_stubs,
    );
    let api = dir.join("api");
    export_public(&api);
    Some(Peer {
        python,
        v1_stubs,
        api,
        dir,
    })
}

impl Peer {
    fn spawn(&self, target: &str, plan: Value) -> std::process::Child {
        let mut plan = plan;
        plan["target"] = json!(target);
        plan["v1_stubs"] = json!(self.v1_stubs);
        let mut command = Command::new(&self.python);
        command.arg(root().join("drivers/tests/peer/reflection_client.py"));
        spawn_plan(&mut command, &plan)
    }

    fn report(child: std::process::Child) -> Value {
        support::report(child, "reflection_client.py")
    }

    fn run(&self, target: &str, plan: Value) -> Value {
        Peer::report(self.spawn(target, plan))
    }

    /// The exported Public.proto's text.
    fn public_proto(&self) -> String {
        std::fs::read_to_string(self.api.join("Public.proto")).unwrap()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The message names the exported `.proto` declares, sorted.
fn messages_of(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("message "))
        .map(|l| l.split([' ', '{']).next().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// The field names of `message` in the exported `.proto`, in order.
fn fields_of(text: &str, message: &str) -> Vec<String> {
    let start = format!("message {message} {{");
    text.lines()
        .skip_while(|l| !l.starts_with(&start))
        .skip(1)
        .take_while(|l| !l.starts_with('}'))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "=").unwrap();
            words[at - 1].to_string()
        })
        .collect()
}

fn requests() -> Vec<Value> {
    vec![
        json!({"kind": "list_services"}),
        json!({"kind": "file_containing_symbol", "value": "Public"}),
        json!({"kind": "file_by_filename", "value": "hale/api/description.proto"}),
        json!({"kind": "file_containing_symbol", "value": V1}),
        json!({"kind": "file_containing_symbol", "value": "PlaceOrder.qty"}),
        json!({"kind": "file_containing_symbol", "value": "Nope"}),
        json!({"kind": "file_by_filename", "value": "nope.proto"}),
        json!({"kind": "file_containing_extension", "value": "PlaceOrder", "number": 100}),
        json!({"kind": "all_extension_numbers_of_type", "value": "PlaceOrder"}),
        json!({"kind": "file_containing_symbol", "value": V1ALPHA}),
    ]
}

/// Holds one stream's responses to [`requests`] to § gRPC: one answer per
/// request, in order, each naming the request it answers.
fn check_responses(got: &Value) {
    assert_eq!(got["code"], 0, "the client's half-close ends it OK: {got}");
    let r = got["responses"].as_array().unwrap();
    let asked = requests();
    assert_eq!(r.len(), asked.len(), "{got}");
    for (resp, req) in r.iter().zip(&asked) {
        assert_eq!(resp["original"], req["kind"], "in order: {got}");
        assert_eq!(resp["valid_host"], "localhost");
    }
    assert_eq!(
        r[0]["services"],
        json!(["Public", "hale.api.Description", V1, V1ALPHA])
    );
    for (i, file) in [
        (1, "Public.proto"),
        (2, "hale/api/description.proto"),
        (3, "grpc/reflection/v1/reflection.proto"),
        (4, "Public.proto"),
        (9, "grpc/reflection/v1alpha/reflection.proto"),
    ] {
        assert_eq!(r[i]["kind"], "file_descriptor_response", "{}", r[i]);
        assert_eq!(r[i]["names"], json!([file]), "{}", r[i]);
    }
    // A symbol, a file or an extension no one has: NOT_FOUND, and the
    // stream goes on.
    for resp in &r[5..=8] {
        assert_eq!(resp["kind"], "error_response", "{resp}");
        assert_eq!(resp["error_code"], 5, "{resp}");
    }
}

/// `files` as a `google.protobuf.FileDescriptorSet` (field 1, repeated).
fn descriptor_set(files: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        protobuf::write_tag(&mut out, 1, protobuf::LEN);
        protobuf::write_varint(&mut out, f.len() as u64);
        out.extend_from_slice(f);
    }
    out
}

/// The files of a `FileDescriptorSet`.
fn files_of_set(set: &[u8]) -> Vec<Vec<u8>> {
    fields_numbered(set, 1)
}

/// A descriptor's fields of `number`, as bytes.
fn fields_numbered(descriptor: &[u8], number: u64) -> Vec<Vec<u8>> {
    protobuf::len_fields(descriptor, number)
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// protoc's descriptor set of `file` under `include`.
fn protoc_set(include: &Path, file: &str, out: &Path) -> Vec<Vec<u8>> {
    let run = Command::new("protoc")
        .arg("-I")
        .arg(include)
        .arg(format!("--descriptor_set_out={}", out.display()))
        .arg(file)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    files_of_set(&std::fs::read(out).unwrap())
}

#[test]
fn v1_answers_each_request_in_order_and_protoc_compiles_what_it_returns() {
    let Some(peer) = peer("v1") else { return };
    let d = grpc_demo("refl-v1", &[]);
    // Each request sent once the one before is answered, as grpcurl does;
    // then all at once, before any answer.
    for lockstep in [true, false] {
        let got = peer.run(
            &d.grpc,
            json!({"mode": "v1", "token": "t-alice", "requests": requests(), "lockstep": lockstep}),
        );
        check_responses(&got);
        if !lockstep {
            continue;
        }
        let r = got["responses"].as_array().unwrap();
        let public = unb64(&r[1]["files"][0]);
        let description = unb64(&r[2]["files"][0]);
        let reflection = unb64(&r[3]["files"][0]);
        let alpha = unb64(&r[9]["files"][0]);

        // protoc takes what reflection returned as a descriptor set and
        // compiles every file of it.
        let set = peer.dir.join("reflected.pb");
        std::fs::write(
            &set,
            descriptor_set(&[
                public.clone(),
                description.clone(),
                reflection.clone(),
                alpha.clone(),
            ]),
        )
        .unwrap();
        let out = peer.dir.join("compiled");
        std::fs::create_dir_all(&out).unwrap();
        let run = Command::new("protoc")
            .arg(format!("--descriptor_set_in={}", set.display()))
            .arg(format!("--python_out={}", out.display()))
            .args([
                "Public.proto",
                "hale/api/description.proto",
                "grpc/reflection/v1/reflection.proto",
                "grpc/reflection/v1alpha/reflection.proto",
            ])
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
        assert!(out.join("Public_pb2.py").is_file());
        assert!(out.join("hale/api/description_pb2.py").is_file());

        // The surface's descriptor is the one protoc makes of the exported
        // Public.proto, byte for byte (protoc writes no source info here).
        let made = protoc_set(&peer.api, "Public.proto", &peer.dir.join("public.pb"));
        assert_eq!(made.len(), 1);
        assert!(
            public == made[0],
            "Public.proto's descriptor differs from protoc's"
        );

        // Reflection's own: the messages and the service of gRPC's file
        // (Debian's grpc-proto), its language options aside.
        for (ours, version) in [(&reflection, "v1"), (&alpha, "v1alpha")] {
            let theirs = protoc_set(
                Path::new(DEBIAN_PROTO),
                &format!("grpc/reflection/{version}/reflection.proto"),
                &peer.dir.join(format!("{version}.pb")),
            );
            for number in [1, 2, 4, 6] {
                assert_eq!(
                    fields_numbered(ours, number),
                    fields_numbered(&theirs[0], number),
                    "{version}: field {number} of FileDescriptorProto"
                );
            }
        }
    }
}

#[test]
fn grpcio_reflection_v1alpha_lists_resolves_and_calls() {
    let Some(peer) = peer("v1alpha") else { return };
    let d = grpc_demo("refl-v1alpha", &[]);
    let got = peer.run(
        &d.grpc,
        json!({"mode": "v1alpha_db", "token": "t-alice",
               "body": {"symbol": "ACME", "qty": 10, "limit": 12500}}),
    );
    assert_eq!(got["code"], 0, "{got}");
    assert_eq!(
        got["services"],
        json!(["Public", "hale.api.Description", V1, V1ALPHA])
    );
    assert_eq!(got["file"], "Public.proto");
    // The messages and fields reflection gives are the exported .proto's.
    let text = peer.public_proto();
    assert_eq!(got["messages"], json!(messages_of(&text)));
    assert_eq!(got["method"]["input"], "PlaceOrder");
    assert_eq!(got["method"]["output"], "OrderReceipt");
    assert_eq!(
        got["method"]["input_fields"],
        json!(fields_of(&text, "PlaceOrder"))
    );
    assert_eq!(got["description_fields"], json!(["json"]));
    // A call made with the messages reflection described.
    assert_eq!(got["result"]["notional"], "125000", "{got}");
    // Describe, through the description file reflection served.
    let doc: Value = serde_json::from_str(got["describe"]["json"].as_str().unwrap()).unwrap();
    assert_eq!(doc["surface"], "Public");
    assert_eq!(doc["listener"]["transport"], "grpc");
}

#[test]
fn a_grpcurl_like_client_finds_the_surface_and_calls_it() {
    let Some(peer) = peer("grpcurl") else { return };
    let d = grpc_demo("refl-grpcurl", &[]);
    let plan = json!({"mode": "grpcurl", "token": "t-alice", "symbols": ["Public"],
                      "body": {"symbol": "ACME", "qty": 10, "limit": 12500}});
    let got = peer.run(&d.grpc, plan.clone());
    assert_eq!(got["code"], 0, "{got}");
    // v1 is served, so v1 answers, without a fallback.
    assert_eq!(got["version"], "v1", "{got}");
    assert_eq!(got["fell_back_from"], Value::Null, "{got}");
    assert_eq!(got["services"][0], "Public");
    assert_eq!(got["result"]["notional"], "125000", "{got}");
    // A client that speaks only v1alpha (Evans, older Postman) is served
    // the same.
    let mut alpha = plan;
    alpha["skip_v1"] = json!(true);
    let got = peer.run(&d.grpc, alpha);
    assert_eq!(got["version"], "v1alpha", "{got}");
    assert_eq!(got["result"]["notional"], "125000", "{got}");
}

#[test]
fn a_caller_the_bearer_source_does_not_name_is_unauthenticated() {
    let Some(peer) = peer("unauth") else { return };
    let d = grpc_demo("refl-unauth", &[]);
    for token in [json!("t-mallory"), Value::Null] {
        let got = peer.run(
            &d.grpc,
            json!({"mode": "v1", "token": token, "requests": requests(), "lockstep": true}),
        );
        assert_eq!(got["code"], 16, "{got}");
        assert_eq!(got["responses"], json!([]), "{got}");
    }
    // Not yet answered, so trailers-only: one HEADERS frame that ends the
    // stream, the status in it.
    let got = peer.run(
        &d.grpc,
        json!({"mode": "h2", "token": "t-mallory", "messages": [list_services()]}),
    );
    let frames = &answered(&got);
    assert_eq!(frames.len(), 1, "{got}");
    assert_eq!(frames[0]["end_stream"], true, "{got}");
    assert_eq!(frames[0]["headers"]["grpc-status"], "16", "{got}");
}

/// A `ServerReflectionRequest` asking `list_services` (7).
fn list_services() -> String {
    b64(&[0x0a, 1, b'h', 0x3a, 1, b'*'])
}

/// A `ServerReflectionRequest` asking the file of `symbol` (4).
fn symbol(symbol: &str) -> String {
    let mut m = vec![0x22, symbol.len() as u8];
    m.extend_from_slice(symbol.as_bytes());
    b64(&m)
}

/// The messages of a DATA frame's bytes: each one whole, none split.
fn messages_in(data: &[u8]) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at < data.len() {
        let len = u32::from_be_bytes(data[at + 1..at + 5].try_into().unwrap()) as usize;
        at += 5 + len;
        n += 1;
    }
    assert_eq!(at, data.len(), "a DATA frame holds whole messages");
    n
}

#[test]
fn each_message_is_answered_whole_in_one_data_frame_and_every_end_takes_its_status() {
    let Some(peer) = peer("frames") else { return };
    let mut d = grpc_demo("refl-frames", &[]);
    // Each request split across two DATA frames, answered once, whole, in
    // a DATA frame of its own; the half-close ends it with trailers.
    let got = peer.run(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "messages": [list_services(), symbol("Public")]}),
    );
    let frames = got["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 4, "{got}");
    assert_eq!(frames[0]["headers"]["content-type"], "application/grpc");
    assert_eq!(frames[0]["end_stream"], false);
    assert_eq!(messages_in(&unb64(&frames[1]["data"])), 1);
    assert_eq!(messages_in(&unb64(&frames[2]["data"])), 1);
    assert_eq!(frames[3]["trailers"]["grpc-status"], "0", "{got}");

    // A message the half-close leaves unfinished: INTERNAL (13), in the
    // trailers of the response already open.
    let got = peer.run(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "messages": [list_services()],
               "tail": b64(&[0, 0, 0, 0, 9, 0x3a])}),
    );
    let frames = got["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3, "{got}");
    assert_eq!(frames[2]["trailers"]["grpc-status"], "13", "{got}");
    // A message over the limit (8) ends the call at once, trailers-only
    // when nothing was answered yet.
    let got = peer.run(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "messages": [],
               "tail": b64(&[0, 0, 0x10, 0, 1])}),
    );
    let frames = got["frames"].as_array().unwrap();
    assert_eq!(frames[0]["headers"]["grpc-status"], "8", "{got}");
    assert_eq!(frames[0]["end_stream"], true, "{got}");
    // Reflection speaks protobuf: +json is malformed.
    let got = peer.run(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "messages": [list_services()],
               "content_type": "application/grpc+json"}),
    );
    assert_eq!(got["frames"][0]["headers"]["grpc-status"], "3", "{got}");

    // A transport that stops ends an open call the same way, grpc-status
    // 0 in its trailers, before its GOAWAY; then the demo exits.
    let held = peer.spawn(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "messages": [list_services()], "hold": true}),
    );
    std::thread::sleep(Duration::from_millis(2500));
    d.control("stop");
    let got = Peer::report(held);
    let frames = got["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3, "{got}");
    assert_eq!(frames[2]["trailers"]["grpc-status"], "0", "{got}");
    assert!(
        d.wait_exit(Duration::from_secs(10)).is_some(),
        "the demo ends once its gRPC connections are done"
    );
}

#[test]
fn a_source_that_stops_naming_the_caller_ends_the_open_call_with_16() {
    let Some(peer) = peer("expire") else { return };
    // With a hub, the demo's gRPC exposure asks the hub's token table,
    // whose `expire` the control socket reaches.
    let d = demo(
        "refl-expire",
        &["--grpc", "127.0.0.1:0", "--hub", "127.0.0.1:0"],
    );
    let held = peer.spawn(
        &d.grpc,
        json!({"mode": "h2", "token": "t-alice", "pause": 3,
               "messages": [list_services(), list_services()]}),
    );
    // The first message is answered; then alice's token expires.
    std::thread::sleep(Duration::from_millis(1500));
    d.control("expire t-alice 1");
    let got = Peer::report(held);
    let frames = &answered(&got);
    // The bearer is asked again at the second message: the call, already
    // answered once, ends with 16 as the trailers of its open response.
    assert_eq!(frames.len(), 3, "{got}");
    assert_eq!(messages_in(&unb64(&frames[1]["data"])), 1);
    assert_eq!(frames[2]["trailers"]["grpc-status"], "16", "{got}");
    assert_eq!(frames[2]["trailers"]["grpc-message"], "expired", "{got}");
}

/// The frames of a reflection call's answer, without the RST_STREAM
/// (NO_ERROR) that follows an end the client had not half-closed before
/// (RFC 9113 § 8.1, issue 26), which the peer reads or not as the bytes
/// fall: when it does, it comes last and says NO_ERROR.
fn answered(got: &Value) -> Vec<Value> {
    let mut frames = got["frames"].as_array().unwrap().clone();
    if frames.last().is_some_and(|f| f.get("reset").is_some()) {
        let reset = frames.pop().unwrap();
        assert_eq!(reset["reset"], 0, "{got}");
    }
    frames
}
