//! The comparison of records and replies as values, with what differs
//! between runs masked.
//!
//! Masked: the exposure's request id (a positive `request_id`; 0 is the
//! contract's "not a request"), every pid, and the addresses (the HTTP
//! `Host` header, a description's `listener.address`). A Unix peer's uid
//! and gid are the recording machine's as its pid is, so a named peer's ids
//! are masked too — but only where the reply's `caller` (or a description's
//! principal) repeats them: a caller that is not the peer's principal stays
//! unmasked and fails the comparison. A peer the kernel did not name (uid
//! -1) is the contract's and is compared as written. HTTP header names are
//! compared without regard to case (RFC 9110 § 5.1), and a reply is held
//! to the headers the expected reply names. Key order never matters.

use limen_core::hale::runtime::PeerCredentials;
use serde_json::{Map, Value};

use crate::record::{Record, Transport};

const REQUEST_ID: &str = "<request id>";
const PID: &str = "<pid>";
const UID: &str = "<peer uid>";
const GID: &str = "<peer gid>";
const ADDRESS: &str = "<address>";

fn masked_peer(peer: PeerCredentials) -> Value {
    if peer.uid < 0 {
        return serde_json::json!({"uid": peer.uid, "gid": peer.gid, "pid": peer.pid});
    }
    serde_json::json!({"uid": UID, "gid": GID, "pid": if peer.pid < 0 { Value::from(peer.pid) } else { PID.into() }})
}

/// Masks a Unix principal object where it is `peer`'s principal.
fn principal(p: &mut Map<String, Value>, peer: PeerCredentials) {
    if peer.uid < 0 || p.get("mode").and_then(Value::as_str) != Some("unix") {
        return;
    }
    let is = |v: Option<&Value>, n: i64| v.and_then(Value::as_i64) == Some(n);
    let all = is(p.get("uid"), peer.uid)
        && is(p.get("gid"), peer.gid)
        && p.get("name").and_then(Value::as_str) == Some(&format!("uid:{}", peer.uid));
    if all {
        p.insert("uid".into(), UID.into());
        p.insert("gid".into(), GID.into());
        p.insert("name".into(), format!("uid:{UID}").into());
        if is(p.get("pid"), peer.pid) && peer.pid >= 0 {
            p.insert("pid".into(), PID.into());
        }
    }
}

/// A description document (§ The description: `"description": 1`) with
/// its listener's address masked — the bound port, the socket's path are
/// the run's — and, over Unix, the principal it describes where it is the
/// peer.
fn document(doc: &mut Value, peer: Option<PeerCredentials>) {
    let Some(d) = doc.as_object_mut() else {
        return;
    };
    if !d.get("description").is_some_and(Value::is_u64) {
        return;
    }
    if let Some(Value::Object(l)) = d.get_mut("listener") {
        if l.contains_key("address") {
            l.insert("address".into(), ADDRESS.into());
        }
    }
    if let (Some(peer), Some(Value::Object(p))) = (
        peer,
        d.get_mut("caller").and_then(|c| c.get_mut("principal")),
    ) {
        principal(p, peer);
    }
}

/// A Unix reply with its request id masked, and its caller (and a
/// description's principal) masked where it is `peer`'s principal.
fn unix_reply(reply: &Value, peer: Option<PeerCredentials>) -> Value {
    let mut reply = reply.clone();
    let Some(o) = reply.as_object_mut() else {
        return reply;
    };
    if o.get("request_id")
        .and_then(Value::as_u64)
        .is_some_and(|id| id > 0)
    {
        o.insert("request_id".into(), REQUEST_ID.into());
    }
    if let Some(value) = o.get_mut("value") {
        document(value, peer);
    }
    if let (Some(peer), Some(Value::Object(caller))) = (peer, o.get_mut("caller")) {
        principal(caller, peer);
    }
    reply
}

/// An HTTP reply with its header names lowercased and a description's
/// address masked.
fn http_reply(reply: &Value) -> Value {
    let mut reply = with_headers(reply, false);
    if let Some(body) = reply.get_mut("body") {
        document(body, None);
    }
    reply
}

/// Header names lowercased; `Host` (an address) dropped.
fn headers(h: &Value, drop_host: bool) -> Value {
    let Some(o) = h.as_object() else {
        return h.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        let k = k.to_ascii_lowercase();
        if drop_host && k == "host" {
            continue;
        }
        out.insert(k, v.clone());
    }
    Value::Object(out)
}

fn with_headers(v: &Value, drop_host: bool) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        if let Some(h) = o.get("headers").map(|h| headers(h, drop_host)) {
            o.insert("headers".into(), h);
        }
    }
    v
}

