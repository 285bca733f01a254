//! The host's side of one implementation process speaking the Tool
//! protocol (§ The Tool process protocol).
//!
//! [`HostConn`] starts the process when a call or a describe needs it,
//! sends describe first and holds every call until the answer, then sends
//! each call whose declaration the process still serves with the same
//! fingerprint (any other is NotRun). Calls are multiplexed: many in
//! flight, replies in any order, correlated by `(runId, callId)` alone, at
//! most one reply per call — a second reply, or one for a call not open, is
//! dropped ([`HostEvent::Dropped`]) and changes nothing. A reply that does
//! not decode at the declared types, a malformed outcome, or a line past
//! the size limit is BadReply. When the process ends, each call out is
//! Unknown if its message was written to the process in full and NotRun if
//! not; the next call starts it again, and it describes itself again first.
//! A call with no reply within [`Limits::call_timeout`] is cancelled and
//! closed Unknown (NotRun, and the process stopped, when the process has
//! not even read it).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::binding::{status_of, Status};
use super::conn::{
    check_call, decode_outcome, duration_text, past_deadline, Deadlines, Events, Limits, Line,
    LineReader, Open, Outbox, RawOutcome, SendError,
};
use super::decoding::decode_at;
use super::exact::{self, ExactOutcome, Scalar};
use super::listing::{Described, Tool};
use super::oversize;
use super::protocol::{self, CallParts, CallShape, REPLY};
use super::{Call, CallKey, DataVersion, HostEvent, Outcome, ToolConn};
use crate::flow::value::Value;
use crate::json::jsonrpc::{self, Message};
use crate::Timestamp;

/// A hash map with a fixed hasher ([`crate::hash::Fixed`]): hashing a key once
/// beats a tree's dozen string comparisons per call with hundreds in
/// flight.
type Fixed<K, V> = HashMap<K, V, crate::hash::Fixed>;

/// The most declarations whose call shape is kept: a caller that makes a
/// new `Arc<Tool>` per call must not grow the cache without end.
const SHAPES_KEPT: usize = 64;

/// What a declaration's calls to the running process need, made once per
/// declaration and process: whether it serves the declaration (why not),
/// and the fixed part of the call message.
#[derive(Debug)]
struct Sendable {
    /// Held so the pointer it is keyed by stays this declaration's.
    _tool: Arc<Tool>,
    refusal: Option<String>,
    shape: CallShape,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No process.
    Down,
    /// [`HostEvent::Start`] was yielded; waiting for the process.
    Starting,
    /// describe is out.
    Describing { id: u64, deadline: Timestamp },
    /// Described: calls go out as they come.
    Ready,
    /// The process failed to describe itself; [`HostEvent::Stop`] was
    /// yielded and its end is awaited.
    Stopping,
}

/// The host's side of one Tool protocol process. See the module
/// documentation; the order of calls it expects is [`ToolConn`]'s (its
/// timers are the describe deadline, [`Limits::describe_timeout`], and each
/// call's reply deadline, [`Limits::call_timeout`]).
#[derive(Debug)]
pub struct HostConn {
    limits: Limits,
    state: State,
    reader: LineReader,
    outbox: Outbox,
    /// Calls written (or queued to be written) to the running process.
    open: Fixed<CallKey, Open>,
    /// Per declaration (by its `Arc`'s address), what its calls to the
    /// running process need; emptied when what it described changes.
    sendable: Fixed<usize, Sendable>,
    /// Calls waiting for the process to describe itself.
    waiting: VecDeque<Call>,
    described: Option<Described>,
    /// A describe or a call came while stopping: start again after the end.
    restart: bool,
    next_id: u64,
    events: Events,
    /// Whether a reply in exactly the writer's form is read in place.
    exact_reading: bool,
    /// Each open call's reply deadline.
    deadlines: Deadlines,
    /// The latest `now` the driver gave: a call written from a describe's
    /// answer is armed from it.
    now: Timestamp,
}

impl HostConn {
    /// A connection with no process yet.
    pub fn new(limits: Limits) -> HostConn {
        HostConn {
            limits,
            state: State::Down,
            reader: LineReader::default(),
            outbox: Outbox::default(),
            open: Fixed::default(),
            sendable: Fixed::default(),
            waiting: VecDeque::new(),
            described: None,
            restart: false,
            next_id: 1,
            events: Events::new(),
            exact_reading: true,
            deadlines: Deadlines::default(),
            now: 0,
        }
    }

