//! The replay driven by plain std clients: a request written as the record
//! has it gets the record's reply, a differing one is named field by field,
//! `Lost` closes with no reply.

use super::*;
use serde_json::json;
use std::path::Path;

/// An HTTP record of the witness's shape, so these tests need no fixtures.
fn http_record() -> WireRecord {
    let value = json!({
        "wire": 1,
        "transport": "http",
        "exposure": "Public@fnv1a64:a8930d6e7998e986/public",
        "outcome": "refusal",
        "kind": "full",
        "request": {
            "method": "POST",
            "path": "/call/Orders::place",
            "headers": {
                "Authorization": "Bearer t-alice",
                "Content-Type": "application/json",
                "Hale-Surface-Digest": "fnv1a64:a8930d6e7998e986"
            },
            "body": {"symbol": "ACME", "qty": 10, "limit": 12500}
        },
        "reply": {
            "status": 429,
            "headers": {"Content-Type": "application/json"},
            "body": {"refusal": {"kind": "full", "reason": "the exposure holds 64 requests"}}
        }
    });
    WireRecord::parse("refusal_full", &value.to_string()).unwrap()
}

/// A Unix record of the witness's shape.
fn unix_record() -> WireRecord {
    let value = json!({
        "wire": 1,
        "transport": "unix",
        "exposure": "Admin@fnv1a64:40381db6685c9f75/admin",
        "outcome": "result",
        "peer": {"uid": 1000, "gid": 1000, "pid": 4242},
        "request": {
            "call": "Orders::cancel",
            "payload": {"order": 41},
            "id": "c-1",
            "digest": "fnv1a64:40381db6685c9f75"
        },
        "reply": {"request_id": 1, "id": "c-1", "ok": true, "value": {"order": 41, "was_open": true}}
    });
    WireRecord::parse("result", &value.to_string()).unwrap()
}

/// The raw HTTP request for `request` (a record's `request`), with `extra`
/// header lines added.
fn http_bytes(request: &Value, extra: &[&str]) -> Vec<u8> {
    let body = request["body"].to_string();
    let mut out = format!(
        "{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
        request["method"].as_str().unwrap(),
        request["path"].as_str().unwrap(),
        body.len()
    );
    for (name, value) in request["headers"].as_object().unwrap() {
        out.push_str(&format!("{name}: {}\r\n", value.as_str().unwrap()));
    }
    for line in extra {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    out.into_bytes()
}

/// Sends `bytes` to an `http://` endpoint and reads to EOF: the status,
/// the headers (names in lowercase) and the body, or `None` when the
/// connection ended with no reply.
fn http_exchange(endpoint: &str, bytes: &[u8]) -> Option<(u64, Map<String, Value>, Value)> {
    let addr = endpoint.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(bytes).unwrap();
    let mut reply = Vec::new();
    // A reset after the replay closed is a reply of nothing, as an EOF is.
    let _ = stream.read_to_end(&mut reply);
    if reply.is_empty() {
        return None;
    }
    let text = String::from_utf8(reply).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.to_ascii_lowercase(), Value::String(v.trim().to_owned()))
        })
        .collect::<Map<_, _>>();
    assert_eq!(
        headers["content-length"],
        body.len().to_string(),
        "Content-Length counts the body"
    );
    Some((status, headers, serde_json::from_str(body).unwrap()))
}

/// Sends `line` to a `unix:` endpoint and reads to EOF: the reply line, or
/// `None` when the connection ended with none.
fn unix_exchange(endpoint: &str, line: &str) -> Option<Value> {
    let mut stream = UnixStream::connect(endpoint.strip_prefix("unix:").unwrap()).unwrap();
    stream.write_all(line.as_bytes()).unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    if reply.is_empty() {
        return None;
    }
    assert!(
        reply.ends_with('\n') && reply.matches('\n').count() == 1,
        "one line: {reply:?}"
    );
    Some(serde_json::from_str(&reply).unwrap())
}

