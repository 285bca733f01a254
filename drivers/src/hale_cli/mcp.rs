//! `hale mcp` without `--app`: an MCP server on stdio (one JSON-RPC message
//! per line) bridging a host to the toolchain (§ The MCP transport, What
//! hale mcp is). Its tools are the commands a host would otherwise run:
//!
//! | tool | the command |
//! |---|---|
//! | `check` | `hale check FILE` |
//! | `api_inventory` | `hale check --api FILE` |
//! | `api_describe` | `hale check --api --exposure E --caller P [--holds R,…] FILE` |
//! | `api_projection` | `hale check --api --surface S --openapi/--json-schema/--mcp/--proto FILE` |
//! | `api_export` | `hale api export --surface S (--out DIR \| --check DIR) FILE` |
//!
//! A tool's answer is a tool result: its text the document (or the report)
//! as the command prints it, `structuredContent` the JSON beside it, and
//! `isError` true when the command would have exited non-zero (a program
//! that does not check, a document refused, a bundle that drifted), the
//! diagnostics in the text. Arguments that are not the tool's are the
//! JSON-RPC error -32602. Paths are read from the server's working
//! directory. The server exits 0 when its standard input ends.

use std::path::Path;

use limen_core::hale::docs::{self, DocError};
use limen_core::hale::model::Program;
use limen_core::hale::Checked;
use limen_core::json::jsonrpc;
use limen_core::wire::mcp::{classify, encode_malformed, initialize_result, Incoming};
use serde_json::{json, Map, Value};

use super::check::check_file;

/// The name the server gives in `initialize`.
pub const SERVER_NAME: &str = "hale";

/// The tools, as `tools/list` answers them.
pub fn tools() -> Value {
    let file = json!({"type": "string", "description": "The Hale program's path."});
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            }
        })
    };
    json!({"tools": [
        tool(
            "check",
            "Check a Hale program (`hale check FILE`): its diagnostics and law 6's notes.",
            json!({"file": file}),
            &["file"],
        ),
        tool(
            "api_inventory",
            "The program-wide API inventory (`hale check --api FILE`).",
            json!({"file": file}),
            &["file"],
        ),
        tool(
            "api_describe",
            "An exposure's description for one caller, offline (`hale check --api --exposure … --caller …`).",
            json!({
                "file": file,
                "exposure": {"type": "string", "description": "The exposure's name (`as:`)."},
                "caller": {"type": "string", "description": "A bearer principal's name, or a principal's JSON object as text."},
                "holds": {"type": "array", "items": {"type": "string"}, "description": "The roles the caller holds."}
            }),
            &["file", "exposure", "caller"],
        ),
        tool(
            "api_projection",
            "A surface's projection (`hale check --api --surface S --openapi|--json-schema|--mcp|--proto`).",
            json!({
                "file": file,
                "surface": {"type": "string"},
                "form": {"type": "string", "enum": ["openapi", "json-schema", "mcp", "proto"]}
            }),
            &["file", "surface", "form"],
        ),
        tool(
            "api_export",
            "A surface's bundle (`hale api export`): written to `out`, or held against the copy committed in `check`.",
            json!({
                "file": file,
                "surface": {"type": "string"},
                "out": {"type": "string", "description": "The folder to write the bundle to."},
                "check": {"type": "string", "description": "The folder holding the committed bundle."}
            }),
            &["file", "surface"],
        ),
    ]})
}

/// What a tool answered: its text, its JSON, whether it failed.
#[derive(Debug, PartialEq)]
pub struct ToolResult {
    /// The text, as the command prints it (its diagnostics when it failed).
    pub text: String,
    /// The JSON beside it, when the answer is one.
    pub structured: Option<Value>,
    /// Whether the command would have exited non-zero.
    pub is_error: bool,
}

impl ToolResult {
    fn ok(text: String, structured: Option<Value>) -> ToolResult {
        ToolResult {
            text,
            structured,
            is_error: false,
        }
    }

    fn failed(text: String, structured: Option<Value>) -> ToolResult {
        ToolResult {
            text,
            structured,
            is_error: true,
        }
    }

    fn document(doc: Value) -> ToolResult {
        let text = String::from_utf8(docs::export::pretty(&doc)).unwrap_or_default();
        let structured = doc.is_object().then_some(doc);
        ToolResult::ok(text, structured)
    }

    /// The `tools/call` result object.
    pub fn to_json(&self) -> Value {
        let mut result = Map::new();
        result.insert(
            "content".into(),
            json!([{"type": "text", "text": self.text}]),
        );
        if let Some(s) = &self.structured {
            result.insert("structuredContent".into(), s.clone());
        }
        result.insert("isError".into(), self.is_error.into());
        Value::Object(result)
    }
}

