//! A deterministic simulation of one exposure under arbitrary schedules.
//!
//! A [`Schedule`] is a list of [`Op`]s — requests, completions, losses,
//! receiver births, drains and departures, handovers not taken, `stop()`,
//! teardowns and the passing of time — built by `arbitrary` from bytes, so
//! the test suite runs seeded random schedules and the fuzz target explores
//! them by coverage. [`run`] plays one against a small exposure and checks
//! the invariants of § The request lifecycle after every step.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use arbitrary::Arbitrary;

use super::exposure::{
    Completion, Correlation, Describer, Event, Exposure, ExposureLimits, ExposureSpec, MemberSpec,
    Payload, PayloadCodec, RequestId, RequestKind,
};
use super::outcome::Outcome;
use super::sources::{
    Credential, PeerCredentials, Principal, RoleHierarchy, RoleTable, TokenTable,
};
use super::Request;
use crate::SECOND;

/// One step of a schedule.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A request on connection `conn % 4` for member `member % 4` (3 is not a
    /// member), from caller `who % 8` (mostly one who may call everything),
    /// with digest `digest % 8` (mostly none or the served one) and payload
    /// `payload % 8` (mostly good, else the wrong type or not JSON); `kind %
    /// 16 == 15` makes it a describe, `== 14` a request that is not one.
    Request {
        /// The connection.
        conn: u8,
        /// The member.
        member: u8,
        /// The caller.
        who: u8,
        /// The digest.
        digest: u8,
        /// The payload.
        payload: u8,
        /// Call, describe or not a request.
        kind: u8,
    },
    /// Completes the `pick`-th executing call with `how % 4`: returned,
    /// failed, violated, process exits.
    Complete {
        /// Which executing call.
        pick: u8,
        /// How it ended.
        how: u8,
    },
    /// A completion for a request id that may be anything at all.
    CompleteAny {
        /// The id.
        id: u8,
    },
    /// Connection `conn % 4` is lost.
    Lose {
        /// The connection.
        conn: u8,
    },
    /// Receiver `r % 2` is born as a new incarnation.
    Born {
        /// The receiver.
        r: u8,
    },
    /// Receiver `r % 2` announces its current incarnation again.
    Reannounce {
        /// The receiver.
        r: u8,
    },
    /// Receiver `r % 2` drains.
    Drain {
        /// The receiver.
        r: u8,
    },
    /// Receiver `r % 2`'s incarnation dissolves (`stale`: an older one's).
    Dissolve {
        /// The receiver.
        r: u8,
        /// Whether the departing incarnation is an earlier one.
        stale: bool,
    },
    /// Receiver `r % 2` is asked and has no subscriber.
    Absent {
        /// The receiver.
        r: u8,
    },
    /// The `pick`-th executing call was not taken by its incarnation.
    NotTaken {
        /// Which executing call.
        pick: u8,
    },
    /// `stop()`, when `chance % 8 == 0` (so most schedules serve a while).
    Stop {
        /// Whether this op stops.
        chance: u8,
    },
    /// A teardown, when `chance % 8 == 0`.
    Teardown {
        /// Whether this op tears down.
        chance: u8,
    },
    /// `secs % 16` seconds pass.
    Advance {
        /// Seconds.
        secs: u8,
    },
    /// With calls handed ahead: receiver `r % 2`'s worker starts the first
    /// call it was handed, if it is not running one.
    Start {
        /// The receiver.
        r: u8,
    },
}

/// A whole schedule: how many calls a receiver may be handed ahead (0 to
/// 2, from the first byte), then ops read from the bytes until they run out
/// (at most 512), so every byte of a fuzzer's input shapes it.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// [`ExposureLimits::dispatch_ahead`]: with 0 a handed call starts at
    /// once; with more, only at an [`Op::Start`].
    pub ahead: usize,
    /// The steps.
    pub ops: Vec<Op>,
}

impl<'a> Arbitrary<'a> for Schedule {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let ahead = usize::from(u8::arbitrary(u)? % 3);
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < 512 {
            ops.push(Op::arbitrary(u)?);
        }
        Ok(Schedule { ahead, ops })
    }
}

