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
//! # Server reflection
//!
//! `grpc.reflection.v1` and `v1alpha`'s `ServerReflectionInfo` is the one
//! bidirectional call: its stream stays in the table until the client
//! ends its side. Each whole message is framed to the exposure as a
//! `Describe` of the stream's bearer (the caller named again at every
//! message, § gRPC), and answered from `Framing::reflection` when the
//! description comes back, in order, one DATA frame each, on a response
//! the session keeps open; a refusal, a message over the limit or cut by
//! the half-close, and `stop()` end it through one path that answers
//! trailers-only when nothing was sent and with trailers otherwise.
//!
//! # What one peer can hold
//!
//! A header block is held to the header list's limit as decoded (an HPACK
//! bomb is answered RESOURCE_EXHAUSTED, `limen-nghttp2` drops its fields as
//! they come); the connection's partial messages to
//! [`GrpcLimits::max_buffered`] across its streams; frames that make no
//! progress to the session's budget (GOAWAY ENHANCE_YOUR_CALM past it).
//! An answer to a request not yet ended is followed by RST_STREAM
//! (NO_ERROR), so the rest of its body is not read. The preface, a
//! connection without streams and a stream silent inside its message each
//! have a deadline ([`GrpcLimits`]), through
//! [`poll_timeout`](GrpcFront::poll_timeout). `docs/decisions.md` says why
//! each is what it is.
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

use limen_core::hale::runtime::{Correlation, Credential, Delivery, Outcome, Request, RequestKind};
use limen_core::hash::Fixed;
use limen_core::wire::front::{Front, FrontEvent, FrontKind, Machine};
use limen_core::wire::grpc::reflection::{MessageStream, StreamError};
use limen_core::wire::grpc::{
    frame_message, status, trailers_only, Answer, Framed, Framing, GrpcCodec, Head, MessageReader,
    Reply, Route,
};
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
    /// The bytes of messages not yet whole the connection holds across
    /// all its streams (a call's partial message, a reflection call's
    /// waiting ones). A stream whose DATA would pass it is answered
    /// RESOURCE_EXHAUSTED and reset; the others go on. The server's bound
    /// is this times the connections a listener takes.
    pub max_buffered: usize,
    /// How long a new connection may take to send its preface (the magic
    /// and its first SETTINGS) before it is closed.
    pub preface: Timestamp,
    /// How long a connection with no open stream is kept before GOAWAY
    /// (NO_ERROR) closes it.
    pub idle: Timestamp,
    /// How long a stream inside its message (its body begun or due, not
    /// ended) may send nothing before it is answered INVALID_ARGUMENT
    /// `cut_message` and reset.
    pub stream_idle: Timestamp,
}

