//! `ws::Hub` under random schedules: publishes, partial reads, subscribes,
//! revocations announced or found at a delivery, time passing past a
//! credential's expiry and past stalled writes, and `stop()`. Whatever the
//! schedule, the frames each client reads keep § Streams' promises: seq
//! grows strictly per subscription, no queue holds more than its bound,
//! nothing of a subscription arrives after its `unauthorized` frame,
//! nothing after `closed`, and a drop_old subscription read to the end
//! has seen its last seq equal the events offered to it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::parse_program;
use limen_core::hale::runtime::{
    Grants, Principal, RoleHierarchy, RoleSource, RoleTable, TokenTable,
};
use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use limen_core::wire::ws::{ConnId, Hub, HubEvent, HubLimits, HubSpec, OnFull, StreamSpec};
use limen_core::{Timestamp, SECOND};
use proptest::prelude::*;
use serde_json::Value;

const DESK: &str = include_str!("../../conformance/programs/desk.hl");
const WALL0: Timestamp = 1_800_000_000 * SECOND;
const BOUND: usize = 3;
const TOPICS: [&str; 2] = ["Old", "New"];
const TOKENS: [&str; 3] = ["t-dave", "t-erin", "t-eve"];

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

#[derive(Clone, Debug)]
enum Op {
    Publish(usize),
    Read(usize, usize),
    Subscribe(usize, usize),
    Revoke(usize, bool),
    Grant(usize),
    Wait(u64),
    Stop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize).prop_map(Op::Publish),
        6 => (0..3usize, 0..120usize).prop_map(|(c, n)| Op::Read(c, n)),
        2 => (0..3usize, 0..2usize).prop_map(|(c, t)| Op::Subscribe(c, t)),
        1 => (0..3usize, any::<bool>()).prop_map(|(c, a)| Op::Revoke(c, a)),
        1 => (0..3usize).prop_map(Op::Grant),
        1 => (0..3000u64).prop_map(Op::Wait),
        1 => Just(Op::Stop),
    ]
}

#[derive(Default)]
struct Client {
    reader: ServerReader,
    /// Per topic: subscribed (an event may come), the last seq read.
    live: BTreeMap<String, bool>,
    last: BTreeMap<String, u64>,
    closed: bool,
    gone: bool,
}

