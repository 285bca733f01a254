//! `udp::Hub` (§ Over datagrams): the ws frames minus the connection, as
//! one sans-I/O machine over one socket's datagrams.
//!
//! A subscriber is an (address, id) pair: every datagram of a subscriber
//! carries the id it chose in its subscribe (any JSON string or number,
//! echoed as it was written), and the credential rides the subscribe
//! (`{"type": "subscribe", "topic": T, "id": ID, "token": TOKEN}`), named
//! by the hub's bearer source at that datagram. The hub answers
//! `subscribed` or `refusal`, then sends `event` datagrams, one
//! `unauthorized` at the credential's expiry or at a revision that takes
//! the grant, and `closed` at `stop()`. `unsubscribe` frees the id (its seq
//! starts again at 1 when the id is used again); `describe` is answered
//! with the caller's document. A subscriber that vanishes without
//! unsubscribing is held until `stop()`.
//!
//! Each subscription keeps a queue of its row's `bound` datagrams the
//! socket has not taken yet, shedding under `on_full`, exactly as a
//! connection's queue does over WebSocket; the socket takes them one at a
//! time, in the order offered ([`pending_transmit`](Hub::pending_transmit)).
//!
//! # The order of calls
//!
//! 1. [`handle_datagram`](Hub::handle_datagram) for each datagram read,
//!    with its source address (any `Ord` type the driver chooses) and the
//!    wall clock (a credential's expiry is stated on it).
//! 2. The program's side: [`publish`](Hub::publish),
//!    [`announce`](Hub::announce), [`stop`](Hub::stop).
//! 3. After any input, offer the socket
//!    [`pending_transmit`](Hub::pending_transmit) and report each datagram
//!    it took with [`consume_transmit`](Hub::consume_transmit), until none
//!    is pending or the socket would block (then again once it is
//!    writable).
//! 4. [`handle_timeout`](Hub::handle_timeout) at the deadline
//!    [`poll_timeout`](Hub::poll_timeout) names (the credentials' expiries).
//!
//! # What it bounds, and what it cannot
//!
//! Every cost is per datagram, never per subscriber held: the next
//! datagram is the first of a map of the subscribers with something
//! queued (by the stamp of their oldest), the next expiry the first of a
//! set, so a send, a timeout and a `closed` each cost O(log N) and a
//! publish to N subscribers O(N log N). [`Limits`] caps the subscribers
//! (in all, per host, per caller), the answers waiting for the socket,
//! and what the hub answers each host: a token bucket of answer bytes per
//! host, as a DNS server's response rate limiting, and no answer larger
//! than its datagram plus a small slack to a source nothing vouches for.
//!
//! **A `udp::Hub` belongs on a network you trust.** A datagram's source
//! address can be forged, and § Over datagrams leaves the hub no way to
//! learn that a source receives what it is sent (no cookie or echo is
//! framed: a client speaks first and is answered). Whoever holds a valid
//! token can subscribe a forged address and aim the stream at it until
//! `stop()` (the caps bound how many subscriptions a caller, and a host,
//! can aim), and a valid `describe` is answered with the document,
//! within the host's bucket. Serve it where source addresses are not
//! forged (a private network, or behind ingress filtering), or over
//! WebSocket (`ws::Hub`), whose connection proves the address.

mod limits;
mod rate;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

pub use self::limits::{Address, Limits};
use self::rate::Buckets;
use crate::hale::runtime::{BearerSource, Describer, Principal, Refusal, RefusalKind, RoleSource};
use crate::wire::ws::admission::Sources;
use crate::wire::ws::hub_spec::{HubSpec, Invalidated, Offered, OnFull, Published};
use crate::Timestamp;

/// A subscriber's key: its address and its id's JSON text.
type Key<A> = (A, String);

/// One event queued for a subscriber: its stamp (the order offered across
/// the hub), its seq, the event.
type Queued = (u64, u64, Arc<Offered>);

#[derive(Debug)]
struct Subscriber<A> {
    /// Its address, and the id as the subscribe wrote it (JSON text).
    key: Key<A>,
    stream: usize,
    caller: Principal,
    /// The credential's expiry on the monotonic clock.
    expires: Option<Timestamp>,
    seq: u64,
    revision: u64,
    queue: VecDeque<Queued>,
}

