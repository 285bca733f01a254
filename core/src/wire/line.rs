//! Unix JSON lines (§ The Unix transport), as a sans-I/O machine.
//!
//! One JSON object per line, a line of at most 60000 bytes:
//! `{"call": "Orders::cancel", "payload": {…}, "id": …, "digest": "…"}` or
//! `{"describe": true}`. Many requests may be in flight on a connection;
//! replies are written in the order the program produces them, and carry
//! the client's `id` verbatim. A line that is not a JSON object is answered
//! malformed with `request_id` 0 and the connection closed; an object that
//! is neither a call nor a describe, or a call without a payload, is
//! refused malformed and the connection stays open. An EOF ends the
//! connection: what is already queued is still written, the requests still
//! with the exposure are lost. A reader that takes nothing for 5 seconds
//! ends it too.

use std::collections::VecDeque;

use crate::json::plain::{Plain, PLAIN_DEPTH};
use crate::json::{DuplicateKeys, Event, Tokenizer};
use crate::wire::machine::Machine;
use crate::{Timestamp, SECOND};

/// The limits of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line, in bytes, without its newline.
    pub max_line: usize,
    /// How long queued output may wait for the peer to read any of it.
    pub stalled_write: Timestamp,
    /// Past this many bytes of unwritten replies, no more input is read
    /// until the peer reads (backpressure on a client that never reads).
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_line: 60_000,
            stalled_write: 5 * SECOND,
            max_output: 1 << 20,
        }
    }
}

/// A line read off the connection, framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineRequest {
    /// `{"call": …, "payload": …}`.
    Call {
        /// The member.
        member: String,
        /// The payload's JSON text, as sent.
        payload: Vec<u8>,
        /// The client's id as raw JSON text.
        id: Option<String>,
        /// The digest, if sent.
        digest: Option<String>,
    },
    /// `{"describe": true}`.
    Describe {
        /// The client's id as raw JSON text.
        id: Option<String>,
    },
    /// An object that is neither a call nor a describe: refused malformed,
    /// the connection kept.
    Malformed {
        /// Why.
        reason: String,
        /// The client's id, when one could be read.
        id: Option<String>,
    },
}

/// What the connection asks of its transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineEvent {
    /// A request line.
    Request(LineRequest),
    /// A line that is not a JSON object (or one over the line limit): the
    /// transport answers it (Hale's front writes a malformed refusal with
    /// request_id 0) with [`LineConn::send_line`]; no more input is read,
    /// and the connection closes once that answer is written. [`Lost`]
    /// follows.
    ///
    /// [`Lost`]: LineEvent::Lost
    Unreadable {
        /// Why the line is not a request.
        reason: String,
    },
    /// The peer is gone: its requests with the exposure are lost.
    Lost,
    /// The connection is done: close the socket.
    Close,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    /// No more input; close once the queued output is written.
    Draining,
    Closed,
}

/// One Unix JSON-lines connection. See the module documentation.
#[derive(Debug)]
pub struct LineConn {
    limits: Limits,
    state: State,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    /// Bytes moved to the front of `buf` so far, so a test can hold the
    /// work of framing to a multiple of what was read.
    #[cfg(test)]
    moved: usize,
    out: Vec<u8>,
    out_pos: usize,
    last_progress: Timestamp,
    events: VecDeque<LineEvent>,
}

impl LineConn {
    /// A connection accepted at `now`.
    pub fn new(now: Timestamp, limits: Limits) -> LineConn {
        LineConn {
            limits,
            state: State::Open,
            buf: Vec::new(),
            scanned: 0,
            #[cfg(test)]
            moved: 0,
            out: Vec::new(),
            out_pos: 0,
            last_progress: now,
            events: VecDeque::new(),
        }
    }

    /// Queues one reply line (without its newline).
    pub fn send_line(&mut self, now: Timestamp, line: &[u8]) {
        self.send_line_with(now, |out| out.extend_from_slice(line));
    }

