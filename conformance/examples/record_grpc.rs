//! Records the corpus's `wire/grpc` records from a live `hale demo
//! --grpc`: each call record of `wire/http` that needs no scenario (no
//! gate, drain, stop or silence: the result, the handler's error, the
//! server error and the refusals a request provokes by itself) sent as § Outcomes says a gRPC
//! client sends it (`Grpc`'s `implied_by`: the recorded body the one
//! `+json` message), and the public describes, each over its own
//! connection; what the server answered is written as the record's reply.
//! The records are then reviewed and committed, and `limen-conformance
//! replay` holds the machines to them.
//!
//! `cargo run -p limen-conformance --example record_grpc -- grpc://ADDR
//! CORPUS OUT [proto]`: the demo's exposure `grpc` serves Public at ADDR;
//! CORPUS holds the HTTP records; the records are written to
//! `OUT/wire/grpc/`. With `proto` it records the `+proto` calls instead.
//! Each place takes the demo's next order id, and a replay's world is
//! fresh, so each set is recorded on a demo booted for it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use limen_conformance::record::Corpus;
use limen_conformance::transport::grpc::{base64, Grpc};
use limen_conformance::transport::Form;
use serde_json::{json, Value};

/// Outcomes a request provokes by itself, with no scenario.
const ALONE: [&str; 8] = [
    "result",
    "handler_error",
    "server_error",
    "refusal_malformed",
    "refusal_unauthenticated",
    "refusal_unauthorized",
    "refusal_digest_mismatch",
    "describe",
];

/// Calls sent again under `application/grpc+proto`, their messages
/// written by hand from `Public.proto` (not by the server's codec, so the
/// record holds the codec to the `.proto`): the record's name, the HTTP
/// record whose call it is, and the message.
const PROTO: [(&str, &str, &[u8]); 3] = [
    // PlaceOrder { symbol: "ACME" (1), qty: 10 (2), limit: 12500 (3) }.
    (
        "result.proto",
        "result",
        b"\x0a\x04ACME\x10\x0a\x18\xd4\x61",
    ),
    // CancelOrder { order: 999 (1) }.
    ("handler_error.proto", "handler_error", b"\x08\xe7\x07"),
    // CancelOrder { order: 41 (1) }, as bob.
    (
        "refusal_unauthorized.proto",
        "refusal_unauthorized",
        b"\x08\x29",
    ),
];

/// Outcomes that need a scenario (a gate, a drain, `stop()`): written as
/// the HTTP record implies them, not recorded.
const IMPLIED: [&str; 3] = [
    "refusal_full",
    "refusal_shutting_down",
    "refusal_unavailable",
];

fn exchange(addr: &str, request: &Value) -> Value {
    let bytes = Grpc.request_bytes(request, Some(addr)).expect("a request");
    let mut s = TcpStream::connect(addr).expect("the demo listens");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&bytes).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if let Some(reply) = Grpc.reply(&raw, false).expect("HTTP/2") {
            return reply;
        }
        let n = s.read(&mut buf).expect("a reply within 5 seconds");
        if n == 0 {
            return Grpc.reply(&raw, true).expect("HTTP/2").expect("ended");
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (endpoint, corpus, out, proto) = match args.as_slice() {
        [e, c, o] => (e, c, o, false),
        [e, c, o, p] if p == "proto" => (e, c, o, true),
        _ => panic!("usage: record_grpc grpc://ADDR CORPUS OUT [proto]"),
    };
    let addr = endpoint.strip_prefix("grpc://").expect("grpc://ADDR");
    let corpus = Corpus::open(Path::new(corpus)).expect("a corpus");
    let dir = Path::new(out).join("wire/grpc");
    std::fs::create_dir_all(&dir).unwrap();
    // The exposure the demo serves over gRPC: its describe names it.
    let described = exchange(addr, &Grpc.describe_request(Some("t-alice")));
    let identity = described["message"]["exposure"]
        .as_str()
        .expect("the describe names the exposure")
        .to_owned();
    if !proto {
        json_records(&corpus, &dir, addr, &identity);
        return;
    }
    for (name, http, message) in PROTO {
        let record = corpus
            .record(&format!("http/{http}"))
            .expect("the HTTP record");
        let mut request = record.implied(&Grpc, &identity).expect("a call").request;
        request["headers"]["content-type"] = "application/grpc+proto".into();
        let o = request.as_object_mut().unwrap();
        o.remove("message");
        o.insert("message_base64".into(), base64(message).into());
        let note = format!("Recorded from hale demo --grpc by conformance/examples/record_grpc.rs: wire/http/{http}'s call as a unary call under application/grpc+proto, its message written by hand from Public.proto; reviewed.");
        write(&dir, addr, name, &identity, request, &note);
    }
}

/// The `+json` records: each HTTP call record as a unary call, and the
/// describes.
fn json_records(corpus: &Corpus, dir: &Path, addr: &str, identity: &str) {
    let note = "Recorded from hale demo --grpc by conformance/examples/record_grpc.rs (the wire/http record of the same name sent as a unary call under application/grpc+json, § Outcomes); reviewed.";
    for record in &corpus.records {
        let stem = record.stem();
        if record.transport.as_str() != "http" || !record.exposure.ends_with("/public") {
            continue;
        }
        let describe = stem.starts_with("describe.");
        if IMPLIED.contains(&stem) {
            let mut value = record.implied(&Grpc, identity).expect("a call").value;
            value["scenario"] = json!({ "note": format!(
                "Implied from wire/http/{stem} by conformance/examples/record_grpc.rs (§ Outcomes: the recorded HTTP call as a unary call, the recorded body the value of the details' Any), not recorded: provoking it live needs the demo's control socket, which the generator does not drive. A replay provokes it by its outcome's scenario and holds the reply to the status, the message and the details decoded (the base64 is not stated: a JSON body does not fix the bytes of the value)."
            ) });
            let mut text = serde_json::to_string_pretty(&value).unwrap();
            text.push('\n');
            std::fs::write(dir.join(format!("{stem}.json")), text).unwrap();
            println!("wire/grpc/{stem}.json: implied");
            continue;
        }
        if !ALONE.contains(&stem) && !describe {
            continue;
        }
        let request = if describe {
            let bearer = record.request["headers"]["Authorization"]
                .as_str()
                .and_then(|a| a.strip_prefix("Bearer "));
            Grpc.describe_request(bearer)
        } else {
            let implied = record.implied(&Grpc, identity).expect("a call record");
            implied.request.clone()
        };
        let name = stem.replace(".public.", ".grpc.");
        write(dir, addr, &name, identity, request, note);
    }
}

/// Sends `request` to the demo and writes what it answered as the record
/// `name`, its outcome the one the reply encodes.
fn write(dir: &Path, addr: &str, name: &str, identity: &str, request: Value, note: &str) {
    let reply = exchange(addr, &request);
    let (outcome, kind) = Grpc.outcome(&reply).expect("an outcome");
    let mut value = json!({
        "wire": 1, "transport": "grpc", "exposure": identity,
        "outcome": outcome,
    });
    if let Some(k) = kind {
        value["kind"] = k.into();
    }
    value["request"] = request;
    value["reply"] = reply;
    value["scenario"] = json!({ "note": note });
    let mut text = serde_json::to_string_pretty(&value).unwrap();
    text.push('\n');
    std::fs::write(dir.join(format!("{name}.json")), text).unwrap();
    println!("wire/grpc/{name}.json: {outcome}");
}
