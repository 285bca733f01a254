//! The four messages of the Tool process protocol, written and read
//! (`docs/tool-protocol.md` is their exact text).
//!
//! ```text
//! host → {"jsonrpc":"2.0","id":1,"method":"describe"}
//! impl → {"jsonrpc":"2.0","id":1,"result":{"data":"1.0","tools":[…]}}
//! host → {"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"7",
//!          "tool":"…","args":{…}[,"expects":{schema}]}}
//! impl → {"jsonrpc":"2.0","method":"reply","params":{"runId":"r","callId":"7",
//!          "outcome":{"Ok":…}}}
//! host → {"jsonrpc":"2.0","method":"cancel","params":{"runId":"r","callId":"7"}}
//! ```
//!
//! describe is a request and its response; call, reply and cancel are
//! notifications, correlated by `(runId, callId)` alone.

use std::borrow::Cow;

use super::conn::{RawOutcome, SendError};
use super::{Call, CallKey, KeyText};
use crate::flow::canonical::write_canonical;
use crate::flow::schema::schema_of;
use crate::flow::types::Type;
use crate::flow::value::Value;
use crate::json::jsonrpc;
use crate::json::{write_string, DuplicateKeys, Event, Tokenizer};

/// The describe request's method.
pub const DESCRIBE: &str = "describe";
/// The call notification's method.
pub const CALL: &str = "call";
/// The reply notification's method.
pub const REPLY: &str = "reply";
/// The cancel notification's method.
pub const CANCEL: &str = "cancel";

/// Appends the describe request with numeric id `id`.
pub fn write_describe(id: u64, out: &mut Vec<u8>) {
    jsonrpc::encode_request(id.to_string().as_bytes(), DESCRIBE, None, out);
}

fn write_key(key: &CallKey, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"runId\":");
    write_string(&key.run, out);
    out.extend_from_slice(b",\"callId\":");
    write_string(&key.call, out);
}

/// The part of a call message fixed by its declaration: `,"tool":…,"args":{`
/// and the order its args are written in (by parameter name). Made once
/// per declaration by a host that sends many calls, so a call costs no
/// identity formatting and no sort.
#[derive(Clone, Debug)]
pub(crate) struct CallShape {
    middle: Vec<u8>,
    order: Vec<usize>,
}

impl CallShape {
    pub(crate) fn of(tool: &super::Tool) -> CallShape {
        let decl = &tool.declaration;
        let mut middle = b",\"tool\":".to_vec();
        write_string(&decl.identity.to_string(), &mut middle);
        middle.extend_from_slice(b",\"args\":{");
        let mut order: Vec<usize> = (0..decl.params.len()).collect();
        order.sort_by(|&a, &b| decl.params[a].name.cmp(&decl.params[b].name));
        CallShape { middle, order }
    }
}

/// Appends a call notification: args keyed by parameter name in code-point
/// order (so the args object is itself canonical), each a canonical value;
/// for a generic Tool, `expects`, the schema of the success type the caller
/// expects.
pub fn write_call(call: &Call, out: &mut Vec<u8>) -> Result<(), SendError> {
    let shape = CallShape::of(&call.tool);
    write_shaped_call(&call.key, &call.into(), &shape, out)
}

/// [`write_call`] with the declaration's part made beforehand, the call's
/// key given apart from its other parts (a host has moved it into its
/// table of open calls by then).
pub(crate) fn write_shaped_call(
    key: &CallKey,
    call: &CallParts<'_>,
    shape: &CallShape,
    out: &mut Vec<u8>,
) -> Result<(), SendError> {
    let decl = &call.tool.declaration;
    let expects = if decl.generic.is_empty() {
        None
    } else {
        let binds = super::conn::bindings(call.tool, call.type_args);
        let ty = substitute(&decl.ok, &binds);
        let schema =
            schema_of(&ty, &call.tool.env).map_err(|e| SendError::Unwritable(e.to_string()))?;
        Some(serde_json::to_string(&schema).unwrap_or_default())
    };
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":");
    write_key(key, out);
    out.extend_from_slice(&shape.middle);
    for (n, &i) in shape.order.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_string(&decl.params[i].name, out);
        out.push(b':');
        write_canonical(&call.args[i], out);
    }
    out.push(b'}');
    if let Some(expects) = expects {
        out.extend_from_slice(b",\"expects\":");
        out.extend_from_slice(expects.as_bytes());
    }
    out.extend_from_slice(b"}}");
    Ok(())
}