    /// Queues one reply line that `write` appends (without its newline)
    /// straight to the output, so a reply costs no buffer of its own.
    pub fn send_line_with(&mut self, now: Timestamp, write: impl FnOnce(&mut Vec<u8>)) {
        if self.state == State::Closed {
            return;
        }
        if self.pending_output().is_empty() {
            self.last_progress = now;
            self.out.clear();
            self.out_pos = 0;
        }
        write(&mut self.out);
        self.out.push(b'\n');
    }

    /// Ends the connection now, whatever is queued.
    pub fn abort(&mut self) {
        if self.state == State::Open {
            self.events.push_back(LineEvent::Lost);
        }
        self.close();
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<LineEvent> {
        if self.events.is_empty() {
            // An unreadable line's answer was queued (or the transport
            // chose none) while its events were taken: with nothing left to
            // write, the connection is done.
            self.maybe_close();
        }
        self.events.pop_front()
    }

    /// A line that is not a request: the transport answers it, then the
    /// connection ends (see [`LineEvent::Unreadable`]).
    fn refuse_line(&mut self, _now: Timestamp, reason: &str) {
        self.buf = Vec::new();
        self.events.push_back(LineEvent::Unreadable {
            reason: reason.to_owned(),
        });
        self.events.push_back(LineEvent::Lost);
        self.state = State::Draining;
    }

    fn maybe_close(&mut self) {
        if self.state == State::Draining && self.pending_output().is_empty() {
            self.close();
        }
    }

    fn close(&mut self) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.buf = Vec::new();
            self.events.push_back(LineEvent::Close);
        }
    }
}

impl Machine for LineConn {
    /// Whether the machine takes more input now (false while the peer does
    /// not read its replies, or once the connection is ending).
    fn wants_read(&self) -> bool {
        self.state == State::Open && self.pending_output().len() < self.limits.max_output
    }

    /// Bytes read from the socket at `now`.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        if self.state != State::Open {
            return;
        }
        self.buf.extend_from_slice(data);
        // Lines are framed in place and the framed bytes dropped once at the
        // end: dropping each line as it is framed would move the rest of
        // the buffer once a line, quadratic in a read of many short lines.
        let mut start = 0;
        while self.state == State::Open {
            let from = self.scanned.max(start);
            let Some(nl) = memchr::memchr(b'\n', &self.buf[from..]) else {
                self.scanned = self.buf.len();
                // A line may end in CRLF, and its CR may come in one read
                // and its LF in the next: a trailing CR is not yet counted.
                let unfinished =
                    self.buf.len() - start - usize::from(self.buf.last() == Some(&b'\r'));
                if unfinished > self.limits.max_line {
                    return self.refuse_line(
                        now,
                        &format!("the line is over {} bytes", self.limits.max_line),
                    );
                }
                break;
            };
            let end = from + nl;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.len() > self.limits.max_line {
                return self.refuse_line(
                    now,
                    &format!("the line is over {} bytes", self.limits.max_line),
                );
            }
            let blank = line.iter().all(|b| b.is_ascii_whitespace());
            let parsed = if blank { None } else { Some(parse_line(line)) };
            start = end + 1;
            match parsed {
                None => {}
                Some(Ok(request)) => self.events.push_back(LineEvent::Request(request)),
                Some(Err(reason)) => return self.refuse_line(now, &reason),
            }
        }
        #[cfg(test)]
        {
            self.moved += self.buf.len() - start;
        }
        self.buf.drain(..start);
        self.scanned = self.scanned.max(start) - start;
    }

    /// The peer closed its end (or the read failed) at `now`.
    fn handle_eof(&mut self, _now: Timestamp) {
        if self.state != State::Open {
            return;
        }
        self.buf = Vec::new();
        self.events.push_back(LineEvent::Lost);
        self.state = State::Draining;
        self.maybe_close();
    }

    /// Time passes: a reader that took nothing of its replies for the
    /// stalled-write limit ends its connection.
    fn handle_timeout(&mut self, now: Timestamp) {
        if self.poll_timeout().is_some_and(|t| now >= t) {
            self.abort();
        }
    }

    /// When [`handle_timeout`](LineConn::handle_timeout) next has work.
    fn poll_timeout(&self) -> Option<Timestamp> {
        (self.state != State::Closed && !self.pending_output().is_empty())
            .then(|| self.last_progress.saturating_add(self.limits.stalled_write))
    }

    /// The bytes still to write.
    fn pending_output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// `n` bytes of output were written at `now`.
    fn consume_output(&mut self, now: Timestamp, n: usize) {
        let n = n.min(self.out.len() - self.out_pos);
        if n > 0 {
            self.out_pos += n;
            self.last_progress = now;
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        self.maybe_close();
    }

    /// Whether the connection is done.
    fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
}

