//! What the host's two connection machines share: their interface to a
//! driver ([`ToolConn`], [`HostEvent`]), their [`Limits`], line framing with
//! the size limit, and the output bookkeeping that tells a call that
//! reached the process from one that did not.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use super::decoding::{decode_at, DecodeLimits};
use super::listing::{Described, Tool};
use super::oversize::{IdScanner, Ids};
use super::{Call, CallKey, Outcome};
use crate::flow::types::Type;
use crate::{Timestamp, SECOND};

/// The bounds of one implementation connection (the Tool protocol's
/// [`HostConn`](super::HostConn) and the MCP adapter's
/// [`McpConn`](super::McpConn) alike). Every message that names a bound
/// names the one in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line the implementation may send, in bytes without its
    /// newline: the host's size limit on a reply. A longer reply is
    /// admitted as BadReply.
    pub max_line: usize,
    /// How long a started process may take to describe itself (the MCP
    /// adapter: to complete its handshake and list its tools).
    pub describe_timeout: Timestamp,
    /// How long a call written to the process may go without its reply.
    /// Past it the host sends the call's cancel (`notifications/cancelled`
    /// over MCP) and closes it Unknown, since it reached the process and
    /// may have happened; a reply that comes later is dropped. A call the
    /// process has not even read by then (its text not all written: the
    /// process stopped reading its input) closes NotRun, and the process
    /// is stopped. Counted from when the call is written to the machine's
    /// output, so a call waiting for a describe waits for that first
    /// (bounded by [`describe_timeout`](Self::describe_timeout)).
    pub call_timeout: Timestamp,
    /// The MCP adapter: the most `tools/list` pages read before the server
    /// is given up on.
    pub max_list_pages: usize,
    /// The bounds of every value decoded from a reply.
    pub decode: DecodeLimits,
}

impl Default for Limits {
    /// 16 MiB lines (the decoder's own text limit), 10 s to describe, 60 s
    /// to reply to a call (the MCP TypeScript SDK's default request
    /// timeout: long enough for a model's answer, short enough that a
    /// held call is noticed), 1000 pages of MCP tools.
    fn default() -> Limits {
        let decode = DecodeLimits::default();
        Limits {
            max_line: decode.max_bytes,
            describe_timeout: 10 * SECOND,
            call_timeout: 60 * SECOND,
            max_list_pages: 1000,
            decode,
        }
    }
}

/// A span of time as a message says it: whole seconds, else whole
/// milliseconds, else nanoseconds, so a limit is named exactly as set.
pub(crate) fn duration_text(ns: Timestamp) -> String {
    const MILLI: Timestamp = SECOND / 1000;
    if ns % SECOND == 0 {
        format!("{} s", ns / SECOND)
    } else if ns % MILLI == 0 {
        format!("{} ms", ns / MILLI)
    } else {
        format!("{ns} ns")
    }
}

/// What the host's side of an implementation process ([`ToolConn`]: the
/// Tool protocol's [`HostConn`](super::HostConn), the MCP adapter's
/// [`McpConn`](super::McpConn)) asks of its driver, or tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent {
    /// Start the process: a call or a describe is waiting for it. Answer
    /// with [`ToolConn::handle_started`], or [`ToolConn::handle_start_failed`].
    Start,
    /// Stop the process: it failed to describe itself. Answer with
    /// [`ToolConn::handle_eof`] once it has ended.
    Stop,
    /// The process described itself (once each time it starts), or could
    /// not, and why.
    Described(Result<Described, String>),
    /// A call is closed, with its outcome: exactly once per call sent.
    Closed {
        /// The call.
        key: CallKey,
        /// How it ended.
        outcome: Outcome,
    },
    /// Something the implementation sent that changes nothing: a reply for
    /// a call that is not open, a second reply, a line that is not a
    /// message. The host may log it.
    Dropped(String),
}

/// A call the machine would not take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError {
    /// A call with this key is already open.
    Duplicate(CallKey),
    /// The arguments are not one per parameter.
    Arity {
        /// Parameters declared.
        want: usize,
        /// Arguments given.
        given: usize,
    },
    /// The type arguments are not one per type parameter.
    TypeArgs {
        /// Type parameters declared.
        want: usize,
        /// Type arguments given.
        given: usize,
    },
    /// An argument's value has no encoding (it could not be written).
    Unwritable(String),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Duplicate(key) => write!(f, "a call with {key} is already open"),
            SendError::Arity { want, given } => {
                write!(f, "the Tool takes {want} arguments, given {given}")
            }
            SendError::TypeArgs { want, given } => {
                write!(f, "the Tool takes {want} type arguments, given {given}")
            }
            SendError::Unwritable(why) => write!(f, "the call cannot be written: {why}"),
        }
    }
}

