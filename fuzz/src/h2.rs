//! HTTP/2 frame sequences built from a fuzzer's bytes, for the targets that
//! drive the HTTP/2 machines with frames rather than with raw bytes: raw
//! bytes rarely get past the frame header's length and type, so the
//! machines' deeper states (a stream half-closed, a header block cut by
//! CONTINUATION, a window spent, a gRPC message split across DATA frames)
//! are reached only by a generator that writes well-formed frames, now and
//! then wrong on purpose.
//!
//! Header blocks are HPACK without Huffman: static-table indexed fields for
//! the common pseudo-headers and literal fields "without indexing" for the
//! rest, which every decoder must read (RFC 7541 § 6.1, § 6.2.2); the one
//! insertion into the dynamic table is [`Field::Bomb`]'s, the HPACK bomb
//! (one large field indexed, then one-byte references to it) that the
//! header list limit is held against.

use arbitrary::{Arbitrary, Result, Unstructured};

/// One frame of a sequence (RFC 9113 § 6), with the fields a peer chooses.
#[derive(Arbitrary, Debug)]
pub enum Frame {
    /// DATA: `message` bytes, optionally as one gRPC length-prefixed message.
    Data {
        /// The stream, from a small set (see [`StreamId`]).
        stream: StreamId,
        /// END_STREAM.
        end_stream: bool,
        /// Padding length, when PADDED.
        padding: Option<u8>,
        /// Whether the payload gets a gRPC message prefix (flag 0, its length).
        grpc_prefix: bool,
        /// The payload.
        message: Vec<u8>,
    },
    /// HEADERS with a header block.
    Headers {
        /// The stream.
        stream: StreamId,
        /// END_STREAM.
        end_stream: bool,
        /// END_HEADERS (without it a CONTINUATION should follow).
        end_headers: bool,
        /// The PRIORITY flag's dependency and weight.
        priority: Option<(u32, u8)>,
        /// The fields.
        fields: Vec<Field>,
    },
    /// CONTINUATION of a header block.
    Continuation {
        /// The stream.
        stream: StreamId,
        /// END_HEADERS.
        end_headers: bool,
        /// The fields.
        fields: Vec<Field>,
    },
    /// PRIORITY.
    Priority {
        /// The stream.
        stream: StreamId,
        /// Dependency (top bit: exclusive).
        dependency: u32,
        /// Weight.
        weight: u8,
    },
    /// RST_STREAM.
    RstStream {
        /// The stream.
        stream: StreamId,
        /// The error code.
        code: u32,
    },
    /// SETTINGS (or its ACK, whose payload should be empty).
    Settings {
        /// ACK.
        ack: bool,
        /// Identifier and value pairs.
        params: Vec<(SettingId, u32)>,
    },
    /// PING.
    Ping {
        /// ACK.
        ack: bool,
        /// Opaque data.
        data: [u8; 8],
    },
    /// GOAWAY.
    GoAway {
        /// Last stream id.
        last: u32,
        /// Error code.
        code: u32,
    },
    /// WINDOW_UPDATE (zero is a protocol error).
    WindowUpdate {
        /// The stream (0: the connection).
        stream: StreamId,
        /// The increment.
        increment: u32,
    },
    /// Any frame at all: a type, flags, a stream and a payload.
    Raw {
        /// The type (unknown types must be ignored).
        kind: u8,
        /// The flags.
        flags: u8,
        /// The stream id, reserved bit included.
        stream: u32,
        /// The payload.
        payload: Vec<u8>,
    },
}

/// A stream id, mostly one of the first client streams so that frames meet
/// the streams earlier frames opened.
#[derive(Debug)]
pub struct StreamId(pub u32);

impl<'a> Arbitrary<'a> for StreamId {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<StreamId> {
        let pick: u8 = u.arbitrary()?;
        Ok(StreamId(match pick {
            0..=199 => u32::from(pick % 8) * 2 + 1,
            200..=219 => 0,
            220..=239 => u32::from(pick - 219) * 2,
            _ => u.arbitrary::<u32>()? & 0x7fff_ffff,
        }))
    }
}

