//! `hale api describe` and `hale api call` (and the short forms `hale
//! describe`, `hale call`): the operator's verbs of § Driving a served
//! program. They read the description the endpoint serves and speak the
//! wire of § Outcomes, nothing else; each outcome is one exit code.
//! `hale watch` ([`watch`]) is the hub's client; `hale admin` ([`admin`])
//! serves a page driving any of them.

pub mod admin;
pub mod hub_conn;
pub mod mcp_bridge;
pub mod payload;
pub mod render;
pub mod watch;
pub mod wire;

use std::io::Read;

use payload::Flag;
use serde_json::Value;
use wire::{Answered, Endpoint, HttpReply};

/// A result.
pub const EXIT_RESULT: i32 = 0;
/// A handler error.
pub const EXIT_HANDLER_ERROR: i32 = 1;
/// A refusal, of any kind.
pub const EXIT_REFUSAL: i32 = 2;
/// The server error.
pub const EXIT_SERVER_ERROR: i32 = 3;
/// A transport failure: nothing answered, or not with a Hale outcome.
pub const EXIT_TRANSPORT: i32 = 4;
/// Usage.
pub const EXIT_USAGE: i32 = 5;

/// A usage error of `describe` or `call` (`verb`), in its short form or
/// under `hale api`: the message, then the verb's usage line.
fn verb_usage(short: bool, verb: &str, message: &str) -> i32 {
    let path: &[&str] = if short { &[verb] } else { &["api", verb] };
    crate::hale_cli::cli::usage(path, message);
    EXIT_USAGE
}

fn transport(message: &str) -> i32 {
    eprintln!("hale: {message}");
    EXIT_TRANSPORT
}

/// What fetching a description gave.
pub(crate) enum Described {
    /// The document's bytes as the exposure wrote them.
    Document(Vec<u8>),
    /// The exposure refused: the wire outcome as written.
    Refused(Vec<u8>),
}

pub(crate) fn fetch(
    endpoint: &Endpoint,
    bearer: Option<&str>,
    id: &str,
) -> Result<Described, String> {
    match endpoint {
        Endpoint::Unix(path) => {
            let line = format!(
                "{{\"describe\":true,\"id\":{}}}",
                Value::String(id.to_owned())
            );
            let reply = wire::unix_exchange(path, line.as_bytes())
                .map_err(|e| format!("{} did not answer: {e}", path.display()))?;
            let v: Value = serde_json::from_slice(&reply)
                .map_err(|_| format!("{} answered, but not as a Hale exposure", path.display()))?;
            match v.get("ok") {
                Some(Value::Bool(true)) => wire::raw_member(&reply, "value")
                    .map(|raw| Described::Document(raw.to_vec()))
                    .ok_or_else(|| format!("{} answered no description", path.display())),
                Some(Value::Bool(false)) if v.get("refusal").is_some() => {
                    Ok(Described::Refused(reply))
                }
                _ => Err(format!(
                    "{} answered, but not as a Hale exposure",
                    path.display()
                )),
            }
        }
        Endpoint::Http(authority) => {
            let headers = bearer_header(bearer);
            let reply = wire::http_exchange(authority, "GET", "/.description", &headers, b"")
                .map_err(|e| format!("http://{authority} did not answer: {e}"))?;
            match reply.status {
                200 => {
                    let doc: Value = serde_json::from_slice(&reply.body).map_err(|_| {
                        format!("http://{authority} answered, but not as a Hale exposure")
                    })?;
                    if doc.get("description").is_none() {
                        return Err(format!(
                            "http://{authority} answered, but not with a Hale description"
                        ));
                    }
                    Ok(Described::Document(reply.body))
                }
                s if is_refusal(&reply) && s != 200 => Ok(Described::Refused(reply.body)),
                s => Err(format!(
                    "http://{authority} answered {s}, not a Hale description"
                )),
            }
        }
    }
}

pub(crate) fn bearer_header(bearer: Option<&str>) -> Vec<(&'static str, String)> {
    bearer
        .map(|t| vec![("Authorization", format!("Bearer {t}"))])
        .unwrap_or_default()
}

fn is_refusal(reply: &HttpReply) -> bool {
    serde_json::from_slice::<Value>(&reply.body)
        .ok()
        .and_then(|v| v.get("refusal").and_then(|r| r.get("kind")).cloned())
        .is_some()
}

pub(crate) fn bearer_of(flag: Option<String>) -> Option<String> {
    flag.or_else(|| {
        std::env::var("HALE_API_BEARER")
            .ok()
            .filter(|t| !t.is_empty())
    })
}

fn default_id() -> String {
    format!("hale-{}", std::process::id())
}