struct Codec;
impl PayloadCodec for Codec {
    fn decode(&self, _member: usize, payload: &[u8]) -> Result<serde_json::Value, String> {
        match payload {
            b"{\"ok\":1}" => Ok(serde_json::json!({"ok": 1})),
            _ => Err("wrong_type: ok".to_owned()),
        }
    }
}

struct Doc;
impl Describer for Doc {
    fn describe(&self, _caller: &Principal, roles: &[String], members: &[usize]) -> Vec<u8> {
        format!("{{\"roles\":{roles:?},\"members\":{members:?}}}").into_bytes()
    }
}

/// The simulated exposure: members 0 and 1 on receiver 0, member 2 on
/// receiver 1; member 1 requires `op`; a bound of 4.
pub fn exposure() -> Exposure {
    exposure_handing_ahead(0)
}

/// [`exposure`], handing each receiver up to `ahead` calls beyond the one
/// it runs.
pub fn exposure_handing_ahead(ahead: usize) -> Exposure {
    let spec = ExposureSpec {
        name: "sim".into(),
        surface: "Sim".into(),
        digest: "fnv1a64:0000000000000001".into(),
        via: "test".into(),
        members: vec![
            MemberSpec {
                name: "A::open".into(),
                receiver: 0,
                requires: vec![],
            },
            MemberSpec {
                name: "A::guarded".into(),
                receiver: 0,
                requires: vec!["op".into()],
            },
            MemberSpec {
                name: "B::work".into(),
                receiver: 1,
                requires: vec![],
            },
        ],
        receivers: vec!["self.a".into(), "self.b".into()],
        bound: 4,
        hierarchy: RoleHierarchy::flat(),
        limits: ExposureLimits {
            dispatch_ahead: ahead,
            ..ExposureLimits::default()
        },
    };
    let tokens = TokenTable::new(Some("no such token"))
        .with("t-ann", "ann")
        .with_expiry("t-old", "old", 5 * SECOND);
    let roles = RoleTable::new().grant("ann", "op");
    Exposure::new(
        spec,
        Some(Box::new(tokens)),
        Box::new(roles),
        Box::new(Codec),
        Box::new(Doc),
    )
}

#[derive(Default)]
struct Model {
    accepted: BTreeSet<RequestId>,
    refused: BTreeSet<RequestId>,
    delivered: BTreeSet<RequestId>,
    dispatched: BTreeSet<RequestId>,
    /// Started calls: id → (receiver, stamp).
    executing: BTreeMap<RequestId, (usize, u64)>,
    /// The calls handed to each (receiver, incarnation) and not ended, in
    /// the order handed; the first may have started.
    handed: BTreeMap<(usize, u64), VecDeque<RequestId>>,
    /// Calls taken back before they started.
    recalled: BTreeSet<RequestId>,
    ahead: usize,
    correlation: BTreeMap<RequestId, Correlation>,
    lost: BTreeSet<Correlation>,
    closed: BTreeSet<Correlation>,
    stamps: [u64; 2],
    stopped_listening: usize,
    stop_asked: bool,
}

/// What one schedule reached, so a test can tell its schedules exercised
/// every path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// Requests accepted.
    pub accepted: usize,
    /// Requests refused at admission.
    pub refused: usize,
    /// Calls handed to a receiver.
    pub dispatched: usize,
    /// Accepted requests whose outcome was delivered.
    pub delivered: usize,
    /// Accepted requests that ended without a delivery (lost or abandoned).
    pub dropped: usize,
    /// Connections the transport was told it is finished with.
    pub closed: usize,
    /// Calls handed ahead and taken back before they started.
    pub recalled: usize,
}

impl std::ops::AddAssign for Reached {
    fn add_assign(&mut self, o: Reached) {
        self.accepted += o.accepted;
        self.refused += o.refused;
        self.dispatched += o.dispatched;
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.closed += o.closed;
        self.recalled += o.recalled;
    }
}

