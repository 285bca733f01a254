//! HTTP/1.1, one request to a connection, as a sans-I/O machine.
//!
//! [`HttpConn`] reads one request (a head parsed by `httparse`, then a body of
//! `Content-Length` bytes) under the limits of § The HTTP transport — a head
//! of at most 64 KiB, a body of at most 1 MiB, 5 seconds of silence and 10
//! in all — and emits it as a [`HttpEvent::Request`], or as a
//! [`HttpEvent::Malformed`] the transport answers 400. It then writes one
//! response and closes (`Connection: close`: no keep-alive, no chunked
//! bodies). A reader that takes nothing of the response for 5 seconds ends
//! the connection. An EOF before the request is whole ends it with nothing
//! written; an EOF after it is the client gone ([`HttpEvent::Lost`]).
//!
//! The machine knows HTTP, not Hale: [`crate::wire::http`] frames its
//! requests for an exposure and encodes outcomes back, and the MCP transport
//! frames `POST /mcp` on the same machine.
//!
//! [`client`] is the other role, as h11 has both: the reader of a response
//! and the writer of a request, for limen's own clients (the CLI, the
//! recorder, the conformance checker).

pub mod client;

use std::collections::VecDeque;

use crate::wire::machine::Machine;
use crate::{Timestamp, SECOND};

/// The limits of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest request head, in bytes.
    pub max_head: usize,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The longest silence while a request is read.
    pub silence: Timestamp,
    /// The longest time a whole request may take to read.
    pub request: Timestamp,
    /// The longest a response may wait for the peer to read any of it.
    pub stalled_write: Timestamp,
    /// The most headers a request may carry.
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: 65_536,
            max_body: 1_048_576,
            silence: 5 * SECOND,
            request: 10 * SECOND,
            stalled_write: 5 * SECOND,
            max_headers: 64,
        }
    }
}

/// A request read whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method, as sent (`POST`).
    pub method: String,
    /// The request target, as sent (`/call/Orders::place`).
    pub target: String,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first header named `name` (compared without regard to case).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The token of an `Authorization: Bearer <token>` header, if that is
    /// what it holds.
    pub fn bearer(&self) -> Option<String> {
        let value = std::str::from_utf8(self.header("authorization")?).ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
    }
}

/// What the connection asks of its transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpEvent {
    /// A whole request arrived.
    Request(HttpRequest),
    /// The bytes are not an HTTP/1.1 request the transport can take: answer
    /// it 400 with the reason (the request's head, when it was read, rides
    /// along so the transport can still read its credential).
    Malformed {
        /// Why.
        reason: String,
        /// The head, when it parsed.
        head: Option<HttpRequest>,
    },
    /// The client went away after its request was whole: the runtime's lost
    /// connection.
    Lost,
    /// The connection is done: close the socket. Nothing more is written.
    Close,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading the head.
    Head,
    /// Reading `remaining` bytes of body.
    Body { remaining: usize },
    /// The request is out; waiting for the response.
    Waiting,
    /// Writing the response.
    Writing,
    /// Done.
    Closed,
}

/// One HTTP/1.1 connection. See the module documentation.
#[derive(Debug)]
pub struct HttpConn {
    limits: Limits,
    state: State,
    started: Timestamp,
    last_read: Timestamp,
    buf: Vec<u8>,
    /// Bytes of empty lines passed over before the request line: part of
    /// the head as sent, so counted against its limit, but not kept.
    skipped: usize,
    /// Bytes handed to `httparse` so far, so a test can hold the work of
    /// reading a head to a multiple of its length.
    #[cfg(test)]
    parsed: usize,
    head: Option<HttpRequest>,
    /// Bytes read past the end of the request: nothing to HTTP (one
    /// request to a connection), an upgraded protocol's first bytes.
    rest: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    last_progress: Timestamp,
    events: VecDeque<HttpEvent>,
    /// The request was refused before its end was read: input may still
    /// be arriving when the answer has been written.
    refused_early: bool,
}

