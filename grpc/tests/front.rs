//! The gRPC front over hand-written HTTP/2 frames: what it frames for the
//! exposure, and the frames it answers with (types, flags, streams and
//! error codes, which need no HPACK decoder to read). The real peers
//! (grpcio, h2) drive it through the server in `drivers/tests/grpc_peer.rs`.

use std::sync::Arc;

use limen_core::hale::model::parse_program;
use limen_core::hale::protobuf::{self, WireValue};
use limen_core::hale::runtime::{Delivery, Outcome, Payload, Principal, RequestKind};
use limen_core::wire::front::{Front, FrontEvent, Machine};
use limen_core::wire::grpc::{frame_message, Framing};
use limen_grpc::{GrpcFront, GrpcLimits, H2Settings};

const SRC: &str = "type Place { qty: Int; } type Receipt { order: Int; }\n\
    api Desk { rpc Book::place; }\n\
    locus Book { fn place(p: Place) -> Receipt { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    locus T { fn principal(t: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
    main locus M {\n\
      params { b: Book = Book { }; g: G = G { }; t: T = T { }; }\n\
      run() { let s = api::serve(Desk, grpc::Rpc { bind: \"127.0.0.1:0\", codec: json, principals: self.t, roles: self.g }, as: \"desk\", bound: 4, on_full: refuse); }\n\
    }\n";

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;

fn framing() -> Arc<Framing> {
    let p = parse_program("t.hl", SRC).unwrap_or_else(|d| panic!("{d}"));
    Arc::new(Framing::new(&p, p.exposure("desk").unwrap()).unwrap())
}

fn front(limits: GrpcLimits) -> GrpcFront {
    GrpcFront::new(0, limits, framing(), 9).unwrap()
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// HPACK's literal header field without indexing, a new name, no Huffman.
fn hpack(fields: &[(&str, &str)]) -> Vec<u8> {
    fn int(out: &mut Vec<u8>, mut n: usize) {
        if n < 127 {
            out.push(n as u8);
            return;
        }
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    let mut out = Vec::new();
    for (n, v) in fields {
        out.push(0);
        int(&mut out, n.len());
        out.extend_from_slice(n.as_bytes());
        int(&mut out, v.len());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

fn call_headers(stream: u32, path: &str, content_type: &str, end: bool) -> Vec<u8> {
    let block = hpack(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "x"),
        ("content-type", content_type),
        ("authorization", "Bearer t-alice"),
        ("hale-surface-digest", "fnv1a64:1"),
    ]);
    frame(
        HEADERS,
        END_HEADERS | if end { END_STREAM } else { 0 },
        stream,
        &block,
    )
}

fn open() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out
}

/// The frames of `bytes`: (type, flags, stream, payload).
fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = Vec::new();
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap()) & 0x7fff_ffff;
        out.push((bytes[3], bytes[4], stream, bytes[9..9 + len].to_vec()));
        bytes = &bytes[9 + len..];
    }
    out
}

/// Everything the front has to write, written.
fn drain(f: &mut GrpcFront) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut all = Vec::new();
    loop {
        let out = f.pending_output().to_vec();
        if out.is_empty() {
            break;
        }
        f.consume_output(0, out.len());
        all.extend(out);
    }
    frames(&all)
}

fn events(f: &mut GrpcFront) -> Vec<FrontEvent> {
    std::iter::from_fn(|| f.poll_event()).collect()
}

fn delivery(stream: &str, outcome: Outcome) -> Delivery {
    Delivery {
        member: None,
        accepted: 0,
        correlation: 9,
        request_id: 1,
        client_id: Some(stream.into()),
        caller: Principal::bearer("alice"),
        outcome,
    }
}

#[test]
fn a_call_is_framed_with_its_stream_bearer_and_digest_in_any_split() {
    let mut bytes = open();
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    bytes.extend(frame(DATA, END_STREAM, 1, &frame_message(br#"{"qty":1}"#)));
    for split in [1, 7, bytes.len()] {
        let mut f = front(GrpcLimits::default());
        // The server speaks first: its SETTINGS.
        assert_eq!(drain(&mut f)[0].0, SETTINGS);
        for chunk in bytes.chunks(split) {
            f.handle_data(0, chunk);
        }
        let got = events(&mut f);
        assert_eq!(got.len(), 1, "{got:?}");
        let FrontEvent::Request { request, .. } = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(request.correlation, 9);
        assert_eq!(request.client_id.as_deref(), Some("1"));
        assert_eq!(request.digest.as_deref(), Some("fnv1a64:1"));
        assert_eq!(
            request.kind,
            RequestKind::Call {
                member: "Book::place".into(),
                payload: Payload::Json(br#"{"qty":1}"#.to_vec())
            }
        );
        assert_eq!(f.streams_held(), 1);
    }
}

#[test]
fn a_result_is_headers_data_and_trailers_and_a_refusal_one_headers_frame() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    for stream in [1, 3] {
        bytes.extend(call_headers(
            stream,
            "/Desk/Book__place",
            "application/grpc+json",
            false,
        ));
        bytes.extend(frame(DATA, END_STREAM, stream, &frame_message(b"{}")));
    }
    f.handle_data(0, &bytes);
    assert_eq!(events(&mut f).len(), 2);
    drain(&mut f);
    // Answered out of order: each on its own stream.
    let refusal = Outcome::from(limen_core::hale::runtime::Refusal::new(
        limen_core::hale::runtime::RefusalKind::Full,
        "the exposure is full",
    ));
    assert!(f.deliver(0, delivery("3", refusal)) > 0);
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert_eq!(kinds, [(HEADERS, END_HEADERS | END_STREAM, 3)]);
    f.deliver(
        0,
        delivery("1", Outcome::Result(br#"{"order":1}"#.to_vec())),
    );
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert_eq!(
        kinds,
        [
            (HEADERS, END_HEADERS, 1),
            (DATA, 0, 1),
            (HEADERS, END_HEADERS | END_STREAM, 1)
        ]
    );
    assert_eq!(out[1].3, frame_message(br#"{"order":1}"#));
    assert_eq!(f.streams_held(), 0);
    // A delivery for a stream no longer held is dropped.
    assert_eq!(
        f.deliver(0, delivery("1", Outcome::Result(b"{}".to_vec()))),
        0
    );
}

#[test]
fn a_body_refused_by_its_prefix_is_answered_before_it_ends() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc",
        false,
    ));
    bytes.extend(frame(DATA, 0, 1, &[0, 0xff, 0xff, 0xff, 0xff]));
    f.handle_data(0, &bytes);
    let got = events(&mut f);
    let [FrontEvent::Request { request, .. }] = got.as_slice() else {
        panic!("{got:?}")
    };
    let RequestKind::Malformed { reason } = &request.kind else {
        panic!("{request:?}")
    };
    assert!(reason.starts_with("message_too_large"), "{reason}");
}

#[test]
fn a_stream_the_peer_resets_fails_alone() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    for stream in [1, 3] {
        bytes.extend(call_headers(
            stream,
            "/Desk/Book__place",
            "application/grpc+json",
            false,
        ));
        bytes.extend(frame(DATA, END_STREAM, stream, &frame_message(b"{}")));
    }
    bytes.extend(frame(RST_STREAM, 0, 1, &8u32.to_be_bytes()));
    f.handle_data(0, &bytes);
    assert_eq!(events(&mut f).len(), 2);
    assert_eq!(f.streams_held(), 1);
    assert_eq!(
        f.deliver(0, delivery("1", Outcome::Result(b"{}".to_vec()))),
        0
    );
    assert!(f.deliver(0, delivery("3", Outcome::Result(b"{}".to_vec()))) > 0);
    assert!(!f.is_closed());
}

#[test]
fn one_stream_past_the_table_is_refused_stream() {
    let limits = GrpcLimits {
        max_streams: 2,
        ..GrpcLimits::default()
    };
    let mut f = front(limits);
    let mut bytes = open();
    // The client acknowledges the server's SETTINGS (3 streams, one past
    // the table's 2): a stream past the table is the front's to refuse.
    bytes.extend(frame(SETTINGS, 1, 0, &[]));
    for stream in [1, 3, 5] {
        bytes.extend(call_headers(
            stream,
            "/Desk/Book__place",
            "application/grpc+json",
            false,
        ));
    }
    f.handle_data(0, &bytes);
    let out = drain(&mut f);
    let resets: Vec<_> = out.iter().filter(|(t, ..)| *t == RST_STREAM).collect();
    assert_eq!(resets.len(), 1, "{out:?}");
    assert_eq!(
        (resets[0].2, resets[0].3.as_slice()),
        (5, &7u32.to_be_bytes()[..])
    );
    assert_eq!(f.streams_held(), 2);
    assert!(!f.is_closed());
}

#[test]
fn a_protocol_error_is_goaway_and_loses_the_calls() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    bytes.extend(frame(DATA, END_STREAM, 1, &frame_message(b"{}")));
    f.handle_data(0, &bytes);
    assert_eq!(events(&mut f).len(), 1);
    // DATA on stream 0 is a connection error (RFC 9113 § 6.1).
    f.handle_data(0, &frame(DATA, 0, 0, b"x"));
    let out = drain(&mut f);
    let goaway = out.iter().find(|(t, ..)| *t == GOAWAY).expect("GOAWAY");
    assert_eq!(&goaway.3[4..8], &1u32.to_be_bytes(), "PROTOCOL_ERROR");
    assert_eq!(events(&mut f), [FrontEvent::Lost, FrontEvent::Closed]);
    assert!(f.is_closed());
}

#[test]
fn stop_sends_goaway_after_the_replies_and_closes_when_streams_are_done() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    bytes.extend(frame(DATA, END_STREAM, 1, &frame_message(b"{}")));
    f.handle_data(0, &bytes);
    events(&mut f);
    drain(&mut f);
    f.deliver(0, delivery("1", Outcome::Result(b"{}".to_vec())));
    f.stop(0);
    let out = drain(&mut f);
    let kinds: Vec<u8> = out.iter().map(|(t, ..)| *t).collect();
    assert_eq!(kinds, [HEADERS, DATA, HEADERS, GOAWAY]);
    assert_eq!(&out[3].3[4..8], &0u32.to_be_bytes(), "NO_ERROR");
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
}

#[test]
fn output_the_peer_does_not_read_ends_the_connection() {
    let mut f = front(GrpcLimits::default());
    let t = f.poll_timeout().expect("the SETTINGS wait");
    f.handle_timeout(t - 1);
    assert!(!f.is_closed());
    f.handle_timeout(t);
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
}

#[test]
fn stop_refuses_a_stream_still_being_read() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    // Stream 1 framed, stream 3's message not yet whole.
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    bytes.extend(frame(DATA, END_STREAM, 1, &frame_message(b"{}")));
    bytes.extend(call_headers(
        3,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    f.handle_data(0, &bytes);
    assert_eq!(events(&mut f).len(), 1);
    drain(&mut f);
    f.deliver(0, delivery("1", Outcome::Result(b"{}".to_vec())));
    f.stop(0);
    let out = drain(&mut f);
    let kinds: Vec<(u8, u32)> = out.iter().map(|(t, _, s, _)| (*t, *s)).collect();
    assert_eq!(
        kinds,
        [
            (HEADERS, 1),
            (DATA, 1),
            (HEADERS, 1),
            (RST_STREAM, 3),
            (GOAWAY, 0)
        ]
    );
    assert_eq!(out[3].3, 7u32.to_be_bytes(), "REFUSED_STREAM");
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
}

#[test]
fn the_peer_gone_loses_the_calls_it_has_with_the_exposure() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(
        1,
        "/Desk/Book__place",
        "application/grpc+json",
        false,
    ));
    bytes.extend(frame(DATA, END_STREAM, 1, &frame_message(b"{}")));
    f.handle_data(0, &bytes);
    assert_eq!(events(&mut f).len(), 1);
    f.handle_eof(0);
    assert_eq!(events(&mut f), [FrontEvent::Lost, FrontEvent::Closed]);
    assert!(f.pending_output().is_empty());
    assert_eq!(
        f.deliver(0, delivery("1", Outcome::Result(b"{}".to_vec()))),
        0
    );
    // A connection with nothing at the exposure only closes.
    let mut f = front(GrpcLimits::default());
    f.handle_data(0, &open());
    f.handle_eof(0);
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
}

const REFLECTION: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

/// A `ServerReflectionRequest` asking `list_services` (7).
fn list_services() -> Vec<u8> {
    frame_message(&[0x3a, 0])
}

/// A `ServerReflectionRequest` asking the file of `symbol` (4).
fn by_symbol(symbol: &str) -> Vec<u8> {
    let mut m = vec![0x22, symbol.len() as u8];
    m.extend_from_slice(symbol.as_bytes());
    frame_message(&m)
}

/// The one field `number` of `message`, as bytes.
fn field(message: &[u8], number: u64) -> Vec<u8> {
    let all: Vec<Vec<u8>> = fields(message, number);
    assert_eq!(all.len(), 1, "field {number} of {message:02x?}");
    all.into_iter().next().unwrap()
}

/// Every length-delimited field `number` of `message`.
fn fields(message: &[u8], number: u64) -> Vec<Vec<u8>> {
    protobuf::len_fields(message, number)
        .unwrap()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect()
}

fn varint(message: &[u8], number: u64) -> Option<u64> {
    protobuf::fields(message)
        .unwrap()
        .into_iter()
        .find_map(|(n, v)| match v {
            WireValue::Varint(x) if n == number => Some(x),
            _ => None,
        })
}

/// A message of a DATA payload, its prefix checked.
fn message_of(data: &[u8]) -> Vec<u8> {
    let len = u32::from_be_bytes(data[1..5].try_into().unwrap()) as usize;
    assert_eq!((data[0], data.len()), (0, 5 + len), "one whole message");
    data[5..].to_vec()
}

fn describe_asked(f: &mut GrpcFront, stream: &str) {
    let got = events(f);
    let [FrontEvent::Request { request, .. }] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!(request.kind, RequestKind::Describe, "the bearer is asked");
    assert_eq!(request.client_id.as_deref(), Some(stream));
    assert_eq!(
        request.credential,
        limen_core::hale::runtime::Credential::Bearer(Some("t-alice".into()))
    );
}

/// A front with reflection call 1 open: its first ListServices asked
/// about and answered, the answer's frames still to drain.
fn open_reflection_call() -> GrpcFront {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(1, REFLECTION, "application/grpc", false));
    bytes.extend(frame(DATA, 0, 1, &list_services()));
    f.handle_data(0, &bytes);
    drain(&mut f);
    describe_asked(&mut f, "1");
    f.deliver(0, delivery("1", Outcome::Description(b"{}".to_vec())));
    f
}

