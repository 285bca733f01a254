//! WebSocket (RFC 6455), the server's side, as the hubs speak it (§
//! Streams): the upgrade and its `Sec-WebSocket-Accept`, masked client
//! text frames in, unmasked single-frame text messages out, a ping answered
//! by a pong after the frames queued before it, the close handshake, and
//! every protocol error closed with its code.
//!
//! Our own codec, not tungstenite's: that one needs a stream and draws its
//! own masks, which a replayed recording cannot hold; tungstenite is this
//! codec's differential oracle in its tests and fuzz target instead.
//!
//! # The order of calls
//!
//! 1. Answer the HTTP request with [`upgrade`] (its response bytes, or the
//!    refusal's status and reason); after a 101, make a [`WsConn`].
//! 2. Feed it what the socket read ([`handle_data`](WsConn::handle_data)),
//!    and [`handle_eof`](WsConn::handle_eof) at the end of input.
//! 3. Take [`poll_event`](WsConn::poll_event) until `None`.
//! 4. Send with [`send_text`](WsConn::send_text), end with
//!    [`close`](WsConn::close).
//! 5. Write [`pending_output`](WsConn::pending_output), report it with
//!    [`consume_output`](WsConn::consume_output); close the socket once
//!    [`is_closed`](WsConn::is_closed) and the output is written.
//!
//! [`Hub`] (§ Streams) drives one `WsConn` per upgraded connection and
//! speaks the hub's JSON frames over it.

pub(crate) mod admission;
pub mod client;
pub mod hub;
pub mod hub_spec;

pub use hub::{ConnId, Hub, HubEvent, Published};
pub use hub_spec::{HubLimits, HubSpec, OnFull, StreamSpec};

use std::collections::VecDeque;

use base64::Engine as _;
use sha1::{Digest, Sha1};

use crate::wire::http1::HttpRequest;
use crate::wire::machine::Machine;
use crate::Timestamp;

/// The GUID RFC 6455 § 1.3 appends to the key.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Close codes (RFC 6455 § 7.4.1).
pub mod close_code {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The endpoint is going away (a server stopping).
    pub const GOING_AWAY: u16 = 1001;
    /// A protocol error.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A kind of data the endpoint does not take (binary, here).
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// No status code was present (never sent; reported for a close
    /// frame without one).
    pub const NO_STATUS: u16 = 1005;
    /// The connection ended without a close frame (never sent).
    pub const ABNORMAL: u16 = 1006;
    /// Text that is not UTF-8.
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// A message that breaks the endpoint's policy (a fragmented one,
    /// here).
    pub const POLICY_VIOLATION: u16 = 1008;
    /// A message too big to process.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
}

/// The codec's limits, and what it takes beyond the hub's single-frame
/// text messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest message taken, all its fragments together (§ Streams:
    /// 64 KiB).
    pub max_message: usize,
    /// Whether a message may come in fragments (RFC 6455 § 5.4). The hub
    /// takes none (§ Streams: "a fragmented message … closes the
    /// connection", 1008); an echo of the whole protocol, as the Autobahn
    /// cases drive it, takes them.
    pub fragments: bool,
    /// Whether binary messages are taken ([`WsEvent::Binary`]). The hub
    /// speaks text and closes 1003 on binary.
    pub binary: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_message: 64 * 1024,
            fragments: false,
            binary: false,
        }
    }
}

/// `Sec-WebSocket-Accept` for the client's `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// An upgrade the server does not make: the HTTP status to answer and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeRefused {
    /// The HTTP status (400, or 426 for another WebSocket version).
    pub status: u16,
    /// What was wrong, naming the header.
    pub reason: String,
}

