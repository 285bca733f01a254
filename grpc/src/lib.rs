//! limen-grpc: the gRPC transport's front (§ gRPC), one HTTP/2 connection
//! between its bytes and an exposure.
//!
//! A [`GrpcFront`] is a thin adapter, the quinn half of a quinn /
//! quinn-proto split: `limen-nghttp2`'s sans-I/O [`Session`] does HTTP/2
//! (HPACK, flow control, frames), and core's
//! [`Streams`] does everything
//! gRPC — the stream table, the connection's budget, the refusals, the
//! idle and stream deadlines, server reflection — driven by the events of
//! [`limen_core::wire::grpc::h2`]. The front turns each nghttp2 event into
//! one of those, carries the table's commands out as nghttp2 submissions,
//! and keeps what belongs to the session's bytes: the preface's deadline,
//! the write stall, backpressure. It lives outside `limen-core` because
//! nghttp2 is unsafe code and the core forbids it; this crate forbids it
//! too, so the only unsafe code on the path stays in `limen-nghttp2`.
//!
//! A header block is held to the header list's limit as decoded (an HPACK
//! bomb is answered RESOURCE_EXHAUSTED, `limen-nghttp2` drops its fields as
//! they come); frames that make no progress to the session's budget
//! (GOAWAY ENHANCE_YOUR_CALM past it). `docs/decisions.md` says why each
//! limit is what it is.
//!
//! # The order of calls
//!
//! The same as the core's `Front` (`docs/architecture.md`, the machine
//! convention): create it at accept ([`GrpcFront::new`], which queues the
//! server's SETTINGS); feed [`handle_data`](GrpcFront::handle_data),
//! [`handle_eof`](GrpcFront::handle_eof) and
//! [`handle_timeout`](GrpcFront::handle_timeout); take
//! [`poll_event`](GrpcFront::poll_event) until `None`; hand it every
//! [`Delivery`] ([`deliver`](GrpcFront::deliver)); write
//! [`pending_output`](GrpcFront::pending_output) and report it with
//! [`consume_output`](GrpcFront::consume_output); re-arm the timer from
//! [`poll_timeout`](GrpcFront::poll_timeout). [`stop`](GrpcFront::stop)
//! sends GOAWAY once the exposure has answered what it will.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::Arc;

use limen_core::hale::runtime::{Correlation, Delivery};
use limen_core::wire::front::{Front, FrontEvent, FrontKind, Machine};
use limen_core::wire::grpc::h2::{self, Command, StreamGone, Submit};
use limen_core::wire::grpc::streams::Streams;
use limen_core::wire::grpc::{Answer, Framing};
use limen_core::Timestamp;
use limen_nghttp2::{H2Event, Session};

pub use limen_core::wire::grpc::streams::GrpcLimits;
pub use limen_nghttp2::Limits as H2Limits;

/// The HTTP/2 session's SETTINGS for a gRPC connection's limits.
pub trait H2Settings {
    /// One stream past the table's, so the stream one past it reaches the
    /// table and is refused REFUSED_STREAM, as § gRPC says (nghttp2
    /// answers a stream past its own advertised limit with a connection
    /// error).
    fn h2(&self) -> H2Limits;
}

impl H2Settings for GrpcLimits {
    fn h2(&self) -> H2Limits {
        H2Limits {
            max_concurrent_streams: u32::try_from(self.max_streams + 1).unwrap_or(u32::MAX),
            ..H2Limits::default()
        }
    }
}

/// One HTTP/2 connection of a gRPC exposure. See the crate documentation.
pub struct GrpcFront {
    session: Session,
    /// The stream table, reflection and their deadlines (core).
    streams: Streams,
    /// Since when queued output has waited for the peer to read.
    stalled_since: Option<Timestamp>,
    /// When the connection was accepted (the preface's deadline runs
    /// from it).
    opened: Timestamp,
}

impl std::fmt::Debug for GrpcFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcFront")
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

/// The table's commands, carried out on the session at once.
struct Nghttp2<'a> {
    session: &'a mut Session,
    /// A flush failed: the session is over.
    failed: bool,
}

