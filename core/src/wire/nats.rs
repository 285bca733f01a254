//! A NATS client connection (the NATS client protocol, text over TCP), as a
//! sans-I/O machine.
//!
//! The server speaks first: `INFO {json}` names its id and its limits
//! (`max_payload`, and `max_control_line` where it says one). The client
//! answers `CONNECT {json}` (not verbose, not pedantic, `echo` as
//! [`Options::echo`] says, protocol 1), then a `SUB` for every subscription
//! it holds, then a `PING`; the server's `PONG` to that `PING` means it
//! read all of them, and the connection is [`Connected`]. Only then are the
//! publishes held while there was no connection written, in the order they
//! were made. Afterwards the server sends `MSG <subject> <sid> [reply]
//! <bytes>\r\n<payload>\r\n` for the subscriptions, `PING` (answered
//! `PONG`), `+OK`, `-ERR '<text>'` and new `INFO` lines (the limits they
//! name apply from then on).
//!
//! The machine holds the connection to the server's limits: a control line
//! longer than `max_control_line` (4096 bytes until an `INFO` says
//! otherwise; an `INFO` line itself may run to [`MAX_INFO_LINE`]) or a
//! `MSG` payload over `max_payload` is a protocol error, and so is any line
//! it cannot read: the connection ends ([`Disconnected`]). The client's own
//! lines are held to the same limits before they are queued
//! ([`PublishError`]).
//!
//! Every [`Options::ping_interval`] the client sends a `PING`; a connection
//! with two of them unanswered when the next is due is stale, and ends. An
//! `-ERR` is surfaced ([`ServerError`]); all but the few the protocol names
//! as recoverable (an invalid subject, a permissions violation) are fatal,
//! and end the connection, as the server closes it after them.
//!
//! A connection that ended is not the end of the machine: the driver closes
//! its socket, waits (a [`Backoff`]), connects again and calls
//! [`NatsClient::reconnect`]. Subscriptions persist across connections and
//! are sent again; publishes made while there is no connection are held,
//! up to [`Options::max_buffered`] bytes, and written once the next
//! connection is [`Connected`]; beyond the bound a publish is refused and
//! counted ([`NatsClient::take_dropped`]). Publishes queued on a connection
//! that ends before the socket took them whole are held again, so only
//! those the socket took and the server did not act on are lost.
//!
//! [`Connected`]: NatsEvent::Connected
//! [`Disconnected`]: NatsEvent::Disconnected
//! [`ServerError`]: NatsEvent::ServerError

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use crate::wire::machine::Machine;
use crate::{Timestamp, MILLISECOND, SECOND};

/// The longest control line a server is held to until its `INFO` says
/// otherwise: nats-server's default `max_control_line`.
pub const DEFAULT_MAX_CONTROL_LINE: usize = 4096;

/// The longest `INFO` line read: a server's `INFO` carries the addresses of
/// its cluster and may run past its own `max_control_line`, which bounds
/// the lines clients send.
pub const MAX_INFO_LINE: usize = 65_536;

/// The `max_payload` assumed until a server names its own: nats-server's
/// default, 1 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;

/// A subscription's id on the wire (`SUB <subject> <sid>`), unique for the
/// life of the machine.
pub type Sid = u64;

/// How a client connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// CONNECT's `name`: how the server's monitoring names this client.
    pub name: String,
    /// CONNECT's `echo`: whether the server delivers this client's own
    /// publishes to its matching subscriptions.
    pub echo: bool,
    /// The most bytes of publishes (their `PUB` lines and payloads) held
    /// and not yet taken by a socket: while there is no connection, and on
    /// a connection whose socket does not keep up. Beyond it a publish is
    /// refused ([`PublishError::BufferFull`]).
    pub max_buffered: usize,
    /// A `PING` this often; a connection with two unanswered when the next
    /// is due is stale, and ends. A connection whose server has not sent
    /// its `INFO` within two intervals ends too. At least a millisecond.
    pub ping_interval: Timestamp,
}

impl Default for Options {
    /// Named `limen`, echo on, 8 MiB held, a `PING` every 2 seconds.
    fn default() -> Options {
        Options {
            name: "limen".into(),
            echo: true,
            max_buffered: 8 << 20,
            ping_interval: 2 * SECOND,
        }
    }
}

/// What the connection tells its driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NatsEvent {
    /// The server's INFO was read and our CONNECT (+ every subscription,
    /// re-sent) is queued, then a PONG to our first PING came back: the
    /// connection is usable. `max_payload` from INFO.
    Connected {
        /// The server's `server_id`, as its INFO names it (empty if it
        /// names none).
        server_id: String,
        /// The largest payload the server takes, as its INFO names it.
        max_payload: usize,
    },
    /// A MSG for one of our subscriptions.
    Message {
        /// The subject it was published on.
        subject: String,
        /// The subscription it matched.
        sid: Sid,
        /// The subject to reply on, if the publisher named one.
        reply: Option<String>,
        /// The payload, as published.
        payload: Vec<u8>,
    },
    /// -ERR from the server (its text, without its quotes). Some are fatal
    /// (the server then closes): a [`Disconnected`](NatsEvent::Disconnected)
    /// follows those.
    ServerError(String),
    /// The connection is over (EOF, a protocol error of the server's, stale
    /// pings, a fatal -ERR): the driver closes the socket and, when it
    /// reconnects, calls [`NatsClient::reconnect`] on the same machine.
    Disconnected {
        /// Why, in words.
        reason: String,
    },
}

