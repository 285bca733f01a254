//! HTTP/1.1's client side, as a sans-I/O reader: the response to one
//! request, and the request itself.
//!
//! [`ResponseReader`] is fed a server's bytes ([`handle_data`], then
//! [`handle_eof`] when the connection ends) and yields the [`Response`] once
//! it is whole: its status line, its headers, and its body framed as RFC 9112
//! § 6.3 says for a response — none after a `HEAD` request, a 1xx, a 204 or
//! a 304 (and a 2xx to `CONNECT`); `chunked` when it is the last transfer
//! coding; `Content-Length` bytes; otherwise everything until the
//! connection ends. Interim responses (1xx but 101) are read and passed
//! over; a 101 is final, and what follows it is the new protocol's
//! ([`take_rest`]). [`Limits`] bound the head and the body, and a
//! [`ResponseError`] says what was wrong and at which byte of the
//! response.
//!
//! [`write_request`] writes the request limen's clients send (the CLI, the
//! recorder, the conformance checker): one request to a connection,
//! `Connection: close`.
//!
//! The reader is stricter than RFC 9112 requires where a checker should be:
//! a `Content-Length` is `1*DIGIT` and appears once, a response with both
//! `Transfer-Encoding` and `Content-Length` is refused (§ 6.3 item 3 says
//! such a message "ought to be handled as an error"), and chunk lines end in
//! CRLF. The server side ([`super::HttpConn`]) shares its `Content-Length`
//! rule.
//!
//! [`handle_data`]: ResponseReader::handle_data
//! [`handle_eof`]: ResponseReader::handle_eof
//! [`take_rest`]: ResponseReader::take_rest

use std::fmt;

use super::content_length;

/// The bounds of one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest head, in bytes: the status line and the headers, with
    /// the heads of interim responses before it and the empty lines before
    /// each; the trailers of a chunked body are held to it too.
    pub max_head: usize,
    /// The most headers a head (or a trailer section) may carry.
    pub max_headers: usize,
    /// The largest body, in bytes, however it is framed.
    pub max_body: usize,
}

impl Default for Limits {
    /// A 64 KiB head (the server's own limit), 100 headers, a 64 MiB body:
    /// far above what limen writes (a description, an outcome), and a bound
    /// all the same.
    fn default() -> Limits {
        Limits {
            max_head: 65_536,
            max_headers: 100,
            max_body: 64 << 20,
        }
    }
}

/// A response read whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The minor version of its status line: 1 for `HTTP/1.1`, 0 for
    /// `HTTP/1.0`.
    pub version: u8,
    /// The status code.
    pub status: u16,
    /// The reason phrase, as sent (it may be empty).
    pub reason: String,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, its framing removed (chunks joined).
    pub body: Vec<u8>,
    /// The trailer section of a chunked body, in order; empty otherwise.
    pub trailers: Vec<(String, Vec<u8>)>,
}

impl Response {
    /// The first header named `name` (compared without regard to case).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// What kind of fault a [`ResponseError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The status line or a header does not parse.
    Head,
    /// The head is over [`Limits::max_head`].
    HeadTooLarge,
    /// The head has more than [`Limits::max_headers`] headers.
    TooManyHeaders,
    /// The body's framing is invalid: a `Content-Length` that is not one
    /// number, or one beside `Transfer-Encoding` (RFC 9112 § 6.3: an
    /// unrecoverable error).
    Framing,
    /// A chunk of a chunked body is malformed.
    Chunk,
    /// The body is over [`Limits::max_body`].
    BodyTooLarge,
    /// The connection ended before the response was whole.
    Cut,
}

/// Why a response cannot be read, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseError {
    /// The kind of fault.
    pub kind: ErrorKind,
    /// The byte of the response (counted from the first byte the reader
    /// was fed) where the faulty part begins: the head's first byte for a
    /// head that does not parse, the chunk line's for a chunk.
    pub offset: u64,
    /// What was wrong, in words.
    pub reason: String,
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at byte {} of the response)",
            self.reason, self.offset
        )
    }
}

impl std::error::Error for ResponseError {}

/// How the body is framed, and how much of it is still to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    /// `remaining` bytes of a `Content-Length` body.
    Length { remaining: u64, length: u64 },
    /// Everything until the connection ends.
    UntilEof,
    /// A chunk-size line.
    ChunkSize,
    /// `remaining` bytes of a chunk's data.
    ChunkData { remaining: u64 },
    /// The CRLF after a chunk's data.
    ChunkEnd,
    /// The trailer section after the last chunk.
    Trailers,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Reading a head (interim or final).
    Head,
    /// Reading the final response's body.
    Body(Body),
    /// The response is whole; what follows is kept as the rest.
    Done,
    /// The bytes are not a response this reader takes.
    Failed(ResponseError),
}

