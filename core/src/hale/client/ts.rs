//! The TypeScript client of a surface (§ Generated specs and clients): one
//! `.ts` module with no dependency beyond `fetch` and `WebSocket`.
//!
//! The module is the header ([`super::header`]), a doc comment naming what
//! it speaks, the `SURFACE` and `DIGEST` constants, an interface per record
//! the rows reach, the runtime (the same text in every client, the files
//! beside this one: `common.ts` always, `shared.ts` and `calls.ts` where the
//! surface has members, `shared.ts` and `streams.ts` where the program has a
//! `ws://` stream, so `--noUnusedLocals` holds of every client), then a
//! function per member and a `subscribe<Topic>` per stream row.
//!
//! Names. A record's interface is its name with each `::` written `_`
//! (`lib::Item` is `lib_Item`), and a `_` added when that is a word the
//! module cannot declare (a TypeScript reserved word, a global type the
//! runtime uses, a name of the runtime's: `Refusal` is `Refusal_`). A
//! member `Orders::place` is the function `ordersPlace` answering
//! `OrdersPlaceOutcome`; a topic `Fills` is `subscribeFills` yielding
//! `FillsItem`. A field is its JSON key (a property may be any string, so a
//! key is never renamed; one that is not an identifier is quoted). Two names
//! that would come out the same are refused, naming both. The runtime's own
//! helpers end in `$`, which no Hale name can hold, so they never collide.

use std::collections::BTreeMap;

use super::{header, ClientError, ClientSurface, Lang};
use crate::hale::docs::book::{Scalar, Slot};
use crate::hale::model::TransportKind;
use crate::words::ECMASCRIPT_RESERVED;

/// The outcome types and the refusal every client names.
const COMMON: &str = include_str!("ts/common.ts");
/// The helpers the calls and the streams share.
const SHARED: &str = include_str!("ts/shared.ts");
/// The calls' runtime: `post$` and `outcome$` over `fetch`.
const CALLS: &str = include_str!("ts/calls.ts");
/// The streams' runtime: `subscribe$` over `WebSocket`.
const STREAMS: &str = include_str!("ts/streams.ts");

/// What the module declares itself, by section: a record may not take
/// these names.
const OWN: &[&str] = &[
    "SURFACE",
    "DIGEST",
    "TransportError",
    "RefusalKind",
    "Refusal",
    "CallOptions",
    "CallResult",
    "CallHandlerError",
    "CallRefusal",
    "CallServerError",
    "SubscribeOptions",
    "Subscribed",
    "StreamEvent",
    "StreamClosed",
    "StreamExpired",
    "StreamRevoked",
    "StreamRefused",
    "StreamLost",
    "StreamEnd",
    "StreamItem",
];

/// Whether a declaration cannot take `name`, or should not shadow it: an
/// ECMAScript reserved word, or one of [`RESERVED`].
fn reserved(name: &str) -> bool {
    ECMASCRIPT_RESERVED.contains(&name) || RESERVED.contains(&name)
}

/// Beside ECMAScript's reserved words: TypeScript's type words, and the
/// globals the runtime names.
const RESERVED: &[&str] = &[
    // TypeScript's type words.
    "any",
    "bigint",
    "boolean",
    "never",
    "number",
    "object",
    "string",
    "symbol",
    "undefined",
    "unknown",
    // The globals the runtime names.
    "AbortSignal",
    "Array",
    "AsyncGenerator",
    "CloseEvent",
    "Error",
    "JSON",
    "MessageEvent",
    "Number",
    "Object",
    "Promise",
    "Record",
    "RequestInit",
    "Response",
    "String",
    "TypeError",
    "WebSocket",
    "encodeURIComponent",
    "fetch",
];

