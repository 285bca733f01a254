//! `udp::Hub` held to § Over datagrams: subscribers by (address, id) with
//! the id echoed raw, the token in the subscribe, the datagrams and their
//! refusal kinds, `unsubscribe` freeing the id (seq from 1 again),
//! `describe`, several subscribers on one socket, expiry and revocation,
//! `closed` at `stop()`, and the row's bound for a socket that takes
//! nothing.

use std::sync::{Arc, Mutex};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{parse_program, TransportKind};
use limen_core::hale::runtime::{Grants, Principal, RoleSource, RoleTable, TokenTable};
use limen_core::wire::udp::{Hub, Limits};
use limen_core::wire::ws::{HubSpec, Published};
use limen_core::{Timestamp, SECOND};
use serde_json::{json, Value};

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const WALL0: Timestamp = 1_800_000_000 * SECOND;

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

struct H {
    hub: Hub<u16>,
    now: Timestamp,
    roles: Arc<Mutex<RoleTable>>,
}

impl H {
    fn new() -> H {
        let roles = RoleTable::new().grant("dave", "operator");
        let tokens = TokenTable::new(Some("no such token"))
            .with("t-dave", "dave")
            .with("t-bob", "bob")
            .with_expiry("t-eve", "dave", WALL0 + 2 * SECOND);
        H::build(tokens, roles)
    }

    /// dave's tokens and grant, and `n` more principals `p0`… each with
    /// its token `t0`… and the grant.
    fn many(n: usize) -> H {
        let mut roles = RoleTable::new().grant("dave", "operator");
        let mut tokens = TokenTable::new(Some("no such token")).with("t-dave", "dave");
        for i in 0..n {
            tokens = tokens.with(&format!("t{i}"), &format!("p{i}"));
            roles = roles.grant(&format!("p{i}"), "operator");
        }
        H::build(tokens, roles)
    }

    fn build(tokens: TokenTable, roles: RoleTable) -> H {
        let mut program = parse_program("desk.hl", DESK).unwrap();
        let spec = HubSpec::from_program(&program, "fills").unwrap();
        // The witness's hub rows over datagrams.
        program.hubs[0].literal.kind = TransportKind::Udp;
        let describer = ExposureDescriber::new(&program, "fills", Some("127.0.0.1:9001")).unwrap();
        let roles = Arc::new(Mutex::new(roles));
        H {
            hub: Hub::new(
                spec,
                Some(Box::new(tokens)),
                Box::new(Shared(roles.clone())),
                Box::new(describer),
            ),
            now: 10,
            roles,
        }
    }

    fn send(&mut self, from: u16, datagram: &Value) {
        let wall = WALL0 + self.now - 10;
        self.hub
            .handle_datagram(self.now, wall, from, datagram.to_string().as_bytes());
    }

    fn sent(&mut self) -> Vec<(u16, Value)> {
        let mut sent = Vec::new();
        while let Some((to, d)) = self.hub.pending_transmit(self.now) {
            sent.push((*to, serde_json::from_slice(d).unwrap()));
            let n = d.len();
            self.hub.consume_transmit(self.now, n);
        }
        sent
    }
}

fn subscribe(id: Value, token: Option<&str>) -> Value {
    let mut d = json!({"type": "subscribe", "topic": "Fills", "id": id});
    if let Some(t) = token {
        d["token"] = json!(t);
    }
    d
}

fn fill(order: i64) -> String {
    json!({"order": order, "qty": 1, "price": 2}).to_string()
}

fn event(id: Value, seq: u64, order: i64) -> Value {
    json!({"type": "event", "id": id, "topic": "Fills", "seq": seq,
           "payload": {"order": order, "qty": 1, "price": 2}})
}