/// The describe's refusal when the bearer source no longer names the
/// caller.
fn unauthenticated() -> Outcome {
    Outcome::from(limen_core::hale::runtime::Refusal::new(
        limen_core::hale::runtime::RefusalKind::Unauthenticated,
        "no principal",
    ))
}

#[test]
fn reflection_answers_each_message_as_the_caller_is_named_and_ends_at_the_half_close() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(1, REFLECTION, "application/grpc", false));
    // Two messages in one DATA frame: the first is asked about, the second
    // waits its turn.
    bytes.extend(frame(
        DATA,
        0,
        1,
        &[list_services(), by_symbol("Place.qty")].concat(),
    ));
    f.handle_data(0, &bytes);
    drain(&mut f);
    describe_asked(&mut f, "1");
    let doc = || Outcome::Description(b"{}".to_vec());
    f.deliver(0, delivery("1", doc()));
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    // The response opens: HEADERS without END_STREAM, one DATA frame.
    assert_eq!(kinds, [(HEADERS, END_HEADERS, 1), (DATA, 0, 1)]);
    let list = field(&message_of(&out[1].3), 6);
    let names: Vec<Vec<u8>> = fields(&list, 1).iter().map(|s| field(s, 1)).collect();
    assert_eq!(
        names,
        [
            &b"Desk"[..],
            b"hale.api.Description",
            b"grpc.reflection.v1.ServerReflection",
            b"grpc.reflection.v1alpha.ServerReflection"
        ]
    );
    // The second message is asked about only now, and answered in turn.
    describe_asked(&mut f, "1");
    f.deliver(0, delivery("1", doc()));
    let out = drain(&mut f);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!((out[0].0, out[0].1), (DATA, 0));
    let file = field(&field(&message_of(&out[0].3), 4), 1);
    assert_eq!(field(&file, 1), b"Desk.proto");
    assert_eq!(f.streams_held(), 1, "the call stays open");
    // The client ends its side: the trailers end the open response.
    f.handle_data(0, &frame(DATA, END_STREAM, 1, &[]));
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert_eq!(kinds, [(HEADERS, END_HEADERS | END_STREAM, 1)]);
    assert_eq!(f.streams_held(), 0);
}

