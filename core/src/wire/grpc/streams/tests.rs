//! The stream table driven by HTTP/2 events alone, its commands recorded:
//! a call framed and answered, the table's limit, the connection's
//! budget, each deadline, a reset stream, stop, and server reflection's
//! exchanges (asked, answered in order, refused, cut, over its limit).

use super::*;
use crate::hale::model::parse_program;
use crate::hale::runtime::{Principal, Refusal, RefusalKind};
use crate::wire::grpc::{Field, REFLECTION_V1};

const SRC: &str = "type Place { qty: Int; } type Receipt { order: Int; }\n\
    api Desk { rpc Book::place; }\n\
    locus Book { fn place(p: Place) -> Receipt { } }\n\
    locus T { fn principal(t: String) -> std::api::Principal { return std::api::Principal { mode: \"bearer\", name: \"\" }; } }\n\
    main locus M {\n\
      params { b: Book = Book { }; t: T = T { }; }\n\
      run() { let s = api::serve(Desk, grpc::Rpc { bind: \"127.0.0.1:0\", codec: json, principals: self.t }, as: \"desk\", bound: 4, on_full: refuse); }\n\
    }\n";

const NOW: Timestamp = 1_000 * SECOND;

fn table(limits: GrpcLimits) -> Streams {
    let p = parse_program("t.hl", SRC).unwrap_or_else(|d| panic!("{d}"));
    let framing = Framing::new(&p, p.exposure("desk").unwrap()).unwrap();
    Streams::new(NOW, limits, 65536, Arc::new(framing), 9)
}