/// What a call message says besides its key.
pub(crate) struct CallParts<'a> {
    pub tool: &'a super::Tool,
    pub args: &'a [Value],
    pub type_args: &'a [Type],
}

impl<'a> From<&'a Call> for CallParts<'a> {
    fn from(call: &'a Call) -> CallParts<'a> {
        CallParts {
            tool: &call.tool,
            args: &call.args,
            type_args: &call.type_args,
        }
    }
}

/// Appends a cancel notification.
pub fn write_cancel(key: &CallKey, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"cancel\",\"params\":");
    write_key(key, out);
    out.extend_from_slice(b"}}");
}

/// What an implementation answers a call with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The declared success value.
    Ok(Value),
    /// The declared error value.
    Failed(Value),
    /// The call definitely did not happen.
    NotRun(String),
    /// The call may or may not have happened.
    Unknown(String),
}

/// Appends a reply notification.
pub fn write_reply(key: &CallKey, reply: &Reply, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":");
    write_key(key, out);
    out.extend_from_slice(b",\"outcome\":{");
    match reply {
        Reply::Ok(v) => {
            out.extend_from_slice(b"\"Ok\":");
            write_canonical(v, out);
        }
        Reply::Failed(v) => {
            out.extend_from_slice(b"\"Failed\":");
            write_canonical(v, out);
        }
        Reply::NotRun(r) => {
            out.extend_from_slice(b"\"NotRun\":");
            write_string(r, out);
        }
        Reply::Unknown(r) => {
            out.extend_from_slice(b"\"Unknown\":");
            write_string(r, out);
        }
    }
    out.extend_from_slice(b"}}}");
}

/// `ty` with each type parameter in `binds` replaced by its type.
pub fn substitute(ty: &Type, binds: &[(String, Type)]) -> Type {
    let s = |t: &Type| Box::new(substitute(t, binds));
    match ty {
        Type::Param(name) => binds
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| ty.clone(), |(_, t)| t.clone()),
        Type::List(t) => Type::List(s(t)),
        Type::Set(t) => Type::Set(s(t)),
        Type::Option(t) => Type::Option(s(t)),
        Type::Dict(k, v) => Type::Dict(s(k), s(v)),
        Type::Result(o, e) => Type::Result(s(o), s(e)),
        Type::Tuple(items) => Type::Tuple(items.iter().map(|t| substitute(t, binds)).collect()),
        Type::Named { identity, args } => Type::Named {
            identity: identity.clone(),
            args: args.iter().map(|t| substitute(t, binds)).collect(),
        },
        _ => ty.clone(),
    }
}

/// One member of an object: its key and its value's raw text.
pub(crate) type Member<'a> = (Cow<'a, str>, &'a [u8]);

/// The members of a JSON object text: each key and its value's raw text.
/// A key given twice, or a text that is not one object, is refused.
pub(crate) fn members(raw: &[u8]) -> Result<Vec<Member<'_>>, String> {
    let mut t = Tokenizer::new(raw);
    match t.next_event() {
        Ok(Some(Event::BeginObject)) => {}
        Ok(_) => return Err("is not an object".into()),
        Err(e) => return Err(format!("is not JSON: {e}")),
    }
    let mut keys = DuplicateKeys::new();
    let mut out = Vec::new();
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::Key(k))) => k,
            Ok(Some(Event::EndObject)) => break,
            Ok(_) => return Err("is not an object".into()),
            Err(e) => return Err(format!("is not JSON: {e}")),
        };
        if !keys.insert(&key) {
            return Err(format!("gives the member `{key}` twice"));
        }
        let first = match t.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => return Err("is not closed".into()),
            Err(e) => return Err(format!("is not JSON: {e}")),
        };
        let start = t.event_offset();
        let end = t
            .skip_value(&first)
            .map_err(|e| format!("is not JSON: {e}"))?;
        out.push((key, &raw[start..end]));
    }
    t.finish().map_err(|e| format!("is not JSON: {e}"))?;
    Ok(out)
}

/// The string a raw JSON value holds, if it is one.
pub(crate) fn string(raw: &[u8]) -> Option<Cow<'_, str>> {
    match Tokenizer::new(raw).next_event() {
        Ok(Some(Event::String(s))) => Some(s),
        _ => None,
    }
}