#[test]
fn subscribers_are_address_and_id_and_the_id_is_echoed_raw() {
    let mut h = H::new();
    h.send(1, &subscribe(json!("a"), Some("t-dave")));
    h.send(1, &subscribe(json!(7), Some("t-dave")));
    h.send(2, &subscribe(json!("a"), Some("t-dave")));
    assert_eq!(
        h.sent(),
        [
            (
                1,
                json!({"type": "subscribed", "id": "a", "topic": "Fills"})
            ),
            (1, json!({"type": "subscribed", "id": 7, "topic": "Fills"})),
            (
                2,
                json!({"type": "subscribed", "id": "a", "topic": "Fills"})
            ),
        ]
    );
    assert_eq!(h.hub.subscribers(), 3);
    assert_eq!(
        h.hub.publish(h.now, "Fills", &fill(41)),
        Published::Offered(3)
    );
    assert_eq!(
        h.sent(),
        [
            (1, event(json!("a"), 1, 41)),
            (1, event(json!(7), 1, 41)),
            (2, event(json!("a"), 1, 41)),
        ]
    );
    // Subscribed again: nothing changes.
    h.send(1, &subscribe(json!(7), Some("t-dave")));
    h.hub.publish(h.now, "Fills", &fill(42));
    let sent = h.sent();
    assert_eq!(
        sent[0],
        (1, json!({"type": "subscribed", "id": 7, "topic": "Fills"}))
    );
    assert!(sent.contains(&(1, event(json!(7), 2, 42))));
}

#[test]
fn each_refusal_carries_the_id_or_null() {
    let mut h = H::new();
    // Every refusal answered, whatever its size: the defaults answer a
    // source nothing vouches for within a slack (below).
    let limits = Limits {
        unverified_slack: 1 << 10,
        garbage_slack: 1 << 10,
        ..Limits::default()
    };
    h.hub = h.hub.with_limits(limits);
    h.send(1, &subscribe(json!(1), None));
    h.send(1, &subscribe(json!(2), Some("t-nope")));
    h.send(1, &subscribe(json!(3), Some("t-bob")));
    h.send(
        1,
        &json!({"type": "subscribe", "topic": "Quotes", "id": 4, "token": "t-dave"}),
    );
    h.send(1, &json!({"type": "subscribe", "id": 5, "token": "t-dave"}));
    h.send(
        1,
        &json!({"type": "subscribe", "topic": "Fills", "token": "t-dave"}),
    );
    h.hub.handle_datagram(h.now, WALL0, 1, b"not json");
    let refusal = |id: Value, topic: Value, kind: &str, reason: &str| {
        (
            1,
            json!({"type": "refusal", "id": id, "topic": topic,
                   "refusal": {"kind": kind, "reason": reason}}),
        )
    };
    assert_eq!(
        h.sent(),
        [
            refusal(
                json!(1),
                json!("Fills"),
                "unauthenticated",
                "the sources name nobody"
            ),
            refusal(json!(2), json!("Fills"), "unauthenticated", "no such token"),
            (
                1,
                json!({"type": "refusal", "id": 3, "topic": "Fills",
                       "refusal": {"kind": "unauthorized", "reason": "Fills requires operator",
                                   "requires": ["operator"]}})
            ),
            refusal(
                json!(4),
                json!("Quotes"),
                "malformed",
                "unknown_topic: Quotes"
            ),
            refusal(
                json!(5),
                Value::Null,
                "malformed",
                "a subscribe names its topic as a string"
            ),
            refusal(
                Value::Null,
                json!("Fills"),
                "malformed",
                "a datagram names its subscriber's id, a string or a number"
            ),
            refusal(
                Value::Null,
                Value::Null,
                "malformed",
                "not a frame: a datagram is one JSON object naming its type"
            ),
        ]
    );
}

#[test]
fn unsubscribe_frees_the_id_and_seq_starts_again() {
    let mut h = H::new();
    h.send(1, &subscribe(json!("s"), Some("t-dave")));
    h.hub.publish(h.now, "Fills", &fill(1));
    h.hub.publish(h.now, "Fills", &fill(2));
    h.sent();
    h.send(1, &json!({"type": "unsubscribe", "id": "s"}));
    assert_eq!(h.hub.subscribers(), 0);
    assert_eq!(
        h.hub.publish(h.now, "Fills", &fill(3)),
        Published::Offered(0)
    );
    h.send(1, &subscribe(json!("s"), Some("t-dave")));
    h.hub.publish(h.now, "Fills", &fill(4));
    assert_eq!(
        h.sent(),
        [
            (
                1,
                json!({"type": "subscribed", "id": "s", "topic": "Fills"})
            ),
            (1, event(json!("s"), 1, 4)),
        ]
    );
}