/// Answers an HTTP request that asks for a WebSocket: the bytes of the
/// `101 Switching Protocols` response, or why it is refused.
pub fn upgrade(request: &HttpRequest) -> Result<Vec<u8>, UpgradeRefused> {
    let refuse = |status, reason: &str| UpgradeRefused {
        status,
        reason: reason.to_owned(),
    };
    if request.method != "GET" {
        return Err(refuse(400, "a WebSocket upgrade is a GET"));
    }
    let has_token = |name: &str, token: &str| {
        request.header(name).is_some_and(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        })
    };
    if !has_token("upgrade", "websocket") {
        return Err(refuse(400, "Upgrade: websocket is missing"));
    }
    if !has_token("connection", "upgrade") {
        return Err(refuse(400, "Connection: Upgrade is missing"));
    }
    if request.header("sec-websocket-version") != Some(b"13") {
        return Err(refuse(426, "Sec-WebSocket-Version must be 13"));
    }
    let key = request
        .header("sec-websocket-key")
        .and_then(|k| std::str::from_utf8(k).ok())
        .map(str::trim)
        .filter(|k| {
            base64::engine::general_purpose::STANDARD
                .decode(k)
                .is_ok_and(|nonce| nonce.len() == 16)
        })
        .ok_or_else(|| refuse(400, "Sec-WebSocket-Key must be the base64 of 16 bytes"))?;
    Ok(format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    )
    .into_bytes())
}

/// What the peer did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WsEvent {
    /// A whole text message.
    Text(String),
    /// A whole binary message (only with [`Limits::binary`]).
    Binary(Vec<u8>),
    /// The connection is over: the peer's close (its code, or 1005 when it
    /// gave none), an error of the peer's (the code this side sent), or
    /// the end of input without a close (1006). Write what is pending, then
    /// close the socket.
    Closed {
        /// The close code.
        code: u16,
        /// The reason, as the closing side gave it.
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// This side sent its close frame and waits for the peer's.
    Closing,
    /// The peer broke the protocol: nothing more is read, and the close
    /// frame is written when the driver takes the `Closed` event, after it
    /// answered the messages read before the error.
    Failing,
    Closed,
}

/// One server-side WebSocket connection. See the module documentation.
#[derive(Debug)]
pub struct WsConn {
    limits: Limits,
    input: Vec<u8>,
    out: Vec<u8>,
    out_at: usize,
    events: VecDeque<WsEvent>,
    state: State,
    /// A message begun and not finished (with [`Limits::fragments`]): its
    /// opcode, its bytes so far, and how much of a text's is known to be
    /// UTF-8 (checked as it comes, so a bad byte fails at once).
    partial: Option<(u8, Vec<u8>, usize)>,
    /// The close to write once the `Closed` event of a protocol error is
    /// taken.
    failing: Option<(u16, String)>,
    /// How many payload bytes of the text frame not yet whole are known to
    /// be UTF-8 (ending on a character's boundary).
    peeked: usize,
}

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

impl WsConn {
    /// A connection just upgraded.
    pub fn new(limits: Limits) -> WsConn {
        WsConn {
            limits,
            input: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            events: VecDeque::new(),
            state: State::Open,
            partial: None,
            failing: None,
            peeked: 0,
        }
    }

    /// The next event, if any. Poll until `None` after every input, and
    /// answer each before taking the next: after a protocol error of the
    /// peer's, the close frame is written as its `Closed` event is taken,
    /// so the answers to the messages before the error go out first.
    pub fn poll_event(&mut self) -> Option<WsEvent> {
        let event = self.events.pop_front()?;
        if let (WsEvent::Closed { code, reason }, Some((c, r))) = (&event, &self.failing) {
            if code == c && reason == r {
                let (code, reason) = self.failing.take().expect("just matched");
                self.send_close(code, &reason);
                self.state = State::Closed;
            }
        }
        Some(event)
    }

    /// Whether events wait to be taken ([`poll_event`](WsConn::poll_event)):
    /// a driver that takes them only as it can answer them leaves the rest
    /// here, and reads no more meanwhile.
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Queues `text` as one unmasked text frame. Nothing is sent once the
    /// close handshake began.
    pub fn send_text(&mut self, _now: Timestamp, text: &str) {
        if matches!(self.state, State::Open | State::Failing) {
            write_frame(&mut self.out, OP_TEXT, text.as_bytes());
        }
    }

    /// Queues the text `parts` make together as one unmasked text frame,
    /// as [`send_text`](WsConn::send_text) queues their concatenation,
    /// without making it first.
    pub fn send_text_parts(&mut self, _now: Timestamp, parts: &[&str]) {
        if matches!(self.state, State::Open | State::Failing) {
            write_header(&mut self.out, OP_TEXT, parts.iter().map(|p| p.len()).sum());
            for part in parts {
                self.out.extend_from_slice(part.as_bytes());
            }
        }
    }