/// Why a publish (or a subscription) is refused. Nothing is queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublishError {
    /// The payload is larger than the server's `max_payload` (known once
    /// a server has sent its INFO).
    TooLarge {
        /// The payload's size.
        size: usize,
        /// The server's limit.
        max_payload: usize,
    },
    /// [`Options::max_buffered`] bytes of publishes are already held: the
    /// publish is dropped and counted ([`NatsClient::take_dropped`]).
    BufferFull {
        /// The bytes held.
        buffered: usize,
    },
    /// The subject is not one NATS takes: empty, an empty token (`a..b`),
    /// a space or a control character, a wildcard where one cannot be (in
    /// a publish, or `>` before the last token), or a line over the
    /// server's `max_control_line`.
    BadSubject,
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::TooLarge { size, max_payload } => write!(
                f,
                "the payload is {size} bytes, over the server's max_payload of {max_payload}"
            ),
            PublishError::BufferFull { buffered } => write!(
                f,
                "{buffered} bytes of publishes are already held, the most allowed"
            ),
            PublishError::BadSubject => write!(f, "not a subject NATS takes"),
        }
    }
}

impl std::error::Error for PublishError {}

/// A bounded exponential backoff for reconnects (pure): 100 ms doubling to
/// 5 s, reset on Connected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    next: Timestamp,
}

impl Backoff {
    /// The first delay.
    pub const FIRST: Timestamp = 100 * MILLISECOND;
    /// The longest delay.
    pub const MAX: Timestamp = 5 * SECOND;