#[test]
fn a_record_reads_as_its_fields() {
    let http = http_record();
    assert_eq!(http.transport, Transport::Http);
    assert_eq!(http.member, "Orders::place");
    assert_eq!(http.bearer.as_deref(), Some("t-alice"));
    assert_eq!(http.digest, "fnv1a64:a8930d6e7998e986");
    assert_eq!(http.served, "fnv1a64:a8930d6e7998e986");
    assert_eq!(http.kind.as_deref(), Some("full"));
    assert_eq!(http.payload["qty"], 10);
    assert_eq!(http.id, None);
    let unix = unix_record();
    assert_eq!(
        (unix.member.as_str(), unix.id.as_deref()),
        ("Orders::cancel", Some("c-1"))
    );
    assert_eq!(unix.bearer, None);
    assert_eq!(unix.kind, None);
    assert_eq!(unix.outcome, "result");
}

#[test]
fn a_matching_http_request_gets_the_recorded_reply() {
    let record = http_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    // Transport headers a client adds by itself are no difference.
    let bytes = http_bytes(
        record.request(),
        &["User-Agent: node", "Accept: */*", "Connection: keep-alive"],
    );
    let (status, headers, body) = http_exchange(replay.endpoint(), &bytes).unwrap();
    replay.finish().unwrap();
    assert_eq!(status, 429);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["connection"], "close");
    assert_eq!(body, record.reply()["body"]);
}

#[test]
fn the_member_may_be_percent_encoded_and_header_names_any_case() {
    let record = http_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    let mut request = record.request().clone();
    request["path"] = json!("/call/Orders%3A%3Aplace");
    let headers = request["headers"].as_object_mut().unwrap();
    let value = headers.shift_remove("Hale-Surface-Digest").unwrap();
    headers.insert("hale-surface-digest".into(), value);
    assert!(http_exchange(replay.endpoint(), &http_bytes(&request, &[])).is_some());
    replay.finish().unwrap();
}

#[test]
fn a_differing_http_request_is_named_field_by_field() {
    let record = http_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    let mut request = record.request().clone();
    request["body"]["qty"] = json!(11);
    request["headers"]["Authorization"] = json!("Bearer t-bob");
    request["headers"]
        .as_object_mut()
        .unwrap()
        .shift_remove("Hale-Surface-Digest");
    // The replay still answers, so the client's decoding can be held too.
    assert!(http_exchange(replay.endpoint(), &http_bytes(&request, &["X-Trace: 7"])).is_some());
    let err = replay.finish().unwrap_err();
    for expected in [
        r#"/body/qty: recorded 10, sent 11"#,
        r#"/headers/Authorization: recorded "Bearer t-alice", sent "Bearer t-bob""#,
        r#"/headers/Hale-Surface-Digest: recorded "fnv1a64:a8930d6e7998e986", sent nothing"#,
        r#"/headers/X-Trace: recorded nothing, sent "7""#,
    ] {
        assert!(err.contains(expected), "{expected} in:\n{err}");
    }
    assert_eq!(
        err.lines().count(),
        5,
        "a heading and four differences:\n{err}"
    );
}

#[test]
fn an_ignored_pointer_is_left_out_on_both_sides() {
    let record = http_record();
    let replay = Replay::serve(&record, Mode::Answer)
        .unwrap()
        .ignoring(&["/headers/hale-surface-digest", "/body/qty"]);
    let mut request = record.request().clone();
    request["headers"]["Hale-Surface-Digest"] = json!("fnv1a64:0123456789abcdef");
    request["body"].as_object_mut().unwrap().shift_remove("qty");
    assert!(http_exchange(replay.endpoint(), &http_bytes(&request, &[])).is_some());
    replay.finish().unwrap();
}

