//! § Outcomes' Unix column: the reply line a Unix connection reads,
//! `{"request_id", "id", "ok", "value" | "error" | "refusal", "caller"}`.
//!
//! The Unix transport's answer step (`wire::unix` re-exports it), here in
//! the `hale` layer because the fixture transport ([`super::fixture`])
//! answers with the same lines, and a WebSocket hub's `reply` frame holds
//! the same members.

use super::sources::write_u64;
use super::{Outcome, Principal};

/// The reply line of `outcome` (without its newline): `{"request_id", "id",
/// "ok", "value" | "error" | "refusal", "caller"}`. `id` is the client's id
/// as raw JSON text (`None` writes `null`).
pub fn reply_line(
    outcome: &Outcome,
    request_id: u64,
    id: Option<&str>,
    caller: &Principal,
) -> Vec<u8> {
    let mut caller_json = Vec::with_capacity(64);
    caller.write_json(&mut caller_json);
    let mut line = Vec::with_capacity(128);
    write_reply(outcome, request_id, id, &caller_json, &mut line);
    line
}

/// [`reply_line`] appended to `out`, with the caller given as its JSON
/// object's text (what [`Principal::write_json`] wrote): a transport that
/// answers one caller many times keeps that text, and writes the reply
/// straight into its output buffer.
pub fn write_reply(
    outcome: &Outcome,
    request_id: u64,
    id: Option<&str>,
    caller_json: &[u8],
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    write_reply_members(outcome, request_id, id, caller_json, out);
    out.push(b'}');
}

/// The members of [`write_reply`]'s object, without its braces: a hub's
/// `reply` frame is the same object with `"type":"reply"` first (§ Rpcs on
/// a hub).
pub fn write_reply_members(
    outcome: &Outcome,
    request_id: u64,
    id: Option<&str>,
    caller_json: &[u8],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"\"request_id\":");
    write_u64(request_id, out);
    out.extend_from_slice(b",\"id\":");
    out.extend_from_slice(id.unwrap_or("null").as_bytes());
    match outcome {
        Outcome::Result(v) | Outcome::Description(v) => {
            out.extend_from_slice(b",\"ok\":true,\"value\":");
            out.extend_from_slice(v);
        }
        Outcome::HandlerError(e) => {
            out.extend_from_slice(b",\"ok\":false,\"error\":");
            out.extend_from_slice(e);
        }
        Outcome::Refusal(r) => {
            out.extend_from_slice(b",\"ok\":false,\"refusal\":");
            r.write_json(out);
        }
        Outcome::ServerError => {
            out.extend_from_slice(b",\"ok\":false,\"refusal\":{\"kind\":\"server\"}");
        }
    }
    out.extend_from_slice(b",\"caller\":");
    out.extend_from_slice(caller_json);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::runtime::outcome::reasons;
    use crate::hale::runtime::{Refusal, RefusalKind};

    #[test]
    fn the_unix_line_carries_id_answer_and_caller() {
        let caller = Principal::bearer("alice");
        let line = reply_line(
            &Outcome::Result(br#"{"order":41}"#.to_vec()),
            1,
            Some("\"c-1\""),
            &caller,
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            r#"{"request_id":1,"id":"c-1","ok":true,"value":{"order":41},"caller":{"mode":"bearer","name":"alice"}}"#
        );
        let refusal = Refusal {
            served: Some("fnv1a64:40381db6685c9f75".into()),
            ..Refusal::new(RefusalKind::DigestMismatch, reasons::digest_mismatch("x"))
        };
        let line = reply_line(&Outcome::from(refusal), 4, None, &caller);
        assert_eq!(
            String::from_utf8(line).unwrap(),
            r#"{"request_id":4,"id":null,"ok":false,"refusal":{"kind":"digest_mismatch","reason":"the request was generated against x","served":"fnv1a64:40381db6685c9f75"},"caller":{"mode":"bearer","name":"alice"}}"#
        );
    }
}