    /// Queues `data` as one unmasked binary frame, as
    /// [`send_text`](WsConn::send_text) does text.
    pub fn send_binary(&mut self, _now: Timestamp, data: &[u8]) {
        if matches!(self.state, State::Open | State::Failing) {
            write_frame(&mut self.out, OP_BINARY, data);
        }
    }

    /// Begins the close handshake with `code` and `reason` (at most 123
    /// bytes of it are sent), after what is queued.
    pub fn close(&mut self, _now: Timestamp, code: u16, reason: &str) {
        if self.state == State::Open {
            self.send_close(code, reason);
            self.state = State::Closing;
        }
    }

    fn send_close(&mut self, code: u16, reason: &str) {
        let mut payload = code.to_be_bytes().to_vec();
        // A control frame carries at most 125 bytes: the reason is cut at
        // a character boundary within 123.
        let mut end = reason.len().min(123);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        payload.extend_from_slice(&reason.as_bytes()[..end]);
        write_frame(&mut self.out, OP_CLOSE, &payload);
    }

    /// A protocol error of the peer's: nothing more is read, and the
    /// close frame with `code` follows the answers to what came before
    /// (written as the `Closed` event is taken).
    fn fail(&mut self, code: u16, reason: String) {
        if self.state == State::Open {
            self.failing = Some((code, reason.clone()));
            self.state = State::Failing;
        } else {
            self.state = State::Closed;
        }
        self.events.push_back(WsEvent::Closed { code, reason });
    }

    /// Reads one frame from `bytes`: `None` until it is whole, or the
    /// close code and reason of what is wrong with it (known from its
    /// header alone where it can be, so an oversized frame is never held).
    fn frame(&self, bytes: &[u8]) -> FrameRead {
        if bytes.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (bytes[0], bytes[1]);
        let fin = b0 & 0x80 != 0;
        let opcode = b0 & 0x0f;
        if b0 & 0x70 != 0 {
            return Err((
                close_code::PROTOCOL_ERROR,
                "a reserved bit is set, and no extension was agreed".into(),
            ));
        }
        let control = opcode & 0x8 != 0;
        match opcode {
            OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG => {}
            other => {
                return Err((
                    close_code::PROTOCOL_ERROR,
                    format!("opcode {other:#x} is reserved"),
                ))
            }
        }
        if b1 & 0x80 == 0 {
            return Err((
                close_code::PROTOCOL_ERROR,
                "a client's frame must be masked".into(),
            ));
        }
        let (len, mut at) = match b1 & 0x7f {
            126 => {
                if bytes.len() < 4 {
                    return Ok(None);
                }
                (u64::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4)
            }
            127 => {
                if bytes.len() < 10 {
                    return Ok(None);
                }
                let len = u64::from_be_bytes(bytes[2..10].try_into().expect("eight bytes"));
                if len >> 63 != 0 {
                    return Err((
                        close_code::PROTOCOL_ERROR,
                        "a 64-bit length with its top bit set".into(),
                    ));
                }
                (len, 10)
            }
            n => (u64::from(n), 2),
        };
        if control && (!fin || len > 125) {
            return Err((
                close_code::PROTOCOL_ERROR,
                "a control frame is one frame of at most 125 bytes".into(),
            ));
        }
        if !control && !self.limits.fragments && (!fin || opcode == OP_CONTINUATION) {
            return Err((
                close_code::POLICY_VIOLATION,
                "a message is one frame here: fragmented messages are not taken".into(),
            ));
        }
        if !control && self.limits.fragments {
            match (opcode, &self.partial) {
                (OP_CONTINUATION, None) => {
                    return Err((
                        close_code::PROTOCOL_ERROR,
                        "a continuation frame with no message begun".into(),
                    ))
                }
                (OP_TEXT | OP_BINARY, Some(_)) => {
                    return Err((
                        close_code::PROTOCOL_ERROR,
                        "a new message began before the last one ended".into(),
                    ))
                }
                _ => {}
            }
        }
        // Known from the header: an oversized message is never held.
        let so_far = self.partial.as_ref().map_or(0, |p| p.1.len()) as u64;
        let total = if opcode == OP_CONTINUATION {
            so_far + len
        } else {
            len
        };
        if !control && total > self.limits.max_message as u64 {
            return Err((
                close_code::MESSAGE_TOO_BIG,
                format!(
                    "a message of {total} bytes, over {} bytes",
                    self.limits.max_message
                ),
            ));
        }
        if bytes.len() < at + 4 + len as usize {
            return Ok(None);
        }
        let mask: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
        at += 4;
        let payload: Vec<u8> = bytes[at..at + len as usize]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        Ok(Some((
            at + len as usize,
            Frame {
                opcode,
                fin,
                payload,
            },
        )))
    }

