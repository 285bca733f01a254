//! The MCP adapter (§ Adapters): the host's side of an MCP server over
//! stdio, behind the same interface as a Tool protocol process.
//!
//! [`McpConn`] starts the server when needed, completes MCP's handshake
//! (`initialize`, then `notifications/initialized`) and lists the server's
//! tools (`tools/list`, every page) before any call; its describe is
//! answered from the declarations it was given, as a toolkit's is, each
//! declaration offered as the MCP tool of its name (one with no tool of its
//! name is not served, so unbound). A call is a `tools/call` request whose
//! id is the call's history id (a JSON string); its `structuredContent`,
//! or else the JSON its one text content block holds, is decoded at the
//! success type, or at the error type when `isError`. An error response, or
//! a result that cannot be mapped so, is BadReply. A cancel is
//! `notifications/cancelled`; a server that ends is a process that ends.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use super::conn::{
    check_call, decode_outcome, duration_text, past_deadline, Deadlines, Events, Limits, Line,
    LineReader, Open, Outbox, RawOutcome, SendError,
};
use super::listing::{describe_result, Described, Tool};
use super::oversize;
use super::protocol::{members, string};
use super::{Call, CallKey, DataVersion, HostEvent, KeyText, Outcome, ToolConn};
use crate::flow::canonical::write_canonical;
use crate::json::jsonrpc::{self, Message};
use crate::json::{write_string, Event, Tokenizer};
use crate::Timestamp;

/// The MCP protocol version the adapter asks for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The versions the adapter accepts a server answering with.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Initializing,
    Listing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Down,
    Starting,
    /// A handshake request (`id`) is out.
    Handshake {
        phase: Phase,
        id: u64,
        deadline: Timestamp,
    },
    Ready,
    Stopping,
}

/// The host's side of one MCP server. See the module documentation; the
/// order of calls it expects is [`ToolConn`]'s (its timers are the
/// handshake deadline, [`Limits::describe_timeout`], and each call's reply
/// deadline, [`Limits::call_timeout`], past which the call is cancelled
/// with `notifications/cancelled` and closed Unknown).
#[derive(Debug)]
pub struct McpConn {
    tools: Vec<Arc<Tool>>,
    limits: Limits,
    state: State,
    reader: LineReader,
    outbox: Outbox,
    /// Calls out, by MCP request id (the call's history id).
    open: BTreeMap<KeyText, (CallKey, Open)>,
    /// Calls waiting for the handshake.
    waiting: VecDeque<Call>,
    /// Calls whose history id is the id of a call out (of another run):
    /// sent when that one closes.
    blocked: VecDeque<Call>,
    names: BTreeSet<String>,
    pages: usize,
    described: Option<Described>,
    restart: bool,
    next_id: u64,
    events: Events,
    /// Each open call's reply deadline.
    deadlines: Deadlines,
    /// The latest `now` the driver gave: a call written from the
    /// handshake's end is armed from it.
    now: Timestamp,
}

impl McpConn {
    /// The adapter for a server offering `tools` (the declarations bound
    /// to it), with no process yet.
    pub fn new(tools: Vec<Arc<Tool>>, limits: Limits) -> McpConn {
        McpConn {
            tools,
            limits,
            state: State::Down,
            reader: LineReader::default(),
            outbox: Outbox::default(),
            open: BTreeMap::new(),
            waiting: VecDeque::new(),
            blocked: VecDeque::new(),
            names: BTreeSet::new(),
            pages: 0,
            described: None,
            restart: false,
            next_id: 1,
            events: Events::new(),
            deadlines: Deadlines::default(),
            now: 0,
        }
    }

    /// The names of the tools the running server lists.
    pub fn server_tools(&self) -> &BTreeSet<String> {
        &self.names
    }

    fn start(&mut self) {
        match self.state {
            State::Down => {
                self.state = State::Starting;
                self.events.push_back(HostEvent::Start);
            }
            State::Stopping => self.restart = true,
            _ => {}
        }
    }

    fn close(&mut self, key: CallKey, outcome: Outcome) {
        self.events.push_back(HostEvent::Closed { key, outcome });
    }

    fn request(&mut self, method: &str, params: &[u8], phase: Phase, now: Timestamp) {
        let id = self.next_id;
        self.next_id += 1;
        self.outbox.push(|out| {
            jsonrpc::encode_request(id.to_string().as_bytes(), method, Some(params), out)
        });
        let deadline = match self.state {
            State::Handshake { deadline, .. } => deadline,
            _ => now.saturating_add(self.limits.describe_timeout),
        };
        self.state = State::Handshake {
            phase,
            id,
            deadline,
        };
    }