#[test]
fn describe_answers_the_callers_document_or_null_and_the_refusal() {
    let Ok(want) = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/hale-witness/fills.dave.description.json"
    )) else {
        eprintln!("skipping: the witness fixtures are absent");
        return;
    };
    let mut h = H::new();
    h.send(
        3,
        &json!({"type": "describe", "id": "d", "token": "t-dave"}),
    );
    h.send(3, &json!({"type": "describe", "id": "e"}));
    let sent = h.sent();
    let doc = &sent[0].1["document"];
    // The witness's document for dave, over datagrams: its streams and
    // schemas as the ws hub's, its listener and outcome form udp's.
    let want: Value = serde_json::from_str(&want).unwrap();
    assert_eq!(doc["streams"][0]["topic"], want["streams"][0]["topic"]);
    assert_eq!(doc["schemas"], want["schemas"]);
    assert_eq!(doc["caller"], want["caller"]);
    assert_eq!(
        doc["listener"],
        json!({"transport": "udp", "address": "127.0.0.1:9001"})
    );
    assert_eq!(doc["outcomes"]["transport"], "udp");
    // A subscribe past a cap is refused `full`, so the form states it.
    assert!(doc["outcomes"]["refusal"]["kinds"]
        .as_array()
        .unwrap()
        .contains(&json!("full")));
    assert_eq!(
        sent[1],
        (
            3,
            json!({"type": "description", "id": "e", "document": null,
                   "refusal": {"kind": "unauthenticated", "reason": "the sources name nobody"}})
        )
    );
}

#[test]
fn expiry_and_revocation_each_end_a_subscription_with_one_datagram() {
    let mut h = H::new();
    h.send(1, &subscribe(json!("x"), Some("t-eve")));
    h.send(2, &subscribe(json!("y"), Some("t-dave")));
    h.sent();
    assert_eq!(h.hub.poll_timeout(), Some(h.now + 2 * SECOND));
    h.hub.publish(h.now, "Fills", &fill(1));
    // Queued, not yet taken: dropped at the expiry.
    h.now += 2 * SECOND;
    h.hub.handle_timeout(h.now);
    let sent = h.sent();
    assert!(sent.contains(&(
        1,
        json!({"type": "unauthorized", "id": "x", "topic": "Fills", "reason": "expired"})
    )));
    assert!(!sent.contains(&(1, event(json!("x"), 1, 1))));
    assert!(sent.contains(&(2, event(json!("y"), 1, 1))));
    h.roles.lock().unwrap().revoke("dave", "operator");
    h.hub.announce(h.now, 1);
    assert_eq!(
        h.sent(),
        [(
            2,
            json!({"type": "unauthorized", "id": "y", "topic": "Fills", "reason": "revoked"})
        )]
    );
    assert_eq!(h.hub.subscribers(), 0);
}

#[test]
fn a_datagram_the_socket_would_not_take_stays_next_and_leaves_with_its_subscription() {
    let mut h = H::new();
    h.send(1, &subscribe(json!("s"), Some("t-dave")));
    h.sent();
    h.hub.publish(h.now, "Fills", &fill(1));
    h.hub.publish(h.now, "Fills", &fill(2));
    // Offered twice (the socket would block), still the first event.
    for _ in 0..2 {
        let (to, d) = h.hub.pending_transmit(h.now).unwrap();
        assert_eq!(
            (*to, serde_json::from_slice::<Value>(d).unwrap()),
            (1, event(json!("s"), 1, 1))
        );
    }
    // Unsubscribed before the socket took it: nothing of it is sent.
    h.send(1, &json!({"type": "unsubscribe", "id": "s"}));
    assert_eq!(h.sent(), []);
}