    /// A backoff whose next delay is [`Backoff::FIRST`].
    pub fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// How long to wait before the next attempt: 100 ms, 200 ms, 400 ms, …
    /// up to 5 s, and 5 s from then on.
    pub fn next_delay(&mut self) -> Timestamp {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    /// Starts over from [`Backoff::FIRST`] (on Connected).
    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    /// [`Backoff::new`].
    fn default() -> Backoff {
        Backoff::new()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Connected (or reconnected) at the socket; the server's INFO not yet
    /// read.
    AwaitInfo,
    /// CONNECT, the subscriptions and a PING are queued; waiting for the
    /// PONG.
    Handshake,
    /// The PONG came: publishes go straight out.
    Connected,
    /// The connection ended; [`NatsClient::reconnect`] starts the next.
    Closed,
}

/// A publish held while there is no connection: its `PUB` line and
/// payload, and the payload's size (held to the next server's limit).
#[derive(Clone, Debug)]
struct Held {
    frame: Vec<u8>,
    payload: usize,
}

/// A publish queued in the output, by where it ends in the output stream
/// (counted from the connection's first byte), so one the socket has not
/// taken whole when the connection ends can be held again.
#[derive(Clone, Copy, Debug)]
struct Queued {
    end: u64,
    len: usize,
    payload: usize,
}

/// The header of a `MSG` whose payload is still to come.
#[derive(Clone, Debug)]
struct PendingMsg {
    subject: String,
    sid: Sid,
    reply: Option<String>,
    len: usize,
}

/// A NATS client connection. See the module documentation.
#[derive(Debug)]
pub struct NatsClient {
    options: Options,
    state: State,
    // Reading.
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a line end.
    scanned: usize,
    pending: Option<PendingMsg>,
    /// Bytes moved to the front of `buf` so far, so a test can hold the
    /// work of reading to a multiple of what was read.
    #[cfg(test)]
    moved: usize,
    // The server's word.
    server_id: String,
    /// The last `max_payload` a server named (kept across connections, so
    /// a publish too large for the server is refused while disconnected
    /// too).
    max_payload: Option<usize>,
    max_control_line: usize,
    // Writing.
    out: Vec<u8>,
    out_pos: usize,
    /// The output stream's offset of `out[0]`.
    out_base: u64,
    /// The publishes in `out` the socket has not taken whole, in order.
    queued: VecDeque<Queued>,
    queued_bytes: usize,
    /// Publishes held for the next connection, in order.
    held: VecDeque<Held>,
    held_bytes: usize,
    // The client's word.
    subs: BTreeMap<Sid, String>,
    next_sid: Sid,
    dropped: u64,
    // Time.
    /// PINGs of ours not yet answered.
    pings_out: u32,
    /// When the timer acts: the next PING (or staleness), or the end of
    /// the wait for INFO.
    deadline: Option<Timestamp>,
    events: VecDeque<NatsEvent>,
}

impl NatsClient {
    /// A machine whose socket connected at `now`: waiting for the server's
    /// INFO.
    pub fn new(now: Timestamp, options: Options) -> NatsClient {
        let mut c = NatsClient {
            options,
            state: State::Closed,
            buf: Vec::new(),
            scanned: 0,
            pending: None,
            #[cfg(test)]
            moved: 0,
            server_id: String::new(),
            max_payload: None,
            max_control_line: DEFAULT_MAX_CONTROL_LINE,
            out: Vec::new(),
            out_pos: 0,
            out_base: 0,
            queued: VecDeque::new(),
            queued_bytes: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            subs: BTreeMap::new(),
            next_sid: 1,
            dropped: 0,
            pings_out: 0,
            deadline: None,
            events: VecDeque::new(),
        };
        c.reconnect(now);
        c
    }

    /// Subscribes (now if connected, else at (re)connection —
    /// subscriptions persist across reconnects). `BadSubject` on a subject
    /// with spaces, an empty one, or one too long for a control line.
    pub fn subscribe(&mut self, subject: &str) -> Result<Sid, PublishError> {
        let sid = self.next_sid;
        if !valid_subject(subject, true) || self.line_too_long(subject.len(), sid) {
            return Err(PublishError::BadSubject);
        }
        self.next_sid += 1;
        self.subs.insert(sid, subject.to_owned());
        if self.is_live() {
            write_sub(&mut self.out, subject, sid);
        }
        Ok(sid)
    }

    /// Ends a subscription: an `UNSUB` now if connected, and it is not
    /// sent again on a reconnection. A `MSG` for it the server sent before
    /// it read the `UNSUB` is passed over. An unknown sid is no-op.
    pub fn unsubscribe(&mut self, sid: Sid) {
        if self.subs.remove(&sid).is_some() && self.is_live() {
            self.out.extend_from_slice(b"UNSUB ");
            push_decimal(&mut self.out, sid);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// The subscriptions held, by sid.
    pub fn subscriptions(&self) -> impl Iterator<Item = (Sid, &str)> {
        self.subs.iter().map(|(&sid, s)| (sid, s.as_str()))
    }

    /// Queues a PUB (buffered while disconnected up to max_buffered, then
    /// BufferFull; TooLarge past max_payload once known).
    pub fn publish(&mut self, subject: &str, payload: &[u8]) -> Result<(), PublishError> {
        if !valid_subject(subject, false) || self.line_too_long(subject.len(), payload.len() as u64)
        {
            return Err(PublishError::BadSubject);
        }
        if let Some(max_payload) = self.max_payload {
            if payload.len() > max_payload {
                return Err(PublishError::TooLarge {
                    size: payload.len(),
                    max_payload,
                });
            }
        }
        let buffered = self.buffered();
        let len = pub_len(subject, payload);
        if buffered + len > self.options.max_buffered {
            self.dropped += 1;
            return Err(PublishError::BufferFull { buffered });
        }
        if self.state == State::Connected {
            write_pub(&mut self.out, subject, payload);
            self.queued.push_back(Queued {
                end: self.out_base + self.out.len() as u64,
                len,
                payload: payload.len(),
            });
            self.queued_bytes += len;
        } else {
            let mut frame = Vec::with_capacity(len);
            write_pub(&mut frame, subject, payload);
            self.held.push_back(Held {
                frame,
                payload: payload.len(),
            });
            self.held_bytes += len;
        }
        Ok(())
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<NatsEvent> {
        self.events.pop_front()
    }

    /// Whether the connection is usable: its handshake's PONG came back
    /// and it has not ended since.
    pub fn is_connected(&self) -> bool {
        self.state == State::Connected
    }

    /// A fresh connection on the same machine: forget the old socket's
    /// bytes, wait for INFO again; subscriptions and buffered publishes are
    /// kept and re-sent after CONNECT. Called on a connection that has not
    /// ended, it ends it first (without a `Disconnected`: the driver
    /// knows).
    pub fn reconnect(&mut self, now: Timestamp) {
        self.end_connection();
        self.state = State::AwaitInfo;
        self.deadline = Some(now.saturating_add(2 * self.interval()));
    }

    /// Publishes refused (BufferFull) and dropped since the last call
    /// (counted, for the outage's loss statement).
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// The bytes of publishes held or queued and not yet taken by a
    /// socket: what [`Options::max_buffered`] bounds.
    pub fn buffered(&self) -> usize {
        self.held_bytes + self.queued_bytes
    }

    /// The largest payload the server takes, once a server has named it.
    pub fn max_payload(&self) -> Option<usize> {
        self.max_payload
    }

    /// The longest control line the server takes and is held to: 4096
    /// until an INFO names its own.
    pub fn max_control_line(&self) -> usize {
        self.max_control_line
    }

    /// The bytes of the server's input held (a line or a `MSG` not yet
    /// whole): at most the longest line allowed (`max_control_line`, or
    /// [`MAX_INFO_LINE`] for an INFO) and its line end, or a `MSG`'s
    /// payload and its `\r\n`.
    pub fn read_buffered(&self) -> usize {
        self.buf.len()
    }

    fn interval(&self) -> Timestamp {
        self.options.ping_interval.max(MILLISECOND)
    }

    /// Whether a line sent now reaches a server (it is read after our
    /// CONNECT).
    fn is_live(&self) -> bool {
        matches!(self.state, State::Handshake | State::Connected)
    }

    /// Whether `SUB <subject> <n>` / `PUB <subject> <n>` is over the
    /// server's `max_control_line`.
    fn line_too_long(&self, subject: usize, n: u64) -> bool {
        4 + subject + 1 + decimal_len(n) > self.max_control_line
    }

    /// Forgets the socket's bytes: the publishes it did not take whole are
    /// held again, ahead of any held since.
    fn end_connection(&mut self) {
        let mut unsent = Vec::new();
        for q in self.queued.drain(..) {
            let start = (q.end - q.len as u64 - self.out_base) as usize;
            unsent.push(Held {
                frame: self.out[start..start + q.len].to_vec(),
                payload: q.payload,
            });
        }
        self.held_bytes += self.queued_bytes;
        self.queued_bytes = 0;
        for h in unsent.into_iter().rev() {
            self.held.push_front(h);
        }
        self.out = Vec::new();
        self.out_pos = 0;
        self.out_base = 0;
        self.buf = Vec::new();
        self.scanned = 0;
        self.pending = None;
        self.pings_out = 0;
        self.deadline = None;
        self.state = State::Closed;
    }

    fn disconnect(&mut self, reason: impl Into<String>) {
        if self.state == State::Closed {
            return;
        }
        self.end_connection();
        self.events.push_back(NatsEvent::Disconnected {
            reason: reason.into(),
        });
    }

    /// The longest line allowed, for a line that starts with `head`.
    fn line_limit(&self, head: &[u8]) -> usize {
        if head.len() >= 4 && head[..4].eq_ignore_ascii_case(b"INFO") {
            self.max_control_line.max(MAX_INFO_LINE)
        } else {
            self.max_control_line
        }
    }

    /// Reads what `buf` holds whole; returns where the unread bytes start.
    fn read(&mut self, buf: &[u8], now: Timestamp) -> usize {
        let mut start = 0;
        while self.state != State::Closed {
            if let Some(msg) = &self.pending {
                // `len` is at most max_payload, itself a usize the server
                // named: the sum cannot pass the input's own length.
                let need = msg.len.saturating_add(2);
                if buf.len() - start < need {
                    break;
                }
                let payload = &buf[start..start + msg.len];
                if &buf[start + msg.len..start + need] != b"\r\n" {
                    self.disconnect("a MSG payload is not followed by CRLF");
                    break;
                }
                let msg = self.pending.take().expect("checked above");
                start += need;
                // A MSG for a subscription already ended was in flight
                // before the server read the UNSUB.
                if self.subs.contains_key(&msg.sid) {
                    self.events.push_back(NatsEvent::Message {
                        subject: msg.subject,
                        sid: msg.sid,
                        reply: msg.reply,
                        payload: payload.to_vec(),
                    });
                }
                continue;
            }
            let from = self.scanned.max(start);
            let Some(nl) = memchr::memchr(b'\n', &buf[from..]) else {
                self.scanned = buf.len();
                // A line's CR may come in one read and its LF in the next:
                // a trailing CR is not yet counted.
                let unfinished = buf.len() - start - usize::from(buf.last() == Some(&b'\r'));
                let limit = self.line_limit(&buf[start..]);
                if unfinished > limit {
                    self.disconnect(format!("a line of the server's is over {limit} bytes"));
                }
                break;
            };
            let end = from + nl;
            let mut line = &buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let limit = self.line_limit(line);
            if line.len() > limit {
                self.disconnect(format!("a line of the server's is over {limit} bytes"));
                break;
            }
            start = end + 1;
            self.scanned = start;
            if let Err(reason) = self.line(line, now) {
                self.disconnect(reason);
            }
        }
        start
    }

    /// Acts on one control line (without its line end).
    fn line(&mut self, line: &[u8], now: Timestamp) -> Result<(), String> {
        let mut fields = line
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|f| !f.is_empty());
        let Some(op) = fields.next() else {
            return Ok(());
        };
        let op = op.to_ascii_uppercase();
        match (op.as_slice(), self.state) {
            (b"INFO", _) => {
                let at = line
                    .windows(4)
                    .position(|w| w.eq_ignore_ascii_case(b"INFO"))
                    .expect("the op was read from the line")
                    + 4;
                self.info(&line[at..], now)
            }
            (b"-ERR", _) => {
                let at = line
                    .windows(4)
                    .position(|w| w.eq_ignore_ascii_case(b"-ERR"))
                    .expect("the op was read from the line")
                    + 4;
                let text = String::from_utf8_lossy(&line[at..]);
                let text = text.trim_matches([' ', '\t']);
                let text = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text)
                    .to_owned();
                let fatal = !recoverable(&text);
                self.events.push_back(NatsEvent::ServerError(text.clone()));
                if fatal {
                    self.disconnect(format!("the server's error: {text}"));
                }
                Ok(())
            }
            (_, State::AwaitInfo) => Err(format!(
                "the server sent {} before its INFO",
                String::from_utf8_lossy(&op)
            )),
            (b"PING", _) => {
                self.out.extend_from_slice(b"PONG\r\n");
                Ok(())
            }
            (b"PONG", _) => {
                self.pings_out = self.pings_out.saturating_sub(1);
                if self.state == State::Handshake {
                    self.connected();
                }
                Ok(())
            }
            (b"+OK", _) => Ok(()),
            (b"MSG", _) => {
                let args: Vec<&[u8]> = fields.collect();
                let (subject, sid, reply, size) = match args[..] {
                    [subject, sid, size] => (subject, sid, None, size),
                    [subject, sid, reply, size] => (subject, sid, Some(reply), size),
                    _ => return Err("a MSG line with neither 3 nor 4 arguments".into()),
                };
                // Fields split at spaces and tabs only: a subject may still
                // carry a CR or another control character, which no
                // subject has.
                let text = |b: &[u8]| {
                    std::str::from_utf8(b)
                        .ok()
                        .filter(|s| !s.bytes().any(|b| b <= b' ' || b == 0x7f))
                        .map(str::to_owned)
                        .ok_or_else(|| {
                            format!(
                                "a MSG subject that is not one: {:?}",
                                String::from_utf8_lossy(b)
                            )
                        })
                };
                let sid = number(sid).ok_or("a MSG sid that is not a number")?;
                let len = number(size).ok_or("a MSG size that is not a number")?;
                let max_payload = self.max_payload.unwrap_or(DEFAULT_MAX_PAYLOAD);
                if len > max_payload as u64 {
                    return Err(format!(
                        "a MSG of {len} bytes, over the max_payload of {max_payload}"
                    ));
                }
                self.pending = Some(PendingMsg {
                    subject: text(subject)?,
                    sid,
                    reply: reply.map(text).transpose()?,
                    len: len as usize,
                });
                Ok(())
            }
            _ => Err(format!(
                "an unknown operation {:?}",
                String::from_utf8_lossy(&op)
            )),
        }
    }

    /// An INFO line's JSON: the first of a connection starts the
    /// handshake, a later one updates the limits.
    fn info(&mut self, json: &[u8], now: Timestamp) -> Result<(), String> {
        let info: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| format!("an INFO that is not JSON: {e}"))?;
        let info = info.as_object().ok_or("an INFO that is not an object")?;
        let size = |key: &str| -> Result<Option<usize>, String> {
            match info.get(key) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .map(Some)
                    .ok_or(format!("an INFO whose {key} is not a positive number")),
            }
        };
        let max_payload = size("max_payload")?;
        let max_control_line = size("max_control_line")?;
        if let Some(id) = info.get("server_id").and_then(|v| v.as_str()) {
            id.clone_into(&mut self.server_id);
        }
        if let Some(n) = max_payload {
            self.max_payload = Some(n);
        } else if self.max_payload.is_none() {
            self.max_payload = Some(DEFAULT_MAX_PAYLOAD);
        }
        if let Some(n) = max_control_line {
            self.max_control_line = n;
        }
        if self.state == State::AwaitInfo {
            self.handshake(now);
        }
        Ok(())
    }

    /// CONNECT, every subscription, and the PING whose PONG says the
    /// server read them.
    fn handshake(&mut self, now: Timestamp) {
        let connect = serde_json::json!({
            "verbose": false,
            "pedantic": false,
            "tls_required": false,
            "echo": self.options.echo,
            "name": self.options.name,
            "lang": "rust",
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": 1,
        });
        self.out.extend_from_slice(b"CONNECT ");
        self.out.extend_from_slice(connect.to_string().as_bytes());
        self.out.extend_from_slice(b"\r\n");
        for (&sid, subject) in &self.subs {
            write_sub(&mut self.out, subject, sid);
        }
        self.out.extend_from_slice(b"PING\r\n");
        self.pings_out = 1;
        self.state = State::Handshake;
        self.deadline = Some(now.saturating_add(self.interval()));
    }

    /// The handshake's PONG came: the held publishes go out, after the
    /// subscriptions, in the order they were made; one over this server's
    /// limit is dropped and counted.
    fn connected(&mut self) {
        self.state = State::Connected;
        let max_payload = self.max_payload.unwrap_or(DEFAULT_MAX_PAYLOAD);
        self.held_bytes = 0;
        for h in std::mem::take(&mut self.held) {
            if h.payload > max_payload {
                self.dropped += 1;
                continue;
            }
            self.out.extend_from_slice(&h.frame);
            self.queued.push_back(Queued {
                end: self.out_base + self.out.len() as u64,
                len: h.frame.len(),
                payload: h.payload,
            });
            self.queued_bytes += h.frame.len();
        }
        self.events.push_back(NatsEvent::Connected {
            server_id: self.server_id.clone(),
            max_payload,
        });
    }
}

impl Machine for NatsClient {
    /// Whether the machine reads: while a connection is open.
    fn wants_read(&self) -> bool {
        self.state != State::Closed
    }