#[test]
fn lost_reads_the_http_request_and_closes_with_no_reply() {
    let record = http_record();
    let replay = Replay::serve(&record, Mode::Lost).unwrap();
    assert_eq!(
        http_exchange(replay.endpoint(), &http_bytes(record.request(), &[])),
        None
    );
    replay.finish().unwrap();
}

#[test]
fn a_matching_unix_line_gets_the_recorded_reply_line() {
    let record = unix_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    assert!(replay.endpoint().starts_with("unix:/"));
    // Key order is no difference: the line is compared as a value.
    let line = r#"{"digest":"fnv1a64:40381db6685c9f75","id":"c-1","payload":{"order":41.0},"call":"Orders::cancel"}"#;
    let reply = unix_exchange(replay.endpoint(), &format!("{line}\n")).unwrap();
    replay.finish().unwrap();
    assert_eq!(&reply, record.reply());
}

#[test]
fn a_differing_unix_line_is_named_and_lost_sends_nothing() {
    let record = unix_record();
    let replay = Replay::serve(&record, Mode::Lost).unwrap();
    let line = r#"{"call":"Orders::cancel","payload":{"order":"41"},"id":"c-1","extra":true}"#;
    assert_eq!(unix_exchange(replay.endpoint(), &format!("{line}\n")), None);
    let err = replay.finish().unwrap_err();
    for expected in [
        r#"/payload/order: recorded 41, sent "41""#,
        r#"/digest: recorded "fnv1a64:40381db6685c9f75", sent nothing"#,
        r#"/extra: recorded nothing, sent true"#,
    ] {
        assert!(err.contains(expected), "{expected} in:\n{err}");
    }
}

#[test]
fn no_request_and_a_cut_off_request_are_named() {
    let record = unix_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    let path = replay.endpoint().strip_prefix("unix:").unwrap().to_owned();
    drop(UnixStream::connect(&path).unwrap());
    let err = replay.finish().unwrap_err();
    assert!(err.contains("ended before the request line did"), "{err}");
    assert!(!Path::new(&path).exists(), "the socket's folder is removed");

    let record = http_record();
    let replay = Replay::serve(&record, Mode::Answer).unwrap();
    let bytes = http_bytes(record.request(), &[]);
    let mut stream =
        TcpStream::connect(replay.endpoint().strip_prefix("http://").unwrap()).unwrap();
    stream.write_all(&bytes[..bytes.len() - 3]).unwrap();
    drop(stream);
    let err = replay.finish().unwrap_err();
    assert!(err.contains("bytes into a body of"), "{err}");
}

/// Every witness record, written back as recorded by a plain client, is a
/// match and gets its recorded reply as a value; under `Lost` none.
#[test]
fn every_witness_record_replays_itself() {
    for transport in [Transport::Http, Transport::Unix] {
        let Some(records) = witness_records(transport) else {
            return;
        };
        assert_eq!(
            records.len(),
            10,
            "the witness records ten {transport} exchanges"
        );
        assert!(
            records.windows(2).all(|w| w[0].name < w[1].name),
            "sorted by name"
        );
        for record in &records {
            for mode in [Mode::Answer, Mode::Lost] {
                let replay = Replay::serve(record, mode).unwrap();
                let reply = match transport {
                    Transport::Http => http_exchange(replay.endpoint(), &http_bytes(record.request(), &[]))
                        .map(|(status, headers, body)| {
                            assert_eq!(headers["content-type"], "application/json", "{}", record.name);
                            json!({"status": status, "headers": {"Content-Type": headers["content-type"]}, "body": body})
                        }),
                    Transport::Unix => {
                        unix_exchange(replay.endpoint(), &format!("{}\n", record.request()))
                    }
                };
                replay
                    .finish()
                    .unwrap_or_else(|e| panic!("{}: {e}", record.name));
                match mode {
                    Mode::Answer => {
                        assert_eq!(reply.as_ref(), Some(record.reply()), "{}", record.name)
                    }
                    Mode::Lost => assert_eq!(reply, None, "{}", record.name),
                }
            }
        }
    }
}
