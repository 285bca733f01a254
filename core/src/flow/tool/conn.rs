//! What the host's two connection machines share: their interface to a
//! driver ([`ToolConn`], [`ConnEvent`]), their [`Limits`], line framing with
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

/// The bounds of one implementation connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest line the implementation may send, in bytes without its
    /// newline: the host's size limit on a reply. A longer reply is
    /// admitted as BadReply.
    pub max_line: usize,
    /// How long a started process may take to describe itself.
    pub describe_timeout: Timestamp,
    /// The bounds of every value decoded from a reply.
    pub decode: DecodeLimits,
}

impl Default for Limits {
    /// 16 MiB lines (the decoder's own text limit), 10 s to describe.
    fn default() -> Limits {
        let decode = DecodeLimits::default();
        Limits {
            max_line: decode.max_bytes,
            describe_timeout: 10 * SECOND,
            decode,
        }
    }
}

/// What a connection machine asks of its driver, or tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum ConnEvent {
    /// Start the process: a call or a describe is waiting for it. Answer
    /// with [`ToolConn::handle_started`], or [`ToolConn::handle_start_failed`].
    Start,
    /// Stop the process: it failed to describe itself. Answer with
    /// [`ToolConn::handle_exit`] once it has ended.
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
/// ([`McpConn`](super::McpConn)). A driver spawns and restarts the process
/// when asked ([`ConnEvent::Start`]), feeds its standard output in, writes
/// what [`poll_transmit`](ToolConn::poll_transmit) hands out to its
/// standard input, and reports how much of it was written.
pub trait ToolConn {
    /// Asks for the implementation's describe: starts the process if it is
    /// not running, and yields [`ConnEvent::Described`] once known.
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
    fn abandon(&mut self, key: &CallKey);
    /// The process asked for by [`ConnEvent::Start`] has started.
    fn handle_started(&mut self, now: Timestamp);
    /// Bytes read from the process's standard output.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]);
    /// `n` bytes handed out by `poll_transmit` were written to the
    /// process's standard input.
    fn handle_sent(&mut self, n: usize);
    /// The process ended.
    fn handle_exit(&mut self, now: Timestamp);
    /// The process asked for by [`ConnEvent::Start`] could not be started.
    fn handle_start_failed(&mut self, now: Timestamp, reason: &str);
    /// Time passed.
    fn handle_timeout(&mut self, now: Timestamp);
    /// When `handle_timeout` next has work.
    fn poll_timeout(&self) -> Option<Timestamp>;
    /// Moves the bytes to write into `out` (appending); returns how many.
    fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize;
    /// Whether there are bytes to write.
    fn wants_write(&self) -> bool;
    /// The next event.
    fn poll_event(&mut self) -> Option<ConnEvent>;
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
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    buf: Vec<u8>,
    /// Bytes queued since the process started.
    queued: u64,
    /// Bytes the driver reported written since the process started.
    sent: u64,
}

impl Outbox {
    /// Appends one message and its newline; returns the stream offset at
    /// which the message's JSON text is complete.
    pub(crate) fn push(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> u64 {
        let before = self.buf.len();
        write(&mut self.buf);
        let len = (self.buf.len() - before) as u64;
        self.buf.push(b'\n');
        self.queued += len + 1;
        self.queued - 1
    }

    /// [`Outbox::push`] of a message whose writing may fail: on failure
    /// nothing is queued.
    pub(crate) fn try_push<E>(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<u64, E> {
        let before = self.buf.len();
        match write(&mut self.buf) {
            Ok(()) => {
                let len = (self.buf.len() - before) as u64;
                self.buf.push(b'\n');
                self.queued += len + 1;
                Ok(self.queued - 1)
            }
            Err(e) => {
                self.buf.truncate(before);
                Err(e)
            }
        }
    }

    /// Whether the JSON text ending at stream offset `end` was written.
    pub(crate) fn reached(&self, end: u64) -> bool {
        self.sent >= end
    }

    pub(crate) fn poll_transmit(&mut self, out: &mut Vec<u8>) -> usize {
        let n = self.buf.len();
        if out.is_empty() {
            std::mem::swap(out, &mut self.buf);
        } else {
            out.append(&mut self.buf);
        }
        n
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn handle_sent(&mut self, n: usize) {
        self.sent = (self.sent + n as u64).min(self.queued);
    }

    /// A new process: nothing queued, nothing written.
    pub(crate) fn reset(&mut self) {
        *self = Outbox::default();
    }
}

/// A call written to the process (or about to be), awaiting its reply.
#[derive(Debug)]
pub(crate) struct Open {
    pub tool: Arc<Tool>,
    pub type_args: Vec<Type>,
    /// The stream offset at which its message is complete.
    pub end: u64,
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
pub(crate) type Events = VecDeque<ConnEvent>;
