//! § Rpcs on a hub, through `ws::Hub` and an `Exposure` wired together as
//! a driver wires them: a `call` frame framed for the exposure under the
//! credential presented at the upgrade, admission as for any transport,
//! the `reply` frame with the Unix reply's fields and the client's id
//! echoed raw, replies and events sharing the connection in the order
//! written, and a lost connection told to the exposure.

use limen_core::hale::runtime::*;
use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use limen_core::wire::ws::{ConnId, Hub, HubEvent, HubLimits, HubSpec, OnFull, StreamSpec};
use limen_core::SECOND;
use serde_json::{json, Value};

const DIGEST: &str = "fnv1a64:00000000000000aa";
const WALL: u64 = 1_800_000_000 * SECOND;

struct Doc;
impl Describer for Doc {
    fn describe(&self, caller: &Principal, _: &[String], _: &[usize]) -> Vec<u8> {
        json!({"caller": &*caller.name}).to_string().into_bytes()
    }
}

struct Any;
impl PayloadCodec for Any {
    fn decode(&self, _: usize, payload: &[u8]) -> Result<Value, String> {
        serde_json::from_slice(payload).map_err(|_| "wrong_type: payload".to_owned())
    }
}

struct Wired {
    hub: Hub,
    exposure: Exposure,
    readers: Vec<ServerReader>,
    lost: Vec<ConnId>,
}

fn tokens() -> TokenTable {
    TokenTable::new(None)
        .with("t-dave", "dave")
        .with("t-bob", "bob")
}

fn roles() -> RoleTable {
    RoleTable::new().grant("dave", "operator")
}

impl Wired {
    fn new() -> Wired {
        let spec = HubSpec::new(
            "desk",
            vec![StreamSpec {
                topic: "Fills".into(),
                bound: 8,
                on_full: OnFull::DropOld,
                requires: vec!["operator".into()],
            }],
            RoleHierarchy::flat(),
            HubLimits::default(),
        )
        .unwrap();
        let mut hub = Hub::new(
            spec,
            Some(Box::new(tokens())),
            Box::new(roles()),
            Box::new(Doc),
        );
        hub.serve_calls();
        let exposure_spec = ExposureSpec {
            name: "desk".into(),
            surface: "Public".into(),
            digest: DIGEST.into(),
            via: "ws".into(),
            members: vec![MemberSpec {
                name: "Orders::place".into(),
                receiver: 0,
                requires: vec!["operator".into()],
            }],
            receivers: vec!["self.orders".into()],
            bound: 8,
            hierarchy: RoleHierarchy::flat(),
            limits: ExposureLimits::default(),
        };
        let mut exposure = Exposure::new(
            exposure_spec,
            Some(Box::new(tokens())),
            Box::new(roles()),
            Box::new(Any),
            Box::new(Doc),
        );
        exposure.receiver_born(0, 1);
        Wired {
            hub,
            exposure,
            readers: (0..3).map(|_| ServerReader::default()).collect(),
            lost: Vec::new(),
        }
    }