    /// Whether a reply line in exactly the form our toolkit writes is read
    /// in place, byte by byte (on by default). Off, every line takes the
    /// general path; the two yield the same, which the differential tests
    /// and the fuzz targets check by running both.
    pub fn set_exact_reading(&mut self, on: bool) {
        self.exact_reading = on;
    }

    /// How many call deadlines are held (open calls, and closed ones not
    /// yet swept): the bound the deadline tests hold.
    #[cfg(test)]
    pub(crate) fn deadlines_held(&self) -> usize {
        self.deadlines.len()
    }

    /// What the running process described, if it has.
    pub fn described(&self) -> Option<&Described> {
        self.described.as_ref()
    }

    fn start(&mut self) {
        match self.state {
            State::Down => {
                self.state = State::Starting;
                self.events.push_back(HostEvent::Start);
            }
            State::Stopping => self.restart = true,
            State::Starting | State::Describing { .. } | State::Ready => {}
        }
    }

    fn close(&mut self, key: CallKey, outcome: Outcome) {
        self.events.push_back(HostEvent::Closed { key, outcome });
    }

    /// Drops the deadlines of calls no longer open from the queue's front.
    fn settle(&mut self) {
        let open = &self.open;
        self.deadlines.settle(open.len(), |key, seq| {
            open.get(key).is_some_and(|o| o.seq == seq)
        });
    }

    /// Closes every call whose reply deadline has come: one the process
    /// read is cancelled and Unknown; one it has not read is NotRun, and
    /// the process, which does not read its input, is stopped.
    fn expire(&mut self, now: Timestamp) {
        self.settle();
        while let Some(key) = self.deadlines.due(now) {
            if let Some(open) = self.open.remove(&key) {
                let reached = self.outbox.reached(open.end);
                let timeout = self.limits.call_timeout;
                let why = past_deadline(&open.tool, protocol::CALL, timeout, reached);
                if reached {
                    self.outbox.push(|out| protocol::write_cancel(&key, out));
                    self.close(key, Outcome::Unknown(why));
                } else {
                    self.close(key, Outcome::NotRun(why));
                    if self.state == State::Ready {
                        self.state = State::Stopping;
                        self.events.push_back(HostEvent::Stop);
                    }
                }
            }
            self.settle();
        }
    }

    /// Why the running process does not serve `tool` as declared, if it
    /// does not.
    fn refusal(&self, tool: &Tool) -> Option<String> {
        let described = self.described.as_ref();
        let status = described.map_or(Status::NotServed, |d| status_of(tool, d));
        let identity = tool.identity();
        match status {
            Status::Bound => None,
            Status::Version(theirs) => Some(format!(
                "the implementation speaks data version {theirs}, whose major differs from ours \
                 ({})",
                DataVersion::ours()
            )),
            Status::Mismatch { listed } => Some(format!(
                "the implementation no longer fits {identity}: its describe lists fingerprint \
                 {listed} where the declaration's is {}",
                tool.fingerprint
            )),
            _ => Some(format!("the implementation no longer serves {identity}")),
        }
    }