    fn list_page(&mut self, cursor: Option<&str>, now: Timestamp) {
        let mut params = b"{".to_vec();
        if let Some(c) = cursor {
            params.extend_from_slice(b"\"cursor\":");
            write_string(c, &mut params);
        }
        params.push(b'}');
        self.pages += 1;
        self.request("tools/list", &params, Phase::Listing, now);
    }

    fn write(&mut self, call: Call) {
        let name = call.tool.identity().name.clone();
        let served = self
            .described
            .as_ref()
            .is_some_and(|d| d.tools.contains_key(call.tool.identity()));
        if !served {
            let why = format!(
                "the MCP server no longer offers a tool `{name}` for {}",
                call.tool.identity()
            );
            return self.close(call.key, Outcome::NotRun(why));
        }
        if self.open.contains_key(&call.key.call) {
            self.blocked.push_back(call);
            return;
        }
        let decl = &call.tool.declaration;
        let end = self.outbox.push(|out| {
            let mut id = Vec::new();
            write_string(&call.key.call, &mut id);
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(&id);
            out.extend_from_slice(b",\"method\":\"tools/call\",\"params\":{\"name\":");
            write_string(&name, out);
            out.extend_from_slice(b",\"arguments\":{");
            let mut order: Vec<usize> = (0..decl.params.len()).collect();
            order.sort_by(|&a, &b| decl.params[a].name.cmp(&decl.params[b].name));
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_string(&decl.params[i].name, out);
                out.push(b':');
                write_canonical(&call.args[i], out);
            }
            out.extend_from_slice(b"}}}");
        });
        let id = call.key.call.clone();
        let deadline = self.now.saturating_add(self.limits.call_timeout);
        let seq = self.deadlines.arm(deadline, &call.key);
        let open = Open {
            tool: call.tool,
            type_args: call.type_args,
            end,
            seq,
        };
        self.open.insert(id, (call.key, open));
    }

    /// Writes MCP's cancel of the call `key`.
    fn write_cancelled(&mut self, key: &CallKey, reason: &str) {
        let mut params = b"{\"requestId\":".to_vec();
        write_string(&key.call, &mut params);
        params.extend_from_slice(b",\"reason\":");
        write_string(reason, &mut params);
        params.push(b'}');
        self.outbox.push(|out| {
            jsonrpc::encode_notification("notifications/cancelled", Some(&params), out)
        });
    }

    /// Drops the deadlines of calls no longer open from the queue's front.
    fn settle(&mut self) {
        let open = &self.open;
        self.deadlines.settle(open.len(), |key, seq| {
            open.get(&key.call)
                .is_some_and(|(k, o)| k == key && o.seq == seq)
        });
    }

    /// Closes every call whose reply deadline has come: one the server
    /// read is cancelled and Unknown; one it has not read is NotRun, and
    /// the server, which does not read its input, is stopped.
    fn expire(&mut self, now: Timestamp) {
        self.settle();
        while let Some(key) = self.deadlines.due(now) {
            if let Some((key, open)) = self.open.remove(&key.call) {
                let reached = self.outbox.reached(open.end);
                let timeout = self.limits.call_timeout;
                let why = past_deadline(&open.tool, "tools/call", timeout, reached);
                let id = key.call.clone();
                if reached {
                    self.write_cancelled(&key, "no reply within the host's call deadline");
                    self.close(key, Outcome::Unknown(why));
                    self.unblock(&id);
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

    /// Sends the first blocked call whose id is free again.
    fn unblock(&mut self, id: &str) {
        if let Some(i) = self.blocked.iter().position(|c| c.key.call == id) {
            if let Some(call) = self.blocked.remove(i) {
                self.write(call);
            }
        }
    }

    fn ready(&mut self) {
        let served: Vec<Arc<Tool>> = self
            .tools
            .iter()
            .filter(|t| self.names.contains(&t.identity().name))
            .cloned()
            .collect();
        let described = Described {
            data: DataVersion::ours(),
            tools: served
                .iter()
                .map(|t| (t.identity().clone(), t.fingerprint))
                .collect(),
            result: describe_result(&served),
        };
        self.events
            .push_back(HostEvent::Described(Ok(described.clone())));
        self.described = Some(described);
        self.state = State::Ready;
        while let Some(call) = self.waiting.pop_front() {
            self.write(call);
        }
    }

    fn failed(&mut self, why: String) {
        self.events
            .push_back(HostEvent::Described(Err(why.clone())));
        for call in std::mem::take(&mut self.waiting) {
            self.close(call.key, Outcome::NotRun(format!("the MCP server {why}")));
        }
        self.state = State::Stopping;
        self.events.push_back(HostEvent::Stop);
    }

    fn handshake_response(&mut self, phase: Phase, result: &[u8], now: Timestamp) {
        let members = match members(result) {
            Ok(m) => m,
            Err(e) => return self.failed(format!("sent a handshake result that {e}")),
        };
        let get = |k: &str| members.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        match phase {
            Phase::Initializing => {
                let version = get("protocolVersion").and_then(string);
                match version {
                    Some(v) if SUPPORTED_VERSIONS.contains(&v.as_ref()) => {}
                    Some(v) => {
                        return self.failed(format!(
                            "answered initialize with protocol version {v:?}, which the adapter \
                             does not speak"
                        ))
                    }
                    None => {
                        return self
                            .failed("answered initialize with no protocolVersion".to_owned())
                    }
                }
                self.outbox.push(|out| {
                    jsonrpc::encode_notification("notifications/initialized", None, out)
                });
                self.names.clear();
                self.pages = 0;
                self.list_page(None, now);
            }
            Phase::Listing => {
                let Some(tools) = get("tools") else {
                    return self.failed("answered tools/list with no `tools`".to_owned());
                };
                match tool_names(tools) {
                    Ok(names) => self.names.extend(names),
                    Err(why) => return self.failed(format!("answered tools/list: {why}")),
                }
                match get("nextCursor").map(|c| (c, string(c))) {
                    Some((_, Some(cursor))) if self.pages < self.limits.max_list_pages => {
                        let cursor = cursor.into_owned();
                        self.list_page(Some(&cursor), now);
                    }
                    Some((_, Some(_))) => self.failed(format!(
                        "listed more than {} pages of tools",
                        self.limits.max_list_pages
                    )),
                    Some((raw, None)) if raw != b"null" => self.failed(
                        "answered tools/list with a nextCursor that is not a string".to_owned(),
                    ),
                    _ => self.ready(),
                }
            }
        }
    }

    fn call_result(&mut self, id: &str, result: Result<&[u8], String>) {
        let Some((key, open)) = self.open.remove(id) else {
            return self.events.push_back(HostEvent::Dropped(format!(
                "a tools/call response for id {id:?}, which is not open: dropped"
            )));
        };
        let outcome = match result {
            Err(why) => Outcome::BadReply(why),
            Ok(result) => match map_result(result) {
                Err(why) => Outcome::BadReply(format!("the MCP result cannot be mapped: {why}")),
                Ok((is_error, value)) => {
                    let raw = if is_error {
                        RawOutcome::Failed(&value)
                    } else {
                        RawOutcome::Ok(&value)
                    };
                    decode_outcome(raw, &open, &self.limits.decode)
                }
            },
        };
        self.close(key, outcome);
        self.unblock(id);
    }

    fn unreadable(&mut self, ids: oversize::Ids, why: String) {
        if let State::Handshake { id, .. } = self.state {
            if ids.id.as_deref() == Some(id.to_string().as_bytes()) {
                return self.failed(format!("sent a handshake response that {why}"));
            }
        }
        if let Some(id) = ids.id.as_deref().and_then(string) {
            let id = id.into_owned();
            if self.open.contains_key(id.as_str()) {
                return self.call_result(&id, Err(format!("the MCP response {why}")));
            }
        }
        self.events.push_back(HostEvent::Dropped(format!(
            "a line that {why}, naming no open call: dropped"
        )));
    }

    fn line(&mut self, line: Line<'_>, now: Timestamp) {
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
        let message = match jsonrpc::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                let why = format!("is not a JSON-RPC 2.0 message ({e})");
                return self.unreadable(oversize::scan(bytes), why);
            }
        };
        let handshake = |id: &[u8], state: State| match state {
            State::Handshake { phase, id: h, .. } if id == h.to_string().as_bytes() => Some(phase),
            _ => None,
        };
        match message {
            Message::Response { id, result } => {
                if let Some(phase) = handshake(id, self.state) {
                    return self.handshake_response(phase, result, now);
                }
                match string(id) {
                    Some(call) => self.call_result(&call, Ok(result)),
                    None => self.events.push_back(HostEvent::Dropped(
                        "a response to no request of the adapter's: dropped".into(),
                    )),
                }
            }
            Message::Error {
                id, code, message, ..
            } => {
                if handshake(id, self.state).is_some() {
                    return self.failed(format!(
                        "answered its handshake with error {code}: {message}"
                    ));
                }
                match string(id) {
                    Some(call) => self.call_result(
                        &call,
                        Err(format!(
                            "the MCP server answered tools/call with error {code}: {message}"
                        )),
                    ),
                    None => self.events.push_back(HostEvent::Dropped(format!(
                        "an error response to no request of the adapter's ({code}: {message}): \
                         dropped"
                    ))),
                }
            }
            Message::Request { id, method, .. } if method == "ping" => {
                self.outbox
                    .push(|out| jsonrpc::encode_response(id, b"{}", out));
            }
            Message::Request { id, method, .. } => {
                let message = format!("the adapter offers no method `{method}`");
                self.outbox.push(|out| {
                    jsonrpc::encode_error(id, jsonrpc::METHOD_NOT_FOUND, &message, out)
                });
            }
            Message::Notification { method, .. } => self.events.push_back(HostEvent::Dropped(
                format!("a notification `{method}` from the MCP server: ignored"),
            )),
        }
    }

    fn ended(&mut self, why: &str) {
        self.deadlines.clear();
        for (_, (key, open)) in std::mem::take(&mut self.open) {
            let outcome = if self.outbox.reached(open.end) {
                Outcome::Unknown("the MCP server's process ended with the call out".into())
            } else {
                Outcome::NotRun(
                    "the MCP server's process ended before the call was written to it".into(),
                )
            };
            self.close(key, outcome);
        }
        for call in std::mem::take(&mut self.blocked) {
            self.close(
                call.key,
                Outcome::NotRun("the MCP server's process ended before the call was sent".into()),
            );
        }
        let was = self.state;
        self.described = None;
        self.reader.reset();
        self.outbox.reset();
        self.state = State::Down;
        match was {
            State::Starting | State::Handshake { .. } => {
                self.events
                    .push_back(HostEvent::Described(Err(why.to_owned())));
                for call in std::mem::take(&mut self.waiting) {
                    self.close(call.key, Outcome::NotRun(format!("the MCP server {why}")));
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

/// The names in `tools/list`'s `tools`: each entry an object with a string
/// `name`.
fn tool_names(tools: &[u8]) -> Result<Vec<String>, String> {
    let mut t = Tokenizer::new(tools);
    if !matches!(t.next_event(), Ok(Some(Event::BeginArray))) {
        return Err("`tools` is not an array".into());
    }
    let mut names = Vec::new();
    loop {
        let first = match t.next_event() {
            Ok(Some(Event::EndArray)) => break,
            Ok(Some(ev)) => ev,
            _ => return Err("`tools` is not an array".into()),
        };
        let start = t.event_offset();
        let end = t.skip_value(&first).map_err(|e| e.to_string())?;
        let entry = members(&tools[start..end]).map_err(|e| format!("a tool {e}"))?;
        match entry
            .iter()
            .find(|(k, _)| k == "name")
            .and_then(|(_, v)| string(v))
        {
            Some(name) => names.push(name.into_owned()),
            None => return Err("a tool has no string `name`".into()),
        }
    }
    Ok(names)
}

/// A `tools/call` result as `(isError, the value's JSON text)`: its
/// `structuredContent`, or else the JSON its one text content block holds.
fn map_result(result: &[u8]) -> Result<(bool, Vec<u8>), String> {
    let fields = members(result).map_err(|e| format!("the result {e}"))?;
    let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let is_error = match get("isError") {
        None | Some(b"false") => false,
        Some(b"true") => true,
        Some(_) => return Err("`isError` is not a boolean".into()),
    };
    if let Some(structured) = get("structuredContent") {
        if structured != b"null" {
            return Ok((is_error, structured.to_vec()));
        }
    }
    let Some(content) = get("content") else {
        return Err("it has neither structuredContent nor content".into());
    };
    let mut t = Tokenizer::new(content);
    if !matches!(t.next_event(), Ok(Some(Event::BeginArray))) {
        return Err("its content is not an array".into());
    }
    let mut blocks: Vec<&[u8]> = Vec::new();
    loop {
        let first = match t.next_event() {
            Ok(Some(Event::EndArray)) => break,
            Ok(Some(ev)) => ev,
            _ => return Err("its content is not an array".into()),
        };
        let start = t.event_offset();
        let end = t.skip_value(&first).map_err(|e| e.to_string())?;
        blocks.push(&content[start..end]);
    }
    let [block] = blocks.as_slice() else {
        return Err(format!(
            "it has no structuredContent and {} content blocks, not one text block",
            blocks.len()
        ));
    };
    let block = members(block).map_err(|e| format!("its content block {e}"))?;
    let field = |k: &str| block.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    if field("type").and_then(string).as_deref() != Some("text") {
        return Err("it has no structuredContent and its one content block is not text".into());
    }
    match field("text").and_then(string) {
        Some(Cow::Borrowed(s)) => Ok((is_error, s.as_bytes().to_vec())),
        Some(Cow::Owned(s)) => Ok((is_error, s.into_bytes())),
        None => Err("its text content block has no string `text`".into()),
    }
}

impl ToolConn for McpConn {
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
        let taken = self
            .open
            .get(&call.key.call)
            .is_some_and(|(k, _)| *k == call.key)
            || self
                .waiting
                .iter()
                .chain(self.blocked.iter())
                .any(|c| c.key == call.key);
        if taken {
            return Err(SendError::Duplicate(call.key));
        }
        if self.state == State::Ready {
            self.write(call);
        } else {
            self.waiting.push_back(call);
            self.start();
        }
        Ok(())
    }

    fn cancel(&mut self, _now: Timestamp, key: &CallKey) {
        let pending = |q: &mut VecDeque<Call>| {
            q.iter()
                .position(|c| c.key == *key)
                .and_then(|i| q.remove(i))
        };
        if let Some(call) = pending(&mut self.waiting).or_else(|| pending(&mut self.blocked)) {
            return self.close(
                call.key,
                Outcome::NotRun("cancelled before it was written to the MCP server".into()),
            );
        }
        if self.open.get(&key.call).is_some_and(|(k, _)| k == key) {
            self.write_cancelled(key, "cancelled by the host");
        }
    }

    fn abandon(&mut self, _now: Timestamp, key: &CallKey) {
        if self.open.get(&key.call).is_some_and(|(k, _)| k == key) {
            self.open.remove(&key.call);
            let id = key.call.clone();
            self.unblock(&id);
        }
        self.waiting.retain(|c| c.key != *key);
        self.blocked.retain(|c| c.key != *key);
        self.settle();
    }

    fn handle_started(&mut self, now: Timestamp) {
        if self.state != State::Starting {
            return;
        }
        self.reader.reset();
        self.outbox.reset();
        let mut params = b"{\"protocolVersion\":".to_vec();
        write_string(PROTOCOL_VERSION, &mut params);
        params.extend_from_slice(
            b",\"capabilities\":{},\"clientInfo\":{\"name\":\"limen\",\"version\":",
        );
        write_string(env!("CARGO_PKG_VERSION"), &mut params);
        params.extend_from_slice(b"}}");
        self.state = State::Down;
        self.request("initialize", &params, Phase::Initializing, now);
    }

    fn handle_data(&mut self, now: Timestamp, data: &[u8]) {
        self.now = now;
        if matches!(self.state, State::Down | State::Starting) {
            return;
        }
        let mut reader = std::mem::take(&mut self.reader);
        reader.feed(data, self.limits.max_line, |line| self.line(line, now));
        if !matches!(self.state, State::Down | State::Starting) {
            self.reader = reader;
        }
        self.settle();
    }

    fn handle_eof(&mut self, _now: Timestamp) {
        if self.state != State::Down {
            self.ended("ended before it listed its tools");
        }
    }

    fn handle_start_failed(&mut self, _now: Timestamp, reason: &str) {
        if self.state != State::Down {
            self.ended(&format!("could not be started: {reason}"));
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.now = now;
        if let State::Handshake { deadline, .. } = self.state {
            if now >= deadline {
                let within = duration_text(self.limits.describe_timeout);
                self.failed(format!(
                    "did not complete its handshake and list its tools within {within}"
                ));
            }
        }
        self.expire(now);
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        let handshake = match self.state {
            State::Handshake { deadline, .. } => Some(deadline),
            _ => None,
        };
        match (handshake, self.deadlines.first()) {
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
        self.open.len() + self.waiting.len() + self.blocked.len()
    }
}
