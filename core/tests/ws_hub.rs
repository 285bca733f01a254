//! `ws::Hub` held to § Streams, rule by rule: the credential once at the
//! upgrade, the six frames and their refusal kinds, one queue per
//! subscription under its row's bound and policy, seq over every event
//! offered, the bus frame, expiry as a timer, revocation at a revision,
//! `stop()`, a stalled reader, at most sixteen rows, and `GET
//! /.description` against the witness's fixtures.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::{
    Grants, Principal, RoleHierarchy, RoleSource, RoleTable, TokenTable,
};
use limen_core::wire::ws::hub::{EXPIRED_REASON, STOPPING_REASON};
use limen_core::wire::ws::{
    accept_key, ConnId, Hub, HubEvent, HubLimits, HubSpec, OnFull, Published, StreamSpec,
};
use limen_core::{Timestamp, SECOND};
use serde_json::{json, Value};

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
/// The wall clock at the start of every test, and the monotonic clock.
const WALL0: Timestamp = 1_800_000_000 * SECOND;

/// A role source a test can revoke from while the hub holds it.
#[derive(Clone)]
struct Shared(Arc<Mutex<RoleTable>>);

impl RoleSource for Shared {
    fn holds(&self, p: &Principal, role: &str) -> bool {
        self.0.lock().unwrap().holds(p, role)
    }
    fn grants(&self, p: &Principal) -> Option<Grants> {
        self.0.lock().unwrap().grants(p)
    }
}

/// A role source that states no grants, so only an announce tells.
#[derive(Clone)]
struct Silent(Arc<Mutex<RoleTable>>);

impl RoleSource for Silent {
    fn holds(&self, p: &Principal, role: &str) -> bool {
        self.0.lock().unwrap().holds(p, role)
    }
}

struct Harness {
    hub: Hub,
    now: Timestamp,
    closed: Vec<ConnId>,
    /// The calls the hub framed (with a surface served over it), kept in
    /// order while its other events are acted on.
    calls: std::collections::VecDeque<HubEvent>,
    roles: Arc<Mutex<RoleTable>>,
}

/// A frame the hub wrote: its opcode and payload.
#[derive(Debug, Clone, PartialEq)]
enum Frame {
    Text(Value),
    Close(u16),
    Pong(Vec<u8>),
}

fn tokens() -> TokenTable {
    TokenTable::new(Some("no such token"))
        .with("t-dave", "dave")
        .with("t-bob", "bob")
        .with("t-erin", "erin")
        .with_expiry("t-eve", "eve", WALL0 + 3 * SECOND)
        .with_expiry("t-old", "eve", WALL0 - SECOND)
}

fn witness_spec() -> HubSpec {
    let program = parse_program("desk.hl", DESK).unwrap();
    HubSpec::from_program(&program, "fills").unwrap()
}

fn spec(bound: usize, on_full: OnFull) -> HubSpec {
    HubSpec::new(
        "fills",
        vec![
            StreamSpec {
                topic: "Fills".into(),
                bound,
                on_full,
                requires: vec!["operator".into()],
            },
            StreamSpec {
                topic: "Quotes".into(),
                bound,
                on_full,
                requires: vec![],
            },
        ],
        RoleHierarchy::flat(),
        HubLimits::default(),
    )
    .unwrap()
}

fn describer() -> Box<ExposureDescriber> {
    let program = parse_program("desk.hl", DESK).unwrap();
    Box::new(ExposureDescriber::new(&program, "fills", Some("127.0.0.1:9000")).unwrap())
}

impl Harness {
    fn new(spec: HubSpec) -> Harness {
        Harness::with_source(spec, false)
    }

    fn with_source(spec: HubSpec, silent: bool) -> Harness {
        let roles = Arc::new(Mutex::new(
            RoleTable::new()
                .grant("dave", "operator")
                .grant("eve", "operator")
                .grant("erin", "operator"),
        ));
        let source: Box<dyn RoleSource + Send> = if silent {
            Box::new(Silent(roles.clone()))
        } else {
            Box::new(Shared(roles.clone()))
        };
        Harness {
            hub: Hub::new(spec, Some(Box::new(tokens())), source, describer()),
            now: 1000,
            closed: Vec::new(),
            calls: Default::default(),
            roles,
        }
    }

    fn wall(&self) -> Timestamp {
        WALL0 + self.now - 1000
    }

    fn events(&mut self) {
        while let Some(e) = self.hub.poll_event() {
            match e {
                HubEvent::Close(id) => self.closed.push(id),
                HubEvent::Call(_) | HubEvent::Lost(_) => self.calls.push_back(e),
                HubEvent::Output(_) => {}
            }
        }
    }

    /// The next request the hub framed for its exposure, in order.
    fn poll_call(&mut self) -> Option<limen_core::hale::runtime::Request> {
        self.events();
        loop {
            match self.calls.pop_front()? {
                HubEvent::Call(request) => return Some(*request),
                _ => continue,
            }
        }
    }

    fn send_raw(&mut self, id: ConnId, bytes: &[u8]) {
        let wall = self.wall();
        self.hub.handle_data(self.now, wall, id, bytes);
        self.events();
    }

    /// Connects `id` with an upgrade to `target`, with `auth` as its
    /// Authorization header; returns the response head.
    fn upgrade(&mut self, id: ConnId, target: &str, auth: Option<&str>) -> String {
        self.hub.handle_accept(self.now, id);
        self.send_raw(id, upgrade_request(target, auth).as_bytes());
        String::from_utf8(self.written(id)).unwrap()
    }

