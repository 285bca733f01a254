//! One exposure's gRPC framing (§ gRPC, Framing is a call; The reply is the
//! contract's): what a stream's header block and its one message frame
//! into an exposure [`Request`], and how each [`Outcome`] is answered on
//! the stream, in the codec the call asked for.
//!
//! The HTTP/2 stream table that drives it is [`super::streams`], over the
//! events of [`super::h2`] (`limen-grpc` adapts nghttp2 to them);
//! everything that reads a header, a path, a message or an outcome is
//! here, pure, so the replay runner and the C ABI can share it.
//!
//! - Under `application/grpc+json` the message is the row's JSON: the
//!   payload as sent, the response and `E` as the handler's JSON codec
//!   wrote them.
//! - Under protobuf (`application/grpc`, `+proto`) the request is handed
//!   to the exposure as a [`Payload::Proto`], the message as sent, which
//!   the exposure's codec decodes by the row's shape (§ The protobuf
//!   codec; [`ShapeCodec::with_protobuf`]); the response and `E` are
//!   written from their JSON by the same shapes.
//!
//! [`ShapeCodec::with_protobuf`]: crate::hale::serving::ShapeCodec::with_protobuf

use std::collections::HashMap;

use super::reflection::Reflection;
use super::{
    bin_header, codec_of, frame_message, hale_refusal, percent_encode, route, status,
    status_details, GrpcCodec, MessageReader, Route, TYPE_URL_PREFIX,
};
use crate::hale::codec::Shape;
use crate::hale::docs::book::{Slot, TypeBook};
use crate::hale::docs::proto::{message_name, proto_file, EMPTY, REFUSAL};
use crate::hale::docs::rows::{member, tool_name, ErrorSlot};
use crate::hale::model::{Exposure, Program};
use crate::hale::protobuf;
use crate::hale::runtime::{Correlation, Credential, Outcome, Payload, Request, RequestKind};
use crate::hale::serving::{shape_of, ServeError};

/// A header field as HTTP/2 carries it: name and value.
pub type Field = (Vec<u8>, Vec<u8>);

/// The metadata a call may carry the surface digest in.
pub const DIGEST_HEADER: &str = "hale-surface-digest";

/// The type URL of a handler error's detail under `+json`.
pub const JSON_HANDLER_ERROR: &str = "type.hale.dev/hale.api.HandlerError";

/// The type URL of a refusal's (and the server error's) detail under
/// `+json`.
pub const JSON_REFUSAL: &str = "type.hale.dev/hale.api.Refusal";

/// What the codecs read and write of one row.
#[derive(Clone, Debug)]
struct RowCodec {
    /// The response's shape; `None` for a row that returns nothing
    /// (`HaleEmpty`).
    response: Option<Shape>,
    /// `E`'s shape and message, for a row with a declared error type.
    error: Option<(Shape, String)>,
}

/// The gRPC framing of one exposure: its surface and, by member, the
/// messages and shapes the protobuf codec reads and writes, and what its
/// server reflection answers.
#[derive(Clone, Debug)]
pub struct Framing {
    /// The service the paths name ([`Framing::service`]).
    service: String,
    rows: HashMap<String, RowCodec>,
    reflection: Reflection,
}

/// A stream's header block, read: the codec it asks for, what it calls,
/// and why it is malformed, if it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The codec the answer is written in (protobuf when the content type
    /// is not one of gRPC's).
    pub codec: GrpcCodec,
    /// The content type the answer goes under: the one asked
    /// (`application/grpc`, `+proto` or `+json`), `application/grpc` when
    /// it was none of them.
    pub content_type: &'static str,
    /// What the path names, or why the head is malformed (the method, the
    /// path, the content type: the first that is wrong).
    pub route: Result<Route, String>,
    /// The token of `authorization: Bearer <token>`.
    pub bearer: Option<String>,
    /// `hale-surface-digest`, when sent.
    pub digest: Option<String>,
    /// `grpc-encoding`, when sent.
    pub encoding: Option<Vec<u8>>,
}

impl Head {
    /// A reader for the stream's body under this head's `grpc-encoding`.
    pub fn reader(&self) -> MessageReader {
        MessageReader::new(self.encoding.as_deref())
    }