/// A datagram that is no subscription's: an answer (a refusal,
/// `subscribed`, a description) or a notice (`unauthorized` of a
/// subscriber gone).
#[derive(Debug)]
struct Control<A> {
    stamp: u64,
    to: A,
    datagram: String,
    /// An answer counts against [`Limits::max_answers`]; a notice does
    /// not (there is at most one per subscriber).
    answer: bool,
}

/// The datagram offered to the socket, and the queue it leaves when
/// taken.
#[derive(Debug)]
struct Out<A> {
    to: A,
    datagram: Vec<u8>,
    from: From,
}

#[derive(Debug)]
enum From {
    Control,
    /// The front of the queue of the subscriber in this slot.
    Event(usize),
    /// The `closed` of the subscriber in this slot.
    Closed(usize),
}

/// Whether a datagram's source is vouched for, and by how much its answer
/// may exceed it when it is not.
#[derive(Clone, Copy)]
enum Vouched {
    /// A token the bearer source names someone by.
    Yes,
    /// Not vouched for: the answer's bytes at most.
    No(usize),
}

/// A datagram hub. See the module documentation: it belongs on a network
/// you trust, since a datagram's source can be forged.
pub struct Hub<A: Address> {
    spec: HubSpec,
    topics_json: Vec<String>,
    sources: Sources,
    limits: Limits,
    /// The subscribers, by slot; `free` lists the empty slots.
    slots: Vec<Option<Subscriber<A>>>,
    free: Vec<usize>,
    index: BTreeMap<Key<A>, usize>,
    /// Each subscriber with something queued, by its oldest's stamp: the
    /// first is the next event to send.
    ready: BTreeMap<u64, usize>,
    /// Each live subscriber's credential expiry.
    expiries: BTreeSet<(Timestamp, usize)>,
    per_host: BTreeMap<A::Host, usize>,
    per_caller: BTreeMap<String, usize>,
    control: VecDeque<Control<A>>,
    /// The answers in `control`, and their bytes.
    answers: usize,
    answer_bytes: usize,
    buckets: Buckets<A::Host>,
    dropped: u64,
    /// The datagram offered to the socket, until it takes it or an input
    /// may have changed which comes next.
    out: Option<Out<A>>,
    next_stamp: u64,
    stopped: bool,
    offered: u64,
    steps: u64,
}

impl<A: Address> std::fmt::Debug for Hub<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("udp::Hub")
            .field("name", &self.spec.name)
            .field("subscribers", &self.index.len())
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

fn bump<K: Ord + Clone>(counts: &mut BTreeMap<K, usize>, key: &K) {
    *counts.entry(key.clone()).or_default() += 1;
}