/// The TypeScript client of `surface`.
pub fn generate(surface: &ClientSurface) -> Result<String, ClientError> {
    let names = Names::of(surface)?;
    let mut out = header(surface, Lang::Ts);
    module_doc(surface, &mut out);
    out.push_str(&format!(
        "\n/** The surface this client was made against. */\nexport const SURFACE = {};\n",
        quote(&surface.surface)
    ));
    out.push_str(&doc_block(
        "The surface's digest, sent on every call (Hale-Surface-Digest): a program that changed under this client answers digest_mismatch, with the digest it serves.",
    ));
    out.push_str(&format!(
        "export const DIGEST = {};\n",
        quote(&surface.digest)
    ));
    for (name, record) in &surface.records {
        out.push_str(&format!(
            "\n/** Hale type `{}`. */\nexport interface {} {{\n",
            doc(name),
            names.records[name]
        ));
        for f in &record.fields {
            let mut notes = Vec::new();
            if f.key != f.name {
                notes.push(format!("Hale field `{}`", doc(&f.name)));
            }
            if let Slot::Scalar(s) = &f.slot {
                notes.extend(scalar_note(s));
            }
            if !f.required {
                notes.push("it has a default, so a request may leave it out".to_string());
            }
            if !notes.is_empty() {
                out.push_str(&format!("    /** {}. */\n", upper_first(&notes.join("; "))));
            }
            out.push_str(&format!(
                "    {}{}: {};\n",
                property(&f.key),
                if f.required { "" } else { "?" },
                names.slot(&f.slot)
            ));
        }
        out.push_str("}\n");
    }
    out.push('\n');
    out.push_str(COMMON);
    let streams: Vec<_> = surface.ws_streams().collect();
    if !surface.members.is_empty() || !streams.is_empty() {
        out.push_str(SHARED);
    }
    if !surface.members.is_empty() {
        out.push_str(CALLS);
        out.push_str("\n// ---- The members, by name. ----\n");
    }
    for (m, (function, outcome)) in surface.members.iter().zip(&names.members) {
        let value = m
            .response
            .as_ref()
            .map_or_else(|| "null".to_string(), |s| names.slot(s));
        let mut union = vec![format!("CallResult<{value}>")];
        if let Some(e) = m.handler_error() {
            union.push(format!("CallHandlerError<{}>", names.slot(e)));
        }
        union.push("CallRefusal".to_string());
        union.push("CallServerError".to_string());
        out.push_str(&format!(
            "\n/** What `{}` answers. */\nexport type {outcome} =\n    | {};\n",
            doc(&m.name),
            union.join("\n    | ")
        ));
        let requires = super::requires_phrase(&m.requires, |r| format!("`{}`", doc(r)));
        let error = match m.handler_error() {
            Some(e) => format!(", the handler error ({})", slot_doc(e)),
            None => String::new(),
        };
        out.push_str(&doc_block(&format!(
            "Calls `{}` ({requires}): POST /call/{} at `endpoint` (`http://host:port`) as `bearer` (null sends no Authorization), with DIGEST. Answers the result ({}){error}, a refusal or the server error; throws TransportError when the endpoint never answered or answered outside the contract.",
            doc(&m.name),
            doc(&m.name),
            m.response.as_ref().map_or_else(|| "no value".to_string(), slot_doc),
        )));
        let (param, body) = match &m.request {
            Some(s) => (format!("    request: {},\n", names.slot(s)), "request"),
            None => (String::new(), "{}"),
        };
        out.push_str(&format!(
            "export async function {function}(\n    endpoint: string,\n    bearer: string | null,\n{param}    options?: CallOptions,\n): Promise<{outcome}> {{\n    const reply = await post$(endpoint, bearer, {}, {body}, options);\n    return outcome$({}, reply, {}, {}) as {outcome};\n}}\n",
            quote(&m.name),
            quote(&m.name),
            m.handler_error().is_some(),
            m.response.is_some(),
        ));
    }
    if !streams.is_empty() {
        out.push_str(STREAMS);
        out.push_str("\n// ---- The streams, by hub then topic. ----\n");
    }
    for ((hub, s), (function, item)) in streams.iter().zip(&names.streams) {
        let payload = s
            .payload
            .as_ref()
            .map_or_else(|| "unknown".to_string(), |p| names.slot(p));
        out.push_str(&format!(
            "\n/** What a subscription to `{}` yields. */\nexport type {item} = StreamItem<{payload}>;\n",
            doc(&s.topic)
        ));
        let requires = super::requires_phrase(&s.requires, |r| format!("`{}`", doc(r)));
        out.push_str(&doc_block(&format!(
            "Subscribes to `{}` (subject `{}`, {}) on hub `{}` ({}): its events ({}) with their seq, holding {} frames and shedding {} (a gap in seq is what was shed; {}). Yields `subscribed`, the events, then exactly one end: closed, expired, revoked, refusal or lost.",
            doc(&s.topic),
            doc(&s.subject),
            requires,
            doc(&hub.name),
            doc(&hub.identity),
            s.payload.as_ref().map_or_else(|| "no declared shape".to_string(), slot_doc),
            s.bound,
            doc(&s.on_full),
            if s.replay {
                "a reconnect replays"
            } else {
                "no replay on reconnect"
            },
        )));
        out.push_str(&format!(
            "export function {function}(opts: SubscribeOptions): AsyncGenerator<{item}, void, undefined> {{\n    return subscribe$(opts, {}) as AsyncGenerator<{item}, void, undefined>;\n}}\n",
            quote(&s.topic)
        ));
    }
    Ok(out)
}