fn find<'a>(members: &[Member<'a>], key: &str) -> Option<&'a [u8]> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Reads `runId` and `callId` from params' members.
fn key_of(members: &[Member<'_>]) -> Result<CallKey, String> {
    let field = |name: &str| match find(members, name) {
        Some(raw) => string(raw)
            .map(|s| KeyText::from(s.as_ref()))
            .ok_or_else(|| format!("`{name}` is not a string")),
        None => Err(format!("it has no `{name}`")),
    };
    Ok(CallKey {
        run: field("runId")?,
        call: field("callId")?,
    })
}

/// A reply's params, read: the call it names and its outcome, or why the
/// outcome is malformed.
pub(crate) type ReplyParams<'a> = (CallKey, Result<RawOutcome<'a>, String>);

/// Reads a reply's params. `Err` when no call can be named.
pub(crate) fn parse_reply(params: &[u8]) -> Result<ReplyParams<'_>, String> {
    let members = members(params).map_err(|e| format!("the reply's params {e}"))?;
    let key = key_of(&members).map_err(|e| format!("the reply names no call: {e}"))?;
    let outcome = match find(&members, "outcome") {
        None => Err("the reply has no `outcome`".to_owned()),
        Some(raw) => parse_outcome(raw),
    };
    Ok((key, outcome))
}

fn parse_outcome(raw: &[u8]) -> Result<RawOutcome<'_>, String> {
    let shape = "the outcome is one of {\"Ok\": value}, {\"Failed\": error}, \
                 {\"NotRun\": \"reason\"}, {\"Unknown\": \"reason\"}";
    let members = members(raw).map_err(|e| format!("{shape}; it {e}"))?;
    let [(tag, value)] = members.as_slice() else {
        return Err(format!("{shape}; it has {} members", members.len()));
    };
    let reason = |name: &str| {
        string(value)
            .map(Cow::into_owned)
            .ok_or_else(|| format!("the {name} reason is a string"))
    };
    match tag.as_ref() {
        "Ok" => Ok(RawOutcome::Ok(value)),
        "Failed" => Ok(RawOutcome::Failed(value)),
        "NotRun" => Ok(RawOutcome::NotRun(reason("NotRun")?)),
        "Unknown" => Ok(RawOutcome::Unknown(reason("Unknown")?)),
        other => Err(format!("{shape}; `{other}` is none of them")),
    }
}

/// A call's params, read by an implementation.
#[derive(Debug)]
pub(crate) struct CallParams<'a> {
    pub key: CallKey,
    pub tool: Cow<'a, str>,
    pub args: &'a [u8],
    pub expects: Option<&'a [u8]>,
}

/// Reads a call's params: `Err` with the key when one could be read.
pub(crate) fn parse_call(params: &[u8]) -> Result<CallParams<'_>, (Option<CallKey>, String)> {
    let members = members(params).map_err(|e| (None, format!("the call's params {e}")))?;
    let key = key_of(&members).map_err(|e| (None, format!("the call names no call: {e}")))?;
    let tool = match find(&members, "tool").map(string) {
        Some(Some(t)) => t,
        Some(None) => return Err((Some(key), "the call's `tool` is not a string".into())),
        None => return Err((Some(key), "the call has no `tool`".into())),
    };
    let Some(args) = find(&members, "args") else {
        return Err((Some(key), "the call has no `args`".into()));
    };
    Ok(CallParams {
        key,
        tool,
        args,
        expects: find(&members, "expects"),
    })
}

/// Reads a cancel's params.
pub(crate) fn parse_cancel(params: &[u8]) -> Result<CallKey, String> {
    let members = members(params).map_err(|e| format!("the cancel's params {e}"))?;
    key_of(&members)
}

/// How a reply written as [`write_reply`] writes it opens, up to the first
/// key of its params.
const REPLY_OPENING: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"reply\",\"params\":{";
/// How a call written as [`write_call`] writes it opens, likewise.
const CALL_OPENING: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"call\",\"params\":{";

/// A reply's run id and call id as its line holds them: borrowed unless
/// escaped.
pub(crate) type FastKey<'a> = (Cow<'a, str>, Cow<'a, str>);

/// Reads a line that is exactly a well-formed reply in one pass:
/// `{"jsonrpc": "2.0", "method": "reply", "params": {"runId", "callId",
/// "outcome": {tag: value}}}` in any key order and nothing else. `None` for
/// anything else, which the general path then reads (and judges).
pub(crate) fn fast_reply(line: &[u8]) -> Option<(FastKey<'_>, RawOutcome<'_>)> {
    let (run, call, outcome) = fast_envelope(line, REPLY_OPENING, REPLY, fast_reply_params)?;
    Some(((run, call), outcome))
}