fn drop_one<K: Ord>(counts: &mut BTreeMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

impl<A: Address> Hub<A> {
    /// A datagram hub serving `spec` under its two sources, describing
    /// itself with `describer` (handed no members), within the default
    /// [`Limits`].
    pub fn new(
        spec: HubSpec,
        bearer: Option<Box<dyn BearerSource + Send>>,
        roles: Box<dyn RoleSource + Send>,
        describer: Box<dyn Describer + Send>,
    ) -> Hub<A> {
        let topics_json = spec
            .streams
            .iter()
            .map(|s| Value::from(s.topic.as_str()).to_string())
            .collect();
        let limits = Limits::default();
        Hub {
            spec,
            topics_json,
            sources: Sources {
                bearer,
                roles,
                describer,
            },
            limits,
            slots: Vec::new(),
            free: Vec::new(),
            index: BTreeMap::new(),
            ready: BTreeMap::new(),
            expiries: BTreeSet::new(),
            per_host: BTreeMap::new(),
            per_caller: BTreeMap::new(),
            control: VecDeque::new(),
            answers: 0,
            answer_bytes: 0,
            buckets: Buckets::new(limits.answer_burst, limits.answer_rate, limits.max_hosts),
            dropped: 0,
            out: None,
            next_stamp: 0,
            stopped: false,
            offered: 0,
            steps: 0,
        }
    }

    /// The hub within `limits` (before any datagram).
    pub fn with_limits(mut self, limits: Limits) -> Hub<A> {
        self.limits = limits;
        self.buckets = Buckets::new(limits.answer_burst, limits.answer_rate, limits.max_hosts);
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `events()`: the publishes that fit the bus frame.
    pub fn events(&self) -> u64 {
        self.offered
    }

    /// `subscribers()`: the subscriptions admitted and not ended (after
    /// `stop()`, none: those left are only owed their `closed`).
    pub fn subscribers(&self) -> usize {
        if self.stopped {
            0
        } else {
            self.index.len()
        }
    }

    /// How many datagrams the subscriber (`from`, the id whose JSON text is
    /// `id`) holds for the socket (at most its row's `bound`); `None` when
    /// there is no such subscriber.
    pub fn queued(&self, from: &A, id: &str) -> Option<usize> {
        let slot = *self.index.get(&(from.clone(), id.to_owned()))?;
        self.slots[slot].as_ref().map(|s| s.queue.len())
    }

    /// The answers waiting for the socket (at most
    /// [`Limits::max_answers`]).
    pub fn answers_queued(&self) -> usize {
        self.answers
    }

    /// The answers not sent: past the queue's bound, a host's bucket, or
    /// the slack of a source nothing vouches for.
    pub fn answers_dropped(&self) -> u64 {
        self.dropped
    }

    /// Units of work done so far (a subscriber visited, a queue's front
    /// moved, a datagram chosen): what a test or a bench holds the
    /// machine's cost to, since no clock is read here.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether `stop()` ran and every `closed` was handed to the socket.
    pub fn is_finished(&self) -> bool {
        self.stopped && self.index.is_empty() && self.control.is_empty()
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Queues an answer to `to`, unless it is past the slack `vouched`
    /// allows, the queue is at its bound, or `to`'s host has spent its
    /// bucket: then it is dropped, as the network may drop any datagram.
    fn answer(&mut self, now: Timestamp, to: &A, vouched: Vouched, datagram: Value) {
        let datagram = datagram.to_string();
        let len = datagram.len();
        let fits = match vouched {
            Vouched::Yes => true,
            Vouched::No(most) => len <= most,
        };
        if !fits
            || self.answers >= self.limits.max_answers
            || self.answer_bytes + len > self.limits.max_answer_bytes
            || !self.buckets.charge(&to.host(), now, len as u64)
        {
            self.dropped += 1;
            return;
        }
        self.answers += 1;
        self.answer_bytes += len;
        let stamp = self.stamp();
        self.control.push_back(Control {
            stamp,
            to: to.clone(),
            datagram,
            answer: true,
        });
    }

    /// One datagram from `from`, read at `now`; `wall` is the wall clock.
    pub fn handle_datagram(&mut self, now: Timestamp, wall: Timestamp, from: A, data: &[u8]) {
        // What goes next may change.
        self.out = None;
        self.steps += 1;
        let unverified = Vouched::No(data.len().saturating_add(self.limits.unverified_slack));
        let refuse = |hub: &mut Hub<A>,
                      vouched: Vouched,
                      topic: Option<&str>,
                      id: Option<&Value>,
                      r: Refusal| {
            let id = id.cloned().unwrap_or(Value::Null);
            hub.answer(
                now,
                &from,
                vouched,
                json!({"type": "refusal", "id": id, "topic": topic, "refusal": r.to_json()}),
            );
        };
        let malformed = |reason: &str| Refusal::new(RefusalKind::Malformed, reason);
        let frame = match serde_json::from_slice::<Value>(data) {
            Ok(Value::Object(frame)) => frame,
            _ => {
                let garbage = Vouched::No(data.len().saturating_add(self.limits.garbage_slack));
                return refuse(
                    self,
                    garbage,
                    None,
                    None,
                    malformed("not a frame: a datagram is one JSON object naming its type"),
                );
            }
        };
        let topic = frame.get("topic").and_then(Value::as_str);
        // The id is a JSON string or number, echoed as written.
        let id = frame.get("id").filter(|v| v.is_string() || v.is_number());
        let Some(id) = id else {
            return refuse(
                self,
                unverified,
                topic,
                None,
                malformed("a datagram names its subscriber's id, a string or a number"),
            );
        };
        let key = (from.clone(), id.to_string());
        let token = frame.get("token").and_then(Value::as_str);
        match frame.get("type").and_then(Value::as_str) {
            Some("subscribe") => {}
            Some("unsubscribe") => {
                // The id is free again: a later subscribe starts at seq 1.
                if let Some(&slot) = self.index.get(&key) {
                    self.remove(slot);
                }
                return;
            }
            Some("describe") => {
                let (vouched, answer) = match self.sources.authenticate(now, wall, token) {
                    Ok((caller, _)) => {
                        let document = self.sources.describe(&self.spec, &caller);
                        let document: Value =
                            serde_json::from_slice(&document).unwrap_or(Value::Null);
                        (
                            Vouched::Yes,
                            json!({"type": "description", "id": id, "document": document}),
                        )
                    }
                    Err(reason) => (
                        unverified,
                        json!({"type": "description", "id": id, "document": null,
                        "refusal": Refusal::new(RefusalKind::Unauthenticated, reason).to_json()}),
                    ),
                };
                return self.answer(now, &from, vouched, answer);
            }
            Some(other) => {
                return refuse(
                    self,
                    unverified,
                    topic,
                    Some(id),
                    malformed(&format!(
                        "unknown frame type `{other}`: a client sends subscribe, unsubscribe or describe"
                    )),
                )
            }
            None => {
                return refuse(
                    self,
                    unverified,
                    topic,
                    Some(id),
                    malformed("not a frame: a datagram names its type"),
                )
            }
        }
        // 1. The subscribe names its topic.
        let Some(topic) = topic else {
            return refuse(
                self,
                unverified,
                None,
                Some(id),
                malformed("a subscribe names its topic as a string"),
            );
        };
        // 2. The token names someone, and is not spent.
        let (caller, expires) = match self.sources.authenticate(now, wall, token) {
            Ok(named) => named,
            Err(reason) => {
                let r = Refusal::new(RefusalKind::Unauthenticated, reason);
                return refuse(self, unverified, Some(topic), Some(id), r);
            }
        };
        let vouched = Vouched::Yes;
        // 3–5. The topic is bound, its requires held, the hub not stopping.
        let stream = match self.sources.admit(&self.spec, &caller, topic, self.stopped) {
            Ok(stream) => stream,
            Err(r) => return refuse(self, vouched, Some(topic), Some(id), r),
        };
        match self
            .index
            .get(&key)
            .and_then(|&slot| self.slots[slot].as_ref())
        {
            // Admitted again: nothing changes.
            Some(s) if s.stream == stream => {}
            Some(s) => {
                let held = self.spec.streams[s.stream].topic.clone();
                let r = malformed(&format!(
                    "the id {} subscribes to {held}: unsubscribe it, or choose another id",
                    key.1
                ));
                return refuse(self, vouched, Some(topic), Some(id), r);
            }
            None => {
                // 6. The caps.
                if let Some(r) = self.full(&key.0, &caller) {
                    return refuse(self, vouched, Some(topic), Some(id), r);
                }
                let revision = self.sources.revision(&caller);
                self.insert(Subscriber {
                    key,
                    stream,
                    caller,
                    expires,
                    seq: 0,
                    revision,
                    queue: VecDeque::new(),
                });
            }
        }
        self.answer(
            now,
            &from,
            vouched,
            json!({"type": "subscribed", "id": id, "topic": topic}),
        );
    }

    /// Why a new subscriber from `from` for `caller` is refused `full`,
    /// if it is: the reason names the limit in force.
    fn full(&self, from: &A, caller: &Principal) -> Option<Refusal> {
        let l = &self.limits;
        let reason = if self.index.len() >= l.max_subscribers {
            format!(
                "the hub holds {} subscribers, the most it holds",
                l.max_subscribers
            )
        } else if self.per_host.get(&from.host()).copied().unwrap_or(0) >= l.max_per_host {
            format!(
                "this address's host holds {} subscribers, the most one host holds",
                l.max_per_host
            )
        } else if self.per_caller.get(&caller.name).copied().unwrap_or(0) >= l.max_per_caller {
            format!(
                "{} holds {} subscribers, the most one caller holds",
                caller.name, l.max_per_caller
            )
        } else {
            return None;
        };
        Some(Refusal::new(RefusalKind::Full, reason))
    }

    fn insert(&mut self, sub: Subscriber<A>) {
        bump(&mut self.per_host, &sub.key.0.host());
        bump(&mut self.per_caller, &sub.caller.name);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.index.insert(sub.key.clone(), slot);
        if let Some(t) = sub.expires {
            self.expiries.insert((t, slot));
        }
        self.slots[slot] = Some(sub);
    }

    /// Forgets the subscriber in `slot`, and whatever it had queued.
    fn remove(&mut self, slot: usize) -> Option<Subscriber<A>> {
        let sub = self.slots[slot].take()?;
        self.steps += 1;
        self.free.push(slot);
        self.index.remove(&sub.key);
        drop_one(&mut self.per_host, &sub.key.0.host());
        drop_one(&mut self.per_caller, &sub.caller.name);
        if let Some((stamp, ..)) = sub.queue.front() {
            self.ready.remove(stamp);
        }
        if let Some(t) = sub.expires {
            self.expiries.remove(&(t, slot));
        }
        Some(sub)
    }

    /// Publishes `payload` (JSON text) on `topic` to every subscriber of it.
    pub fn publish(&mut self, now: Timestamp, topic: &str, payload: &str) -> Published {
        // What goes next may change.
        self.out = None;
        let _ = now;
        if self.stopped {
            return Published::Stopped;
        }
        let event = match self.spec.offer(topic, payload) {
            Ok(event) => event,
            Err(refused) => return refused,
        };
        let stream = event.stream;
        self.offered += 1;
        let row = &self.spec.streams[stream];
        let (bound, on_full) = (row.bound, row.on_full);
        let mut n = 0;
        let Hub {
            index,
            slots,
            ready,
            steps,
            next_stamp,
            ..
        } = self;
        // In the subscribers' order, which is the order they are sent in.
        for &slot in index.values() {
            *steps += 1;
            let Some(sub) = slots[slot].as_mut() else {
                continue;
            };
            if sub.stream != stream {
                continue;
            }
            n += 1;
            *next_stamp += 1;
            sub.seq += 1;
            let entry = (*next_stamp, sub.seq, event.clone());
            if sub.queue.len() < bound {
                if sub.queue.is_empty() {
                    ready.insert(entry.0, slot);
                }
                sub.queue.push_back(entry);
            } else if on_full == OnFull::DropOld {
                if let Some((shed, ..)) = sub.queue.pop_front() {
                    ready.remove(&shed);
                }
                sub.queue.push_back(entry);
                if let Some((front, ..)) = sub.queue.front() {
                    ready.insert(*front, slot);
                }
            }
        }
        Published::Offered(n)
    }

    /// A role source's revision: every subscriber is rechecked now.
    pub fn announce(&mut self, now: Timestamp, revision: u64) {
        // What goes next may change.
        self.out = None;
        let _ = (now, revision);
        let slots: Vec<usize> = self.index.values().copied().collect();
        for slot in slots {
            self.recheck(slot);
        }
    }

    /// `stop()`: each subscriber receives `closed` after what was queued
    /// for it; a subscribe after it is refused `shutting_down`.
    pub fn stop(&mut self, now: Timestamp) {
        // What goes next may change.
        self.out = None;
        let _ = now;
        self.stopped = true;
        // A subscriber owed only its `closed` no longer expires.
        self.expiries.clear();
    }

    /// The credentials' expiries reached at `now` end their subscriptions
    /// (one `unauthorized` each, `expired`).
    pub fn handle_timeout(&mut self, now: Timestamp) {
        while let Some(&(at, slot)) = self.expiries.first() {
            if at > now {
                return;
            }
            // What goes next changes.
            self.out = None;
            self.expiries.pop_first();
            self.invalidate(slot, Invalidated::Expired);
        }
    }

    /// The next expiry.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.expiries.first().map(|(at, _)| *at)
    }

    /// The next datagram for the socket and where it goes, in the order
    /// offered, borrowed until the next call: it stays the next one until
    /// [`consume_transmit`](Hub::consume_transmit) says the socket took
    /// it, so one the socket would not take now is simply asked for again.
    /// `now` is checked against each credential's expiry first.
    pub fn pending_transmit(&mut self, now: Timestamp) -> Option<(&A, &[u8])> {
        self.handle_timeout(now);
        if self.out.is_none() {
            self.out = self.next_out();
        }
        self.out.as_ref().map(|o| (&o.to, o.datagram.as_slice()))
    }

    /// The socket was handed the datagram
    /// [`pending_transmit`](Hub::pending_transmit) named at `now` and took
    /// `n` bytes of it (the verb of every machine's `consume_output`): it
    /// leaves its queue whatever `n` is, since a datagram goes whole or not
    /// at all, and one the socket refused (`n` 0 after an error that is not
    /// "would block") is dropped, not sent again.
    pub fn consume_transmit(&mut self, now: Timestamp, n: usize) {
        let _ = (now, n);
        let Some(out) = self.out.take() else {
            return;
        };
        self.steps += 1;
        match out.from {
            From::Control => {
                if let Some(c) = self.control.pop_front() {
                    if c.answer {
                        self.answers -= 1;
                        self.answer_bytes -= c.datagram.len();
                    }
                }
            }
            From::Event(slot) => {
                if let Some(sub) = self.slots[slot].as_mut() {
                    if let Some((sent, ..)) = sub.queue.pop_front() {
                        self.ready.remove(&sent);
                    }
                    if let Some((next, ..)) = sub.queue.front() {
                        self.ready.insert(*next, slot);
                    }
                }
            }
            From::Closed(slot) => {
                self.remove(slot);
            }
        }
    }

    /// Chooses the next datagram without taking it from its queue.
    fn next_out(&mut self) -> Option<Out<A>> {
        loop {
            self.steps += 1;
            let control = self.control.front().map(|c| c.stamp);
            let event = self
                .ready
                .first_key_value()
                .map(|(&stamp, &slot)| (stamp, slot));
            let slot = match (control, event) {
                (Some(c), Some((e, _))) if c < e => None,
                (Some(_), None) => None,
                (_, Some((_, slot))) => Some(slot),
                (None, None) => return self.close_next(),
            };
            let Some(slot) = slot else {
                let c = self.control.front()?;
                return Some(Out {
                    to: c.to.clone(),
                    datagram: c.datagram.clone().into_bytes(),
                    from: From::Control,
                });
            };
            // No event under an authorization older than the source's
            // revision.
            let sub = self.slots[slot].as_ref()?;
            if self.sources.revision(&sub.caller) != sub.revision {
                self.recheck(slot);
                continue;
            }
            let (_, seq, event) = sub.queue.front()?;
            let datagram = format!(
                "{{\"type\":\"event\",\"id\":{},\"topic\":{},\"seq\":{seq},\"payload\":{}}}",
                sub.key.1, self.topics_json[event.stream], event.payload
            );
            return Some(Out {
                to: sub.key.0.clone(),
                datagram: datagram.into_bytes(),
                from: From::Event(slot),
            });
        }
    }

    /// After `stop()`, once nothing else is queued, the first subscriber
    /// left is sent `closed` (and forgotten once the socket took it).
    fn close_next(&self) -> Option<Out<A>> {
        if !self.stopped {
            return None;
        }
        let (key, &slot) = self.index.first_key_value()?;
        let datagram = format!(
            "{{\"type\":\"closed\",\"id\":{},\"reason\":\"shutting_down\"}}",
            key.1
        );
        Some(Out {
            to: key.0.clone(),
            datagram: datagram.into_bytes(),
            from: From::Closed(slot),
        })
    }

    fn recheck(&mut self, slot: usize) {
        self.steps += 1;
        let Some(sub) = self.slots[slot].as_ref() else {
            return;
        };
        if self.sources.authorized(&self.spec, &sub.caller, sub.stream) {
            let revision = self.sources.revision(&sub.caller);
            if let Some(sub) = self.slots[slot].as_mut() {
                sub.revision = revision;
            }
        } else {
            self.invalidate(slot, Invalidated::Revoked);
        }
    }

    /// Ends the subscription: one `unauthorized`, its queue dropped.
    fn invalidate(&mut self, slot: usize, why: Invalidated) {
        let Some(sub) = self.remove(slot) else {
            return;
        };
        let topic = &self.spec.streams[sub.stream].topic;
        let datagram = format!(
            "{{\"type\":\"unauthorized\",\"id\":{},\"topic\":{},\"reason\":\"{}\"}}",
            sub.key.1,
            Value::from(topic.as_str()),
            why.as_str()
        );
        let stamp = self.stamp();
        self.control.push_back(Control {
            stamp,
            to: sub.key.0,
            datagram,
            answer: false,
        });
    }
}