    /// Writes `call` to the process, or closes it NotRun when the process
    /// does not serve its declaration as declared. A call whose key is open
    /// is refused, and nothing is written.
    fn write(&mut self, call: Call) -> Result<(), SendError> {
        let at = Arc::as_ptr(&call.tool) as usize;
        if !self.sendable.contains_key(&at) {
            if self.sendable.len() >= SHAPES_KEPT {
                self.sendable.clear();
            }
            let sendable = Sendable {
                refusal: self.refusal(&call.tool),
                shape: CallShape::of(&call.tool),
                _tool: call.tool.clone(),
            };
            self.sendable.insert(at, sendable);
        }
        let Some(sendable) = self.sendable.get(&at) else {
            return Ok(());
        };
        let Call {
            key,
            tool,
            args,
            type_args,
        } = call;
        // The key is hashed once: the open call's place is found, the
        // message written, and the place filled.
        let slot = match self.open.entry(key) {
            Entry::Occupied(taken) => return Err(SendError::Duplicate(taken.key().clone())),
            Entry::Vacant(slot) => slot,
        };
        if let Some(why) = &sendable.refusal {
            let why = why.clone();
            let key = slot.into_key();
            self.close(key, Outcome::NotRun(why));
            return Ok(());
        }
        let parts = CallParts {
            tool: &tool,
            args: &args,
            type_args: &type_args,
        };
        let written = self
            .outbox
            .try_push(|out| protocol::write_shaped_call(slot.key(), &parts, &sendable.shape, out));
        match written {
            Ok(end) => {
                let deadline = self.now.saturating_add(self.limits.call_timeout);
                let seq = self.deadlines.arm(deadline, slot.key());
                slot.insert(Open {
                    tool,
                    type_args,
                    end,
                    seq,
                });
            }
            Err(e) => {
                let key = slot.into_key();
                self.close(key, Outcome::NotRun(e.to_string()));
            }
        }
        Ok(())
    }

    fn on_described(&mut self, result: Result<Described, String>) {
        match result {
            Ok(described) => {
                self.events
                    .push_back(HostEvent::Described(Ok(described.clone())));
                self.described = Some(described);
                self.sendable.clear();
                self.state = State::Ready;
                while let Some(call) = self.waiting.pop_front() {
                    // A waiting call's key was held to the open ones and the
                    // other waiting ones when it was sent.
                    let _ = self.write(call);
                }
            }
            Err(why) => {
                self.events
                    .push_back(HostEvent::Described(Err(why.clone())));
                for call in std::mem::take(&mut self.waiting) {
                    self.close(
                        call.key,
                        Outcome::NotRun(format!("the implementation {why}")),
                    );
                }
                self.state = State::Stopping;
                self.events.push_back(HostEvent::Stop);
            }
        }
    }

    /// A reply for the call `key` names.
    fn reply(&mut self, key: CallKey, outcome: Result<RawOutcome<'_>, String>) {
        let Some(open) = self.open.remove(&key) else {
            return self.events.push_back(HostEvent::Dropped(format!(
                "a reply for {key}, which is not open (never sent, or already answered): dropped"
            )));
        };
        let outcome = match outcome {
            Ok(raw) => decode_outcome(raw, &open, &self.limits.decode),
            Err(why) => Outcome::BadReply(why),
        };
        self.close(key, outcome);
    }

    /// A reply read in exactly the writer's form ([`exact::reply`]): closes
    /// its call when the outcome's value decodes at the declared type.
    /// `false`, and nothing changed, sends the line down the general path,
    /// which judges it (and says why a value does not decode).
    fn exact_reply(&mut self, run: &str, call: &str, outcome: ExactOutcome<'_>) -> bool {
        // A key of short texts is made in place: no copy to the heap.
        let key = CallKey::new(run, call);
        let Some(open) = self.open.remove(&key) else {
            return false;
        };
        let decl = &open.tool.declaration;
        let decoded = match outcome {
            ExactOutcome::Ok(text) => self.decode_exact(text, &decl.ok, &open).map(Outcome::Ok),
            ExactOutcome::Failed(text) => self
                .decode_exact(text, &decl.err, &open)
                .map(Outcome::Failed),
            ExactOutcome::NotRun(why) => Some(Outcome::NotRun(why.to_owned())),
            ExactOutcome::Unknown(why) => Some(Outcome::Unknown(why.to_owned())),
        };
        match decoded {
            Some(outcome) => {
                self.close(key, outcome);
                true
            }
            None => {
                self.open.insert(key, open);
                false
            }
        }
    }

    /// An outcome's value at `ty`: a scalar read in place, anything else
    /// (or a scalar written otherwise) by the decoder.
    fn decode_exact(&self, text: &str, ty: &crate::flow::Type, open: &Open) -> Option<Value> {
        let limits = &self.limits.decode;
        if open.type_args.is_empty() {
            if let Some(value) = Scalar::of(ty).and_then(|s| s.decode(text, limits)) {
                return Some(value);
            }
        }
        let binds = super::conn::bindings(&open.tool, &open.type_args);
        decode_at(text.as_bytes(), ty, &open.tool.env, &binds, limits).ok()
    }

