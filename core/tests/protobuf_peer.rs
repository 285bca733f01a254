//! The protobuf codec held to `protoc`, a real protobuf implementation,
//! over the witness's own `.proto` (`../shared/hale-witness/Public.proto`):
//! every message our codec writes for a witness row is byte for byte what
//! `protoc --encode` writes for the same value, and what protoc writes our
//! codec reads back as the JSON codec's value. The values are the recorded
//! bodies of the witness's HTTP exchanges (the spec: the recorded
//! `{"order": 41, "notional": 125000}` is an OrderReceipt) and seeded
//! random values of the same shapes. A missing `protoc` skips with a
//! message, unless `LIMEN_REQUIRE_PEERS=1`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use limen_core::hale::codec::Shape;
use limen_core::hale::model::parse_program;
use limen_core::hale::protobuf;
use limen_core::hale::runtime::{Refusal, RefusalKind};
use limen_core::hale::serving::shape_of;
use limen_core::wire::grpc;
use serde_json::Value;

fn witness() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ));
    if dir.join("Public.proto").is_file() {
        Some(dir)
    } else {
        eprintln!("skipping: the witness fixtures are absent");
        None
    }
}

fn protoc_present() -> bool {
    if Command::new("protoc").arg("--version").output().is_ok() {
        return true;
    }
    let required = std::env::var("LIMEN_REQUIRE_PEERS").as_deref() == Ok("1");
    assert!(!required, "protoc missing; run scripts/install-peers");
    eprintln!("skipped: protoc missing; run scripts/install-peers");
    false
}

/// `protoc --encode=MESSAGE` of `text` (protobuf text format), over the
/// witness's `Public.proto`.
fn protoc_encode(dir: &Path, message: &str, text: &str) -> Vec<u8> {
    protoc_encode_in(dir, "Public.proto", message, text)
}