/// The reader of one response. See the module documentation.
#[derive(Debug)]
pub struct ResponseReader {
    limits: Limits,
    /// The request was `HEAD`: the response has no body whatever it says.
    head_request: bool,
    /// The request was `CONNECT`: a 2xx is a tunnel, no body.
    connect_request: bool,
    state: State,
    /// Bytes fed and not yet consumed start at `start`; the ones before it
    /// are dropped at the end of each call, so a body of many chunks fed
    /// whole is not copied once a chunk.
    buf: Vec<u8>,
    start: usize,
    /// The response's byte offset of `buf[0]`.
    base: u64,
    /// Where the search for a line end in `buf` resumes: a head or a line
    /// trickled a byte at a time is scanned once, not once a byte.
    scanned: usize,
    /// Head bytes already counted against `max_head`: interim heads and
    /// the empty lines before the current head.
    head_used: usize,
    /// The final response, once its head is read.
    response: Option<Response>,
    /// The response, once whole, until it is polled.
    whole: Option<Response>,
    /// Bytes past the end of the response.
    rest: Vec<u8>,
    /// Bytes handed to `httparse` so far, so a test can hold the work of
    /// reading a head to a multiple of its length.
    #[cfg(test)]
    parsed: usize,
}

impl ResponseReader {
    /// A reader of the response to a `method` request.
    pub fn new(method: &str, limits: Limits) -> ResponseReader {
        ResponseReader {
            limits,
            head_request: method.eq_ignore_ascii_case("HEAD"),
            connect_request: method.eq_ignore_ascii_case("CONNECT"),
            state: State::Head,
            buf: Vec::new(),
            start: 0,
            base: 0,
            scanned: 0,
            head_used: 0,
            response: None,
            whole: None,
            rest: Vec::new(),
            #[cfg(test)]
            parsed: 0,
        }
    }