#[test]
fn a_caller_no_longer_named_ends_the_open_reflection_call_in_its_trailers() {
    let mut f = open_reflection_call();
    assert_eq!(drain(&mut f).len(), 2);
    // The next message: the source no longer names the caller.
    f.handle_data(0, &frame(DATA, 0, 1, &list_services()));
    describe_asked(&mut f, "1");
    let refusal = unauthenticated();
    f.deliver(0, delivery("1", refusal));
    let out = drain(&mut f);
    let mut kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    // The client had not ended its side: once the trailers are out, the
    // stream is reset NO_ERROR (RFC 9113 § 8.1), so it sends no more.
    assert_eq!(kinds.pop(), Some((RST_STREAM, 0, 1)), "{kinds:?}");
    assert_eq!(out.last().unwrap().3, [0, 0, 0, 0]);
    // No answer to it: the status ends the response already open, as its
    // trailers (an empty DATA frame may close the body before them).
    assert_eq!(
        kinds.last(),
        Some(&(HEADERS, END_HEADERS | END_STREAM, 1)),
        "{kinds:?}"
    );
    assert!(out.iter().all(|(t, _, _, p)| *t != DATA || p.is_empty()));
    assert_eq!(f.streams_held(), 0);
    // Not yet answered: a refusal is trailers-only, one HEADERS frame.
    let mut bytes = call_headers(3, REFLECTION, "application/grpc", false);
    bytes.extend(frame(DATA, 0, 3, &list_services()));
    f.handle_data(0, &bytes);
    describe_asked(&mut f, "3");
    let refusal = unauthenticated();
    f.deliver(0, delivery("3", refusal));
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    // And the reset after it: the client had not ended its side.
    assert_eq!(
        kinds,
        [(HEADERS, END_HEADERS | END_STREAM, 3), (RST_STREAM, 0, 3)]
    );
}