/// Plays `schedule` and checks the invariants after every step; the error
/// names the step and the invariant broken.
pub fn run(schedule: &Schedule) -> Result<Reached, String> {
    let mut ex = exposure_handing_ahead(schedule.ahead);
    let mut m = Model {
        stamps: [1, 1],
        ahead: schedule.ahead,
        ..Model::default()
    };
    let mut now = 0;
    ex.receiver_born(0, 1);
    ex.receiver_born(1, 1);
    drain_events(&mut ex, &mut m).map_err(|e| format!("at birth: {e}"))?;
    for (step, op) in schedule.ops.iter().enumerate() {
        apply(&mut ex, &mut m, op, &mut now);
        drain_events(&mut ex, &mut m).map_err(|e| format!("step {step} ({op:?}): {e}"))?;
        check(&ex, &m).map_err(|e| format!("step {step} ({op:?}): {e}"))?;
    }
    // Whatever happened, a stop and the end of its wait settle everything.
    m.stop_asked = true;
    ex.stop(now);
    ex.handle_timeout(now + 11 * SECOND);
    drain_events(&mut ex, &mut m).map_err(|e| format!("final stop: {e}"))?;
    check(&ex, &m).map_err(|e| format!("final stop: {e}"))?;
    if ex.pending_len() != 0 {
        return Err(format!("{} requests outlived the stop", ex.pending_len()));
    }
    if m.stopped_listening != 1 {
        return Err(format!("StopListening told {} times", m.stopped_listening));
    }
    let delivered = m.accepted.intersection(&m.delivered).count();
    Ok(Reached {
        accepted: m.accepted.len(),
        refused: m.refused.len(),
        dispatched: m.dispatched.len(),
        delivered,
        dropped: m.accepted.len() - delivered,
        closed: m.closed.len(),
        recalled: m.recalled.len(),
    })
}

fn pick(m: &Model, n: u8) -> Option<RequestId> {
    let ids: Vec<RequestId> = m.executing.keys().copied().collect();
    (!ids.is_empty()).then(|| ids[n as usize % ids.len()])
}

/// A call handed and not started (with calls handed ahead), or else a
/// started one: what a worker may report not taken.
fn pick_not_taken(m: &Model, n: u8) -> Option<RequestId> {
    if m.ahead == 0 {
        return pick(m, n);
    }
    let ids: Vec<RequestId> = m
        .handed
        .values()
        .flatten()
        .copied()
        .filter(|id| !m.executing.contains_key(id))
        .collect();
    (!ids.is_empty()).then(|| ids[n as usize % ids.len()])
}

/// The call `id` ended or went back: it leaves its worker's queue.
fn forget_handed(m: &mut Model, id: RequestId) {
    for queue in m.handed.values_mut() {
        queue.retain(|&h| h != id);
    }
}