fn principal(i: usize) -> &'static str {
    ["dave", "erin", "eve"][i]
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let roles = Arc::new(Mutex::new(RoleTable::new()));
    for p in ["dave", "erin", "eve"] {
        roles.lock().unwrap().add_grant(p, "operator");
    }
    let streams = TOPICS
        .iter()
        .zip([OnFull::DropOld, OnFull::DropNew])
        .map(|(t, on_full)| StreamSpec {
            topic: t.to_string(),
            bound: BOUND,
            on_full,
            requires: vec!["operator".into()],
        })
        .collect();
    let spec = HubSpec::new("h", streams, RoleHierarchy::flat(), HubLimits::default()).unwrap();
    let program = parse_program("desk.hl", DESK).unwrap();
    let describer = ExposureDescriber::new(&program, "fills", None).unwrap();
    let tokens = TokenTable::new(None)
        .with("t-dave", "dave")
        .with("t-erin", "erin")
        .with_expiry("t-eve", "eve", WALL0 + 4 * SECOND);
    let mut hub = Hub::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(Shared(roles.clone())),
        Box::new(describer),
    );
    let mut now: Timestamp = 1;
    let mut clients: Vec<Client> = (0..3).map(|_| Client::default()).collect();
    let mut offered: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (i, token) in TOKENS.iter().enumerate() {
        let id = i as ConnId;
        hub.handle_accept(now, id);
        let key = client::key([i as u8; 16]);
        hub.handle_data(
            now,
            WALL0,
            id,
            &client::upgrade_request("h", "/", &key, Some(token)),
        );
        let head = hub.pending_output(id).to_vec();
        prop_assert_eq!(client::upgrade_answer(&head, &key), Ok(Some(head.len())));
        hub.consume_output(now, id, head.len());
    }
    let read = |hub: &mut Hub, clients: &mut Vec<Client>, c: usize, n: usize, now| {
        let out = hub.pending_output(c as ConnId);
        let n = n.min(out.len());
        let bytes = out[..n].to_vec();
        hub.consume_output(now, c as ConnId, n);
        clients[c].reader.handle_data(&bytes);
    };
    let check = |clients: &mut Vec<Client>| -> Result<(), TestCaseError> {
        for cl in clients.iter_mut() {
            while let Some(frame) = cl.reader.poll_frame().map_err(TestCaseError::fail)? {
                let ServerFrame::Text(text) = frame else {
                    continue;
                };
                prop_assert!(!cl.closed, "a frame after closed: {}", text);
                let v: Value = serde_json::from_str(&text).unwrap();
                let topic = v["topic"].as_str().unwrap_or("").to_owned();
                match v["type"].as_str().unwrap() {
                    "subscribed" => {
                        // A new subscription numbers its events from 1; a
                        // repeated subscribe changes nothing.
                        if cl.live.get(&topic) != Some(&true) {
                            cl.last.insert(topic.clone(), 0);
                        }
                        cl.live.insert(topic, true);
                    }
                    "event" => {
                        prop_assert!(
                            cl.live.get(&topic) == Some(&true),
                            "an event unsubscribed: {}",
                            text
                        );
                        let seq = v["seq"].as_u64().unwrap();
                        let last = cl.last.entry(topic).or_insert(0);
                        prop_assert!(seq > *last, "seq {} after {}", seq, last);
                        *last = seq;
                    }
                    "unauthorized" => {
                        cl.live.insert(topic, false);
                    }
                    "closed" => cl.closed = true,
                    _ => {}
                }
            }
        }
        Ok(())
    };
    for op in ops {
        let before: Vec<Vec<bool>> = (0..3)
            .map(|c| TOPICS.iter().map(|t| hub.queued(c, t).is_some()).collect())
            .collect();
        match op {
            Op::Publish(t) => {
                hub.publish(now, TOPICS[*t], "{\"n\":1}");
                for (c, subs) in before.iter().enumerate() {
                    if subs[*t] && !hub.is_stopped() {
                        *offered.entry((c, *t)).or_insert(0) += 1;
                    }
                }
            }
            Op::Read(c, n) => read(&mut hub, &mut clients, *c, *n, now),
            Op::Subscribe(c, t) => {
                let frame = format!("{{\"type\":\"subscribe\",\"topic\":\"{}\"}}", TOPICS[*t]);
                hub.handle_data(
                    now,
                    WALL0 + now,
                    *c as ConnId,
                    &client::text(&frame, [1, 2, 3, 4]),
                );
                if !before[*c][*t] && hub.queued(*c as ConnId, TOPICS[*t]).is_some() {
                    offered.insert((*c, *t), 0);
                }
            }
            Op::Revoke(c, announce) => {
                roles.lock().unwrap().revoke(principal(*c), "operator");
                if *announce {
                    hub.announce(now, 0);
                }
            }
            Op::Grant(c) => roles.lock().unwrap().add_grant(principal(*c), "operator"),
            Op::Wait(ms) => {
                now += ms * 1_000_000;
                hub.handle_timeout(now);
            }
            Op::Stop => hub.stop(now),
        }
        while let Some(e) = hub.poll_event() {
            if let HubEvent::Close(id) = e {
                clients[id as usize].gone = true;
            }
        }
        for (c, _) in TOKENS.iter().enumerate() {
            for t in TOPICS {
                if let Some(q) = hub.queued(c as ConnId, t) {
                    prop_assert!(q <= BOUND, "{} frames queued", q);
                }
            }
        }
        check(&mut clients)?;
    }
    // Read everything: a drop_old subscription still live has read the
    // last event offered to it.
    for c in 0..3 {
        read(&mut hub, &mut clients, c, usize::MAX, now);
        while !hub.pending_output(c as ConnId).is_empty() {
            read(&mut hub, &mut clients, c, usize::MAX, now);
        }
    }
    check(&mut clients)?;
    for (c, cl) in clients.iter().enumerate() {
        if hub.queued(c as ConnId, TOPICS[0]).is_some() {
            let want = offered.get(&(c, 0)).copied().unwrap_or(0);
            let got = cl.last.get(TOPICS[0]).copied().unwrap_or(0);
            prop_assert_eq!(got, want, "client {}: the last seq read", c);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn the_frames_keep_the_promises_of_streams_under_any_schedule(ops in prop::collection::vec(op(), 0..80)) {
        run(&ops)?;
    }
}