/// The module's doc comment: what it speaks, what serves the surface, and
/// the streams a `udp://` hub carries, which it lists and does not speak.
fn module_doc(surface: &ClientSurface, out: &mut String) {
    out.push_str(&format!(
        "/**\n * The TypeScript client of surface `{}` of `{}`, generated from its rows.\n *\n",
        doc(&surface.surface),
        doc(&surface.app)
    ));
    out.push_str(" * It needs nothing beyond `fetch` and `WebSocket` (a browser, Node 22, Node 20\n * with --experimental-websocket) and speaks http:// for the members and ws://\n * for the streams. A unix: socket is not spoken (fetch has none), nor TLS.\n");
    out.push_str(" * A member's function answers a union on `kind`: `result`, `handler_error`\n * (only where the row declares an error), `refusal` or `server_error`, and\n * throws TransportError for a connection that never answered. A stream's\n * subscribe function is an async iterable ending with one StreamEnd item.\n");
    if !surface.exposures.is_empty() {
        out.push_str(" *\n * Served by:\n");
        for e in &surface.exposures {
            let note = match e.transport {
                TransportKind::Http => "",
                _ => " (not spoken here)",
            };
            out.push_str(&format!(
                " * - `{}`: {} at {}{note}\n",
                doc(&e.name),
                e.transport.as_str(),
                e.address.as_deref().map_or_else(
                    || "no address the program writes".to_string(),
                    |a| format!("`{}`", doc(a))
                )
            ));
        }
    }
    for h in surface.hubs.iter().filter(|h| !h.streams.is_empty()) {
        let topics: Vec<String> = h.streams.iter().map(|s| s.topic.clone()).collect();
        if h.transport == TransportKind::Ws {
            out.push_str(&format!(
                " *\n * Hub `{}` (ws at {}) carries {}.\n",
                doc(&h.name),
                h.address.as_deref().map_or_else(
                    || "no address the program writes".to_string(),
                    |a| format!("`{}`", doc(a))
                ),
                list(&topics)
            ));
        } else {
            out.push_str(&format!(
                " *\n * Hub `{}` is {}: its streams ({}) are not spoken here.\n",
                doc(&h.name),
                h.transport.as_str(),
                list(&topics)
            ));
        }
    }
    out.push_str(" */\n");
}

/// The names the module declares for the surface's records, members and
/// streams, each checked against every other.
struct Names {
    /// A record's name → its interface.
    records: BTreeMap<String, String>,
    /// Per member, in order: its function and its outcome type.
    members: Vec<(String, String)>,
    /// Per `ws://` stream, in order: its subscribe function and item type.
    streams: Vec<(String, String)>,
}