/// Reads a line that is exactly `{"jsonrpc": "2.0", "method": <method>,
/// "params": {…}}` in any key order and nothing else, its params read by
/// `params` (which sees the tokenizer just inside them). The usual opening,
/// `opening` (how our own writer, and most peers, put the envelope first),
/// is matched byte for byte: six events the tokenizer need not make.
fn fast_envelope<'a, P>(
    line: &'a [u8],
    opening: &[u8],
    method_name: &str,
    params: impl Fn(&mut Tokenizer<'a>, &'a [u8]) -> Option<P>,
) -> Option<P> {
    let (mut version, mut method, mut read) = (false, false, None);
    let mut t = if line.starts_with(opening) {
        let mut t = Tokenizer::inside_objects(line, opening.len(), 2);
        read = Some(params(&mut t, line)?);
        (version, method) = (true, true);
        t
    } else {
        let mut t = Tokenizer::new(line);
        if !matches!(t.next_event(), Ok(Some(Event::BeginObject))) {
            return None;
        }
        t
    };
    loop {
        match t.next_event().ok()?? {
            Event::EndObject => break,
            Event::Key(k) => match (k.as_ref(), t.next_event().ok()??) {
                ("jsonrpc", Event::String(v)) if !version && v == "2.0" => version = true,
                ("method", Event::String(m)) if !method && m == method_name => method = true,
                ("params", Event::BeginObject) if read.is_none() => {
                    read = Some(params(&mut t, line)?);
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    t.finish().ok()?;
    match (version, method) {
        (true, true) => read,
        _ => None,
    }
}

fn fast_reply_params<'a>(
    t: &mut Tokenizer<'a>,
    line: &'a [u8],
) -> Option<(Cow<'a, str>, Cow<'a, str>, RawOutcome<'a>)> {
    let (mut run, mut call, mut outcome) = (None, None, None);
    loop {
        match t.next_event().ok()?? {
            Event::EndObject => break,
            Event::Key(k) => match (k.as_ref(), t.next_event().ok()??) {
                ("runId", Event::String(s)) if run.is_none() => run = Some(s),
                ("callId", Event::String(s)) if call.is_none() => call = Some(s),
                ("outcome", Event::BeginObject) if outcome.is_none() => {
                    let Event::Key(tag) = t.next_event().ok()?? else {
                        return None;
                    };
                    let first = t.next_event().ok()??;
                    let start = t.event_offset();
                    let o = match (tag.as_ref(), &first) {
                        ("Ok", _) => RawOutcome::Ok(&line[start..t.skip_value(&first).ok()?]),
                        ("Failed", _) => {
                            RawOutcome::Failed(&line[start..t.skip_value(&first).ok()?])
                        }
                        ("NotRun", Event::String(s)) => RawOutcome::NotRun(s.to_string()),
                        ("Unknown", Event::String(s)) => RawOutcome::Unknown(s.to_string()),
                        _ => return None,
                    };
                    if !matches!(t.next_event().ok()??, Event::EndObject) {
                        return None;
                    }
                    outcome = Some(o);
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    Some((run?, call?, outcome?))
}

/// Reads a line that is exactly a well-formed call in one pass (any key
/// order, nothing else); `None` for anything else, which the general path
/// then reads.
pub(crate) fn fast_call(line: &[u8]) -> Option<CallParams<'_>> {
    fast_envelope(line, CALL_OPENING, CALL, fast_call_params)
}

fn fast_call_params<'a>(t: &mut Tokenizer<'a>, line: &'a [u8]) -> Option<CallParams<'a>> {
    let (mut run, mut call, mut tool, mut args, mut expects) = (None, None, None, None, None);
    loop {
        match t.next_event().ok()?? {
            Event::EndObject => break,
            Event::Key(k) => {
                let first = t.next_event().ok()??;
                match (k.as_ref(), first) {
                    ("runId", Event::String(s)) if run.is_none() => run = Some(KeyText::from(&*s)),
                    ("callId", Event::String(s)) if call.is_none() => {
                        call = Some(KeyText::from(&*s))
                    }
                    ("tool", Event::String(s)) if tool.is_none() => tool = Some(s),
                    ("args", first @ Event::BeginObject) if args.is_none() => {
                        let start = t.event_offset();
                        args = Some(&line[start..t.skip_value(&first).ok()?]);
                    }
                    ("expects", first) if expects.is_none() => {
                        let start = t.event_offset();
                        expects = Some(&line[start..t.skip_value(&first).ok()?]);
                    }
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    Some(CallParams {
        key: CallKey {
            run: run?,
            call: call?,
        },
        tool: tool?,
        args: args?,
        expects,
    })
}