/// A SETTINGS identifier: the six RFC 9113 defines, or any other.
#[derive(Debug)]
pub struct SettingId(pub u16);

impl<'a> Arbitrary<'a> for SettingId {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<SettingId> {
        let pick: u8 = u.arbitrary()?;
        Ok(SettingId(if pick < 230 {
            u16::from(pick % 6) + 1
        } else {
            u.arbitrary()?
        }))
    }
}

/// A header field: the ones a gRPC request carries, with the values a
/// client might send, or any name and value.
#[derive(Arbitrary, Debug)]
pub enum Field {
    /// `:method: POST` (static index 3), or another method.
    Method(Option<Vec<u8>>),
    /// `:scheme: http` (static index 6).
    Scheme,
    /// `:path`, from the spellings a gRPC front reads.
    Path(PathPick),
    /// `:authority`.
    Authority,
    /// `content-type`, one of the codecs or anything.
    ContentType(ContentPick),
    /// `te: trailers`.
    Te,
    /// `grpc-encoding`, `identity` or `gzip`.
    GrpcEncoding(bool),
    /// `grpc-timeout`.
    GrpcTimeout(u16),
    /// `authorization: Bearer <token>`.
    Authorization(u8),
    /// Any field; the name may be uppercase, a pseudo-header, or empty.
    Other(Vec<u8>, Vec<u8>),
    /// A static-table index, valid or not.
    Indexed(u8),
    /// A dynamic table size update (only legal first in a block).
    TableSize(u16),
    /// The HPACK bomb: a field `x` of `value_len % 4096` bytes with
    /// incremental indexing, then `refs % 12288` one-byte references to the
    /// newest dynamic entry (index 62), each decoding to the whole field.
    Bomb {
        /// The indexed value's length.
        value_len: u16,
        /// The references.
        refs: u16,
    },
}

/// The paths a gRPC front is asked.
#[derive(Arbitrary, Debug)]
pub enum PathPick {
    /// The generated rpc name.
    Place,
    /// The other rpc.
    Cancel,
    /// The older spellings.
    Dotted,
    /// `::`.
    Colons,
    /// `%3A%3A`.
    Escaped,
    /// Describe.
    Describe,
    /// Reflection, v1.
    ReflectionV1,
    /// Reflection, v1alpha.
    ReflectionV1Alpha,
    /// Any bytes.
    Other(Vec<u8>),
}

/// The content types a gRPC front is sent.
#[derive(Arbitrary, Debug)]
pub enum ContentPick {
    /// `application/grpc`.
    Grpc,
    /// `application/grpc+proto`.
    Proto,
    /// `application/grpc+json`.
    Json,
    /// Anything.
    Other(Vec<u8>),
}

/// The client connection preface (RFC 9113 § 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame, the client's first.
pub const EMPTY_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

