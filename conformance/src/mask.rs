//! The comparison as values, with what differs between runs masked: the
//! pieces every transport's masking is made of.
//!
//! Masked: the exposure's request id (a positive `request_id`; 0 is the
//! contract's "not a request"), every pid, and the addresses (the HTTP
//! `Host` header, a description's `listener.address`). A Unix peer's uid
//! and gid are the recording machine's as its pid is, so a named peer's ids
//! are masked too — but only where the reply's `caller` (or a description's
//! principal) repeats them: a caller that is not the peer's principal stays
//! unmasked and fails the comparison. A peer the kernel did not name (uid
//! -1) is the contract's and is compared as written. Key order never
//! matters. What each transport masks of its own (a Unix reply's request
//! id, HTTP's header names) is its module's, in [`crate::transport`].

use limen_core::hale::runtime::PeerCredentials;
use serde_json::{Map, Value};

/// What a run's request id is masked as.
pub const REQUEST_ID: &str = "<request id>";
const PID: &str = "<pid>";
const UID: &str = "<peer uid>";
const GID: &str = "<peer gid>";
const ADDRESS: &str = "<address>";

/// A peer's credentials masked as a record's `peer` is: a named peer's
/// ids are the recording machine's.
pub fn masked_peer(peer: PeerCredentials) -> Value {
    if peer.uid < 0 {
        return serde_json::json!({"uid": peer.uid, "gid": peer.gid, "pid": peer.pid});
    }
    serde_json::json!({"uid": UID, "gid": GID, "pid": if peer.pid < 0 { Value::from(peer.pid) } else { PID.into() }})
}

/// Masks a Unix principal object where it is `peer`'s principal.
pub fn principal(p: &mut Map<String, Value>, peer: PeerCredentials) {
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
pub fn document(doc: &mut Value, peer: Option<PeerCredentials>) {
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
        groups: None,
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

/// A value as a message shows it: its JSON, cut to 96 characters.
pub fn show(v: &Value) -> String {
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
            groups: None,
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