fn head(path: &str, content_type: &str) -> Vec<Field> {
    vec![
        (b":method".to_vec(), b"POST".to_vec()),
        (b":scheme".to_vec(), b"http".to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
        (b"content-type".to_vec(), content_type.as_bytes().to_vec()),
        (b"authorization".to_vec(), b"Bearer t-1".to_vec()),
    ]
}

fn call_head() -> Vec<Field> {
    head("/Desk/Book__place", "application/grpc")
}

fn headers(stream: i32, fields: Vec<Field>, end_stream: bool) -> H2Event {
    H2Event::Headers {
        stream,
        fields,
        end_stream,
    }
}

fn data(stream: i32, bytes: &[u8]) -> H2Event {
    H2Event::Data {
        stream,
        bytes: bytes.to_vec(),
    }
}

/// Feeds `events` at `now`; the commands they gave.
fn feed(s: &mut Streams, now: Timestamp, events: Vec<H2Event>) -> Vec<Command> {
    let mut out = Vec::new();
    for e in events {
        s.handle(now, e, &mut out);
    }
    s.settle(now);
    out
}

fn requests(s: &mut Streams) -> Vec<Request> {
    let mut got = Vec::new();
    while let Some(e) = s.poll_event() {
        match e {
            FrontEvent::Request { request, .. } => got.push(request),
            other => panic!("not a request: {other:?}"),
        }
    }
    got
}

fn delivery(stream: i32, outcome: Outcome) -> Delivery {
    Delivery {
        member: None,
        accepted: 0,
        correlation: 9,
        request_id: 1,
        client_id: Some(stream.to_string()),
        caller: Principal::new("bearer", "alice", Vec::new()),
        outcome,
    }
}

/// The grpc-status of a command that answers, with its stream.
fn status_of(c: &Command) -> Option<(i32, u32)> {
    match c {
        Command::Respond { stream, answer } => Some((*stream, answer.status()?)),
        Command::Trailers { stream, trailers } => trailers
            .iter()
            .find(|(n, _)| n == b"grpc-status")
            .map(|(_, v)| (*stream, std::str::from_utf8(v).unwrap().parse().unwrap())),
        _ => None,
    }
}

#[test]
fn a_call_is_framed_once_whole_and_answered_on_its_stream() {
    let mut s = table(GrpcLimits::default());
    let message = frame_message(&[0x08, 3]);
    // The message in two pieces: nothing is framed before it is whole.
    let out = feed(
        &mut s,
        NOW,
        vec![headers(1, call_head(), false), data(1, &message[..3])],
    );
    assert!(out.is_empty());
    assert!(requests(&mut s).is_empty());
    assert_eq!(s.buffered(), 3);
    feed(
        &mut s,
        NOW,
        vec![data(1, &message[3..]), H2Event::EndStream { stream: 1 }],
    );
    let got = requests(&mut s);
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].kind,
        RequestKind::Call {
            member: "Book::place".into(),
            payload: crate::hale::runtime::Payload::Proto(vec![0x08, 3]),
        }
    );
    assert_eq!(
        (got[0].correlation, got[0].client_id.as_deref()),
        (9, Some("1"))
    );
    assert_eq!((s.streams_held(), s.buffered()), (1, 0));
    let mut out = Vec::new();
    assert!(s.deliver(
        delivery(1, Outcome::Result(br#"{"order":7}"#.to_vec())),
        &mut out
    ));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(status_of(&out[0]), Some((1, 0)));
    assert_eq!(s.streams_held(), 0);
    // A second delivery to the stream finds nothing.
    assert!(!s.deliver(delivery(1, Outcome::ServerError), &mut out));
}

#[test]
fn an_answer_before_the_request_ends_resets_the_stream_after_it() {
    let mut s = table(GrpcLimits::default());
    // A prefix over the message limit is framed at once, malformed (the
    // exposure refuses it, before authentication).
    let out = feed(
        &mut s,
        NOW,
        vec![headers(1, call_head(), false), data(1, &[0, 0, 0x10, 0, 1])],
    );
    assert!(out.is_empty());
    let got = requests(&mut s);
    assert!(
        matches!(&got[0].kind, RequestKind::Malformed { reason } if reason.starts_with("message_too_large")),
        "{got:?}"
    );
    let mut out = Vec::new();
    let refusal = Refusal::new(RefusalKind::Malformed, "message_too_large");
    assert!(s.deliver(delivery(1, Outcome::from(refusal)), &mut out));
    assert_eq!(status_of(&out[0]), Some((1, status::INVALID_ARGUMENT)));
    assert_eq!(out[1], Command::ResetAfterResponse { stream: 1 });
    assert_eq!(s.streams_held(), 0);
}

#[test]
fn one_stream_past_the_table_is_refused_stream() {
    let limits = GrpcLimits {
        max_streams: 2,
        ..GrpcLimits::default()
    };
    let mut s = table(limits);
    let out = feed(
        &mut s,
        NOW,
        vec![
            headers(1, call_head(), false),
            headers(3, call_head(), false),
            headers(5, call_head(), false),
        ],
    );
    assert_eq!(
        out,
        vec![Command::Reset {
            stream: 5,
            code: code::REFUSED_STREAM
        }]
    );
    assert_eq!(s.streams_held(), 2);
}

#[test]
fn data_past_the_connection_budget_ends_that_stream_alone() {
    let limits = GrpcLimits {
        max_buffered: 10,
        ..GrpcLimits::default()
    };
    let mut s = table(limits);
    // Two streams each begin a message of 100 bytes.
    let mut prefix = vec![0, 0, 0, 0, 100];
    prefix.extend_from_slice(&[0x08, 1]);
    let out = feed(
        &mut s,
        NOW,
        vec![
            headers(1, call_head(), false),
            headers(3, call_head(), false),
            data(1, &prefix),
        ],
    );
    assert!(out.is_empty());
    assert_eq!(s.buffered(), 7);
    let out = feed(&mut s, NOW, vec![data(3, &prefix)]);
    assert_eq!(status_of(&out[0]), Some((3, status::RESOURCE_EXHAUSTED)));
    assert_eq!(out[1], Command::ResetAfterResponse { stream: 3 });
    // The other stream goes on, its bytes still counted.
    assert_eq!((s.streams_held(), s.buffered()), (1, 7));
    // A reset stream's bytes leave the budget.
    feed(&mut s, NOW, vec![H2Event::Reset { stream: 1 }]);
    assert_eq!((s.streams_held(), s.buffered()), (0, 0));
}

#[test]
fn a_header_block_past_the_limit_is_resource_exhausted() {
    let mut s = table(GrpcLimits::default());
    let out = feed(
        &mut s,
        NOW,
        vec![H2Event::HeadersTooLarge {
            stream: 1,
            end_stream: true,
        }],
    );
    assert_eq!(out.len(), 1, "nothing more comes: no reset");
    assert_eq!(status_of(&out[0]), Some((1, status::RESOURCE_EXHAUSTED)));
    let out = feed(
        &mut s,
        NOW,
        vec![H2Event::HeadersTooLarge {
            stream: 3,
            end_stream: false,
        }],
    );
    assert_eq!(out[1], Command::ResetAfterResponse { stream: 3 });
}

#[test]
fn the_idle_connection_is_sent_goaway_and_closes() {
    let limits = GrpcLimits::default();
    let mut s = table(limits);
    assert_eq!(s.poll_timeout(), Some(NOW + limits.idle));
    let mut out = Vec::new();
    assert!(!s.handle_timeout(NOW + limits.idle - 1, &mut out));
    assert!(out.is_empty());
    // A stream open stops the deadline; its end starts it again.
    feed(&mut s, NOW + 1, vec![headers(1, call_head(), false)]);
    assert_eq!(s.poll_timeout(), Some(NOW + 1 + limits.stream_idle));
    feed(&mut s, NOW + 2, vec![H2Event::Reset { stream: 1 }]);
    assert_eq!(s.poll_timeout(), Some(NOW + 2 + limits.idle));
    assert!(s.handle_timeout(NOW + 2 + limits.idle, &mut out));
    assert_eq!(
        out,
        vec![Command::GoAway {
            code: code::NO_ERROR
        }]
    );
    assert!(s.closing());
    assert_eq!(s.poll_timeout(), None);
    s.finish();
    assert_eq!(s.poll_event(), Some(FrontEvent::Closed));
}

#[test]
fn a_stream_silent_inside_its_message_is_cut() {
    let limits = GrpcLimits::default();
    let mut s = table(limits);
    feed(
        &mut s,
        NOW,
        vec![headers(1, call_head(), false), data(1, &[0, 0, 0, 0, 9])],
    );
    // Stream 3 sends later: it is not cut with stream 1.
    feed(&mut s, NOW + SECOND, vec![headers(3, call_head(), false)]);
    assert_eq!(s.poll_timeout(), Some(NOW + limits.stream_idle));
    let mut out = Vec::new();
    assert!(s.handle_timeout(NOW + limits.stream_idle, &mut out));
    assert_eq!(status_of(&out[0]), Some((1, status::INVALID_ARGUMENT)));
    let Command::Respond { answer, .. } = &out[0] else {
        unreachable!()
    };
    let Answer::TrailersOnly { headers } = answer else {
        panic!("{answer:?}")
    };
    assert!(headers
        .iter()
        .any(|(n, v)| n == b"grpc-message" && v.starts_with(b"cut_message")));
    assert_eq!(out[1], Command::ResetAfterResponse { stream: 1 });
    assert_eq!((s.streams_held(), s.buffered()), (1, 0));
    // The oldest left is found again.
    assert_eq!(s.poll_timeout(), Some(NOW + SECOND + limits.stream_idle));
}

#[test]
fn a_lost_connection_loses_the_calls_with_the_exposure() {
    let mut s = table(GrpcLimits::default());
    feed(
        &mut s,
        NOW,
        vec![
            headers(1, call_head(), false),
            headers(3, call_head(), false),
        ],
    );
    feed(
        &mut s,
        NOW,
        vec![
            data(1, &frame_message(&[0x08, 1])),
            H2Event::EndStream { stream: 1 },
        ],
    );
    assert_eq!(requests(&mut s).len(), 1);
    s.finish();
    assert_eq!(s.poll_event(), Some(FrontEvent::Lost));
    assert_eq!(s.poll_event(), Some(FrontEvent::Closed));
    assert_eq!(s.poll_event(), None);
    // Nothing is done any more.
    let mut out = Vec::new();
    s.handle(NOW, headers(5, call_head(), true), &mut out);
    assert!(!s.deliver(delivery(1, Outcome::ServerError), &mut out));
    assert!(out.is_empty());
}

#[test]
fn stop_refuses_streams_being_read_and_goes_away() {
    let mut s = table(GrpcLimits::default());
    feed(
        &mut s,
        NOW,
        vec![
            headers(1, call_head(), false),
            headers(3, call_head(), true),
        ],
    );
    assert_eq!(requests(&mut s).len(), 1);
    let mut out = Vec::new();
    assert!(s.stop(&mut out));
    assert_eq!(
        out,
        vec![
            Command::Flush,
            Command::Reset {
                stream: 1,
                code: code::REFUSED_STREAM
            },
            Command::GoAway {
                code: code::NO_ERROR
            },
        ]
    );
    // The call with the exposure is still answered; stop is once.
    assert!(!s.stop(&mut out));
    assert!(s.deliver(delivery(3, Outcome::ServerError), &mut out));
    assert_eq!(status_of(&out[3]), Some((3, status::INTERNAL)));
}

/// A reflection request asking for the services (`list_services`, 7).
#[test]
fn the_health_checks_are_answered_by_the_connection_serving_then_draining() {
    let mut s = table(GrpcLimits::default());
    let mut get = head("/.health", "application/json");
    get[0].1 = b"GET".to_vec();
    let check = head(HEALTH_CHECK_PATH, "application/grpc");
    for (draining, status, serving) in [(false, &b"200"[..], 1u8), (true, b"503", 2)] {
        s.set_draining(draining);
        let out = feed(
            &mut s,
            NOW,
            vec![
                headers(1, get.clone(), true),
                headers(3, check.clone(), false),
            ],
        );
        // Neither reaches the exposure.
        assert!(requests(&mut s).is_empty());
        let [Command::Respond {
            stream: 1,
            answer: Answer::Message { headers: h, .. },
        }, Command::Respond {
            stream: 3,
            answer: Answer::Message {
                body, trailers: t, ..
            },
        }, Command::ResetAfterResponse { stream: 3 }] = &out[..]
        else {
            panic!("{out:?}");
        };
        assert_eq!(h[0], (b":status".to_vec(), status.to_vec()));
        assert_eq!(body, &[0, 0, 0, 0, 2, 0x08, serving]);
        assert_eq!(t[0], (b"grpc-status".to_vec(), b"0".to_vec()));
    }
}

fn list_services() -> Vec<u8> {
    frame_message(&[0x3a, 0])
}

fn reflection_head() -> Vec<Field> {
    head(
        &format!("/{REFLECTION_V1}/ServerReflectionInfo"),
        "application/grpc",
    )
}

#[test]
fn reflection_asks_the_caller_at_every_message_and_answers_in_order() {
    let mut s = table(GrpcLimits::default());
    let two = [list_services(), list_services()].concat();
    let out = feed(
        &mut s,
        NOW,
        vec![headers(1, reflection_head(), false), data(1, &two)],
    );
    assert!(out.is_empty());
    // One Describe at a time, of the stream's bearer.
    let asked = requests(&mut s);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, RequestKind::Describe);
    assert_eq!(asked[0].credential, Credential::Bearer(Some("t-1".into())));
    assert!(s.buffered() > 0);
    let mut out = Vec::new();
    assert!(s.deliver(delivery(1, Outcome::Description(b"{}".to_vec())), &mut out));
    // The response opens with the first answer; the second is asked.
    assert!(
        matches!(&out[..], [Command::Open { stream: 1, .. }]),
        "{out:?}"
    );
    assert_eq!(requests(&mut s).len(), 1);
    out.clear();
    assert!(s.deliver(delivery(1, Outcome::Description(b"{}".to_vec())), &mut out));
    assert!(
        matches!(&out[..], [Command::Data { stream: 1, .. }]),
        "{out:?}"
    );
    assert!(requests(&mut s).is_empty());
    assert_eq!(s.buffered(), 0);
    // The client's half-close ends the call with grpc-status 0 alone.
    let out = feed(&mut s, NOW, vec![H2Event::EndStream { stream: 1 }]);
    let [Command::Trailers { trailers, .. }] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!(trailers, &vec![(b"grpc-status".to_vec(), b"0".to_vec())]);
    assert_eq!(s.streams_held(), 0);
}