/// Reads one line. `Err` is a line that is not a JSON object (the
/// connection ends); an object that is not a request is
/// `Ok(LineRequest::Malformed)`.
pub fn parse_line(line: &[u8]) -> Result<LineRequest, String> {
    match fast_call(line) {
        Some(call) => Ok(call),
        None => parse_line_tokenized(line),
    }
}

/// A line that is exactly a call in plain JSON (§ The Unix transport's
/// `{"call", "payload", "id", "digest"}`, any order, each key once, no other
/// key), read in one pass; `None` for anything else, which
/// [`parse_line_tokenized`] reads and judges. Whatever it reads, it reads as
/// [`parse_line_tokenized`] does: the member and the digest as the strings'
/// text, the payload and the id as the bytes of their values.
fn fast_call(line: &[u8]) -> Option<LineRequest> {
    let mut p = Plain::new(line);
    p.ws();
    p.eat(b'{')?;
    p.ws();
    let (mut call, mut payload, mut id, mut digest) = (None, None, None, None);
    loop {
        let key = p.key()?;
        let start = p.pos();
        match key {
            b"call" if call.is_none() => call = Some(p.string()?),
            b"digest" if digest.is_none() => digest = Some(p.string()?),
            b"payload" if payload.is_none() => {
                p.skip_value(PLAIN_DEPTH)?;
                payload = Some(&line[start..p.pos()]);
            }
            b"id" if id.is_none() => {
                p.skip_value(PLAIN_DEPTH)?;
                id = Some(&line[start..p.pos()]);
            }
            _ => return None,
        }
        if !p.more_members()? {
            break;
        }
    }
    if !p.at_end() {
        return None;
    }
    Some(LineRequest::Call {
        member: call?.to_owned(),
        payload: payload?.to_vec(),
        // Plain JSON is ASCII, so the id's bytes are its text.
        id: match id {
            Some(id) => Some(String::from_utf8(id.to_vec()).ok()?),
            None => None,
        },
        digest: digest.map(str::to_owned),
    })
}

/// [`parse_line`]'s general reader, through the tokenizer: every line its
/// fast path does not take is read here, and every line it takes is read
/// here alike (the differential tests and the `line_conn` fuzz target hold
/// the two equal).
pub fn parse_line_tokenized(line: &[u8]) -> Result<LineRequest, String> {
    parse_line_keeping(line, []).map(|(request, [])| request)
}

