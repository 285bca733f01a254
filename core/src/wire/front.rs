//! Transport fronts: one connection of one transport, between its bytes and
//! an exposure.
//!
//! A [`Front`] is a connection [`Machine`] that also frames requests for an
//! exposure and encodes its deliveries: bytes come in, framed [`Request`]s
//! come out ([`FrontEvent::Request`]); an exposure's [`Delivery`] comes in
//! ([`Front::deliver`]), bytes go out. Every transport's front implements
//! it — [`CoreFront`] here for Unix lines, HTTP/1.1 and MCP, `limen-grpc`'s
//! `GrpcFront` for gRPC — and every driver of the project drives fronts
//! through it alone: the mio server, the replay runner, the benchmarks and
//! (through the C ABI) a C program. None of them holds any framing or
//! encoding of its own.
//!
//! # The order of calls
//!
//! A front follows the machine convention of [`Machine`]:
//!
//! 1. Create it when the connection is accepted (its transport's
//!    constructor: [`CoreFront::unix`], [`CoreFront::http`],
//!    [`CoreFront::mcp`], `GrpcFront::new`), with the correlation the
//!    exposure will address its replies to.
//! 2. Feed it input: [`handle_data`](Machine::handle_data) with the bytes
//!    read (only while [`wants_read`](Machine::wants_read)),
//!    [`handle_eof`](Machine::handle_eof) once the peer's end is closed (or
//!    a read failed), [`handle_timeout`](Machine::handle_timeout) when the
//!    deadline [`poll_timeout`](Machine::poll_timeout) named has passed.
//! 3. After any input, take [`poll_event`](Front::poll_event) until `None`:
//!    hand each request to the exposure, tell it of a [`FrontEvent::Lost`]
//!    connection, and close the socket on [`FrontEvent::Closed`].
//! 4. Hand it every [`Delivery`] the exposure addresses to its correlation
//!    ([`deliver`](Front::deliver)), [`abort`](Front::abort) it when the
//!    exposure says it is finished with the connection, and
//!    [`stop`](Front::stop) it when the exposure stops.
//! 5. Write [`pending_output`](Machine::pending_output) to the socket and
//!    report what was written with
//!    [`consume_output`](Machine::consume_output); then poll events again
//!    (a written response may close the connection).
//! 6. Re-arm the timer from [`poll_timeout`](Machine::poll_timeout) after
//!    each of the above.
//!
//! Every input takes `now`, the driver's monotonic clock in nanoseconds.

use std::sync::Arc;

use crate::hale::runtime::{
    Correlation, Credential, Delivery, Outcome, PeerCredentials, Principal, Refusal, RefusalKind,
    Request, RequestKind,
};
use crate::wire::http1::{self, HttpConn, HttpEvent, HttpRequest};
use crate::wire::line::{self, LineConn, LineEvent, LineRequest};
use crate::wire::{hale_http, mcp};
use crate::Timestamp;

pub use super::machine::Machine;

/// One connection of one transport between its bytes and an exposure: a
/// [`Machine`] that frames requests and encodes deliveries. See the module
/// documentation for the order of calls.
pub trait Front: Machine {
    /// The transport.
    fn kind(&self) -> FrontKind;

    /// The correlation the exposure addresses this connection's replies to.
    fn correlation(&self) -> Correlation;

    /// Whether each [`FrontEvent::Request`] carries its wire form (off by
    /// default: only a recording needs it). A front whose transport nothing
    /// records keeps none.
    fn set_keep_raw(&mut self, keep: bool) {
        let _ = keep;
    }

    /// The next event, if any. Framing happens here: a request is framed
    /// as it is taken.
    fn poll_event(&mut self) -> Option<FrontEvent>;

    /// Encodes the exposure's `delivery` in the transport's terms (§
    /// Outcomes' column of the transport) and queues it at `now`. Returns
    /// how many bytes were queued.
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize;

    /// Ends the connection now, whatever is queued: the exposure is
    /// finished with it (a transport failure for the peer).
    fn abort(&mut self);

