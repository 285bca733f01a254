//! The gRPC framing and outcome column over a small served program: each
//! head refused as § gRPC says, a call in either codec through a real
//! [`Exposure`] (the program's rows, its shape codec with protobuf), and
//! each outcome's status, message and detail.

use base64::Engine as _;
use serde_json::{json, Value};

use super::*;
use crate::hale::model::parse_program;
use crate::hale::runtime::{
    Completion, Delivery, Describer, Event, Exposure, Principal, RoleTable, TokenTable,
};
use crate::hale::serving::{exposure_spec, ShapeCodec};

const SRC: &str = "role trader;\n\
    type Place { qty: Int; note: String = \"\"; } type Receipt { order: Int; } type Err { code: String; }\n\
    api Desk { rpc Book::place; rpc Book::cancel requires: [trader]; rpc Book::count; }\n\
    locus Book { fn place(p: Place) -> Receipt fallible(ClosureViolation) { } fn cancel(p: Place) -> Receipt fallible(Err) { }\n\
                 fn count() -> Int { } }\n\
    locus G { fn holds(p: std::api::Principal, r: String) -> Bool { return true; } }\n\
    locus T { fn principal(t: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
    main locus M {\n\
      params { b: Book = Book { }; g: G = G { }; t: T = T { }; }\n\
      run() { let s = api::serve(Desk, grpc::Rpc { bind: \"127.0.0.1:0\", codec: json, principals: self.t, roles: self.g }, as: \"desk\", bound: 4, on_full: refuse); }\n\
    }\n";

struct NoDocs;

impl Describer for NoDocs {
    fn describe(&self, _: &Principal, _: &[String], _: &[usize]) -> Vec<u8> {
        br#"{"doc":true}"#.to_vec()
    }
}

struct Served {
    exposure: Exposure,
    framing: Framing,
}

fn served() -> Served {
    let p = parse_program("t.hl", SRC).unwrap_or_else(|d| panic!("{d}"));
    let e = p.exposure("desk").unwrap();
    let spec = exposure_spec(&p, e, "grpc").unwrap();
    let framing = Framing::new(&p, e).unwrap();
    let tokens = TokenTable::new(Some("no such token"))
        .with("t-alice", "alice")
        .with("t-bob", "bob");
    let roles = RoleTable::new().grant("alice", "trader");
    let mut exposure = Exposure::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(roles),
        Box::new(ShapeCodec::new(&p, e).unwrap().with_protobuf()),
        Box::new(NoDocs),
    );
    exposure.receiver_born(0, 1);
    Served { exposure, framing }
}

fn head_fields(path: &str, content_type: &str, token: Option<&str>) -> Vec<Field> {
    let mut f: Vec<Field> = vec![
        (b":method".to_vec(), b"POST".to_vec()),
        (b":scheme".to_vec(), b"http".to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
        (b"content-type".to_vec(), content_type.as_bytes().to_vec()),
        (b"te".to_vec(), b"trailers".to_vec()),
    ];
    if let Some(t) = token {
        f.push((
            b"authorization".to_vec(),
            format!("Bearer {t}").into_bytes(),
        ));
    }
    f
}

/// What an answer says: the grpc-status, the grpc-message as sent, the
/// detail's status code, message, type URL and value, and the message.
#[derive(Debug)]
struct Said {
    status: u32,
    message: String,
    detail: Option<(u64, String, String, Vec<u8>)>,
    body: Option<Vec<u8>>,
}

fn said(answer: &Answer) -> Said {
    match answer {
        Answer::Message {
            headers,
            body,
            trailers,
        } => {
            assert_eq!(headers[0], (b":status".to_vec(), b"200".to_vec()));
            assert_eq!(&body[..1], &[0]);
            let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
            assert_eq!(body.len(), 5 + len);
            Said {
                status: answer.status().unwrap(),
                message: String::new(),
                detail: None,
                body: Some(body[5..].to_vec()),
            }
            .with(trailers)
        }
        Answer::TrailersOnly { headers } => Said {
            status: answer.status().unwrap(),
            message: String::new(),
            detail: None,
            body: None,
        }
        .with(headers),
    }
}

impl Said {
    fn with(mut self, fields: &[Field]) -> Said {
        for (n, v) in fields {
            let v = String::from_utf8(v.clone()).unwrap();
            match n.as_slice() {
                b"grpc-message" => self.message = v,
                b"grpc-status-details-bin" => {
                    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                        .decode(v)
                        .unwrap();
                    self.detail = Some(read_status(&bytes));
                }
                _ => {}
            }
        }
        self
    }
}

/// The fields of a protobuf message: (number, varint or bytes).
fn fields_of(mut bytes: &[u8]) -> Vec<(u64, Result<u64, Vec<u8>>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let x = b[0];
            *b = &b[1..];
            v |= u64::from(x & 0x7f) << shift;
            if x < 0x80 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let tag = varint(&mut bytes);
        match tag & 7 {
            0 => out.push((tag >> 3, Ok(varint(&mut bytes)))),
            2 => {
                let n = varint(&mut bytes) as usize;
                out.push((tag >> 3, Err(bytes[..n].to_vec())));
                bytes = &bytes[n..];
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

fn read_status(bytes: &[u8]) -> (u64, String, String, Vec<u8>) {
    let (mut code, mut message, mut url, mut value) = (0, String::new(), String::new(), vec![]);
    for (n, v) in fields_of(bytes) {
        match (n, v) {
            (1, Ok(c)) => code = c,
            (2, Err(m)) => message = String::from_utf8(m).unwrap(),
            (3, Err(any)) => {
                for (n, v) in fields_of(&any) {
                    match (n, v) {
                        (1, Err(u)) => url = String::from_utf8(u).unwrap(),
                        (2, Err(b)) => value = b,
                        other => panic!("{other:?}"),
                    }
                }
            }
            other => panic!("{other:?}"),
        }
    }
    (code, message, url, value)
}

impl Served {
    /// A call through framing and the exposure; a dispatched call sees
    /// the decoded payload and completes with `complete`'s answer.
    fn call(
        &mut self,
        fields: &[Field],
        message: Result<Vec<u8>, String>,
        complete: impl FnOnce(&Value) -> Completion,
    ) -> Answer {
        let head = self.framing.head(fields);
        let (request, reply) = match self.framing.frame(&head, message, 7, "3".into()) {
            Framed::Request { request, reply } => (request, reply),
            Framed::Answer(a) => return a,
        };
        self.exposure.handle_request(0, 0, request);
        let mut complete = Some(complete);
        loop {
            match self.exposure.poll_event() {
                Some(Event::Deliver(Delivery {
                    outcome,
                    correlation,
                    client_id,
                    ..
                })) => {
                    // The stream comes back with the delivery.
                    assert_eq!((correlation, client_id.as_deref()), (7, Some("3")));
                    return self.framing.answer(&reply, outcome);
                }
                Some(Event::Dispatch(d)) => {
                    let c = complete.take().expect("one dispatch")(&d.payload);
                    self.exposure.handle_completion(d.request_id, c);
                }
                Some(_) => {}
                None => panic!("no delivery"),
            }
        }
    }
}

fn place_pb(qty: u8) -> Vec<u8> {
    vec![0x08, qty]
}

#[test]
fn a_head_is_malformed_by_its_method_path_or_content_type() {
    let s = served();
    let f = |path: &str, ct: &str| s.framing.head(&head_fields(path, ct, None));
    assert_eq!(
        f("/Desk/Book__place", "application/grpc").route,
        Ok(Route::Call("Book::place".into()))
    );
    assert_eq!(
        f("/Desk/Book.place", "application/grpc+json").codec,
        GrpcCodec::Json
    );
    assert_eq!(
        f("/Other/Book__place", "application/grpc").route,
        Err("unknown_service: Other".into())
    );
    let bad = f("/Desk/Book__place", "application/grpc+xml");
    assert_eq!(
        (bad.codec, bad.content_type),
        (GrpcCodec::Proto, "application/grpc")
    );
    assert_eq!(
        f("/Desk/Book__place", "Application/GRPC+Proto; charset=x").content_type,
        "application/grpc+proto"
    );
    assert_eq!(
        bad.route,
        Err("unsupported_content_type: application/grpc+xml".into())
    );
    let mut get = head_fields("/Desk/Book__place", "application/grpc", Some("t-alice"));
    get[0].1 = b"GET".to_vec();
    let head = s.framing.head(&get);
    assert!(head
        .route
        .unwrap_err()
        .starts_with("method_not_allowed: GET"));
    // The credential is read from a malformed head all the same.
    assert_eq!(head.bearer.as_deref(), Some("t-alice"));
    let mut none: Vec<Field> = head_fields("/Desk/Book__place", "x", None);
    none.retain(|(n, _)| n != b"content-type");
    none.push((DIGEST_HEADER.as_bytes().to_vec(), b"fnv1a64:0".to_vec()));
    let head = s.framing.head(&none);
    assert!(head
        .route
        .unwrap_err()
        .starts_with("unsupported_content_type"));
    assert_eq!(head.digest.as_deref(), Some("fnv1a64:0"));
}

#[test]
fn a_result_is_one_message_in_the_codec_asked() {
    let mut s = served();
    let proto = head_fields("/Desk/Book__place", "application/grpc+proto", Some("t-bob"));
    let a = s.call(&proto, Ok(place_pb(3)), |payload| {
        // The protobuf message decodes to the JSON codec's value, its
        // default filled in.
        assert_eq!(payload, &json!({"qty": 3, "note": ""}));
        Completion::Returned(br#"{"order": 41}"#.to_vec())
    });
    let got = said(&a);
    assert_eq!(got.status, 0);
    assert_eq!(got.body.unwrap(), vec![0x08, 41]);
    match &a {
        // Answered under the content type asked.
        Answer::Message { headers, .. } => assert_eq!(
            headers[1],
            (b"content-type".to_vec(), b"application/grpc+proto".to_vec())
        ),
        other => panic!("{other:?}"),
    }
    let json_head = head_fields(
        "/Desk/Book%3A%3Aplace",
        "application/grpc+json",
        Some("t-bob"),
    );
    let a = s.call(&json_head, Ok(br#"{"qty": 2}"#.to_vec()), |_| {
        Completion::Returned(br#"{"order": 42}"#.to_vec())
    });
    assert_eq!(said(&a).body.unwrap(), br#"{"order": 42}"#);
    // A row with no request takes an empty message.
    let count = head_fields("/Desk/Book__count", "application/grpc", Some("t-bob"));
    let a = s.call(&count, Ok(Vec::new()), |_| {
        Completion::Returned(b"5".to_vec())
    });
    assert_eq!(said(&a).body.unwrap(), vec![0x08, 5]);
}

#[test]
fn a_handler_error_carries_e_in_its_detail() {
    let mut s = served();
    let e = br#"{"code": "gone"}"#;
    let head = head_fields("/Desk/Book__cancel", "application/grpc", Some("t-alice"));
    let got = said(&s.call(&head, Ok(place_pb(1)), |_| Completion::Failed(e.to_vec())));
    assert_eq!((got.status, got.message.as_str()), (9, "handler_error"));
    let (code, message, url, value) = got.detail.unwrap();
    assert_eq!((code, message.as_str()), (9, "handler_error"));
    assert_eq!(url, "type.hale.dev/Err");
    assert_eq!(value, b"\x0a\x04gone");
    let head = head_fields(
        "/Desk/Book__cancel",
        "application/grpc+json",
        Some("t-alice"),
    );
    let got = said(&s.call(&head, Ok(br#"{"qty": 1}"#.to_vec()), |_| {
        Completion::Failed(e.to_vec())
    }));
    let (_, _, url, value) = got.detail.unwrap();
    assert_eq!(url, JSON_HANDLER_ERROR);
    assert_eq!(value, e);
}

#[test]
fn a_refusal_takes_its_status_reason_and_refusal_detail() {
    let mut s = served();
    let never = |_: &Value| -> Completion { panic!("refused calls do not run") };
    // unauthenticated, under protobuf: HaleRefusal.
    let head = head_fields("/Desk/Book__cancel", "application/grpc", Some("t-nobody"));
    let got = said(&s.call(&head, Ok(place_pb(1)), never));
    assert_eq!((got.status, got.message.as_str()), (16, "no such token"));
    let (code, message, url, value) = got.detail.unwrap();
    assert_eq!(
        (code, message.as_str(), url.as_str()),
        (16, "no such token", "type.hale.dev/HaleRefusal")
    );
    assert_eq!(
        fields_of(&value),
        vec![
            (1, Err(b"unauthenticated".to_vec())),
            (2, Err(b"no such token".to_vec()))
        ]
    );
    // No bearer names nobody.
    let head = head_fields("/Desk/Book__cancel", "application/grpc+json", None);
    assert_eq!(
        said(&s.call(&head, Ok(br#"{"qty":1}"#.to_vec()), never)).status,
        16
    );
    // unauthorized, under JSON: the refusal object with requires.
    let head = head_fields("/Desk/Book__cancel", "application/grpc+json", Some("t-bob"));
    let got = said(&s.call(&head, Ok(br#"{"qty":1}"#.to_vec()), never));
    assert_eq!(got.status, 7);
    let (code, message, url, value) = got.detail.unwrap();
    assert_eq!((code, url.as_str()), (7, JSON_REFUSAL));
    assert_eq!(message, got.message);
    let v: Value = serde_json::from_slice(&value).unwrap();
    assert_eq!(
        v,
        json!({"kind": "unauthorized", "reason": message, "requires": ["trader"]})
    );
    // malformed: a payload the protobuf codec refuses, in its words.
    let head = head_fields("/Desk/Book__place", "application/grpc", Some("t-bob"));
    let got = said(&s.call(&head, Ok(Vec::new()), never));
    assert_eq!(
        (got.status, got.message.as_str()),
        (3, "missing_field: qty")
    );
    let got = said(&s.call(&head, Ok(vec![0x08]), never));
    assert_eq!(got.message, "wrong_type: payload");
    // An unknown member, in any spelling.
    let head = head_fields("/Desk/Book__nope", "application/grpc", Some("t-bob"));
    let got = said(&s.call(&head, Ok(Vec::new()), never));
    assert_eq!(got.status, 3);
    assert!(got.message.starts_with("unknown_member"), "{}", got.message);
    // A body that is not one message.
    let head = head_fields("/Desk/Book__place", "application/grpc+json", Some("t-bob"));
    let got = said(&s.call(
        &head,
        Err("no_message: a call is one message".into()),
        never,
    ));
    assert_eq!(
        (got.status, got.message.as_str()),
        (3, "no_message: a call is one message")
    );
    let (_, _, url, value) = got.detail.unwrap();
    assert_eq!(url, JSON_REFUSAL);
    let v: Value = serde_json::from_slice(&value).unwrap();
    assert_eq!(
        v,
        json!({"kind": "malformed", "reason": "no_message: a call is one message"})
    );
    // A +json message that is no JSON text.
    for (body, why) in [
        (&b""[..], "the message is empty"),
        (b"\xff", "the message is not UTF-8"),
    ] {
        let got = said(&s.call(&head, Ok(body.to_vec()), never));
        assert_eq!(got.message, format!("not_json_text: {why}"));
    }
    // A +json message that begins `pb:` is JSON text like any other (no
    // text form smuggles protobuf any more): the JSON codec refuses it.
    let got = said(&s.call(&head, Ok(b"pb:Place:CAM=".to_vec()), never));
    assert_eq!(
        (got.status, got.message.as_str()),
        (3, "wrong_type: payload")
    );
}

#[test]
fn the_server_error_is_internal_with_kind_server() {
    let mut s = served();
    for (ct, url, value) in [
        (
            "application/grpc",
            "type.hale.dev/HaleRefusal",
            b"\x0a\x06server".to_vec(),
        ),
        (
            "application/grpc+json",
            JSON_REFUSAL,
            br#"{"kind":"server"}"#.to_vec(),
        ),
    ] {
        let head = head_fields("/Desk/Book__place", ct, Some("t-bob"));
        let body = if ct.ends_with("json") {
            br#"{"qty":1}"#.to_vec()
        } else {
            place_pb(1)
        };
        let got = said(&s.call(&head, Ok(body), |_| Completion::Violated));
        assert_eq!((got.status, got.message.as_str()), (13, "server_error"));
        let detail = got.detail.unwrap();
        assert_eq!((detail.0, detail.2.as_str(), detail.3), (13, url, value));
    }
}

#[test]
fn describe_is_the_document_and_reflection_is_not_served_yet() {
    let mut s = served();
    let head = head_fields(
        "/hale.api.Description/Describe",
        "application/grpc",
        Some("t-alice"),
    );
    let got = said(&s.call(&head, Ok(Vec::new()), |_| panic!("no call")));
    let mut want = vec![0x0a, 12];
    want.extend_from_slice(br#"{"doc":true}"#);
    assert_eq!(got.body.unwrap(), want);
    let head = head_fields(
        "/hale.api.Description/Describe",
        "application/grpc+json",
        None,
    );
    assert_eq!(
        said(&s.call(&head, Ok(Vec::new()), |_| panic!())).status,
        16
    );
    let head = head_fields(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "application/grpc",
        None,
    );
    assert_eq!(
        said(&s.call(&head, Ok(Vec::new()), |_| panic!())).status,
        12
    );
}

#[test]
fn grpc_message_is_percent_encoded_and_the_detail_holds_the_text() {
    let a = trailers_only(
        "application/grpc+json",
        3,
        "bad é 100%",
        Some(("u".into(), vec![])),
    );
    let got = said(&a);
    assert_eq!(got.message, "bad %C3%A9 100%25");
    assert_eq!(got.detail.unwrap().1, "bad é 100%");
}

/// An imported surface (`lib::Public`) is the service `lib_Public`, its
/// member `lib::Orders::place` the method `lib__Orders__place`, and its
/// imported types messages with their `::` written `_`, as its `.proto`
/// and its reflection say.
#[test]
fn an_imported_surface_is_routed_by_its_proto_service_name() {
    let lib = "type Item { n: Int; }\n\
               locus Orders { fn place(i: Item) -> Item { return i; } }\n\
               api Public { rpc Orders::place; }\n";
    let app = "import \"lib.hl\" as lib;\n\
               main locus M {\n\
                 params { o: lib::Orders = lib::Orders { }; }\n\
                 run() { let s = api::serve(lib::Public, grpc::Rpc { bind: \"127.0.0.1:0\" }, as: \"pub\", bound: 4, on_full: refuse); s.stop(); }\n\
               }\n";
    let checked = crate::hale::check_program_with("app.hl", app, &mut |_| Ok(lib.to_string()));
    assert!(checked.passed(), "{:?}", checked.errors);
    let p = checked.program.unwrap();
    let framing = Framing::new(&p, p.exposure("pub").unwrap()).unwrap();
    assert_eq!(framing.service(), "lib_Public");
    let head = framing.head(&head_fields(
        "/lib_Public/lib__Orders__place",
        "application/grpc",
        None,
    ));
    assert_eq!(head.route, Ok(Route::Call("lib::Orders::place".into())));
    let proto = crate::hale::docs::proto(&p, "lib::Public").unwrap();
    assert!(proto.contains("service lib_Public {"), "{proto}");
    assert!(
        proto.contains("rpc lib__Orders__place(lib_Item) returns (lib_Item);"),
        "{proto}"
    );
}