    /// How a call of this head that names no member (Describe, or a
    /// reflection stream's refusal) is answered.
    pub fn reply(&self) -> Reply {
        Reply {
            codec: self.codec,
            content_type: self.content_type,
            member: None,
        }
    }
}

/// How a framed call is answered: the codec it asked for and what it
/// asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    codec: GrpcCodec,
    content_type: &'static str,
    /// The member called, when the path named one.
    member: Option<String>,
}

impl Reply {
    /// The codec the answer is written in.
    pub fn codec(&self) -> GrpcCodec {
        self.codec
    }
}

/// A framed stream: a request for the exposure, or an answer the
/// transport gives itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Framed {
    /// Hand `request` to the exposure; answer its delivery with
    /// [`Framing::answer`] and `reply`.
    Request {
        /// The framed request.
        request: Request,
        /// How to answer it.
        reply: Reply,
    },
    /// Answer the stream with this, without the exposure (a service this
    /// server does not serve yet).
    Answer(Answer),
}

/// A gRPC response, as HTTP/2 frames it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// HEADERS, the message (prefixed) in DATA, then the trailers.
    Message {
        /// `:status` and `content-type`.
        headers: Vec<Field>,
        /// The length-prefixed message.
        body: Vec<u8>,
        /// `grpc-status: 0`.
        trailers: Vec<Field>,
    },
    /// One HEADERS frame that ends the stream: `:status`, `content-type`,
    /// `grpc-status`, `grpc-message`, `grpc-status-details-bin`.
    TrailersOnly {
        /// The fields.
        headers: Vec<Field>,
    },
}

impl Answer {
    /// The `grpc-status` the answer carries.
    pub fn status(&self) -> Option<u32> {
        let fields = match self {
            Answer::Message { trailers, .. } => trailers,
            Answer::TrailersOnly { headers } => headers,
        };
        fields
            .iter()
            .find(|(n, _)| n == b"grpc-status")
            .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
    }
}

fn field(name: &str, value: impl Into<Vec<u8>>) -> Field {
    (name.as_bytes().to_vec(), value.into())
}

impl Framing {
    /// The framing of `exposure` of `program`: its surface's rows, their
    /// messages named as the `.proto` names them and their shapes as the
    /// JSON codec reads them.
    pub fn new(program: &Program, exposure: &Exposure) -> Result<Framing, ServeError> {
        let surface = exposure
            .surface
            .clone()
            .ok_or_else(|| ServeError("the exposure names no surface".into()))?;
        let mut book = TypeBook::new();
        let mut rows = HashMap::new();
        for served in program.served_rows(exposure) {
            let row = served.row;
            let slots = member(program, row, &mut book)
                .map_err(|e| ServeError(format!("rpc `{}`: {e}", row.member)))?;
            let rpc = tool_name(&row.member);
            let name = |slot: Option<&Slot>, what: &str| match slot {
                None => EMPTY.to_string(),
                Some(Slot::Record(n)) => message_name(n),
                Some(Slot::Scalar(_)) => format!("{rpc}{what}"),
            };
            let shape = |ty| {
                shape_of(&program.types, ty)
                    .map_err(|e| ServeError(format!("rpc `{}`: {e}", row.member)))
            };
            let response = row.response.as_ref().map(shape).transpose()?;
            let error = match (&slots.error, &row.error) {
                (ErrorSlot::Type(slot), Some(ty)) => Some((shape(ty)?, name(Some(slot), "Error"))),
                _ => None,
            };
            rows.insert(row.member.clone(), RowCodec { response, error });
        }
        // Reflection answers the descriptor of the same model the `.proto`
        // text is written from; a surface that form refuses is not served
        // over gRPC, whose schema it is.
        let file = proto_file(program, &surface)
            .map_err(|e| ServeError(format!("the .proto of `{surface}`: {e}")))?;
        Ok(Framing {
            service: message_name(&surface),
            rows,
            reflection: Reflection::new(file),
        })
    }

    /// What the exposure's server reflection answers.
    pub fn reflection(&self) -> &Reflection {
        &self.reflection
    }

    /// The service every call's path names: the surface served, an
    /// imported one's `::` written `_` as its `.proto` writes it
    /// (`lib::Public` is `lib_Public`).
    pub fn service(&self) -> &str {
        &self.service
    }