#[test]
fn stop_ends_an_open_reflection_call_before_its_goaway() {
    let mut f = open_reflection_call();
    drain(&mut f);
    f.stop(0);
    let out = drain(&mut f);
    let kinds: Vec<(u8, u8, u32)> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert_eq!(
        kinds.last(),
        Some(&(GOAWAY, 0, 0)),
        "the GOAWAY comes last: {kinds:?}"
    );
    assert!(
        kinds.contains(&(HEADERS, END_HEADERS | END_STREAM, 1)),
        "{kinds:?}"
    );
}

/// The descriptor reflection answers for the surface, read by
/// descriptor.proto's numbers: what protoc writes for `Desk.proto`.
#[test]
fn the_surface_descriptor_is_the_file_protoc_makes_of_the_proto() {
    let p = parse_program("t.hl", SRC).unwrap();
    let file = limen_core::hale::docs::proto::proto_file(&p, "Desk").unwrap();
    let d = framing()
        .reflection()
        .file_by_symbol("Desk")
        .unwrap()
        .to_vec();
    assert_eq!(d, file.descriptor(), "the same model as the text");
    assert_eq!(field(&d, 1), b"Desk.proto");
    assert_eq!(fields(&d, 2), Vec::<Vec<u8>>::new(), "no package");
    assert_eq!(field(&d, 12), b"proto3");
    let messages = fields(&d, 4);
    let names: Vec<Vec<u8>> = messages.iter().map(|m| field(m, 1)).collect();
    assert_eq!(names, [&b"Place"[..], b"Receipt", b"HaleRefusal"]);
    // `optional int64 qty = 1;`: LABEL_OPTIONAL, TYPE_INT64, the synthetic
    // oneof `_qty`, json_name, proto3_optional.
    let qty = field(&messages[0], 2);
    assert_eq!(field(&qty, 1), b"qty");
    assert_eq!(varint(&qty, 3), Some(1));
    assert_eq!(varint(&qty, 4), Some(1));
    assert_eq!(varint(&qty, 5), Some(3));
    assert_eq!(varint(&qty, 9), Some(0));
    assert_eq!(field(&qty, 10), b"qty");
    assert_eq!(varint(&qty, 17), Some(1));
    assert_eq!(field(&field(&messages[0], 8), 1), b"_qty");
    // `repeated string requires = 3;` of HaleRefusal: no oneof.
    let requires = &fields(&messages[2], 2)[2];
    assert_eq!(varint(requires, 4), Some(3));
    assert_eq!(varint(requires, 9), None);
    // The service: `rpc Book__place(Place) returns (Receipt);`, unary.
    let service = field(&d, 6);
    assert_eq!(field(&service, 1), b"Desk");
    let method = field(&service, 2);
    assert_eq!(field(&method, 1), b"Book__place");
    assert_eq!(field(&method, 2), b".Place");
    assert_eq!(field(&method, 3), b".Receipt");
    assert_eq!(varint(&method, 5), None, "not a client stream");
    // Reflection's own file is packaged: its types are fully qualified.
    let r = framing()
        .reflection()
        .file_by_name("grpc/reflection/v1/reflection.proto")
        .unwrap()
        .to_vec();
    assert_eq!(field(&r, 2), b"grpc.reflection.v1");
    let rpc = field(&field(&r, 6), 2);
    assert_eq!(
        field(&rpc, 2),
        b".grpc.reflection.v1.ServerReflectionRequest"
    );
    assert_eq!((varint(&rpc, 5), varint(&rpc, 6)), (Some(1), Some(1)));
}

