//! One gRPC connection's stream table (§ gRPC), driven by the HTTP/2
//! events of [`h2`](super::h2) alone: it reads each stream's header block
//! and its one length-prefixed message whole, frames the call into an
//! exposure [`Request`] ([`FrontEvent::Request`]), answers each
//! [`Delivery`] on its stream, and serves server reflection. What it asks
//! of the HTTP/2 session goes out as [`Command`]s through [`Submit`].
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
//! kept open; a refusal, a message over the limit or cut by the
//! half-close, and [`Streams::stop`] end it through one path that answers
//! trailers-only when nothing was sent and with trailers otherwise.
//!
//! # What one peer can hold
//!
//! At most [`GrpcLimits::max_streams`] streams (one more is reset
//! REFUSED_STREAM); the connection's partial messages to
//! [`GrpcLimits::max_buffered`] across its streams; a header block past
//! the session's header list limit is answered RESOURCE_EXHAUSTED. An
//! answer to a request not yet ended is followed by RST_STREAM
//! (NO_ERROR), so the rest of its body is not read. A connection without
//! streams ([`GrpcLimits::idle`]) and a stream silent inside its message
//! ([`GrpcLimits::stream_idle`]) each have a deadline, through
//! [`Streams::poll_timeout`]. The preface's and the write stall's
//! deadlines are the session's bytes', so the adapter keeps them.
//! `docs/decisions.md` says why each limit is what it is.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::h2::{code, Command, H2Event, Submit};
use super::reflection::{MessageStream, StreamError};
use super::{
    frame_message, status, trailers_only, Answer, Field, Framed, Framing, GrpcCodec, Head,
    MessageReader, Reply, Route,
};
use crate::hale::runtime::{Correlation, Credential, Delivery, Outcome, Request, RequestKind};
use crate::hash::Fixed;
use crate::wire::front::FrontEvent;
use crate::{Timestamp, SECOND};

/// A gRPC connection's limits.
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

/// The bytes of a reflection stream's messages that may wait for their
/// answers: one whole message's limit (§ gRPC, 1 MiB). Each message is
/// taken off the wire as it arrives (the connection's window opens for
/// it), so a client that sends without reading the answers is ended
/// RESOURCE_EXHAUSTED rather than held in memory without bound.
const MAX_WAITING: usize = super::MAX_MESSAGE;

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

/// One gRPC connection's stream table and server reflection. See the
/// module documentation.
///
/// The order of calls: create it at accept ([`Streams::new`]); hand it
/// every session event ([`Streams::handle`]) and every [`Delivery`]
/// ([`Streams::deliver`]); after the session has written what it can,
/// [`Streams::settle`]; take [`Streams::poll_event`] until `None`; act on
/// [`Streams::poll_timeout`] with [`Streams::handle_timeout`];
/// [`Streams::stop`] at shutdown, [`Streams::finish`] when the connection
/// is over.
pub struct Streams {
    correlation: Correlation,
    framing: Arc<Framing>,
    limits: GrpcLimits,
    /// The session's header list limit, named in the refusal of a header
    /// block past it.
    header_list_limit: u32,
    /// By stream id, with core's fixed hasher: the ids are the peer's,
    /// but strictly rising and at most `max_streams` held, so colliding
    /// ids could only slow the peer's own connection (core's `hash` says
    /// when an unkeyed hash is safe); SipHash cost a few percent of a call.
    streams: HashMap<i32, Stream, Fixed>,
    events: VecDeque<FrontEvent>,
    /// The connection ends once its output is written: the session failed
    /// (a protocol error) or the idle GOAWAY went out.
    closing: bool,
    /// `Closed` was emitted: nothing more is done.
    closed: bool,
    /// GOAWAY was sent by [`Streams::stop`].
    stopping: bool,
    /// Since when the table has been empty (the idle deadline).
    idle_since: Option<Timestamp>,
    /// No stream waiting on the client has had DATA since before this
    /// (a lower bound of their `since`: the stream deadline fires no
    /// later than it should, and a scan then finds the true oldest).
    waiting_since: Option<Timestamp>,
    /// The bytes of partial messages held across the streams
    /// ([`GrpcLimits::max_buffered`]).
    buffered: usize,
    /// The node is draining: the health checks answer that it is not
    /// serving ([`health`]).
    draining: bool,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("correlation", &self.correlation)
            .field("streams", &self.streams.len())
            .field("buffered", &self.buffered)
            .finish_non_exhaustive()
    }
}

