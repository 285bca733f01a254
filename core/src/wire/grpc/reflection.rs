//! Server reflection (§ gRPC, Server reflection), as pure functions: the
//! files an exposure's reflection answers (each a [`ProtoFile`], the model
//! the `.proto` text is written from), the answer to one
//! `ServerReflectionRequest`, and the reader that cuts a bidirectional
//! stream's body into its whole messages.
//!
//! The stream itself (the response left open between messages, the bearer
//! asked at every message, the end paths) is `limen-grpc`'s, over
//! `limen-nghttp2`.

use super::{MAX_MESSAGE, REFLECTION_V1, REFLECTION_V1ALPHA};
use crate::hale::docs::proto_file::{
    description_file, reflection_file, reflection_file_name, ProtoFile,
};
use crate::hale::protobuf::{self, WireValue};

/// `google.rpc.Code` NOT_FOUND, the `error_code` of an `ErrorResponse`
/// for a symbol or a file no one has.
pub const NOT_FOUND: i32 = 5;

/// `google.rpc.Code` INVALID_ARGUMENT, the `error_code` of an
/// `ErrorResponse` for a request that asks nothing.
pub const INVALID_ARGUMENT: i32 = 3;

/// One file reflection serves: its model and its descriptor, serialized
/// once.
#[derive(Clone, Debug)]
struct Served {
    file: ProtoFile,
    descriptor: Vec<u8>,
}

/// What one exposure's reflection answers: the surface's `.proto`, the
/// Describe method's and reflection's own (v1 and v1alpha), and the
/// services they declare.
#[derive(Clone, Debug)]
pub struct Reflection {
    files: Vec<Served>,
    services: Vec<String>,
}

impl Reflection {
    /// Reflection over `surface`'s file (the model of its `.proto`).
    pub fn new(surface: ProtoFile) -> Reflection {
        let files: Vec<Served> = [
            surface,
            description_file(),
            reflection_file(false),
            reflection_file(true),
        ]
        .into_iter()
        .map(|file| Served {
            descriptor: file.descriptor(),
            file,
        })
        .collect();
        let services = files.iter().flat_map(|s| s.file.service_names()).collect();
        Reflection { files, services }
    }

    /// The services listed: the surface, `hale.api.Description`, and both
    /// reflection services.
    pub fn services(&self) -> &[String] {
        &self.services
    }

    /// The descriptor of the file named `name`.
    pub fn file_by_name(&self, name: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|s| s.file.name == name)
            .map(|s| s.descriptor.as_slice())
    }

    /// The descriptor of the file that declares `symbol` (fully
    /// qualified, a leading dot allowed).
    pub fn file_by_symbol(&self, symbol: &str) -> Option<&[u8]> {
        let symbol = symbol.strip_prefix('.').unwrap_or(symbol);
        self.files
            .iter()
            .find(|s| s.file.declares(symbol))
            .map(|s| s.descriptor.as_slice())
    }

    /// The `ServerReflectionResponse` to one `ServerReflectionRequest`
    /// (`request`, the message's bytes): `valid_host` the request's host,
    /// `original_request` the request, and the file, the services or an
    /// `error_response` (NOT_FOUND for a symbol, a file or an extension no
    /// one has; INVALID_ARGUMENT for a request that asks nothing). A
    /// message that is not protobuf is `Err` with the reason, which ends
    /// the call.
    pub fn answer(&self, request: &[u8]) -> Result<Vec<u8>, String> {
        let mut host: &[u8] = &[];
        // The oneof: the last of its fields sent wins.
        let mut asked: Option<(u64, &[u8])> = None;
        for (number, value) in protobuf::fields(request)? {
            match (number, value) {
                (1, WireValue::Len(v)) => host = v,
                (3..=7, WireValue::Len(v)) => asked = Some((number, v)),
                (1 | 3..=7, _) => return Err("wrong_type: payload".into()),
                _ => {}
            }
        }
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        let mut out = Vec::new();
        protobuf::write_bytes_field(&mut out, 1, host);
        put_len(&mut out, 2, request);
        match asked {
            Some((3, name)) => match self.file_by_name(&text(name)) {
                Some(d) => file_response(&mut out, d),
                None => error_response(
                    &mut out,
                    NOT_FOUND,
                    &format!("file not found: {}", text(name)),
                ),
            },
            Some((4, symbol)) => match self.file_by_symbol(&text(symbol)) {
                Some(d) => file_response(&mut out, d),
                None => error_response(
                    &mut out,
                    NOT_FOUND,
                    &format!("symbol not found: {}", text(symbol)),
                ),
            },
            Some((5 | 6, _)) => error_response(
                &mut out,
                NOT_FOUND,
                "extensions not found: this server declares no extension",
            ),
            Some((7, _)) => {
                let mut list = Vec::new();
                for name in &self.services {
                    let mut service = Vec::new();
                    protobuf::write_bytes_field(&mut service, 1, name.as_bytes());
                    put_len(&mut list, 1, &service);
                }
                put_len(&mut out, 6, &list);
            }
            _ => error_response(
                &mut out,
                INVALID_ARGUMENT,
                "empty_request: a ServerReflectionRequest asks for a file, a symbol or the services",
            ),
        }
        Ok(out)
    }
}

