//! The gRPC front under a fuzzer: one exposure's framing, the outcomes a
//! receiver may answer with, and the drive loop with its checks, shared by
//! the targets that feed the front raw bytes and those that feed it frames.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::{Delivery, Outcome, Principal, Refusal, RefusalKind, RequestKind};
use limen_core::wire::front::{Front, FrontEvent, Machine};
use limen_core::wire::grpc::Framing;
use limen_grpc::{GrpcFront, GrpcLimits, H2Settings};

use crate::h2::{
    assert_whole_frames, encode, request_headers, ContentPick, Field, PathPick, EMPTY_SETTINGS,
    PREFACE,
};

/// The correlation the front is made with.
pub const CORRELATION: u64 = 77;
/// The surface the program serves, and its two rpcs' names.
pub const SURFACE: &str = "Desk";
/// The rpcs of [`SURFACE`], as the generated service names them.
pub const RPCS: (&str, &str) = ("Book__place", "Book__cancel");

const SRC: &str = "type Place { qty: Int; } type Receipt { order: Int; } type Err { code: String; }\n\
    api Desk { rpc Book::place; rpc Book::cancel; }\n\
    locus Book { fn place(p: Place) -> Receipt { } fn cancel(p: Place) -> Receipt fallible(Err) { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    locus T { fn principal(t: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
    main locus M {\n\
      params { b: Book = Book { }; g: G = G { }; t: T = T { }; }\n\
      run() { let s = api::serve(Desk, grpc::Rpc { bind: \"127.0.0.1:0\", codec: json, principals: self.t, roles: self.g }, as: \"desk\", bound: 4, on_full: refuse); }\n\
    }\n";

/// The framing of the program's one gRPC exposure, built once.
pub fn framing() -> Arc<Framing> {
    static FRAMING: OnceLock<Arc<Framing>> = OnceLock::new();
    FRAMING
        .get_or_init(|| {
            let p = parse_program("f.hl", SRC).expect("the program parses");
            Arc::new(Framing::new(&p, p.exposure("desk").expect("desk")).expect("a framing"))
        })
        .clone()
}

/// The outcome `pick` selects: a result, a handler error, a refusal, the
/// server error, a description.
pub fn outcome(pick: u8) -> Outcome {
    match pick % 5 {
        0 => Outcome::Result(br#"{"order": 1}"#.to_vec()),
        1 => Outcome::HandlerError(br#"{"code": "x"}"#.to_vec()),
        2 => Outcome::from(Refusal::new(RefusalKind::Malformed, "why é %")),
        3 => Outcome::ServerError,
        _ => Outcome::Description(b"{}".to_vec()),
    }
}

/// The HEADERS frame (END_HEADERS) of a server reflection call on stream
/// 1, v1 or (`alpha`) v1alpha.
pub fn reflection_headers(alpha: bool) -> Vec<u8> {
    let path = if alpha {
        PathPick::ReflectionV1Alpha
    } else {
        PathPick::ReflectionV1
    };
    let frame = request_headers(
        1,
        path,
        vec![
            Field::Authority,
            Field::ContentType(ContentPick::Grpc),
            Field::Authorization(0),
        ],
    );
    encode(&[frame], SURFACE, RPCS)
}

/// Feeds a front (at most three streams held) the preface, an empty
/// SETTINGS and `data` in pieces of `chunk` bytes, and answers every
/// request at once. `pick` steers it: its high half stops the front or
/// lets a write stall, an idle stream or an idle connection time out
/// midway; bit 3 opens a server reflection call on stream 1 before `data`
/// (v1alpha when bit 2 is set), so DATA frames reach the reflection
/// stream; each whole message there asks the
/// caller again (a Describe, answered with a description, or with the
/// cycled outcome when bit 1 is set); every other request is answered
/// with `outcome(pick)`.
///
/// Checks: every request names the front's correlation and a client stream
/// (odd, positive) as its client id, each stream framed at most once (a
/// reflection stream asks once per message); the table never holds more
/// than its limit, nor a header block past the header list's limit, nor
/// partial messages past the connection's budget; output is whole frames;
/// `Closed` comes once, last, and nothing is written after it.
pub fn drive(data: &[u8], chunk: usize, pick: u8) {
    let limits = GrpcLimits {
        max_streams: 3,
        // Small enough that a few DATA frames reach it.
        max_buffered: 64 * 1024,
        ..GrpcLimits::default()
    };
    let max_header_list = limits.h2().max_header_list_size as usize;
    let mut front = GrpcFront::new(0, limits, framing(), CORRELATION).expect("a front");
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(EMPTY_SETTINGS);
    if pick & 8 != 0 {
        input.extend(reflection_headers(pick & 4 != 0));
    }
    input.extend_from_slice(data);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut closed = false;
    let mut now = 0;
    for (i, piece) in input.chunks(chunk.max(1)).enumerate() {
        now += 1;
        front.handle_data(now, piece);
        match (pick >> 4, i) {
            (1, 3) => front.stop(now),
            (2, 5) => front.handle_timeout(now + limits.write_stall),
            (3, 4) => front.handle_timeout(now + limits.stream_idle),
            (4, 4) => front.handle_timeout(now + limits.idle),
            _ => {}
        }
        loop {
            while let Some(event) = front.poll_event() {
                assert!(!closed, "an event after Closed: {event:?}");
                match event {
                    FrontEvent::Request { request, .. } => {
                        assert_eq!(request.correlation, CORRELATION);
                        let stream: i32 = request
                            .client_id
                            .as_deref()
                            .and_then(|s| s.parse().ok())
                            .expect("the stream as client id");
                        assert!(stream > 0 && stream % 2 == 1, "{stream}");
                        let describe = request.kind == RequestKind::Describe;
                        // A reflection stream asks once per message.
                        assert!(
                            describe || seen.insert(stream),
                            "stream {stream} framed twice"
                        );
                        let outcome = if describe && pick & 2 == 0 {
                            Outcome::Description(b"{}".to_vec())
                        } else {
                            outcome(pick)
                        };
                        front.deliver(
                            now,
                            Delivery {
                                member: None,
                                accepted: 0,
                                correlation: CORRELATION,
                                request_id: 1,
                                client_id: request.client_id,
                                caller: Principal::bearer("x"),
                                outcome,
                            },
                        );
                    }
                    FrontEvent::Lost => {}
                    FrontEvent::Closed => closed = true,
                }
            }
            assert!(front.streams_held() <= limits.max_streams);
            // Issue 26: a header block is held as decoded to the list's
            // limit (the HPACK bomb), partial messages to the budget.
            assert!(front.header_bytes_held() <= max_header_list);
            assert!(front.buffered() <= limits.max_buffered);
            let bytes = front.pending_output();
            if bytes.is_empty() {
                break;
            }
            assert!(!closed, "output after Closed");
            let n = bytes.len();
            out.extend_from_slice(bytes);
            front.consume_output(now, n);
        }
        if closed {
            break;
        }
    }
    assert_whole_frames(&out);
}

/// One step of [`drive_streams`]: an HTTP/2 event, a delivery, time, or
/// a stop, as the fuzzer picks them.
#[derive(Debug, arbitrary::Arbitrary)]
pub enum StreamStep {
    /// A header block on stream `2 * stream + 1`: the path and content
    /// type picked (a call, reflection, another), whether it ends the
    /// request.
    Headers {
        /// The stream, by index.
        stream: u8,
        /// 0: Book__place, 1: reflection v1, 2: v1alpha, else no such rpc.
        path: u8,
        /// Even: protobuf; odd: `+json`.
        json: bool,
        /// The request ends with its headers.
        end_stream: bool,
    },
    /// A header block past the session's limit.
    HeadersTooLarge {
        /// The stream, by index.
        stream: u8,
        /// It ended the request.
        end_stream: bool,
    },
    /// Body bytes.
    Data {
        /// The stream, by index.
        stream: u8,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A whole message of `len` bytes of `fill`, with its prefix.
    Message {
        /// The stream, by index.
        stream: u8,
        /// Its length.
        len: u16,
        /// Its bytes.
        fill: u8,
    },
    /// The request's side ends.
    EndStream {
        /// The stream, by index.
        stream: u8,
    },
    /// The stream is reset or closed.
    Reset {
        /// The stream, by index.
        stream: u8,
    },
    /// The peer's GOAWAY.
    GoAway,
    /// The oldest framed request is answered with [`outcome`]'s pick.
    Deliver {
        /// The outcome.
        pick: u8,
    },
    /// Time passes by `ms` milliseconds, and the deadlines due act.
    Wait {
        /// How long.
        ms: u16,
    },
    /// Shutdown.
    Stop,
    /// The connection ends.
    Finish,
}

/// Drives core's gRPC stream table (`wire::grpc::streams::Streams`, no
/// nghttp2) through `steps` at most three streams held and a small
/// budget, recording its commands. Checks: the table holds no more than
/// its limit and its budget; every request names the correlation and a
/// stream whose head came; every command names such a stream; after
/// `Closed` nothing is submitted or emitted.
pub fn drive_streams(steps: Vec<StreamStep>) {
    use limen_core::wire::grpc::h2::{Command, H2Event};
    use limen_core::wire::grpc::streams::Streams;
    use limen_core::wire::grpc::{frame_message, REFLECTION_V1, REFLECTION_V1ALPHA};
    use limen_core::SECOND;

    let limits = GrpcLimits {
        max_streams: 3,
        max_buffered: 4096,
        ..GrpcLimits::default()
    };
    let mut now = SECOND;
    let mut table = Streams::new(now, limits, 65536, framing(), CORRELATION);
    let mut out: Vec<Command> = Vec::new();
    let mut opened = HashSet::new();
    let mut framed = std::collections::VecDeque::new();
    let mut closed = false;
    let id = |i: u8| 2 * i32::from(i % 8) + 1;
    for step in steps {
        let before = out.len();
        match step {
            StreamStep::Headers {
                stream,
                path,
                json,
                end_stream,
            } => {
                let path = match path % 4 {
                    0 => format!("/{SURFACE}/{}", RPCS.0),
                    1 => format!("/{REFLECTION_V1}/ServerReflectionInfo"),
                    2 => format!("/{REFLECTION_V1ALPHA}/ServerReflectionInfo"),
                    _ => format!("/{SURFACE}/nope"),
                };
                let ct: &[u8] = if json {
                    b"application/grpc+json"
                } else {
                    b"application/grpc"
                };
                let fields = vec![
                    (b":method".to_vec(), b"POST".to_vec()),
                    (b":path".to_vec(), path.into_bytes()),
                    (b"content-type".to_vec(), ct.to_vec()),
                    (b"authorization".to_vec(), b"Bearer t".to_vec()),
                ];
                opened.insert(id(stream));
                let e = H2Event::Headers {
                    stream: id(stream),
                    fields,
                    end_stream,
                };
                table.handle(now, e, &mut out);
            }
            StreamStep::HeadersTooLarge { stream, end_stream } => {
                opened.insert(id(stream));
                let e = H2Event::HeadersTooLarge {
                    stream: id(stream),
                    end_stream,
                };
                table.handle(now, e, &mut out);
            }
            StreamStep::Data { stream, bytes } => {
                let e = H2Event::Data {
                    stream: id(stream),
                    bytes,
                };
                table.handle(now, e, &mut out);
            }
            StreamStep::Message { stream, len, fill } => {
                let bytes = frame_message(&vec![fill; usize::from(len % 2048)]);
                let e = H2Event::Data {
                    stream: id(stream),
                    bytes,
                };
                table.handle(now, e, &mut out);
            }
            StreamStep::EndStream { stream } => {
                table.handle(now, H2Event::EndStream { stream: id(stream) }, &mut out)
            }
            StreamStep::Reset { stream } => {
                table.handle(now, H2Event::Reset { stream: id(stream) }, &mut out)
            }
            StreamStep::GoAway => table.handle(now, H2Event::GoAway, &mut out),
            StreamStep::Deliver { pick } => {
                if let Some(stream) = framed.pop_front() {
                    let delivery = Delivery {
                        member: None,
                        accepted: 0,
                        correlation: CORRELATION,
                        request_id: 0,
                        client_id: Some(format!("{stream}")),
                        caller: Principal::new("bearer", "t", Vec::new()),
                        outcome: outcome(pick),
                    };
                    table.deliver(delivery, &mut out);
                }
            }
            StreamStep::Wait { ms } => {
                now += u64::from(ms) * (SECOND / 1000) * 16;
                if table.poll_timeout().is_some_and(|t| t <= now) {
                    table.handle_timeout(now, &mut out);
                }
            }
            StreamStep::Stop => {
                table.stop(&mut out);
            }
            StreamStep::Finish => table.finish(),
        }
        table.settle(now);
        if closed {
            assert_eq!(out.len(), before, "a command after Closed");
        }
        for command in &out[before..] {
            let stream = match command {
                Command::Respond { stream, .. }
                | Command::Open { stream, .. }
                | Command::Data { stream, .. }
                | Command::Trailers { stream, .. }
                | Command::Reset { stream, .. }
                | Command::ResetAfterResponse { stream } => Some(*stream),
                Command::GoAway { .. } | Command::Flush => None,
            };
            if let Some(stream) = stream {
                assert!(
                    opened.contains(&stream),
                    "{command:?} on a stream never opened"
                );
            }
        }
        assert!(table.streams_held() <= limits.max_streams);
        assert!(table.buffered() <= limits.max_buffered);
        while let Some(event) = table.poll_event() {
            assert!(!closed, "{event:?} after Closed");
            match event {
                FrontEvent::Request { request, .. } => {
                    assert_eq!(request.correlation, CORRELATION);
                    let stream: i32 = request
                        .client_id
                        .as_deref()
                        .and_then(|s| s.parse().ok())
                        .expect("a stream as the client id");
                    assert!(opened.contains(&stream));
                    if let RequestKind::Call { member, .. } = &request.kind {
                        // The rpc as the path named it (a member no row
                        // has is the exposure's to refuse).
                        assert!(member == "Book::place" || member == "nope", "{member}");
                    }
                    framed.push_back(stream);
                }
                FrontEvent::Closed => closed = true,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // In the gRPC module, not h2's: h2 is below it, and a test there that
    // drove the front made the two import each other.
    use super::*;
    use crate::h2::{Frame, StreamId};

    #[test]
    fn an_hpack_bomb_is_held_to_the_header_list_limit_in_any_split() {
        // 12,000 references to a 4,000-byte field: 48 MB of header list
        // from 16 KB, ended, and left open; `drive` holds the bound.
        let bomb = || Field::Bomb {
            value_len: 4000,
            refs: 12_000,
        };
        for end_headers in [true, false] {
            let frames = [Frame::Headers {
                stream: StreamId(1),
                end_stream: false,
                end_headers,
                priority: None,
                fields: vec![Field::Method(None), Field::Scheme, bomb()],
            }];
            let bytes = encode(&frames, SURFACE, RPCS);
            for chunk in [7, 4096, bytes.len() + 1] {
                drive(&bytes, chunk, 0);
            }
        }
    }
}