#[test]
fn a_reflection_client_that_sends_without_reading_is_ended_resource_exhausted() {
    let mut f = front(GrpcLimits::default());
    let mut bytes = open();
    bytes.extend(call_headers(1, REFLECTION, "application/grpc", false));
    f.handle_data(0, &bytes);
    // 600 KB messages (field 1, host, padded): the first is asked about;
    // a second waiting beside it passes 1 MiB unanswered.
    let big = |n: usize| {
        let mut m = vec![0x0a];
        let mut len = Vec::new();
        protobuf::write_varint(&mut len, n as u64);
        m.extend(len);
        m.extend(std::iter::repeat_n(b'h', n));
        frame_message(&m)
    };
    let message = big(600_000);
    for chunk in message.chunks(16_384) {
        f.handle_data(0, &frame(DATA, 0, 1, chunk));
    }
    describe_asked(&mut f, "1");
    drain(&mut f);
    for chunk in message.chunks(16_384) {
        f.handle_data(0, &frame(DATA, 0, 1, chunk));
    }
    // Nothing was answered: trailers-only, the stream gone from the table.
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert!(
        kinds.contains(&(HEADERS, END_HEADERS | END_STREAM, 1)),
        "{kinds:?}"
    );
    assert_eq!(f.streams_held(), 0);
    assert!(events(&mut f).is_empty(), "no second question");
}