    /// The exposure stopped: a front whose connection carries many calls
    /// at once ends it gracefully (gRPC's GOAWAY after the replies already
    /// queued). By default nothing: the other fronts end with their one
    /// request or their peer.
    fn stop(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// Whether closing the connection now should linger (RFC 9112 §
    /// 9.6). By default never.
    fn lingers(&self) -> bool {
        false
    }
}

/// The limits of every front, each its machine's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrontLimits {
    /// Unix lines.
    pub line: line::Limits,
    /// HTTP/1.1, MCP's too.
    pub http: http1::Limits,
}

/// Which transport a front speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontKind {
    /// Unix JSON lines (§ The Unix transport).
    Unix,
    /// HTTP/1.1 (§ The HTTP transport).
    Http,
    /// MCP over HTTP/1.1 (§ The MCP transport).
    Mcp,
    /// gRPC over HTTP/2 (§ The gRPC transport).
    Grpc,
}

/// A request as its wire machine framed it, before Hale's framing: what a
/// recording of the exchange keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawRequest {
    /// A Unix JSON line.
    Line(LineRequest),
    /// An HTTP request, read whole.
    Http(HttpRequest),
    /// An MCP request: one JSON-RPC message in an HTTP request, read whole.
    Mcp(HttpRequest),
}

/// What a front asks of its driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrontEvent {
    /// A request framed for the exposure. `raw` is its wire form when the
    /// front keeps it ([`Front::set_keep_raw`]).
    Request {
        /// The framed request.
        request: Request,
        /// Its wire form, for a recording.
        raw: Option<Box<RawRequest>>,
    },
    /// The peer is gone: its requests with the exposure are lost (they
    /// run; their replies are dropped).
    Lost,
    /// The connection is done: close the socket. Nothing more is written.
    Closed,
}

enum Proto {
    Unix {
        conn: LineConn,
        peer: PeerCredentials,
        /// The caller the last reply was written for and its JSON object's
        /// text: a connection's replies are nearly always for its one peer,
        /// and writing the principal out again was a tenth of a reply's
        /// work.
        caller_json: Option<(Principal, Vec<u8>)>,
    },
    Http {
        conn: HttpConn,
    },
    Mcp {
        conn: HttpConn,
        framing: Arc<mcp::Framing>,
        /// How to answer the connection's one request, once framed.
        reply: Option<mcp::Reply>,
    },
}

/// The front of the transports whose machines are core's own: Unix lines,
/// HTTP/1.1 and MCP. See the module documentation.
pub struct CoreFront {
    correlation: Correlation,
    proto: Proto,
    keep_raw: bool,
    /// The time of the last input: an answer the front writes itself (to an
    /// unreadable line) is queued then.
    now: Timestamp,
}

impl std::fmt::Debug for CoreFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreFront")
            .field("kind", &self.kind())
            .field("correlation", &self.correlation)
            .finish_non_exhaustive()
    }
}

impl CoreFront {
    /// A Unix-lines connection from `peer` (its kernel credentials are
    /// every request's credential), accepted at `now`.
    pub fn unix(
        now: Timestamp,
        limits: line::Limits,
        peer: PeerCredentials,
        correlation: Correlation,
    ) -> CoreFront {
        CoreFront::with(
            now,
            correlation,
            Proto::Unix {
                conn: LineConn::new(now, limits),
                peer,
                caller_json: None,
            },
        )
    }

    /// An HTTP/1.1 connection, accepted at `now`.
    pub fn http(now: Timestamp, limits: http1::Limits, correlation: Correlation) -> CoreFront {
        CoreFront::with(
            now,
            correlation,
            Proto::Http {
                conn: HttpConn::new(now, limits),
            },
        )
    }

    /// An MCP connection (`POST /mcp` on HTTP/1.1) of the exposure whose
    /// framing is `framing`, accepted at `now`.
    pub fn mcp(
        now: Timestamp,
        limits: http1::Limits,
        framing: Arc<mcp::Framing>,
        correlation: Correlation,
    ) -> CoreFront {
        CoreFront::with(
            now,
            correlation,
            Proto::Mcp {
                conn: HttpConn::new(now, limits),
                framing,
                reply: None,
            },
        )
    }

