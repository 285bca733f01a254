//! Hale's framing of gRPC (§ gRPC) and the gRPC column of § Outcomes, as
//! pure functions of what an HTTP/2 stream carried: the path, the content
//! type, the length-prefixed message; and, for an outcome, the status, its
//! percent-encoded message and `grpc-status-details-bin`.
//!
//! The HTTP/2 session itself is `limen-nghttp2`'s; [`Framing`] is one
//! exposure's framing and outcome encoding on these, [`streams::Streams`]
//! the stream table and server reflection that join it to an HTTP/2
//! session, driven by the events of [`h2`]; `limen-grpc` adapts nghttp2's
//! callbacks to those events.

mod framing;
pub mod h2;
pub mod reflection;
pub mod streams;

pub use framing::{
    trailers_only, Answer, Field, Framed, Framing, Head, Reply, DIGEST_HEADER, JSON_HANDLER_ERROR,
    JSON_REFUSAL,
};

use base64::Engine as _;

use crate::hale::protobuf;
use crate::hale::runtime::{Outcome, Refusal, RefusalKind};

/// The largest message a call may carry (§ gRPC: 1048576 bytes).
pub const MAX_MESSAGE: usize = 1 << 20;

/// The service that answers the caller's description document.
pub const DESCRIPTION_SERVICE: &str = "hale.api.Description";

/// Server reflection, as the spec serves it.
pub const REFLECTION_V1: &str = "grpc.reflection.v1.ServerReflection";

/// Server reflection's older name, which many clients still ask only.
pub const REFLECTION_V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

/// The codec a call asked for by its content type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrpcCodec {
    /// `application/grpc` or `application/grpc+proto`.
    Proto,
    /// `application/grpc+json`: the row's JSON.
    Json,
}

impl GrpcCodec {
    /// The codec's plain content type. A call is answered under the
    /// content type it was sent with ([`Head::content_type`]); this is the
    /// one a content type that is not gRPC's is answered under.
    pub fn content_type(self) -> &'static str {
        match self {
            GrpcCodec::Proto => "application/grpc",
            GrpcCodec::Json => "application/grpc+json",
        }
    }
}

/// The codec `content_type` asks for; any other suffix or media type is
/// malformed, with the reason.
pub fn codec_of(content_type: &[u8]) -> Result<GrpcCodec, String> {
    let text = String::from_utf8_lossy(content_type);
    // Parameters (`; charset=…`) say nothing the codec reads.
    let media = text.split(';').next().unwrap_or("").trim();
    match media.to_ascii_lowercase().as_str() {
        "application/grpc" | "application/grpc+proto" => Ok(GrpcCodec::Proto),
        "application/grpc+json" => Ok(GrpcCodec::Json),
        _ => Err(format!("unsupported_content_type: {media}")),
    }
}

/// What a call's path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// A member of the surface, as a caller names it (`Orders::place`).
    Call(String),
    /// `hale.api.Description/Describe`.
    Describe,
    /// `ServerReflectionInfo` of reflection v1, or of v1alpha when `alpha`.
    Reflection {
        /// The v1alpha service.
        alpha: bool,
    },
}

/// Reads `path` (`/<Service>/<rpc>`) for an exposure whose `.proto`
/// service is `surface` (the surface's name, `lib_Public` for `lib::Public`). The
/// rpc is the member as the `.proto` names it (`Orders__place`) or in an
/// older spelling (`Orders.place`, `Orders::place`, `Orders%3A%3Aplace`);
/// whether the surface has that member is the exposure's to say. Another
/// service, or a path of another form, is malformed, with the reason.
pub fn route(path: &str, surface: &str) -> Result<Route, String> {
    let Some((service, rpc)) = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .filter(|(s, r)| !s.is_empty() && !r.is_empty() && !r.contains('/'))
    else {
        return Err(format!("not_a_grpc_path: {path}"));
    };
    match service {
        DESCRIPTION_SERVICE if rpc == "Describe" => return Ok(Route::Describe),
        REFLECTION_V1 if rpc == "ServerReflectionInfo" => {
            return Ok(Route::Reflection { alpha: false })
        }
        REFLECTION_V1ALPHA if rpc == "ServerReflectionInfo" => {
            return Ok(Route::Reflection { alpha: true })
        }
        _ => {}
    }
    if service != surface {
        return Err(format!("unknown_service: {service}"));
    }
    // `Orders%3A%3Aplace` (in either case of hex) is `Orders::place`.
    let decoded;
    let rpc = if rpc.contains('%') {
        decoded = crate::percent::decode(rpc).ok_or_else(|| format!("not_a_grpc_path: {path}"))?;
        decoded.as_str()
    } else {
        rpc
    };
    // Every `__` is a `::`: an imported locus's member
    // (`lib__Orders__place`) is `lib::Orders::place`.
    let member = if rpc.contains("__") {
        rpc.split("__").collect::<Vec<_>>().join("::")
    } else if rpc.contains("::") {
        rpc.to_owned()
    } else if let Some((locus, function)) = rpc.split_once('.') {
        format!("{locus}::{function}")
    } else {
        rpc.to_owned()
    };
    Ok(Route::Call(member))
}