// Issue 26: what one peer can do to the connection, bounded.

const SECOND: u64 = 1_000_000_000;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;

/// The HPACK bomb: a call's head, one field of 4000 bytes put in the
/// dynamic table, then `refs` one-byte references to it (each decodes to
/// 4033 bytes of header list).
fn bomb(stream: u32, refs: usize) -> Vec<u8> {
    let mut block = hpack(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/Desk/Book__place"),
        (":authority", "x"),
        ("content-type", "application/grpc"),
    ]);
    block.extend_from_slice(&[
        0x40,
        1,
        b'x',
        0x7f,
        (4000 - 127) as u8 | 0x80,
        ((4000 - 127) >> 7) as u8,
    ]);
    block.extend(std::iter::repeat_n(b'a', 4000));
    block.extend(std::iter::repeat_n(0xbe, refs));
    // HEADERS then CONTINUATION, 16 KB each, without END_HEADERS: the
    // caller adds the last.
    let mut out = Vec::new();
    for (i, piece) in block.chunks(16_000).enumerate() {
        let kind = if i == 0 { HEADERS } else { CONTINUATION };
        out.extend(frame(kind, 0, stream, piece));
    }
    out
}

/// A call's head and the first `n` bytes of a message that says it is
/// `len` bytes long.
fn partial_call(stream: u32, len: u32, n: usize) -> Vec<u8> {
    let mut out = call_headers(stream, "/Desk/Book__place", "application/grpc+json", false);
    let mut body = vec![0];
    body.extend_from_slice(&len.to_be_bytes());
    body.resize(n, b' ');
    for piece in body.chunks(16_000) {
        out.extend(frame(DATA, 0, stream, piece));
    }
    out
}

fn good_call(stream: u32) -> Vec<u8> {
    let mut out = call_headers(stream, "/Desk/Book__place", "application/grpc+json", false);
    out.extend(frame(
        DATA,
        END_STREAM,
        stream,
        &frame_message(b"{\"qty\":1}"),
    ));
    out
}

fn framed_streams(got: &[FrontEvent]) -> Vec<String> {
    got.iter()
        .filter_map(|e| match e {
            FrontEvent::Request { request, .. } => request.client_id.clone(),
            _ => None,
        })
        .collect()
}

#[test]
fn an_hpack_bomb_is_answered_resource_exhausted_and_a_good_call_beside_it_goes_on() {
    let mut f = front(GrpcLimits::default());
    f.handle_data(0, &open());
    drain(&mut f);
    // 16,000 one-byte references: 20 KB on the wire, 64 MB decoded.
    let mut bytes = bomb(1, 16_000);
    bytes.extend(frame(CONTINUATION, END_HEADERS, 1, &[]));
    f.handle_data(0, &bytes);
    assert_eq!(f.header_bytes_held(), 0);
    assert!(events(&mut f).is_empty());
    let kinds: Vec<_> = drain(&mut f)
        .into_iter()
        .filter(|(_, _, s, _)| *s == 1)
        .map(|(t, fl, s, p)| (t, fl, s, if t == RST_STREAM { p } else { vec![] }))
        .collect();
    // Trailers-only (RESOURCE_EXHAUSTED), then a reset NO_ERROR: the
    // request had not ended.
    assert_eq!(
        kinds,
        [
            (HEADERS, END_HEADERS | END_STREAM, 1, vec![]),
            (RST_STREAM, 0, 1, vec![0, 0, 0, 0])
        ]
    );
    assert_eq!(f.streams_held(), 0);
    f.handle_data(0, &good_call(3));
    assert_eq!(framed_streams(&events(&mut f)), ["3"]);
}

