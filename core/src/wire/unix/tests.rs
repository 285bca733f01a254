use super::*;
use crate::hale::runtime::Delivery;
use crate::wire::front::{Front, Machine};
use crate::wire::http::HttpFront;
use crate::wire::http1;
use crate::SECOND;

const PEER: PeerCredentials = PeerCredentials {
    uid: 1000,
    gid: 1000,
    pid: 4242,
    groups: None,
};

fn events(f: &mut dyn Front) -> Vec<FrontEvent> {
    std::iter::from_fn(|| f.poll_event()).collect()
}

fn write_all(f: &mut dyn Front, now: Timestamp) -> Vec<u8> {
    let out = f.pending_output().to_vec();
    f.consume_output(now, out.len());
    out
}

#[test]
fn a_unix_line_that_is_not_an_object_is_answered_with_request_id_0_and_closed() {
    let mut f = UnixFront::new(0, line::Limits::default(), PEER, 9);
    f.handle_data(SECOND, b"garbage\n{\"describe\":true}\n");
    assert_eq!(events(&mut f), [FrontEvent::Lost]);
    let out = String::from_utf8(f.pending_output().to_vec()).unwrap();
    assert!(
        out.starts_with(r#"{"request_id":0,"id":null,"ok":false,"refusal":{"kind":"malformed""#),
        "{out}"
    );
    assert!(out.ends_with(
        "\"caller\":{\"mode\":\"unix\",\"name\":\"uid:1000\",\"uid\":1000,\"gid\":1000,\"pid\":4242}}\n"
    ));
    // The answer was queued at the input's time: the stalled-write timer
    // runs from then.
    assert_eq!(f.poll_timeout(), Some(6 * SECOND));
    write_all(&mut f, SECOND);
    assert_eq!(events(&mut f), [FrontEvent::Closed]);
    assert!(f.is_closed());
}

#[test]
fn a_unix_request_is_framed_with_the_peer_as_its_credential() {
    let mut f = UnixFront::new(0, line::Limits::default(), PEER, 9);
    f.set_keep_raw(true);
    f.handle_data(
        0,
        b"{\"call\":\"A::b\",\"payload\":{\"x\":1},\"id\":\"c\",\"digest\":\"d\"}\n",
    );
    let e = events(&mut f);
    let [FrontEvent::Request { request, raw }] = &e[..] else {
        panic!("{e:?}");
    };
    assert_eq!(
        request,
        &Request {
            correlation: 9,
            kind: RequestKind::Call {
                member: "A::b".into(),
                payload: crate::hale::runtime::Payload::Json(br#"{"x":1}"#.to_vec()),
            },
            digest: Some("d".into()),
            credential: Credential::Peer(PEER),
            client_id: Some("\"c\"".into()),
        }
    );
    assert!(matches!(
        raw.as_deref(),
        Some(RawRequest::Line(LineRequest::Call { .. }))
    ));
}

#[test]
fn a_unix_reply_is_the_outcomes_line_whichever_caller_it_is_for() {
    // The front keeps the last caller's JSON: alternating callers, and
    // callers equal in value but not shared, must each be written as
    // themselves.
    let peer = Principal::unix(PEER);
    let same_value = Principal::unix(PEER);
    let other = Principal::unix(PeerCredentials { pid: 7, ..PEER });
    let bearer = Principal::bearer("a\"b\u{1}é");
    let outcomes = [
        Outcome::Result(br#"{"moved":1500}"#.to_vec()),
        Outcome::HandlerError(br#"{"code":"x"}"#.to_vec()),
        Outcome::from(Refusal::new(RefusalKind::Full, "full")),
        Outcome::ServerError,
    ];
    let mut f = UnixFront::new(0, line::Limits::default(), PEER, 1);
    let mut expected = Vec::new();
    let callers = [&peer, &peer, &other, &same_value, &bearer, &peer];
    for (i, caller) in callers.into_iter().enumerate() {
        let outcome = &outcomes[i % outcomes.len()];
        let id = (i % 2 == 0).then(|| "\"c-1\"".to_owned());
        let mut line = reply_line(outcome, i as u64 + 1, id.as_deref(), caller);
        line.push(b'\n');
        let n = f.deliver(
            0,
            Delivery {
                member: None,
                accepted: 0,
                correlation: 1,
                request_id: i as u64 + 1,
                client_id: id,
                caller: caller.clone(),
                outcome: outcome.clone(),
            },
        );
        assert_eq!(n, line.len());
        expected.extend(line);
    }
    assert_eq!(f.pending_output(), &expected[..]);
}

#[test]
fn a_front_yields_the_same_events_whole_or_byte_by_byte() {
    let unix =
        b"{\"describe\":true}\n{\"call\":\"A::b\",\"payload\":1,\"id\":[1]}\r\n\n{\"x\":1}\nnope\n";
    let http = b"GET /.description HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n";
    type NewFront = fn() -> Box<dyn Front>;
    let make: [(&[u8], NewFront); 2] = [
        (unix, || {
            Box::new(UnixFront::new(0, line::Limits::default(), PEER, 1))
        }),
        (http, || {
            Box::new(HttpFront::new(0, http1::Limits::default(), 1))
        }),
    ];
    for (input, new) in make {
        let mut whole = new();
        whole.handle_data(0, input);
        let mut split = new();
        for b in input {
            split.handle_data(0, std::slice::from_ref(b));
        }
        let a = events(whole.as_mut());
        assert!(!a.is_empty());
        assert_eq!(a, events(split.as_mut()));
        assert_eq!(whole.pending_output(), split.pending_output());
    }
}