    /// Reads a stream's header block. A head that is malformed still
    /// yields its credential and digest: the exposure refuses it with the
    /// reason, in the codec it asked for when that was readable.
    pub fn head(&self, fields: &[Field]) -> Head {
        let get = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                .map(|(_, v)| v.as_slice())
        };
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        let codec = get("content-type").map(codec_of);
        let route = match (get(":method"), get(":path")) {
            (Some(b"POST"), Some(path)) => match std::str::from_utf8(path) {
                Ok(path) => route(path, &self.service),
                Err(_) => Err(format!("not_a_grpc_path: {}", text(path))),
            },
            (Some(b"POST"), None) => Err("not_a_grpc_path: no :path".into()),
            (method, _) => Err(format!(
                "method_not_allowed: {}, a call is POST",
                method.map(text).unwrap_or_default()
            )),
        };
        let route = route.and_then(|r| match &codec {
            Some(Ok(_)) => Ok(r),
            Some(Err(reason)) => Err(reason.clone()),
            None => Err("unsupported_content_type: none sent".into()),
        });
        let content_type = match get("content-type").map(media_type).as_deref() {
            Some("application/grpc+proto") => "application/grpc+proto",
            Some("application/grpc+json") => "application/grpc+json",
            _ => "application/grpc",
        };
        Head {
            codec: codec.and_then(Result::ok).unwrap_or(GrpcCodec::Proto),
            content_type,
            route,
            bearer: get("authorization").and_then(bearer),
            digest: get(DIGEST_HEADER).map(text),
            encoding: get("grpc-encoding").map(<[u8]>::to_vec),
        }
    }

    /// Frames a stream whose head is `head` and whose body gave `message`
    /// (or why it is not one message). `client_id` is the stream, echoed
    /// in the delivery so the transport finds it again.
    pub fn frame(
        &self,
        head: &Head,
        message: Result<Vec<u8>, String>,
        correlation: Correlation,
        client_id: String,
    ) -> Framed {
        let mut member = None;
        let kind = match (&head.route, message) {
            (Err(reason), _) => RequestKind::Malformed {
                reason: reason.clone(),
            },
            // Reflection is a stream, which the stream table serves
            // (`limen-grpc`); a caller that frames it as one unary call
            // (the replay runner) is told so.
            (Ok(Route::Reflection { alpha }), _) => {
                return Framed::Answer(trailers_only(
                    head.content_type,
                    status::UNIMPLEMENTED,
                    &format!(
                        "{} is a stream, not a unary call",
                        super::reflection::service(*alpha)
                    ),
                    None,
                ));
            }
            (Ok(_), Err(reason)) => RequestKind::Malformed { reason },
            (Ok(Route::Describe), Ok(_)) => RequestKind::Describe,
            (Ok(Route::Call(name)), Ok(message)) => {
                let payload = match head.codec {
                    GrpcCodec::Json => json_text(message).map(Payload::Json),
                    GrpcCodec::Proto => Ok(Payload::Proto(message)),
                };
                member = Some(name.clone());
                match payload {
                    Ok(payload) => RequestKind::Call {
                        member: name.clone(),
                        payload,
                    },
                    Err(reason) => RequestKind::Malformed { reason },
                }
            }
        };
        Framed::Request {
            request: Request {
                correlation,
                kind,
                digest: head.digest.clone(),
                credential: Credential::Bearer(head.bearer.clone()),
                client_id: Some(client_id),
            },
            reply: Reply {
                codec: head.codec,
                content_type: head.content_type,
                member,
            },
        }
    }

    /// The answer to `outcome` for the call `reply` remembers, by § gRPC's
    /// table: a result (or a description) as one message under
    /// `grpc-status: 0`, every other outcome trailers-only with its status,
    /// its percent-encoded message and its detail.
    pub fn answer(&self, reply: &Reply, outcome: Outcome) -> Answer {
        let codec = reply.codec;
        let content_type = reply.content_type;
        let row = reply.member.as_deref().and_then(|m| self.rows.get(m));
        let message = match (&outcome, codec) {
            (Outcome::Result(json), GrpcCodec::Json) => Some(json.clone()),
            (Outcome::Description(doc), GrpcCodec::Json) => Some(doc.clone()),
            // `DescriptionDocument { string json = 1; }`.
            (Outcome::Description(doc), GrpcCodec::Proto) => {
                let mut out = Vec::with_capacity(doc.len() + 8);
                protobuf::write_bytes_field(&mut out, 1, doc);
                Some(out)
            }
            (Outcome::Result(json), GrpcCodec::Proto) => {
                match row.map(|r| write_proto(r.response.as_ref(), json)) {
                    Some(Ok(bytes)) => Some(bytes),
                    // A response the protobuf codec cannot write (the
                    // handler broke its own row) is the server error.
                    _ => return server_error(codec, content_type),
                }
            }
            _ => None,
        };
        if let Some(message) = message {
            return Answer::Message {
                headers: vec![field(":status", "200"), field("content-type", content_type)],
                body: frame_message(&message),
                trailers: vec![field("grpc-status", "0")],
            };
        }
        let (code, text) = super::status_of(&outcome);
        let detail = match (outcome, codec) {
            (Outcome::HandlerError(e), GrpcCodec::Json) => (JSON_HANDLER_ERROR.to_string(), e),
            (Outcome::HandlerError(e), GrpcCodec::Proto) => {
                match row.and_then(|r| r.error.as_ref()) {
                    Some((shape, name)) => match write_proto(Some(shape), &e) {
                        Ok(bytes) => (format!("{TYPE_URL_PREFIX}{name}"), bytes),
                        Err(_) => return server_error(codec, content_type),
                    },
                    None => return server_error(codec, content_type),
                }
            }
            (Outcome::Refusal(r), GrpcCodec::Json) => {
                let mut json = Vec::new();
                r.write_json(&mut json);
                (JSON_REFUSAL.to_string(), json)
            }
            (Outcome::Refusal(r), GrpcCodec::Proto) => (
                format!("{TYPE_URL_PREFIX}{REFUSAL}"),
                hale_refusal(Some(&r)),
            ),
            (_, codec) => return server_error(codec, content_type),
        };
        trailers_only(content_type, code, &text, Some(detail))
    }
}

