//! `unix::Rpc` (§ The Unix transport): one JSON object per line on a Unix
//! socket, the peer named by its kernel credentials.
//!
//! A record's `request` is the line's object as sent, sent as compact JSON
//! in the order written and a newline; its `reply` is the reply line's
//! object, and its `peer` the kernel credentials the connection carried.

use limen_core::hale::model::{Exposure as ModelExposure, Program, TransportKind};
use limen_core::hale::runtime::{ExposureSpec, PeerCredentials};
use limen_core::wire::unix::UnixFront;
use serde_json::Value;

use super::{refusal_outcome, Endpoint, Form, FrontMaker};
use crate::jsonpath::RecordError;
use crate::mask;

/// The Unix transport. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Unix;

/// The Unix line of a record's request: its object as compact JSON, in the
/// order written, and a newline.
pub fn line(request: &Value) -> Vec<u8> {
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The first line of `raw` (without its newline), once it is whole.
pub fn first_line(raw: &[u8]) -> Option<&[u8]> {
    let end = raw.iter().position(|&b| b == b'\n')?;
    Some(&raw[..end])
}

/// A reply line as a record's reply.
pub fn reply_value(line: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(line).map_err(|_| {
        format!(
            "the reply line is not JSON: {}",
            String::from_utf8_lossy(line)
        )
    })
}

impl Form for Unix {
    fn name(&self) -> &'static str {
        "unix"
    }

    fn title(&self) -> &'static str {
        "Unix"
    }

    fn listener(&self) -> TransportKind {
        TransportKind::Unix
    }

    fn carries_peer(&self) -> bool {
        true
    }

    fn check_request(&self, _request: &Value, _path: &str) -> Result<(), RecordError> {
        Ok(())
    }

    fn outcome_of(&self, reply: &Value) -> Option<(String, Option<String>)> {
        match reply.get("ok")? {
            Value::Bool(true) => Some(("result".into(), None)),
            Value::Bool(false) if reply.get("error").is_some() => {
                Some(("handler_error".into(), None))
            }
            Value::Bool(false) => Some(refusal_outcome(
                reply
                    .get("refusal")
                    .and_then(|r| r.get("kind"))
                    .and_then(Value::as_str),
            )),
            _ => None,
        }
    }

    fn member_of(&self, request: &Value, _spec: &ExposureSpec) -> Option<String> {
        request.get("call")?.as_str().map(str::to_owned)
    }

    fn document<'a>(&self, reply: &'a Value) -> Option<&'a Value> {
        reply.get("value")
    }

    fn request_bytes(&self, request: &Value, _host: Option<&str>) -> Result<Vec<u8>, String> {
        Ok(line(request))
    }

    fn read_reply(&self, raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
        match first_line(raw) {
            Some(line) => reply_value(line).map(Some),
            None if eof && !raw.is_empty() => {
                Err("the connection ended inside the reply line".into())
            }
            None => Ok(None),
        }
    }

    /// The request id masked, and the caller (and a description's
    /// principal) masked where it is `peer`'s principal.
    fn mask_reply(&self, reply: &Value, peer: Option<PeerCredentials>) -> Value {
        let mut reply = reply.clone();
        let Some(o) = reply.as_object_mut() else {
            return reply;
        };
        if o.get("request_id")
            .and_then(Value::as_u64)
            .is_some_and(|id| id > 0)
        {
            o.insert("request_id".into(), mask::REQUEST_ID.into());
        }
        if let Some(value) = o.get_mut("value") {
            mask::document(value, peer);
        }
        if let (Some(peer), Some(Value::Object(caller))) = (peer, o.get_mut("caller")) {
            mask::principal(caller, peer);
        }
        reply
    }

    fn front_maker(
        &self,
        _program: &Program,
        _exposure: &ModelExposure,
        _spec: &ExposureSpec,
    ) -> Result<FrontMaker, String> {
        Ok(Box::new(|now, limits, peer, c| {
            Box::new(UnixFront::new(now, limits.line, peer, c))
        }))
    }

    fn endpoint(&self, text: &str) -> Option<Endpoint> {
        let path = text.strip_prefix("unix:")?;
        (!path.is_empty()).then(|| Endpoint::Unix(path.into()))
    }

    fn endpoint_form(&self) -> &'static str {
        "unix:<path>"
    }

    fn speaks_to(&self, endpoint: &Endpoint) -> bool {
        matches!(endpoint, Endpoint::Unix(_))
    }

    fn describe_request(&self, _bearer: Option<&str>) -> Value {
        serde_json::json!({"describe": true, "id": "limen-conformance"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::compare_reply;
    use serde_json::json;

    const PEER: PeerCredentials = PeerCredentials {
        uid: 1000,
        gid: 1000,
        pid: 4242,
        groups: None,
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
            groups: None,
        };
        assert_eq!(
            compare_reply(
                &Unix,
                &line(1000, 4242, 1),
                Some(PEER),
                &line(0, 77, 9),
                Some(other)
            ),
            None
        );
        // A caller that is not the peer's principal is a difference.
        let d = compare_reply(
            &Unix,
            &line(1000, 4242, 1),
            Some(PEER),
            &line(5, 77, 9),
            Some(other),
        )
        .unwrap();
        assert!(d.starts_with("$.caller."), "{d}");
        // request_id 0 is the contract's, not a run's.
        let d = compare_reply(
            &Unix,
            &line(1000, 4242, 0),
            Some(PEER),
            &line(1000, 4242, 3),
            Some(PEER),
        )
        .unwrap();
        assert_eq!(d, "$.request_id: expected 0, got \"<request id>\"");
    }

    #[test]
    fn a_description_in_a_reply_is_masked_as_the_peer_it_answered() {
        let doc = |address: &str, uid: i64| {
            json!({"description": 1, "listener": {"transport": "unix", "address": address},
                   "caller": {"principal": {"mode": "unix", "name": format!("uid:{uid}"),
                              "uid": uid, "gid": uid, "pid": 9}, "roles": ["operator"]}})
        };
        let line = |d: Value, uid: i64| {
            json!({"request_id": 2, "id": null, "ok": true, "value": d,
                   "caller": {"mode": "unix", "name": format!("uid:{uid}"), "uid": uid, "gid": uid, "pid": 9}})
        };
        let ran_as = PeerCredentials {
            uid: 0,
            gid: 0,
            pid: 9,
            groups: None,
        };
        assert_eq!(
            compare_reply(
                &Unix,
                &line(doc("/run/desk/admin.sock", 1000), 1000),
                Some(PeerCredentials {
                    uid: 1000,
                    gid: 1000,
                    pid: 9,
                    groups: None,
                }),
                &line(doc("/tmp/a.sock", 0), 0),
                Some(ran_as)
            ),
            None
        );
    }

    #[test]
    fn outcomes_follow_the_unix_column() {
        assert_eq!(
            Unix.outcome_of(&json!({"ok": true})),
            Some(("result".into(), None))
        );
        assert_eq!(
            Unix.outcome_of(&json!({"ok": false, "refusal": {"kind": "server"}})),
            Some(("server_error".into(), None))
        );
        assert_eq!(
            Unix.outcome_of(&json!({"ok": false, "error": {"code": "x"}})),
            Some(("handler_error".into(), None))
        );
    }
}