impl std::error::Error for SendError {}

/// The host's side of one implementation process: the Tool protocol
/// ([`HostConn`](super::HostConn)) or the MCP adapter
/// ([`McpConn`](super::McpConn)), a pure machine its driver feeds and
/// polls (one driver serves both through this trait).
///
/// Time is the driver's monotonic clock in nanoseconds, passed in as `now`
/// to every input and command (never read inside); outputs are polled.
///
/// # The order of calls
///
/// 1. Make the machine: no process runs yet.
/// 2. Commands queue work and return at once: [`describe`](Self::describe),
///    [`send_call`](Self::send_call), [`cancel`](Self::cancel),
///    [`abandon`](Self::abandon).
/// 3. After every input or command, poll until each is empty:
///    - [`poll_event`](Self::poll_event): on [`HostEvent::Start`] spawn the
///      process and call [`handle_started`](Self::handle_started) (or
///      [`handle_start_failed`](Self::handle_start_failed)); on
///      [`HostEvent::Stop`] end it; the other events are the caller's
///      (describe results, closed calls, what was dropped);
///    - [`pending_output`](Self::pending_output): write what the process's
///      standard input takes, then report it with
///      [`consume_output`](Self::consume_output) (only what was written:
///      a call whose text was written in full reached the process);
///    - [`poll_timeout`](Self::poll_timeout): the one deadline to arm; call
///      [`handle_timeout`](Self::handle_timeout) when it passes (before it,
///      that is a no-op).
/// 4. Feed what the process says: [`handle_data`](Self::handle_data) with
///    the bytes read from its standard output, in any split;
///    [`handle_eof`](Self::handle_eof) once that output has ended (the
///    process is over: the driver reaps it). Every call out closes then;
///    the next call or describe asks for a new process ([`HostEvent::Start`]).
pub trait ToolConn {
    /// Asks for the implementation's describe: starts the process if it is
    /// not running, and yields [`HostEvent::Described`] once known.
    fn describe(&mut self, now: Timestamp);
    /// Sends a call, starting the process first if it is not running.
    fn send_call(&mut self, now: Timestamp, call: Call) -> Result<(), SendError>;
    /// Asks the implementation to stop work on a call. It proves nothing:
    /// the call stays open until its reply, or until
    /// [`abandon`](ToolConn::abandon). A call not yet written is closed
    /// NotRun.
    fn cancel(&mut self, now: Timestamp, key: &CallKey);
    /// Closes an open call without an outcome (the runtime stopped waiting):
    /// a reply that comes later is dropped.
    fn abandon(&mut self, now: Timestamp, key: &CallKey);
    /// The process asked for by [`HostEvent::Start`] has started.
    fn handle_started(&mut self, now: Timestamp);
    /// The process asked for by [`HostEvent::Start`] could not be started.
    fn handle_start_failed(&mut self, now: Timestamp, reason: &str);
    /// Bytes read from the process's standard output.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]);
    /// The process's standard output ended: the process is over.
    fn handle_eof(&mut self, now: Timestamp);
    /// Time passed: acts on the deadline [`poll_timeout`](Self::poll_timeout)
    /// named, if it has come.
    fn handle_timeout(&mut self, now: Timestamp);
    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    fn poll_timeout(&self) -> Option<Timestamp>;
    /// The bytes still to write to the process's standard input, in order.
    fn pending_output(&self) -> &[u8];
    /// The first `n` bytes of [`pending_output`](Self::pending_output) were
    /// written to the process.
    fn consume_output(&mut self, now: Timestamp, n: usize);
    /// The next event.
    fn poll_event(&mut self) -> Option<HostEvent>;
    /// How many calls are open (sent or waiting to be sent).
    fn open_calls(&self) -> usize;
}

/// A line read from the process, framed.
pub(crate) enum Line<'a> {
    /// A whole line within the limit (without its newline).
    Whole(&'a [u8]),
    /// A line past the limit: its length and whom it named.
    Oversized { len: usize, ids: Ids },
}

