//! limen-grpc: the gRPC transport's front (§ gRPC), one HTTP/2 connection
//! between its bytes and an exposure.
//!
//! A [`GrpcFront`] joins `limen-nghttp2`'s sans-I/O [`Session`] to
//! `limen_core::wire::grpc`'s [`Framing`]: it keeps the table of the
//! connection's streams, reads each stream's header block and its one
//! length-prefixed message whole, frames the call into an exposure
//! [`Request`] ([`FrontEvent::Request`], the same event the core's
//! `Front` emits), and answers each [`Delivery`] on its stream as § gRPC's
//! table says (a result as HEADERS, DATA and trailers; every other outcome
//! trailers-only). It lives outside `limen-core` because nghttp2 is unsafe
//! code and the core forbids it; this crate forbids it too, so the only
//! unsafe code on the path stays in `limen-nghttp2`.
//!
//! # Streams and the exposure's correlation
//!
//! The front's correlation is the connection; each request carries its
//! stream as its client id (`client_id`, echoed in the delivery), so a
//! delivery finds its stream again and many calls are in flight on one
//! connection. A stream the peer resets is dropped from the table: the
//! call still runs, once, and its reply is dropped here, which the peer
//! cannot tell from the exposure's lost request. A connection that ends is
//! the exposure's lost connection ([`FrontEvent::Lost`]).
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

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use limen_core::hale::runtime::{Correlation, Delivery, Request};
use limen_core::wire::front::FrontEvent;
use limen_core::wire::grpc::{Answer, Framed, Framing, Head, MessageReader, Reply};
use limen_core::{Timestamp, SECOND};
use limen_nghttp2::{code, H2Event, Session};

pub use limen_nghttp2::Limits as H2Limits;

/// The front's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcLimits {
    /// The streams held at a time (§ gRPC: 4096); one more is refused
    /// REFUSED_STREAM.
    pub max_streams: usize,
    /// How long output may wait on a peer that does not read before the
    /// connection ends (the HTTP transport's five seconds).
    pub write_stall: Timestamp,
    /// Output queued past which no more input is read until the peer
    /// reads (backpressure).
    pub max_queued: usize,
}

impl Default for GrpcLimits {
    fn default() -> GrpcLimits {
        GrpcLimits {
            max_streams: 4096,
            write_stall: 5 * SECOND,
            max_queued: 1 << 20,
        }
    }
}

impl GrpcLimits {
    /// The HTTP/2 session's SETTINGS for these limits: one stream past the
    /// table's, so the stream one past it reaches the front and is refused
    /// REFUSED_STREAM, as § gRPC says (nghttp2 answers a stream past its
    /// own advertised limit with a connection error).
    pub fn h2(&self) -> H2Limits {
        H2Limits {
            max_concurrent_streams: u32::try_from(self.max_streams + 1).unwrap_or(u32::MAX),
            ..H2Limits::default()
        }
    }
}

/// One stream of the table.
enum Stream {
    /// Its message is being read.
    Reading { head: Head, reader: MessageReader },
    /// Its call is with the exposure.
    Framed { reply: Reply },
}

/// One HTTP/2 connection of a gRPC exposure. See the crate documentation.
pub struct GrpcFront {
    correlation: Correlation,
    session: Session,
    framing: Arc<Framing>,
    limits: GrpcLimits,
    streams: HashMap<i32, Stream>,
    events: VecDeque<FrontEvent>,
    /// The session failed (a protocol error): what is queued (its GOAWAY)
    /// is written, then the connection closes.
    failed: bool,
    /// `Closed` was emitted: nothing more is read or written.
    closed: bool,
    /// Since when queued output has waited for the peer to read.
    stalled_since: Option<Timestamp>,
    /// GOAWAY was sent.
    stopping: bool,
}