impl Streams {
    /// The table of a connection of the exposure whose framing is
    /// `framing`, accepted at `now`; `header_list_limit` is the session's
    /// (SETTINGS_MAX_HEADER_LIST_SIZE), named when a block passes it.
    pub fn new(
        now: Timestamp,
        limits: GrpcLimits,
        header_list_limit: u32,
        framing: Arc<Framing>,
        correlation: Correlation,
    ) -> Streams {
        Streams {
            correlation,
            framing,
            limits,
            header_list_limit,
            streams: HashMap::default(),
            events: VecDeque::new(),
            closing: false,
            closed: false,
            stopping: false,
            idle_since: Some(now),
            waiting_since: None,
            buffered: 0,
            draining: false,
        }
    }

    /// The node is draining, or serving again: what the health checks
    /// answer from now on ([`health`]).
    pub fn set_draining(&mut self, draining: bool) {
        self.draining = draining;
    }

    /// The correlation the exposure addresses this connection's replies to.
    pub fn correlation(&self) -> Correlation {
        self.correlation
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

    /// The limits it was made with.
    pub fn limits(&self) -> &GrpcLimits {
        &self.limits
    }

    /// Whether the connection ends once its output is written (the
    /// session failed, or the idle GOAWAY went out).
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// Whether [`Streams::stop`] has sent its GOAWAY.
    pub fn stopping(&self) -> bool {
        self.stopping
    }

    /// Whether the connection is over ([`FrontEvent::Closed`] emitted).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The session failed (a protocol error): what it has queued (its
    /// GOAWAY) is written, then the connection closes.
    pub fn session_failed(&mut self) {
        self.closing = true;
    }

    /// The next event for the server: a framed request, the connection
    /// lost, the connection done.
    pub fn poll_event(&mut self) -> Option<FrontEvent> {
        self.events.pop_front()
    }

    /// One event of the session at `now`.
    pub fn handle(&mut self, now: Timestamp, event: H2Event, out: &mut dyn Submit) {
        if self.closed {
            return;
        }
        let stream = match &event {
            H2Event::Headers { stream, .. }
            | H2Event::Data { stream, .. }
            | H2Event::EndStream { stream }
            | H2Event::Reset { stream }
            | H2Event::HeadersTooLarge { stream, .. } => *stream,
            // The streams the peer opened are still answered.
            H2Event::GoAway => return,
        };
        // The budget counts each stream's partial message: what this
        // event changes of it, taken off before and put back after.
        self.buffered -= self.streams.get(&stream).map_or(0, held);
        self.stream_event(now, event, out);
        self.buffered += self.streams.get(&stream).map_or(0, held);
    }

    /// After the session has written what was submitted (and its events
    /// are handled) at `now`: the idle deadline starts when the table is
    /// empty and stops when it is not.
    pub fn settle(&mut self, now: Timestamp) {
        if self.streams.is_empty() {
            self.idle_since.get_or_insert(now);
            self.waiting_since = None;
        } else {
            self.idle_since = None;
        }
    }

    /// The connection is over: its calls with the exposure are lost
    /// ([`FrontEvent::Lost`] when any is), and [`FrontEvent::Closed`].
    pub fn finish(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
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

    fn idle_deadline(&self) -> Option<Timestamp> {
        if self.closing || self.stopping {
            return None;
        }
        self.idle_since.map(|t| t + self.limits.idle)
    }

    fn waiting_deadline(&self) -> Option<Timestamp> {
        self.waiting_since.map(|t| t + self.limits.stream_idle)
    }

    /// The deadline [`Streams::handle_timeout`] next acts on: the idle
    /// connection's or the stream waiting longest's.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        if self.closed {
            return None;
        }
        [self.idle_deadline(), self.waiting_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passes. A connection with no stream for `idle` is sent GOAWAY
    /// (NO_ERROR) and is closing; a stream that sent nothing for
    /// `stream_idle` inside its message is answered `cut_message` and
    /// reset. Returns whether it submitted anything (the session has
    /// output to write); before each deadline nothing happens.
    pub fn handle_timeout(&mut self, now: Timestamp, out: &mut dyn Submit) -> bool {
        if self.closed {
            return false;
        }
        let due = |deadline: Option<Timestamp>| deadline.is_some_and(|t| t <= now);
        if due(self.idle_deadline()) {
            // Graceful: GOAWAY names the last stream taken (none open),
            // and the connection closes once it is written.
            let _ = out.submit(Command::GoAway {
                code: code::NO_ERROR,
            });
            self.closing = true;
            return true;
        }
        if due(self.waiting_deadline()) {
            self.end_idle_streams(now, out);
            return true;
        }
        false
    }

    /// Answers every stream that has waited `stream_idle` inside its
    /// message, and finds the oldest of those left.
    fn end_idle_streams(&mut self, now: Timestamp, out: &mut dyn Submit) {
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
            self.refuse(stream, status::INVALID_ARGUMENT, &reason, out);
        }
    }

    /// Ends `stream` now with `status` and `reason` (trailers-only, or
    /// the trailers of a reflection call's open response), and resets it
    /// NO_ERROR once that is out, so the rest of its body is not read
    /// (RFC 9113 § 8.1). The caller has taken the stream's bytes off
    /// `buffered`.
    fn refuse(&mut self, stream: i32, code: u32, reason: &str, out: &mut dyn Submit) {
        match self.streams.remove(&stream) {
            Some(Stream::Reflecting(r)) => self.end_reflection(stream, &r, code, reason, None, out),
            Some(Stream::Reading { head, .. }) => {
                let answer = trailers_only(head.content_type, code, reason, None);
                respond(out, stream, answer);
            }
            Some(framed @ Stream::Framed { .. }) => {
                // With the exposure: its answer is the stream's.
                self.streams.insert(stream, framed);
                return;
            }
            None => {
                let answer = trailers_only(GrpcCodec::Proto.content_type(), code, reason, None);
                respond(out, stream, answer);
            }
        }
        let _ = out.submit(Command::ResetAfterResponse { stream });
    }

    fn stream_event(&mut self, now: Timestamp, event: H2Event, out: &mut dyn Submit) {
        match event {
            H2Event::Headers {
                stream,
                fields,
                end_stream,
            } => {
                if self.streams.len() >= self.limits.max_streams {
                    // § gRPC: at most 4096 held; one more is refused.
                    let _ = out.submit(Command::Reset {
                        stream,
                        code: code::REFUSED_STREAM,
                    });
                    return;
                }
                if let Some(answer) = health(&fields, self.draining) {
                    respond(out, stream, answer);
                    // Its request message, if any, is not read.
                    if !end_stream {
                        let _ = out.submit(Command::ResetAfterResponse { stream });
                    }
                    return;
                }
                let head = self.framing.head(&fields);
                if let Ok(Route::Reflection { .. }) = head.route {
                    self.open_reflection(now, stream, head, end_stream, out);
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
                    self.frame(stream, true, out);
                }
            }
            H2Event::HeadersTooLarge { stream, end_stream } => {
                let reason = format!(
                    "header_list_too_large: over {} bytes (RFC 9113 § 6.5.2's count)",
                    self.header_list_limit
                );
                if end_stream && !self.streams.contains_key(&stream) {
                    // Nothing more comes: no reset needed after the answer.
                    let answer = trailers_only(
                        GrpcCodec::Proto.content_type(),
                        status::RESOURCE_EXHAUSTED,
                        &reason,
                        None,
                    );
                    respond(out, stream, answer);
                } else {
                    self.refuse(stream, status::RESOURCE_EXHAUSTED, &reason, out);
                }
            }
            H2Event::Data { stream, bytes } => {
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
                    self.refuse(stream, status::RESOURCE_EXHAUSTED, &reason, out);
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
                            self.frame(stream, false, out);
                        }
                    }
                    Some(Stream::Reflecting(r)) => {
                        r.since = now;
                        r.messages.push(&bytes);
                        if r.messages.held() > 0 {
                            self.waiting_since.get_or_insert(now);
                        }
                        self.reflection_messages(stream, out);
                    }
                    _ => {}
                }
            }
            H2Event::EndStream { stream } => match self.streams.get_mut(&stream) {
                Some(Stream::Reading { .. }) => self.frame(stream, true, out),
                Some(Stream::Framed { ended, .. }) => *ended = true,
                Some(Stream::Reflecting(r)) => {
                    r.half_closed = true;
                    self.reflection_messages(stream, out);
                }
                _ => {}
            },
            // A reset or closed stream fails alone: its call (if any)
            // runs, and its reply is dropped.
            H2Event::Reset { stream } => {
                self.streams.remove(&stream);
            }
            H2Event::GoAway => {}
        }
    }

    /// The stream's message is whole (or refused): frame it. `ended`:
    /// the request's side has ended; if not, an answer is followed by a
    /// reset NO_ERROR, so the rest of the body is a closed stream's.
    fn frame(&mut self, stream: i32, ended: bool, out: &mut dyn Submit) {
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
                respond(out, stream, answer);
                if !ended {
                    let _ = out.submit(Command::ResetAfterResponse { stream });
                }
            }
        }
    }

    fn request(&mut self, request: Request) {
        self.events
            .push_back(FrontEvent::Request { request, raw: None });
    }

    /// Answers the delivery's stream (its client id) by § gRPC's table. A
    /// stream the peer reset, or a connection already over, drops it.
    /// Returns whether anything was submitted.
    pub fn deliver(&mut self, delivery: Delivery, out: &mut dyn Submit) -> bool {
        if self.closed {
            return false;
        }
        let stream = delivery
            .client_id
            .as_deref()
            .and_then(|id| id.parse::<i32>().ok());
        let Some(stream) = stream else {
            return false;
        };
        let removed = self.streams.remove(&stream);
        self.buffered -= removed.as_ref().map_or(0, held);
        match removed {
            Some(Stream::Framed { reply, ended }) => {
                let answer = self.framing.answer(&reply, delivery.outcome);
                respond(out, stream, answer);
                if !ended {
                    let _ = out.submit(Command::ResetAfterResponse { stream });
                }
            }
            Some(Stream::Reflecting(r)) => {
                self.reflect(stream, r, delivery.outcome, out);
                self.buffered += self.streams.get(&stream).map_or(0, held);
            }
            Some(other) => {
                self.buffered += held(&other);
                self.streams.insert(stream, other);
                return false;
            }
            None => return false,
        }
        true
    }

    /// Shutdown, once the exposure has answered what it will: GOAWAY
    /// (NO_ERROR) after the replies already submitted, naming the last
    /// stream taken; the connection closes when its streams are done. A
    /// stream whose message was still being read never reached the
    /// exposure: it is reset REFUSED_STREAM (not processed, safe to retry
    /// elsewhere). An open reflection call ends as the client's
    /// half-close ends it, with `grpc-status: 0`, before the GOAWAY
    /// (§ gRPC). Returns whether it did anything (not when closing,
    /// closed or stopped already).
    pub fn stop(&mut self, out: &mut dyn Submit) -> bool {
        if self.closed || self.closing || self.stopping {
            return false;
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
                self.end_reflection(stream, &r, status::OK, "", None, out);
            }
        }
        // Serialized now, so those trailers leave before the GOAWAY:
        // nghttp2 sends a control frame ahead of a stream's last DATA and
        // the trailers submitted after it.
        let _ = out.submit(Command::Flush);
        let reading: Vec<i32> = self
            .streams
            .iter()
            .filter(|(_, s)| matches!(s, Stream::Reading { .. }))
            .map(|(&id, _)| id)
            .collect();
        for stream in reading {
            self.streams.remove(&stream);
            let _ = out.submit(Command::Reset {
                stream,
                code: code::REFUSED_STREAM,
            });
        }
        self.buffered = self.streams.values().map(held).sum();
        let _ = out.submit(Command::GoAway {
            code: code::NO_ERROR,
        });
        true
    }

    /// A reflection call's head arrived. Reflection speaks protobuf,
    /// uncompressed: another codec or encoding is refused malformed at
    /// once; otherwise the stream is held until the client ends its side.
    fn open_reflection(
        &mut self,
        now: Timestamp,
        stream: i32,
        head: Head,
        end_stream: bool,
        out: &mut dyn Submit,
    ) {
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
            respond(out, stream, answer);
            if !end_stream {
                let _ = out.submit(Command::ResetAfterResponse { stream });
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
        self.reflection_messages(stream, out);
    }

    /// Takes the reflection stream's whole messages, asks the exposure
    /// about the oldest, and ends the call when the client has ended its
    /// side and every message is answered (or its body is cut, or a
    /// message cannot be read).
    fn reflection_messages(&mut self, stream: i32, out: &mut dyn Submit) {
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
            self.end_reflection(stream, &r, e.status, &e.reason, None, out);
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
            self.end_reflection(stream, &r, status::OK, "", None, out);
        }
    }

    /// The exposure answered who the caller of a reflection stream is: a
    /// caller it names has the oldest waiting message answered; any
    /// other outcome (UNAUTHENTICATED, a caller the source stopped
    /// naming) ends the call with its status.
    fn reflect(&mut self, stream: i32, mut r: Reflecting, outcome: Outcome, out: &mut dyn Submit) {
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
                        let data = frame_message(&response);
                        let command = if r.started {
                            Command::Data { stream, data }
                        } else {
                            r.started = true;
                            let headers = vec![
                                (b":status".to_vec(), b"200".to_vec()),
                                (
                                    b"content-type".to_vec(),
                                    r.head.content_type.as_bytes().to_vec(),
                                ),
                            ];
                            Command::Open {
                                stream,
                                headers,
                                data,
                            }
                        };
                        if out.submit(command).is_err() {
                            // The session no longer has the stream (reset
                            // meanwhile): it fails alone.
                            return;
                        }
                        self.streams.insert(stream, Stream::Reflecting(r));
                        self.reflection_messages(stream, out);
                    }
                    Err(reason) => self.end_reflection(
                        stream,
                        &r,
                        status::INVALID_ARGUMENT,
                        &reason,
                        None,
                        out,
                    ),
                }
            }
            refused => {
                let answer = self.framing.answer(&r.head.reply(), refused);
                self.end_reflection(stream, &r, 0, "", Some(answer), out);
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
        out: &mut dyn Submit,
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
            let _ = out.submit(Command::ResetAfterResponse { stream });
        }
        if !r.started {
            respond(out, stream, answer);
            return;
        }
        let Answer::TrailersOnly { headers } = answer else {
            return;
        };
        let trailers = headers
            .into_iter()
            .filter(|(n, _)| n.starts_with(b"grpc-"))
            .collect();
        let _ = out.submit(Command::Trailers { stream, trailers });
    }
}