#[test]
fn an_hpack_bomb_without_end_headers_holds_no_more_than_the_header_list_limit() {
    let mut f = front(GrpcLimits::default());
    let limit = GrpcLimits::default().h2().max_header_list_size as usize;
    let mut bytes = open();
    // Seven frames of references, never ended: nghttp2 takes up to 8
    // CONTINUATION frames before it ends the connection.
    bytes.extend(bomb(1, 100_000));
    let mut held = 0;
    for piece in bytes.chunks(4096) {
        f.handle_data(0, piece);
        held = held.max(f.header_bytes_held());
    }
    assert!(held <= limit, "{held} bytes held, over {limit}");
    assert!(held > 0, "the block was read");
    assert!(framed_streams(&events(&mut f)).is_empty());
}

#[test]
fn partial_messages_across_many_streams_stop_at_the_connections_budget() {
    let limits = GrpcLimits {
        max_buffered: 64 * 1024,
        ..GrpcLimits::default()
    };
    let mut f = front(limits);
    f.handle_data(0, &open());
    drain(&mut f);
    // Twenty streams, each 10,000 bytes into a message of 1 MiB: six fit
    // the budget, the rest are refused as their DATA comes.
    for i in 0..20u32 {
        f.handle_data(0, &partial_call(2 * i + 1, 1 << 20, 10_000));
        assert!(f.buffered() <= limits.max_buffered, "{}", f.buffered());
        drain(&mut f);
    }
    assert_eq!(f.buffered(), 60_000);
    assert_eq!(f.streams_held(), 6);
    // A whole small call still goes through beside them.
    f.handle_data(0, &good_call(41));
    assert_eq!(framed_streams(&events(&mut f)), ["41"]);
    // Refused streams: answered and reset, their later DATA not held.
    f.handle_data(0, &frame(DATA, 0, 39, &[b' '; 1000]));
    assert_eq!(f.buffered(), 60_000);
}

#[test]
fn the_default_budget_holds_500_partial_streams_to_a_few_mib() {
    let limits = GrpcLimits::default();
    let mut f = front(limits);
    f.handle_data(0, &open());
    drain(&mut f);
    for i in 0..500u32 {
        f.handle_data(0, &partial_call(2 * i + 1, 1 << 20, 32_000));
        drain(&mut f);
    }
    assert!(f.buffered() <= limits.max_buffered, "{}", f.buffered());
    assert!(f.streams_held() <= limits.max_buffered / 32_000 + 1);
}

#[test]
fn a_stream_that_stops_inside_its_message_is_answered_after_stream_idle() {
    let limits = GrpcLimits::default();
    let mut f = front(limits);
    f.handle_data(0, &open());
    f.handle_data(SECOND, &partial_call(1, 100, 50));
    drain(&mut f);
    assert_eq!(f.buffered(), 50);
    // Its later DATA moves the deadline on.
    f.handle_data(2 * SECOND, &frame(DATA, 0, 1, &[b' '; 10]));
    let first = f.poll_timeout().expect("a deadline");
    assert!(first <= 2 * SECOND + limits.stream_idle, "{first}");
    f.handle_timeout(first - 1);
    let mut at = first;
    // A deadline found stale (DATA came since) is re-armed, not acted on.
    while f.streams_held() == 1 {
        f.handle_timeout(at);
        assert!(at <= 2 * SECOND + limits.stream_idle, "not ended by {at}");
        at = f.poll_timeout().unwrap();
    }
    let out = drain(&mut f);
    let kinds: Vec<_> = out.iter().map(|(t, fl, s, _)| (*t, *fl, *s)).collect();
    assert_eq!(
        kinds,
        [(HEADERS, END_HEADERS | END_STREAM, 1), (RST_STREAM, 0, 1)]
    );
    assert_eq!(f.buffered(), 0);
    assert!(!f.is_closed());
}