    fn take(&mut self, frame: Frame) {
        match frame.opcode {
            OP_TEXT | OP_BINARY | OP_CONTINUATION if self.limits.fragments => {
                self.take_fragment(frame)
            }
            OP_BINARY if self.limits.binary && self.state == State::Open => {
                self.events.push_back(WsEvent::Binary(frame.payload))
            }
            // After this side's close, a message is not an event.
            OP_BINARY if self.limits.binary => {}
            OP_TEXT => {
                if self.state != State::Open {
                    return;
                }
                match String::from_utf8(frame.payload) {
                    Ok(text) => self.events.push_back(WsEvent::Text(text)),
                    Err(_) => self.fail(
                        close_code::INVALID_PAYLOAD,
                        "a text message that is not UTF-8".into(),
                    ),
                }
            }
            OP_BINARY => self.fail(
                close_code::UNSUPPORTED_DATA,
                "binary messages are not taken: the hub speaks text".into(),
            ),
            // After the frames queued before it.
            OP_PING if self.state == State::Open => {
                write_frame(&mut self.out, OP_PONG, &frame.payload)
            }
            OP_CLOSE => self.peer_closed(&frame.payload),
            _ => {}
        }
    }

    /// A data frame where messages may be fragmented: kept until its
    /// message ends, a text's UTF-8 checked as it comes.
    fn take_fragment(&mut self, frame: Frame) {
        let (opcode, mut bytes, mut valid) = match self.partial.take() {
            Some(p) => p,
            None => (frame.opcode, Vec::new(), 0),
        };
        bytes.extend_from_slice(&frame.payload);
        if opcode == OP_TEXT {
            match std::str::from_utf8(&bytes[valid..]) {
                Ok(_) => valid = bytes.len(),
                // Cut inside a character: the rest may still come.
                Err(e) if e.error_len().is_none() && !frame.fin => valid += e.valid_up_to(),
                Err(_) => {
                    return self.fail(
                        close_code::INVALID_PAYLOAD,
                        "a text message that is not UTF-8".into(),
                    )
                }
            }
        }
        if opcode == OP_BINARY && !self.limits.binary {
            return self.fail(
                close_code::UNSUPPORTED_DATA,
                "binary messages are not taken: the hub speaks text".into(),
            );
        }
        if !frame.fin {
            self.partial = Some((opcode, bytes, valid));
            return;
        }
        if self.state != State::Open {
            return;
        }
        let event = if opcode == OP_TEXT {
            WsEvent::Text(String::from_utf8(bytes).expect("checked as it came"))
        } else {
            WsEvent::Binary(bytes)
        };
        self.events.push_back(event);
    }

    fn peer_closed(&mut self, payload: &[u8]) {
        let (code, reason) = match payload.len() {
            0 => (close_code::NO_STATUS, String::new()),
            1 => {
                return self.fail(
                    close_code::PROTOCOL_ERROR,
                    "a close frame's payload of one byte".into(),
                )
            }
            _ => {
                let code = u16::from_be_bytes([payload[0], payload[1]]);
                let sendable = matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999);
                if !sendable {
                    return self.fail(
                        close_code::PROTOCOL_ERROR,
                        format!("close code {code} may not be sent"),
                    );
                }
                match String::from_utf8(payload[2..].to_vec()) {
                    Ok(reason) => (code, reason),
                    Err(_) => {
                        return self.fail(
                            close_code::INVALID_PAYLOAD,
                            "a close reason that is not UTF-8".into(),
                        )
                    }
                }
            }
        };
        if self.state == State::Open {
            // Echo the peer's code (an empty close answers an empty one).
            if code == close_code::NO_STATUS {
                write_frame(&mut self.out, OP_CLOSE, &[]);
            } else {
                self.send_close(code, "");
            }
        }
        self.state = State::Closed;
        self.events.push_back(WsEvent::Closed { code, reason });
    }
}