    /// The server's bytes, read at `now`.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(data);
        let start = self.read(&buf, now);
        if self.state == State::Closed {
            return;
        }
        // The read bytes are dropped once, at the end: what is left came in
        // this call (a line or a MSG ends in the call that completes it), so
        // the bytes moved are at most the ones read.
        if start > 0 {
            #[cfg(test)]
            {
                self.moved += buf.len() - start;
            }
            buf.drain(..start);
        }
        self.scanned -= start.min(self.scanned);
        self.buf = buf;
    }

    /// The server closed its end (or a read failed): the connection is
    /// over.
    fn handle_eof(&mut self, _now: Timestamp) {
        self.disconnect("the server closed the connection");
    }

    /// Time passes: the wait for INFO ends, or the next PING is due (and
    /// with two unanswered, the connection is stale).
    fn handle_timeout(&mut self, now: Timestamp) {
        let Some(deadline) = self.deadline else {
            return;
        };
        if now < deadline {
            return;
        }
        match self.state {
            State::AwaitInfo => self.disconnect("the server sent no INFO"),
            State::Handshake | State::Connected => {
                if self.pings_out >= 2 {
                    self.disconnect("stale: two PINGs unanswered");
                } else {
                    self.out.extend_from_slice(b"PING\r\n");
                    self.pings_out += 1;
                    self.deadline = Some(now.saturating_add(self.interval()));
                }
            }
            State::Closed => {}
        }
    }