impl Submit for Nghttp2<'_> {
    fn submit(&mut self, command: Command) -> Result<(), StreamGone> {
        let session = &mut *self.session;
        let done = match command {
            Command::Respond { stream, answer } => match answer {
                Answer::Message {
                    headers,
                    body,
                    trailers,
                } => session.respond(stream, &fields(&headers), body, trailers),
                Answer::TrailersOnly { headers } => {
                    session.respond_headers_only(stream, &fields(&headers))
                }
            },
            Command::Open {
                stream,
                headers,
                data,
            } => session.respond_open(stream, &fields(&headers), data),
            Command::Data { stream, data } => session.send_data(stream, &data),
            Command::Trailers { stream, trailers } => session.end_open(stream, trailers),
            Command::Reset { stream, code } => session.reset(stream, code),
            Command::ResetAfterResponse { stream } => {
                session.reset_after_response(stream);
                Ok(())
            }
            Command::GoAway { code } => session.go_away(code),
            Command::Flush => {
                if session.flush().is_err() {
                    self.failed = true;
                }
                Ok(())
            }
        };
        done.map_err(|_| StreamGone)
    }
}

impl GrpcFront {
    /// A connection of the exposure whose framing is `framing`, accepted
    /// at `now`; the server's SETTINGS are queued. `None` when nghttp2
    /// cannot make a session (out of memory).
    pub fn new(
        now: Timestamp,
        limits: GrpcLimits,
        framing: Arc<Framing>,
        correlation: Correlation,
    ) -> Option<GrpcFront> {
        let h2 = limits.h2();
        let session = Session::server(h2).ok()?;
        let mut front = GrpcFront {
            session,
            streams: Streams::new(now, limits, h2.max_header_list_size, framing, correlation),
            stalled_since: None,
            opened: now,
        };
        front.flush(now);
        Some(front)
    }

    /// The bytes of partial messages held across the streams, at most
    /// [`GrpcLimits::max_buffered`].
    pub fn buffered(&self) -> usize {
        self.streams.buffered()
    }

    /// The decoded header bytes held for header blocks not yet whole (at
    /// most the session's header list limit a stream).
    pub fn header_bytes_held(&self) -> usize {
        self.session.header_bytes_held()
    }

    /// Runs `f` on the table with the session as its [`Submit`]; a failed
    /// flush there is the session's failure.
    fn with_session<R>(&mut self, f: impl FnOnce(&mut Streams, &mut dyn Submit) -> R) -> R {
        let mut out = Nghttp2 {
            session: &mut self.session,
            failed: false,
        };
        let r = f(&mut self.streams, &mut out);
        if out.failed {
            self.streams.session_failed();
        }
        r
    }

    fn limits(&self) -> &GrpcLimits {
        self.streams.limits()
    }

    fn stall_deadline(&self) -> Option<Timestamp> {
        self.stalled_since.map(|t| t + self.limits().write_stall)
    }

    fn preface_deadline(&self) -> Option<Timestamp> {
        (!self.session.preface_received()).then(|| self.opened + self.limits().preface)
    }

    /// Serializes what the session queued, and closes the connection once
    /// it is over and everything is written.
    fn flush(&mut self, now: Timestamp) {
        if self.streams.is_closed() {
            return;
        }
        if self.session.flush().is_err() {
            self.streams.session_failed();
        }
        // A callback may have seen more while serializing (a stream
        // closed once its last frame left).
        self.take_session_events(now);
        self.streams.settle(now);
        let queued = !self.session.queued().is_empty();
        if queued {
            self.stalled_since.get_or_insert(now);
        } else {
            self.stalled_since = None;
            if self.streams.closing() || self.session.is_done() {
                self.finish();
            }
        }
    }

    /// The connection is over: its calls with the exposure are lost.
    fn finish(&mut self) {
        self.stalled_since = None;
        self.streams.finish();
    }

    /// Hands the session's events to the table, as core's HTTP/2 events.
    fn take_session_events(&mut self, now: Timestamp) {
        while let Some(event) = self.session.poll_event() {
            let event = match event {
                H2Event::Headers {
                    stream,
                    fields,
                    end_stream,
                } => h2::H2Event::Headers {
                    stream,
                    fields,
                    end_stream,
                },
                H2Event::HeadersTooLarge { stream, end_stream } => {
                    h2::H2Event::HeadersTooLarge { stream, end_stream }
                }
                H2Event::Data { stream, bytes } => {
                    // Taken, whether the stream still wants it or not: the
                    // connection's window opens either way.
                    let _ = self.session.consume(stream, bytes.len());
                    h2::H2Event::Data { stream, bytes }
                }
                H2Event::EndStream { stream } => h2::H2Event::EndStream { stream },
                H2Event::Reset { stream, .. } | H2Event::Closed { stream, .. } => {
                    h2::H2Event::Reset { stream }
                }
                H2Event::GoAway { .. } => h2::H2Event::GoAway,
                // A request's trailers say nothing a call reads (its
                // EndStream follows).
                H2Event::Trailers { .. } => continue,
            };
            self.with_session(|streams, out| streams.handle(now, event, out));
        }
    }
}

