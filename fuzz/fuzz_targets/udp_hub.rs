//! The datagram hub (`core/src/wire/udp/`) under an `arbitrary`
//! schedule: three source addresses sending subscribes (ids among strings
//! and numbers, with or without a token, one expiring), unsubscribes,
//! describes and any bytes; publishes of any size on a drop_old and a
//! drop_new topic (bound 3); the socket taking some datagrams and
//! blocking on others (offered, not consumed); revocations announced or not, grants, time, `stop()`.
//!
//! Checks, on the datagrams each (address, id) receives: each is a JSON
//! object naming its type and echoing an id (or null); seq grows strictly
//! per subscription (from 1 for a new one); no event outside a
//! subscription (before `subscribed`, after `unauthorized`, `closed` or an
//! unsubscribe); no queue past its bound; `handle_timeout` before the
//! deadline changes nothing.
//!
//! Under small `udp::Limits` (issue #26): never more subscribers than the
//! cap, nor more on one address than its cap; the answers waiting for the
//! socket never past their bound. An answer the hub dropped (its queue
//! full, a host's bucket spent) is a datagram lost, so an event may then
//! arrive without its `subscribed`, as over a network.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::{
    Describer, Grants, Principal, RoleHierarchy, RoleSource, RoleTable, TokenTable,
};
use limen_core::wire::udp::{Hub, Limits};
use limen_core::wire::ws::{HubLimits, HubSpec, OnFull, StreamSpec};
use limen_core::{Timestamp, SECOND};
use serde_json::{json, Value};

const WALL0: Timestamp = 1_800_000_000 * SECOND;
const BOUND: usize = 3;
const TOPICS: [&str; 2] = ["Old", "New"];
const TOKENS: [&str; 4] = ["t-dave", "t-erin", "t-eve", "t-none"];
const NAMES: [&str; 3] = ["dave", "erin", "eve"];
const LIMITS: Limits = Limits {
    max_subscribers: 9,
    max_per_host: 5,
    max_per_caller: 7,
    max_answers: 6,
    max_answer_bytes: 600,
    answer_burst: 2_000,
    answer_rate: 1_000,
    max_hosts: 2,
    unverified_slack: 96,
    garbage_slack: 0,
};

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

struct Doc;

impl Describer for Doc {
    fn describe(&self, caller: &Principal, roles: &[String], _: &[usize]) -> Vec<u8> {
        json!({"caller": &*caller.name, "roles": roles})
            .to_string()
            .into_bytes()
    }
}

#[derive(Arbitrary, Debug)]
enum Step {
    Subscribe {
        from: u8,
        id: u8,
        topic: bool,
        token: Option<u8>,
    },
    Unsubscribe {
        from: u8,
        id: u8,
    },
    Describe {
        from: u8,
        id: u8,
        token: Option<u8>,
    },
    Raw(u8, Vec<u8>),
    Transmit(u8),
    Refuse,
    Publish(bool, u16),
    Revoke(u8, bool),
    Grant(u8),
    Wait(u16),
    Stop,
}

/// Ids among strings and numbers: `"1"` and `1` are two subscribers.
fn id(n: u8) -> Value {
    if n % 2 == 0 {
        json!(n % 6)
    } else {
        json!((n % 6).to_string())
    }
}

#[derive(Default)]
struct Seen {
    live: bool,
    last: u64,
}