/// A request, masked for comparison.
pub fn request(transport: &Transport, request: &Value) -> Value {
    match transport {
        Transport::Http | Transport::Mcp => with_headers(request, true),
        _ => request.clone(),
    }
}

/// A reply, masked for comparison; `peer` is the Unix peer the reply
/// answered.
pub fn reply(transport: &Transport, reply: &Value, peer: Option<PeerCredentials>) -> Value {
    match transport {
        Transport::Unix => unix_reply(reply, peer),
        Transport::Http => http_reply(reply),
        Transport::Mcp => {
            let mut reply = with_headers(reply, false);
            crate::mcp::mask_reply(&mut reply);
            reply
        }
        Transport::Other(_) => reply.clone(),
    }
}

/// `got` held to the headers `expected` names: its other headers dropped.
/// Both are masked HTTP replies.
pub fn restrict_headers(got: &Value, expected: &Value) -> Value {
    let mut got = got.clone();
    let names: Vec<String> = expected
        .get("headers")
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Object(h)) = got.get_mut("headers") {
        h.retain(|k, _| names.contains(k));
    }
    got
}

/// A whole record masked for comparison with the reference record of the
/// same name: without its `scenario` (the reference states none), its
/// peer, request and reply masked.
pub fn record(r: &Record) -> Value {
    let mut v = r.value.clone();
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    o.remove("scenario");
    if let Some(p) = r.peer {
        o.insert("peer".into(), masked_peer(p));
    }
    o.insert("request".into(), request(&r.transport, &r.request));
    o.insert("reply".into(), reply(&r.transport, &r.reply, r.peer));
    v
}

/// Compares a reply `got` (answering `got_peer`) with the recorded
/// `expected` (answering `expected_peer`): `None` when they are equal as
/// values, masked; else the first difference.
pub fn compare_reply(
    transport: &Transport,
    expected: &Value,
    expected_peer: Option<PeerCredentials>,
    got: &Value,
    got_peer: Option<PeerCredentials>,
) -> Option<String> {
    let want = reply(transport, expected, expected_peer);
    let mut have = reply(transport, got, got_peer);
    if transport.is_http_form() {
        have = restrict_headers(&have, &want);
    }
    first_difference(&want, &have)
}

/// Compares a record with the reference record of the same name as values,
/// masked; the reference names the headers it holds.
pub fn compare_record(reference: &Record, ours: &Record) -> Option<String> {
    let want = record(reference);
    let mut have = record(ours);
    if ours.transport.is_http_form() {
        if let (Some(w), Some(h)) = (want.get("reply"), have.get("reply")) {
            let restricted = restrict_headers(h, w);
            have["reply"] = restricted;
        }
    }
    first_difference(&want, &have)
}

/// The peer a Unix description document describes, read from its own
/// `caller.principal`.
fn described_peer(doc: &Value) -> Option<PeerCredentials> {
    let p = doc.pointer("/caller/principal")?;
    if p.get("mode")?.as_str()? != "unix" {
        return None;
    }
    Some(PeerCredentials {
        uid: p.get("uid")?.as_i64()?,
        gid: p.get("gid")?.as_i64()?,
        pid: p.get("pid")?.as_i64()?,
    })
}

/// Compares a description document `got` (answering `got_peer`) with a
/// reference document, which answers the peer it names itself: `None` when
/// they are equal as values, masked as a reply's document is.
pub fn compare_document(
    reference: &Value,
    got: &Value,
    got_peer: Option<PeerCredentials>,
) -> Option<String> {
    let mut want = reference.clone();
    document(&mut want, described_peer(reference));
    let mut have = got.clone();
    document(&mut have, got_peer);
    first_difference(&want, &have)
}

fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 96 {
        let cut: String = text.chars().take(93).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// The first place two values differ, as `$.path: expected X, got Y`
/// (object keys in `expected`'s order, then those only `got` has).
pub fn first_difference(expected: &Value, got: &Value) -> Option<String> {
    diff(expected, got, "$")
}

fn diff(expected: &Value, got: &Value, path: &str) -> Option<String> {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let at = format!("{path}.{k}");
                match b.get(k) {
                    None => return Some(format!("{at}: expected {}, got nothing", show(v))),
                    Some(w) => {
                        if let Some(d) = diff(v, w, &at) {
                            return Some(d);
                        }
                    }
                }
            }
            b.iter()
                .find(|(k, _)| !a.contains_key(*k))
                .map(|(k, w)| format!("{path}.{k}: expected nothing, got {}", show(w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                if let Some(d) = diff(v, w, &format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (a.len() != b.len())
                .then(|| format!("{path}: expected {} items, got {}", a.len(), b.len()))
        }
        (a, b) if a == b => None,
        (a, b) => Some(format!("{path}: expected {}, got {}", show(a), show(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PEER: PeerCredentials = PeerCredentials {
        uid: 1000,
        gid: 1000,
        pid: 4242,
    };

    fn line(uid: i64, pid: i64, id: u64) -> Value {
        json!({"request_id": id, "id": "c-1", "ok": true, "value": {},
               "caller": {"mode": "unix", "name": format!("uid:{uid}"), "uid": uid, "gid": uid, "pid": pid}})
    }

    #[test]
    fn the_peer_and_request_id_are_masked_where_the_reply_repeats_them() {
        let other = PeerCredentials {
            uid: 0,
            gid: 0,
            pid: 77,
        };
        assert_eq!(
            compare_reply(
                &Transport::Unix,
                &line(1000, 4242, 1),
                Some(PEER),
                &line(0, 77, 9),
                Some(other)
            ),
            None
        );
        // A caller that is not the peer's principal is a difference.
        let d = compare_reply(
            &Transport::Unix,
            &line(1000, 4242, 1),
            Some(PEER),
            &line(5, 77, 9),
            Some(other),
        )
        .unwrap();
        assert!(d.starts_with("$.caller."), "{d}");
        // request_id 0 is the contract's, not a run's.
        let d = compare_reply(
            &Transport::Unix,
            &line(1000, 4242, 0),
            Some(PEER),
            &line(1000, 4242, 3),
            Some(PEER),
        )
        .unwrap();
        assert_eq!(d, "$.request_id: expected 0, got \"<request id>\"");
    }

    #[test]
    fn http_headers_are_held_to_the_names_expected_without_case() {
        let want =
            json!({"status": 200, "headers": {"Content-Type": "application/json"}, "body": {}});
        let got = json!({"status": 200, "headers": {"content-type": "application/json", "Cache-Control": "no-store"}, "body": {}});
        assert_eq!(
            compare_reply(&Transport::Http, &want, None, &got, None),
            None
        );
        let bad = json!({"status": 200, "headers": {"Content-Type": "text/plain"}, "body": {}});
        assert_eq!(
            compare_reply(&Transport::Http, &want, None, &bad, None).unwrap(),
            "$.headers.content-type: expected \"application/json\", got \"text/plain\""
        );
    }

    #[test]
    fn a_description_is_compared_without_its_address_and_peer() {
        let doc = |address: &str, uid: i64, pid: i64| {
            json!({"description": 1, "listener": {"transport": "unix", "address": address},
                   "caller": {"principal": {"mode": "unix", "name": format!("uid:{uid}"),
                              "uid": uid, "gid": uid, "pid": pid}, "roles": ["operator"]}})
        };
        let ran_as = PeerCredentials {
            uid: 0,
            gid: 0,
            pid: 9,
        };
        let reference = doc("/run/desk/admin.sock", 1000, 4242);
        assert_eq!(
            compare_document(&reference, &doc("/tmp/a.sock", 0, 9), Some(ran_as)),
            None
        );
        // The principal must be the peer who asked.
        assert!(
            compare_document(&reference, &doc("/tmp/a.sock", 5, 9), Some(ran_as))
                .unwrap()
                .starts_with("$.caller.principal.")
        );
        // Within a Unix reply, the same.
        let line = |d: Value, uid: i64| {
            json!({"request_id": 2, "id": null, "ok": true, "value": d,
                   "caller": {"mode": "unix", "name": format!("uid:{uid}"), "uid": uid, "gid": uid, "pid": 9}})
        };
        assert_eq!(
            compare_reply(
                &Transport::Unix,
                &line(doc("/run/desk/admin.sock", 1000, 9), 1000),
                Some(PeerCredentials {
                    uid: 1000,
                    gid: 1000,
                    pid: 9
                }),
                &line(doc("/tmp/a.sock", 0, 9), 0),
                Some(ran_as)
            ),
            None
        );
    }

    #[test]
    fn differences_name_their_path() {
        assert_eq!(
            first_difference(&json!({"a": [1, {"b": 2}]}), &json!({"a": [1, {"b": 3}]})).unwrap(),
            "$.a[1].b: expected 2, got 3"
        );
        assert_eq!(
            first_difference(&json!({"a": 1}), &json!({"a": 1, "z": 2})).unwrap(),
            "$.z: expected nothing, got 2"
        );
        assert_eq!(
            first_difference(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})),
            None
        );
    }
}