impl Machine for WsConn {
    /// Takes bytes the peer sent, in any split.
    fn handle_data(&mut self, _now: Timestamp, data: &[u8]) {
        if !matches!(self.state, State::Open | State::Closing) {
            return;
        }
        self.input.extend_from_slice(data);
        let mut at = 0;
        while matches!(self.state, State::Open | State::Closing) {
            match self.frame(&self.input[at..]) {
                Ok(None) => {
                    // Text that can no longer be UTF-8 fails at once, its
                    // frame not yet whole (RFC 6455 § 8.1: fail fast).
                    let text_goes_on = matches!(&self.partial,
                        Some((OP_TEXT, bytes, valid)) if *valid == bytes.len());
                    if !peek_utf8(&self.input[at..], text_goes_on, &mut self.peeked) {
                        self.fail(
                            close_code::INVALID_PAYLOAD,
                            "a text message that is not UTF-8".into(),
                        );
                    }
                    break;
                }
                Ok(Some((used, frame))) => {
                    at += used;
                    self.peeked = 0;
                    self.take(frame);
                }
                Err((code, reason)) => {
                    self.fail(code, reason);
                    break;
                }
            }
        }
        self.input.drain(..at.min(self.input.len()));
    }

    /// The peer's end closed. Without a close handshake it is 1006.
    fn handle_eof(&mut self, _now: Timestamp) {
        if matches!(self.state, State::Open | State::Closing) {
            self.state = State::Closed;
            self.events.push_back(WsEvent::Closed {
                code: close_code::ABNORMAL,
                reason: "the connection ended without a close frame".into(),
            });
        }
    }

    /// The bytes still to write; borrowed until the next call.
    fn pending_output(&self) -> &[u8] {
        &self.out[self.out_at..]
    }

    /// `n` bytes of [`pending_output`](WsConn::pending_output) were written.
    fn consume_output(&mut self, _now: Timestamp, n: usize) {
        self.out_at = (self.out_at + n).min(self.out.len());
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
        }
    }

    /// Whether the connection is over (the event said so).
    fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Always: a WebSocket connection reads on; what it is owed is its
    /// driver's to bound (`ws::Hub::wants_read`).
    fn wants_read(&self) -> bool {
        true
    }

    /// Nothing: the codec holds no timer (the hub keeps a connection's).
    fn handle_timeout(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// None: the codec holds no timer.
    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }
}

struct Frame {
    opcode: u8,
    fin: bool,
    payload: Vec<u8>,
}

/// What reading one frame gives: nothing until it is whole, the frame and
/// the bytes it took, or the close code and reason of what is wrong.
type FrameRead = Result<Option<(usize, Frame)>, (u16, String)>;

/// Whether the payload read so far of the incomplete frame at the start of
/// `bytes` can still be UTF-8: always for a frame that is not text (a
/// continuation is text when `text_goes_on`), else the bytes after
/// `*peeked` are unmasked and checked, and `*peeked` moves to the last
/// character boundary, so each byte is checked about once.
fn peek_utf8(bytes: &[u8], text_goes_on: bool, peeked: &mut usize) -> bool {
    if bytes.len() < 2 || bytes[1] & 0x80 == 0 {
        return true;
    }
    let opcode = bytes[0] & 0x0f;
    if !(opcode == OP_TEXT || (opcode == OP_CONTINUATION && text_goes_on)) {
        return true;
    }
    let at = match bytes[1] & 0x7f {
        126 => 4,
        127 => 10,
        _ => 2,
    };
    if bytes.len() < at + 4 {
        return true;
    }
    let mask = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    let payload = &bytes[at + 4..];
    if *peeked >= payload.len() {
        return true;
    }
    let fresh: Vec<u8> = payload[*peeked..]
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ mask[(*peeked + i) % 4])
        .collect();
    match std::str::from_utf8(&fresh) {
        Ok(_) => {
            *peeked = payload.len();
            true
        }
        // Cut inside a character: the rest may still come.
        Err(e) if e.error_len().is_none() => {
            *peeked += e.valid_up_to();
            true
        }
        Err(_) => false,
    }
}

