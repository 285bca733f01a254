//! The implementation's side of the Tool protocol (§ Toolkits), as a pure
//! machine a toolkit library drives.
//!
//! [`ToolkitConn`] serves a set of declarations: it answers describe with
//! their own fingerprints and signatures, decodes each call's args at the
//! declared types (a type parameter's values as `json.Value`), and yields
//! the calls that decode ([`ToolkitEvent::Call`]). A call whose args do not
//! decode, or that names no declaration served, is answered NotRun here:
//! the author's code never runs. What the author's code returns is written
//! by [`ToolkitConn::reply`], once per call.
//!
//! # The order of calls
//!
//! 1. [`ToolkitConn::new`] with the declarations served.
//! 2. Feed standard input: [`handle_data`](ToolkitConn::handle_data) with
//!    the bytes read, in any split; [`handle_eof`](ToolkitConn::handle_eof)
//!    once it has ended (the host is done sending; the calls open stay open
//!    and are still answered).
//! 3. After every input, poll [`poll_event`](ToolkitConn::poll_event) until
//!    empty: run each [`ToolkitEvent::Call`], here or elsewhere, and answer
//!    it with [`reply`](ToolkitConn::reply) (a command: it queues the reply).
//! 4. After every input or reply, write
//!    [`pending_output`](ToolkitConn::pending_output) to standard output and
//!    report what was written with
//!    [`consume_output`](ToolkitConn::consume_output); writing after a batch
//!    of replies rather than after each is what keeps the system calls few.
//!
//! The machine has no timer: [`poll_timeout`](ToolkitConn::poll_timeout) is
//! always `None` and [`handle_timeout`](ToolkitConn::handle_timeout) does
//! nothing. Its inputs and commands take `now` all the same, as every
//! machine's do, so one driver shape fits them all (`docs/decisions.md`,
//! § Flow Tool protocol, the machines' interface).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use super::conn::{Line, LineReader, Outbox};
use super::decoding::{decode_at, DecodeLimits};
use super::exact::{self, ArgsPlan, ExactCall};
use super::listing::{describe_result, Tool};
use super::oversize;
use super::protocol::{self, CALL, CANCEL, DESCRIBE};
use super::CallKey;
use crate::flow::types::Type;
use crate::flow::value::Value;
use crate::json::jsonrpc::{self, Message};
use crate::Timestamp;

pub use super::protocol::Reply;

/// The bounds of the implementation's side. Every message that names a
/// bound names the one in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolkitLimits {
    /// The longest call line, in bytes without its newline.
    pub max_line: usize,
    /// The bounds of every decoded argument.
    pub decode: DecodeLimits,
}

impl Default for ToolkitLimits {
    /// 16 MiB lines (the decoder's own text limit), the decoder's bounds.
    fn default() -> ToolkitLimits {
        let decode = DecodeLimits::default();
        ToolkitLimits {
            max_line: decode.max_bytes,
            decode,
        }
    }
}

/// A call whose args decoded, for the author's code.
#[derive(Clone, Debug, PartialEq)]
pub struct Incoming {
    /// Its correlation key.
    pub key: CallKey,
    /// The index of its declaration in the toolkit's list.
    pub tool: usize,
    /// Its arguments, one per parameter in declaration order.
    pub args: Vec<Value>,
    /// For a generic Tool, the schema of the success type the caller
    /// expects, as the call carried it.
    pub expects: Option<serde_json::Value>,
}

/// What the implementation's side yields.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolkitEvent {
    /// A call to run.
    Call(Incoming),
    /// The host asks to stop work on a call (it proves nothing).
    Cancel(CallKey),
    /// Something that changes nothing, for a log.
    Dropped(String),
}