/// `describe <endpoint> [--json] [--bearer T]`. `short` is the `hale
/// describe` form, where a bare path stands for `unix:<path>`.
pub fn describe_main(args: &crate::hale_cli::cli::DescribeArgs, short: bool) -> i32 {
    let json = args.json;
    let bearer = args.bearer.clone();
    let endpoint = match Endpoint::parse(&args.endpoint, short) {
        Ok(e) => e,
        Err(e) => return verb_usage(short, "describe", &e),
    };
    let bearer = bearer_of(bearer);
    match fetch(&endpoint, bearer.as_deref(), &default_id()) {
        Err(e) => transport(&e),
        Ok(Described::Refused(raw)) => {
            eprintln!("{}", String::from_utf8_lossy(&raw));
            EXIT_REFUSAL
        }
        Ok(Described::Document(raw)) => {
            if json {
                crate::cli_support::print(&format!("{}\n", String::from_utf8_lossy(&raw)));
            } else {
                match serde_json::from_slice::<Value>(&raw) {
                    Ok(doc) => crate::cli_support::print(&render::render(&doc)),
                    Err(_) => return transport("the description is not JSON"),
                }
            }
            EXIT_RESULT
        }
    }
}

/// Where the payload comes from.
enum PayloadSource {
    Json(String),
    Flags(Vec<Flag>),
}