/// `protoc --encode=MESSAGE` of `text` over `file` in `dir` (and protoc's
/// own include folder, for `google/protobuf/any.proto`).
fn protoc_encode_in(dir: &Path, file: &str, message: &str, text: &str) -> Vec<u8> {
    let mut child = Command::new("protoc")
        .arg(format!("--encode={message}"))
        .arg(format!("--proto_path={}", dir.display()))
        .arg("--proto_path=/usr/include")
        .arg(file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("protoc runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "protoc --encode={message} of {text:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `value` in protobuf text format, each field under its JSON key (the
/// proto field's name).
fn text_format(shape: &Shape, value: &Value) -> String {
    match shape {
        Shape::Struct(fields) => fields
            .iter()
            .map(|f| {
                let v = &value[&f.key];
                match &f.shape {
                    Shape::Struct(_) => format!("{} {{ {} }}", f.key, text_format(&f.shape, v)),
                    scalar => format!("{}: {}", f.key, text_format(scalar, v)),
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Shape::String => {
            let s = value.as_str().unwrap();
            let mut out = String::from("\"");
            for b in s.bytes() {
                match b {
                    b'"' | b'\\' => out.push_str(&format!("\\{}", b as char)),
                    0x20..=0x7e => out.push(b as char),
                    _ => out.push_str(&format!("\\{b:03o}")),
                }
            }
            out.push('"');
            out
        }
        _ => value.to_string(),
    }
}

/// The witness's Public surface: each member's request, response and
/// error shapes with their message names, read from `Public.proto` (the
/// rpc line names the request and response, the comment the error).
struct Row {
    member: String,
    messages: Vec<(Shape, String)>,
    request: usize,
    response: usize,
    error: Option<usize>,
}

fn rows(dir: &Path) -> Vec<Row> {
    let src = std::fs::read_to_string(dir.join("program.hl")).unwrap();
    let program = parse_program("program.hl", &src).unwrap_or_else(|d| panic!("{d}"));
    let proto = std::fs::read_to_string(dir.join("Public.proto")).unwrap();
    let surface = program.surface("Public").expect("the witness has Public");
    surface
        .rows
        .iter()
        .map(|row| {
            let rpc = row.member.replace("::", "__");
            let line = proto
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("rpc {rpc}(")))
                .unwrap_or_else(|| panic!("Public.proto has rpc {rpc}"));
            let inner = |open: &str| {
                let at = line.find(open).unwrap() + open.len();
                line[at..line[at..].find(')').unwrap() + at].to_owned()
            };
            let (request, response) = (inner(&format!("{rpc}(")), inner("returns ("));
            let comment = format!("// rpc {}", row.member);
            let error = proto
                .lines()
                .skip_while(|l| l.trim() != comment)
                .take_while(|l| !l.contains("rpc ") || l.contains(&comment))
                .find_map(|l| l.split("type.hale.dev/").nth(1).map(str::to_owned));
            let shape = |ty| shape_of(&program.types, ty).unwrap();
            let mut messages = vec![
                (shape(row.request.as_ref().unwrap()), request),
                (shape(row.response.as_ref().unwrap()), response),
            ];
            if let (Some(ty), Some(name)) = (&row.error, error) {
                messages.push((shape(ty), name));
            }
            Row {
                member: row.member.clone(),
                error: (messages.len() == 3).then_some(2),
                messages,
                request: 0,
                response: 1,
            }
        })
        .collect()
}

/// Ours and protoc's bytes for `value` are the same, and ours reads
/// protoc's back as `value`.
fn agree(dir: &Path, shape: &Shape, message: &str, value: &Value) {
    let ours = protobuf::encode(shape, value).unwrap();
    let theirs = protoc_encode(dir, message, &text_format(shape, value));
    assert_eq!(ours, theirs, "{message} {value}");
    assert_eq!(
        &protobuf::decode(shape, &theirs).unwrap(),
        value,
        "{message}"
    );
}

#[test]
fn the_recorded_bodies_encode_as_protoc_encodes_them() {
    let Some(dir) = witness() else { return };
    if !protoc_present() {
        return;
    }
    let rows = rows(&dir);
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.join("wire/http")).unwrap() {
        let record: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        if !record["exposure"].as_str().unwrap().starts_with("Public@") {
            continue;
        }
        let path = record["request"]["path"].as_str().unwrap();
        let Some(row) = rows.iter().find(|r| path == format!("/call/{}", r.member)) else {
            continue;
        };
        let (shape, name) = &row.messages[row.request];
        if protobuf::encode(shape, &record["request"]["body"]).is_ok() {
            agree(&dir, shape, name, &record["request"]["body"]);
            checked += 1;
        }
        let reply = match record["outcome"].as_str().unwrap() {
            "result" => Some(row.response),
            "handler_error" => row.error,
            _ => None,
        };
        if let Some(i) = reply {
            let (shape, name) = &row.messages[i];
            agree(&dir, shape, name, &record["reply"]["body"]);
            checked += 1;
        }
    }
    // The result's request and response, the handler error's request and
    // error at least.
    assert!(checked >= 4, "{checked} bodies checked");
}

#[test]
fn random_values_of_every_public_message_encode_as_protoc_encodes_them() {
    let Some(dir) = witness() else { return };
    if !protoc_present() {
        return;
    }
    let mut state = 0x5eed_u64;
    let mut next = move || {
        // SplitMix64.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    fn sample(shape: &Shape, next: &mut dyn FnMut() -> u64) -> Value {
        match shape {
            Shape::Int { min, max } => {
                let raw = match next() % 4 {
                    0 => 0,
                    1 => (next() % 300) as i64,
                    2 => -((next() % 1_000_000) as i64),
                    _ => next() as i64,
                };
                let lo = min.unwrap_or(i64::MIN);
                let hi = max.unwrap_or(i64::MAX);
                raw.clamp(lo, hi).into()
            }
            Shape::Float => ((next() % 2_000_001) as f64 / 8.0 - 125_000.0).into(),
            Shape::Bool => (next() % 2 == 0).into(),
            Shape::String => {
                let pool = ["", "ACME", "é", "日本", "a\"b\\c", "tab\there", "🦀"];
                let n = next() % 3;
                (0..n)
                    .map(|_| pool[(next() % pool.len() as u64) as usize])
                    .collect::<String>()
                    .into()
            }
            Shape::Struct(fields) => Value::Object(
                fields
                    .iter()
                    .map(|f| (f.key.clone(), sample(&f.shape, next)))
                    .collect(),
            ),
        }
    }
    let mut messages = 0;
    for row in rows(&dir) {
        for (shape, name) in &row.messages {
            for _ in 0..12 {
                let value = sample(shape, &mut next);
                agree(&dir, shape, name, &value);
            }
            messages += 1;
        }
    }
    assert!(messages >= 5, "{messages} messages sampled");
}

/// A text-format string literal of `s`.
fn quoted(s: &str) -> String {
    text_format(&Shape::String, &Value::String(s.to_owned()))
}

#[test]
fn every_recorded_refusal_is_the_hale_refusal_protoc_writes() {
    let Some(dir) = witness() else { return };
    if !protoc_present() {
        return;
    }
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.join("wire/http")).unwrap() {
        let record: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let body = &record["reply"]["body"]["refusal"];
        let Some(kind) = body["kind"].as_str() else {
            continue;
        };
        let (ours, text) = match RefusalKind::parse(kind) {
            Some(kind) => {
                let mut r = Refusal::new(kind, body["reason"].as_str().unwrap());
                r.served = body["served"].as_str().map(str::to_owned);
                r.requires = body["requires"].as_array().map(|roles| {
                    roles
                        .iter()
                        .map(|x| x.as_str().unwrap().to_owned())
                        .collect()
                });
                let mut text = format!(
                    "kind: {} reason: {}",
                    quoted(kind.as_str()),
                    quoted(&r.reason)
                );
                for role in r.requires.iter().flatten() {
                    text.push_str(&format!(" requires: {}", quoted(role)));
                }
                if let Some(served) = &r.served {
                    text.push_str(&format!(" served: {}", quoted(served)));
                }
                (grpc::hale_refusal(Some(&r)), text)
            }
            // The server error: kind "server" alone.
            None => (grpc::hale_refusal(None), "kind: \"server\"".to_owned()),
        };
        assert_eq!(ours, protoc_encode(&dir, "HaleRefusal", &text), "{text}");
        checked += 1;
    }
    // Seven refusal kinds and the server error.
    assert!(checked >= 8, "{checked} refusals checked");
}

#[test]
fn grpc_status_details_are_the_google_rpc_status_protoc_writes() {
    if !protoc_present() {
        return;
    }
    // google.rpc.Status as googleapis publishes it.
    let dir = std::env::temp_dir().join(format!("limen-status-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("google/rpc")).unwrap();
    std::fs::write(
        dir.join("google/rpc/status.proto"),
        "syntax = \"proto3\";\npackage google.rpc;\nimport \"google/protobuf/any.proto\";\n\
         message Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }\n",
    )
    .unwrap();
    for (code, message, type_url, value) in [
        (
            9,
            "handler_error",
            "type.hale.dev/OrderError",
            &b"\x0a\x0dunknown_order"[..],
        ),
        (
            3,
            "unknown_member: Orders::x",
            "type.hale.dev/HaleRefusal",
            b"\x0a\x09malformed",
        ),
        (
            13,
            "server_error",
            "type.hale.dev/hale.api.Refusal",
            br#"{"kind":"server"}"#,
        ),
    ] {
        let ours = grpc::status_details(code, message, type_url, value);
        let escaped: String = value.iter().map(|b| format!("\\{b:03o}")).collect();
        let text = format!(
            "code: {code} message: {} details {{ type_url: {} value: \"{escaped}\" }}",
            quoted(message),
            quoted(type_url)
        );
        assert_eq!(
            ours,
            protoc_encode_in(&dir, "google/rpc/status.proto", "google.rpc.Status", &text),
            "{text}"
        );
    }
}