    /// A line that could not be read as a message, or was too large: if it
    /// names an open call as a reply, that call is BadReply; else dropped.
    fn unreadable(&mut self, ids: oversize::Ids, why: String) {
        if let State::Describing { id, .. } = self.state {
            if ids.id.as_deref() == Some(id.to_string().as_bytes()) {
                return self.on_described(Err(format!("sent a describe response that {why}")));
            }
        }
        if let (Some(REPLY), Some(run), Some(call)) = (ids.method.as_deref(), ids.run, ids.call) {
            let key = CallKey {
                run: run.into(),
                call: call.into(),
            };
            if self.open.contains_key(&key) {
                return self.reply(key, Err(format!("the reply {why}")));
            }
        }
        self.events.push_back(HostEvent::Dropped(format!(
            "a line that {why}, naming no open call: dropped"
        )));
    }

    fn line(&mut self, line: Line<'_>) {
        let bytes = match line {
            Line::Whole(bytes) => bytes,
            Line::Oversized { len, ids } => {
                let why = format!(
                    "is {len} bytes, over the host's limit of {} bytes",
                    self.limits.max_line
                );
                return self.unreadable(ids, why);
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // Nearly every line is a reply as our toolkit writes it.
        if let Some((run, call, outcome)) = exact::reply(bytes).filter(|_| self.exact_reading) {
            if self.exact_reply(run, call, outcome) {
                return;
            }
        }
        // Most others are well-formed replies: one pass reads them.
        if let Some(((run, call), outcome)) = protocol::fast_reply(bytes) {
            return self.reply(CallKey::new(&run, &call), Ok(outcome));
        }
        let message = match jsonrpc::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                let why = format!("is not a JSON-RPC 2.0 message ({e})");
                return self.unreadable(oversize::scan(bytes), why);
            }
        };
        match message {
            Message::Notification { method, params } if method == REPLY => {
                match protocol::parse_reply(params.unwrap_or(b"null")) {
                    Ok((key, outcome)) => self.reply(key, outcome),
                    Err(why) => self
                        .events
                        .push_back(HostEvent::Dropped(format!("{why}: dropped"))),
                }
            }
            Message::Notification { method, .. } => self.events.push_back(HostEvent::Dropped(
                format!("a notification `{method}`, which the protocol does not have: dropped"),
            )),
            Message::Request { id, method, .. } => {
                let message = format!("the host serves no method `{method}`");
                self.outbox.push(|out| {
                    jsonrpc::encode_error(id, jsonrpc::METHOD_NOT_FOUND, &message, out)
                });
                self.events.push_back(HostEvent::Dropped(format!(
                    "a request `{method}` from the implementation: answered method-not-found"
                )));
            }
            Message::Response { id, result } => match self.state {
                State::Describing { id: d, .. } if id == d.to_string().as_bytes() => {
                    let described = Described::parse(result)
                        .map_err(|e| format!("sent a malformed describe result: {e}"));
                    self.on_described(described);
                }
                _ => self.events.push_back(HostEvent::Dropped(
                    "a response to no request of the host's: dropped".into(),
                )),
            },
            Message::Error {
                id, code, message, ..
            } => match self.state {
                State::Describing { id: d, .. } if id == d.to_string().as_bytes() => self
                    .on_described(Err(format!(
                        "it answered describe with error {code}: {message}"
                    ))),
                _ => self.events.push_back(HostEvent::Dropped(format!(
                    "an error response to no request of the host's ({code}: {message}): dropped"
                ))),
            },
        }
    }