/// [`parse_line_tokenized`], keeping in the same pass the values of the
/// keys `keep` names, which a request passes over: a WebSocket hub's frame
/// is one JSON object that names its `type` (a `call` frame is the line's
/// call with `"type": "call"`, § Rpcs on a hub) and a `subscribe` its
/// `topic`, so the hub reads a frame once. Each kept value is the key's
/// string, `None` when the key is absent or not a string; a repeated key
/// keeps its last value (as a JSON object read into a map does).
pub fn parse_line_keeping<const N: usize>(
    line: &[u8],
    keep: [&str; N],
) -> Result<(LineRequest, [Option<String>; N]), String> {
    let mut kept: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut t = Tokenizer::new(line);
    let not_object = |e: &dyn std::fmt::Display| format!("not a JSON object: {e}");
    match t.next_event() {
        Ok(Some(Event::BeginObject)) => {}
        Ok(_) => return Err("not a JSON object".into()),
        Err(e) => return Err(not_object(&e)),
    }
    let mut keys = DuplicateKeys::new();
    let mut call: Option<Result<String, ()>> = None;
    let mut payload: Option<(usize, usize)> = None;
    let mut id: Option<(usize, usize)> = None;
    let mut digest: Option<Result<String, ()>> = None;
    let mut describe: Option<bool> = None;
    let mut duplicate: Option<String> = None;
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::Key(k))) => k,
            Ok(Some(Event::EndObject)) => break,
            Ok(_) => return Err("not a JSON object".into()),
            Err(e) => return Err(not_object(&e)),
        };
        if !keys.insert(&key) && duplicate.is_none() {
            duplicate = Some(key.to_string());
        }
        let first = match t.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => return Err("not a JSON object".into()),
            Err(e) => return Err(not_object(&e)),
        };
        let start = t.event_offset();
        let end = t.skip_value(&first).map_err(|e| not_object(&e))?;
        match key.as_ref() {
            "call" => {
                call = Some(match first {
                    Event::String(s) => Ok(s.into_owned()),
                    _ => Err(()),
                })
            }
            "payload" => payload = Some((start, end)),
            "id" => id = Some((start, end)),
            "digest" => {
                digest = Some(match first {
                    Event::String(s) => Ok(s.into_owned()),
                    _ => Err(()),
                })
            }
            "describe" => describe = Some(first == Event::Bool(true)),
            // Other keys are passed over: a newer client may send more.
            other => {
                if let Some(i) = keep.iter().position(|k| *k == other) {
                    kept[i] = match first {
                        Event::String(s) => Some(s.into_owned()),
                        _ => None,
                    };
                }
            }
        }
    }
    t.finish().map_err(|e| not_object(&e))?;
    // The request the object is, judged once it is read whole.
    let request = (|| {
        let text = |(s, e): (usize, usize)| String::from_utf8_lossy(&line[s..e]).into_owned();
        let id = id.map(text);
        let malformed = |reason: &str| LineRequest::Malformed {
            reason: reason.to_owned(),
            id: id.clone(),
        };
        if let Some(key) = duplicate {
            return malformed(&format!("the key `{key}` is given twice"));
        }
        match (call, describe) {
            (Some(_), Some(_)) => malformed("a request is a call or a describe, not both"),
            (None, Some(true)) => LineRequest::Describe { id },
            (None, _) => malformed("the object is neither a call nor a describe"),
            (Some(Err(())), None) => malformed("`call` names a member as a string"),
            (Some(Ok(member)), None) => {
                let Some(payload) = payload else {
                    return malformed("a call carries a payload");
                };
                let digest = match digest {
                    None => None,
                    Some(Ok(d)) => Some(d),
                    Some(Err(())) => return malformed("`digest` is a string"),
                };
                LineRequest::Call {
                    member,
                    payload: line[payload.0..payload.1].to_vec(),
                    id,
                    digest,
                }
            }
        }
    })();
    Ok((request, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_key_is_read_in_the_same_pass_and_changes_nothing_of_the_request() {
        let frame = br#"{"type":"call","call":"A::b","payload":{"type":1},"id":7,"topic":2}"#;
        let (request, [kind, topic]) = parse_line_keeping(frame, ["type", "topic"]).unwrap();
        assert_eq!(request, parse_line_tokenized(frame).unwrap());
        assert_eq!(kind.as_deref(), Some("call"));
        // Not a string: as absent. The payload's own `type` is not the frame's.
        assert_eq!(topic, None);
        let (_, [topic]) = parse_line_keeping(
            br#"{"topic":"a","type":"subscribe","topic":"b"}"#,
            ["topic"],
        )
        .unwrap();
        assert_eq!(
            topic.as_deref(),
            Some("b"),
            "the last value of a repeated key"
        );
        assert!(parse_line_keeping(b"[1]", ["type"]).is_err());
    }

    fn events(c: &mut LineConn) -> Vec<LineEvent> {
        std::iter::from_fn(|| c.poll_event()).collect()
    }

    #[test]
    fn a_call_keeps_its_payload_and_id_as_sent() {
        let line = br#"{"call": "Orders::cancel", "payload": {"order": 41}, "id": "c-1", "digest": "fnv1a64:40381db6685c9f75"}"#;
        assert_eq!(
            parse_line(line).unwrap(),
            LineRequest::Call {
                member: "Orders::cancel".into(),
                payload: br#"{"order": 41}"#.to_vec(),
                id: Some("\"c-1\"".into()),
                digest: Some("fnv1a64:40381db6685c9f75".into()),
            }
        );
        assert_eq!(
            parse_line(br#"{"describe": true}"#).unwrap(),
            LineRequest::Describe { id: None }
        );
    }

    /// Lines near the usual call: the bases, and each with one byte
    /// replaced, removed or inserted at every place from an alphabet of
    /// JSON's structure, escapes, controls and non-ASCII.
    fn lines_near_calls() -> Vec<Vec<u8>> {
        let bases: [&[u8]; 8] = [
            br#"{"call":"Ledger::rebalance","payload":{"book":"main"},"id":1}"#,
            br#" { "id" : "c-1" , "payload" : [ 1 , -2.5e+3 , true , null , { } ] , "call" : "A::b" , "digest" : "fnv1a64:40381db6685c9f75" } "#,
            br#"{"call":"X::y","payload":null}"#,
            br#"{"payload":{"a":{"b":[{"c":"dA"}]}},"call":"X::y","id":{"k":[0]}}"#,
            br#"{"call":"X::y","payload":1,"call":"X::z"}"#,
            br#"{"call":"X::y","payload":1,"describe":true}"#,
            br#"{"call":"X::y","payload":1,"extra":[]}"#,
            "{\"call\":\"X::é\",\"payload\":\"\t\",\"id\":-0}".as_bytes(),
        ];
        let alphabet = b"{}[]\":,01-.eE+ \t\r\n\\tfnrulx\x00\x1f\x7f\xc3\xa9\xff";
        let mut lines = Vec::new();
        for base in bases {
            lines.push(base.to_vec());
            lines.extend(crate::mutations::one_byte_changes(base, alphabet));
            lines.extend((0..base.len()).map(|i| base[..i].to_vec()));
        }
        lines
    }

    #[test]
    fn the_fast_reader_reads_every_line_it_takes_as_the_tokenizer_does() {
        let mut taken = 0;
        let lines = lines_near_calls();
        for line in &lines {
            if let Some(fast) = fast_call(line) {
                taken += 1;
                assert_eq!(
                    Ok(fast),
                    parse_line_tokenized(line),
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
            assert_eq!(parse_line(line), parse_line_tokenized(line));
        }
        // It takes the usual calls (and not only those).
        assert!(
            fast_call(br#"{"call":"Ledger::rebalance","payload":{"book":"main"},"id":1}"#)
                .is_some()
        );
        assert!(taken > lines.len() / 10, "{taken} of {} taken", lines.len());
    }

    #[test]
    fn an_object_that_is_no_request_is_refused_and_a_non_object_ends_the_line() {
        for line in [
            &br#"{"hello": 1, "id": 7}"#[..],
            br#"{"call": "X::y", "id": 7}"#,
            br#"{"call": 3, "payload": {}}"#,
            br#"{"describe": false}"#,
            br#"{"call": "X::y", "payload": 1, "call": "X::z"}"#,
        ] {
            assert!(
                matches!(parse_line(line), Ok(LineRequest::Malformed { .. })),
                "{line:?}"
            );
        }
        for line in [&b"[1]"[..], b"nope", b"{\"a\":", b"{} {}"] {
            assert!(parse_line(line).is_err(), "{line:?}");
        }
    }

    #[test]
    fn the_same_events_whole_or_byte_by_byte() {
        let input =
            b"{\"describe\":true}\n{\"call\":\"A::b\",\"payload\":1,\"id\":[1]}\r\n\n{\"x\":1}\n";
        let mut whole = LineConn::new(0, Limits::default());
        whole.handle_data(0, input);
        let mut split = LineConn::new(0, Limits::default());
        for b in input {
            split.handle_data(0, std::slice::from_ref(b));
        }
        let a = events(&mut whole);
        assert_eq!(a, events(&mut split));
        assert_eq!(a.len(), 3);
    }

    #[test]
    fn a_line_that_is_not_an_object_ends_the_connection_once_answered() {
        let mut c = LineConn::new(0, Limits::default());
        c.handle_data(0, b"garbage\n{\"describe\":true}\n");
        let e = c.poll_event();
        assert!(
            matches!(&e, Some(LineEvent::Unreadable { reason }) if reason.contains("JSON")),
            "{e:?}"
        );
        assert_eq!(c.poll_event(), Some(LineEvent::Lost));
        // The transport's answer is written before the connection closes;
        // the line after it is not read.
        c.send_line(0, b"{}");
        assert_eq!(events(&mut c), []);
        assert!(!c.wants_read());
        c.consume_output(0, 3);
        assert_eq!(events(&mut c), [LineEvent::Close]);
    }

    #[test]
    fn an_over_long_line_is_refused_before_it_is_whole() {
        let mut c = LineConn::new(0, Limits::default());
        c.handle_data(0, &vec![b' '; 60_001]);
        let e = events(&mut c);
        assert!(
            matches!(&e[..], [LineEvent::Unreadable { reason }, LineEvent::Lost, LineEvent::Close] if reason == "the line is over 60000 bytes"),
            "{e:?}"
        );
        // The limit in force names itself.
        let limits = Limits {
            max_line: 10,
            ..Limits::default()
        };
        let mut c = LineConn::new(0, limits);
        c.handle_data(0, b"{\"describe\": true}\n");
        assert!(matches!(
            c.poll_event(),
            Some(LineEvent::Unreadable { reason }) if reason == "the line is over 10 bytes"
        ));
    }

    #[test]
    fn a_longest_line_ending_in_crlf_split_between_cr_and_lf_is_read() {
        // Found by fuzz/fuzz_targets/line_conn.rs: the CR of a line of
        // exactly the longest length, arriving before its LF, was counted as
        // line and the line refused as over-long; whole, it was read.
        let limits = Limits {
            max_line: 64,
            ..Limits::default()
        };
        let line = format!("{{\"describe\":true,\"id\":\"{}\"}}", "x".repeat(39));
        assert_eq!(line.len(), 64);
        let mut whole = LineConn::new(0, limits);
        whole.handle_data(0, format!("{line}\r\n").as_bytes());
        let mut split = LineConn::new(0, limits);
        split.handle_data(0, format!("{line}\r").as_bytes());
        split.handle_data(0, b"\n");
        let a = events(&mut whole);
        assert!(
            matches!(&a[..], [LineEvent::Request(LineRequest::Describe { .. })]),
            "{a:?}"
        );
        assert_eq!(a, events(&mut split));
        // One byte more is over-long however it comes.
        let mut c = LineConn::new(0, limits);
        c.handle_data(0, format!("{line} \r").as_bytes());
        assert!(matches!(c.poll_event(), Some(LineEvent::Unreadable { .. })));
    }

    #[test]
    fn a_read_of_many_short_lines_is_framed_in_one_pass() {
        // Found by fuzz/fuzz_targets/line_conn.rs (a slow unit): each line
        // framed was drained from the front of the buffer, moving the rest
        // of the read once a line; a million empty lines moved 2^39 bytes.
        // Now the framed bytes are dropped once a read.
        let mut input = vec![b'\n'; 1 << 20];
        input.extend_from_slice(b"{\"describe\":true}\n{\"des");
        let mut c = LineConn::new(0, Limits::default());
        c.handle_data(0, &input);
        c.handle_data(0, b"cribe\":true}\n");
        let e = events(&mut c);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(c.moved <= input.len(), "{} bytes moved", c.moved);
        assert!(e
            .iter()
            .all(|e| matches!(e, LineEvent::Request(LineRequest::Describe { .. }))));
    }

    #[test]
    fn eof_flushes_what_is_queued_then_closes() {
        let mut c = LineConn::new(0, Limits::default());
        c.send_line(0, b"{}");
        c.handle_eof(0);
        assert_eq!(events(&mut c), [LineEvent::Lost]);
        assert!(!c.is_closed());
        c.consume_output(0, 3);
        assert_eq!(events(&mut c), [LineEvent::Close]);
    }

    #[test]
    fn a_reader_that_never_reads_is_ended_after_5_seconds() {
        let mut c = LineConn::new(0, Limits::default());
        c.send_line(SECOND, b"{}");
        assert_eq!(c.poll_timeout(), Some(6 * SECOND));
        c.handle_timeout(6 * SECOND);
        assert!(c.is_closed());
    }
}