impl HttpConn {
    /// A connection accepted at `now`.
    pub fn new(now: Timestamp, limits: Limits) -> HttpConn {
        HttpConn {
            limits,
            state: State::Head,
            started: now,
            last_read: now,
            buf: Vec::new(),
            skipped: 0,
            #[cfg(test)]
            parsed: 0,
            head: None,
            rest: Vec::new(),
            out: Vec::new(),
            out_pos: 0,
            last_progress: now,
            events: VecDeque::new(),
            refused_early: false,
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<HttpEvent> {
        self.events.pop_front()
    }

    /// Queues the response `status` with a JSON `body` and the headers of
    /// § The HTTP transport, nothing else. The connection closes once it is
    /// written. Ignored unless a request (or a malformed one) is waiting.
    pub fn send_json(&mut self, now: Timestamp, status: u16, body: &[u8]) {
        self.send(now, status, &[], body)
    }

    /// Like [`send_json`](HttpConn::send_json) with extra headers before the
    /// fixed ones (`Allow: POST` on a 405).
    pub fn send(&mut self, now: Timestamp, status: u16, extra: &[(&str, &str)], body: &[u8]) {
        self.send_typed(now, status, "application/json", extra, body)
    }

    /// Like [`send`](HttpConn::send) with a body of `content_type` (a page
    /// and its assets, served by `hale admin`): the fixed headers with that
    /// type in place of JSON's.
    pub fn send_typed(
        &mut self,
        now: Timestamp,
        status: u16,
        content_type: &str,
        extra: &[(&str, &str)],
        body: &[u8],
    ) {
        if self.state != State::Waiting {
            return;
        }
        let mut out = Vec::with_capacity(160 + body.len());
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(status.to_string().as_bytes());
        out.push(b' ');
        out.extend_from_slice(reason_phrase(status).as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in extra {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !body.is_empty() || status != 202 {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(content_type.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Cache-Control: no-store\r\nContent-Length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
        out.extend_from_slice(body);
        self.out = out;
        self.out_pos = 0;
        self.last_progress = now;
        self.state = State::Writing;
    }

    /// The bytes read past the end of the request, taken: what a client
    /// sent after an upgrade request in the same read.
    pub fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.rest)
    }

    /// Ends the connection without a response (a transport failure for the
    /// client).
    pub fn abort(&mut self) {
        self.close();
    }

    /// Whether a driver closing the connection now should close it in
    /// stages (RFC 9112 § 9.6: shut down its writing side, then read and
    /// discard for a bounded time before closing): the connection closed
    /// with its response written whole, and the client may still be
    /// sending — its request was refused before its end was read (a body
    /// over the limit, a head that does not parse), or it sent more than
    /// its request. A close with input unread makes the kernel reset the
    /// connection, and a client still sending then never reads the
    /// response. False for every other close, which costs nothing more.
    pub fn lingers(&self) -> bool {
        self.state == State::Closed
            && !self.out.is_empty()
            && self.out_pos == self.out.len()
            && (self.refused_early || !self.rest.is_empty())
    }

    fn read_deadline(&self) -> Timestamp {
        let silence = self.last_read.saturating_add(self.limits.silence);
        let total = self.started.saturating_add(self.limits.request);
        silence.min(total)
    }

    fn close(&mut self) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.buf = Vec::new();
            self.events.push_back(HttpEvent::Close);
        }
    }

    fn malformed(&mut self, reason: impl Into<String>) {
        self.state = State::Waiting;
        self.refused_early = true;
        self.buf = Vec::new();
        self.events.push_back(HttpEvent::Malformed {
            reason: reason.into(),
            head: self.head.take(),
        });
    }

    /// Passes over the empty lines a client may send before its request
    /// line (RFC 9112 § 2.2) without keeping them, so that however many
    /// come none is parsed again; a CR that may begin one waits in `buf`.
    fn skip_empty_lines<'d>(&mut self, mut data: &'d [u8]) -> &'d [u8] {
        loop {
            if self.buf == b"\r" {
                match data.split_first() {
                    Some((b'\n', rest)) => {
                        self.buf.clear();
                        self.skipped += 2;
                        data = rest;
                    }
                    _ => return data,
                }
            } else if !self.buf.is_empty() {
                return data;
            }
            match data {
                [b'\n', rest @ ..] | [b'\r', b'\n', rest @ ..] => {
                    self.skipped += data.len() - rest.len();
                    data = rest;
                }
                [b'\r'] => {
                    self.buf.push(b'\r');
                    return &[];
                }
                _ => return data,
            }
        }
    }

