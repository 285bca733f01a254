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
use limen_core::wire::udp::Hub;
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
        let mut program = parse_program("desk.hl", DESK).unwrap();
        let spec = HubSpec::from_program(&program, "fills").unwrap();
        // The witness's hub rows over datagrams.
        program.hubs[0].literal.kind = TransportKind::Udp;
        let describer = ExposureDescriber::new(&program, "fills", Some("127.0.0.1:9001")).unwrap();
        let roles = Arc::new(Mutex::new(RoleTable::new().grant("dave", "operator")));
        let tokens = TokenTable::new(Some("no such token"))
            .with("t-dave", "dave")
            .with("t-bob", "bob")
            .with_expiry("t-eve", "dave", WALL0 + 2 * SECOND);
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
            self.hub.consume_transmit();
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