/// The message of a call's body: five bytes of prefix (a compression flag,
/// a big-endian length) and the message, exactly one. Takes the body as it
/// arrives and refuses it as soon as it can.
#[derive(Debug, Default)]
pub struct MessageReader {
    bytes: Vec<u8>,
    /// The first reason the body is malformed, kept until the end.
    refused: Option<String>,
}

impl MessageReader {
    /// A reader for a call whose `grpc-encoding` header (if any) is
    /// `encoding`: anything but `identity` is refused.
    pub fn new(encoding: Option<&[u8]>) -> MessageReader {
        let refused = match encoding {
            None | Some(b"identity") => None,
            Some(other) => Some(format!(
                "unsupported_encoding: {}",
                String::from_utf8_lossy(other)
            )),
        };
        MessageReader {
            bytes: Vec::new(),
            refused,
        }
    }

    /// Takes bytes of the body. Nothing past one whole message (and the
    /// prefix of a second) is kept.
    pub fn push(&mut self, data: &[u8]) {
        if self.refused.is_some() {
            return;
        }
        self.bytes.extend_from_slice(data);
        if self.bytes.len() >= 5 {
            if self.bytes[0] != 0 {
                self.refused = Some(if self.bytes[0] == 1 {
                    "compressed_message: this server takes identity only".into()
                } else {
                    format!("bad_compression_flag: {}", self.bytes[0])
                });
                self.bytes = Vec::new();
                return;
            }
            let len = message_len(&self.bytes);
            if len > MAX_MESSAGE {
                self.refused = Some(format!(
                    "message_too_large: {len} bytes, over {MAX_MESSAGE}"
                ));
                self.bytes = Vec::new();
                return;
            }
            if self.bytes.len() > 5 + len {
                self.refused = Some("more_than_one_message: a call is one message".into());
                self.bytes = Vec::new();
            }
        }
    }