    /// Runs the wiring until nothing moves: the hub's calls to the
    /// exposure, its dispatches answered by `answer`, its deliveries back.
    fn settle(&mut self, answer: &dyn Fn(&Value) -> Completion) {
        loop {
            let mut moved = false;
            while let Some(event) = self.hub.poll_event() {
                match event {
                    HubEvent::Call(r) => {
                        moved = true;
                        self.exposure.handle_request(1, WALL, *r);
                    }
                    HubEvent::Lost(c) => {
                        moved = true;
                        self.lost.push(c);
                        self.exposure.connection_lost(c);
                    }
                    HubEvent::Output(_) | HubEvent::Close(_) => {}
                }
            }
            while let Some(e) = self.exposure.poll_event() {
                moved = true;
                match e {
                    Event::Deliver(d) => self.hub.deliver(1, d),
                    Event::Dispatch(d) => {
                        let payload: Value = d.payload.clone();
                        self.exposure
                            .handle_completion(d.request_id, answer(&payload));
                    }
                    Event::Ask(r) => self.exposure.receiver_born(r, 1),
                    _ => {}
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn connect(&mut self, id: ConnId, token: Option<&str>) {
        self.hub.handle_accept(1, id);
        let key = client::key([1; 16]);
        self.hub
            .handle_data(1, WALL, id, &client::upgrade_request("h", "/", &key, token));
        let head = self.hub.pending_output(id).to_vec();
        assert_eq!(client::upgrade_answer(&head, &key), Ok(Some(head.len())));
        self.hub.consume_output(1, id, head.len());
    }

    fn send(&mut self, id: ConnId, frame: &str) {
        self.hub
            .handle_data(1, WALL, id, &client::text(frame, [5, 6, 7, 8]));
    }

    fn read(&mut self, id: ConnId) -> Vec<Value> {
        loop {
            let out = self.hub.pending_output(id).to_vec();
            if out.is_empty() {
                break;
            }
            self.hub.consume_output(1, id, out.len());
            self.readers[id as usize].handle_data(&out);
        }
        let mut frames = Vec::new();
        while let Some(f) = self.readers[id as usize].poll_frame().unwrap() {
            if let ServerFrame::Text(t) = f {
                frames.push(serde_json::from_str(&t).unwrap());
            }
        }
        frames
    }
}

fn receipt(payload: &Value) -> Completion {
    Completion::Returned(
        json!({"order": 41, "qty": payload["qty"]})
            .to_string()
            .into_bytes(),
    )
}

#[test]
fn a_call_is_answered_by_a_reply_with_the_unix_replys_fields() {
    let mut w = Wired::new();
    w.connect(0, Some("t-dave"));
    w.send(0, r#"{"type": "call", "id": "c1", "call": "Orders::place", "payload": {"qty": 10}, "digest": "fnv1a64:00000000000000aa"}"#);
    w.send(
        0,
        r#"{"type": "call", "id": 7, "call": "Orders::place", "payload": {"qty": 1}}"#,
    );
    w.settle(&receipt);
    let dave = json!({"mode": "bearer", "name": "dave"});
    assert_eq!(
        w.read(0),
        [
            json!({"type": "reply", "request_id": 1, "id": "c1", "ok": true,
                   "value": {"order": 41, "qty": 10}, "caller": dave}),
            json!({"type": "reply", "request_id": 2, "id": 7, "ok": true,
                   "value": {"order": 41, "qty": 1}, "caller": dave}),
        ]
    );
}

#[test]
fn admission_runs_as_for_any_transport_under_the_upgrades_credential() {
    let mut w = Wired::new();
    w.connect(0, None);
    w.connect(1, Some("t-bob"));
    w.connect(2, Some("t-dave"));
    w.send(
        0,
        r#"{"type": "call", "id": 1, "call": "Orders::place", "payload": {}}"#,
    );
    w.send(
        1,
        r#"{"type": "call", "id": 2, "call": "Orders::place", "payload": {}}"#,
    );
    w.send(2, r#"{"type": "call", "id": 3, "call": "Orders::place", "payload": {}, "digest": "fnv1a64:0000000000000000"}"#);
    w.send(
        2,
        r#"{"type": "call", "id": 4, "call": "Orders::nope", "payload": {}}"#,
    );
    w.send(2, r#"{"type": "call", "id": 5}"#);
    w.settle(&receipt);
    let kind = |f: &Value| f["refusal"]["kind"].as_str().unwrap().to_owned();
    assert_eq!(kind(&w.read(0)[0]), "unauthenticated");
    let bob = w.read(1);
    assert_eq!(kind(&bob[0]), "unauthorized");
    assert_eq!(bob[0]["caller"]["name"], "bob");
    let dave = w.read(2);
    let kinds: Vec<String> = dave.iter().map(kind).collect();
    assert_eq!(kinds, ["digest_mismatch", "malformed", "malformed"]);
    assert_eq!(dave[0]["refusal"]["served"], DIGEST);
    assert!(dave
        .iter()
        .all(|f| f["type"] == "reply" && f["ok"] == false));
}

#[test]
fn replies_and_events_share_the_connection_in_the_order_written() {
    let mut w = Wired::new();
    w.connect(0, Some("t-dave"));
    w.send(0, r#"{"type": "subscribe", "topic": "Fills"}"#);
    w.hub.publish(1, "Fills", "{\"n\":1}");
    w.send(
        0,
        r#"{"type": "call", "id": "c", "call": "Orders::place", "payload": {"qty": 2}}"#,
    );
    w.settle(&receipt);
    w.hub.publish(1, "Fills", "{\"n\":2}");
    let types: Vec<(String, Value)> = w
        .read(0)
        .iter()
        .map(|f| (f["type"].as_str().unwrap().to_owned(), f["seq"].clone()))
        .collect();
    assert_eq!(
        types,
        [
            ("subscribed".to_owned(), Value::Null),
            ("event".to_owned(), json!(1)),
            ("reply".to_owned(), Value::Null),
            ("event".to_owned(), json!(2)),
        ]
    );
}

#[test]
fn a_connection_that_ends_is_lost_to_the_exposure_and_a_hub_without_a_surface_refuses_calls() {
    let mut w = Wired::new();
    w.connect(0, Some("t-dave"));
    w.send(
        0,
        r#"{"type": "call", "id": "c", "call": "Orders::place", "payload": {}}"#,
    );
    w.hub.handle_eof(1, 0);
    w.settle(&receipt);
    assert_eq!(w.lost, [0]);

    let spec = HubSpec::new("h", vec![], RoleHierarchy::flat(), HubLimits::default()).unwrap();
    let mut hub = Hub::new(
        spec,
        Some(Box::new(tokens())),
        Box::new(roles()),
        Box::new(Doc),
    );
    hub.handle_accept(1, 0);
    let key = client::key([2; 16]);
    hub.handle_data(
        1,
        WALL,
        0,
        &client::upgrade_request("h", "/", &key, Some("t-dave")),
    );
    let head = hub.pending_output(0).len();
    hub.consume_output(1, 0, head);
    hub.handle_data(
        1,
        WALL,
        0,
        &client::text(r#"{"type":"call","call":"X::y"}"#, [0; 4]),
    );
    // No call is framed for an exposure the hub does not serve.
    while let Some(e) = hub.poll_event() {
        assert_eq!(e, HubEvent::Output(0));
    }
    let mut reader = ServerReader::default();
    reader.handle_data(hub.pending_output(0));
    let Some(ServerFrame::Text(t)) = reader.poll_frame().unwrap() else {
        panic!("a frame")
    };
    let frame: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(frame["refusal"]["kind"], "malformed");
    assert_eq!(frame["topic"], Value::Null);
}