/// `call <endpoint> <member> [--json P | --json - | --<field> <value> …]
/// [--bearer T] [--id ID] [--digest D] [--raw]`. In the short form a bare
/// path is `unix:<path>` and a bare payload after the member is `--json`.
pub fn call_main(args: &[String], short: bool) -> i32 {
    let mut positional = Vec::new();
    let mut json: Option<String> = None;
    let mut flags: Vec<Flag> = Vec::new();
    let (mut bearer, mut id, mut digest, mut raw) = (None, None, None, false);
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let Some(name) = arg.strip_prefix("--") else {
            positional.push(arg.clone());
            i += 1;
            continue;
        };
        let (name, inline) = match name.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (name.to_owned(), None),
        };
        // A value follows unless it is inline, absent, or another flag.
        let next = args
            .get(i + 1)
            .filter(|v| !v.starts_with("--") || v.as_str() == "-");
        let take = |i: &mut usize| -> Option<String> {
            if inline.is_some() {
                return inline.clone();
            }
            let v = next.cloned();
            if v.is_some() {
                *i += 1;
            }
            v
        };
        match name.as_str() {
            "raw" => raw = true,
            "json" | "bearer" | "id" | "digest" => {
                let Some(v) = take(&mut i) else {
                    return verb_usage(short, "call", &format!("--{name} needs a value"));
                };
                let slot = match name.as_str() {
                    "json" => &mut json,
                    "bearer" => &mut bearer,
                    "id" => &mut id,
                    _ => &mut digest,
                };
                if slot.is_some() {
                    return verb_usage(short, "call", &format!("--{name} is given twice"));
                }
                *slot = Some(v);
            }
            _ => {
                let value = take(&mut i);
                flags.push(Flag { name, value });
            }
        }
        i += 1;
    }
    let (endpoint, member) = match positional.as_slice() {
        [e, m] => (e.clone(), m.clone()),
        [e, m, p] if short => {
            if json.is_some() {
                return verb_usage(short, "call", "a bare payload and --json are one payload given twice");
            }
            json = Some(p.clone());
            (e.clone(), m.clone())
        }
        _ => return verb_usage(short, "call", "call <endpoint> <member> [--json P | --<field> V …] [--bearer T] [--id ID] [--digest D] [--raw]"),
    };
    let endpoint = match Endpoint::parse(&endpoint, short) {
        Ok(e) => e,
        Err(e) => return verb_usage(short, "call", &e),
    };
    let source = match (json, flags.is_empty()) {
        (Some(_), false) => {
            return verb_usage(
                short,
                "call",
                "--json and typed flags are one payload given twice: use one",
            )
        }
        (Some(j), true) => {
            let text = if j == "-" {
                let mut s = String::new();
                if std::io::stdin().read_to_string(&mut s).is_err() {
                    return verb_usage(short, "call", "--json -: stdin is not text");
                }
                s
            } else {
                j
            };
            PayloadSource::Json(text)
        }
        (None, _) => PayloadSource::Flags(flags),
    };
    if let PayloadSource::Json(text) = &source {
        if serde_json::from_str::<Value>(text).is_err() {
            return verb_usage(short, "call", "--json: the payload is not JSON");
        }
    }
    let bearer = bearer_of(bearer);
    let id = id.unwrap_or_else(default_id);

    // The description is read once, before the payload is built.
    let described = match fetch(&endpoint, bearer.as_deref(), &id) {
        Ok(d) => d,
        Err(e) => return transport(&e),
    };
    let doc: Option<Value> = match &described {
        Described::Document(raw) => serde_json::from_slice(raw).ok(),
        Described::Refused(_) => None,
    };
    let payload: Value = match source {
        PayloadSource::Json(text) => serde_json::from_str(&text).expect("checked above"),
        PayloadSource::Flags(flags) => {
            let Some(doc) = &doc else {
                // Typed flags need the schema: the refusal is the outcome.
                if let Described::Refused(wire) = &described {
                    return print_outcome(wire, EXIT_REFUSAL, raw);
                }
                return transport("no description to type the flags by");
            };
            let members = doc["members"].as_array().cloned().unwrap_or_default();
            let Some(m) = members.iter().find(|m| m["name"] == member.as_str()) else {
                let names: Vec<&str> = members.iter().filter_map(|m| m["name"].as_str()).collect();
                return verb_usage(
                    short,
                    "call",
                    &format!(
                        "`{member}` is not a member this caller may call; the description lists {}",
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
            };
            match payload::build(&m["request"], &doc["schemas"], &flags) {
                Ok(p) => p,
                Err(e) => return verb_usage(short, "call", &e),
            }
        }
    };
    let digest = digest.or_else(|| {
        doc.as_ref()
            .and_then(|d| d["digest"].as_str().map(str::to_owned))
    });
    // One wire form for one payload, however it was given: keys sorted, no
    // whitespace.
    let payload_text = limen_core::flow::canonical_json_text(&payload);
    match &endpoint {
        Endpoint::Unix(path) => {
            call_unix(path, &member, &payload_text, &id, digest.as_deref(), raw)
        }
        Endpoint::Http(authority) => call_http(
            authority,
            &member,
            &payload_text,
            bearer.as_deref(),
            digest.as_deref(),
            raw,
        ),
    }
}

/// Prints a wire outcome: on stdout with `--raw`, else on stderr.
fn print_outcome(wire: &[u8], code: i32, raw: bool) -> i32 {
    let text = String::from_utf8_lossy(wire);
    if raw {
        crate::cli_support::print(&format!("{text}\n"));
    } else {
        eprintln!("{text}");
    }
    code
}

fn call_unix(
    path: &std::path::Path,
    member: &str,
    payload: &str,
    id: &str,
    digest: Option<&str>,
    raw: bool,
) -> i32 {
    let line = wire::call_line(false, member, payload.as_bytes(), id, digest);
    let reply = match wire::unix_exchange(&path.to_owned(), &line) {
        Ok(r) => r,
        Err(e) => return transport(&format!("{} did not answer: {e}", path.display())),
    };
    let Ok(v) = serde_json::from_slice::<Value>(&reply) else {
        return transport("the reply is no outcome of the wire");
    };
    if v.get("id") != Some(&Value::String(id.to_owned())) {
        return transport("the reply answers another request");
    }
    let code = match wire::line_outcome(&v) {
        Some(Answered::Result) => {
            let value = wire::raw_member(&reply, "value").unwrap_or(b"null");
            if raw {
                crate::cli_support::print(&format!("{}\n", String::from_utf8_lossy(&reply)));
            } else {
                crate::cli_support::print(&format!("{}\n", String::from_utf8_lossy(value)));
            }
            return EXIT_RESULT;
        }
        Some(answered) => exit_of(answered),
        None => return transport("the reply is no outcome of the wire"),
    };
    print_outcome(&reply, code, raw)
}

fn call_http(
    authority: &str,
    member: &str,
    payload: &str,
    bearer: Option<&str>,
    digest: Option<&str>,
    raw: bool,
) -> i32 {
    let mut headers = bearer_header(bearer);
    headers.push(("Content-Type", "application/json".to_owned()));
    if let Some(d) = digest {
        headers.push(("Hale-Surface-Digest", d.to_owned()));
    }
    let path = format!("/call/{member}");
    let reply = match wire::http_exchange(authority, "POST", &path, &headers, payload.as_bytes()) {
        Ok(r) => r,
        Err(e) => return transport(&format!("http://{authority} did not answer: {e}")),
    };
    let code = match wire::http_outcome(reply.status, &reply.body) {
        Some(Answered::Result) => {
            crate::cli_support::print(&format!("{}\n", String::from_utf8_lossy(&reply.body)));
            return EXIT_RESULT;
        }
        Some(answered) => exit_of(answered),
        None => {
            return transport(&format!(
                "http://{authority} answered {}, no outcome of the wire",
                reply.status
            ))
        }
    };
    print_outcome(&reply.body, code, raw)
}

/// The exit status of an answered outcome.
fn exit_of(answered: Answered) -> i32 {
    match answered {
        Answered::Result => EXIT_RESULT,
        Answered::HandlerError => EXIT_HANDLER_ERROR,
        Answered::Refusal => EXIT_REFUSAL,
        Answered::ServerError => EXIT_SERVER_ERROR,
    }
}