/// `file_descriptor_response` (4): `FileDescriptorResponse` with the one
/// file; none of the files served imports another.
fn file_response(out: &mut Vec<u8>, descriptor: &[u8]) {
    let mut files = Vec::new();
    put_len(&mut files, 1, descriptor);
    put_len(out, 4, &files);
}

/// `error_response` (7): `ErrorResponse { error_code, error_message }`.
fn error_response(out: &mut Vec<u8>, code: i32, message: &str) {
    let mut error = Vec::new();
    protobuf::write_tag(&mut error, 1, protobuf::VARINT);
    protobuf::write_varint(&mut error, code as u64);
    protobuf::write_bytes_field(&mut error, 2, message.as_bytes());
    put_len(out, 7, &error);
}

/// A length-delimited field written even when empty: a message field has
/// presence (an empty request is still the original request).
fn put_len(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    protobuf::write_tag(out, number, protobuf::LEN);
    protobuf::write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The reflection service a path's `alpha` names.
pub fn service(alpha: bool) -> &'static str {
    if alpha {
        REFLECTION_V1ALPHA
    } else {
        REFLECTION_V1
    }
}

/// The file that declares the reflection service a path's `alpha` names.
pub fn file_name(alpha: bool) -> &'static str {
    reflection_file_name(alpha)
}

/// Why a stream of messages ended the call, with its gRPC status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamError {
    /// The status (RESOURCE_EXHAUSTED for a message over the limit,
    /// INTERNAL for one the half-close cut, INVALID_ARGUMENT for a flag
    /// this server does not take).
    pub status: u32,
    /// Why, as `grpc-message` says it.
    pub reason: String,
}

/// The messages of a stream's body, each whole as it completes: a
/// bidirectional call's request side, cut at each five-byte prefix.
#[derive(Debug, Default)]
pub struct MessageStream {
    bytes: Vec<u8>,
    at: usize,
}

impl MessageStream {
    /// Takes bytes of the body.
    pub fn push(&mut self, data: &[u8]) {
        if self.at > 0 && self.at == self.bytes.len() {
            self.bytes.clear();
            self.at = 0;
        }
        self.bytes.extend_from_slice(data);
    }