    /// The process ended (or never started, `why` says): every call out is
    /// closed, Unknown if it reached the process and NotRun if it did not.
    fn ended(&mut self, why: &str) {
        // Closed in key order, whatever the map's order.
        let mut open: Vec<(CallKey, Open)> = std::mem::take(&mut self.open).into_iter().collect();
        self.deadlines.clear();
        open.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (key, open) in open {
            let outcome = if self.outbox.reached(open.end) {
                Outcome::Unknown("the implementation's process ended with the call out".into())
            } else {
                Outcome::NotRun(
                    "the implementation's process ended before the call was written to it".into(),
                )
            };
            self.close(key, outcome);
        }
        let was = self.state;
        self.described = None;
        self.sendable.clear();
        self.reader.reset();
        self.outbox.reset();
        self.state = State::Down;
        match was {
            State::Starting | State::Describing { .. } => {
                self.events
                    .push_back(HostEvent::Described(Err(why.to_owned())));
                for call in std::mem::take(&mut self.waiting) {
                    self.close(
                        call.key,
                        Outcome::NotRun(format!("the implementation {why}")),
                    );
                }
            }
            State::Stopping if self.restart || !self.waiting.is_empty() => {
                self.restart = false;
                self.start();
            }
            _ => {}
        }
        self.restart = false;
    }
}

impl ToolConn for HostConn {
    fn describe(&mut self, _now: Timestamp) {
        match (&self.state, &self.described) {
            (State::Ready, Some(d)) => {
                let d = d.clone();
                self.events.push_back(HostEvent::Described(Ok(d)));
            }
            _ => self.start(),
        }
    }

    fn send_call(&mut self, now: Timestamp, call: Call) -> Result<(), SendError> {
        self.now = now;
        check_call(&call)?;
        if self.state == State::Ready {
            // Nothing waits once the process is ready: the open calls are
            // all a key can be taken by.
            debug_assert!(self.waiting.is_empty());
            return self.write(call);
        }
        if self.open.contains_key(&call.key) || self.waiting.iter().any(|c| c.key == call.key) {
            return Err(SendError::Duplicate(call.key));
        }
        self.waiting.push_back(call);
        self.start();
        Ok(())
    }

    fn cancel(&mut self, _now: Timestamp, key: &CallKey) {
        if let Some(i) = self.waiting.iter().position(|c| c.key == *key) {
            if let Some(call) = self.waiting.remove(i) {
                self.close(
                    call.key,
                    Outcome::NotRun("cancelled before it was written to the implementation".into()),
                );
            }
            return;
        }
        if self.open.contains_key(key) {
            self.outbox.push(|out| protocol::write_cancel(key, out));
        }
    }

    fn abandon(&mut self, _now: Timestamp, key: &CallKey) {
        self.open.remove(key);
        self.waiting.retain(|c| c.key != *key);
        self.settle();
    }

    fn handle_started(&mut self, now: Timestamp) {
        if self.state != State::Starting {
            return;
        }
        self.reader.reset();
        self.outbox.reset();
        let id = self.next_id;
        self.next_id += 1;
        self.outbox.push(|out| protocol::write_describe(id, out));
        self.state = State::Describing {
            id,
            deadline: now.saturating_add(self.limits.describe_timeout),
        };
    }

    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        self.now = now;
        if matches!(self.state, State::Down | State::Starting) {
            return;
        }
        let mut reader = std::mem::take(&mut self.reader);
        reader.feed(data, self.limits.max_line, |line| self.line(line));
        // A line may have ended the process's usefulness (a failed
        // describe); its partial input is worthless then.
        if matches!(
            self.state,
            State::Describing { .. } | State::Ready | State::Stopping
        ) {
            self.reader = reader;
        }
        self.settle();
    }

    fn handle_eof(&mut self, _now: Timestamp) {
        if self.state == State::Down {
            return;
        }
        self.ended("ended before it described itself");
    }

    fn handle_start_failed(&mut self, _now: Timestamp, reason: &str) {
        if self.state == State::Down {
            return;
        }
        self.ended(&format!("could not be started: {reason}"));
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.now = now;
        if let State::Describing { deadline, .. } = self.state {
            if now >= deadline {
                let within = duration_text(self.limits.describe_timeout);
                self.on_described(Err(format!("did not describe itself within {within}")));
            }
        }
        self.expire(now);
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        let describe = match self.state {
            State::Describing { deadline, .. } => Some(deadline),
            _ => None,
        };
        match (describe, self.deadlines.first()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn pending_output(&self) -> &[u8] {
        self.outbox.pending()
    }

    fn consume_output(&mut self, _now: Timestamp, n: usize) {
        self.outbox.consume(n);
    }

    fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
    }

    fn open_calls(&self) -> usize {
        self.open.len() + self.waiting.len()
    }
}