/// One unmasked final frame of `opcode` carrying `payload`.
fn write_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    write_header(out, opcode, payload.len());
    out.extend_from_slice(payload);
}

/// An unmasked, final frame's header for a payload of `len` bytes.
fn write_header(out: &mut Vec<u8>, opcode: u8, len: usize) {
    out.push(0x80 | opcode);
    if len < 126 {
        out.push(len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame made of parts is the frame of their concatenation, at each
    /// length where the header changes form.
    #[test]
    fn a_text_in_parts_is_framed_as_the_whole_text() {
        for len in [0, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let (a, b) = text.split_at(len / 3);
            let (b, c) = b.split_at(b.len() / 2);
            let mut whole = WsConn::new(Limits::default());
            whole.send_text(0, &text);
            let mut parts = WsConn::new(Limits::default());
            parts.send_text_parts(0, &[a, "", b, c]);
            assert_eq!(parts.pending_output(), whole.pending_output(), "{len}");
        }
    }

    /// A masked client frame.
    fn client(opcode: u8, fin: bool, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut out = vec![u8::from(fin) << 7 | opcode];
        let len = payload.len();
        if len < 126 {
            out.push(0x80 | len as u8);
        } else if len <= 0xffff {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    fn events(conn: &mut WsConn) -> Vec<WsEvent> {
        std::iter::from_fn(|| conn.poll_event()).collect()
    }

    #[test]
    fn the_accept_key_of_rfc_6455s_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    fn request(headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            target: "/".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn an_upgrade_is_answered_101_and_a_bad_one_refused_naming_the_header() {
        let good = [
            ("Host", "x"),
            ("Upgrade", "websocket"),
            ("Connection", "keep-alive, Upgrade"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ];
        let response = String::from_utf8(upgrade(&request(&good)).unwrap()).unwrap();
        assert!(response.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
        assert!(response.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        let without = |name: &str| {
            let h: Vec<(&str, &str)> = good.iter().copied().filter(|(n, _)| *n != name).collect();
            upgrade(&request(&h)).unwrap_err()
        };
        assert!(without("Upgrade").reason.contains("Upgrade"));
        assert!(without("Connection").reason.contains("Connection"));
        assert_eq!(without("Sec-WebSocket-Version").status, 426);
        assert!(without("Sec-WebSocket-Key")
            .reason
            .contains("Sec-WebSocket-Key"));
    }

    #[test]
    fn text_in_any_split_and_a_pong_after_what_was_queued() {
        let mut input = client(OP_TEXT, true, b"{\"subscribe\":\"fills\"}", [1, 2, 3, 4]);
        input.extend(client(OP_PING, true, b"hi", [9, 9, 9, 9]));
        for split in 0..=input.len() {
            let mut conn = WsConn::new(Limits::default());
            conn.send_text(0, "queued");
            conn.handle_data(0, &input[..split]);
            conn.handle_data(0, &input[split..]);
            assert_eq!(
                events(&mut conn),
                [WsEvent::Text("{\"subscribe\":\"fills\"}".into())]
            );
            let mut want = vec![0x81, 6];
            want.extend_from_slice(b"queued");
            want.extend_from_slice(&[0x8a, 2, b'h', b'i']);
            assert_eq!(conn.pending_output(), want, "{split}");
        }
    }

    #[test]
    fn the_close_handshake_from_either_side() {
        let mut conn = WsConn::new(Limits::default());
        let mut close = 1000u16.to_be_bytes().to_vec();
        close.extend_from_slice(b"bye");
        conn.handle_data(0, &client(OP_CLOSE, true, &close, [7, 7, 7, 7]));
        assert_eq!(
            events(&mut conn),
            [WsEvent::Closed {
                code: 1000,
                reason: "bye".into()
            }]
        );
        assert_eq!(conn.pending_output(), [0x88, 2, 0x03, 0xe8]);
        assert!(conn.is_closed());

        let mut conn = WsConn::new(Limits::default());
        conn.close(0, close_code::GOING_AWAY, "stopping");
        conn.send_text(0, "too late");
        let mut want = vec![0x88, 10, 0x03, 0xe9];
        want.extend_from_slice(b"stopping");
        assert_eq!(conn.pending_output(), want);
        // Frames the peer sent before its close are not events any more.
        conn.handle_data(0, &client(OP_TEXT, true, b"x", [1, 1, 1, 1]));
        conn.handle_data(0, &client(OP_CLOSE, true, &[0x03, 0xe9], [1, 1, 1, 1]));
        assert_eq!(
            events(&mut conn),
            [WsEvent::Closed {
                code: 1001,
                reason: String::new()
            }]
        );
    }

    #[test]
    fn every_protocol_error_closes_with_its_code() {
        let unmasked = vec![0x81, 1, b'x'];
        let mut rsv = client(OP_TEXT, true, b"x", [1, 2, 3, 4]);
        rsv[0] |= 0x40;
        let cases: Vec<(Vec<u8>, u16)> = vec![
            (unmasked, 1002),
            (rsv, 1002),
            (client(0x3, true, b"", [0; 4]), 1002),
            (client(OP_PING, false, b"", [0; 4]), 1002),
            (client(OP_PING, true, &[0; 126], [0; 4]), 1002),
            (client(OP_TEXT, false, b"part", [0; 4]), 1008),
            (client(OP_CONTINUATION, true, b"part", [0; 4]), 1008),
            (client(OP_BINARY, true, b"\0", [0; 4]), 1003),
            (client(OP_TEXT, true, &[0xff], [0; 4]), 1007),
            (client(OP_TEXT, true, &vec![b'a'; 65537], [0; 4]), 1009),
            (client(OP_CLOSE, true, &[3], [0; 4]), 1002),
            (client(OP_CLOSE, true, &[0x03, 0xed], [0; 4]), 1002),
            (client(OP_CLOSE, true, &[0x03, 0xe8, 0xff], [0; 4]), 1007),
        ];
        for (input, code) in cases {
            let mut conn = WsConn::new(Limits::default());
            conn.handle_data(0, &input);
            let got = events(&mut conn);
            assert!(
                matches!(got.as_slice(), [WsEvent::Closed { code: c, .. }] if *c == code),
                "{:02x?}: {got:?}",
                &input[..input.len().min(12)]
            );
            let out = conn.pending_output();
            assert_eq!(&out[..1], [0x88]);
            assert_eq!(u16::from_be_bytes([out[2], out[3]]), code);
            assert!(conn.is_closed());
        }
        // An oversized frame is refused from its header, before its body.
        let mut conn = WsConn::new(Limits::default());
        conn.handle_data(0, &[0x81, 0xff, 0, 0, 0, 0, 0, 1, 0, 1]);
        assert!(matches!(
            events(&mut conn).as_slice(),
            [WsEvent::Closed { code: 1009, .. }]
        ));
        assert!(conn.is_closed());
    }

    #[test]
    fn a_protocol_errors_close_follows_the_answers_to_what_came_before() {
        let mut input = client(OP_TEXT, true, b"first", [1, 2, 3, 4]);
        input.extend(client(0x3, true, b"", [0; 4]));
        input.extend(client(OP_TEXT, true, b"never", [0; 4]));
        let mut conn = WsConn::new(Limits::default());
        conn.handle_data(0, &input);
        assert_eq!(conn.poll_event(), Some(WsEvent::Text("first".into())));
        conn.send_text(0, "echo");
        assert!(!conn.is_closed());
        assert!(matches!(
            conn.poll_event(),
            Some(WsEvent::Closed { code: 1002, .. })
        ));
        assert!(conn.is_closed());
        assert_eq!(conn.poll_event(), None);
        let out = conn.pending_output();
        assert_eq!(&out[..6], [0x81, 4, b'e', b'c', b'h', b'o']);
        assert_eq!(&out[6..10], [0x88, out[7], 0x03, 0xea]);
    }

    #[test]
    fn the_end_of_input_without_a_close_is_1006() {
        let mut conn = WsConn::new(Limits::default());
        conn.handle_eof(0);
        assert!(matches!(
            events(&mut conn).as_slice(),
            [WsEvent::Closed { code: 1006, .. }]
        ));
        assert!(conn.pending_output().is_empty());
    }
}