    fn connect(&mut self, id: ConnId, token: &str) {
        let head = self.upgrade(id, "/", Some(&format!("Bearer {token}")));
        assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    }

    fn send(&mut self, id: ConnId, text: &str) {
        self.send_raw(id, &client_frame(0x1, text.as_bytes()));
    }

    /// Everything `id` has to write, written whole.
    fn written(&mut self, id: ConnId) -> Vec<u8> {
        let mut all = Vec::new();
        loop {
            let out = self.hub.pending_output(id).to_vec();
            if out.is_empty() {
                break;
            }
            self.hub.consume_output(self.now, id, out.len());
            all.extend(out);
        }
        self.events();
        all
    }

    fn frames(&mut self, id: ConnId) -> Vec<Frame> {
        parse_frames(&self.written(id))
    }

    fn texts(&mut self, id: ConnId) -> Vec<Value> {
        self.frames(id)
            .into_iter()
            .map(|f| match f {
                Frame::Text(v) => v,
                other => panic!("not text: {other:?}"),
            })
            .collect()
    }

    fn publish(&mut self, topic: &str, payload: &Value) -> Published {
        let p = self.hub.publish(self.now, topic, &payload.to_string());
        self.events();
        p
    }

    fn subscribe(&mut self, id: ConnId, topic: &str) -> Vec<Value> {
        self.send(
            id,
            &json!({"type": "subscribe", "topic": topic}).to_string(),
        );
        self.texts(id)
    }
}

fn upgrade_request(target: &str, auth: Option<&str>) -> String {
    let mut r = format!(
        "GET {target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n"
    );
    if let Some(a) = auth {
        r.push_str(&format!("Authorization: {a}\r\n"));
    }
    r.push_str("\r\n");
    r
}

/// A masked client frame.
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut out = vec![0x80 | opcode];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// The hub's frames: unmasked, final.
fn parse_frames(mut bytes: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        assert_eq!(bytes[0] & 0x80, 0x80, "a final frame");
        assert_eq!(bytes[1] & 0x80, 0, "a server's frame is unmasked");
        let opcode = bytes[0] & 0x0f;
        let (len, at) = match bytes[1] & 0x7f {
            126 => (u16::from_be_bytes([bytes[2], bytes[3]]) as usize, 4),
            127 => (
                u64::from_be_bytes(bytes[2..10].try_into().unwrap()) as usize,
                10,
            ),
            n => (n as usize, 2),
        };
        let payload = &bytes[at..at + len];
        out.push(match opcode {
            0x1 => Frame::Text(serde_json::from_slice(payload).unwrap()),
            0x8 => Frame::Close(u16::from_be_bytes([payload[0], payload[1]])),
            0xA => Frame::Pong(payload.to_vec()),
            other => panic!("opcode {other}"),
        });
        bytes = &bytes[at + len..];
    }
    out
}

fn fill(order: i64) -> Value {
    json!({"order": order, "qty": 10, "price": 12500})
}

fn event(seq: u64, payload: Value) -> Value {
    json!({"type": "event", "topic": "Fills", "seq": seq, "payload": payload})
}

fn seqs(frames: &[Value]) -> Vec<u64> {
    frames
        .iter()
        .filter(|f| f["type"] == "event")
        .map(|f| f["seq"].as_u64().unwrap())
        .collect()
}

#[test]
fn the_witness_hub_is_read_from_its_rows() {
    let spec = witness_spec();
    assert_eq!(spec.name, "fills");
    assert_eq!(
        spec.streams,
        [StreamSpec {
            topic: "Fills".into(),
            bound: 64,
            on_full: OnFull::DropOld,
            requires: vec!["operator".into()],
        }]
    );
}

