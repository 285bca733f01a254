//! The WebSocket hub (`core/src/wire/ws/hub.rs`) under an `arbitrary`
//! schedule: three connections (two bearers, one with an expiry) that
//! upgrade, send frames (well-formed subscribes, any text, any raw bytes),
//! read their output in pieces of any size (or gathered, frame after frame,
//! as the served hub's driver takes it) or end; publishes of any size
//! on two topics (drop_old and drop_new, bound 3); revocations announced or
//! not, grants; time passing; `stop()`. With a surface served over the hub,
//! floods of `call` frames in one read, answered by a stand-in exposure in
//! the order framed; and anonymous sockets accepted past the hub's caps
//! (six connections, three unproven), which make room by the oldest.
//!
//!
//! Checks, on the frames each connection's peer reads (with the core's
//! client reader): the hub's frames are unmasked, final and whole; seq
//! grows strictly per subscription (from 1 for a new one); no event of a
//! subscription after its `unauthorized` frame, nor before its
//! `subscribed`; nothing after `closed`; no queue past its bound; and
//! `handle_timeout` before `poll_timeout`'s deadline changes nothing; a
//! connection is never owed more than `max_answers` (its calls with the
//! exposure and its answers waiting), nor the hub holding more than its
//! caps; replies come in the order called; and `teardown_wait` after
//! `stop()` every connection is gone.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use limen_core::hale::runtime::{
    Delivery, Describer, Grants, Outcome, Principal, Refusal, RefusalKind, RoleHierarchy,
    RoleSource, RoleTable, TokenTable,
};
use limen_core::wire::ws::client::{self, ServerFrame, ServerReader};
use limen_core::wire::ws::{ConnId, Hub, HubEvent, HubLimits, HubSpec, OnFull, StreamSpec};
use limen_core::{Timestamp, SECOND};

const WALL0: Timestamp = 1_800_000_000 * SECOND;
const BOUND: usize = 3;
const TOPICS: [&str; 2] = ["Old", "New"];
const TOKENS: [&str; 3] = ["t-dave", "t-erin", "t-eve"];
const NAMES: [&str; 3] = ["dave", "erin", "eve"];
/// The hub's limits, small enough for a schedule to reach each.
fn limits() -> HubLimits {
    HubLimits {
        max_answers: 4,
        max_connections: 6,
        max_unproven: 3,
        ..HubLimits::default()
    }
}

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
        format!("{{\"caller\":{:?},\"roles\":{}}}", caller.name, roles.len()).into_bytes()
    }
}

#[derive(Arbitrary, Debug)]
enum Step {
    Subscribe(u8, bool),
    Text(u8, String),
    Raw(u8, Vec<u8>),
    Read(u8, u16),
    /// A driver's gathered write: `take_output` with this many bytes at
    /// least, when as many wait.
    Gather(u8, u16),
    Eof(u8),
    Publish(bool, u16),
    Revoke(u8, bool),
    Grant(u8),
    Wait(u16),
    Stop,
    /// This many `call` frames (of 64) in one read.
    Calls(u8, u8),
    /// The stand-in exposure answers this many of the calls framed.
    Answer(u8),
    /// A socket accepted that upgrades with no credential (or sends half
    /// its request), which no peer reads.
    Anonymous(bool),
}

#[derive(Arbitrary, Debug)]
struct Schedule {
    /// Whether each connection presents its credential (else nobody).
    credentials: [bool; 3],
    /// Whether a surface is served over the hub (`call` frames taken).
    calls: bool,
    steps: Vec<Step>,
}

#[derive(Default)]
struct Peer {
    head_read: Vec<u8>,
    upgraded: bool,
    reader: ServerReader,
    live: BTreeMap<String, bool>,
    last: BTreeMap<String, u64>,
    closed: bool,
    gone: bool,
    broken: bool,
    /// The number of the last reply read.
    replied: Option<u64>,
}