    fn with(now: Timestamp, correlation: Correlation, proto: Proto) -> CoreFront {
        CoreFront {
            correlation,
            proto,
            keep_raw: false,
            now,
        }
    }
}

impl Machine for CoreFront {
    /// Whether the front takes more input now: false while the peer does
    /// not read its replies (backpressure), and once the request (HTTP) or
    /// the connection (Unix) has been read.
    fn wants_read(&self) -> bool {
        match &self.proto {
            Proto::Unix { conn, .. } => conn.wants_read(),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.wants_read(),
        }
    }

    /// Bytes read from the connection at `now`.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        self.now = now;
        match &mut self.proto {
            Proto::Unix { conn, .. } => conn.handle_data(now, data),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.handle_data(now, data),
        }
    }

    /// The peer closed its end (or a read failed) at `now`.
    fn handle_eof(&mut self, now: Timestamp) {
        self.now = now;
        match &mut self.proto {
            Proto::Unix { conn, .. } => conn.handle_eof(now),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.handle_eof(now),
        }
    }

    /// Time passes: a read or write timer whose deadline is `now` or earlier
    /// ends the connection. Before the deadline, nothing happens.
    fn handle_timeout(&mut self, now: Timestamp) {
        self.now = now;
        match &mut self.proto {
            Proto::Unix { conn, .. } => conn.handle_timeout(now),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.handle_timeout(now),
        }
    }

    /// The deadline [`handle_timeout`](Machine::handle_timeout) next acts on.
    fn poll_timeout(&self) -> Option<Timestamp> {
        match &self.proto {
            Proto::Unix { conn, .. } => conn.poll_timeout(),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.poll_timeout(),
        }
    }

    /// The bytes still to write, borrowed until the next call on the front.
    fn pending_output(&self) -> &[u8] {
        match &self.proto {
            Proto::Unix { conn, .. } => conn.pending_output(),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.pending_output(),
        }
    }

    /// `n` bytes of [`pending_output`](Machine::pending_output) were written
    /// at `now`.
    fn consume_output(&mut self, now: Timestamp, n: usize) {
        match &mut self.proto {
            Proto::Unix { conn, .. } => conn.consume_output(now, n),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.consume_output(now, n),
        }
    }

    /// Whether the connection is done.
    fn is_closed(&self) -> bool {
        match &self.proto {
            Proto::Unix { conn, .. } => conn.is_closed(),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.is_closed(),
        }
    }
}

impl Front for CoreFront {
    /// Whether each [`FrontEvent::Request`] carries its wire form (off by
    /// default: only a recording needs it).
    fn set_keep_raw(&mut self, keep: bool) {
        self.keep_raw = keep;
    }

    /// The transport.
    fn kind(&self) -> FrontKind {
        match self.proto {
            Proto::Unix { .. } => FrontKind::Unix,
            Proto::Http { .. } => FrontKind::Http,
            Proto::Mcp { .. } => FrontKind::Mcp,
        }
    }

    /// The correlation the exposure addresses this connection's replies to.
    fn correlation(&self) -> Correlation {
        self.correlation
    }