    /// The bytes held and not yet taken as messages (what a connection's
    /// budget across its streams counts).
    pub fn held(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next whole message, `None` while the next is not whole, or why
    /// the stream cannot go on: a message over 1 MiB (RESOURCE_EXHAUSTED,
    /// as soon as its prefix says so) or a compressed one.
    pub fn next_message(&mut self) -> Option<Result<Vec<u8>, StreamError>> {
        let rest = &self.bytes[self.at..];
        if rest.len() < 5 {
            return None;
        }
        if rest[0] != 0 {
            return Some(Err(StreamError {
                status: super::status::INVALID_ARGUMENT,
                reason: if rest[0] == 1 {
                    "compressed_message: this server takes identity only".into()
                } else {
                    format!("bad_compression_flag: {}", rest[0])
                },
            }));
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if len > MAX_MESSAGE {
            return Some(Err(StreamError {
                status: super::status::RESOURCE_EXHAUSTED,
                reason: format!("message_too_large: {len} bytes, over {MAX_MESSAGE}"),
            }));
        }
        if rest.len() < 5 + len {
            return None;
        }
        let message = rest[5..5 + len].to_vec();
        self.at += 5 + len;
        Some(Ok(message))
    }

    /// The body ended: an error when it ends inside a message (INTERNAL).
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(StreamError {
                status: super::status::INTERNAL,
                reason: "cut_message: the stream ends inside a message".into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hale::docs::proto_file::{FieldDef, FieldType, Label, MessageDef, ServiceDef};
    use crate::wire::grpc::frame_message;

    fn surface() -> ProtoFile {
        ProtoFile {
            name: "Public.proto".into(),
            package: None,
            header: "// h\n".into(),
            services: vec![ServiceDef {
                name: "Public".into(),
                methods: Vec::new(),
            }],
            messages: vec![MessageDef::new(
                "Order",
                vec![FieldDef::new("qty", 1, FieldType::Int64, Label::Optional)],
            )],
        }
    }

    /// The fields of a message, as (number, bytes or varint).
    fn read(message: &[u8]) -> Vec<(u64, WireValue<'_>)> {
        protobuf::fields(message).unwrap()
    }

    fn len(v: &WireValue<'_>) -> Vec<u8> {
        match v {
            WireValue::Len(b) => b.to_vec(),
            other => panic!("{other:?}"),
        }
    }

    fn request(number: u64, text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        protobuf::write_bytes_field(&mut out, 1, b"localhost");
        put_len(&mut out, number, text.as_bytes());
        out
    }

    #[test]
    fn list_services_names_the_surface_description_and_both_reflections() {
        let r = Reflection::new(surface());
        let req = request(7, "*");
        let resp = r.answer(&req).unwrap();
        let fields = read(&resp);
        assert_eq!(len(&fields[0].1), b"localhost");
        assert_eq!((fields[1].0, len(&fields[1].1)), (2, req.clone()));
        assert_eq!(fields[2].0, 6);
        let list = len(&fields[2].1);
        let names: Vec<String> = read(&list)
            .iter()
            .map(|(_, s)| String::from_utf8(len(&read(&len(s))[0].1)).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Public",
                "hale.api.Description",
                REFLECTION_V1,
                REFLECTION_V1ALPHA
            ]
        );
    }

    #[test]
    fn a_symbol_or_file_answers_its_descriptor_and_an_unknown_one_not_found() {
        let r = Reflection::new(surface());
        let d = surface().descriptor();
        for (number, asked) in [
            (4, "Public"),
            (4, "Order"),
            (4, ".Order"),
            (4, "Order.qty"),
            (3, "Public.proto"),
        ] {
            let resp = r.answer(&request(number, asked)).unwrap();
            let fields = read(&resp);
            assert_eq!(fields[2].0, 4, "{asked}");
            let files = len(&fields[2].1);
            assert_eq!(len(&read(&files)[0].1), d, "{asked}");
        }
        for (number, asked, file) in [
            (
                4,
                "grpc.reflection.v1.ServerReflection",
                "grpc/reflection/v1/",
            ),
            (
                4,
                "grpc.reflection.v1alpha.ServerReflectionResponse",
                "grpc/reflection/v1alpha/",
            ),
            (4, "hale.api.Description.Describe", "hale/api/"),
            (3, "hale/api/description.proto", "hale/api/"),
        ] {
            let resp = r.answer(&request(number, asked)).unwrap();
            let files = len(&read(&resp)[2].1);
            let descriptor = len(&read(&files)[0].1);
            let name = String::from_utf8(len(&read(&descriptor)[0].1)).unwrap();
            assert!(name.starts_with(file), "{asked}: {name}");
        }
        for (number, asked) in [
            (4, "Nope"),
            (4, "Order.nope"),
            (4, "grpc.reflection.v1.Nope"),
            (3, "Nope.proto"),
            (6, "Order"),
        ] {
            let resp = r.answer(&request(number, asked)).unwrap();
            let fields = read(&resp);
            assert_eq!(fields[2].0, 7, "{asked}");
            let error = len(&fields[2].1);
            assert_eq!(read(&error)[0].1, WireValue::Varint(5), "{asked}");
        }
        // Asking nothing is an error response, not the end of the call;
        // a message that is not protobuf ends it.
        let resp = r.answer(b"").unwrap();
        assert_eq!(read(&len(&read(&resp)[1].1))[0].1, WireValue::Varint(3));
        assert!(r.answer(&[0x3a, 9]).is_err());
    }

    #[test]
    fn a_stream_yields_each_message_when_whole_in_any_split() {
        let body = [
            frame_message(b"ab"),
            frame_message(b""),
            frame_message(b"c"),
        ]
        .concat();
        for split in 0..=body.len() {
            let mut s = MessageStream::default();
            let mut got = Vec::new();
            for part in [&body[..split], &body[split..]] {
                s.push(part);
                while let Some(m) = s.next_message() {
                    got.push(m.unwrap());
                }
            }
            assert_eq!(got, [b"ab".to_vec(), vec![], b"c".to_vec()], "{split}");
            assert!(s.finish().is_ok());
        }
        let mut s = MessageStream::default();
        s.push(&frame_message(b"abc")[..6]);
        assert!(s.next_message().is_none());
        assert_eq!(s.finish().unwrap_err().status, 13);
        let mut s = MessageStream::default();
        s.push(&[0, 0x10, 0, 0, 1]);
        assert_eq!(s.next_message().unwrap().unwrap_err().status, 8);
    }
}
