//! The MCP transport (§ The MCP transport): a surface served as a Model
//! Context Protocol server over the Streamable HTTP transport's plain-JSON
//! form, one JSON-RPC 2.0 message in the body of `POST /mcp` and its answer
//! in the response, on the HTTP/1.1 machine ([`crate::wire::http1`]).
//!
//! [`classify`] reads one JSON-RPC message into what MCP asks
//! ([`Incoming`]); [`Framing`] turns a whole HTTP request into an exposure
//! [`Request`] and the [`Reply`] that remembers how to answer it, and
//! [`Framing::answer`] encodes the exposure's [`Outcome`] as § Outcomes' MCP
//! column says. Every message goes through the exposure, so authentication
//! and the check order are the exposure's alone:
//!
//! - `tools/call` is a [`RequestKind::Call`] of the member whose tool name
//!   `params.name` is (found, not decoded; a name no row has reaches the
//!   exposure as a member no row can have, so it is refused `unknown_member`
//!   after authentication and the digest), `params.arguments` the payload,
//!   the digest the `Hale-Surface-Digest` header or
//!   `params._meta["hale/digest"]`;
//! - `initialize`, `ping`, `tools/list`, a notification, a response and any
//!   other method are a [`RequestKind::Describe`]: the exposure
//!   authenticates the caller and answers the caller's tools (the MCP
//!   exposure's describer is [`McpDescriber`]), and the reply turns that
//!   into the method's answer;
//! - what is no JSON-RPC request (not JSON, a batch, an invalid message,
//!   a `GET`, another path) is a [`RequestKind::Malformed`], refused before
//!   authentication, answered with the JSON-RPC code and HTTP status the
//!   reply kept (-32700, -32600, 405 with `Allow: POST`, …).
//!
//! [`McpFront`] is one connection, the HTTP/1.1 machine between the framing
//! step ([`Framing::frame`]) and the answer step ([`Framing::answer`]), as
//! every transport's module under `wire` has them.
//!
//! The pieces the `hale mcp --app` bridge shares are in `mcp/message.rs`
//! (re-exported here): [`classify`],
//! [`initialize_result`], [`encode_call_answer`] and the codes.
//!
//! [`McpDescriber`]: crate::hale::docs::McpDescriber

mod message;

use std::borrow::Cow;
use std::collections::HashMap;

pub use message::{
    answered, classify, encode_call_answer, encode_malformed, initialize_result, refusal_code,
    Answered, CallAnswer, Incoming, DIGEST_META, HANDLER_ERROR, PROTOCOL_VERSION, SERVER_ERROR,
    SERVER_ERROR_DATA,
};

use std::sync::Arc;

use crate::hale::runtime::{
    Correlation, Credential, ExposureSpec, Outcome, RefusalKind, Request, RequestKind,
};
use crate::json::jsonrpc;
use crate::wire::front::{FrontKind, RawRequest};
use crate::wire::http::{Http1Front, Steps};
use crate::wire::http1::{self, HttpConn, HttpRequest};
use crate::Timestamp;

/// The endpoint's path.
pub const PATH: &str = "/mcp";
/// The header a request may carry the digest in.
pub const DIGEST_HEADER: &str = "hale-surface-digest";

/// An HTTP response for the connection: status, extra headers, body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// Headers beside the fixed ones (`Allow: POST` on a 405).
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body (empty on a 202).
    pub body: Vec<u8>,
}

/// What a framed request's answer needs: the request's id, and what the
/// message asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The id as raw JSON text (`null` when none could be read).
    id: Vec<u8>,
    to: Answering,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Answering {
    Initialize {
        version: String,
    },
    Ping,
    ToolsList,
    Call,
    Accepted,
    Unknown {
        method: String,
    },
    /// Refused malformed by the exposure: answered with `code`, under HTTP
    /// `status`, `Allow: POST` on a 405.
    Malformed {
        code: i64,
        status: u16,
    },
}

/// The MCP framing of one exposure: its surface's identity for
/// `initialize`, and its tool names.
#[derive(Clone, Debug)]
pub struct Framing {
    surface: String,
    digest: String,
    /// Tool name → member name.
    tools: HashMap<String, String>,
}

impl Framing {
    /// The framing of the exposure `spec` serves.
    pub fn new(spec: &ExposureSpec) -> Framing {
        let tools = spec
            .members
            .iter()
            .map(|m| (crate::hale::docs::rows::tool_name(&m.name), m.name.clone()))
            .collect();
        Framing {
            surface: spec.surface.clone(),
            digest: spec.digest.clone(),
            tools,
        }
    }