#[test]
fn a_subscriber_receives_each_event_with_its_seq() {
    let mut h = Harness::new(witness_spec());
    let head = h.upgrade(1, "/", Some("Bearer t-dave"));
    assert!(head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    assert!(head.contains(&format!("Sec-WebSocket-Accept: {}\r\n", accept_key(KEY))));
    assert_eq!(h.hub.connections(), 1);
    assert_eq!(
        h.subscribe(1, "Fills"),
        [json!({"type": "subscribed", "topic": "Fills"})]
    );
    assert_eq!(h.hub.subscribers(), 1);
    assert_eq!(h.publish("Fills", &fill(41)), Published::Offered(1));
    assert_eq!(h.publish("Fills", &fill(42)), Published::Offered(1));
    assert_eq!(h.texts(1), [event(1, fill(41)), event(2, fill(42))]);
    assert_eq!(h.hub.events(), 2);
}

#[test]
fn the_credential_may_ride_the_query() {
    let mut h = Harness::new(witness_spec());
    let head = h.upgrade(1, "/?x=1&access_token=t-dave", None);
    assert!(head.starts_with("HTTP/1.1 101 "));
    assert_eq!(
        h.subscribe(1, "Fills"),
        [json!({"type": "subscribed", "topic": "Fills"})]
    );
}

#[test]
fn a_query_token_is_percent_decoded_and_its_plus_kept() {
    let mut h = Harness::new(witness_spec());
    // `t%2Ddave` is `t-dave`; `t+dave` names nobody (not `t dave` either).
    h.upgrade(1, "/?access_token=t%2Ddave", None);
    assert_eq!(h.subscribe(1, "Fills")[0]["type"], "subscribed");
    h.upgrade(2, "/?access_token=t+dave", None);
    assert_eq!(
        h.subscribe(2, "Fills")[0]["refusal"]["reason"],
        "no such token"
    );
}

#[test]
fn without_a_credential_the_upgrade_completes_and_every_subscribe_is_unauthenticated() {
    let mut h = Harness::new(witness_spec());
    assert!(h.upgrade(1, "/", None).starts_with("HTTP/1.1 101 "));
    assert!(h
        .upgrade(2, "/", Some("Bearer t-nobody"))
        .starts_with("HTTP/1.1 101 "));
    for (id, reason) in [(1, "the sources name nobody"), (2, "no such token")] {
        for _ in 0..2 {
            assert_eq!(
                h.subscribe(id, "Fills"),
                [json!({"type": "refusal", "topic": "Fills",
                        "refusal": {"kind": "unauthenticated", "reason": reason}})]
            );
        }
    }
    assert_eq!(h.hub.subscribers(), 0);
}

#[test]
fn each_refusal_has_its_kind_and_a_frame_naming_no_topic_carries_null() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-bob");
    let refusal = |topic: Value, kind: &str, reason: &str| json!({"type": "refusal", "topic": topic, "refusal": {"kind": kind, "reason": reason}});
    h.send(1, "not json");
    h.send(1, "[1]");
    h.send(1, r#"{"type": "subscribe"}"#);
    h.send(1, r#"{"type": "subscribe", "topic": 7}"#);
    h.send(1, r#"{"type": "unsubscribe", "topic": "Fills"}"#);
    h.send(1, r#"{"type": "subscribe", "topic": "Quotes"}"#);
    h.send(1, r#"{"type": "subscribe", "topic": "Fills"}"#);
    let not_a_frame = "not a frame: a frame is one JSON object naming its type";
    assert_eq!(
        h.texts(1),
        [
            refusal(Value::Null, "malformed", not_a_frame),
            refusal(Value::Null, "malformed", not_a_frame),
            refusal(
                Value::Null,
                "malformed",
                "a subscribe names its topic as a string"
            ),
            refusal(
                Value::Null,
                "malformed",
                "a subscribe names its topic as a string"
            ),
            refusal(
                json!("Fills"),
                "malformed",
                "unknown frame type `unsubscribe`: a client sends subscribe"
            ),
            refusal(json!("Quotes"), "malformed", "unknown_topic: Quotes"),
            json!({"type": "refusal", "topic": "Fills",
                   "refusal": {"kind": "unauthorized", "reason": "Fills requires operator",
                               "requires": ["operator"]}}),
        ]
    );
    // A refused caller buffers nothing.
    assert_eq!(h.publish("Fills", &fill(41)), Published::Offered(0));
    assert!(h.texts(1).is_empty());
}

#[test]
fn a_second_subscribe_is_answered_again_and_changes_nothing() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    h.publish("Fills", &fill(41));
    assert_eq!(h.texts(1), [event(1, fill(41))]);
    assert_eq!(
        h.subscribe(1, "Fills"),
        [json!({"type": "subscribed", "topic": "Fills"})]
    );
    assert_eq!(h.hub.subscribers(), 1);
    h.publish("Fills", &fill(42));
    assert_eq!(h.texts(1), [event(2, fill(42))]);
}

/// A reader that takes nothing: one frame in the write, `bound` behind it.
#[test]
fn drop_old_sheds_the_oldest_and_the_gap_is_in_seq() {
    let mut h = Harness::new(spec(4, OnFull::DropOld));
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    for order in 1..=10 {
        assert_eq!(h.publish("Fills", &fill(order)), Published::Offered(1));
    }
    let got = h.texts(1);
    assert_eq!(seqs(&got), [1, 7, 8, 9, 10]);
    assert_eq!(got[1], event(7, fill(7)));
}

#[test]
fn drop_new_sheds_the_newest_and_the_gap_shows_at_the_next_frame() {
    let mut h = Harness::new(spec(4, OnFull::DropNew));
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    for order in 1..=10 {
        h.publish("Fills", &fill(order));
    }
    assert_eq!(seqs(&h.texts(1)), [1, 2, 3, 4, 5]);
    h.publish("Fills", &fill(11));
    assert_eq!(h.texts(1), [event(11, fill(11))]);
}

#[test]
fn each_subscription_has_its_own_queue_and_frames_leave_in_the_order_offered() {
    let mut h = Harness::new(spec(2, OnFull::DropOld));
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    h.subscribe(1, "Quotes");
    h.publish("Fills", &fill(1)); // written at once
    h.publish("Quotes", &json!(1));
    h.publish("Fills", &fill(2));
    h.publish("Quotes", &json!(2));
    h.publish("Quotes", &json!(3)); // sheds Quotes 1, not Fills 2
    let got: Vec<(String, u64)> = h
        .texts(1)
        .iter()
        .map(|f| {
            (
                f["topic"].as_str().unwrap().into(),
                f["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [("Fills", 1), ("Fills", 2), ("Quotes", 2), ("Quotes", 3)]
        .iter()
        .map(|(t, s)| (t.to_string(), *s))
        .collect();
    assert_eq!(got, want);
}

/// `take_output` is `pending_output` and `consume_output` in turn, in one
/// step: the same bytes, the queues shed alike, at least `max` bytes a
/// call while more waits, and a connection emptied by it is announced
/// (`Output`) again at its next frame.
#[test]
fn take_output_gathers_what_pending_and_consume_would_write() {
    let run = |max: Option<usize>| -> Vec<u8> {
        let mut h = Harness::new(spec(3, OnFull::DropOld));
        h.connect(1, "t-dave");
        h.subscribe(1, "Fills");
        for i in 1..=10 {
            h.publish("Fills", &fill(i));
        }
        let Some(max) = max else {
            return h.written(1);
        };
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let more = h.hub.take_output(h.now, 1, &mut out, max);
            if !more {
                break;
            }
            assert!(out.len() - before >= max, "more waits: at least max taken");
        }
        assert!(h.hub.pending_output(1).is_empty());
        assert_eq!(h.hub.poll_event(), None);
        h.hub.publish(h.now, "Fills", &fill(11).to_string());
        assert_eq!(h.hub.poll_event(), Some(HubEvent::Output(1)));
        out
    };
    let whole = run(None);
    let frames: Vec<Value> = parse_frames(&whole)
        .into_iter()
        .map(|f| match f {
            Frame::Text(v) => v,
            other => panic!("not text: {other:?}"),
        })
        .collect();
    // The first went to the socket at once; three are held, the rest shed.
    assert_eq!(seqs(&frames), [1, 8, 9, 10]);
    assert_eq!(run(Some(1)), whole);
    assert_eq!(run(Some(100)), whole);
    assert_eq!(run(Some(1 << 20)), whole);
}

#[test]
fn an_event_over_the_bus_frame_reaches_no_subscriber_and_takes_no_seq() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    // 65,536 bytes on the wire with its 17 bytes of header.
    let fits = "x".repeat(65_536 - 17 - 2);
    let over = "x".repeat(65_536 - 17 - 1);
    assert_eq!(h.publish("Fills", &json!(over)), Published::TooLarge);
    assert_eq!(h.publish("Fills", &json!(fits)), Published::Offered(1));
    assert_eq!(h.texts(1), [event(1, json!(fits))]);
    assert_eq!(h.hub.events(), 1);
    assert_eq!(h.publish("Nope", &json!(1)), Published::UnknownTopic);
}

#[test]
fn the_credentials_expiry_is_a_timer_that_ends_every_subscription() {
    let mut h = Harness::new(spec(4, OnFull::DropOld));
    h.connect(1, "t-eve");
    h.connect(2, "t-dave");
    h.subscribe(1, "Fills");
    h.subscribe(1, "Quotes");
    h.subscribe(2, "Fills");
    let expiry = h.now + 3 * SECOND;
    assert_eq!(h.hub.poll_timeout(), Some(expiry));
    // Held behind a write the reader has not taken (a stall is 5 s).
    h.publish("Fills", &fill(1));
    h.publish("Fills", &fill(2));
    h.hub.handle_timeout(expiry - 1);
    assert_eq!(h.hub.subscribers(), 3);
    h.now = expiry;
    h.hub.handle_timeout(expiry);
    h.events();
    assert_eq!(h.hub.subscribers(), 1);
    // The frame in the write is out; what was queued is dropped.
    assert_eq!(
        h.texts(1),
        [
            event(1, fill(1)),
            json!({"type": "unauthorized", "topic": "Fills", "reason": "expired"}),
            json!({"type": "unauthorized", "topic": "Quotes", "reason": "expired"}),
        ]
    );
    assert_eq!(seqs(&h.texts(2)), [1, 2]);
    // A spent credential admits nothing new.
    assert_eq!(
        h.subscribe(1, "Quotes"),
        [json!({"type": "refusal", "topic": "Quotes",
                "refusal": {"kind": "unauthenticated", "reason": EXPIRED_REASON}})]
    );
    // One already spent at the upgrade is refused the same way.
    h.connect(3, "t-old");
    assert_eq!(
        h.subscribe(3, "Quotes")[0]["refusal"]["reason"],
        EXPIRED_REASON
    );
}

#[test]
fn revocation_at_an_announced_revision_ends_only_the_subscriptions_that_lost_the_grant() {
    let mut h = Harness::with_source(spec(4, OnFull::DropOld), true);
    h.connect(1, "t-dave");
    h.connect(2, "t-erin");
    for id in [1, 2] {
        h.subscribe(id, "Fills");
        h.subscribe(id, "Quotes");
    }
    h.publish("Fills", &fill(1));
    h.publish("Fills", &fill(2));
    h.publish("Quotes", &json!(1));
    h.roles.lock().unwrap().revoke("dave", "operator");
    // A source that states no revision is rechecked only when told.
    h.hub.announce(h.now, 1);
    h.events();
    assert_eq!(
        h.texts(1),
        [
            event(1, fill(1)),
            json!({"type": "event", "topic": "Quotes", "seq": 1, "payload": 1}),
            json!({"type": "unauthorized", "topic": "Fills", "reason": "revoked"}),
        ]
    );
    assert_eq!(seqs(&h.texts(2)), [1, 2, 1]);
    h.publish("Fills", &fill(3));
    assert!(h.texts(1).is_empty());
    assert_eq!(seqs(&h.texts(2)), [3]);
    // An announce that changes nothing costs no frame.
    h.hub.announce(h.now, 2);
    h.events();
    assert!(h.texts(2).is_empty());
}

#[test]
fn no_event_is_delivered_under_a_revision_older_than_the_sources() {
    let mut h = Harness::new(spec(4, OnFull::DropOld));
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    h.publish("Fills", &fill(1));
    h.publish("Fills", &fill(2));
    // The source moved its revision and nobody announced it: the next
    // delivery finds it.
    h.roles.lock().unwrap().revoke("dave", "operator");
    assert_eq!(
        h.texts(1),
        [
            event(1, fill(1)),
            json!({"type": "unauthorized", "topic": "Fills", "reason": "revoked"}),
        ]
    );
    assert_eq!(h.hub.subscribers(), 0);
}

#[test]
fn stop_writes_closed_after_what_was_queued_then_the_close_frame() {
    let mut h = Harness::new(spec(4, OnFull::DropOld));
    h.connect(1, "t-dave");
    h.connect(2, "t-dave");
    h.subscribe(1, "Fills");
    h.publish("Fills", &fill(1));
    h.publish("Fills", &fill(2));
    h.hub.stop(h.now);
    h.hub.stop(h.now);
    h.events();
    assert_eq!(h.publish("Fills", &fill(3)), Published::Stopped);
    // A subscribe while the queue drains is refused, before `closed`.
    h.send(
        1,
        &json!({"type": "subscribe", "topic": "Quotes"}).to_string(),
    );
    let closed = json!({"type": "closed", "reason": "shutting_down"});
    assert_eq!(
        h.frames(1),
        [
            Frame::Text(event(1, fill(1))),
            Frame::Text(event(2, fill(2))),
            Frame::Text(json!({"type": "refusal", "topic": "Quotes",
                               "refusal": {"kind": "shutting_down", "reason": STOPPING_REASON}})),
            Frame::Text(closed.clone()),
            Frame::Close(1001),
        ]
    );
    assert_eq!(h.frames(2), [Frame::Text(closed), Frame::Close(1001)]);
    assert!(!h.hub.is_finished());
    // The peers answer the close; the hub is done.
    for id in [1, 2] {
        h.send_raw(id, &client_frame(0x8, &1001u16.to_be_bytes()));
        h.written(id);
    }
    assert_eq!(h.closed, [1, 2]);
    assert!(h.hub.is_finished());
    // An upgrade after stop is refused.
    h.hub.handle_accept(h.now, 3);
    h.send_raw(3, upgrade_request("/", Some("Bearer t-dave")).as_bytes());
    let answer = String::from_utf8(h.written(3)).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
}

#[test]
fn a_peer_that_never_answers_the_close_is_let_go() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.hub.stop(h.now);
    h.events();
    h.written(1);
    let at = h.hub.poll_timeout().unwrap();
    // The teardown's second (§ Serving), not the 5 s it once waited.
    assert_eq!(at, h.now + HubLimits::default().teardown_wait);
    assert_eq!(at, h.now + SECOND);
    h.hub.handle_timeout(at);
    h.events();
    assert_eq!(h.closed, [1]);
    assert!(h.hub.is_finished());
}

#[test]
fn a_reader_stalled_on_one_write_is_dropped_alone() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.connect(2, "t-dave");
    h.subscribe(1, "Fills");
    h.subscribe(2, "Fills");
    h.publish("Fills", &fill(1));
    // 2 reads; 1 takes part of its write, then nothing.
    assert_eq!(h.texts(2), [event(1, fill(1))]);
    h.now += SECOND;
    h.hub.consume_output(h.now, 1, 3);
    h.events();
    let deadline = h.now + 5 * SECOND;
    assert_eq!(h.hub.poll_timeout(), Some(deadline));
    h.now = deadline - 1;
    h.hub.handle_timeout(h.now);
    h.events();
    assert!(h.closed.is_empty());
    h.now = deadline;
    h.hub.handle_timeout(h.now);
    h.events();
    assert_eq!(h.closed, [1]);
    assert_eq!(h.hub.subscribers(), 1);
    h.publish("Fills", &fill(2));
    assert_eq!(h.texts(2), [event(2, fill(2))]);
}

#[test]
fn a_ping_is_answered_after_the_frames_queued_before_it_and_eof_forgets_alone() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.connect(2, "t-dave");
    h.subscribe(1, "Fills");
    h.subscribe(2, "Fills");
    h.publish("Fills", &fill(1));
    h.send_raw(1, &client_frame(0x9, b"hi"));
    assert_eq!(
        h.frames(1),
        [Frame::Text(event(1, fill(1))), Frame::Pong(b"hi".to_vec())]
    );
    h.hub.handle_eof(h.now, 2);
    h.events();
    assert_eq!(h.closed, [2]);
    assert_eq!(h.hub.subscribers(), 1);
    assert_eq!(h.hub.connections(), 1);
}

#[test]
fn a_client_that_sends_and_does_not_read_is_held_back_not_buffered() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    let limit = HubLimits::default().max_answers;
    let mut sent = 0;
    while h.hub.wants_read(1) {
        h.send(1, "not json");
        sent += 1;
        assert!(sent <= limit + 1, "still read after {sent} unread answers");
    }
    // One answer is in the write; the rest wait, up to the limit.
    assert_eq!(sent, limit + 1);
    // Read, it is read again, and every answer arrives.
    assert_eq!(h.texts(1).len(), sent);
    assert!(h.hub.wants_read(1));
    // Pongs count as bytes waiting: pings past the output limit stop the
    // reading too.
    let ping = client_frame(0x9, &[0; 125]);
    let mut pings = 0;
    while h.hub.wants_read(1) {
        h.send_raw(1, &ping);
        pings += 1;
        assert!(pings < 20_000, "still read after {pings} unread pongs");
    }
}

#[test]
fn the_input_in_any_split_gives_the_same_frames() {
    let mut input = upgrade_request("/", Some("Bearer t-dave")).into_bytes();
    input.extend(client_frame(
        0x1,
        json!({"type": "subscribe", "topic": "Fills"})
            .to_string()
            .as_bytes(),
    ));
    input.extend(client_frame(0x1, b"{}"));
    let whole = {
        let mut h = Harness::new(witness_spec());
        h.hub.handle_accept(h.now, 1);
        h.send_raw(1, &input);
        h.written(1)
    };
    assert!(whole.starts_with(b"HTTP/1.1 101 "));
    let frames =
        parse_frames(&whole[whole.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..]);
    assert_eq!(frames.len(), 2, "subscribed, and a refusal");
    for split in 1..input.len() {
        let mut h = Harness::new(witness_spec());
        h.hub.handle_accept(h.now, 1);
        let mut got = Vec::new();
        for chunk in [&input[..split], &input[split..]] {
            h.send_raw(1, chunk);
            got.extend(h.written(1));
        }
        assert_eq!(got, whole, "split at {split}");
    }
}

fn witness_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness"
    ));
    if dir.join("fills.dave.description.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: the witness fixtures are absent ({})",
            dir.display()
        );
        None
    }
}