impl Default for GrpcLimits {
    fn default() -> GrpcLimits {
        GrpcLimits {
            max_streams: 4096,
            write_stall: 5 * SECOND,
            max_queued: 1 << 20,
            // Four whole messages of 1 MiB in progress at once.
            max_buffered: 4 << 20,
            // The HTTP transport's silence before a request starts.
            preface: 5 * SECOND,
            idle: 30 * SECOND,
            // The HTTP transport's whole request.
            stream_idle: 10 * SECOND,
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

/// The bytes of a reflection stream's messages that may wait for their
/// answers: one whole message's limit (§ gRPC, 1 MiB). Each message is
/// taken off the wire as it arrives (the connection's window opens for
/// it), so a client that sends without reading the answers is ended
/// RESOURCE_EXHAUSTED rather than held in memory without bound.
const MAX_WAITING: usize = limen_core::wire::grpc::MAX_MESSAGE;

/// One stream of the table.
enum Stream {
    /// Its message is being read; `since` is when its last DATA came (or
    /// its head).
    Reading {
        head: Head,
        reader: MessageReader,
        since: Timestamp,
    },
    /// Its call is with the exposure.
    /// `ended`: the request's side has ended; if not when the answer
    /// goes, the stream is reset NO_ERROR after it (RFC 9113 § 8.1), so
    /// the rest of the body is not read without end.
    Framed { reply: Reply, ended: bool },
    /// A server reflection call: open until the client ends its side.
    Reflecting(Reflecting),
}

/// A server reflection stream (§ gRPC, Server reflection): each whole
/// message is answered as it arrives, in order, after the exposure has
/// named its caller again; the response stays open between them.
struct Reflecting {
    head: Head,
    /// The request side, cut into messages.
    messages: MessageStream,
    /// Whole messages not yet answered, oldest first.
    waiting: VecDeque<Vec<u8>>,
    /// Their bytes, held to [`MAX_WAITING`].
    waiting_bytes: usize,
    /// The exposure is asked who the caller is (a Describe of the
    /// stream's bearer), for the oldest waiting message.
    asking: bool,
    /// The response has started (HEADERS and a message sent): an end is
    /// its trailers, not a trailers-only response.
    started: bool,
    /// The client ended its side.
    half_closed: bool,
    /// When its last DATA came (or its head).
    since: Timestamp,
}

/// One HTTP/2 connection of a gRPC exposure. See the crate documentation.
pub struct GrpcFront {
    correlation: Correlation,
    session: Session,
    framing: Arc<Framing>,
    limits: GrpcLimits,
    /// By stream id, with core's fixed hasher: the ids are the peer's,
    /// but strictly rising and at most `max_streams` held, so colliding
    /// ids could only slow the peer's own connection (core's `hash` says
    /// when an unkeyed hash is safe); SipHash cost a few percent of a call.
    streams: HashMap<i32, Stream, Fixed>,
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
    /// When the connection was accepted (the preface's deadline runs
    /// from it).
    opened: Timestamp,
    /// Since when the table has been empty (the idle deadline).
    idle_since: Option<Timestamp>,
    /// No stream waiting on the client has had DATA since before this
    /// (a lower bound of their `since`: the stream deadline fires no
    /// later than it should, and a scan then finds the true oldest).
    waiting_since: Option<Timestamp>,
    /// The bytes of partial messages held across the streams
    /// ([`GrpcLimits::max_buffered`]).
    buffered: usize,
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
            streams: HashMap::default(),
            events: VecDeque::new(),
            failed: false,
            closed: false,
            stalled_since: None,
            stopping: false,
            opened: now,
            idle_since: Some(now),
            waiting_since: None,
            buffered: 0,
        };
        front.flush(now);
        Some(front)
    }

    /// The streams held: read, or with the exposure, and not yet answered.
    pub fn streams_held(&self) -> usize {
        self.streams.len()
    }

    /// The bytes of partial messages held across the streams, at most
    /// [`GrpcLimits::max_buffered`].
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// The decoded header bytes held for header blocks not yet whole (at
    /// most the session's header list limit a stream).
    pub fn header_bytes_held(&self) -> usize {
        self.session.header_bytes_held()
    }

    fn stall_deadline(&self) -> Option<Timestamp> {
        self.stalled_since.map(|t| t + self.limits.write_stall)
    }

    fn preface_deadline(&self) -> Option<Timestamp> {
        (!self.session.preface_received()).then(|| self.opened + self.limits.preface)
    }

    fn idle_deadline(&self) -> Option<Timestamp> {
        if self.failed || self.stopping {
            return None;
        }
        self.idle_since.map(|t| t + self.limits.idle)
    }

    fn waiting_deadline(&self) -> Option<Timestamp> {
        self.waiting_since.map(|t| t + self.limits.stream_idle)
    }

    /// Answers every stream that has waited `stream_idle` inside its
    /// message, and finds the oldest of those left.
    fn end_idle_streams(&mut self, now: Timestamp) {
        let limit = self.limits.stream_idle;
        let mut idle = Vec::new();
        let mut oldest: Option<Timestamp> = None;
        for (&id, stream) in &self.streams {
            let since = match stream {
                Stream::Reading { since, .. } => *since,
                // A reflection call between messages is not inside one.
                Stream::Reflecting(r) if !r.half_closed && r.messages.held() > 0 => r.since,
                _ => continue,
            };
            if since + limit <= now {
                idle.push(id);
            } else {
                oldest = Some(oldest.map_or(since, |o| o.min(since)));
            }
        }
        self.waiting_since = oldest;
        let reason = format!(
            "cut_message: nothing sent for {} ms inside its message",
            limit / (SECOND / 1000)
        );
        for stream in idle {
            self.buffered -= self.streams.get(&stream).map_or(0, held);
            self.refuse(stream, status::INVALID_ARGUMENT, &reason);
        }
    }

    /// Ends `stream` now with `status` and `reason` (trailers-only, or
    /// the trailers of a reflection call's open response), and resets it
    /// NO_ERROR once that is out, so the rest of its body is not read
    /// (RFC 9113 § 8.1). The caller has taken the stream's bytes off
    /// `buffered`.
    fn refuse(&mut self, stream: i32, code: u32, reason: &str) {
        match self.streams.remove(&stream) {
            Some(Stream::Reflecting(r)) => self.end_reflection(stream, &r, code, reason, None),
            Some(Stream::Reading { head, .. }) => {
                let answer = trailers_only(head.content_type, code, reason, None);
                self.respond(stream, answer);
            }
            Some(framed @ Stream::Framed { .. }) => {
                // With the exposure: its answer is the stream's.
                self.streams.insert(stream, framed);
                return;
            }
            None => {
                let answer = trailers_only(GrpcCodec::Proto.content_type(), code, reason, None);
                self.respond(stream, answer);
            }
        }
        self.session.reset_after_response(stream);
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
        self.take_session_events(now);
        if self.streams.is_empty() {
            self.idle_since.get_or_insert(now);
            self.waiting_since = None;
        } else {
            self.idle_since = None;
        }
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
        self.buffered = 0;
        self.events.push_back(FrontEvent::Closed);
    }

    fn take_session_events(&mut self, now: Timestamp) {
        while let Some(event) = self.session.poll_event() {
            let stream = match &event {
                H2Event::Headers { stream, .. }
                | H2Event::Data { stream, .. }
                | H2Event::EndStream { stream }
                | H2Event::Reset { stream, .. }
                | H2Event::Closed { stream, .. }
                | H2Event::Trailers { stream, .. }
                | H2Event::HeadersTooLarge { stream, .. } => *stream,
                H2Event::GoAway { .. } => continue,
            };
            // The budget counts each stream's partial message: what this
            // event changes of it, taken off before and put back after.
            self.buffered -= self.streams.get(&stream).map_or(0, held);
            self.session_event(now, event);
            self.buffered += self.streams.get(&stream).map_or(0, held);
        }
    }

    fn session_event(&mut self, now: Timestamp, event: H2Event) {
        match event {
            H2Event::Headers {
                stream,
                fields,
                end_stream,
            } => {
                if self.streams.len() >= self.limits.max_streams {
                    // § gRPC: at most 4096 held; one more is refused.
                    let _ = self.session.reset(stream, code::REFUSED_STREAM);
                    return;
                }
                let head = self.framing.head(&fields);
                if let Ok(Route::Reflection { .. }) = head.route {
                    self.open_reflection(now, stream, head, end_stream);
                    return;
                }
                let reader = head.reader();
                if !end_stream {
                    self.waiting_since.get_or_insert(now);
                }
                self.streams.insert(
                    stream,
                    Stream::Reading {
                        head,
                        reader,
                        since: now,
                    },
                );
                if end_stream {
                    self.frame(stream, true);
                }
            }
            H2Event::HeadersTooLarge { stream, end_stream } => {
                let reason = format!(
                    "header_list_too_large: over {} bytes (RFC 9113 § 6.5.2's count)",
                    self.limits.h2().max_header_list_size
                );
                if end_stream && !self.streams.contains_key(&stream) {
                    // Nothing more comes: no reset needed after the answer.
                    let answer = trailers_only(
                        GrpcCodec::Proto.content_type(),
                        status::RESOURCE_EXHAUSTED,
                        &reason,
                        None,
                    );
                    self.respond(stream, answer);
                } else {
                    self.refuse(stream, status::RESOURCE_EXHAUSTED, &reason);
                }
            }
            H2Event::Data { stream, bytes } => {
                // Taken, whether the stream still wants it or not: the
                // connection's window opens either way.
                let _ = self.session.consume(stream, bytes.len());
                // `buffered` holds the other streams' bytes here (this
                // one's were taken off by the caller).
                let room = self.limits.max_buffered.saturating_sub(self.buffered);
                let over = match self.streams.get(&stream) {
                    Some(s @ (Stream::Reading { .. } | Stream::Reflecting(_))) => {
                        held(s) + bytes.len() > room
                    }
                    _ => false,
                };
                if over {
                    let reason = format!(
                        "connection_buffer_full: over {} bytes of messages in progress on this connection",
                        self.limits.max_buffered
                    );
                    self.refuse(stream, status::RESOURCE_EXHAUSTED, &reason);
                    return;
                }
                match self.streams.get_mut(&stream) {
                    Some(Stream::Reading { reader, since, .. }) => {
                        *since = now;
                        reader.push(&bytes);
                        // Refused as soon as the prefix shows it: the
                        // stream is answered, the rest of its body
                        // dropped.
                        if reader.refused().is_some() {
                            self.frame(stream, false);
                        }
                    }
                    Some(Stream::Reflecting(r)) => {
                        r.since = now;
                        r.messages.push(&bytes);
                        if r.messages.held() > 0 {
                            self.waiting_since.get_or_insert(now);
                        }
                        self.reflection_messages(stream);
                    }
                    _ => {}
                }
            }
            H2Event::EndStream { stream } => match self.streams.get_mut(&stream) {
                Some(Stream::Reading { .. }) => self.frame(stream, true),
                Some(Stream::Framed { ended, .. }) => *ended = true,
                Some(Stream::Reflecting(r)) => {
                    r.half_closed = true;
                    self.reflection_messages(stream);
                }
                _ => {}
            },
            // A reset or closed stream fails alone: its call (if any)
            // runs, and its reply is dropped.
            H2Event::Reset { stream, .. } | H2Event::Closed { stream, .. } => {
                self.streams.remove(&stream);
            }
            // A request's trailers say nothing a call reads.
            H2Event::GoAway { .. } | H2Event::Trailers { .. } => {}
        }
    }

    /// The stream's message is whole (or refused): frame it. `ended`:
    /// the request's side has ended; if not, an answer is followed by a
    /// reset NO_ERROR, so the rest of the body is a closed stream's.
    fn frame(&mut self, stream: i32, ended: bool) {
        let Some(Stream::Reading { head, reader, .. }) = self.streams.remove(&stream) else {
            return;
        };
        let message = reader.finish();
        match self
            .framing
            .frame(&head, message, self.correlation, stream.to_string())
        {
            Framed::Request { request, reply } => {
                self.streams.insert(stream, Stream::Framed { reply, ended });
                self.request(request);
            }
            Framed::Answer(answer) => {
                self.respond(stream, answer);
                if !ended {
                    self.session.reset_after_response(stream);
                }
            }
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

impl Machine for GrpcFront {
    /// Whether the front takes more input now: false while the peer does
    /// not read what is queued (backpressure) and once the connection is
    /// over.
    fn wants_read(&self) -> bool {
        !self.closed
            && !self.failed
            && self.session.queued().len() < self.limits.max_queued
            && self.session.wants_read()
    }

    /// Bytes read from the connection at `now`. A protocol error ends the
    /// connection after its GOAWAY; an error of one stream ends that stream
    /// alone (nghttp2 resets it).
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        if self.closed || self.failed {
            return;
        }
        if self.session.handle_data(now, data).is_err() {
            self.failed = true;
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
    /// `preface`. A connection with no stream for `idle` is sent GOAWAY
    /// and closes; a stream that sent nothing for `stream_idle` inside its
    /// message is answered `cut_message` and reset. Before each deadline,
    /// nothing happens.
    fn handle_timeout(&mut self, now: Timestamp) {
        if self.closed {
            return;
        }
        let due = |deadline: Option<Timestamp>| deadline.is_some_and(|t| t <= now);
        if due(self.stall_deadline()) || due(self.preface_deadline()) {
            self.finish();
            return;
        }
        if due(self.idle_deadline()) {
            // Graceful: GOAWAY names the last stream taken (none open),
            // and the connection closes once it is written.
            let _ = self.session.go_away(code::NO_ERROR);
            self.failed = true;
            self.flush(now);
            return;
        }
        if due(self.waiting_deadline()) {
            self.end_idle_streams(now);
            self.flush(now);
        }
    }

    /// The deadline [`handle_timeout`](GrpcFront::handle_timeout) next acts
    /// on: the earliest of the write stall, the preface, the idle
    /// connection and the stream waiting longest.
    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.closed {
            return None;
        }
        [
            self.stall_deadline(),
            self.preface_deadline(),
            self.idle_deadline(),
            self.waiting_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The bytes still to write, borrowed until the next call on the front.
    fn pending_output(&self) -> &[u8] {
        if self.closed {
            return &[];
        }
        self.session.queued()
    }

    /// `n` bytes of [`pending_output`](GrpcFront::pending_output) were
    /// written at `now`.
    fn consume_output(&mut self, now: Timestamp, n: usize) {
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
    fn is_closed(&self) -> bool {
        self.closed
    }
}

impl Front for GrpcFront {
    fn kind(&self) -> FrontKind {
        FrontKind::Grpc
    }

    /// The correlation the exposure addresses this connection's replies to.
    fn correlation(&self) -> Correlation {
        self.correlation
    }

    /// The next event, if any: a framed request, the connection lost, the
    /// connection done.
    fn poll_event(&mut self) -> Option<FrontEvent> {
        self.events.pop_front()
    }

    /// Answers the delivery's stream (its client id) by § gRPC's table,
    /// queued at `now`. A stream the peer reset, or a connection already
    /// over, drops it. Returns how many bytes were queued.
    fn deliver(&mut self, now: Timestamp, delivery: Delivery) -> usize {
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
        let removed = self.streams.remove(&stream);
        self.buffered -= removed.as_ref().map_or(0, held);
        match removed {
            Some(Stream::Framed { reply, ended }) => {
                let answer = self.framing.answer(&reply, delivery.outcome);
                self.respond(stream, answer);
                if !ended {
                    self.session.reset_after_response(stream);
                }
            }
            Some(Stream::Reflecting(r)) => {
                self.reflect(stream, r, delivery.outcome);
                self.buffered += self.streams.get(&stream).map_or(0, held);
            }
            Some(other) => {
                self.buffered += held(&other);
                self.streams.insert(stream, other);
                return 0;
            }
            None => return 0,
        }
        self.flush(now);
        self.session.queued().len().saturating_sub(before)
    }

    /// Shutdown, once the exposure has answered what it will: GOAWAY
    /// (NO_ERROR) after the replies already queued, naming the last stream
    /// taken; the connection closes when its streams are done. A stream
    /// whose message was still being read never reached the exposure: it
    /// is reset REFUSED_STREAM (not processed, safe to retry elsewhere).
    /// An open reflection call ends as the client's half-close ends it,
    /// with `grpc-status: 0`, before the GOAWAY (§ gRPC).
    fn stop(&mut self, now: Timestamp) {
        if self.closed || self.failed || self.stopping {
            return;
        }
        self.stopping = true;
        let reflecting: Vec<i32> = self
            .streams
            .iter()
            .filter(|(_, s)| matches!(s, Stream::Reflecting(_)))
            .map(|(&id, _)| id)
            .collect();
        for stream in reflecting {
            if let Some(Stream::Reflecting(r)) = self.streams.remove(&stream) {
                self.end_reflection(stream, &r, status::OK, "", None);
            }
        }
        // Serialized now, so those trailers leave before the GOAWAY:
        // nghttp2 sends a control frame ahead of a stream's last DATA and
        // the trailers submitted after it.
        if self.session.flush().is_err() {
            self.failed = true;
        }
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
        self.buffered = self.streams.values().map(held).sum();
        let _ = self.session.go_away(code::NO_ERROR);
        self.flush(now);
    }

    /// Ends the connection now, whatever is queued: the exposure is
    /// finished with it (a transport failure for its calls).
    fn abort(&mut self) {
        self.finish();
    }
}

impl GrpcFront {
    /// A reflection call's head arrived. Reflection speaks protobuf,
    /// uncompressed: another codec or encoding is refused malformed at
    /// once; otherwise the stream is held until the client ends its side.
    fn open_reflection(&mut self, now: Timestamp, stream: i32, head: Head, end_stream: bool) {
        let refused = if head.codec != GrpcCodec::Proto {
            Some(format!(
                "unsupported_content_type: {}, reflection speaks protobuf",
                head.content_type
            ))
        } else {
            match head.encoding.as_deref() {
                None | Some(b"identity") => None,
                Some(other) => Some(format!(
                    "unsupported_encoding: {}",
                    String::from_utf8_lossy(other)
                )),
            }
        };
        if let Some(reason) = refused {
            let answer = trailers_only(head.content_type, status::INVALID_ARGUMENT, &reason, None);
            self.respond(stream, answer);
            if !end_stream {
                self.session.reset_after_response(stream);
            }
            return;
        }
        self.streams.insert(
            stream,
            Stream::Reflecting(Reflecting {
                head,
                messages: MessageStream::default(),
                waiting: VecDeque::new(),
                waiting_bytes: 0,
                asking: false,
                started: false,
                half_closed: end_stream,
                since: now,
            }),
        );
        self.reflection_messages(stream);
    }

    /// Takes the reflection stream's whole messages, asks the exposure
    /// about the oldest, and ends the call when the client has ended its
    /// side and every message is answered (or its body is cut, or a
    /// message cannot be read).
    fn reflection_messages(&mut self, stream: i32) {
        let Some(Stream::Reflecting(r)) = self.streams.get_mut(&stream) else {
            return;
        };
        let mut failed = None;
        while let Some(message) = r.messages.next_message() {
            match message {
                Ok(m) if r.waiting_bytes + m.len() > MAX_WAITING => {
                    failed = Some(StreamError {
                        status: status::RESOURCE_EXHAUSTED,
                        reason: format!(
                            "messages_waiting: over {MAX_WAITING} bytes sent and not yet answered"
                        ),
                    });
                    break;
                }
                Ok(m) => {
                    r.waiting_bytes += m.len();
                    r.waiting.push_back(m);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_none() && r.half_closed {
            failed = r.messages.finish().err();
        }
        if let Some(e) = failed {
            // A message over the limit, or one the half-close cut, ends
            // the call at once.
            let Some(Stream::Reflecting(r)) = self.streams.remove(&stream) else {
                return;
            };
            self.end_reflection(stream, &r, e.status, &e.reason, None);
            return;
        }
        if !r.asking && !r.waiting.is_empty() {
            // The bearer is asked again at every message (§ gRPC): the
            // exposure names the caller as it does for the description.
            r.asking = true;
            let request = Request {
                correlation: self.correlation,
                kind: RequestKind::Describe,
                digest: None,
                credential: Credential::Bearer(r.head.bearer.clone()),
                client_id: Some(stream.to_string()),
            };
            self.request(request);
        } else if !r.asking && r.half_closed {
            let Some(Stream::Reflecting(r)) = self.streams.remove(&stream) else {
                return;
            };
            self.end_reflection(stream, &r, status::OK, "", None);
        }
    }

    /// The exposure answered who the caller of a reflection stream is: a
    /// caller it names has the oldest waiting message answered; any
    /// other outcome (UNAUTHENTICATED, a caller the source stopped
    /// naming) ends the call with its status.
    fn reflect(&mut self, stream: i32, mut r: Reflecting, outcome: Outcome) {
        r.asking = false;
        match outcome {
            Outcome::Description(_) => {
                let Some(message) = r.waiting.pop_front() else {
                    self.streams.insert(stream, Stream::Reflecting(r));
                    return;
                };
                r.waiting_bytes -= message.len();
                match self.framing.reflection().answer(&message) {
                    Ok(response) => {
                        let framed = frame_message(&response);
                        let sent = if r.started {
                            self.session.send_data(stream, &framed)
                        } else {
                            r.started = true;
                            let headers = [
                                (&b":status"[..], &b"200"[..]),
                                (b"content-type", r.head.content_type.as_bytes()),
                            ];
                            self.session.respond_open(stream, &headers, framed)
                        };
                        if sent.is_err() {
                            // nghttp2 no longer has the stream (reset
                            // meanwhile): it fails alone.
                            return;
                        }
                        self.streams.insert(stream, Stream::Reflecting(r));
                        self.reflection_messages(stream);
                    }
                    Err(reason) => {
                        self.end_reflection(stream, &r, status::INVALID_ARGUMENT, &reason, None)
                    }
                }
            }
            refused => {
                let answer = self.framing.answer(&r.head.reply(), refused);
                self.end_reflection(stream, &r, 0, "", Some(answer));
            }
        }
    }

    /// Every end of a reflection call goes through here: one not yet
    /// answered ends trailers-only (the status in its one HEADERS frame),
    /// one that has answered ends with the status as the trailers of its
    /// open response. `answer`, when given, is the outcome's trailers-only
    /// answer, whose status fields are used; otherwise `code` and
    /// `message`.
    fn end_reflection(
        &mut self,
        stream: i32,
        r: &Reflecting,
        code: u32,
        message: &str,
        answer: Option<Answer>,
    ) {
        let answer = answer.unwrap_or_else(|| {
            let mut answer = trailers_only(r.head.content_type, code, message, None);
            if code == status::OK {
                // grpc-status: 0 alone, as a result's trailers are.
                if let Answer::TrailersOnly { headers } = &mut answer {
                    headers.retain(|(n, _)| n != b"grpc-message");
                }
            }
            answer
        });
        if !r.half_closed && !self.stopping {
            // The client may still be sending: stopped once the end is
            // out (RFC 9113 § 8.1). A stop's GOAWAY ends the connection
            // instead.
            self.session.reset_after_response(stream);
        }
        if !r.started {
            self.respond(stream, answer);
            return;
        }
        let Answer::TrailersOnly { headers } = answer else {
            return;
        };
        let trailers = headers
            .into_iter()
            .filter(|(n, _)| n.starts_with(b"grpc-"))
            .collect();
        let _ = self.session.end_open(stream, trailers);
    }
}

/// The bytes of partial messages `stream` holds (the connection's budget).
fn held(stream: &Stream) -> usize {
    match stream {
        Stream::Reading { reader, .. } => reader.held(),
        Stream::Reflecting(r) => r.waiting_bytes + r.messages.held(),
        Stream::Framed { .. } => 0,
    }
}

/// Header fields as the session takes them, borrowed.
fn fields(fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<(&[u8], &[u8])> {
    fields
        .iter()
        .map(|(n, v)| (n.as_slice(), v.as_slice()))
        .collect()
}