    /// The member the tool `name` calls; a name no row has becomes a member
    /// name no row can have, so the exposure refuses it `unknown_member` in
    /// its own order (after authentication and the digest).
    pub fn member_of(&self, name: &str) -> String {
        match self.tools.get(name) {
            Some(member) => member.clone(),
            // No tool name holds `:`; a name that does is no row's tool,
            // and is spelled with `%3A` so it cannot be taken for a member.
            None if name.contains(':') || self.tools.values().any(|m| m == name) => {
                name.replace(':', "%3A")
            }
            None => name.to_owned(),
        }
    }

    /// Frames a whole HTTP request.
    pub fn frame(&self, request: &HttpRequest, correlation: Correlation) -> (Request, Reply) {
        let credential = Credential::Bearer(request.bearer());
        let header_digest = request
            .header(DIGEST_HEADER)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(|v| v.trim().to_owned());
        let path = request
            .target
            .split_once('?')
            .map_or(request.target.as_str(), |(p, _)| p);
        let refused = |reason: String, code: i64, status: u16, id: &[u8]| {
            (
                Request {
                    correlation,
                    kind: RequestKind::Malformed { reason },
                    digest: None,
                    credential: credential.clone(),
                    client_id: None,
                },
                Reply {
                    id: id.to_vec(),
                    to: Answering::Malformed { code, status },
                },
            )
        };
        if path != PATH {
            return refused(
                format!(
                    "`{} {path}`: this server's MCP endpoint is POST {PATH}",
                    request.method
                ),
                jsonrpc::INVALID_REQUEST,
                404,
                b"null",
            );
        }
        if request.method != "POST" {
            return refused(
                format!(
                    "`{} {PATH}`: this server holds no event stream and no session; POST one JSON-RPC message to {PATH}",
                    request.method
                ),
                jsonrpc::INVALID_REQUEST,
                405,
                b"null",
            );
        }
        let describe = |to: Answering, id: &[u8]| {
            (
                Request {
                    correlation,
                    kind: RequestKind::Describe,
                    digest: None,
                    credential: credential.clone(),
                    client_id: None,
                },
                Reply {
                    id: id.to_vec(),
                    to,
                },
            )
        };
        match classify(&request.body) {
            Incoming::Initialize { id, version } => describe(
                Answering::Initialize {
                    version: version.into_owned(),
                },
                id,
            ),
            Incoming::Ping { id } => describe(Answering::Ping, id),
            Incoming::ToolsList { id } => describe(Answering::ToolsList, id),
            Incoming::Accepted => describe(Answering::Accepted, b"null"),
            Incoming::Unknown { id, method } => describe(
                Answering::Unknown {
                    method: method.into_owned(),
                },
                id,
            ),
            Incoming::Invalid { id, code, reason } => refused(reason, code, 200, &id),
            Incoming::ToolsCall {
                id,
                name,
                arguments,
                digest,
            } => (
                Request {
                    correlation,
                    kind: RequestKind::Call {
                        member: self.member_of(&name),
                        payload: crate::hale::runtime::Payload::Json(arguments.to_vec()),
                    },
                    // The header when the client sends one, else _meta.
                    digest: header_digest.or_else(|| digest.map(Cow::into_owned)),
                    credential,
                    client_id: None,
                },
                Reply {
                    id: id.to_vec(),
                    to: Answering::Call,
                },
            ),
        }
    }

    /// Frames a request the HTTP machine could not read whole (a head or a
    /// body over its limit, a chunked body): malformed, answered 400 with
    /// -32600, since no JSON-RPC message was read.
    pub fn frame_malformed(
        &self,
        reason: &str,
        head: Option<&HttpRequest>,
        correlation: Correlation,
    ) -> (Request, Reply) {
        (
            Request {
                correlation,
                kind: RequestKind::Malformed {
                    reason: reason.to_owned(),
                },
                digest: None,
                credential: Credential::Bearer(head.and_then(HttpRequest::bearer)),
                client_id: None,
            },
            Reply {
                id: b"null".to_vec(),
                to: Answering::Malformed {
                    code: jsonrpc::INVALID_REQUEST,
                    status: 400,
                },
            },
        )
    }