fn get(h: &mut Harness, id: ConnId, target: &str, auth: Option<&str>) -> (u16, Value) {
    h.hub.handle_accept(h.now, id);
    let mut r = format!("GET {target} HTTP/1.1\r\nHost: x\r\n");
    if let Some(a) = auth {
        r.push_str(&format!("Authorization: {a}\r\n"));
    }
    r.push_str("\r\n");
    h.send_raw(id, r.as_bytes());
    let text = String::from_utf8(h.written(id)).unwrap();
    assert!(h.closed.contains(&id), "the connection closes");
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(body).unwrap())
}

#[test]
fn the_description_before_any_upgrade_is_the_callers_document() {
    let Some(dir) = witness_dir() else { return };
    let mut h = Harness::new(witness_spec());
    for (id, token, file) in [
        (1, "t-dave", "fills.dave.description.json"),
        (2, "t-bob", "fills.bob.description.json"),
    ] {
        let want: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        let (status, doc) = get(
            &mut h,
            id,
            "/.description",
            Some(&format!("Bearer {token}")),
        );
        assert_eq!((status, &doc), (200, &want), "{file}");
        let (status, doc) = get(
            &mut h,
            id + 10,
            &format!("/.description?access_token={token}"),
            None,
        );
        assert_eq!((status, &doc), (200, &want), "{file} by the query");
    }
    let (status, doc) = get(&mut h, 3, "/.description", None);
    assert_eq!(
        (status, doc),
        (
            401,
            json!({"refusal": {"kind": "unauthenticated", "reason": "the sources name nobody"}})
        )
    );
    let (status, doc) = get(&mut h, 4, "/elsewhere", Some("Bearer t-dave"));
    assert_eq!(status, 400);
    assert_eq!(doc["refusal"]["kind"], "malformed");
}