    /// The bytes held: the message read so far, with its prefix (what a
    /// connection's budget across its streams counts).
    pub fn held(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the body is already refused (the stream can be answered
    /// before it ends).
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The body ended: its one message, or why it is malformed.
    pub fn finish(self) -> Result<Vec<u8>, String> {
        if let Some(reason) = self.refused {
            return Err(reason);
        }
        if self.bytes.is_empty() {
            return Err("no_message: a call is one message".into());
        }
        if self.bytes.len() < 5 || self.bytes.len() < 5 + message_len(&self.bytes) {
            return Err("cut_message: the body ends inside its message".into());
        }
        let mut bytes = self.bytes;
        bytes.drain(..5);
        Ok(bytes)
    }
}

fn message_len(prefix: &[u8]) -> usize {
    u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize
}

/// `message` with its five-byte prefix (uncompressed).
pub fn frame_message(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The gRPC status codes the outcomes take.
pub mod status {
    /// OK.
    pub const OK: u32 = 0;
    /// INVALID_ARGUMENT.
    pub const INVALID_ARGUMENT: u32 = 3;
    /// NOT_FOUND.
    pub const NOT_FOUND: u32 = 5;
    /// PERMISSION_DENIED.
    pub const PERMISSION_DENIED: u32 = 7;
    /// RESOURCE_EXHAUSTED.
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    /// FAILED_PRECONDITION.
    pub const FAILED_PRECONDITION: u32 = 9;
    /// UNIMPLEMENTED.
    pub const UNIMPLEMENTED: u32 = 12;
    /// INTERNAL.
    pub const INTERNAL: u32 = 13;
    /// UNAVAILABLE.
    pub const UNAVAILABLE: u32 = 14;
    /// UNAUTHENTICATED.
    pub const UNAUTHENTICATED: u32 = 16;
}

/// A refusal kind's status, by § Outcomes' table.
pub fn refusal_status(kind: RefusalKind) -> u32 {
    match kind {
        RefusalKind::Malformed => status::INVALID_ARGUMENT,
        RefusalKind::DigestMismatch => status::FAILED_PRECONDITION,
        RefusalKind::Unauthenticated => status::UNAUTHENTICATED,
        RefusalKind::Unauthorized => status::PERMISSION_DENIED,
        RefusalKind::Full => status::RESOURCE_EXHAUSTED,
        RefusalKind::ShuttingDown | RefusalKind::Unavailable => status::UNAVAILABLE,
    }
}

/// An outcome's status and its message (before percent-encoding): OK for
/// a result or a description, FAILED_PRECONDITION `handler_error`, a
/// refusal's status and reason, INTERNAL `server_error`.
pub fn status_of(outcome: &Outcome) -> (u32, String) {
    match outcome {
        Outcome::Result(_) | Outcome::Description(_) => (status::OK, String::new()),
        Outcome::HandlerError(_) => (status::FAILED_PRECONDITION, "handler_error".into()),
        Outcome::Refusal(r) => (refusal_status(r.kind), r.reason.clone()),
        Outcome::ServerError => (status::INTERNAL, "server_error".into()),
    }
}

/// `grpc-message` as gRPC writes it: every byte outside printable ASCII,
/// and `%`, as `%XX`.
pub fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The type URL prefix of every detail the outcomes carry.
pub const TYPE_URL_PREFIX: &str = "type.hale.dev/";

/// `HaleRefusal` (the generated `.proto`'s message) of `refusal`, or of
/// the server error (`None`: kind `server` alone): kind 1, reason 2, each
/// role of `requires` 3, served 4, proto3's implicit presence (an empty
/// text is not written).
pub fn hale_refusal(refusal: Option<&Refusal>) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(r) = refusal else {
        put_string(&mut out, 1, "server");
        return out;
    };
    put_string(&mut out, 1, r.kind.as_str());
    put_string(&mut out, 2, &r.reason);
    for role in r.requires.iter().flatten() {
        put_string(&mut out, 3, role);
    }
    if let Some(served) = &r.served {
        put_string(&mut out, 4, served);
    }
    out
}

/// A `google.rpc.Status` (code 1, message 2) with one `google.protobuf.Any`
/// detail (3: type_url 1, value 2), as `grpc-status-details-bin` carries
/// it before base64.
pub fn status_details(code: u32, message: &str, type_url: &str, value: &[u8]) -> Vec<u8> {
    let mut any = Vec::new();
    put_string(&mut any, 1, type_url);
    put_bytes(&mut any, 2, value);
    let mut out = Vec::new();
    if code != 0 {
        put_varint_field(&mut out, 1, u64::from(code));
    }
    put_string(&mut out, 2, message);
    put_bytes(&mut out, 3, &any);
    out
}

/// The base64 of a `-bin` header's value, unpadded as gRPC emits it.
pub fn bin_header(value: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(value)
}

fn put_varint_field(out: &mut Vec<u8>, number: u64, v: u64) {
    protobuf::write_tag(out, number, protobuf::VARINT);
    protobuf::write_varint(out, v);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    protobuf::write_bytes_field(out, number, bytes);
}

fn put_string(out: &mut Vec<u8>, number: u64, s: &str) {
    protobuf::write_bytes_field(out, number, s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_a_member_in_every_spelling_and_another_service_is_malformed() {
        for path in [
            "/Public/Orders__place",
            "/Public/Orders.place",
            "/Public/Orders::place",
            "/Public/Orders%3A%3Aplace",
            "/Public/Orders%3a%3aplace",
        ] {
            assert_eq!(
                route(path, "Public"),
                Ok(Route::Call("Orders::place".into())),
                "{path}"
            );
        }
        assert_eq!(
            route("/Admin/Orders__place", "Public"),
            Err("unknown_service: Admin".into())
        );
        assert_eq!(
            route("/hale.api.Description/Describe", "Public"),
            Ok(Route::Describe)
        );
        assert_eq!(
            route(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                "Public"
            ),
            Ok(Route::Reflection { alpha: true })
        );
        for bad in ["/", "/Public", "/Public/", "Public/x", "/Public/a/b", "//x"] {
            assert!(route(bad, "Public").is_err(), "{bad}");
        }
    }

    #[test]
    fn the_content_type_picks_the_codec_and_refuses_the_rest() {
        assert_eq!(codec_of(b"application/grpc"), Ok(GrpcCodec::Proto));
        assert_eq!(codec_of(b"application/grpc+proto"), Ok(GrpcCodec::Proto));
        assert_eq!(codec_of(b"application/grpc+json"), Ok(GrpcCodec::Json));
        assert_eq!(
            codec_of(b"application/grpc+json; charset=utf-8"),
            Ok(GrpcCodec::Json)
        );
        assert_eq!(
            codec_of(b"application/grpc+xml"),
            Err("unsupported_content_type: application/grpc+xml".into())
        );
        assert!(codec_of(b"application/json").is_err());
    }

    fn read(chunks: &[&[u8]], encoding: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let mut r = MessageReader::new(encoding);
        for c in chunks {
            r.push(c);
        }
        r.finish()
    }

    #[test]
    fn a_call_is_one_message_in_any_split() {
        let framed = frame_message(b"hello");
        assert_eq!(framed, b"\0\0\0\0\x05hello");
        for split in 0..=framed.len() {
            let (a, b) = framed.split_at(split);
            assert_eq!(read(&[a, b], None), Ok(b"hello".to_vec()), "{split}");
        }
        // An empty message is a message.
        assert_eq!(read(&[&frame_message(b"")], None), Ok(Vec::new()));
        assert_eq!(read(&[&framed], Some(b"identity")), Ok(b"hello".to_vec()));
    }

    #[test]
    fn every_body_that_is_not_one_message_is_refused_with_its_reason() {
        let framed = frame_message(b"hello");
        let two = [framed.clone(), framed.clone()].concat();
        type Case<'a> = (Vec<u8>, Option<&'a [u8]>, &'a str);
        let cases: Vec<Case> = vec![
            (Vec::new(), None, "no_message"),
            (framed[..3].to_vec(), None, "cut_message"),
            (framed[..7].to_vec(), None, "cut_message"),
            (two, None, "more_than_one_message"),
            (b"\x01\0\0\0\x01x".to_vec(), None, "compressed_message"),
            (b"\x02\0\0\0\x01x".to_vec(), None, "bad_compression_flag"),
            (framed.clone(), Some(b"gzip"), "unsupported_encoding: gzip"),
            (
                [&[0u8][..], &((MAX_MESSAGE + 1) as u32).to_be_bytes()].concat(),
                None,
                "message_too_large",
            ),
        ];
        for (body, encoding, want) in cases {
            let got = read(&[&body], encoding).unwrap_err();
            assert!(got.starts_with(want), "{body:02x?}: {got}");
        }
        // Refused as soon as the prefix says so, before the body ends.
        let mut r = MessageReader::new(None);
        r.push(&[0, 0xff, 0xff, 0xff, 0xff]);
        assert!(r.refused().unwrap().starts_with("message_too_large"));
    }

    #[test]
    fn every_outcome_takes_the_status_of_the_table() {
        use RefusalKind::*;
        let want = [
            (Malformed, 3),
            (DigestMismatch, 9),
            (Unauthenticated, 16),
            (Unauthorized, 7),
            (Full, 8),
            (ShuttingDown, 14),
            (Unavailable, 14),
        ];
        for (kind, code) in want {
            let outcome = Outcome::from(Refusal::new(kind, "why"));
            assert_eq!(status_of(&outcome), (code, "why".into()), "{kind}");
        }
        assert_eq!(status_of(&Outcome::Result(b"{}".to_vec())).0, 0);
        assert_eq!(
            status_of(&Outcome::HandlerError(b"{}".to_vec())),
            (9, "handler_error".into())
        );
        assert_eq!(
            status_of(&Outcome::ServerError),
            (13, "server_error".into())
        );
    }

    #[test]
    fn grpc_message_percent_encodes_what_is_not_printable_ascii_and_percent() {
        assert_eq!(
            percent_encode("unknown_member: Orders::x"),
            "unknown_member: Orders::x"
        );
        assert_eq!(percent_encode("100% é\n"), "100%25 %C3%A9%0A");
        assert_eq!(
            crate::percent::decode(&percent_encode("a%b é")).as_deref(),
            Some("a%b é")
        );
    }

    #[test]
    fn a_status_carries_its_code_message_and_one_any() {
        let details = status_details(9, "handler_error", "type.hale.dev/OrderError", b"\x0a\x01x");
        // code 9, message, details { type_url, value }.
        let mut want = vec![0x08, 9, 0x12, 13];
        want.extend_from_slice(b"handler_error");
        let mut any = vec![0x0a, 24];
        any.extend_from_slice(b"type.hale.dev/OrderError");
        any.extend_from_slice(&[0x12, 3, 0x0a, 1, b'x']);
        want.push(0x1a);
        want.push(any.len() as u8);
        want.extend_from_slice(&any);
        assert_eq!(details, want);
        assert_eq!(bin_header(b"ab"), "YWI");
    }

    #[test]
    fn hale_refusal_writes_what_the_kind_carries() {
        let mut r = Refusal::new(RefusalKind::Unauthorized, "why");
        r.requires = Some(vec!["trader".into(), "desk".into()]);
        let bytes = hale_refusal(Some(&r));
        let mut want = vec![0x0a, 12];
        want.extend_from_slice(b"unauthorized");
        want.extend_from_slice(&[0x12, 3, b'w', b'h', b'y', 0x1a, 6]);
        want.extend_from_slice(b"trader");
        want.extend_from_slice(&[0x1a, 4]);
        want.extend_from_slice(b"desk");
        assert_eq!(bytes, want);
        assert_eq!(hale_refusal(None), b"\x0a\x06server");
    }
}