    /// The HTTP answer to a framed request, given the exposure's outcome.
    pub fn answer(&self, reply: &Reply, outcome: Outcome) -> Answer {
        let id = reply.id.as_slice();
        let mut body = Vec::with_capacity(256);
        let mut status = 200;
        let mut headers = Vec::new();
        match (&reply.to, outcome) {
            (Answering::Malformed { code, status: s }, Outcome::Refusal(r))
                if r.kind == RefusalKind::Malformed =>
            {
                encode_malformed(id, *code, &r.reason, &mut body);
                status = *s;
                if status == 405 {
                    headers.push(("Allow", "POST"));
                }
            }
            (_, Outcome::Refusal(r)) => {
                if r.kind == RefusalKind::Unauthenticated {
                    status = 401;
                    headers.push(("WWW-Authenticate", "Bearer"));
                }
                let object = r.to_json().to_string();
                encode_call_answer(
                    id,
                    CallAnswer::Refusal {
                        kind: r.kind,
                        object: object.as_bytes(),
                    },
                    &mut body,
                );
            }
            (Answering::Initialize { version }, _) => {
                let result = initialize_result(version, &self.surface, &self.digest);
                jsonrpc::encode_response(id, &result, &mut body);
            }
            (Answering::Ping, _) => jsonrpc::encode_response(id, b"{}", &mut body),
            (Answering::Accepted, _) => status = 202,
            (Answering::Unknown { method }, _) => encode_malformed(
                id,
                jsonrpc::METHOD_NOT_FOUND,
                &format!("no method `{method}`: this server answers initialize, ping, tools/list and tools/call"),
                &mut body,
            ),
            (Answering::ToolsList, Outcome::Description(tools)) => {
                jsonrpc::encode_response(id, &tools, &mut body)
            }
            (_, Outcome::Result(v) | Outcome::Description(v)) => {
                encode_call_answer(id, CallAnswer::Result(&v), &mut body)
            }
            (_, Outcome::HandlerError(e)) => {
                encode_call_answer(id, CallAnswer::HandlerError(&e), &mut body)
            }
            (_, Outcome::ServerError) => encode_call_answer(id, CallAnswer::ServerError, &mut body),
        }
        Answer {
            status,
            headers,
            body,
        }
    }
}

/// MCP's steps for [`Http1Front`]: its [`Framing`], and how to answer the
/// connection's one request once framed.
#[derive(Debug)]
pub struct McpSteps {
    framing: Arc<Framing>,
    /// How to answer the connection's one request, once framed.
    reply: Option<Reply>,
}

impl Steps for McpSteps {
    const KIND: FrontKind = FrontKind::Mcp;
    const NAME: &'static str = "McpFront";

    /// Frames the connection's one message, with how to answer it kept.
    fn frame(&mut self, request: &HttpRequest, correlation: Correlation) -> Request {
        let (request, answer) = self.framing.frame(request, correlation);
        self.reply = Some(answer);
        request
    }

    fn frame_malformed(
        &mut self,
        reason: &str,
        head: Option<&HttpRequest>,
        correlation: Correlation,
    ) -> Request {
        let (request, answer) = self.framing.frame_malformed(reason, head, correlation);
        self.reply = Some(answer);
        request
    }

    fn raw(request: HttpRequest) -> RawRequest {
        RawRequest::Mcp(request)
    }

    /// § Outcomes' MCP column.
    fn answer(&mut self, conn: &mut HttpConn, now: Timestamp, outcome: Outcome) {
        // A delivery with no request framed here has nobody to answer (the
        // machine would ignore it as well).
        if let Some(reply) = self.reply.take() {
            let answer = self.framing.answer(&reply, outcome);
            conn.send(now, answer.status, &answer.headers, &answer.body);
        }
    }
}

/// One MCP connection (`POST /mcp` on HTTP/1.1) between its bytes and an
/// exposure. See [`crate::wire::front`] for the order of calls.
pub type McpFront = Http1Front<McpSteps>;

impl McpFront {
    /// A connection of the exposure whose framing is `framing`, accepted at
    /// `now`.
    pub fn new(
        now: Timestamp,
        limits: http1::Limits,
        framing: Arc<Framing>,
        correlation: Correlation,
    ) -> McpFront {
        let steps = McpSteps {
            framing,
            reply: None,
        };
        Http1Front::with_steps(now, limits, steps, correlation)
    }
}

#[cfg(test)]
mod tests;