    /// When [`handle_timeout`](NatsClient::handle_timeout) next has work.
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.deadline
    }

    /// The bytes still to write.
    fn pending_output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// `n` bytes of output were written.
    fn consume_output(&mut self, _now: Timestamp, n: usize) {
        let n = n.min(self.out.len() - self.out_pos);
        self.out_pos += n;
        let written = self.out_base + self.out_pos as u64;
        while self.queued.front().is_some_and(|q| q.end <= written) {
            let q = self.queued.pop_front().expect("checked");
            self.queued_bytes -= q.len;
        }
        if self.out_pos == self.out.len() {
            self.out_base += self.out.len() as u64;
            self.out.clear();
            self.out_pos = 0;
        } else if self.out_pos >= 64 * 1024 && self.out_pos * 2 >= self.out.len() {
            // A socket that always takes part of what is queued: the
            // written half goes, so the buffer is bounded by what is
            // unwritten, and each byte moves at most once more.
            self.out.drain(..self.out_pos);
            self.out_base += self.out_pos as u64;
            self.out_pos = 0;
        }
    }

    /// Whether the connection is over (until
    /// [`reconnect`](NatsClient::reconnect)).
    fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
}

/// Whether the server's `-ERR` leaves the connection open: the protocol's
/// recoverable ones (an invalid subject, a permissions violation); the
/// server closes after every other.
fn recoverable(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "invalid subject",
        "invalid publish subject",
        "invalid queue name",
        "permissions violation",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// Whether `subject` is one NATS takes: dot-separated tokens, none empty,
/// no space or control character; a wildcard (`*` any token, `>` the last
/// token) only where `wildcards`.
fn valid_subject(subject: &str, wildcards: bool) -> bool {
    if subject.is_empty() || subject.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return false;
    }
    let tokens: Vec<&str> = subject.split('.').collect();
    tokens.iter().enumerate().all(|(i, t)| match *t {
        "" => false,
        "*" => wildcards,
        ">" => wildcards && i == tokens.len() - 1,
        _ => true,
    })
}

/// A non-empty run of ASCII digits, as a number.
fn number(b: &[u8]) -> Option<u64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn write_sub(out: &mut Vec<u8>, subject: &str, sid: Sid) {
    out.extend_from_slice(b"SUB ");
    out.extend_from_slice(subject.as_bytes());
    out.push(b' ');
    push_decimal(out, sid);
    out.extend_from_slice(b"\r\n");
}