/// A call's arguments that are not the tool's.
#[derive(Debug, PartialEq)]
pub struct BadArguments(pub String);

/// The program at `file` checked: the program, or the failed result with
/// its diagnostics (and the notes, which `check` reports either way).
fn checked(file: &str) -> Result<(Program, Vec<String>), ToolResult> {
    let Checked {
        program,
        errors,
        notes,
        ..
    } = check_file(file).map_err(|e| ToolResult::failed(e, None))?;
    let notes: Vec<String> = notes
        .iter()
        .map(|n| format!("{}:{}:{}: note: {}", n.file, n.line, n.col, n.message))
        .collect();
    match program {
        Some(p) if errors.is_empty() => Ok((p, notes)),
        _ => {
            let errors: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            Err(ToolResult::failed(
                errors.join("\n"),
                Some(json!({"ok": false, "errors": errors, "notes": notes})),
            ))
        }
    }
}

fn refused(file: &str, e: &DocError) -> ToolResult {
    ToolResult::failed(format!("{file}: {e}"), None)
}

/// Runs tool `name` with `arguments`.
pub fn call(name: &str, arguments: &Value) -> Result<ToolResult, BadArguments> {
    let args = Args::new(name, arguments)?;
    let file = args.text("file")?;
    Ok(match name {
        "check" => match checked(&file) {
            Ok((_, notes)) => {
                let mut text = format!("{file}: checked");
                for n in &notes {
                    text.push('\n');
                    text.push_str(n);
                }
                ToolResult::ok(
                    text,
                    Some(json!({"ok": true, "errors": [], "notes": notes})),
                )
            }
            Err(failed) => failed,
        },
        "api_inventory" => with_program(&file, |p| docs::inventory(p).map(ToolResult::document)),
        "api_describe" => {
            let (exposure, caller) = (args.text("exposure")?, args.text("caller")?);
            let holds = args.names("holds")?;
            with_program(&file, |p| {
                docs::describe_offline(p, &exposure, &caller, &holds).map(ToolResult::document)
            })
        }
        "api_projection" => {
            let surface = args.text("surface")?;
            let form = args.text("form")?;
            let project: fn(&Program, &str) -> Result<ToolResult, DocError> = match form.as_str() {
                "openapi" => |p, s| docs::openapi(p, s).map(ToolResult::document),
                "json-schema" => |p, s| docs::json_schema(p, s).map(ToolResult::document),
                "mcp" => |p, s| docs::mcp(p, s).map(ToolResult::document),
                "proto" => |p, s| docs::proto(p, s).map(|text| ToolResult::ok(text, None)),
                other => {
                    return Err(BadArguments(format!(
                        "`form` is openapi, json-schema, mcp or proto, not `{other}`"
                    )))
                }
            };
            with_program(&file, |p| project(p, &surface))
        }
        "api_export" => {
            let surface = args.text("surface")?;
            let (dir, check) = match (args.optional("out")?, args.optional("check")?) {
                (Some(d), None) => (d, false),
                (None, Some(d)) => (d, true),
                _ => return Err(BadArguments("one of `out` and `check`".into())),
            };
            export(&file, &surface, Path::new(&dir), check)
        }
        _ => unreachable!("Args::new knows the tools"),
    })
}

fn with_program(
    file: &str,
    doc: impl FnOnce(&Program) -> Result<ToolResult, DocError>,
) -> ToolResult {
    match checked(file) {
        Ok((p, _)) => doc(&p).unwrap_or_else(|e| refused(file, &e)),
        Err(failed) => failed,
    }
}