    /// Bytes the server wrote. An error is final: every later call returns
    /// it again.
    pub fn handle_data(&mut self, data: &[u8]) -> Result<(), ResponseError> {
        match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Done => {
                self.rest.extend_from_slice(data);
                return Ok(());
            }
            State::Head | State::Body(_) => {}
        }
        self.buf.extend_from_slice(data);
        let result = self.advance();
        // Drop what was consumed, once a call.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.scanned -= self.start.min(self.scanned);
            self.start = 0;
        }
        result.map_err(|e| self.fail(e))
    }

    /// The server ended the connection: a body read until the end is
    /// whole; anything else not yet whole is cut off.
    pub fn handle_eof(&mut self) -> Result<(), ResponseError> {
        let at = self.base + self.buf.len() as u64;
        let cut = |reason: String| ResponseError {
            kind: ErrorKind::Cut,
            offset: at,
            reason,
        };
        let e = match &self.state {
            State::Failed(e) => return Err(e.clone()),
            State::Done => return Ok(()),
            State::Body(Body::UntilEof) => {
                self.finish();
                return Ok(());
            }
            State::Head if self.head_used == 0 && self.start == self.buf.len() => {
                cut("the connection ended before a response".into())
            }
            State::Head => cut("the connection ended inside the response's head".into()),
            State::Body(Body::Length { remaining, length }) => cut(format!(
                "the connection ended {remaining} bytes before the end of the body (Content-Length {length})"
            )),
            State::Body(_) => cut("the connection ended inside the chunked body".into()),
        };
        Err(self.fail(e))
    }

    /// The response, once whole (taken: `None` after).
    pub fn poll_response(&mut self) -> Option<Response> {
        self.whole.take()
    }

    /// The final response's head once it is read, before its body is
    /// whole (the body holds what has come so far), until the response is
    /// polled: a WebSocket client refuses an upgrade answered other than
    /// 101 at its head, without waiting for a body that may run to the end
    /// of the connection.
    pub fn head(&self) -> Option<&Response> {
        self.response.as_ref().or(self.whole.as_ref())
    }

    /// Whether the response has been read whole.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The bytes past the end of the response, taken: a next response, or
    /// after a 101 the new protocol's first bytes.
    pub fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.rest)
    }

    fn fail(&mut self, e: ResponseError) -> ResponseError {
        self.state = State::Failed(e.clone());
        self.buf = Vec::new();
        self.start = 0;
        self.response = None;
        e
    }

    fn error(&self, kind: ErrorKind, at: usize, reason: impl Into<String>) -> ResponseError {
        ResponseError {
            kind,
            offset: self.base + at as u64,
            reason: reason.into(),
        }
    }

    /// Reads as far as the bytes in `buf` go.
    fn advance(&mut self) -> Result<(), ResponseError> {
        loop {
            let progressed = match self.state.clone() {
                State::Head => self.read_head()?,
                State::Body(body) => self.read_body(body)?,
                State::Done => {
                    self.rest.extend_from_slice(&self.buf[self.start..]);
                    self.start = self.buf.len();
                    return Ok(());
                }
                State::Failed(e) => return Err(e),
            };
            if !progressed {
                return Ok(());
            }
        }
    }

    /// The position of the last line end among the bytes not yet scanned,
    /// from `from`; marks them scanned.
    /// The position of the last line end among the bytes not yet scanned
    /// of `buf[from..]`, within its first `room` bytes: what lies past the
    /// limit is never read as part of a head, so a head is refused for its
    /// size however the reads split it.
    fn last_line_end(&mut self, from: usize, room: usize) -> Option<usize> {
        let end = self.buf.len().min(from + room);
        let scan = self.scanned.max(from).min(end);
        self.scanned = end;
        self.buf[scan..end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|i| scan + i)
    }

    /// Whether more than `room` bytes are held from `from`: a head (or a
    /// line) not complete within them is over its limit.
    fn over(&self, from: usize, room: usize) -> bool {
        self.buf.len() - from >= room
    }

    fn head_over(&self) -> ResponseError {
        self.error(
            ErrorKind::HeadTooLarge,
            self.start,
            format!("the response head is over {} bytes", self.limits.max_head),
        )
    }

    /// Reads a head; true when one was read (or empty lines passed over).
    fn read_head(&mut self) -> Result<bool, ResponseError> {
        // Empty lines before a status line are passed over as they come
        // (counted against the head's limit), so however many come none is
        // parsed again; a CR that may begin one waits.
        let mut skipped = 0;
        loop {
            let n = match &self.buf[self.start..] {
                [b'\n', ..] => 1,
                [b'\r', b'\n', ..] => 2,
                _ => break,
            };
            skipped += n;
            self.start += n;
            self.head_used += n;
            // Refused at the line that passes the limit, wherever the
            // reads split.
            if self.head_used > self.limits.max_head {
                return Err(self.head_over());
            }
        }
        if self.buf[self.start..] == b"\r"[..] || self.start == self.buf.len() {
            return Ok(skipped > 0);
        }
        // The head may take this many bytes more, and one to tell it is
        // over.
        let room = self.limits.max_head - self.head_used + 1;
        // Parse through the last complete line, and only when new bytes
        // brought a line end: parsing the whole head on every read would be
        // quadratic in a head trickled a byte at a time.
        let Some(last) = self.last_line_end(self.start, room) else {
            if self.over(self.start, room) {
                return Err(self.head_over());
            }
            return Ok(skipped > 0);
        };
        #[cfg(test)]
        {
            self.parsed += last + 1 - self.start;
        }
        let lines = &self.buf[self.start..=last];
        let mut headers = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        let mut parsed = httparse::Response::new(&mut headers);
        let n = match parsed.parse(lines) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if self.over(self.start, room) {
                    return Err(self.head_over());
                }
                return Ok(skipped > 0);
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(self.error(
                    ErrorKind::TooManyHeaders,
                    self.start,
                    format!(
                        "the response has more than {} headers",
                        self.limits.max_headers
                    ),
                ))
            }
            Err(e) => {
                return Err(self.error(
                    ErrorKind::Head,
                    self.start,
                    format!("not an HTTP/1.1 response: {e}"),
                ))
            }
        };
        if self.head_used + n > self.limits.max_head {
            return Err(self.head_over());
        }
        let response = Response {
            version: parsed.version.unwrap_or(1),
            status: parsed.code.unwrap_or_default(),
            reason: parsed.reason.unwrap_or_default().to_owned(),
            headers: parsed
                .headers
                .iter()
                .map(|h| (h.name.to_owned(), h.value.to_vec()))
                .collect(),
            body: Vec::new(),
            trailers: Vec::new(),
        };
        // RFC 9110 § 15: a status code is 100 to 599 (`httparse` takes any
        // three digits; found by fuzz/fuzz_targets/http1_client.rs, where
        // `010` read as an interim response).
        if !(100..600).contains(&response.status) {
            return Err(self.error(
                ErrorKind::Head,
                self.start,
                format!("the status code {:03} is not 100 to 599", response.status),
            ));
        }
        let head_at = self.start;
        self.start += n;
        self.scanned = self.start;
        if (100..200).contains(&response.status) && response.status != 101 {
            // An interim response: its head counts, the final one follows.
            self.head_used += n;
            return Ok(true);
        }
        let body = self.framing(&response, head_at)?;
        self.response = Some(response);
        match body {
            None => self.finish(),
            Some(body) => self.state = State::Body(body),
        }
        Ok(true)
    }

    /// How the final response's body is framed (RFC 9112 § 6.3); `None`
    /// when it has none.
    fn framing(&self, r: &Response, head_at: usize) -> Result<Option<Body>, ResponseError> {
        let bodiless = self.head_request
            || r.status == 101
            || r.status == 204
            || r.status == 304
            || (self.connect_request && (200..300).contains(&r.status));
        if bodiless {
            return Ok(None);
        }
        let framing = |reason: String| self.error(ErrorKind::Framing, head_at, reason);
        let lengths: Vec<&[u8]> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.as_slice())
            .collect();
        let encoded = r.header("transfer-encoding").is_some();
        let codings: Vec<String> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
            .flat_map(|(_, v)| {
                String::from_utf8_lossy(v)
                    .split(',')
                    .map(|c| c.trim_matches([' ', '\t']).to_ascii_lowercase())
                    .collect::<Vec<_>>()
            })
            .filter(|c| !c.is_empty())
            .collect();
        if encoded && codings.is_empty() {
            return Err(framing("the Transfer-Encoding names no coding".into()));
        }
        if encoded {
            if !lengths.is_empty() {
                return Err(framing(
                    "the response has both Transfer-Encoding and Content-Length".into(),
                ));
            }
            // Chunked only as the last coding frames the body; any other
            // last coding runs to the end of the connection.
            return Ok(Some(
                if codings.last().map(String::as_str) == Some("chunked") {
                    Body::ChunkSize
                } else {
                    Body::UntilEof
                },
            ));
        }
        match lengths[..] {
            [] => Ok(Some(Body::UntilEof)),
            [value] => {
                let Some(length) = content_length(value) else {
                    return Err(framing(format!(
                        "the Content-Length `{}` is not a number",
                        String::from_utf8_lossy(value)
                    )));
                };
                if length > self.limits.max_body as u64 {
                    return Err(self.error(
                        ErrorKind::BodyTooLarge,
                        head_at,
                        format!(
                            "the body's Content-Length {length} is over {} bytes",
                            self.limits.max_body
                        ),
                    ));
                }
                Ok(Some(Body::Length {
                    remaining: length,
                    length,
                }))
            }
            _ => Err(framing(
                "the response has two Content-Length headers".into(),
            )),
        }
    }

    /// Reads body bytes; true when a state was left.
    fn read_body(&mut self, body: Body) -> Result<bool, ResponseError> {
        let avail = self.buf.len() - self.start;
        match body {
            Body::Length { remaining, length } => {
                let take = avail.min(usize::try_from(remaining).unwrap_or(usize::MAX));
                self.take(take);
                let remaining = remaining - take as u64;
                if remaining == 0 {
                    self.finish();
                    return Ok(true);
                }
                self.state = State::Body(Body::Length { remaining, length });
                Ok(false)
            }
            Body::UntilEof => {
                if self.body_len() + avail > self.limits.max_body {
                    // At the first byte over, wherever the reads split.
                    let room = self.limits.max_body - self.body_len();
                    return Err(self.body_over(self.start + room));
                }
                self.take(avail);
                Ok(false)
            }
            Body::ChunkSize => {
                let room = self.limits.max_head + 1;
                let Some(end) = self.line_end(room) else {
                    if self.over(self.start, room) {
                        return Err(self.error(
                            ErrorKind::Chunk,
                            self.start,
                            format!("a chunk-size line is over {} bytes", self.limits.max_head),
                        ));
                    }
                    return Ok(false);
                };
                let line_at = self.start;
                let size = self.chunk_size(line_at, end)?;
                self.start = end + 1;
                self.scanned = self.start;
                if size == 0 {
                    self.state = State::Body(Body::Trailers);
                } else {
                    // Saturating: a size near 2^64 is over any limit, not
                    // an overflow (found by fuzz/fuzz_targets/http1_client.rs).
                    if (self.body_len() as u64).saturating_add(size) > self.limits.max_body as u64 {
                        return Err(self.body_over(line_at));
                    }
                    self.state = State::Body(Body::ChunkData { remaining: size });
                }
                Ok(true)
            }
            Body::ChunkData { remaining } => {
                let take = avail.min(usize::try_from(remaining).unwrap_or(usize::MAX));
                self.take(take);
                let remaining = remaining - take as u64;
                self.state = State::Body(if remaining == 0 {
                    Body::ChunkEnd
                } else {
                    Body::ChunkData { remaining }
                });
                Ok(remaining == 0)
            }
            Body::ChunkEnd => match &self.buf[self.start..] {
                [] | [b'\r'] => Ok(false),
                [b'\r', b'\n', ..] => {
                    self.start += 2;
                    self.scanned = self.start;
                    self.state = State::Body(Body::ChunkSize);
                    Ok(true)
                }
                _ => Err(self.error(
                    ErrorKind::Chunk,
                    self.start,
                    "a chunk's data is not followed by CRLF",
                )),
            },
            Body::Trailers => self.read_trailers(),
        }
    }

    /// The size of the chunk whose line is `buf[at..=end]`:
    /// `chunk-size [ chunk-ext ] CRLF` (RFC 9112 § 7.1), the extensions
    /// passed over.
    fn chunk_size(&self, at: usize, end: usize) -> Result<u64, ResponseError> {
        let bad = |why: &str| self.error(ErrorKind::Chunk, at, why.to_owned());
        let Some(line) = self.buf[at..end].strip_suffix(b"\r") else {
            return Err(bad("a chunk-size line does not end in CRLF"));
        };
        let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 {
            return Err(bad(
                "a chunk-size line does not begin with a hexadecimal size",
            ));
        }
        let ext = &line[digits..];
        let ext = &ext[ext.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..];
        if !ext.is_empty() && ext[0] != b';' {
            return Err(bad(
                "a chunk size is followed by something not an extension",
            ));
        }
        let hex = std::str::from_utf8(&line[..digits]).expect("hexadecimal digits are ASCII");
        u64::from_str_radix(hex, 16).map_err(|_| bad("a chunk size is over 2^64"))
    }

    /// The trailer section after the last chunk: header lines, then an
    /// empty line, which ends the response.
    fn read_trailers(&mut self) -> Result<bool, ResponseError> {
        match &self.buf[self.start..] {
            [] | [b'\r'] => return Ok(false),
            [b'\r', b'\n', ..] | [b'\n', ..] => {
                self.start += if self.buf[self.start] == b'\n' { 1 } else { 2 };
                self.finish();
                return Ok(true);
            }
            _ => {}
        }
        let room = self.limits.max_head + 1;
        let Some(last) = self.last_line_end(self.start, room) else {
            return self.trailers_within(room);
        };
        let mut headers = vec![httparse::EMPTY_HEADER; self.limits.max_headers];
        match httparse::parse_headers(&self.buf[self.start..=last], &mut headers) {
            Ok(httparse::Status::Complete((n, list))) => {
                if n > self.limits.max_head {
                    return Err(self.trailers_over());
                }
                let trailers = list
                    .iter()
                    .map(|h| (h.name.to_owned(), h.value.to_vec()))
                    .collect();
                if let Some(r) = &mut self.response {
                    r.trailers = trailers;
                }
                self.start += n;
                self.finish();
                Ok(true)
            }
            Ok(httparse::Status::Partial) => self.trailers_within(room),
            Err(httparse::Error::TooManyHeaders) => Err(self.error(
                ErrorKind::TooManyHeaders,
                self.start,
                format!(
                    "the trailer section has more than {} fields",
                    self.limits.max_headers
                ),
            )),
            Err(e) => Err(self.error(
                ErrorKind::Chunk,
                self.start,
                format!("the trailer section does not parse: {e}"),
            )),
        }
    }

    fn trailers_within(&self, room: usize) -> Result<bool, ResponseError> {
        if self.over(self.start, room) {
            return Err(self.trailers_over());
        }
        Ok(false)
    }

    fn trailers_over(&self) -> ResponseError {
        self.error(
            ErrorKind::HeadTooLarge,
            self.start,
            format!("the trailer section is over {} bytes", self.limits.max_head),
        )
    }

    /// The first line end among the bytes not consumed, within `room` of
    /// them, scanning each byte once.
    fn line_end(&mut self, room: usize) -> Option<usize> {
        let end = self.buf.len().min(self.start + room);
        let scan = self.scanned.max(self.start).min(end);
        match self.buf[scan..end].iter().position(|&b| b == b'\n') {
            Some(i) => Some(scan + i),
            None => {
                self.scanned = end;
                None
            }
        }
    }

    fn body_len(&self) -> usize {
        self.response.as_ref().map_or(0, |r| r.body.len())
    }

    fn body_over(&self, at: usize) -> ResponseError {
        self.error(
            ErrorKind::BodyTooLarge,
            at,
            format!("the body is over {} bytes", self.limits.max_body),
        )
    }

    /// Moves `n` bytes from the buffer to the body.
    fn take(&mut self, n: usize) {
        if let Some(r) = &mut self.response {
            r.body
                .extend_from_slice(&self.buf[self.start..self.start + n]);
        }
        self.start += n;
    }

    fn finish(&mut self) {
        self.state = State::Done;
        self.whole = self.response.take();
    }
}

