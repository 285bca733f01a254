//! The frames a client sends on an upgraded connection: `subscribe`, and
//! `call` where a surface is served over the hub.

use super::*;

impl Hub {
    /// One text message of the peer's: a frame.
    pub(super) fn take_frame(&mut self, now: Timestamp, conn: &mut Conn, text: &str) {
        self.rules.check_expiry(now, conn);
        let refuse = |conn: &mut Conn, topic: Option<&str>, kind, reason: String| {
            let refusal = Refusal::new(kind, reason);
            conn.push_answer(frames::refusal(topic, &refusal));
        };
        let frame = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(frame)) => frame,
            _ => {
                return refuse(
                    conn,
                    None,
                    RefusalKind::Malformed,
                    "not a frame: a frame is one JSON object naming its type".into(),
                )
            }
        };
        let topic = frame.get("topic").and_then(|t| t.as_str());
        match frame.get("type").and_then(|t| t.as_str()) {
            Some("subscribe") => {}
            Some("call") if self.serves_calls => return self.take_call(conn, text),
            Some("call") => {
                return refuse(
                    conn,
                    None,
                    RefusalKind::Malformed,
                    "no surface is served over this hub: a call frame is not taken".into(),
                )
            }
            Some(other) => {
                return refuse(
                    conn,
                    topic,
                    RefusalKind::Malformed,
                    format!("unknown frame type `{other}`: a client sends subscribe"),
                )
            }
            None => {
                return refuse(
                    conn,
                    topic,
                    RefusalKind::Malformed,
                    "not a frame: a frame names its type".into(),
                )
            }
        }
        // 1. The subscribe names its topic.
        let Some(topic) = topic else {
            return refuse(
                conn,
                None,
                RefusalKind::Malformed,
                "a subscribe names its topic as a string".into(),
            );
        };
        // 2. The sources named someone at the upgrade, and the credential
        // is not spent.
        let caller = match &conn.caller {
            Caller::Nobody(reason) => {
                let reason = reason.clone();
                return refuse(conn, Some(topic), RefusalKind::Unauthenticated, reason);
            }
            Caller::Named(_) if conn.expired => {
                return refuse(
                    conn,
                    Some(topic),
                    RefusalKind::Unauthenticated,
                    EXPIRED_REASON.into(),
                )
            }
            Caller::Named(p) => p.clone(),
        };
        // 3–5. The topic is bound, its requires held, the hub not stopping.
        let stream = match self
            .rules
            .sources
            .admit(&self.rules.spec, &caller, topic, self.stopped)
        {
            Ok(stream) => stream,
            Err(refusal) => return conn.push_answer(frames::refusal(Some(topic), &refusal)),
        };
        // Admitted, or admitted again: a second subscribe changes nothing.
        if !conn.subs.iter().any(|s| s.stream == stream) {
            let revision = self.rules.sources.revision(&caller);
            conn.subs.push(Subscription {
                stream,
                seq: 0,
                revision,
                queue: VecDeque::new(),
            });
        }
        conn.push_answer(frames::subscribed(topic));
    }

    /// A `call` frame: the Unix line's call with `"type": "call"` (its other
    /// keys passed over as the line's are), framed for the exposure.
    pub(super) fn take_call(&mut self, conn: &mut Conn, text: &str) {
        let (kind, digest, client_id) = match parse_line(text.as_bytes()) {
            Ok(LineRequest::Call {
                member,
                payload,
                id,
                digest,
            }) => (
                RequestKind::Call {
                    member,
                    payload: crate::hale::runtime::Payload::Json(payload),
                },
                digest,
                id,
            ),
            Ok(LineRequest::Malformed { reason, id }) => {
                (RequestKind::Malformed { reason }, None, id)
            }
            Ok(LineRequest::Describe { id }) => (RequestKind::Describe, None, id),
            Err(reason) => (RequestKind::Malformed { reason }, None, None),
        };
        conn.called = true;
        conn.calls_out += 1;
        self.calls.push_back(HubCall::Request(Request {
            correlation: conn.id,
            kind,
            digest,
            credential: Credential::Bearer(conn.token.clone()),
            client_id,
        }));
    }
}