#[test]
fn a_refused_caller_ends_reflection_trailers_only() {
    let mut s = table(GrpcLimits::default());
    feed(
        &mut s,
        NOW,
        vec![
            headers(1, reflection_head(), false),
            data(1, &list_services()),
        ],
    );
    assert_eq!(requests(&mut s).len(), 1);
    let mut out = Vec::new();
    let refusal = Refusal::new(RefusalKind::Unauthenticated, "expired");
    assert!(s.deliver(delivery(1, Outcome::from(refusal)), &mut out));
    assert_eq!(out[0], Command::ResetAfterResponse { stream: 1 });
    assert_eq!(status_of(&out[1]), Some((1, status::UNAUTHENTICATED)));
    assert_eq!(s.streams_held(), 0);
}

#[test]
fn reflection_refuses_json_and_a_cut_or_oversized_message() {
    let mut s = table(GrpcLimits::default());
    // Reflection speaks protobuf.
    let json = head(
        &format!("/{REFLECTION_V1}/ServerReflectionInfo"),
        "application/grpc+json",
    );
    let out = feed(&mut s, NOW, vec![headers(1, json, true)]);
    assert_eq!(out.len(), 1);
    assert_eq!(status_of(&out[0]), Some((1, status::INVALID_ARGUMENT)));
    // A message the half-close cuts (INTERNAL, as reflection says).
    let out = feed(
        &mut s,
        NOW,
        vec![
            headers(3, reflection_head(), false),
            data(3, &[0, 0, 0, 0, 9, 1]),
            H2Event::EndStream { stream: 3 },
        ],
    );
    assert_eq!(status_of(&out[0]), Some((3, status::INTERNAL)));
    // Messages past the limit waiting for their answers.
    let big = frame_message(&vec![0; MAX_WAITING / 2 + 1]);
    let out = feed(
        &mut s,
        NOW,
        vec![
            headers(5, reflection_head(), false),
            data(5, &big),
            data(5, &big),
        ],
    );
    assert_eq!(out[0], Command::ResetAfterResponse { stream: 5 });
    assert_eq!(status_of(&out[1]), Some((5, status::RESOURCE_EXHAUSTED)));
    assert_eq!((s.streams_held(), s.buffered()), (0, 0));
}