fn take(peer: &mut Peer, bytes: &[u8]) {
    if peer.broken {
        return;
    }
    let mut bytes = bytes.to_vec();
    if !peer.upgraded {
        peer.head_read.extend_from_slice(&bytes);
        let Some(end) = peer.head_read.windows(4).position(|w| w == b"\r\n\r\n") else {
            return;
        };
        let head = String::from_utf8_lossy(&peer.head_read[..end]).into_owned();
        if !head.starts_with("HTTP/1.1 101 ") {
            // An HTTP answer (a refused upgrade): nothing of WebSocket.
            peer.broken = true;
            return;
        }
        peer.upgraded = true;
        bytes = peer.head_read.split_off(end + 4);
    }
    peer.reader.handle_data(&bytes);
    while let Some(frame) = peer
        .reader
        .poll_frame()
        .expect("the hub's frames are well formed")
    {
        let ServerFrame::Text(text) = frame else {
            continue;
        };
        assert!(!peer.closed, "a frame after closed: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("a frame is JSON");
        let topic = v["topic"].as_str().unwrap_or("").to_owned();
        match v["type"].as_str().expect("a frame names its type") {
            "subscribed" => {
                if peer.live.get(&topic) != Some(&true) {
                    peer.last.insert(topic.clone(), 0);
                }
                peer.live.insert(topic, true);
            }
            "event" => {
                assert_eq!(
                    peer.live.get(&topic),
                    Some(&true),
                    "an event unsubscribed: {text}"
                );
                let seq = v["seq"].as_u64().expect("a seq");
                let last = peer.last.entry(topic).or_insert(0);
                assert!(seq > *last, "seq {seq} after {last}");
                *last = seq;
            }
            "unauthorized" => {
                peer.live.insert(topic, false);
            }
            "closed" => peer.closed = true,
            "refusal" => assert!(v["refusal"]["kind"].is_string()),
            "reply" => {
                // A call's id is its number on its connection; an
                // unreadable call frame is answered with no id.
                if let Some(n) = v["id"].as_u64() {
                    assert!(peer.replied.is_none_or(|r| n > r), "reply {n} out of order");
                    peer.replied = Some(n);
                }
            }
            other => panic!("a frame of type {other}"),
        }
    }
}

fuzz_target!(|s: Schedule| {
    let lim = limits();
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
    let spec = HubSpec::new("h", streams, RoleHierarchy::flat(), lim).unwrap();
    let tokens = TokenTable::new(None)
        .with("t-dave", "dave")
        .with("t-erin", "erin")
        .with_expiry("t-eve", "eve", WALL0 + 4 * SECOND);
    let mut hub = Hub::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(Shared(roles.clone())),
        Box::new(Doc),
    );
    if s.calls {
        hub.serve_calls();
    }
    let mut now: Timestamp = 1;
    let mut peers: Vec<Peer> = (0..3).map(|_| Peer::default()).collect();
    // The calls framed and not yet answered, in the order framed.
    let mut framed = std::collections::VecDeque::new();
    let mut called = [0u64; 3];
    let mut next_id: ConnId = 3;
    let mut stopped_at: Option<Timestamp> = None;
    for (i, token) in TOKENS.iter().enumerate() {
        hub.handle_accept(now, i as ConnId);
        let token = s.credentials[i].then_some(*token);
        let key = client::key([i as u8; 16]);
        let request = client::upgrade_request("h", "/", &key, token);
        hub.handle_data(now, WALL0, i as ConnId, &request);
    }
    // Each answer is waiting to be written: the driver's to act on.
    while hub.poll_event().is_some() {}
    for step in &s.steps {
        match step {
            Step::Subscribe(c, old) => {
                let c = usize::from(*c % 3);
                let topic = TOPICS[usize::from(!*old)];
                let frame = format!("{{\"type\":\"subscribe\",\"topic\":\"{topic}\"}}");
                hub.handle_data(
                    now,
                    WALL0 + now,
                    c as ConnId,
                    &client::text(&frame, [1, 2, 3, 4]),
                );
            }
            Step::Text(c, text) => {
                let c = u64::from(*c % 3);
                hub.handle_data(now, WALL0 + now, c, &client::text(text, [9, 0, 9, 0]));
            }
            Step::Raw(c, bytes) => hub.handle_data(now, WALL0 + now, u64::from(*c % 3), bytes),
            Step::Read(c, n) => {
                let c = usize::from(*c % 3);
                let out = hub.pending_output(c as ConnId);
                let n = usize::from(*n).min(out.len());
                let bytes = out[..n].to_vec();
                hub.consume_output(now, c as ConnId, n);
                take(&mut peers[c], &bytes);
            }
            Step::Gather(c, max) => {
                let c = usize::from(*c % 3);
                let mut out = Vec::new();
                let more = hub.take_output(now, c as ConnId, &mut out, usize::from(*max));
                assert!(
                    !more || out.len() >= usize::from(*max),
                    "more waits: max taken"
                );
                assert_eq!(more, !hub.pending_output(c as ConnId).is_empty());
                take(&mut peers[c], &out);
            }
            Step::Eof(c) => hub.handle_eof(now, u64::from(*c % 3)),
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
                let before = hub.poll_timeout();
                let later = now + u64::from(*ms) * 1_000_000;
                if let Some(at) = before {
                    if at > now + 1 {
                        // Before the deadline: nothing happens.
                        let subscribers = hub.subscribers();
                        hub.handle_timeout(at - 1);
                        assert!(hub.poll_event().is_none());
                        assert_eq!(hub.subscribers(), subscribers);
                    }
                }
                now = later.max(now);
                hub.handle_timeout(now);
            }
            Step::Stop => {
                hub.stop(now);
                stopped_at.get_or_insert(now);
            }
            Step::Calls(c, n) => {
                let c = usize::from(*c % 3);
                let mut read = Vec::new();
                for _ in 0..n % 64 {
                    let frame = format!(
                        "{{\"type\":\"call\",\"id\":{},\"call\":\"A::b\",\"payload\":{{}}}}",
                        called[c]
                    );
                    called[c] += 1;
                    read.extend(client::text(&frame, [3, 1, 4, 1]));
                }
                hub.handle_data(now, WALL0 + now, c as ConnId, &read);
            }
            Step::Answer(n) => {
                for _ in 0..*n {
                    let Some(request) = framed.pop_front() else {
                        break;
                    };
                    let limen_core::hale::runtime::Request {
                        correlation,
                        client_id,
                        ..
                    } = request;
                    hub.deliver(
                        now,
                        Delivery {
                            member: None,
                            accepted: 0,
                            correlation,
                            request_id: 1,
                            client_id,
                            caller: Principal::bearer("dave"),
                            outcome: Outcome::from(Refusal::new(RefusalKind::Malformed, "no")),
                        },
                    );
                }
            }
            Step::Anonymous(whole) => {
                let id = next_id;
                next_id += 1;
                hub.handle_accept(now, id);
                let key = client::key([7; 16]);
                let request = client::upgrade_request("h", "/", &key, None);
                let n = if *whole {
                    request.len()
                } else {
                    request.len() / 2
                };
                hub.handle_data(now, WALL0 + now, id, &request[..n]);
            }
        }
        if let Some(at) = stopped_at {
            if now >= at + lim.teardown_wait {
                hub.handle_timeout(now);
                assert!(
                    hub.is_finished(),
                    "open past stop()'s wait: {hub:?} {s:?} now {now} stopped {at}"
                );
            }
        }
        while let Some(e) = hub.poll_event() {
            match e {
                HubEvent::Call(r) => framed.push_back(*r),
                // A connection gone: its calls are lost, never answered.
                HubEvent::Lost(id) => framed.retain(|r| r.correlation != id),
                HubEvent::Close(id) => {
                    if let Some(peer) = peers.get_mut(id as usize) {
                        peer.gone = true;
                    }
                }
                HubEvent::Output(_) => {}
            }
        }
        for c in 0..next_id {
            if let Some(owed) = hub.owed(c) {
                assert!(owed <= lim.max_answers, "{owed} answers owed");
                let with_exposure = framed.iter().filter(|r| r.correlation == c).count();
                assert!(with_exposure <= owed, "{with_exposure} calls out of {owed}");
            }
        }
        assert!(hub.unproven() <= lim.max_unproven);
        for c in 0..3u64 {
            for t in TOPICS {
                if let Some(q) = hub.queued(c, t) {
                    assert!(q <= BOUND, "{q} frames queued");
                }
            }
        }
    }
});