const TYPE_DATA: u8 = 0;
const TYPE_HEADERS: u8 = 1;
const TYPE_PRIORITY: u8 = 2;
const TYPE_RST_STREAM: u8 = 3;
const TYPE_SETTINGS: u8 = 4;
const TYPE_PING: u8 = 6;
const TYPE_GOAWAY: u8 = 7;
const TYPE_WINDOW_UPDATE: u8 = 8;
const TYPE_CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// The serialized frames, one after another. `surface` and `rpcs` name the
/// paths [`PathPick`] writes (`/<surface>/<rpc>`; the first rpc is written
/// in the older spellings too).
pub fn encode(frames: &[Frame], surface: &str, rpcs: (&str, &str)) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        match frame {
            Frame::Data {
                stream,
                end_stream,
                padding,
                grpc_prefix,
                message,
            } => {
                let mut payload = Vec::new();
                let mut flags = if *end_stream { END_STREAM } else { 0 };
                if let Some(pad) = padding {
                    flags |= PADDED;
                    payload.push(*pad);
                }
                if *grpc_prefix {
                    payload.push(0);
                    payload.extend_from_slice(&(message.len() as u32).to_be_bytes());
                }
                payload.extend_from_slice(message);
                if let Some(pad) = padding {
                    payload.resize(payload.len() + usize::from(*pad), 0);
                }
                push_frame(&mut out, TYPE_DATA, flags, stream.0, &payload);
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                priority,
                fields,
            } => {
                let mut flags = 0;
                if *end_stream {
                    flags |= END_STREAM;
                }
                if *end_headers {
                    flags |= END_HEADERS;
                }
                let mut payload = Vec::new();
                if let Some((dependency, weight)) = priority {
                    flags |= PRIORITY;
                    payload.extend_from_slice(&dependency.to_be_bytes());
                    payload.push(*weight);
                }
                header_block(&mut payload, fields, surface, rpcs);
                push_frame(&mut out, TYPE_HEADERS, flags, stream.0, &payload);
            }
            Frame::Continuation {
                stream,
                end_headers,
                fields,
            } => {
                let mut payload = Vec::new();
                header_block(&mut payload, fields, surface, rpcs);
                let flags = if *end_headers { END_HEADERS } else { 0 };
                push_frame(&mut out, TYPE_CONTINUATION, flags, stream.0, &payload);
            }
            Frame::Priority {
                stream,
                dependency,
                weight,
            } => {
                let mut payload = dependency.to_be_bytes().to_vec();
                payload.push(*weight);
                push_frame(&mut out, TYPE_PRIORITY, 0, stream.0, &payload);
            }
            Frame::RstStream { stream, code } => {
                push_frame(&mut out, TYPE_RST_STREAM, 0, stream.0, &code.to_be_bytes());
            }
            Frame::Settings { ack, params } => {
                let mut payload = Vec::new();
                for (id, value) in params {
                    payload.extend_from_slice(&id.0.to_be_bytes());
                    payload.extend_from_slice(&value.to_be_bytes());
                }
                push_frame(
                    &mut out,
                    TYPE_SETTINGS,
                    if *ack { ACK } else { 0 },
                    0,
                    &payload,
                );
            }
            Frame::Ping { ack, data } => {
                push_frame(&mut out, TYPE_PING, if *ack { ACK } else { 0 }, 0, data);
            }
            Frame::GoAway { last, code } => {
                let mut payload = last.to_be_bytes().to_vec();
                payload.extend_from_slice(&code.to_be_bytes());
                push_frame(&mut out, TYPE_GOAWAY, 0, 0, &payload);
            }
            Frame::WindowUpdate { stream, increment } => {
                push_frame(
                    &mut out,
                    TYPE_WINDOW_UPDATE,
                    0,
                    stream.0,
                    &increment.to_be_bytes(),
                );
            }
            Frame::Raw {
                kind,
                flags,
                stream,
                payload,
            } => push_frame(&mut out, *kind, *flags, *stream, payload),
        }
    }
    out
}

/// The HEADERS frame (END_HEADERS, not END_STREAM) of a POST on `stream`
/// for `path`: `:method`, `:scheme` and `:path`, then `more`.
pub fn request_headers(stream: u32, path: PathPick, more: Vec<Field>) -> Frame {
    let mut fields = vec![Field::Method(None), Field::Scheme, Field::Path(path)];
    fields.extend(more);
    Frame::Headers {
        stream: StreamId(stream),
        end_stream: false,
        end_headers: true,
        priority: None,
        fields,
    }
}

/// Asserts that `out` is a run of whole HTTP/2 frames: nine-byte headers
/// whose lengths add up to the bytes.
pub fn assert_whole_frames(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        assert!(at + 9 <= out.len(), "a cut frame header");
        let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
        at += 9 + len;
    }
    assert_eq!(at, out.len(), "a cut frame");
}

/// A frame header and its payload; the length is the payload's, cut to
/// 24 bits as the header holds it (a longer payload then reads as the next
/// frames, which is a wrong frame a peer may send).
fn push_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = (payload.len() as u32).min(0x00ff_ffff);
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