impl std::fmt::Debug for GrpcFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcFront")
            .field("correlation", &self.correlation)
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
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
        let session = Session::server(limits.h2()).ok()?;
        let mut front = GrpcFront {
            correlation,
            session,
            framing,
            limits,
            streams: HashMap::new(),
            events: VecDeque::new(),
            failed: false,
            closed: false,
            stalled_since: None,
            stopping: false,
        };
        front.flush(now);
        Some(front)
    }

    /// The correlation the exposure addresses this connection's replies to.
    pub fn correlation(&self) -> Correlation {
        self.correlation
    }

    /// The streams held: read, or with the exposure, and not yet answered.
    pub fn streams_held(&self) -> usize {
        self.streams.len()
    }

    /// Whether the front takes more input now: false while the peer does
    /// not read what is queued (backpressure) and once the connection is
    /// over.
    pub fn wants_read(&self) -> bool {
        !self.closed
            && !self.failed
            && self.session.queued().len() < self.limits.max_queued
            && self.session.wants_read()
    }

    /// Bytes read from the connection at `now`. A protocol error ends the
    /// connection after its GOAWAY; an error of one stream ends that stream
    /// alone (nghttp2 resets it).
    pub fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        if self.closed || self.failed {
            return;
        }
        if self.session.handle_data(now, data).is_err() {
            self.failed = true;
        }
        self.take_session_events();
        self.flush(now);
    }

    /// The peer closed its end (or a read failed) at `now`: the calls it
    /// has with the exposure are lost, and the connection is done.
    pub fn handle_eof(&mut self, _now: Timestamp) {
        self.finish();
    }

    /// Time passes: output that waited `write_stall` on a peer that does
    /// not read ends the connection. Before the deadline, nothing happens.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        if self.poll_timeout().is_some_and(|t| t <= now) {
            self.finish();
        }
    }

    /// The deadline [`handle_timeout`](GrpcFront::handle_timeout) next acts
    /// on.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        if self.closed {
            return None;
        }
        self.stalled_since.map(|t| t + self.limits.write_stall)
    }

    /// The next event, if any: a framed request, the connection lost, the
    /// connection done.
    pub fn poll_event(&mut self) -> Option<FrontEvent> {
        self.events.pop_front()
    }

    /// Answers the delivery's stream (its client id) by § gRPC's table,
    /// queued at `now`. A stream the peer reset, or a connection already
    /// over, drops it. Returns how many bytes were queued.
    pub fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
        let before = self.session.queued().len();
        if self.closed {
            return 0;
        }
        let stream = delivery
            .client_id
            .as_deref()
            .and_then(|id| id.parse::<i32>().ok());
        let Some(stream) = stream else {
            return 0;
        };
        let Some(Stream::Framed { reply }) = self.streams.remove(&stream) else {
            return 0;
        };
        let answer = self.framing.answer(&reply, delivery.outcome);
        self.respond(stream, answer);
        self.flush(now);
        self.session.queued().len().saturating_sub(before)
    }

    /// Shutdown, once the exposure has answered what it will: GOAWAY
    /// (NO_ERROR) after the replies already queued, naming the last stream
    /// taken; the connection closes when its streams are done. A stream
    /// whose message was still being read never reached the exposure: it
    /// is reset REFUSED_STREAM (not processed, safe to retry elsewhere).
    pub fn stop(&mut self, now: Timestamp) {
        if self.closed || self.failed || self.stopping {
            return;
        }
        self.stopping = true;
        let reading: Vec<i32> = self
            .streams
            .iter()
            .filter(|(_, s)| matches!(s, Stream::Reading { .. }))
            .map(|(&id, _)| id)
            .collect();
        for stream in reading {
            self.streams.remove(&stream);
            let _ = self.session.reset(stream, code::REFUSED_STREAM);
        }
        let _ = self.session.go_away(code::NO_ERROR);
        self.flush(now);
    }

    /// Ends the connection now, whatever is queued: the exposure is
    /// finished with it (a transport failure for its calls).
    pub fn abort(&mut self) {
        self.finish();
    }

    /// The bytes still to write, borrowed until the next call on the front.
    pub fn pending_output(&self) -> &[u8] {
        if self.closed {
            return &[];
        }
        self.session.queued()
    }

    /// `n` bytes of [`pending_output`](GrpcFront::pending_output) were
    /// written at `now`.
    pub fn consume_output(&mut self, now: Timestamp, n: usize) {
        if self.closed {
            return;
        }
        self.session.consume_output(now, n);
        if n > 0 {
            self.stalled_since = None;
        }
        self.flush(now);
    }

    /// Whether the connection is done.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Serializes what the session queued, and closes the connection once
    /// it is over and everything is written.
    fn flush(&mut self, now: Timestamp) {
        if self.closed {
            return;
        }
        if self.session.flush().is_err() {
            self.failed = true;
        }
        // A callback may have seen more while serializing (a stream
        // closed once its last frame left).
        self.take_session_events();
        let queued = !self.session.queued().is_empty();
        if queued {
            self.stalled_since.get_or_insert(now);
        } else {
            self.stalled_since = None;
            if self.failed || self.session.is_done() {
                self.finish();
            }
        }
    }

    /// The connection is over: its calls with the exposure are lost.
    fn finish(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.stalled_since = None;
        if self
            .streams
            .values()
            .any(|s| matches!(s, Stream::Framed { .. }))
        {
            self.events.push_back(FrontEvent::Lost);
        }
        self.streams.clear();
        self.events.push_back(FrontEvent::Closed);
    }

    fn take_session_events(&mut self) {
        while let Some(event) = self.session.poll_event() {
            match event {
                H2Event::Headers {
                    stream,
                    fields,
                    end_stream,
                } => {
                    if self.streams.len() >= self.limits.max_streams {
                        // § gRPC: at most 4096 held; one more is refused.
                        let _ = self.session.reset(stream, code::REFUSED_STREAM);
                        continue;
                    }
                    let head = self.framing.head(&fields);
                    let reader = head.reader();
                    self.streams
                        .insert(stream, Stream::Reading { head, reader });
                    if end_stream {
                        self.frame(stream);
                    }
                }
                H2Event::Data { stream, bytes } => {
                    // Taken, whether the stream still wants it or not: the
                    // connection's window opens either way.
                    let _ = self.session.consume(stream, bytes.len());
                    if let Some(Stream::Reading { reader, .. }) = self.streams.get_mut(&stream) {
                        reader.push(&bytes);
                        // Refused as soon as the prefix shows it: the
                        // stream is answered, the rest of its body dropped.
                        if reader.refused().is_some() {
                            self.frame(stream);
                        }
                    }
                }
                H2Event::EndStream { stream } => {
                    if matches!(self.streams.get(&stream), Some(Stream::Reading { .. })) {
                        self.frame(stream);
                    }
                }
                // A reset or closed stream fails alone: its call (if any)
                // runs, and its reply is dropped.
                H2Event::Reset { stream, .. } | H2Event::Closed { stream, .. } => {
                    self.streams.remove(&stream);
                }
                H2Event::GoAway { .. } => {}
            }
        }
    }

    /// The stream's message is whole (or refused): frame it.
    fn frame(&mut self, stream: i32) {
        let Some(Stream::Reading { head, reader }) = self.streams.remove(&stream) else {
            return;
        };
        let message = reader.finish();
        match self
            .framing
            .frame(&head, message, self.correlation, stream.to_string())
        {
            Framed::Request { request, reply } => {
                self.streams.insert(stream, Stream::Framed { reply });
                self.request(request);
            }
            Framed::Answer(answer) => self.respond(stream, answer),
        }
    }

    fn request(&mut self, request: Request) {
        self.events
            .push_back(FrontEvent::Request { request, raw: None });
    }

    /// Submits `answer` on `stream`. A stream nghttp2 no longer has (reset
    /// meanwhile) fails alone.
    fn respond(&mut self, stream: i32, answer: Answer) {
        let _ = match answer {
            Answer::Message {
                headers,
                body,
                trailers,
            } => self
                .session
                .respond(stream, &fields(&headers), body, trailers),
            Answer::TrailersOnly { headers } => {
                self.session.respond_headers_only(stream, &fields(&headers))
            }
        };
    }
}

/// Header fields as the session takes them, borrowed.
fn fields(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
    fields
        .iter()
        .map(|(n, v)| (n.as_slice(), v.as_slice()))
        .collect()
}