#[test]
fn a_socket_that_takes_nothing_holds_the_rows_bound_and_stop_sends_closed_after_it() {
    let mut h = H::new();
    h.send(1, &subscribe(json!(1), Some("t-dave")));
    h.sent();
    for order in 1..=100 {
        h.hub.publish(h.now, "Fills", &fill(order));
    }
    h.hub.stop(h.now);
    h.send(1, &subscribe(json!(2), Some("t-dave")));
    let sent = h.sent();
    // The row's bound (64, drop_old): the newest 64, then closed.
    let seqs: Vec<u64> = sent
        .iter()
        .filter(|(_, d)| d["type"] == "event")
        .map(|(_, d)| d["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (37..=100).collect::<Vec<u64>>());
    // A subscribe after stop() is refused, in the order offered, before
    // closed.
    assert_eq!(sent[sent.len() - 2].1["refusal"]["kind"], "shutting_down");
    assert_eq!(
        sent.last().unwrap(),
        &(
            1,
            json!({"type": "closed", "id": 1, "reason": "shutting_down"})
        )
    );
    assert!(h.hub.is_finished());
}

// Issue #26: what one source can make the hub do. The figures below are
// the defaults of `udp::Limits`; `the_defaults_are_the_ones_held_here`
// ties them to it.

/// The most subscribers a hub holds.
const MAX_SUBSCRIBERS: usize = 16_384;
/// The most one address (its host) holds.
const PER_HOST: usize = 256;
/// The most one caller (the principal its token names) holds.
const PER_CALLER: usize = 256;
/// The answers waiting for the socket.
const MAX_ANSWERS: usize = 1024;

impl H {
    /// Offers every pending datagram to a socket that takes them all:
    /// how many, and their bytes.
    fn drain(&mut self) -> (usize, usize) {
        let (mut n, mut bytes) = (0, 0);
        while let Some((_, d)) = self.hub.pending_transmit(self.now) {
            n += 1;
            bytes += d.len();
            let n = d.len();
            self.hub.consume_transmit(self.now, n);
        }
        (n, bytes)
    }

    /// `n` subscribers, each from an address and a caller of its own.
    fn subscribe_many(&mut self, n: usize) {
        for i in 0..n {
            let from = u16::try_from(i + 100).unwrap();
            self.send(from, &subscribe(json!(1), Some(&format!("t{i}"))));
            self.drain();
        }
    }
}

#[test]
fn a_publish_to_n_subscribers_costs_work_linear_in_n() {
    for n in [500, 2000] {
        let mut h = H::many(n);
        h.subscribe_many(n);
        assert_eq!(h.hub.subscribers(), n);
        let before = h.hub.steps();
        assert_eq!(
            h.hub.publish(h.now, "Fills", &fill(1)),
            Published::Offered(n)
        );
        // Each subscriber's event, to a socket that takes them all.
        assert_eq!(h.drain().0, n);
        let publish = h.hub.steps() - before;
        assert!(
            publish <= 16 * n as u64,
            "one publish to {n} subscribers took {publish} steps"
        );
        // stop(): one closed each, also linear.
        let before = h.hub.steps();
        h.hub.stop(h.now);
        assert_eq!(h.drain().0, n);
        assert!(h.hub.is_finished());
        let stop = h.hub.steps() - before;
        assert!(
            stop <= 16 * n as u64,
            "stop() of {n} subscribers took {stop} steps"
        );
    }
}

#[test]
fn the_hub_holds_at_most_its_cap_of_subscribers() {
    let n = MAX_SUBSCRIBERS + 10;
    let mut h = H::many(n);
    h.subscribe_many(n);
    assert_eq!(h.hub.subscribers(), MAX_SUBSCRIBERS);
    // One of those past the cap is refused `full`, naming the limit.
    h.now += 100 * SECOND;
    h.send(9, &subscribe(json!(1), Some(&format!("t{}", n - 1))));
    let sent = h.sent();
    assert_eq!(sent[0].1["refusal"]["kind"], "full", "{sent:?}");
    assert!(sent[0].1["refusal"]["reason"]
        .as_str()
        .unwrap()
        .contains(&MAX_SUBSCRIBERS.to_string()));
    // An unsubscribe frees a place.
    h.send(100, &json!({"type": "unsubscribe", "id": 1}));
    h.send(9, &subscribe(json!(1), Some(&format!("t{}", n - 1))));
    assert_eq!(h.sent()[0].1["type"], "subscribed");
    assert_eq!(h.hub.subscribers(), MAX_SUBSCRIBERS);
}

#[test]
fn one_address_holds_at_most_its_cap_of_subscribers() {
    let n = PER_HOST + 10;
    let mut h = H::many(n);
    for i in 0..n {
        h.send(1, &subscribe(json!(i), Some(&format!("t{i}"))));
        h.drain();
    }
    assert_eq!(h.hub.subscribers(), PER_HOST);
    // Another address is not held back by it.
    h.send(2, &subscribe(json!(1), Some("t-dave")));
    assert_eq!(h.hub.subscribers(), PER_HOST + 1);
}

#[test]
fn one_caller_holds_at_most_its_cap_of_subscribers() {
    // A spoofed subscribe can point a caller's events at any address: one
    // credential reaches at most this many subscribers.
    let mut h = H::new();
    for from in 0..u16::try_from(PER_CALLER + 10).unwrap() {
        h.send(from, &subscribe(json!(1), Some("t-dave")));
        h.drain();
    }
    assert_eq!(h.hub.subscribers(), PER_CALLER);
    // Subscribed again: answered, and nothing changes.
    h.now += 100 * SECOND;
    h.send(0, &subscribe(json!(1), Some("t-dave")));
    assert_eq!(h.sent()[0].1["type"], "subscribed");
}

#[test]
fn garbage_is_never_answered_with_more_than_it_sent() {
    let mut h = H::new();
    let (mut sent, mut answered) = (0, 0);
    for (i, garbage) in [&b"x"[..], b"\0", b"not json", b"[1,2]", b"{", b"\"hello\""]
        .iter()
        .enumerate()
    {
        for from in 0..50u16 {
            h.now += SECOND;
            h.hub
                .handle_datagram(h.now, WALL0, from + 100 * i as u16, garbage);
            sent += garbage.len();
            answered += h.drain().1;
        }
    }
    assert!(
        answered <= sent,
        "{answered} bytes answered to {sent} of garbage"
    );
}

#[test]
fn a_frame_from_a_source_nobody_vouches_for_is_answered_within_its_slack() {
    // No token, a token the source refuses, no id: the hub cannot know
    // the source is who it says, so its answer may exceed the datagram by
    // the slack alone.
    let mut h = H::new();
    for d in [
        json!({"type": "subscribe", "id": 1}),
        json!({"type": "subscribe", "topic": "Fills", "id": 2}),
        json!({"type": "subscribe", "topic": "Fills", "id": 3, "token": "no"}),
        json!({"type": "describe", "id": 4}),
        json!({"type": "x", "id": 5}),
        json!({"type": "subscribe"}),
        json!({}),
    ] {
        h.now += SECOND;
        let len = d.to_string().len();
        h.send(7, &d);
        let (_, bytes) = h.drain();
        assert!(bytes <= len + 96, "{bytes} bytes answered to {d}");
    }
}

#[test]
fn answers_to_one_source_are_rate_limited() {
    // A flood of well-formed frames from one (perhaps forged) source.
    let mut h = H::new();
    let mut answered = 0;
    for i in 0..10_000 {
        h.now += 100_000; // 10,000 in one second
        h.send(7, &subscribe(json!(i), None));
        answered += h.drain().1;
    }
    // At most the burst and a second's refill.
    assert!(
        answered <= 16 * 1024 + 4 * 1024,
        "{answered} bytes to one source in 1 s"
    );
    // Another source is answered meanwhile, and the first again later.
    h.send(8, &subscribe(json!(1), Some("t-dave")));
    assert_eq!(h.sent().len(), 1);
    h.now += 10 * SECOND;
    h.send(7, &subscribe(json!(1), Some("t-dave")));
    assert_eq!(h.sent().len(), 1);
}

#[test]
fn the_answers_waiting_for_the_socket_never_pass_their_bound() {
    // The socket takes nothing while every (distinct) source describes.
    let mut h = H::new();
    for from in 0..10_000u16 {
        h.send(
            from,
            &json!({"type": "describe", "id": 1, "token": "t-dave"}),
        );
        h.send(from, &subscribe(json!(1), None));
    }
    let (n, _) = h.drain();
    assert!(n <= MAX_ANSWERS, "{n} answers were queued");
}

#[test]
fn the_defaults_are_the_ones_held_here() {
    let l = Limits::default();
    assert_eq!(
        (
            l.max_subscribers,
            l.max_per_host,
            l.max_per_caller,
            l.max_answers
        ),
        (MAX_SUBSCRIBERS, PER_HOST, PER_CALLER, MAX_ANSWERS)
    );
    assert_eq!(
        (l.answer_burst, l.answer_rate, l.unverified_slack),
        (16 * 1024, 4 * 1024, 96)
    );
    assert_eq!(l.garbage_slack, 0);
}

#[test]
fn the_answer_queue_holds_its_bytes_bound_too() {
    let mut h = H::new();
    let limits = Limits {
        max_answer_bytes: 8 * 1024,
        ..Limits::default()
    };
    h.hub = h.hub.with_limits(limits);
    for from in 0..100u16 {
        h.send(
            from,
            &json!({"type": "describe", "id": 1, "token": "t-dave"}),
        );
        assert!(h.hub.answers_queued() <= limits.max_answers);
    }
    let (n, bytes) = h.drain();
    assert!(bytes <= limits.max_answer_bytes, "{bytes} bytes queued");
    assert!(n > 0 && h.hub.answers_dropped() == 100 - n as u64);
}