/// The implementation's side of one Tool protocol connection. See the
/// module documentation.
#[derive(Debug)]
pub struct ToolkitConn {
    tools: Vec<Arc<Tool>>,
    /// Per declaration, how its args are read in place, if they can be.
    plans: Vec<Option<ArgsPlan>>,
    by_identity: BTreeMap<String, usize>,
    describe: Vec<u8>,
    limits: ToolkitLimits,
    reader: LineReader,
    /// Standard input has ended.
    ended: bool,
    /// Output, and how much of it was written: one buffer and a read
    /// position, emptied once all of it is written.
    out: Outbox,
    /// The calls yielded and not answered. A fixed hasher (core reads no
    /// entropy): a host flooding the set with colliding keys only slows its
    /// own calls.
    open: HashSet<CallKey, crate::hash::Fixed>,
    events: VecDeque<ToolkitEvent>,
    /// Whether a call in exactly the writer's form is read in place.
    exact_reading: bool,
}

impl ToolkitConn {
    /// Serves `tools` (answering describe with their fingerprints).
    pub fn new(tools: Vec<Arc<Tool>>, limits: ToolkitLimits) -> ToolkitConn {
        let by_identity = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.identity().to_string(), i))
            .collect();
        // Written in the generator's key order, which a schema reader reads
        // a record's field order from (so not as canonical text).
        let describe = serde_json::to_vec(&describe_result(&tools)).unwrap_or_default();
        let plans = tools
            .iter()
            .map(|t| {
                let decl = &t.declaration;
                decl.generic
                    .is_empty()
                    .then(|| ArgsPlan::of(&decl.params))
                    .flatten()
            })
            .collect();
        ToolkitConn {
            tools,
            plans,
            by_identity,
            describe,
            limits,
            reader: LineReader::default(),
            ended: false,
            out: Outbox::default(),
            open: HashSet::default(),
            events: VecDeque::new(),
            exact_reading: true,
        }
    }

    /// Whether a call line in exactly the form our host writes is read in
    /// place, byte by byte (on by default). Off, every line takes the
    /// general path; the two yield the same, which the differential tests
    /// and the fuzz targets check by running both.
    pub fn set_exact_reading(&mut self, on: bool) {
        self.exact_reading = on;
    }

    /// The declarations served.
    pub fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }

    /// Bytes read from standard input at `now`. Nothing is read after
    /// [`handle_eof`](ToolkitConn::handle_eof).
    pub fn handle_data(&mut self, _now: Timestamp, data: &[u8]) {
        if self.ended {
            return;
        }
        let mut reader = std::mem::take(&mut self.reader);
        reader.feed(data, self.limits.max_line, |line| self.line(line));
        self.reader = reader;
    }

    /// Standard input ended at `now`: the host sends nothing more. A last
    /// line with no newline is no message (each message ends in one), and
    /// is dropped; the calls open stay open, and are still answered.
    pub fn handle_eof(&mut self, _now: Timestamp) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        if let Some(len) = self.reader.unfinished().filter(|&len| len > 0) {
            self.events.push_back(ToolkitEvent::Dropped(format!(
                "a last line of {len} bytes with no newline at the end of input: dropped"
            )));
        }
        self.reader.reset();
    }

    /// Whether standard input has ended.
    pub fn input_ended(&self) -> bool {
        self.ended
    }

    /// Answers an open call at `now`; `false` (and nothing written) when the
    /// call is not open, so a call is answered at most once.
    pub fn reply(&mut self, _now: Timestamp, key: &CallKey, reply: &Reply) -> bool {
        if !self.open.remove(key) {
            return false;
        }
        self.push_reply(key, reply);
        true
    }

    /// Queues the reply line.
    fn push_reply(&mut self, key: &CallKey, reply: &Reply) {
        self.out.push(|out| protocol::write_reply(key, reply, out));
    }

    /// The bytes still to write to standard output, in order.
    pub fn pending_output(&self) -> &[u8] {
        self.out.pending()
    }

    /// The first `n` bytes of [`pending_output`](ToolkitConn::pending_output)
    /// were written at `now`.
    pub fn consume_output(&mut self, _now: Timestamp, n: usize) {
        self.out.consume(n);
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ToolkitEvent> {
        self.events.pop_front()
    }

    /// Always `None`: the implementation's side has no timer.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }

    /// Does nothing: the implementation's side has no timer.
    pub fn handle_timeout(&mut self, _now: Timestamp) {}

    /// How many calls are open (yielded, not yet answered).
    pub fn open_calls(&self) -> usize {
        self.open.len()
    }

    fn not_run(&mut self, key: CallKey, why: String) {
        if !self.open.contains(&key) {
            self.push_reply(&key, &Reply::NotRun(why));
        } else {
            self.events.push_back(ToolkitEvent::Dropped(format!(
                "a second call with {key} while it is open: ignored"
            )));
        }
    }

    fn line(&mut self, line: Line<'_>) {
        let bytes = match line {
            Line::Whole(bytes) => bytes,
            Line::Oversized { len, ids } => {
                let why = format!(
                    "the call is {len} bytes, over the implementation's limit of {} bytes",
                    self.limits.max_line
                );
                return match (ids.method.as_deref(), ids.run, ids.call) {
                    (Some(CALL), Some(run), Some(call)) => {
                        self.not_run(CallKey::new(&run, &call), why)
                    }
                    _ => self.events.push_back(ToolkitEvent::Dropped(format!(
                        "a line of {len} bytes: dropped"
                    ))),
                };
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // Nearly every line is a call as our host writes it.
        if let Some(call) = exact::call(bytes).filter(|_| self.exact_reading) {
            if self.take_exact(call) {
                return;
            }
        }
        // Most others are well-formed calls: one pass reads them.
        if let Some(call) = protocol::fast_call(bytes) {
            return self.take_call(call);
        }
        match jsonrpc::parse(bytes) {
            Ok(Message::Request { id, method, .. }) if method == DESCRIBE => {
                let describe = &self.describe;
                self.out
                    .push(|out| jsonrpc::encode_response(id, describe, out));
            }
            Ok(Message::Request { id, method, .. }) => {
                let message = format!("no method `{method}`");
                self.out.push(|out| {
                    jsonrpc::encode_error(id, jsonrpc::METHOD_NOT_FOUND, &message, out)
                });
            }
            Ok(Message::Notification { method, params }) if method == CALL => {
                self.call(params.unwrap_or(b"null"))
            }
            Ok(Message::Notification { method, params }) if method == CANCEL => {
                match protocol::parse_cancel(params.unwrap_or(b"null")) {
                    Ok(key) if self.open.contains(&key) => {
                        self.events.push_back(ToolkitEvent::Cancel(key))
                    }
                    Ok(key) => self.events.push_back(ToolkitEvent::Dropped(format!(
                        "a cancel for {key}, which is not open: ignored"
                    ))),
                    Err(why) => self
                        .events
                        .push_back(ToolkitEvent::Dropped(format!("{why}: ignored"))),
                }
            }
            Ok(other) => self.events.push_back(ToolkitEvent::Dropped(format!(
                "a message the protocol does not send here: {}",
                summary(&other)
            ))),
            Err(e) => {
                let ids = oversize::scan(bytes);
                if let (Some(CALL), Some(run), Some(call)) =
                    (ids.method.as_deref(), ids.run, ids.call)
                {
                    return self.not_run(
                        CallKey::new(&run, &call),
                        format!("the call is not a JSON-RPC 2.0 message: {e}"),
                    );
                }
                let id = e.id.as_deref().unwrap_or(b"null");
                self.out
                    .push(|out| jsonrpc::encode_error(id, e.code, &e.reason, out));
            }
        }
    }

    fn call(&mut self, params: &[u8]) {
        let call = match protocol::parse_call(params) {
            Ok(call) => call,
            Err((Some(key), why)) => return self.not_run(key, why),
            Err((None, why)) => {
                return self
                    .events
                    .push_back(ToolkitEvent::Dropped(format!("{why}: dropped")))
            }
        };
        self.take_call(call);
    }

    /// A call read in exactly the writer's form ([`exact::call`]), to a
    /// Tool whose args are read in place: yielded when they decode and the
    /// call is not open. `false`, and nothing changed, sends the line down
    /// the general path, which judges it.
    fn take_exact(&mut self, call: ExactCall<'_>) -> bool {
        let Some(&index) = self.by_identity.get(call.tool) else {
            return false;
        };
        let Some(plan) = &self.plans[index] else {
            return false;
        };
        let Some(args) = plan.decode(call.args, &self.limits.decode) else {
            return false;
        };
        let key = CallKey::new(call.run, call.call);
        if !self.open.insert(key.clone()) {
            return false;
        }
        self.events.push_back(ToolkitEvent::Call(Incoming {
            key,
            tool: index,
            args,
            expects: None,
        }));
        true
    }

    fn take_call(&mut self, call: protocol::CallParams<'_>) {
        if self.open.contains(&call.key) {
            return self.events.push_back(ToolkitEvent::Dropped(format!(
                "a second call with {} while it is open: ignored",
                call.key
            )));
        }
        let Some(&index) = self.by_identity.get(call.tool.as_ref()) else {
            let why = format!("this implementation serves no Tool `{}`", call.tool);
            return self.not_run(call.key, why);
        };
        let tool = self.tools[index].clone();
        // A type parameter's values reach the author as JSON.
        let binds: Vec<(String, Type)> = tool
            .declaration
            .generic
            .iter()
            .map(|g| (g.clone(), Type::Json))
            .collect();
        let args = match decode_args(&tool, call.args, &binds, &self.limits.decode) {
            Ok(args) => args,
            Err(why) => return self.not_run(call.key, format!("the args do not decode: {why}")),
        };
        let expects = match call
            .expects
            .map(serde_json::from_slice::<serde_json::Value>)
        {
            None => None,
            Some(Ok(schema)) => Some(schema),
            Some(Err(e)) => {
                return self.not_run(call.key, format!("the call's `expects` is not JSON: {e}"))
            }
        };
        self.open.insert(call.key.clone());
        self.events.push_back(ToolkitEvent::Call(Incoming {
            key: call.key,
            tool: index,
            args,
            expects,
        }));
    }
}

/// Decodes a call's args object (its JSON text) at the declared parameter
/// types, each type parameter bound as `binds` says: every parameter
/// present once, no other key.
pub fn decode_args(
    tool: &Tool,
    args: &[u8],
    binds: &[(String, Type)],
    limits: &DecodeLimits,
) -> Result<Vec<Value>, String> {
    let decl = &tool.declaration;
    // Most calls' args decode: one pass over them. Anything else is read
    // again member by member, which says what is wrong.
    let fields: Vec<(&str, &Type)> = decl
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.ty))
        .collect();
    let depth = crate::json::DEFAULT_MAX_DEPTH;
    if let Some(values) =
        crate::flow::decode::decode_members_fast(args, &fields, &tool.env, binds, limits, depth)
    {
        return Ok(values);
    }
    let members = protocol::members(args).map_err(|e| format!("`args` {e}"))?;
    let mut values: Vec<Option<Value>> = vec![None; decl.params.len()];
    for (name, raw) in members {
        let Some(i) = decl.params.iter().position(|p| p.name == name) else {
            return Err(format!("the Tool has no parameter `{name}`"));
        };
        let value = decode_at(raw, &decl.params[i].ty, &tool.env, binds, limits)
            .map_err(|e| format!("the argument `{name}` does not decode: {e}"))?;
        values[i] = Some(value);
    }
    values
        .into_iter()
        .zip(&decl.params)
        .map(|(v, p)| v.ok_or_else(|| format!("the parameter `{}` has no argument", p.name)))
        .collect()
}

fn summary(message: &Message<'_>) -> String {
    match message {
        Message::Request { method, .. } => format!("a request `{method}`"),
        Message::Notification { method, .. } => format!("a notification `{method}`"),
        Message::Response { .. } => "a response".into(),
        Message::Error { code, message, .. } => format!("an error response ({code}: {message})"),
    }
}