#[test]
fn stop_ends_an_open_reflection_call_before_the_goaway() {
    let mut s = table(GrpcLimits::default());
    feed(
        &mut s,
        NOW,
        vec![
            headers(1, reflection_head(), false),
            data(1, &list_services()),
        ],
    );
    requests(&mut s);
    let mut out = Vec::new();
    s.deliver(delivery(1, Outcome::Description(b"{}".to_vec())), &mut out);
    out.clear();
    assert!(s.stop(&mut out));
    assert!(
        matches!(&out[0], Command::Trailers { stream: 1, .. }),
        "{out:?}"
    );
    assert_eq!(status_of(&out[0]), Some((1, status::OK)));
    assert_eq!(out[1], Command::Flush);
    assert_eq!(
        out[2],
        Command::GoAway {
            code: code::NO_ERROR
        }
    );
}

/// A session that no longer has the stream: the reflection call fails
/// alone, dropped from the table.
struct Gone;

impl Submit for Gone {
    fn submit(&mut self, _: Command) -> Result<(), super::super::h2::StreamGone> {
        Err(super::super::h2::StreamGone)
    }
}

#[test]
fn a_reflection_stream_the_session_lost_is_dropped() {
    let mut s = table(GrpcLimits::default());
    feed(
        &mut s,
        NOW,
        vec![
            headers(1, reflection_head(), false),
            data(1, &list_services()),
        ],
    );
    requests(&mut s);
    assert!(s.deliver(delivery(1, Outcome::Description(b"{}".to_vec())), &mut Gone));
    assert_eq!(s.streams_held(), 0);
}