/// gRPC's standard health check: `grpc.health.v1.Health/Check`.
pub const HEALTH_CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// The answer to a health check, which the connection gives itself (no
/// caller, no source, no unit of the bound), or `None` for any other
/// stream. Two are answered, for two kinds of balancer
/// (docs/decisions.md, "Rpc exposures behind a balancer"):
///
/// - `GET /.health` over HTTP/2 (HAProxy's `check-proto h2`): the HTTP
///   transport's answer ([`crate::wire::http::health`]), 200 serving, 503
///   draining, as JSON under `:status`;
/// - `POST /grpc.health.v1.Health/Check` (gRPC's health protocol, any
///   `service` asked, since a node serves or drains whole):
///   `HealthCheckResponse { status = 1 }` (SERVING), or 2 (NOT_SERVING)
///   while draining, under `grpc-status: 0`.
pub fn health(fields: &[Field], draining: bool) -> Option<Answer> {
    let get = |name: &[u8]| {
        fields
            .iter()
            .find(|(n, _)| n.as_slice() == name)
            .map(|(_, v)| v.as_slice())
    };
    let path = get(b":path")?;
    let path = path.split(|&b| b == b'?').next().unwrap_or(path);
    match (get(b":method")?, path) {
        (b"GET", p) if p == crate::wire::http::HEALTH_PATH.as_bytes() => {
            let (status, body) = crate::wire::http::health(draining);
            Some(Answer::Message {
                headers: vec![
                    (b":status".to_vec(), status.to_string().into_bytes()),
                    (b"content-type".to_vec(), b"application/json".to_vec()),
                    (b"cache-control".to_vec(), b"no-store".to_vec()),
                ],
                body: body.to_vec(),
                trailers: Vec::new(),
            })
        }
        (b"POST", p) if p == HEALTH_CHECK_PATH.as_bytes() => {
            // Field 1 (varint): ServingStatus, SERVING 1, NOT_SERVING 2.
            let serving = if draining { 2 } else { 1 };
            Some(Answer::Message {
                headers: vec![
                    (b":status".to_vec(), b"200".to_vec()),
                    (b"content-type".to_vec(), b"application/grpc".to_vec()),
                ],
                body: frame_message(&[0x08, serving]),
                trailers: vec![(b"grpc-status".to_vec(), b"0".to_vec())],
            })
        }
        _ => None,
    }
}

/// Submits `answer` on `stream`. A stream the session no longer has
/// (reset meanwhile) fails alone.
fn respond(out: &mut dyn Submit, stream: i32, answer: Answer) {
    let _ = out.submit(Command::Respond { stream, answer });
}

/// The bytes of partial messages `stream` holds (the connection's budget).
fn held(stream: &Stream) -> usize {
    match stream {
        Stream::Reading { reader, .. } => reader.held(),
        Stream::Reflecting(r) => r.waiting_bytes + r.messages.held(),
        Stream::Framed { .. } => 0,
    }
}

#[cfg(test)]
mod tests;