impl Names {
    /// Names everything, refusing two things that would share a name.
    fn of(surface: &ClientSurface) -> Result<Names, ClientError> {
        // Every name declared → what declared it, for the refusal.
        let mut taken: BTreeMap<String, String> = OWN
            .iter()
            .map(|n| (n.to_string(), "the client's own declarations".to_string()))
            .collect();
        let mut take = |name: String, owner: String| match taken.get(&name) {
            Some(other) => Err(ClientError::Refused {
                owner: owner.clone(),
                field: name.clone(),
                why: format!("its TypeScript name is also that of {other}"),
            }),
            None => {
                taken.insert(name.clone(), owner);
                Ok(name)
            }
        };
        let mut records = BTreeMap::new();
        for name in surface.records.keys() {
            let mut ident = name.replace("::", "_");
            if reserved(&ident) || OWN.contains(&ident.as_str()) {
                ident.push('_');
            }
            let ident = take(ident, format!("type `{name}`"))?;
            records.insert(name.clone(), ident);
        }
        let mut members = Vec::new();
        for m in &surface.members {
            let owner = format!("rpc `{}`", m.name);
            let segments: Vec<&str> = m.locus.split("::").filter(|s| !s.is_empty()).collect();
            let mut function = String::new();
            for (i, s) in segments.iter().chain([&m.function.as_str()]).enumerate() {
                function.push_str(&if i == 0 {
                    lower_first(s)
                } else {
                    upper_first(s)
                });
            }
            if reserved(&function) {
                function.push('_');
            }
            let outcome: String = segments
                .iter()
                .chain([&m.function.as_str()])
                .map(|s| upper_first(s))
                .chain(["Outcome".to_string()])
                .collect();
            let function = take(function, owner.clone())?;
            let outcome = take(outcome, owner)?;
            members.push((function, outcome));
        }
        let mut streams = Vec::new();
        for (_, s) in surface.ws_streams() {
            let owner = format!("stream `{}`", s.topic);
            let base = upper_first(&s.topic.replace("::", "_"));
            let function = take(format!("subscribe{base}"), owner.clone())?;
            let item = take(format!("{base}Item"), owner)?;
            streams.push((function, item));
        }
        Ok(Names {
            records,
            members,
            streams,
        })
    }

    /// The TypeScript type of `slot`.
    fn slot(&self, slot: &Slot) -> String {
        match slot {
            Slot::Scalar(s) => match s.json {
                "boolean" => "boolean",
                "string" => "string",
                _ => "number",
            }
            .to_string(),
            Slot::Record(name) => self.records[name].clone(),
        }
    }
}

/// What a doc comment says of a scalar that stands for a named type.
fn scalar_note(s: &Scalar) -> Option<String> {
    let t = s.hale_type.as_ref()?;
    Some(match &s.unit {
        Some(u) => format!(
            "Hale type `{}`, a quantity ({}), as the integer it counts",
            doc(t),
            doc(u)
        ),
        None => format!("Hale type `{}`, as the integer it counts", doc(t)),
    })
}

/// A slot as a doc comment names it.
fn slot_doc(slot: &Slot) -> String {
    match slot {
        Slot::Record(name) => format!("`{}`", doc(name)),
        Slot::Scalar(s) => match &s.hale_type {
            Some(t) => format!("`{}`", doc(t)),
            None => s.json.to_string(),
        },
    }
}

/// Roles or topics as a doc comment lists them: `a`, `b`.
fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|r| format!("`{}`", doc(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` as a `/** … */` block of its own, its words wrapped at 80
/// columns (a word longer than a line keeps a line of its own).
fn doc_block(text: &str) -> String {
    let mut out = String::from("\n/**\n");
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && 3 + line.len() + 1 + word.len() > 80 {
            out.push_str(&format!(" * {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&format!(" * {line}\n */\n"));
    out
}

/// `text` safe inside a `/** … */` comment.
fn doc(text: &str) -> String {
    text.replace("*/", "*\\/")
}

/// `text` as a TypeScript string literal (JSON's is one).
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// A property name: the key as written when it is an identifier, else
/// quoted.
fn property(key: &str) -> String {
    let mut chars = key.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        key.to_string()
    } else {
        quote(key)
    }
}

/// `s` with its first character upper case.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// `s` with its first character lower case.
fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_lowercase().chain(c).collect())
}

#[cfg(test)]
mod tests;