    /// Reads the head once `fresh` more bytes are in `buf`. The head is
    /// parsed through its last complete line, and only when a read brought
    /// a line end: parsing the whole buffer on every read would be
    /// quadratic in a head trickled a byte at a time, and what `httparse`
    /// makes of a line is decided once the line is whole. A head that
    /// stays partial past the limit is refused.
    fn parse_head(&mut self, fresh: usize) {
        let from = self.buf.len() - fresh.min(self.buf.len());
        let Some(last) = self.buf[from..].iter().rposition(|&b| b == b'\n') else {
            if self.skipped + self.buf.len() > self.limits.max_head {
                self.malformed(format!(
                    "the request head is over {} bytes",
                    self.limits.max_head
                ));
            }
            return;
        };
        let lines = from + last + 1;
        #[cfg(test)]
        {
            self.parsed += lines;
        }
        let mut headers = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut req = httparse::Request::new(&mut headers);
        let parsed = req.parse(&self.buf[..lines]);
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if self.skipped + self.buf.len() > self.limits.max_head {
                    self.malformed(format!(
                        "the request head is over {} bytes",
                        self.limits.max_head
                    ));
                }
                return;
            }
            Err(httparse::Error::TooManyHeaders) => {
                return self.malformed(format!(
                    "the request has more than {} headers",
                    self.limits.max_headers
                ));
            }
            Err(e) => return self.malformed(format!("not an HTTP/1.1 request: {e}")),
        };
        if self.skipped + n > self.limits.max_head {
            return self.malformed(format!(
                "the request head is over {} bytes",
                self.limits.max_head
            ));
        }
        let head = HttpRequest {
            method: req.method.unwrap_or_default().to_owned(),
            target: req.path.unwrap_or_default().to_owned(),
            headers: req
                .headers
                .iter()
                .map(|h| (h.name.to_owned(), h.value.to_vec()))
                .collect(),
            body: Vec::new(),
        };
        // HTTP/1.0 is read as well: every response closes the connection, so
        // the two differ in nothing this machine does.
        let rest = self.buf.split_off(n);
        self.buf = rest;
        self.head = Some(head);
        let head = self.head.as_ref().expect("just set");
        if head.header("transfer-encoding").is_some() {
            return self.malformed("a chunked or encoded body is not taken; send Content-Length");
        }
        let length = match head.header("content-length") {
            None => 0,
            Some(v) => match content_length(v) {
                Some(n) => n,
                None => return self.malformed("the Content-Length is not a number"),
            },
        };
        let duplicate_length = head
            .headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .count()
            > 1;
        if duplicate_length {
            return self.malformed("the request has two Content-Length headers");
        }
        if length > self.limits.max_body as u64 {
            return self.malformed(format!(
                "the request body is over {} bytes",
                self.limits.max_body
            ));
        }
        self.state = State::Body {
            remaining: length as usize,
        };
        let already = std::mem::take(&mut self.buf);
        self.take_body(&already);
    }

    fn take_body(&mut self, data: &[u8]) {
        let State::Body { remaining } = self.state else {
            return;
        };
        let take = data.len().min(remaining);
        self.buf.extend_from_slice(&data[..take]);
        self.rest.extend_from_slice(&data[take..]);
        let remaining = remaining - take;
        if remaining > 0 {
            self.state = State::Body { remaining };
            return;
        }
        let mut request = self.head.take().expect("the head was read");
        request.body = std::mem::take(&mut self.buf);
        self.state = State::Waiting;
        self.events.push_back(HttpEvent::Request(request));
    }
}

impl Machine for HttpConn {
    /// Whether the machine reads input now: until its one request is whole.
    fn wants_read(&self) -> bool {
        matches!(self.state, State::Head | State::Body { .. })
    }