/// Reads the response to a `method` request held whole in `raw`, from its
/// first byte: `Ok(None)` while it is not whole, unless `eof` says no more
/// will come. For a caller that keeps the bytes and reads them again as
/// more arrive (the conformance runner's replies).
pub fn read_response(
    method: &str,
    raw: &[u8],
    eof: bool,
    limits: Limits,
) -> Result<Option<Response>, ResponseError> {
    let mut reader = ResponseReader::new(method, limits);
    reader.handle_data(raw)?;
    if eof {
        reader.handle_eof()?;
    }
    Ok(reader.poll_response())
}

/// The bytes of one request of limen's clients: the request line, the
/// `headers` in the order given (the caller's `Host` among them), a
/// `Content-Length` when there is a `body` (`Some`, even empty), then
/// `Connection: close` — every client here sends one request to a
/// connection — and the body. Refused, naming the part, when a part would
/// change the request's framing: a CR or LF in the method, the target or a
/// header, a header name that is empty or holds a colon.
pub fn write_request(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let breaks = |s: &str| s.contains(['\r', '\n']);
    if method.is_empty() || breaks(method) || method.contains(' ') {
        return Err(format!(
            "the method `{method}` is not one a request can carry"
        ));
    }
    if target.is_empty() || breaks(target) {
        return Err(format!(
            "the target `{target}` is not one a request can carry"
        ));
    }
    let mut out = Vec::with_capacity(128 + body.map_or(0, <[u8]>::len));
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        if name.is_empty() || breaks(name) || name.contains(':') || breaks(value) {
            return Err(format!("`{name}` is not a header a request can carry"));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(body) = body {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `HttpConn` writes (its own test holds these bytes).
    const LIMEN: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"order\":41}";

    /// Python's `http.server` (`python3 -m http.server`, answering
    /// `curl -v http://127.0.0.1:8000/x`): HTTP/1.0, no length, the body
    /// runs to the close.
    const PYTHON: &[u8] = b"HTTP/1.0 404 File not found\r\nServer: SimpleHTTP/0.6 Python/3.12.3\r\nDate: Sat, 05 Dec 2026 02:00:00 GMT\r\nConnection: close\r\nContent-Type: text/html;charset=utf-8\r\n\r\n<html>not found</html>\n";

    /// A chunked body in RFC 9112 § 7.1's form, with an extension and a
    /// trailer field (as nginx or hyper stream a body of unknown length).
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n7\r\nMozilla\r\n9;name=value\r\nDeveloper\r\n7 ; x\r\nNetwork\r\n0\r\nExpires: never\r\n\r\n";

    /// Reads `raw` fed whole and fed a byte at a time, then the end of the
    /// connection; both must agree.
    fn read(method: &str, raw: &[u8], limits: Limits) -> Result<Response, ResponseError> {
        let run = |pieces: &mut dyn Iterator<Item = &[u8]>| {
            let mut r = ResponseReader::new(method, limits);
            for p in pieces {
                r.handle_data(p)?;
            }
            r.handle_eof()?;
            Ok(r.poll_response().expect("whole after the end"))
        };
        let whole = run(&mut std::iter::once(raw));
        let split = run(&mut raw.chunks(1));
        assert_eq!(whole, split, "whole and byte by byte differ");
        whole
    }

    #[test]
    fn a_content_length_body_is_cut_at_its_length() {
        let r = read("POST", LIMEN, Limits::default()).unwrap();
        assert_eq!((r.version, r.status, r.reason.as_str()), (1, 200, "OK"));
        assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
        assert_eq!(r.body, b"{\"order\":41}");
        // Whole before the end of the connection; what follows is the rest.
        let mut reader = ResponseReader::new("POST", Limits::default());
        reader.handle_data(LIMEN).unwrap();
        reader.handle_data(b"HTTP/1.1").unwrap();
        assert!(reader.is_done());
        assert_eq!(reader.poll_response().unwrap().body, b"{\"order\":41}");
        assert_eq!(reader.take_rest(), b"HTTP/1.1");
    }

    #[test]
    fn a_body_without_length_runs_to_the_close() {
        let r = read("GET", PYTHON, Limits::default()).unwrap();
        assert_eq!((r.version, r.status), (0, 404));
        assert_eq!(r.reason, "File not found");
        assert_eq!(r.body, b"<html>not found</html>\n");
        assert_eq!(
            read_response("GET", PYTHON, false, Limits::default()),
            Ok(None)
        );
    }

    #[test]
    fn a_chunked_body_is_joined_and_its_trailers_kept() {
        let r = read("GET", CHUNKED, Limits::default()).unwrap();
        assert_eq!(r.body, b"MozillaDeveloperNetwork");
        assert_eq!(r.trailers, [("Expires".to_owned(), b"never".to_vec())]);
        // Whole at the last chunk's empty line, without the close.
        let open = read_response("GET", CHUNKED, false, Limits::default()).unwrap();
        assert_eq!(open, Some(r));
        let bare =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n";
        assert_eq!(read("GET", bare, Limits::default()).unwrap().body, b"ab");
        // A coding after chunked frames nothing: the body runs to the close.
        let last =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nab\r\n0\r\n\r\n";
        assert_eq!(
            read("GET", last, Limits::default()).unwrap().body,
            b"2\r\nab\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn head_1xx_204_and_304_have_no_body() {
        let r = read("HEAD", LIMEN, Limits::default()).unwrap();
        assert!(r.body.is_empty());
        for status in ["204 No Content", "304 Not Modified"] {
            let raw = format!("HTTP/1.1 {status}\r\nContent-Length: 5\r\n\r\n");
            let mut reader = ResponseReader::new("GET", Limits::default());
            reader.handle_data(raw.as_bytes()).unwrap();
            assert!(reader.is_done(), "{status}");
        }
        // Interim responses are passed over; a 101 is final, and what
        // follows it is the new protocol's.
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}";
        let r = read("POST", raw, Limits::default()).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (201, &b"{}"[..]));
        let mut reader = ResponseReader::new("GET", Limits::default());
        reader
            .handle_data(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi",
            )
            .unwrap();
        assert_eq!(reader.poll_response().unwrap().status, 101);
        assert_eq!(reader.take_rest(), b"\x81\x02hi");
        let raw = b"HTTP/1.1 200 Connection established\r\n\r\ntunnel";
        let mut reader = ResponseReader::new("CONNECT", Limits::default());
        reader.handle_data(raw).unwrap();
        assert!(reader.is_done());
    }

    #[test]
    fn empty_lines_before_the_status_line_are_passed_over_and_counted() {
        let mut raw = b"\r\n\n".to_vec();
        raw.extend_from_slice(LIMEN);
        assert_eq!(read("POST", &raw, Limits::default()).unwrap().status, 200);
        let many = [vec![b'\n'; 65_537], LIMEN.to_vec()].concat();
        let e = read("POST", &many, Limits::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::HeadTooLarge);
    }

    #[test]
    fn framing_errors_name_what_and_where() {
        let cases: [(&[u8], ErrorKind, &str, u64); 9] = [
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                ErrorKind::Framing,
                "two Content-Length",
                0,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
                ErrorKind::Framing,
                "`+1` is not a number",
                0,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                ErrorKind::Framing,
                "both",
                0,
            ),
            (
                b"HTTP/1.1 010 Early\r\n\r\n",
                ErrorKind::Head,
                "010 is not 100 to 599",
                0,
            ),
            (
                b"\r\nHTTP/9 200 OK\r\n\r\n",
                ErrorKind::Head,
                "not an HTTP/1.1 response",
                2,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                ErrorKind::Chunk,
                "hexadecimal",
                47,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
                ErrorKind::Chunk,
                "not followed by CRLF",
                51,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\nab",
                ErrorKind::Chunk,
                "CRLF",
                47,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
                ErrorKind::Cut,
                "3 bytes before the end",
                40,
            ),
        ];
        for (raw, kind, words, offset) in cases {
            let e = read("GET", raw, Limits::default()).unwrap_err();
            assert_eq!((e.kind, e.offset), (kind, offset), "{e}");
            assert!(e.reason.contains(words), "{e}");
            assert!(e.to_string().contains(&format!("at byte {offset}")));
        }
        let e = read("GET", b"", Limits::default()).unwrap_err();
        assert_eq!(e.reason, "the connection ended before a response");
        let e = read("GET", b"HTTP/1.1 200 OK\r\n", Limits::default()).unwrap_err();
        assert!(e.reason.contains("inside the response's head"), "{e}");
        // An error is final.
        let mut r = ResponseReader::new("GET", Limits::default());
        let first = r.handle_data(b"NOT HTTP\r\n").unwrap_err();
        assert_eq!(r.handle_data(LIMEN), Err(first.clone()));
        assert_eq!(r.handle_eof(), Err(first));
    }

    #[test]
    fn the_limits_hold_however_the_body_is_framed() {
        let small = Limits {
            max_head: 64,
            max_headers: 2,
            max_body: 4,
        };
        let over = |raw: &[u8]| read("GET", raw, small).unwrap_err().kind;
        assert_eq!(
            over(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n12345"),
            ErrorKind::BodyTooLarge
        );
        assert_eq!(
            over(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
            ErrorKind::BodyTooLarge
        );
        assert_eq!(
            over(b"HTTP/1.1 200 OK\r\n\r\n12345"),
            ErrorKind::BodyTooLarge
        );
        assert_eq!(
            over(b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
            ErrorKind::TooManyHeaders
        );
        let long = [&b"HTTP/1.1 200 OK\r\nX: "[..], &[b'a'; 60], b"\r\n\r\n"].concat();
        assert_eq!(over(&long), ErrorKind::HeadTooLarge);
        // A long line before too many headers: over the head's size, read
        // whole or split (what lies past the limit is never parsed).
        let both = [
            &b"HTTP/1.1 200 OK\r\nA: 1\r\nX: "[..],
            &[b'a'; 120],
            b"\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
        ]
        .concat();
        assert_eq!(over(&both), ErrorKind::HeadTooLarge);
        let chunk_line = [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;"[..],
            &[b'x'; 80],
            b"\r\na\r\n0\r\n\r\n",
        ]
        .concat();
        assert_eq!(over(&chunk_line), ErrorKind::Chunk);
        let huge =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nffffffffffffffff\r\n";
        assert_eq!(over(huge), ErrorKind::BodyTooLarge);
        // A head that never ends is refused once past the limit, not held.
        let mut r = ResponseReader::new("GET", small);
        let e = r.handle_data(&[b'a'; 65]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::HeadTooLarge);
        assert_eq!(
            read(
                "GET",
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd",
                small
            )
            .unwrap()
            .body,
            b"abcd"
        );
    }

    #[test]
    fn a_head_trickled_a_byte_at_a_time_reads_in_linear_time() {
        // 64 KiB of one header line, fed a byte at a time: scanned once.
        let raw = [
            &b"HTTP/1.1 200 OK\r\nX-Long: "[..],
            &vec![b'a'; 65_000],
            b"\r\nContent-Length: 2\r\n\r\n{}",
        ]
        .concat();
        let mut r = ResponseReader::new("GET", Limits::default());
        for b in &raw {
            r.handle_data(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!(r.poll_response().unwrap().body, b"{}");
        assert!(r.parsed <= 4 * raw.len(), "{} bytes parsed", r.parsed);
    }

    #[test]
    fn the_head_is_seen_before_the_body_and_a_101_leaves_the_rest() {
        let mut r = ResponseReader::new("GET", Limits::default());
        r.handle_data(b"HTTP/1.1 401 No\r\nContent-Length: 5\r\n\r\nab")
            .unwrap();
        assert_eq!(r.head().map(|h| h.status), Some(401));
        assert_eq!(r.head().map(|h| h.body.clone()), Some(b"ab".to_vec()));
        assert!(!r.is_done());

        let mut r = ResponseReader::new("GET", Limits::default());
        assert!(r.head().is_none());
        r.handle_data(b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r")
            .unwrap();
        assert!(r.head().is_none());
        r.handle_data(b"\n\r\n\x81\x02hi").unwrap();
        assert_eq!(r.head().map(|h| h.status), Some(101));
        assert!(r.is_done());
        assert_eq!(r.take_rest(), b"\x81\x02hi");
        assert_eq!(r.poll_response().map(|h| h.status), Some(101));
        assert!(r.head().is_none());
    }

    #[test]
    fn requests_are_written_with_their_length_and_close() {
        let bytes = write_request(
            "POST",
            "/call/Orders::place",
            &[("Host", "h:1"), ("Authorization", "Bearer t-alice")],
            Some(b"{\"qty\":10}"),
        )
        .unwrap();
        assert_eq!(
            bytes,
            b"POST /call/Orders::place HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer t-alice\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{\"qty\":10}"
        );
        assert_eq!(
            write_request("GET", "/.description", &[], None).unwrap(),
            b"GET /.description HTTP/1.1\r\nConnection: close\r\n\r\n"
        );
        for (name, value) in [("X\r\nY", "1"), ("X:", "1"), ("", "1"), ("X", "1\r\nY: 2")] {
            let e = write_request("GET", "/", &[(name, value)], None).unwrap_err();
            assert!(e.contains("not a header"), "{e}");
        }
        assert!(write_request("GET", "/\r\n", &[], None).is_err());
        assert!(write_request("GE T", "/", &[], None).is_err());
    }
}