#[test]
fn a_connection_with_no_stream_is_sent_goaway_after_idle() {
    let limits = GrpcLimits::default();
    let mut f = front(limits);
    f.handle_data(0, &open());
    f.handle_data(SECOND, &good_call(1));
    events(&mut f);
    // A call with the exposure keeps the connection.
    assert_ne!(f.poll_timeout(), Some(SECOND + limits.idle));
    f.deliver(3 * SECOND, delivery("1", Outcome::Result(b"{}".to_vec())));
    drain(&mut f);
    assert_eq!(f.poll_timeout(), Some(3 * SECOND + limits.idle));
    f.handle_timeout(3 * SECOND + limits.idle - 1);
    assert!(!f.is_closed());
    f.handle_timeout(3 * SECOND + limits.idle);
    let out = drain(&mut f);
    let goaway = out.iter().find(|(t, ..)| *t == GOAWAY).expect("GOAWAY");
    assert_eq!(&goaway.3[4..8], &0u32.to_be_bytes(), "NO_ERROR");
    assert!(f.is_closed());
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
}

#[test]
fn a_connection_that_never_finishes_its_preface_is_closed() {
    let limits = GrpcLimits::default();
    let mut f = GrpcFront::new(SECOND, limits, framing(), 9).unwrap();
    // Only the magic, never SETTINGS.
    f.handle_data(SECOND, PREFACE);
    assert_eq!(f.poll_timeout(), Some(SECOND + limits.preface));
    f.handle_timeout(SECOND + limits.preface - 1);
    assert!(!f.is_closed());
    f.handle_timeout(SECOND + limits.preface);
    assert!(f.is_closed());
    // Once SETTINGS came, the preface's deadline is gone.
    let mut f = GrpcFront::new(SECOND, limits, framing(), 9).unwrap();
    f.handle_data(SECOND, &open());
    assert_eq!(f.poll_timeout(), Some(SECOND + limits.write_stall));
}

#[test]
fn the_servers_settings_are_pending_before_any_input() {
    let f = front(GrpcLimits::default());
    let out = frames(f.pending_output());
    assert_eq!(
        out.first().map(|(t, fl, s, _)| (*t, *fl, *s)),
        Some((SETTINGS, 0, 0))
    );
}

#[test]
fn data_after_an_answer_to_an_unfinished_request_is_stopped_by_a_reset() {
    let mut f = front(GrpcLimits::default());
    f.handle_data(0, &open());
    drain(&mut f);
    // message_too_large from its prefix: the exposure answers at once.
    let mut bytes = call_headers(1, "/Desk/Book__place", "application/grpc", false);
    bytes.extend(frame(DATA, 0, 1, &[0, 0xff, 0xff, 0xff, 0xff]));
    f.handle_data(0, &bytes);
    assert_eq!(framed_streams(&events(&mut f)), ["1"]);
    let refusal = Outcome::from(limen_core::hale::runtime::Refusal::new(
        limen_core::hale::runtime::RefusalKind::Malformed,
        "message_too_large",
    ));
    f.deliver(0, delivery("1", refusal));
    let kinds: Vec<_> = drain(&mut f)
        .into_iter()
        .map(|(t, fl, s, p)| (t, fl, s, if t == RST_STREAM { p } else { vec![] }))
        .collect();
    assert_eq!(
        kinds,
        [
            (HEADERS, END_HEADERS | END_STREAM, 1, vec![]),
            (RST_STREAM, 0, 1, vec![0, 0, 0, 0])
        ]
    );
    // What the client still sends is a closed stream's: the window for
    // it is not opened again (no WINDOW_UPDATE on stream 1).
    for _ in 0..8 {
        f.handle_data(0, &frame(DATA, 0, 1, &[0; 16_000]));
    }
    let out = drain(&mut f);
    assert!(
        !out.iter()
            .any(|(t, _, s, _)| *t == WINDOW_UPDATE && *s == 1),
        "{out:?}"
    );
    // A request that ended is not reset after its answer.
    f.handle_data(0, &good_call(3));
    events(&mut f);
    f.deliver(0, delivery("3", Outcome::Result(b"{}".to_vec())));
    assert!(!drain(&mut f).iter().any(|(t, ..)| *t == RST_STREAM));
}

#[test]
fn a_window_update_flood_is_goaway_enhance_your_calm() {
    let mut f = front(GrpcLimits::default());
    f.handle_data(0, &open());
    drain(&mut f);
    let one = frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
    let mut sent = 0;
    while !f.is_closed() && sent < 100_000 {
        f.handle_data(SECOND, &one.repeat(100));
        sent += 100;
        let out = drain(&mut f);
        if let Some(goaway) = out.iter().find(|(t, ..)| *t == GOAWAY) {
            assert_eq!(&goaway.3[4..8], &0xbu32.to_be_bytes(), "ENHANCE_YOUR_CALM");
            break;
        }
    }
    assert!(sent <= 2000, "{sent} frames taken");
    assert!(f.is_closed());
}