    /// Bytes read from the socket at `now`.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        match self.state {
            State::Head | State::Body { .. } => {}
            // One request to a connection: what follows it is not read.
            _ => return,
        }
        if data.is_empty() {
            return;
        }
        self.last_read = now;
        match self.state {
            State::Head => {
                let data = self.skip_empty_lines(data);
                // Bound what is buffered before the head is known to end.
                let held = self.skipped + self.buf.len();
                let room = (self.limits.max_head + 1).saturating_sub(held);
                let take = data.len().min(room);
                self.buf.extend_from_slice(&data[..take]);
                let rest = &data[take..];
                self.parse_head(take);
                if let State::Body { .. } = self.state {
                    self.take_body(rest);
                }
            }
            State::Body { .. } => self.take_body(data),
            _ => {}
        }
    }

    /// The peer closed its end (EOF) at `now`.
    fn handle_eof(&mut self, _now: Timestamp) {
        match self.state {
            // Cut off before it was whole: nothing is written.
            State::Head | State::Body { .. } => self.close(),
            // Gone after sending: the runtime's lost connection. The
            // transport closes once the runtime is finished with it.
            State::Waiting | State::Writing => self.events.push_back(HttpEvent::Lost),
            State::Closed => {}
        }
    }

    /// Time passes: the read timers while a request is read, the stalled
    /// write timer while a response is written.
    fn handle_timeout(&mut self, now: Timestamp) {
        match self.state {
            State::Head | State::Body { .. } => {
                if now >= self.read_deadline() {
                    self.close();
                }
            }
            State::Writing => {
                if now >= self.last_progress.saturating_add(self.limits.stalled_write) {
                    self.close();
                }
            }
            State::Waiting | State::Closed => {}
        }
    }

    /// When [`handle_timeout`](HttpConn::handle_timeout) next has work.
    fn poll_timeout(&self) -> Option<Timestamp> {
        match self.state {
            State::Head | State::Body { .. } => Some(self.read_deadline()),
            State::Writing => Some(self.last_progress.saturating_add(self.limits.stalled_write)),
            State::Waiting | State::Closed => None,
        }
    }

    /// The bytes still to write.
    fn pending_output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// `n` bytes of [`pending_output`](HttpConn::pending_output) were written at
    /// `now`. Once the whole response is out the connection closes.
    fn consume_output(&mut self, now: Timestamp, n: usize) {
        if self.state != State::Writing {
            return;
        }
        let n = n.min(self.out.len() - self.out_pos);
        if n > 0 {
            self.out_pos += n;
            self.last_progress = now;
        }
        if self.out_pos == self.out.len() {
            self.close();
        }
    }

    /// Whether the connection is done.
    fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
}

