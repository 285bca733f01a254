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
        // Read once, by the Unix line's reader: a `call` frame is the line's
        // call with `"type": "call"`, so what it reads is the call too.
        let (line, [kind, topic]) = match parse_line_keeping(text.as_bytes(), ["type", "topic"]) {
            Ok(read) => read,
            Err(_) => {
                return refuse(
                    conn,
                    None,
                    RefusalKind::Malformed,
                    "not a frame: a frame is one JSON object naming its type".into(),
                )
            }
        };
        let topic = topic.as_deref();
        match kind.as_deref() {
            Some("subscribe") => {}
            Some("call") if self.serves_calls => return self.take_call(conn, line),
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
    /// keys passed over as the line's are), framed for the exposure as the
    /// Unix transport frames a line, under the upgrade's bearer.
    pub(super) fn take_call(&mut self, conn: &mut Conn, line: LineRequest) {
        conn.called = true;
        conn.calls_out += 1;
        let credential = Credential::Bearer(conn.token.clone());
        let request = unix::frame(line, conn.id, credential);
        self.events.push_back(HubEvent::Call(Box::new(request)));
    }
}
