//! The Unix transport (§ The Unix transport): JSON lines on a stream socket,
//! many requests in flight on one connection, the peer's kernel credentials
//! every request's credential.
//!
//! Its module has the shape of every transport's under `wire`:
//!
//! - the framing step, [`frame`]: a request the line machine read
//!   ([`LineRequest`], [`crate::wire::line`]) becomes an exposure
//!   [`Request`];
//! - the answer step, [`write_reply`] (and [`reply_line`]): an [`Outcome`]
//!   becomes the reply line of § Outcomes' Unix column, which a WebSocket
//!   hub's `reply` frame shares ([`write_reply_members`]). The encoding
//!   itself is `hale::runtime::unix_reply`'s, re-exported here: the
//!   fixture transport writes the same lines, and the `hale` layer reads
//!   nothing of `wire`;
//! - the front, [`UnixFront`]: one connection, the line machine between
//!   the two.

use crate::hale::runtime::{
    Correlation, Credential, Delivery, Outcome, PeerCredentials, Principal, Refusal, RefusalKind,
    Request, RequestKind,
};
use crate::wire::front::{machine_through, Front, FrontEvent, FrontKind, RawRequest};
use crate::wire::line::{self, LineConn, LineEvent, LineRequest};
use crate::wire::machine::Machine;
use crate::Timestamp;

pub use crate::hale::runtime::unix_reply::{reply_line, write_reply, write_reply_members};

/// Frames a request the line machine read for the exposure, under
/// `credential` (the peer's kernel credentials on a Unix socket; the
/// upgrade's bearer for a hub's `call` frame).
pub fn frame(request: LineRequest, correlation: Correlation, credential: Credential) -> Request {
    let (kind, digest, id) = match request {
        LineRequest::Call {
            member,
            payload,
            id,
            digest,
        } => (
            RequestKind::Call {
                member,
                payload: crate::hale::runtime::Payload::Json(payload),
            },
            digest,
            id,
        ),
        LineRequest::Describe { id } => (RequestKind::Describe, None, id),
        LineRequest::Malformed { reason, id } => (RequestKind::Malformed { reason }, None, id),
    };
    Request {
        correlation,
        kind,
        digest,
        credential,
        client_id: id,
    }
}

/// One Unix-lines connection between its bytes and an exposure. See
/// [`crate::wire::front`] for the order of calls.
pub struct UnixFront {
    conn: LineConn,
    peer: PeerCredentials,
    correlation: Correlation,
    keep_raw: bool,
    /// The caller the last reply was written for and its JSON object's
    /// text: a connection's replies are nearly always for its one peer, and
    /// writing the principal out again was a tenth of a reply's work.
    caller_json: Option<(Principal, Vec<u8>)>,
    /// The time of the last input: an answer the front writes itself (to an
    /// unreadable line) is queued then.
    now: Timestamp,
}

impl std::fmt::Debug for UnixFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixFront")
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

impl UnixFront {
    /// A connection from `peer` (its kernel credentials are every request's
    /// credential), accepted at `now`.
    pub fn new(
        now: Timestamp,
        limits: line::Limits,
        peer: PeerCredentials,
        correlation: Correlation,
    ) -> UnixFront {
        UnixFront {
            conn: LineConn::new(now, limits),
            peer,
            correlation,
            keep_raw: false,
            caller_json: None,
            now,
        }
    }
}

machine_through!(UnixFront, conn, now);

impl Front for UnixFront {
    fn kind(&self) -> FrontKind {
        FrontKind::Unix
    }

    fn correlation(&self) -> Correlation {
        self.correlation
    }

    fn set_keep_raw(&mut self, keep: bool) {
        self.keep_raw = keep;
    }

    /// The next event, if any. Framing happens here: a request is framed as
    /// it is taken, and a line that is not a request is answered here (the
    /// malformed refusal with request_id 0 that § The Unix transport
    /// writes).
    fn poll_event(&mut self) -> Option<FrontEvent> {
        loop {
            match self.conn.poll_event()? {
                LineEvent::Request(req) => {
                    let raw = self
                        .keep_raw
                        .then(|| Box::new(RawRequest::Line(req.clone())));
                    let request = frame(req, self.correlation, Credential::Peer(self.peer));
                    return Some(FrontEvent::Request { request, raw });
                }
                LineEvent::Unreadable { reason } => {
                    let outcome = Outcome::from(Refusal::new(RefusalKind::Malformed, reason));
                    let caller = Principal::unix(self.peer);
                    let json = caller_text(&mut self.caller_json, &caller);
                    self.conn
                        .send_line_with(self.now, |out| write_reply(&outcome, 0, None, json, out));
                }
                LineEvent::Lost => return Some(FrontEvent::Lost),
                LineEvent::Close => return Some(FrontEvent::Closed),
            }
        }
    }

    /// Writes the delivery's reply line at `now`. Replies leave in the order
    /// they are delivered. Returns how many bytes were queued: the line and
    /// its newline, the last of
    /// [`pending_output`](crate::wire::machine::Machine::pending_output).
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        self.now = now;
        let Delivery {
            request_id,
            client_id,
            caller,
            outcome,
            ..
        } = delivery;
        let before = self.conn.pending_output().len();
        let json = caller_text(&mut self.caller_json, &caller);
        self.conn.send_line_with(now, |out| {
            write_reply(&outcome, request_id, client_id.as_deref(), json, out)
        });
        self.conn.pending_output().len().saturating_sub(before)
    }

    fn abort(&mut self) {
        self.conn.abort();
    }
}

/// The JSON text of `caller`, kept for the next reply of the connection.
/// Compared by value: the same principal's texts are shared, so the usual
/// match costs a few pointer comparisons.
fn caller_text<'a>(slot: &'a mut Option<(Principal, Vec<u8>)>, caller: &Principal) -> &'a [u8] {
    if !matches!(slot, Some((known, _)) if known == caller) {
        let mut json = Vec::with_capacity(96);
        caller.write_json(&mut json);
        *slot = Some((caller.clone(), json));
    }
    match slot {
        Some((_, json)) => json,
        None => unreachable!("just filled"),
    }
}

#[cfg(test)]
mod tests;