impl Machine for GrpcFront {
    /// Whether the front takes more input now: false while the peer does
    /// not read what is queued (backpressure) and once the connection is
    /// over.
    fn wants_read(&self) -> bool {
        !self.streams.is_closed()
            && !self.streams.closing()
            && self.session.queued().len() < self.limits().max_queued
            && self.session.wants_read()
    }

    /// Bytes read from the connection at `now`. A protocol error ends the
    /// connection after its GOAWAY; an error of one stream ends that stream
    /// alone (nghttp2 resets it).
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        if self.streams.is_closed() || self.streams.closing() {
            return;
        }
        if self.session.handle_data(now, data).is_err() {
            self.streams.session_failed();
        }
        self.take_session_events(now);
        self.flush(now);
    }

    /// The peer closed its end (or a read failed) at `now`: the calls it
    /// has with the exposure are lost, and the connection is done.
    fn handle_eof(&mut self, _now: Timestamp) {
        self.finish();
    }

    /// Time passes. Output that waited `write_stall` on a peer that does
    /// not read ends the connection; so does a preface not done within
    /// `preface`. The table's own deadlines (the idle connection's GOAWAY,
    /// a stream silent inside its message) are core's
    /// ([`Streams::handle_timeout`]). Before each deadline, nothing
    /// happens.
    fn handle_timeout(&mut self, now: Timestamp) {
        if self.streams.is_closed() {
            return;
        }
        let due = |deadline: Option<Timestamp>| deadline.is_some_and(|t| t <= now);
        if due(self.stall_deadline()) || due(self.preface_deadline()) {
            self.finish();
            return;
        }
        if self.with_session(|streams, out| streams.handle_timeout(now, out)) {
            self.flush(now);
        }
    }

    /// The deadline [`handle_timeout`](GrpcFront::handle_timeout) next acts
    /// on: the earliest of the write stall, the preface, and the table's.
    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.streams.is_closed() {
            return None;
        }
        [
            self.stall_deadline(),
            self.preface_deadline(),
            self.streams.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The bytes still to write, borrowed until the next call on the front.
    fn pending_output(&self) -> &[u8] {
        if self.streams.is_closed() {
            return &[];
        }
        self.session.queued()
    }

    /// `n` bytes of [`pending_output`](GrpcFront::pending_output) were
    /// written at `now`.
    fn consume_output(&mut self, now: Timestamp, n: usize) {
        if self.streams.is_closed() {
            return;
        }
        self.session.consume_output(now, n);
        if n > 0 {
            self.stalled_since = None;
        }
        self.flush(now);
    }

    /// Whether the connection is done.
    fn is_closed(&self) -> bool {
        self.streams.is_closed()
    }
}

impl Front for GrpcFront {
    fn streams_held(&self) -> usize {
        self.streams.streams_held()
    }

    fn kind(&self) -> FrontKind {
        FrontKind::Grpc
    }

    /// The correlation the exposure addresses this connection's replies to.
    fn correlation(&self) -> Correlation {
        self.streams.correlation()
    }

    /// The next event, if any: a framed request, the connection lost, the
    /// connection done.
    fn poll_event(&mut self) -> Option<FrontEvent> {
        self.streams.poll_event()
    }

    /// Answers the delivery's stream (its client id) by § gRPC's table,
    /// queued at `now`. A stream the peer reset, or a connection already
    /// over, drops it. Returns how many bytes were queued.
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        let before = self.session.queued().len();
        if !self.with_session(|streams, out| streams.deliver(delivery, out)) {
            return 0;
        }
        self.flush(now);
        self.session.queued().len().saturating_sub(before)
    }

    /// Shutdown, once the exposure has answered what it will
    /// ([`Streams::stop`]): GOAWAY (NO_ERROR) after the replies already
    /// queued; the connection closes when its streams are done.
    fn stop(&mut self, now: Timestamp) {
        if self.with_session(|streams, out| streams.stop(out)) {
            self.flush(now);
        }
    }

    /// Ends the connection now, whatever is queued: the exposure is
    /// finished with it (a transport failure for its calls).
    fn abort(&mut self) {
        self.finish();
    }

    /// What the health checks answer from now on
    /// ([`limen_core::wire::grpc::streams::health`]).
    fn set_draining(&mut self, draining: bool) {
        self.streams.set_draining(draining);
    }
}

/// Header fields as the session takes them, borrowed.
fn fields(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
    fields
        .iter()
        .map(|(n, v)| (n.as_slice(), v.as_slice()))
        .collect()
}