#[test]
fn a_hub_has_at_most_sixteen_stream_rows() {
    let rows = |n: usize| -> Vec<StreamSpec> {
        (0..n)
            .map(|i| StreamSpec {
                topic: format!("T{i}"),
                bound: 1,
                on_full: OnFull::DropNew,
                requires: vec![],
            })
            .collect()
    };
    let make = |n| HubSpec::new("h", rows(n), RoleHierarchy::flat(), HubLimits::default());
    assert!(make(16).is_ok());
    let err = make(17).unwrap_err();
    assert!(err.contains("at most 16 stream rows"), "{err}");
}

/// A spec of the two rows under `limits`.
fn limited(limits: HubLimits) -> HubSpec {
    let mut spec = spec(4, OnFull::DropOld);
    spec.limits = limits;
    spec
}

/// The close frame `id` wrote, if any, with its reason.
fn close_of(frames: &[Frame]) -> Option<u16> {
    frames.iter().find_map(|f| match f {
        Frame::Close(code) => Some(*code),
        _ => None,
    })
}

#[test]
fn a_connection_that_names_nobody_is_closed_at_its_deadline_and_a_named_one_is_not() {
    let mut h = Harness::new(witness_spec());
    let wait = HubLimits::default().anonymous_wait;
    assert_eq!(wait, 10 * SECOND);
    let head = h.upgrade(1, "/", None);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    h.connect(2, "t-dave");
    // Refused, but not turned away (§ Streams, the credential).
    let refused = h.subscribe(1, "Fills");
    assert_eq!(refused[0]["refusal"]["kind"], "unauthenticated");
    let deadline = h.now + wait;
    assert_eq!(h.hub.poll_timeout(), Some(deadline));
    h.hub.handle_timeout(deadline - 1);
    h.events();
    assert!(h.frames(1).is_empty());
    h.now = deadline;
    h.hub.handle_timeout(h.now);
    h.events();
    // 1008, the policy's close, with the limit in its reason.
    let out = h.written(1);
    let frames = parse_frames(&out);
    assert_eq!(close_of(&frames), Some(1008), "{frames:?}");
    let reason = String::from_utf8_lossy(&out[4..]).into_owned();
    assert_eq!(
        reason,
        limen_core::wire::ws::hub::anonymous_reason(&HubLimits::default())
    );
    assert!(reason.contains("10000 ms"), "{reason}");
    // It does not answer: let go at the close wait.
    assert_eq!(h.hub.poll_timeout(), Some(h.now + SECOND));
    h.now += SECOND;
    h.hub.handle_timeout(h.now);
    h.events();
    assert_eq!(h.closed, [1]);
    // The named connection is held: no deadline is left.
    assert_eq!(h.hub.poll_timeout(), None);
    assert_eq!(h.hub.connections(), 1);
    assert_eq!(h.subscribe(2, "Fills")[0]["type"], "subscribed");
}