/// Splits the process's output into lines, holding at most the limit.
#[derive(Debug, Default)]
pub(crate) struct LineReader {
    /// A partial line, cut by the end of a read.
    buf: Vec<u8>,
    /// Reading past the limit: the bytes skipped so far and the scanner.
    skipping: Option<(usize, IdScanner)>,
}

impl LineReader {
    /// Feeds `data`; calls `each` for every line completed. Lines are
    /// taken from `data` in place; only a line cut by the end of a read is
    /// copied, and only until its newline comes.
    pub(crate) fn feed(&mut self, data: &[u8], max_line: usize, mut each: impl FnMut(Line<'_>)) {
        let mut data = data;
        while !data.is_empty() {
            let nl = memchr::memchr(b'\n', data);
            if let Some((len, scanner)) = &mut self.skipping {
                let Some(nl) = nl else {
                    *len += data.len();
                    scanner.feed(data);
                    return;
                };
                *len += nl;
                scanner.feed(&data[..nl]);
                data = &data[nl + 1..];
                if let Some((len, scanner)) = self.skipping.take() {
                    each(Line::Oversized {
                        len,
                        ids: scanner.finish(),
                    });
                }
                continue;
            }
            let Some(nl) = nl else {
                // A partial line: held until its newline, up to the limit.
                self.buf.extend_from_slice(data);
                if self.buf.len() > max_line {
                    let mut scanner = IdScanner::new();
                    scanner.feed(&self.buf);
                    self.skipping = Some((self.buf.len(), scanner));
                    self.buf = Vec::new();
                }
                return;
            };
            if self.buf.is_empty() {
                Self::whole(strip_cr(&data[..nl]), max_line, &mut each);
            } else {
                // The end of the line held: completed, then `data` is read
                // in place again.
                self.buf.extend_from_slice(&data[..nl]);
                let buf = std::mem::take(&mut self.buf);
                Self::whole(strip_cr(&buf), max_line, &mut each);
                self.buf = buf;
                self.buf.clear();
            }
            data = &data[nl + 1..];
        }
    }

    /// Hands out one complete line (without its newline).
    fn whole(line: &[u8], max_line: usize, each: &mut impl FnMut(Line<'_>)) {
        if line.len() > max_line {
            each(Line::Oversized {
                len: line.len(),
                ids: super::oversize::scan(line),
            });
        } else {
            each(Line::Whole(line));
        }
    }

    /// How many bytes of a line not yet ended are held or were skipped,
    /// if any but blanks: what the end of input would cut.
    pub(crate) fn unfinished(&self) -> Option<usize> {
        match &self.skipping {
            Some((len, _)) => Some(*len),
            None => (!self.buf.iter().all(u8::is_ascii_whitespace)).then_some(self.buf.len()),
        }
    }

    /// Forgets a partial line (the process ended).
    pub(crate) fn reset(&mut self) {
        *self = LineReader::default();
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Output to the process, and how much of it was written: a call whose
/// text was written in full reached the process; one that was not, did not.
///
/// One buffer and a read position: what is queued is appended, what is
/// written advances the position, and the buffer is emptied once all of it
/// is written (keeping its room up to [`Outbox::KEEP`]), so the driver
/// writes straight from it.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    buf: Vec<u8>,
    /// How much of `buf` was written.
    pos: usize,
    /// The stream offset of `buf[0]`: bytes queued since the process
    /// started that are no longer held.
    base: u64,
}

impl Outbox {
    /// Past this many written bytes at the front, a push that finds them
    /// more than half the buffer moves the rest down: a driver that
    /// writes a little at a time never lets the buffer grow without end.
    const COMPACT_AT: usize = 64 << 10;
    /// The most room an empty buffer keeps: a burst of thousands of calls
    /// leaves no megabyte behind for the connection's life.
    pub(crate) const KEEP: usize = 64 << 10;

    /// Appends one message and its newline; returns the stream offset at
    /// which the message's JSON text is complete.
    pub(crate) fn push(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> u64 {
        self.compact();
        write(&mut self.buf);
        self.buf.push(b'\n');
        self.end() - 1
    }

    /// [`Outbox::push`] of a message whose writing may fail: on failure
    /// nothing is queued.
    pub(crate) fn try_push<E>(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.compact();
        let before = self.buf.len();
        match write(&mut self.buf) {
            Ok(()) => {
                self.buf.push(b'\n');
                Ok(self.end() - 1)
            }
            Err(e) => {
                self.buf.truncate(before);
                Err(e)
            }
        }
    }

    /// The stream offset just past everything queued.
    fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    fn compact(&mut self) {
        if self.pos >= Self::COMPACT_AT && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
    }

    /// Whether the JSON text ending at stream offset `end` was written.
    pub(crate) fn reached(&self, end: u64) -> bool {
        self.base + self.pos as u64 >= end
    }

    /// The bytes still to write.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// `n` of the pending bytes were written.
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n.min(self.buf.len() - self.pos);
        if self.pos == self.buf.len() {
            self.base += self.buf.len() as u64;
            if self.buf.capacity() > Self::KEEP {
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
            self.pos = 0;
        }
    }

    /// A new process: nothing queued, nothing written.
    pub(crate) fn reset(&mut self) {
        self.pos = self.buf.len();
        self.consume(0);
        self.base = 0;
    }
}

/// A call written to the process (or about to be), awaiting its reply.
#[derive(Debug)]
pub(crate) struct Open {
    pub tool: Arc<Tool>,
    pub type_args: Vec<Type>,
    /// The stream offset at which its message is complete.
    pub end: u64,
    /// Its entry in [`Deadlines`]: tells this call from a later one that
    /// reuses its key.
    pub seq: u64,
}

/// The reply deadline of every call written, in the order they were
/// written: each is the time it was written plus one
/// [`Limits::call_timeout`], so with the driver's clock never going back
/// the queue is sorted and the next deadline is its front.
///
/// A call that closes leaves its entry; entries of closed calls are taken
/// off the front as they reach it ([`Deadlines::settle`]), and the whole
/// queue is swept when they outnumber the open calls, so it never holds
/// more than about twice the calls open.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    queue: VecDeque<(Timestamp, u64, CallKey)>,
    next_seq: u64,
}

impl Deadlines {
    /// Arms `deadline` for the call `key`; its `seq`, for [`Open::seq`].
    pub(crate) fn arm(&mut self, deadline: Timestamp, key: &CallKey) -> u64 {
        self.next_seq += 1;
        self.queue.push_back((deadline, self.next_seq, key.clone()));
        self.next_seq
    }

    /// The earliest deadline of an open call, once [`settle`](Self::settle)d.
    pub(crate) fn first(&self) -> Option<Timestamp> {
        self.queue.front().map(|&(at, _, _)| at)
    }

    /// Drops the entries of calls no longer open (`is_open(key, seq)` says
    /// which are) from the front, and from everywhere when they outnumber
    /// the `open` calls by far.
    pub(crate) fn settle(&mut self, open: usize, is_open: impl Fn(&CallKey, u64) -> bool) {
        if self.queue.len() > 2 * open + 32 {
            self.queue.retain(|(_, seq, key)| is_open(key, *seq));
        }
        while let Some((_, seq, key)) = self.queue.front() {
            if is_open(key, *seq) {
                break;
            }
            self.queue.pop_front();
        }
    }

    /// The front call if its deadline has come by `now` (taken off);
    /// [`settle`](Self::settle) first, so the front is open.
    pub(crate) fn due(&mut self, now: Timestamp) -> Option<CallKey> {
        match self.queue.front() {
            Some(&(at, _, _)) if now >= at => self.queue.pop_front().map(|(_, _, key)| key),
            _ => None,
        }
    }

    /// The process ended: no call is out.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }

    /// How many entries are held (open calls and closed ones not yet
    /// swept).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

/// What the reason of a call closed at its deadline says of itself, so a
/// host's user interface can tell it from a reason the implementation gave.
pub const CALL_DEADLINE: &str = "(the call deadline)";

/// The reason a call past its deadline closes with: the Tool, the method
/// it was called by and the deadline in force.
pub(crate) fn past_deadline(
    tool: &Tool,
    method: &str,
    timeout: Timestamp,
    reached: bool,
) -> String {
    let within = duration_text(timeout);
    let identity = tool.identity();
    if reached {
        format!(
            "{identity} did not reply to `{method}` within {within} {CALL_DEADLINE}: a cancel was \
             sent, and whether the call happened is not known"
        )
    } else {
        format!(
            "{identity} did not read its `{method}` within {within} {CALL_DEADLINE}: the process \
             does not read its input and is stopped"
        )
    }
}

/// Checks a call's arity against its declaration.
pub(crate) fn check_call(call: &Call) -> Result<(), SendError> {
    let decl = &call.tool.declaration;
    if call.args.len() != decl.params.len() {
        return Err(SendError::Arity {
            want: decl.params.len(),
            given: call.args.len(),
        });
    }
    if call.type_args.len() != decl.generic.len() {
        return Err(SendError::TypeArgs {
            want: decl.generic.len(),
            given: call.type_args.len(),
        });
    }
    Ok(())
}

/// The type parameters of `tool` bound to `type_args`.
pub(crate) fn bindings(tool: &Tool, type_args: &[Type]) -> Vec<(String, Type)> {
    tool.declaration
        .generic
        .iter()
        .cloned()
        .zip(type_args.iter().cloned())
        .collect()
}

/// A reply's outcome before its value is decoded.
#[derive(Debug)]
pub(crate) enum RawOutcome<'a> {
    Ok(&'a [u8]),
    Failed(&'a [u8]),
    NotRun(String),
    Unknown(String),
}

/// Decodes an outcome's value at the declared types: a value that does not
/// decode is BadReply, with the decoder's path and reason.
pub(crate) fn decode_outcome(raw: RawOutcome<'_>, open: &Open, limits: &DecodeLimits) -> Outcome {
    let decl = &open.tool.declaration;
    let env = &open.tool.env;
    let params = bindings(&open.tool, &open.type_args);
    match raw {
        RawOutcome::Ok(bytes) => match decode_at(bytes, &decl.ok, env, &params, limits) {
            Ok(v) => Outcome::Ok(v),
            Err(why) => Outcome::BadReply(format!(
                "the Ok value does not decode at the success type: {why}"
            )),
        },
        RawOutcome::Failed(bytes) => match decode_at(bytes, &decl.err, env, &params, limits) {
            Ok(v) => Outcome::Failed(v),
            Err(why) => Outcome::BadReply(format!(
                "the Failed value does not decode at the error type: {why}"
            )),
        },
        RawOutcome::NotRun(r) => Outcome::NotRun(r),
        RawOutcome::Unknown(r) => Outcome::Unknown(r),
    }
}

/// The queue of events a machine yields.
pub(crate) type Events = VecDeque<HostEvent>;

#[cfg(test)]
mod tests {
    use super::{duration_text, Outbox};
    use crate::SECOND;

    /// Whether a message was written is counted in stream offsets, which
    /// moving the unwritten rest down the buffer leaves as they were.
    #[test]
    fn the_outbox_counts_what_was_written_across_compaction() {
        let mut out = Outbox::default();
        let line = vec![b'x'; 1000];
        let mut ends = Vec::new();
        let mut written = Vec::new();
        for i in 0..300 {
            ends.push(out.push(|b| b.extend_from_slice(&line)));
            // A slow pipe: a little under a line written each time.
            let n = out.pending().len().min(997);
            written.extend_from_slice(&out.pending()[..n]);
            out.consume(n);
            assert!(
                out.buf.len() <= 2 * Outbox::COMPACT_AT + 2 * 1001,
                "round {i}"
            );
        }
        assert_eq!(ends[0], 1000, "the first text ends before its newline");
        let sent = written.len() as u64;
        for &end in &ends {
            assert_eq!(out.reached(end), end <= sent, "{end} against {sent}");
        }
        written.extend_from_slice(out.pending());
        out.consume(usize::MAX);
        assert!(out.pending().is_empty() && out.buf.is_empty());
        assert!(ends.iter().all(|&end| out.reached(end)));
        assert_eq!(written.len(), 300 * 1001);
        assert!(written
            .chunks(1001)
            .all(|l| l[..1000] == line[..] && l[1000] == b'\n'));
        out.reset();
        assert_eq!(out.push(|b| b.push(b'{')), 1, "a new process counts from 0");
        for _ in 0..100 {
            out.push(|b| b.extend_from_slice(&line));
        }
        out.consume(usize::MAX);
        assert!(
            out.buf.capacity() <= Outbox::KEEP,
            "a burst's room is let go"
        );
    }

    #[test]
    fn a_span_is_said_exactly() {
        assert_eq!(duration_text(10 * SECOND), "10 s");
        assert_eq!(duration_text(SECOND / 4), "250 ms");
        assert_eq!(duration_text(1), "1 ns");
        assert_eq!(duration_text(0), "0 s");
    }
}