/// The server error's answer: INTERNAL, `server_error`, the refusal
/// object `{"kind": "server"}` (or `HaleRefusal` of kind `server`).
fn server_error(codec: GrpcCodec, content_type: &str) -> Answer {
    let detail = match codec {
        GrpcCodec::Json => (JSON_REFUSAL.to_string(), br#"{"kind":"server"}"#.to_vec()),
        GrpcCodec::Proto => (format!("{TYPE_URL_PREFIX}{REFUSAL}"), hale_refusal(None)),
    };
    trailers_only(content_type, status::INTERNAL, "server_error", Some(detail))
}

/// A trailers-only answer: the status, its message percent-encoded, and
/// (when there is one) the detail in `grpc-status-details-bin`.
pub fn trailers_only(
    content_type: &str,
    code: u32,
    message: &str,
    detail: Option<(String, Vec<u8>)>,
) -> Answer {
    let mut headers = vec![
        field(":status", "200"),
        field("content-type", content_type),
        field("grpc-status", code.to_string()),
        field("grpc-message", percent_encode(message)),
    ];
    if let Some((type_url, value)) = detail {
        let details = status_details(code, message, &type_url, &value);
        headers.push(field("grpc-status-details-bin", bin_header(&details)));
    }
    Answer::TrailersOnly { headers }
}

/// The message of a row's response or error from the JSON the handler's
/// codec wrote; a row with none writes `HaleEmpty`.
fn write_proto(shape: Option<&Shape>, json: &[u8]) -> Result<Vec<u8>, String> {
    let Some(shape) = shape else {
        return Ok(Vec::new());
    };
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    protobuf::encode(shape, &value)
}

/// A `+json` call's message as the exposure's payload: JSON text, so not
/// empty and UTF-8; whether it is JSON is then the JSON codec's to say.
fn json_text(message: Vec<u8>) -> Result<Vec<u8>, String> {
    if message.is_empty() {
        return Err("not_json_text: the message is empty".into());
    }
    if std::str::from_utf8(&message).is_err() {
        return Err("not_json_text: the message is not UTF-8".into());
    }
    Ok(message)
}

/// A content type's media type, lowercased, its parameters dropped.
fn media_type(value: &[u8]) -> String {
    let text = String::from_utf8_lossy(value);
    text.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The token of an `authorization: Bearer <token>` value, as § The HTTP
/// transport reads it.
fn bearer(value: &[u8]) -> Option<String> {
    let value = std::str::from_utf8(value).ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

#[cfg(test)]
mod tests;