fn apply(ex: &mut Exposure, m: &mut Model, op: &Op, now: &mut u64) {
    match *op {
        Op::Request {
            conn,
            member,
            who,
            digest,
            payload,
            kind,
        } => {
            let correlation = u64::from(conn % 4);
            if m.lost.contains(&correlation) || m.closed.contains(&correlation) {
                // A lost or closed connection sends nothing more.
                return;
            }
            let names = ["A::open", "A::guarded", "B::work", "C::none"];
            let credential = match who % 8 {
                0..=3 => Credential::Bearer(Some("t-ann".into())),
                4 | 5 => Credential::Bearer(Some("t-old".into())),
                6 => Credential::Bearer(Some("t-nobody".into())),
                _ => Credential::Peer(PeerCredentials::UNNAMED),
            };
            let kind = match kind % 16 {
                15 => RequestKind::Describe,
                14 => RequestKind::Malformed {
                    reason: "not a request".into(),
                },
                _ => RequestKind::Call {
                    member: names[member as usize % 4].into(),
                    payload: Payload::Json(match payload % 8 {
                        0..=5 => b"{\"ok\":1}".to_vec(),
                        6 => b"{\"ok\":\"x\"}".to_vec(),
                        _ => b"nope".to_vec(),
                    }),
                },
            };
            let digest = match digest % 8 {
                0..=3 => None,
                4..=6 => Some("fnv1a64:0000000000000001".into()),
                _ => Some("fnv1a64:ffffffffffffffff".into()),
            };
            let id = ex.handle_request(
                *now,
                *now,
                Request {
                    correlation,
                    kind,
                    digest,
                    credential,
                    client_id: Some(format!("\"r{id}\"", id = *now)),
                },
            );
            m.correlation.insert(id, correlation);
            if ex.is_pending(id) {
                m.accepted.insert(id);
            } else {
                m.refused.insert(id);
            }
        }
        Op::Complete { pick: p, how } => {
            if let Some(id) = pick(m, p) {
                m.executing.remove(&id);
                forget_handed(m, id);
                let c = match how % 4 {
                    0 => Completion::Returned(b"{}".to_vec()),
                    1 => Completion::Failed(b"{\"code\":\"x\"}".to_vec()),
                    2 => Completion::Violated,
                    _ => Completion::ProcessExits,
                };
                ex.handle_completion(id, c);
            }
        }
        Op::CompleteAny { id } => {
            let id = u64::from(id);
            // Only a call never handed over, or already done, may be named
            // here: the exposure must ignore it.
            if !m.executing.contains_key(&id) {
                ex.handle_completion(id, Completion::Returned(b"{}".to_vec()));
            }
        }
        Op::Lose { conn } => {
            let c = u64::from(conn % 4);
            m.lost.insert(c);
            ex.connection_lost(c);
        }
        Op::Born { r } => {
            let r = usize::from(r % 2);
            m.stamps[r] += 1;
            // The old incarnation's calls can no longer complete from it in
            // this model; they stay pending until stop abandons them.
            ex.receiver_born(r, m.stamps[r]);
        }
        Op::Reannounce { r } => {
            let r = usize::from(r % 2);
            ex.receiver_born(r, m.stamps[r]);
        }
        Op::Drain { r } => {
            let r = usize::from(r % 2);
            ex.receiver_draining(r, m.stamps[r]);
        }
        Op::Dissolve { r, stale } => {
            let r = usize::from(r % 2);
            let stamp = if stale { m.stamps[r] - 1 } else { m.stamps[r] };
            ex.receiver_dissolved(r, stamp);
        }
        Op::Absent { r } => ex.receiver_absent(usize::from(r % 2)),
        Op::NotTaken { pick: p } => {
            if let Some(id) = pick_not_taken(m, p) {
                m.executing.remove(&id);
                forget_handed(m, id);
                ex.dispatch_not_taken(id);
            }
        }
        Op::Start { r } => {
            let r = usize::from(r % 2);
            let key = (r, m.stamps[r]);
            if let Some(&first) = m.handed.get(&key).and_then(|q| q.front()) {
                if !m.executing.contains_key(&first) && ex.is_pending(first) {
                    m.executing.insert(first, key);
                }
            }
        }
        Op::Stop { chance } => {
            if chance % 8 == 0 {
                m.stop_asked = true;
                ex.stop(*now);
            }
        }
        Op::Teardown { chance } => {
            if chance % 8 == 0 {
                m.stop_asked = true;
                ex.teardown(*now);
            }
        }
        Op::Advance { secs } => {
            *now += u64::from(secs % 16) * SECOND;
            ex.handle_timeout(*now);
        }
    }
}