/// A `Content-Length` value: `1*DIGIT` (RFC 9110 § 8.6) between optional
/// spaces and tabs. Rust's `u64` parser would also take a `+` sign, and
/// `str::trim` Unicode spaces: a length another reader of the same bytes
/// refuses is a length this one must refuse (RFC 9112 § 6.3).
fn content_length(value: &[u8]) -> Option<u64> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b))?;
    let end = value.iter().rposition(|b| !ows(b))? + 1;
    let digits = &value[start..end];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The reason phrase of the statuses limen writes.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(conn: &mut HttpConn) -> Vec<HttpEvent> {
        std::iter::from_fn(|| conn.poll_event()).collect()
    }

    const CALL: &[u8] = b"POST /call/Orders::place HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t-alice\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn reads_one_request_whole_or_byte_by_byte() {
        let mut whole = HttpConn::new(0, Limits::default());
        whole.handle_data(0, CALL);
        let a = events(&mut whole);
        let mut split = HttpConn::new(0, Limits::default());
        for b in CALL {
            split.handle_data(0, std::slice::from_ref(b));
        }
        let b = events(&mut split);
        assert_eq!(a, b);
        let [HttpEvent::Request(req)] = &a[..] else {
            panic!("{a:?}")
        };
        assert_eq!(req.method, "POST");
        assert_eq!(req.target, "/call/Orders::place");
        assert_eq!(req.body, b"{}");
        assert_eq!(req.bearer().as_deref(), Some("t-alice"));
    }

    #[test]
    fn writes_the_fixed_headers_and_closes_when_written() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, CALL);
        events(&mut c);
        c.send_json(0, 200, b"{\"order\":41}");
        let out = String::from_utf8(c.pending_output().to_vec()).unwrap();
        assert_eq!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"order\":41}"
        );
        c.consume_output(1, 10);
        assert!(!c.is_closed());
        c.consume_output(1, 1000);
        assert!(c.is_closed());
        assert_eq!(events(&mut c), [HttpEvent::Close]);
    }

    #[test]
    fn a_head_over_64_kib_is_malformed() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, b"GET /");
        c.handle_data(0, &vec![b'a'; 70_000]);
        assert!(
            matches!(&events(&mut c)[..], [HttpEvent::Malformed { reason, .. }] if reason.contains("65536"))
        );
    }

    #[test]
    fn a_body_over_1_mib_is_malformed_before_it_is_read() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(
            0,
            b"POST /call/X::y HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n",
        );
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [HttpEvent::Malformed { reason, head: Some(_) }] if reason.contains("1048576")),
            "{e:?}"
        );
    }

    #[test]
    fn a_head_trickled_a_byte_at_a_time_is_parsed_once_a_line() {
        // Found by fuzz/fuzz_targets/http1_conn.rs (a slow unit): the whole
        // buffer was parsed again on every read, so a 64 KiB head sent a
        // byte at a time cost 2^31 bytes of parsing. Now a read without a
        // line end parses nothing.
        let mut head = b"POST /call/X::y HTTP/1.1\r\nX-Long: ".to_vec();
        head.extend(std::iter::repeat_n(b'a', 65_000));
        head.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\n{}");
        let mut c = HttpConn::new(0, Limits::default());
        for b in &head {
            c.handle_data(0, std::slice::from_ref(b));
        }
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [HttpEvent::Request(r)] if r.body == b"{}"),
            "{e:?}"
        );
        assert!(c.parsed <= 4 * head.len(), "{} bytes parsed", c.parsed);
    }

    #[test]
    fn empty_lines_before_the_request_line_are_passed_over_and_counted() {
        // Found with the trickled head above: a read of one empty line
        // parsed every empty line before it again. They are now passed over
        // as they come, still counted against the 64 KiB of a head.
        let mut input = b"\r\n\n\r".to_vec();
        input.extend_from_slice(b"\n");
        input.extend_from_slice(CALL);
        let mut whole = HttpConn::new(0, Limits::default());
        whole.handle_data(0, &input);
        let mut split = HttpConn::new(0, Limits::default());
        for b in &input {
            split.handle_data(0, std::slice::from_ref(b));
        }
        let a = events(&mut whole);
        assert!(matches!(&a[..], [HttpEvent::Request(_)]), "{a:?}");
        assert_eq!(a, events(&mut split));

        let mut many = vec![b'\n'; 65_537];
        many.extend_from_slice(CALL);
        for feed in [many.chunks(many.len()), many.chunks(1)] {
            let mut c = HttpConn::new(0, Limits::default());
            for piece in feed {
                c.handle_data(0, piece);
            }
            assert_eq!(c.parsed, 0);
            let e = events(&mut c);
            assert!(
                matches!(&e[..], [HttpEvent::Malformed { reason, head: None }] if reason.contains("65536")),
                "{e:?}"
            );
        }
        // A CR that begins no empty line is the request's, and refused.
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, b"\r");
        c.handle_data(0, b"GET / HTTP/1.1\r\n\r\n");
        assert!(matches!(&events(&mut c)[..], [HttpEvent::Malformed { .. }]));
    }

    #[test]
    fn silence_and_the_whole_request_are_timed() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(SECOND, b"POST /call/X::y HTTP/1.1\r\n");
        assert_eq!(c.poll_timeout(), Some(6 * SECOND));
        c.handle_timeout(5 * SECOND);
        assert!(!c.is_closed());
        // A trickle keeps the silence timer away but not the total.
        for t in 2..10 {
            c.handle_data(t * SECOND, b"X");
        }
        assert_eq!(c.poll_timeout(), Some(10 * SECOND));
        c.handle_timeout(10 * SECOND);
        assert!(c.is_closed());
        assert_eq!(events(&mut c), [HttpEvent::Close]);
    }

    #[test]
    fn eof_before_the_request_closes_and_after_it_is_lost() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, &CALL[..20]);
        c.handle_eof(0);
        assert_eq!(events(&mut c), [HttpEvent::Close]);
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, CALL);
        c.handle_eof(0);
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [HttpEvent::Request(_), HttpEvent::Lost]),
            "{e:?}"
        );
    }

    #[test]
    fn only_a_written_refusal_of_a_request_not_read_whole_lingers() {
        // A body over the limit: refused with the body unread.
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, b"POST /x HTTP/1.1\r\nContent-Length: 1048577\r\n\r\nxx");
        events(&mut c);
        c.send_json(0, 400, b"{}");
        assert!(!c.lingers(), "not before the answer is written");
        let n = c.pending_output().len();
        c.consume_output(0, n);
        assert!(c.is_closed() && c.lingers());
        // A request read whole closes at once.
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, CALL);
        events(&mut c);
        c.send_json(0, 200, b"{}");
        let n = c.pending_output().len();
        c.consume_output(0, n);
        assert!(c.is_closed() && !c.lingers());
        // One that sent more than its request lingers.
        let mut c = HttpConn::new(0, Limits::default());
        let mut more = CALL.to_vec();
        more.extend_from_slice(b"GET / HTTP/1.1\r\n");
        c.handle_data(0, &more);
        events(&mut c);
        c.send_json(0, 200, b"{}");
        let n = c.pending_output().len();
        c.consume_output(0, n);
        assert!(c.lingers());
        // A refusal never written (the reader stalled) does not.
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, b"NOT HTTP\r\n\r\n");
        events(&mut c);
        c.send_json(0, 400, b"{}");
        c.handle_timeout(10 * SECOND);
        assert!(c.is_closed() && !c.lingers());
    }

    #[test]
    fn a_reader_that_takes_nothing_for_5_seconds_ends_the_connection() {
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(0, CALL);
        events(&mut c);
        c.send_json(SECOND, 200, b"{}");
        assert_eq!(c.poll_timeout(), Some(6 * SECOND));
        c.consume_output(2 * SECOND, 3);
        assert_eq!(c.poll_timeout(), Some(7 * SECOND));
        c.handle_timeout(7 * SECOND);
        assert!(c.is_closed());
    }

    #[test]
    fn a_content_length_is_digits_and_nothing_else() {
        // Found by fuzz/fuzz_targets/http1_conn.rs: `Content-Length: +1` was
        // read as 1 (Rust's u64 parser takes a sign), and a length followed
        // by a Unicode space (U+3000) was trimmed and read too.
        for value in [&b"+1"[..], b"1\xe3\x80\x80", b"1 1", b"0x1", b""] {
            let mut head = b"POST /call/X::y HTTP/1.1\r\nContent-Length: ".to_vec();
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n\r\n{");
            let mut c = HttpConn::new(0, Limits::default());
            c.handle_data(0, &head);
            let e = events(&mut c);
            assert!(
                matches!(&e[..], [HttpEvent::Malformed { reason, .. }] if reason.contains("Content-Length")),
                "{value:?}: {e:?}"
            );
        }
        let mut c = HttpConn::new(0, Limits::default());
        c.handle_data(
            0,
            b"POST /call/X::y HTTP/1.1\r\nContent-Length: \t01 \r\n\r\n{",
        );
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [HttpEvent::Request(r)] if r.body == b"{"),
            "{e:?}"
        );
    }

    #[test]
    fn chunked_bodies_and_bad_lengths_are_malformed() {
        for head in [
            &b"POST /call/X::y HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"POST /call/X::y HTTP/1.1\r\nContent-Length: ten\r\n\r\n",
            b"POST /call/X::y HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            b"NOT HTTP\r\n\r\n",
            b"GET / HTTP/2.0\r\n\r\n",
        ] {
            let mut c = HttpConn::new(0, Limits::default());
            c.handle_data(0, head);
            assert!(
                matches!(&events(&mut c)[..], [HttpEvent::Malformed { .. }]),
                "{head:?}"
            );
        }
    }
}