fuzz_target!(|steps: Vec<Step>| {
    let roles = Arc::new(Mutex::new(RoleTable::new()));
    for p in NAMES {
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
    let tokens = TokenTable::new(None)
        .with("t-dave", "dave")
        .with("t-erin", "erin")
        .with_expiry("t-eve", "eve", WALL0 + 4 * SECOND);
    let mut hub: Hub<u8> = Hub::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(Shared(roles.clone())),
        Box::new(Doc),
    )
    .with_limits(LIMITS);
    let mut now: Timestamp = 1;
    // Per (address, id's JSON text, topic).
    let mut seen: BTreeMap<(u8, String, String), Seen> = BTreeMap::new();
    let take = |to: u8,
                datagram: &[u8],
                dropped: bool,
                seen: &mut BTreeMap<(u8, String, String), Seen>| {
        let v: Value = serde_json::from_slice(datagram).expect("a datagram is JSON");
        let id = v["id"].to_string();
        assert!(v["id"].is_string() || v["id"].is_number() || v["id"].is_null());
        let kind = v["type"].as_str().expect("a datagram names its type");
        match kind {
            "subscribed" | "event" | "unauthorized" => {
                let topic = v["topic"].as_str().expect("a topic").to_owned();
                let s = seen.entry((to, id, topic)).or_default();
                match kind {
                    "subscribed" => {
                        if !s.live {
                            s.last = 0;
                        }
                        s.live = true;
                    }
                    "event" => {
                        // Its `subscribed` may have been dropped, as the
                        // network may drop it.
                        if !s.live && dropped {
                            s.live = true;
                            s.last = 0;
                        }
                        assert!(s.live, "an event outside a subscription: {v}");
                        let seq = v["seq"].as_u64().expect("a seq");
                        assert!(seq > s.last, "seq {seq} after {}", s.last);
                        s.last = seq;
                    }
                    _ => s.live = false,
                }
            }
            "closed" => {
                for ((a, i, _), s) in seen.iter_mut() {
                    if *a == to && *i == id {
                        s.live = false;
                    }
                }
            }
            "refusal" => assert!(v["refusal"]["kind"].is_string()),
            "description" => assert!(v.get("document").is_some()),
            other => panic!("a datagram of type {other}"),
        }
    };
    for step in &steps {
        match step {
            Step::Subscribe {
                from,
                id: n,
                topic,
                token,
            } => {
                let mut d = json!({"type": "subscribe", "topic": TOPICS[usize::from(!*topic)], "id": id(*n)});
                if let Some(t) = token {
                    d["token"] = json!(TOKENS[usize::from(*t % 4)]);
                }
                hub.handle_datagram(now, WALL0 + now, *from % 3, d.to_string().as_bytes());
            }
            Step::Unsubscribe { from, id: n } => {
                let from = *from % 3;
                let d = json!({"type": "unsubscribe", "id": id(*n)});
                hub.handle_datagram(now, WALL0 + now, from, d.to_string().as_bytes());
                // Whatever was in flight to the id before is the old
                // subscription's; a new one starts from 1.
                for ((a, i, _), s) in seen.iter_mut() {
                    if *a == from && *i == id(*n).to_string() {
                        s.live = false;
                    }
                }
            }
            Step::Describe { from, id: n, token } => {
                let mut d = json!({"type": "describe", "id": id(*n)});
                if let Some(t) = token {
                    d["token"] = json!(TOKENS[usize::from(*t % 4)]);
                }
                hub.handle_datagram(now, WALL0 + now, *from % 3, d.to_string().as_bytes());
            }
            Step::Raw(from, bytes) => hub.handle_datagram(now, WALL0 + now, *from % 3, bytes),
            Step::Transmit(n) => {
                for _ in 0..*n {
                    let Some((to, d)) = hub.pending_transmit(now) else {
                        break;
                    };
                    let (to, d) = (*to, d.to_vec());
                    hub.consume_transmit(now, d.len());
                    take(to, &d, hub.answers_dropped() > 0, &mut seen);
                }
            }
            // The socket would block: the datagram is offered, not taken.
            Step::Refuse => {
                let _ = hub.pending_transmit(now);
            }
            Step::Publish(old, len) => {
                let payload = format!("\"{}\"", "x".repeat(usize::from(*len)));
                hub.publish(now, TOPICS[usize::from(!*old)], &payload);
            }
            Step::Revoke(c, announce) => {
                roles
                    .lock()
                    .unwrap()
                    .revoke(NAMES[usize::from(*c % 3)], "operator");
                if *announce {
                    hub.announce(now, 0);
                }
            }
            Step::Grant(c) => roles
                .lock()
                .unwrap()
                .add_grant(NAMES[usize::from(*c % 3)], "operator"),
            Step::Wait(ms) => {
                if let Some(at) = hub.poll_timeout() {
                    if at > now + 1 {
                        let subscribers = hub.subscribers();
                        hub.handle_timeout(at - 1);
                        assert_eq!(hub.subscribers(), subscribers);
                    }
                }
                now += u64::from(*ms) * 1_000_000;
                hub.handle_timeout(now);
            }
            Step::Stop => hub.stop(now),
        }
        let mut held = 0;
        for from in 0..3u8 {
            let mut on_address = 0;
            for n in 0..6u8 {
                for v in [json!(n), json!(n.to_string())] {
                    if let Some(q) = hub.queued(&from, &v.to_string()) {
                        assert!(q <= BOUND, "{q} datagrams queued");
                        on_address += 1;
                    }
                }
            }
            assert!(
                on_address <= LIMITS.max_per_host,
                "{on_address} on one address"
            );
            held += on_address;
        }
        assert!(held <= LIMITS.max_subscribers, "{held} subscribers held");
        assert!(hub.subscribers() <= LIMITS.max_subscribers);
        assert!(hub.answers_queued() <= LIMITS.max_answers);
    }
});