    /// The next event, if any. Framing happens here: a request is framed as
    /// it is taken, and a line that is not a request is answered here (the
    /// malformed refusal with request_id 0 that § The Unix transport
    /// writes).
    fn poll_event(&mut self) -> Option<FrontEvent> {
        let correlation = self.correlation;
        let keep_raw = self.keep_raw;
        let now = self.now;
        match &mut self.proto {
            Proto::Unix {
                conn,
                peer,
                caller_json,
            } => loop {
                match conn.poll_event()? {
                    LineEvent::Request(req) => {
                        let raw = keep_raw.then(|| Box::new(RawRequest::Line(req.clone())));
                        let request = unix_request(req, correlation, *peer);
                        return Some(FrontEvent::Request { request, raw });
                    }
                    LineEvent::Unreadable { reason } => {
                        let outcome = Outcome::from(Refusal::new(RefusalKind::Malformed, reason));
                        let caller = Principal::unix(*peer);
                        let json = caller_text(caller_json, &caller);
                        conn.send_line_with(now, |out| {
                            outcome.write_unix_line_as(0, None, json, out)
                        });
                    }
                    LineEvent::Lost => return Some(FrontEvent::Lost),
                    LineEvent::Close => return Some(FrontEvent::Closed),
                }
            },
            Proto::Http { conn } => Some(match conn.poll_event()? {
                HttpEvent::Request(req) => {
                    let request = hale_http::frame(&req, correlation);
                    let raw = keep_raw.then(|| Box::new(RawRequest::Http(req)));
                    FrontEvent::Request { request, raw }
                }
                HttpEvent::Malformed { reason, head } => FrontEvent::Request {
                    request: hale_http::frame_malformed(&reason, head.as_ref(), correlation),
                    raw: None,
                },
                HttpEvent::Lost => FrontEvent::Lost,
                HttpEvent::Close => FrontEvent::Closed,
            }),
            Proto::Mcp {
                conn,
                framing,
                reply,
            } => Some(match conn.poll_event()? {
                HttpEvent::Request(req) => {
                    let (request, answer) = framing.frame(&req, correlation);
                    *reply = Some(answer);
                    let raw = keep_raw.then(|| Box::new(RawRequest::Mcp(req)));
                    FrontEvent::Request { request, raw }
                }
                HttpEvent::Malformed { reason, head } => {
                    let (request, answer) =
                        framing.frame_malformed(&reason, head.as_ref(), correlation);
                    *reply = Some(answer);
                    FrontEvent::Request { request, raw: None }
                }
                HttpEvent::Lost => FrontEvent::Lost,
                HttpEvent::Close => FrontEvent::Closed,
            }),
        }
    }

    /// Encodes the exposure's `delivery` in the transport's terms (§
    /// Outcomes' column of the transport) and queues it at `now`. Replies
    /// leave in the order they are delivered. Returns how many bytes were
    /// queued: they are the last of [`pending_output`](Machine::pending_output)
    /// (over Unix, the line and its newline).
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        self.now = now;
        let Delivery {
            request_id,
            client_id,
            caller,
            outcome,
            ..
        } = delivery;
        let before = self.pending_output().len();
        match &mut self.proto {
            Proto::Unix {
                conn, caller_json, ..
            } => {
                let json = caller_text(caller_json, &caller);
                conn.send_line_with(now, |out| {
                    outcome.write_unix_line_as(request_id, client_id.as_deref(), json, out)
                });
            }
            Proto::Http { conn } => {
                let (status, body) = hale_http::encode(outcome);
                conn.send_json(now, status, &body);
            }
            Proto::Mcp {
                conn,
                framing,
                reply,
            } => {
                // A delivery with no request framed here has nobody to
                // answer (the machine would ignore it as well).
                if let Some(reply) = reply.take() {
                    let answer = framing.answer(&reply, outcome);
                    conn.send(now, answer.status, &answer.headers, &answer.body);
                }
            }
        }
        self.pending_output().len().saturating_sub(before)
    }

    /// Ends the connection now, whatever is queued: the exposure is finished
    /// with it (a transport failure for the peer).
    fn abort(&mut self) {
        match &mut self.proto {
            Proto::Unix { conn, .. } => conn.abort(),
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.abort(),
        }
    }

    /// Whether closing the connection now should linger (RFC 9112 § 9.6):
    /// an HTTP or MCP request refused before its end was read, its answer
    /// written ([`HttpConn::lingers`]). Never for Unix lines.
    fn lingers(&self) -> bool {
        match &self.proto {
            Proto::Unix { .. } => false,
            Proto::Http { conn } | Proto::Mcp { conn, .. } => conn.lingers(),
        }
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

/// Frames a line request for the exposure; the peer's kernel credentials
/// are its credential.
fn unix_request(request: LineRequest, correlation: Correlation, peer: PeerCredentials) -> Request {
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
        credential: Credential::Peer(peer),
        client_id: id,
    }
}

#[cfg(test)]
mod tests;