fn header_block(out: &mut Vec<u8>, fields: &[Field], surface: &str, rpcs: (&str, &str)) {
    for field in fields {
        match field {
            Field::Method(None) => out.push(0x80 | 3),
            Field::Method(Some(other)) => literal(out, b":method", other),
            Field::Scheme => out.push(0x80 | 6),
            Field::Path(pick) => {
                let (locus, function) = rpcs.0.split_once("__").unwrap_or((rpcs.0, ""));
                let path = match pick {
                    PathPick::Place => format!("/{surface}/{}", rpcs.0).into_bytes(),
                    PathPick::Cancel => format!("/{surface}/{}", rpcs.1).into_bytes(),
                    PathPick::Dotted => format!("/{surface}/{locus}.{function}").into_bytes(),
                    PathPick::Colons => format!("/{surface}/{locus}::{function}").into_bytes(),
                    PathPick::Escaped => format!("/{surface}/{locus}%3A%3A{function}").into_bytes(),
                    PathPick::Describe => b"/hale.api.Description/Describe".to_vec(),
                    PathPick::ReflectionV1 => {
                        b"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo".to_vec()
                    }
                    PathPick::ReflectionV1Alpha => {
                        b"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo".to_vec()
                    }
                    PathPick::Other(bytes) => bytes.clone(),
                };
                literal(out, b":path", &path);
            }
            Field::Authority => literal(out, b":authority", b"127.0.0.1"),
            Field::ContentType(pick) => {
                let value: &[u8] = match pick {
                    ContentPick::Grpc => b"application/grpc",
                    ContentPick::Proto => b"application/grpc+proto",
                    ContentPick::Json => b"application/grpc+json",
                    ContentPick::Other(bytes) => bytes,
                };
                literal(out, b"content-type", value);
            }
            Field::Te => literal(out, b"te", b"trailers"),
            Field::GrpcEncoding(gzip) => literal(
                out,
                b"grpc-encoding",
                if *gzip { b"gzip" } else { b"identity" },
            ),
            Field::GrpcTimeout(n) => literal(out, b"grpc-timeout", format!("{n}m").as_bytes()),
            Field::Authorization(who) => {
                let token = match who % 4 {
                    0 => "t-alice",
                    1 => "t-bob",
                    2 => "t-dave",
                    _ => "nobody",
                };
                literal(out, b"authorization", format!("Bearer {token}").as_bytes());
            }
            Field::Other(name, value) => literal(out, name, value),
            Field::Indexed(index) => out.push(0x80 | (index & 0x7f)),
            Field::TableSize(size) => integer(out, 0x20, 5, usize::from(*size)),
            Field::Bomb { value_len, refs } => {
                out.push(0x40);
                integer(out, 0, 7, 1);
                out.push(b'x');
                let len = usize::from(*value_len % 4096);
                integer(out, 0, 7, len);
                out.resize(out.len() + len, b'a');
                out.resize(out.len() + usize::from(*refs % 12288), 0x80 | 62);
            }
        }
    }
}

/// A literal field without indexing, new name (RFC 7541 § 6.2.2), no Huffman.
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    integer(out, 0, 7, name.len());
    out.extend_from_slice(name);
    integer(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// An HPACK integer with an N-bit prefix (RFC 7541 § 5.1), its first byte
/// carrying `high`'s bits above the prefix.
fn integer(out: &mut Vec<u8>, high: u8, prefix: u32, mut n: usize) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(high | n as u8);
        return;
    }
    out.push(high | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_rfc_7541_appendix_c1() {
        // C.1.1: 10 in a 5-bit prefix; C.1.2: 1337 in a 5-bit prefix.
        let mut out = Vec::new();
        integer(&mut out, 0, 5, 10);
        assert_eq!(out, [0x0a]);
        out.clear();
        integer(&mut out, 0, 5, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
    }

    #[test]
    fn a_request_is_whole_frames() {
        let frames = [request_headers(1, PathPick::Place, vec![])];
        let bytes = encode(&frames, "Desk", ("Book__place", "Book__cancel"));
        assert_eq!(&bytes[3..9], &[TYPE_HEADERS, END_HEADERS, 0, 0, 0, 1]);
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        assert_eq!(bytes.len(), 9 + len);
        assert_whole_frames(&bytes);
        assert_eq!(&bytes[9..11], &[0x83, 0x86]);
    }
}