#[test]
fn a_refused_credential_is_anonymous_too_and_an_answered_close_ends_it_at_once() {
    let mut h = Harness::new(witness_spec());
    h.upgrade(1, "/", Some("Bearer t-unknown"));
    h.now += HubLimits::default().anonymous_wait;
    h.hub.handle_timeout(h.now);
    h.events();
    assert_eq!(close_of(&h.frames(1)), Some(1008));
    h.send_raw(1, &client_frame(0x8, &1008u16.to_be_bytes()));
    h.written(1);
    assert_eq!(h.closed, [1]);
    assert_eq!(h.hub.unproven(), 0);
}

#[test]
fn anonymous_peers_alone_never_fill_the_hub() {
    let limits = HubLimits {
        max_connections: 8,
        max_unproven: 4,
        ..HubLimits::default()
    };
    let mut h = Harness::new(limited(limits));
    // Eight anonymous upgrades, each past the fourth making room by the
    // oldest.
    for id in 1..=8 {
        let head = h.upgrade(id, "/", None);
        assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
        assert!(h.hub.unproven() <= 4);
    }
    assert_eq!(h.closed, [1, 2, 3, 4]);
    // An authenticated subscriber gets in, beside four anonymous ones.
    h.connect(10, "t-dave");
    assert_eq!(h.subscribe(10, "Fills")[0]["type"], "subscribed");
    assert_eq!(h.closed, [1, 2, 3, 4, 5]);
    // Named connections fill the hub to its cap, then the anonymous make
    // room, one a connection.
    for id in 11..=14 {
        h.connect(id, "t-erin");
    }
    assert_eq!(h.closed, [1, 2, 3, 4, 5]);
    assert_eq!(h.hub.connections(), 8);
    h.connect(15, "t-bob");
    h.connect(16, "t-bob");
    h.connect(17, "t-bob");
    assert_eq!(h.closed, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(h.hub.connections(), 8);
    assert_eq!(h.hub.unproven(), 0);
    // Full of proven connections: the next socket is closed at accept.
    h.hub.handle_accept(h.now, 18);
    h.events();
    assert_eq!(h.closed.last(), Some(&18));
    assert_eq!(h.hub.connections(), 8);
    // A socket still in its request makes room like an anonymous one
    // when nothing older named nobody.
    h.hub.handle_eof(h.now, 17);
    h.events();
    h.hub.handle_accept(h.now, 19);
    h.hub.handle_accept(h.now, 20);
    h.events();
    assert_eq!(h.closed.last(), Some(&19));
    assert_eq!(h.hub.unproven(), 1);
}

#[test]
fn a_limit_that_lets_the_unproven_fill_the_hub_is_refused() {
    for (unproven, all) in [(0, 8), (8, 8), (9, 8)] {
        let limits = HubLimits {
            max_connections: all,
            max_unproven: unproven,
            ..HubLimits::default()
        };
        let err = HubSpec::new("h", Vec::new(), RoleHierarchy::flat(), limits).unwrap_err();
        assert!(
            err.contains(&format!("{unproven} unproven connections of {all}")),
            "{err}"
        );
    }
}

/// A call frame with `id`.
fn call(id: u64) -> Vec<u8> {
    client_frame(
        0x1,
        json!({"type": "call", "id": id, "call": "Orders::nope", "payload": {}})
            .to_string()
            .as_bytes(),
    )
}

/// What an exposure answers a framed call: a refusal, the id echoed.
fn answer(request: limen_core::hale::runtime::Request) -> limen_core::hale::runtime::Delivery {
    use limen_core::hale::runtime::{Delivery, Outcome, Principal, Refusal, RefusalKind};
    Delivery {
        member: None,
        accepted: 0,
        correlation: request.correlation,
        request_id: 1,
        client_id: request.client_id,
        caller: Principal::bearer("dave"),
        outcome: Outcome::from(Refusal::new(RefusalKind::Malformed, "unknown_member")),
    }
}

#[test]
fn a_call_flood_is_read_only_as_fast_as_it_is_answered() {
    let limits = HubLimits {
        max_answers: 8,
        ..HubLimits::default()
    };
    let max = limits.max_answers;
    let mut h = Harness::new(limited(limits));
    h.hub.serve_calls();
    h.connect(1, "t-dave");
    h.connect(2, "t-dave");
    // A hundred calls in one read: eight are framed, the rest wait unread.
    let flood: Vec<u8> = (0..100).flat_map(call).collect();
    h.send_raw(1, &flood);
    assert_eq!(h.hub.owed(1), Some(max));
    assert!(!h.hub.wants_read(1));
    let mut framed = Vec::new();
    while let Some(c) = h.poll_call() {
        framed.push(c);
    }
    assert_eq!(framed.len(), max);
    // The other connection is read and answered meanwhile.
    assert!(h.hub.wants_read(2));
    h.send_raw(2, &call(1000));
    let Some(other) = h.poll_call() else {
        panic!("the second connection's call is framed");
    };
    h.hub.deliver(h.now, answer(other));
    h.events();
    assert_eq!(h.texts(2)[0]["id"], 1000);
    // Answered one by one, in order, the flood is read on, never owed
    // past eight, and every answer arrives in order.
    let mut framed: std::collections::VecDeque<_> = framed.into();
    let mut ids = Vec::new();
    while let Some(request) = framed.pop_front() {
        h.hub.deliver(h.now, answer(request));
        h.events();
        for t in h.texts(1) {
            ids.push(t["id"].as_u64().unwrap());
        }
        framed.extend(std::iter::from_fn(|| h.poll_call()));
        assert!(h.hub.owed(1).unwrap() <= max);
        assert!(framed.len() <= max);
    }
    assert!(h.hub.wants_read(1));
    assert_eq!(ids, (0..100).collect::<Vec<_>>());
}

#[test]
fn refusals_unread_count_as_answers_owed_however_the_frames_are_read() {
    let limits = HubLimits {
        max_answers: 8,
        ..HubLimits::default()
    };
    let mut h = Harness::new(limited(limits));
    // No credential, no surface: every frame is refused by the hub itself.
    h.upgrade(1, "/", None);
    let flood: Vec<u8> = (0..100)
        .flat_map(|_| client_frame(0x1, b"not json"))
        .collect();
    h.send_raw(1, &flood);
    // One answer in the write, eight waiting: the rest is not read.
    assert_eq!(h.hub.owed(1), Some(8));
    assert!(!h.hub.wants_read(1));
    // Read, the connection is read on, and answers all hundred.
    let mut answered = 0;
    for _ in 0..100 {
        let got = h.texts(1).len();
        answered += got;
        assert!(h.hub.owed(1).unwrap() <= 8);
        if got == 0 {
            break;
        }
    }
    assert_eq!(answered, 100);
    assert!(h.hub.wants_read(1));
}

#[test]
fn stop_lets_go_of_a_reader_that_takes_nothing_at_the_teardown_wait() {
    let mut h = Harness::new(witness_spec());
    h.connect(1, "t-dave");
    h.subscribe(1, "Fills");
    h.publish("Fills", &fill(1));
    // Nothing of the event is read: its stalled write would wait 5 s.
    h.hub.stop(h.now);
    h.events();
    let at = h.hub.poll_timeout().unwrap();
    assert_eq!(at, h.now + SECOND);
    h.hub.handle_timeout(at - 1);
    h.events();
    assert!(h.closed.is_empty());
    h.hub.handle_timeout(at);
    h.events();
    assert_eq!(h.closed, [1]);
    assert!(h.hub.is_finished());
    assert_eq!(h.hub.poll_timeout(), None);
}

#[test]
fn stop_lets_go_of_a_request_whose_answer_is_not_read() {
    let mut h = Harness::new(witness_spec());
    h.hub.stop(h.now);
    // A request after stop() is answered 503, and the answer never read.
    h.hub.handle_accept(h.now, 1);
    h.send_raw(1, upgrade_request("/", Some("Bearer t-dave")).as_bytes());
    assert!(h.hub.pending_output(1).starts_with(b"HTTP/1.1 503 "));
    let at = h.hub.poll_timeout().unwrap();
    assert_eq!(at, h.now + SECOND);
    h.hub.handle_timeout(at);
    h.events();
    assert_eq!(h.closed, [1]);
    assert!(h.hub.is_finished());
}

#[test]
fn a_request_whose_answer_is_being_written_makes_room_like_any_unproven_one() {
    let limits = HubLimits {
        max_connections: 8,
        max_unproven: 1,
        ..HubLimits::default()
    };
    let mut h = Harness::new(limited(limits));
    h.hub.handle_accept(h.now, 1);
    h.send_raw(1, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(h.hub.pending_output(1).starts_with(b"HTTP/1.1 400 "));
    h.hub.handle_accept(h.now, 2);
    h.events();
    assert_eq!(h.closed, [1]);
    assert_eq!(h.hub.unproven(), 1);
}

#[test]
fn take_output_gathers_the_answers_to_frames_it_let_be_read() {
    let limits = HubLimits {
        max_answers: 2,
        ..HubLimits::default()
    };
    let mut h = Harness::new(limited(limits));
    h.connect(1, "t-dave");
    let burst: Vec<u8> = (0..10)
        .flat_map(|_| client_frame(0x1, b"not json"))
        .collect();
    h.send_raw(1, &burst);
    assert!(!h.hub.wants_read(1));
    // One gathered write takes every answer: each one written lets the
    // next frame be read, and its answer is gathered too.
    let mut out = Vec::new();
    let more = h.hub.take_output(h.now, 1, &mut out, 1 << 20);
    assert!(!more);
    assert!(h.hub.pending_output(1).is_empty());
    assert_eq!(parse_frames(&out).len(), 10);
    assert!(h.hub.wants_read(1));
}