/// `hale api export`'s work: the bundle written to `dir`, or held against
/// the one committed there.
fn export(file: &str, surface: &str, dir: &Path, check: bool) -> ToolResult {
    let program = match checked(file) {
        Ok((p, _)) => p,
        Err(failed) => return failed,
    };
    let bundle = match docs::bundle(&program, surface, super::cli::VERSION) {
        Ok(b) => b,
        Err(e) => return refused(file, &e),
    };
    let names: Vec<&str> = bundle.files.iter().map(|(n, _)| n.as_str()).collect();
    let mut lines = Vec::new();
    let mut report =
        json!({"surface": surface, "digest": bundle.digest.to_string(), "files": names});
    let mut failed = false;
    if check {
        let drift = bundle.check(|name| std::fs::read(dir.join(name)).ok());
        report["current"] = drift.is_current().into();
        report["differs"] = json!(drift.differs);
        report["missing"] = json!(drift.missing);
        if drift.is_current() {
            lines.push(format!("{} is the bundle of {surface}", dir.display()));
        } else {
            failed = true;
            lines.push(format!(
                "{} is not the bundle the surface {surface} now generates",
                dir.display()
            ));
            if let Some(old) = &drift.digest_moved {
                lines.push(format!(
                    "  digest moved: DIGEST names {}, the surface is {}",
                    old.as_deref().unwrap_or("no digest"),
                    bundle.digest
                ));
            }
            lines.extend(drift.differs.iter().map(|f| format!("  differs: {f}")));
            lines.extend(drift.missing.iter().map(|f| format!("  missing: {f}")));
        }
    } else {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return ToolResult::failed(format!("cannot create {}: {e}", dir.display()), None);
        }
        for (name, bytes) in &bundle.files {
            let path = dir.join(name);
            if let Err(e) = std::fs::write(&path, bytes) {
                return ToolResult::failed(format!("cannot write {}: {e}", path.display()), None);
            }
            lines.push(format!("wrote {}", path.display()));
        }
    }
    if let Some(e) = &bundle.proto_refused {
        failed = true;
        lines.push(format!("{file}: {surface}.proto: {e}"));
        report["proto_refused"] = e.to_string().into();
    }
    ToolResult {
        text: lines.join("\n"),
        structured: Some(report),
        is_error: failed,
    }
}

/// A call's arguments, read against its tool's schema.
struct Args<'a> {
    object: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(tool: &str, arguments: &'a Value) -> Result<Args<'a>, BadArguments> {
        let tools = tools();
        let Some(schema) = tools["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == tool))
        else {
            return Err(BadArguments(format!(
                "no tool `{tool}`: this server's tools are check, api_inventory, api_describe, \
                 api_projection and api_export"
            )));
        };
        let Some(object) = arguments.as_object() else {
            return Err(BadArguments("the arguments are an object".into()));
        };
        let properties = &schema["inputSchema"]["properties"];
        if let Some(unknown) = object.keys().find(|k| properties.get(k.as_str()).is_none()) {
            return Err(BadArguments(format!(
                "`{tool}` takes no argument `{unknown}`"
            )));
        }
        for required in schema["inputSchema"]["required"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = required.as_str().unwrap_or_default();
            if !object.contains_key(name) {
                return Err(BadArguments(format!(
                    "`{tool}` needs the argument `{name}`"
                )));
            }
        }
        Ok(Args { object })
    }

    fn optional(&self, name: &str) -> Result<Option<String>, BadArguments> {
        match self.object.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(BadArguments(format!("`{name}` is a string"))),
        }
    }

    fn text(&self, name: &str) -> Result<String, BadArguments> {
        self.optional(name)?
            .ok_or_else(|| BadArguments(format!("the argument `{name}` is required")))
    }

    fn names(&self, name: &str) -> Result<Vec<String>, BadArguments> {
        match self.object.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| BadArguments(format!("`{name}` is a list of strings")))
                })
                .collect(),
            Some(_) => Err(BadArguments(format!("`{name}` is a list of strings"))),
        }
    }
}

/// Answers one message line; `None` for a notification.
pub fn handle(line: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match classify(line) {
        Incoming::Accepted => return None,
        Incoming::Invalid { id, code, reason } => encode_malformed(&id, code, &reason, &mut out),
        Incoming::Unknown { id, method } => encode_malformed(
            id,
            jsonrpc::METHOD_NOT_FOUND,
            &format!(
                "no method `{method}`: this server answers initialize, ping, tools/list and tools/call"
            ),
            &mut out,
        ),
        Incoming::Ping { id } => jsonrpc::encode_response(id, b"{}", &mut out),
        Incoming::Initialize { id, version } => {
            let result = initialize_result(&version, SERVER_NAME, super::cli::VERSION);
            jsonrpc::encode_response(id, &result, &mut out);
        }
        Incoming::ToolsList { id } => {
            jsonrpc::encode_response(id, tools().to_string().as_bytes(), &mut out)
        }
        Incoming::ToolsCall {
            id,
            name,
            arguments,
            ..
        } => {
            let answer = serde_json::from_slice::<Value>(arguments)
                .map_err(|_| BadArguments("the arguments are not JSON".into()))
                .and_then(|a| call(&name, &a));
            match answer {
                Ok(result) => {
                    jsonrpc::encode_response(id, result.to_json().to_string().as_bytes(), &mut out)
                }
                Err(BadArguments(reason)) => {
                    encode_malformed(id, jsonrpc::INVALID_PARAMS, &reason, &mut out)
                }
            }
        }
    }
    Some(out)
}

/// `hale mcp`: serves stdin until it ends.
pub fn main() -> i32 {
    crate::client::mcp_bridge::serve_stdio(handle)
}