fn drain_events(ex: &mut Exposure, m: &mut Model) -> Result<(), String> {
    while let Some(event) = ex.poll_event() {
        match event {
            Event::Deliver(d) => {
                let id = d.request_id;
                if !m.delivered.insert(id) {
                    return Err(format!("request {id} delivered twice"));
                }
                if m.accepted.contains(&id) {
                    if m.lost.contains(&d.correlation) {
                        return Err(format!("request {id} delivered to a lost connection"));
                    }
                    if m.closed.contains(&d.correlation) {
                        return Err(format!("request {id} delivered to a closed connection"));
                    }
                } else if !matches!(d.outcome, Outcome::Refusal(_) | Outcome::Description(_))
                    && !m.correlation.contains_key(&id)
                {
                    return Err(format!("an outcome for unknown request {id}"));
                }
                if m.recalled.contains(&id) && !matches!(d.outcome, Outcome::Refusal(_)) {
                    return Err(format!(
                        "recalled request {id} delivered a handler's outcome"
                    ));
                }
                m.executing.remove(&id);
            }
            Event::Dispatch(d) => {
                let id = d.request_id;
                if m.refused.contains(&id) {
                    return Err(format!("refused request {id} was dispatched"));
                }
                if !m.dispatched.insert(id) {
                    return Err(format!("request {id} dispatched twice"));
                }
                if d.generation != ex.generation(d.receiver) {
                    return Err(format!(
                        "request {id} runs under generation {} but the receiver is at {}",
                        d.generation,
                        ex.generation(d.receiver)
                    ));
                }
                if d.stamp != m.stamps[d.receiver] {
                    return Err(format!("request {id} handed to a past incarnation"));
                }
                let queue = m.handed.entry((d.receiver, d.stamp)).or_default();
                queue.retain(|&h| ex.is_pending(h) && h != id);
                queue.push_back(id);
                if queue.len() > 1 + m.ahead {
                    return Err(format!(
                        "receiver {} handed {} calls with {} ahead",
                        d.receiver,
                        queue.len(),
                        m.ahead
                    ));
                }
                if m.ahead == 0 {
                    // With nothing handed ahead a handed call is executing.
                    m.executing.insert(id, (d.receiver, d.stamp));
                }
            }
            Event::Recall {
                receiver,
                request_id: id,
            } => {
                if m.ahead == 0 {
                    return Err(format!("request {id} recalled with nothing handed ahead"));
                }
                let handed = m.handed.values().any(|q| q.contains(&id));
                if !handed || m.recalled.contains(&id) {
                    return Err(format!("request {id} recalled but not handed"));
                }
                if m.executing.get(&id).is_some_and(|(r, _)| *r != receiver) {
                    return Err(format!("request {id} recalled from another receiver"));
                }
                if !m.executing.contains_key(&id) {
                    // Not started: taken back, and it never will start.
                    m.recalled.insert(id);
                    forget_handed(m, id);
                    ex.recalled(id);
                }
            }
            Event::Ask(r) => ex.receiver_born(r, m.stamps[r]),
            Event::CloseConnection(c) => {
                m.closed.insert(c);
            }
            Event::StopListening => {
                if !m.stop_asked {
                    return Err("StopListening without stop".into());
                }
                m.stopped_listening += 1;
            }
        }
    }
    Ok(())
}

fn check(ex: &Exposure, m: &Model) -> Result<(), String> {
    let mut live = 0;
    for &id in &m.accepted {
        if ex.is_pending(id) {
            live += 1;
            continue;
        }
        // Terminal: delivered, or dropped on a connection the transport was
        // told it is finished with.
        if !m.delivered.contains(&id) {
            let c = m.correlation[&id];
            if !m.closed.contains(&c) && !m.lost.contains(&c) {
                return Err(format!("request {id} ended with no outcome and no close"));
            }
        }
        if m.executing.contains_key(&id) && m.delivered.contains(&id) {
            return Err(format!("request {id} is executing after its outcome"));
        }
    }
    if live != ex.pending_len() {
        return Err(format!(
            "the table holds {} but {live} accepted requests are live",
            ex.pending_len()
        ));
    }
    if ex.pending_len() > ex.spec().bound {
        return Err(format!("{} pending past the bound", ex.pending_len()));
    }
    for &id in &m.refused {
        if ex.is_pending(id) {
            return Err(format!("refused request {id} is pending"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64: a seeded byte source, so every run plays the same
    /// schedules.
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut state = seed;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        out
    }

    #[test]
    fn one_hundred_thousand_schedules_keep_the_invariants() {
        let mut reached = Reached::default();
        for seed in 0..100_000u64 {
            let data = bytes(seed, 64 + (seed % 7) as usize * 48);
            let mut u = arbitrary::Unstructured::new(&data);
            let Ok(schedule) = Schedule::arbitrary(&mut u) else {
                continue;
            };
            match run(&schedule) {
                Ok(r) => reached += r,
                Err(e) => panic!("seed {seed}: {e}\n{schedule:?}"),
            }
        }
        // The schedules reach every path, so the invariants were tested.
        eprintln!("{reached:?}");
        assert!(reached.accepted > 10_000 && reached.refused > 10_000);
        assert!(reached.dispatched > 10_000 && reached.delivered > 5_000);
        assert!(reached.dropped > 1_000 && reached.closed > 1_000);
        assert!(reached.recalled > 1_000);
    }
}