/// The size of `PUB <subject> <n>\r\n<payload>\r\n`.
fn pub_len(subject: &str, payload: &[u8]) -> usize {
    4 + subject.len() + 1 + decimal_len(payload.len() as u64) + 2 + payload.len() + 2
}

fn write_pub(out: &mut Vec<u8>, subject: &str, payload: &[u8]) {
    out.extend_from_slice(b"PUB ");
    out.extend_from_slice(subject.as_bytes());
    out.push(b' ');
    push_decimal(out, payload.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &[u8] =
        b"INFO {\"server_id\":\"S1\",\"version\":\"2.9.15\",\"proto\":1,\"max_payload\":1048576}\r\n";

    fn events(c: &mut NatsClient) -> Vec<NatsEvent> {
        std::iter::from_fn(|| c.poll_event()).collect()
    }

    /// Takes everything queued, as text.
    fn written(c: &mut NatsClient) -> String {
        let out = String::from_utf8(c.pending_output().to_vec()).unwrap();
        c.consume_output(0, out.len());
        out
    }

    /// A machine through its handshake with `INFO`: CONNECT written, PONG
    /// read.
    fn connected(options: Options) -> NatsClient {
        let mut c = NatsClient::new(0, options);
        c.handle_data(0, INFO);
        written(&mut c);
        c.handle_data(0, b"PONG\r\n");
        assert!(c.is_connected());
        events(&mut c);
        c
    }

    #[test]
    fn the_handshake_is_connect_subs_and_a_ping_then_connected_on_its_pong() {
        let mut c = NatsClient::new(0, Options::default());
        let a = c.subscribe("orders.>").unwrap();
        assert_eq!(written(&mut c), "", "nothing is written before INFO");
        c.publish("orders.new", b"{}").unwrap();
        c.handle_data(0, INFO);
        let out = written(&mut c);
        let lines: Vec<&str> = out.split("\r\n").collect();
        assert!(lines[0].starts_with("CONNECT {"), "{out}");
        let connect: serde_json::Value = serde_json::from_str(&lines[0][8..]).unwrap();
        assert_eq!(connect["verbose"], false);
        assert_eq!(connect["pedantic"], false);
        assert_eq!(connect["echo"], true);
        assert_eq!(connect["name"], "limen");
        assert_eq!(connect["lang"], "rust");
        assert_eq!(connect["protocol"], 1);
        assert_eq!(lines[1], format!("SUB orders.> {a}"));
        assert_eq!(lines[2], "PING");
        assert_eq!(lines.len(), 4, "the held PUB waits for the PONG: {out}");
        assert!(!c.is_connected());
        assert_eq!(events(&mut c), []);
        c.handle_data(0, b"PONG\r\n");
        assert_eq!(
            events(&mut c),
            [NatsEvent::Connected {
                server_id: "S1".into(),
                max_payload: 1 << 20
            }]
        );
        assert_eq!(written(&mut c), "PUB orders.new 2\r\n{}\r\n");
        c.publish("orders.old", b"x").unwrap();
        assert_eq!(written(&mut c), "PUB orders.old 1\r\nx\r\n");
        assert_eq!(c.buffered(), 0);
    }

    #[test]
    fn a_name_and_echo_off_are_written_as_json() {
        let mut c = NatsClient::new(
            0,
            Options {
                name: "node \"a\"".into(),
                echo: false,
                ..Options::default()
            },
        );
        c.handle_data(0, INFO);
        let out = written(&mut c);
        let line = out.split("\r\n").next().unwrap();
        let connect: serde_json::Value = serde_json::from_str(&line[8..]).unwrap();
        assert_eq!(connect["echo"], false);
        assert_eq!(connect["name"], "node \"a\"");
    }

    const STREAM: &[u8] = b"INFO {\"server_id\":\"S1\",\"max_payload\":64}\r\nPING\r\n+OK\r\nPONG\r\nMSG a.b 1 5\r\nhello\r\nmsg a.b 1 inbox.9 0\r\n\r\nMSG  a.b\t2  3\r\n\r\n\n\r\nMSG a.b 7 1\r\nx\r\nPONG\r\n-ERR 'Invalid Subject'\r\nMSG a.b 1 2\r\nok\r\n";

    fn expected() -> Vec<NatsEvent> {
        let msg = |sid, reply: Option<&str>, payload: &[u8]| NatsEvent::Message {
            subject: "a.b".into(),
            sid,
            reply: reply.map(Into::into),
            payload: payload.to_vec(),
        };
        vec![
            NatsEvent::Connected {
                server_id: "S1".into(),
                max_payload: 64,
            },
            msg(1, None, b"hello"),
            msg(1, Some("inbox.9"), b""),
            msg(2, None, b"\r\n\n"),
            // sid 7 is no subscription of ours: passed over.
            NatsEvent::ServerError("Invalid Subject".into()),
            msg(1, None, b"ok"),
        ]
    }

    fn run(feed: &[&[u8]]) -> (Vec<NatsEvent>, Vec<u8>, bool) {
        let mut c = NatsClient::new(0, Options::default());
        c.subscribe("a.b").unwrap();
        c.subscribe("a.*").unwrap();
        let mut evs = Vec::new();
        let mut out = Vec::new();
        for piece in feed {
            c.handle_data(0, piece);
            evs.extend(std::iter::from_fn(|| c.poll_event()));
            out.extend_from_slice(c.pending_output());
            let n = c.pending_output().len();
            c.consume_output(0, n);
        }
        (evs, out, c.is_closed())
    }

    #[test]
    fn every_split_of_a_msg_stream_reads_the_same() {
        let whole = run(&[STREAM]);
        assert_eq!(whole.0, expected());
        assert!(!whole.2);
        assert!(String::from_utf8_lossy(&whole.1).contains("PONG\r\n"));
        for i in 0..=STREAM.len() {
            for j in i..=STREAM.len() {
                let got = run(&[&STREAM[..i], &STREAM[i..j], &STREAM[j..]]);
                assert_eq!(got, whole, "split at {i} and {j}");
            }
        }
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(run(&bytes), whole);
    }

    #[test]
    fn a_msg_trickled_a_byte_at_a_time_reads_in_linear_time() {
        let mut c = connected(Options::default());
        c.subscribe("big").unwrap();
        let mut raw = b"MSG big 1 500000\r\n".to_vec();
        raw.extend(vec![b'z'; 500_000]);
        raw.extend_from_slice(b"\r\nMSG big 1 1\r\n!\r\n");
        for b in &raw {
            c.handle_data(0, std::slice::from_ref(b));
        }
        let evs = events(&mut c);
        assert_eq!(evs.len(), 2);
        assert!(c.moved <= 2 * raw.len(), "{} bytes moved", c.moved);
        assert_eq!(c.read_buffered(), 0);
    }

    #[test]
    fn the_limits_end_the_connection() {
        // A control line over 4096 bytes (before INFO names any other).
        let mut c = NatsClient::new(0, Options::default());
        c.handle_data(0, INFO);
        c.handle_data(0, b"PONG\r\n");
        events(&mut c);
        let mut long = b"MSG ".to_vec();
        long.extend(vec![b'a'; 4092]);
        c.handle_data(0, &long);
        assert!(!c.is_closed(), "4096 bytes is within the limit");
        c.handle_data(0, b"\r");
        assert!(!c.is_closed(), "a trailing CR is not yet counted");
        c.handle_data(0, b"b");
        assert!(c.is_closed());
        assert!(matches!(
            &events(&mut c)[..],
            [NatsEvent::Disconnected { reason }] if reason.contains("over 4096 bytes")
        ));
        assert_eq!(c.read_buffered(), 0);

        // INFO lowers max_control_line mid-connection, and max_payload.
        let mut c = connected(Options::default());
        c.handle_data(0, b"INFO {\"max_control_line\":16,\"max_payload\":4}\r\n");
        assert_eq!(c.max_payload(), Some(4));
        assert_eq!(
            c.publish("a", b"12345"),
            Err(PublishError::TooLarge {
                size: 5,
                max_payload: 4
            })
        );
        assert_eq!(
            c.publish("a.very.long.subject", b"1"),
            Err(PublishError::BadSubject)
        );
        c.handle_data(0, b"MSG a 1 5\r\n");
        assert!(matches!(
            &events(&mut c)[..],
            [NatsEvent::Disconnected { reason }] if reason.contains("over the max_payload of 4")
        ));

        // A payload not followed by CRLF, an unknown op, a MSG before INFO.
        for bad in [
            &b"MSG a 1 1\r\nxy\r\n"[..],
            b"HMSG a 1 0 0\r\n\r\n",
            b"MSG a 1\r\n",
            b"MSG a 1 -1\r\n",
            b"INFO [1]\r\n",
        ] {
            let mut c = connected(Options::default());
            c.subscribe("a").unwrap();
            c.handle_data(0, bad);
            assert!(c.is_closed(), "{}", String::from_utf8_lossy(bad));
        }
        let mut c = NatsClient::new(0, Options::default());
        c.handle_data(0, b"PONG\r\n");
        assert!(c.is_closed());
    }

    #[test]
    fn a_msg_subject_with_a_control_character_ends_the_connection() {
        // fuzz/seeds/nats_client/msg-subject-with-a-cr: `c.\r.e` was
        // passed on as a subject.
        for bad in [
            &b"MSG c.\r.e 1 2\r\n{}\r\n"[..],
            b"MSG a 1 in\x01box 0\r\n\r\n",
        ] {
            let mut c = connected(Options::default());
            c.subscribe("c.>").unwrap();
            c.subscribe("a").unwrap();
            c.handle_data(0, bad);
            assert!(
                matches!(
                    &events(&mut c)[..],
                    [NatsEvent::Disconnected { reason }] if reason.starts_with("a MSG subject that is not one")
                ),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_fatal_err_ends_the_connection_a_recoverable_one_does_not() {
        let mut c = connected(Options::default());
        c.handle_data(0, b"-ERR 'Permissions Violation for Publish to \"x\"'\r\n");
        assert_eq!(
            events(&mut c),
            [NatsEvent::ServerError(
                "Permissions Violation for Publish to \"x\"".into()
            )]
        );
        assert!(c.is_connected());
        c.handle_data(0, b"-ERR 'Stale Connection'\r\nMSG a 1 0\r\n\r\n");
        assert_eq!(
            events(&mut c),
            [
                NatsEvent::ServerError("Stale Connection".into()),
                NatsEvent::Disconnected {
                    reason: "the server's error: Stale Connection".into()
                }
            ]
        );
        assert!(c.is_closed());
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn pings_every_interval_and_stale_after_two_unanswered() {
        let s = SECOND;
        let mut c = NatsClient::new(0, Options::default());
        assert_eq!(c.poll_timeout(), Some(4 * s), "the wait for INFO");
        c.handle_data(s, INFO);
        assert_eq!(written(&mut c).matches("PING").count(), 1);
        assert_eq!(c.poll_timeout(), Some(3 * s));
        c.handle_data(s, b"PONG\r\n");
        c.handle_timeout(3 * s - 1);
        assert_eq!(written(&mut c), "", "not before its deadline");
        c.handle_timeout(3 * s);
        assert_eq!(written(&mut c), "PING\r\n");
        c.handle_data(3 * s, b"PONG\r\n");
        assert_eq!(c.poll_timeout(), Some(5 * s));
        c.handle_timeout(5 * s);
        assert_eq!(written(&mut c), "PING\r\n");
        c.handle_timeout(7 * s);
        assert_eq!(written(&mut c), "PING\r\n", "one unanswered: another");
        assert!(c.is_connected());
        c.handle_timeout(9 * s);
        assert!(c.is_closed());
        assert_eq!(
            events(&mut c).last(),
            Some(&NatsEvent::Disconnected {
                reason: "stale: two PINGs unanswered".into()
            })
        );

        // The server's PING is answered.
        let mut c = connected(Options::default());
        c.handle_data(0, b"PING\r\n");
        assert_eq!(written(&mut c), "PONG\r\n");

        // No INFO within two intervals.
        let mut c = NatsClient::new(0, Options::default());
        c.handle_timeout(4 * s);
        assert!(c.is_closed());
    }

    #[test]
    fn the_reconnect_path_resends_subs_then_the_held_publishes() {
        let mut c = connected(Options {
            max_buffered: 120,
            ..Options::default()
        });
        let a = c.subscribe("a").unwrap();
        let b = c.subscribe("b.*").unwrap();
        assert_eq!(written(&mut c), format!("SUB a {a}\r\nSUB b.* {b}\r\n"));
        c.unsubscribe(a);
        assert_eq!(written(&mut c), format!("UNSUB {a}\r\n"));
        let d = c.subscribe("d").unwrap();
        written(&mut c);

        // One publish the socket took half of, one not at all: both held
        // again when the connection ends.
        c.publish("p", b"1").unwrap();
        c.publish("p", b"2").unwrap();
        c.consume_output(0, 5);
        c.handle_eof(0);
        assert_eq!(
            events(&mut c),
            [NatsEvent::Disconnected {
                reason: "the server closed the connection".into()
            }]
        );
        assert!(c.is_closed() && !c.wants_read());
        assert_eq!(c.pending_output(), b"");
        assert_eq!(c.poll_timeout(), None);
        // 12 bytes a PUB here: 24 held, room for 8 more.
        assert_eq!(c.buffered(), 24);
        for i in 3..=10 {
            c.publish("p", (i % 10).to_string().as_bytes()).unwrap();
        }
        assert_eq!(
            c.publish("p", b"x"),
            Err(PublishError::BufferFull { buffered: 120 })
        );
        assert_eq!(
            c.publish("p", b""),
            Err(PublishError::BufferFull { buffered: 120 })
        );
        assert_eq!(c.take_dropped(), 2);
        assert_eq!(c.take_dropped(), 0);

        let mut backoff = Backoff::new();
        let delay = backoff.next_delay();
        c.reconnect(delay);
        assert!(!c.is_closed());
        c.handle_data(
            delay,
            b"INFO {\"server_id\":\"S2\",\"max_payload\":1048576}\r\n",
        );
        let out = written(&mut c);
        assert!(out.starts_with("CONNECT {"));
        let after: &str = out.split_once("\r\n").unwrap().1;
        assert_eq!(after, format!("SUB b.* {b}\r\nSUB d {d}\r\nPING\r\n"));
        c.handle_data(delay, b"PONG\r\n");
        assert_eq!(
            events(&mut c),
            [NatsEvent::Connected {
                server_id: "S2".into(),
                max_payload: 1 << 20
            }]
        );
        backoff.reset();
        let pubs: String = (1..=10)
            .map(|i| format!("PUB p 1\r\n{}\r\n", i % 10))
            .collect();
        assert_eq!(written(&mut c), pubs);
        assert_eq!(c.buffered(), 0);
    }

    #[test]
    fn a_smaller_max_payload_on_reconnection_drops_the_held_publishes_over_it() {
        let mut c = connected(Options::default());
        c.handle_eof(0);
        c.publish("p", b"12345").unwrap();
        c.publish("p", b"1").unwrap();
        c.reconnect(0);
        c.handle_data(0, b"INFO {\"max_payload\":4}\r\nPONG\r\n");
        assert!(c.is_connected());
        assert!(written(&mut c).ends_with("PING\r\nPUB p 1\r\n1\r\n"));
        assert_eq!(c.take_dropped(), 1);
    }

    #[test]
    fn subjects_are_checked() {
        let mut c = NatsClient::new(0, Options::default());
        for bad in ["", "a b", "a..b", ".a", "a.", "a\tb", "a.>.b", "a\r\n"] {
            assert_eq!(c.subscribe(bad), Err(PublishError::BadSubject), "{bad:?}");
            assert_eq!(
                c.publish(bad, b""),
                Err(PublishError::BadSubject),
                "{bad:?}"
            );
        }
        assert!(c.subscribe("a.*.c").is_ok());
        assert!(c.subscribe("a.>").is_ok());
        assert_eq!(c.publish("a.*", b""), Err(PublishError::BadSubject));
        assert_eq!(c.publish("a.>", b""), Err(PublishError::BadSubject));
        assert!(c.publish("hale.26970854397ab154.desk.fills", b"{}").is_ok());
        assert_eq!(
            c.subscribe(&"x".repeat(5000)),
            Err(PublishError::BadSubject)
        );
    }

    #[test]
    fn the_backoff_doubles_to_five_seconds_and_resets() {
        let mut b = Backoff::new();
        let delays: Vec<u64> = (0..8).map(|_| b.next_delay() / MILLISECOND).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next_delay(), 100 * MILLISECOND);
    }

    #[test]
    fn an_info_line_may_be_longer_than_a_control_line() {
        let mut c = NatsClient::new(0, Options::default());
        let urls: Vec<String> = (0..400).map(|i| format!("\"10.0.0.{i}:4222\"")).collect();
        let info = format!(
            "INFO {{\"server_id\":\"S\",\"connect_urls\":[{}]}}\r\n",
            urls.join(",")
        );
        assert!(info.len() > 4096);
        for b in info.as_bytes().chunks(7) {
            c.handle_data(0, b);
        }
        assert!(!c.is_closed());
        assert!(written(&mut c).starts_with("CONNECT"));
    }
}
