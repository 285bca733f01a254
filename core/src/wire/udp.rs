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

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::hale::runtime::{BearerSource, Describer, Principal, Refusal, RefusalKind, RoleSource};
use crate::wire::ws::admission::Sources;
use crate::wire::ws::hub::Published;
use crate::wire::ws::hub_spec::{HubSpec, Invalidated, Offered, OnFull};
use crate::Timestamp;

/// A subscriber's key: its address and its id's JSON text.
type Key<A> = (A, String);

#[derive(Debug)]
struct Subscriber {
    stream: usize,
    /// The id as the subscribe wrote it (JSON text).
    id: String,
    caller: Principal,
    /// The credential's expiry on the monotonic clock.
    expires: Option<Timestamp>,
    seq: u64,
    revision: u64,
    queue: VecDeque<(u64, u64, Arc<Offered>)>,
    /// `stop()` ran: `closed` follows what is queued.
    closing: bool,
}

/// The datagram the socket is offered next, and the queue it leaves when
/// taken.
#[derive(Debug)]
struct Out<A> {
    to: A,
    datagram: Vec<u8>,
    from: From<A>,
}

#[derive(Debug)]
enum From<A> {
    Control,
    Event(Key<A>),
    Closed(Key<A>),
}

/// A datagram hub. See the module documentation.
pub struct Hub<A: Ord + Clone> {
    spec: HubSpec,
    topics_json: Vec<String>,
    sources: Sources,
    subs: BTreeMap<Key<A>, Subscriber>,
    /// Answers that are no subscription's (refusals, descriptions,
    /// `unauthorized` and `closed` of a subscriber gone), with their stamps.
    control: VecDeque<(u64, A, String)>,
    /// The datagram offered to the socket, until it takes it or an input
    /// may have changed which comes next.
    out: Option<Out<A>>,
    next_stamp: u64,
    stopped: bool,
    offered: u64,
}

impl<A: Ord + Clone> std::fmt::Debug for Hub<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("udp::Hub")
            .field("name", &self.spec.name)
            .field("subscribers", &self.subs.len())
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

impl<A: Ord + Clone> Hub<A> {
    /// A datagram hub serving `spec` under its two sources, describing
    /// itself with `describer` (handed no members).
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
        Hub {
            spec,
            topics_json,
            sources: Sources {
                bearer,
                roles,
                describer,
            },
            subs: BTreeMap::new(),
            control: VecDeque::new(),
            out: None,
            next_stamp: 0,
            stopped: false,
            offered: 0,
        }
    }

    /// `events()`: the publishes that fit the bus frame.
    pub fn events(&self) -> u64 {
        self.offered
    }

    /// `subscribers()`: the subscriptions admitted and not ended.
    pub fn subscribers(&self) -> usize {
        self.subs.values().filter(|s| !s.closing).count()
    }

    /// How many datagrams the subscriber (`from`, the id whose JSON text is
    /// `id`) holds for the socket (at most its row's `bound`); `None` when
    /// there is no such subscriber.
    pub fn queued(&self, from: &A, id: &str) -> Option<usize> {
        self.subs
            .get(&(from.clone(), id.to_owned()))
            .map(|s| s.queue.len())
    }

    /// Whether `stop()` ran and every `closed` was handed to the socket.
    pub fn is_finished(&self) -> bool {
        self.stopped && self.subs.is_empty() && self.control.is_empty()
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    fn answer(&mut self, to: &A, datagram: Value) {
        let stamp = self.stamp();
        self.control
            .push_back((stamp, to.clone(), datagram.to_string()));
    }

    /// One datagram from `from`, read at `now`; `wall` is the wall clock.
    pub fn handle_datagram(&mut self, now: Timestamp, wall: Timestamp, from: A, data: &[u8]) {
        // What goes next may change.
        self.out = None;
        let refuse = |hub: &mut Hub<A>, topic: Option<&str>, id: Option<&Value>, r: Refusal| {
            let id = id.cloned().unwrap_or(Value::Null);
            hub.answer(
                &from,
                json!({"type": "refusal", "id": id, "topic": topic, "refusal": r.to_json()}),
            );
        };
        let malformed = |reason: &str| Refusal::new(RefusalKind::Malformed, reason);
        let frame = match serde_json::from_slice::<Value>(data) {
            Ok(Value::Object(frame)) => frame,
            _ => {
                return refuse(
                    self,
                    None,
                    None,
                    malformed("not a frame: a datagram is one JSON object naming its type"),
                )
            }
        };
        let topic = frame.get("topic").and_then(Value::as_str);
        // The id is a JSON string or number, echoed as written.
        let id = frame.get("id").filter(|v| v.is_string() || v.is_number());
        let Some(id) = id else {
            return refuse(
                self,
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
                self.subs.remove(&key);
                return;
            }
            Some("describe") => {
                let answer = match self.sources.authenticate(now, wall, token) {
                    Ok((caller, _)) => {
                        let document = self.sources.describe(&self.spec, &caller);
                        let document: Value =
                            serde_json::from_slice(&document).unwrap_or(Value::Null);
                        json!({"type": "description", "id": id, "document": document})
                    }
                    Err(reason) => json!({"type": "description", "id": id, "document": null,
                        "refusal": Refusal::new(RefusalKind::Unauthenticated, reason).to_json()}),
                };
                return self.answer(&from, answer);
            }
            Some(other) => {
                return refuse(
                    self,
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
                return refuse(self, Some(topic), Some(id), r);
            }
        };
        // 3–5. The topic is bound, its requires held, the hub not stopping.
        let stream = match self.sources.admit(&self.spec, &caller, topic, self.stopped) {
            Ok(stream) => stream,
            Err(r) => return refuse(self, Some(topic), Some(id), r),
        };
        match self.subs.get(&key) {
            // Admitted again: nothing changes.
            Some(s) if s.stream == stream => {}
            Some(s) => {
                let held = self.spec.streams[s.stream].topic.clone();
                let r = malformed(&format!(
                    "the id {} subscribes to {held}: unsubscribe it, or choose another id",
                    key.1
                ));
                return refuse(self, Some(topic), Some(id), r);
            }
            None => {
                let revision = self.sources.revision(&caller);
                self.subs.insert(
                    key.clone(),
                    Subscriber {
                        stream,
                        id: key.1.clone(),
                        caller,
                        expires,
                        seq: 0,
                        revision,
                        queue: VecDeque::new(),
                        closing: false,
                    },
                );
            }
        }
        self.answer(
            &from,
            json!({"type": "subscribed", "id": id, "topic": topic}),
        );
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
        let mut stamp = self.next_stamp;
        for sub in self.subs.values_mut().filter(|s| s.stream == stream) {
            n += 1;
            stamp += 1;
            sub.seq += 1;
            let entry = (stamp, sub.seq, event.clone());
            if sub.queue.len() < bound {
                sub.queue.push_back(entry);
            } else if on_full == OnFull::DropOld {
                sub.queue.pop_front();
                sub.queue.push_back(entry);
            }
        }
        self.next_stamp = stamp;
        Published::Offered(n)
    }

    /// A role source's revision: every subscriber is rechecked now.
    pub fn announce(&mut self, now: Timestamp, revision: u64) {
        // What goes next may change.
        self.out = None;
        let _ = (now, revision);
        let keys: Vec<Key<A>> = self.subs.keys().cloned().collect();
        for key in keys {
            self.recheck(&key);
        }
    }

    /// `stop()`: each subscriber receives `closed` after what was queued
    /// for it; a subscribe after it is refused `shutting_down`.
    pub fn stop(&mut self, now: Timestamp) {
        // What goes next may change.
        self.out = None;
        let _ = now;
        self.stopped = true;
        for sub in self.subs.values_mut() {
            sub.closing = true;
        }
    }

    /// The credentials' expiries reached at `now` end their subscriptions
    /// (one `unauthorized` each, `expired`).
    pub fn handle_timeout(&mut self, now: Timestamp) {
        // What goes next may change.
        self.out = None;
        let due: Vec<Key<A>> = self
            .subs
            .iter()
            .filter(|(_, s)| !s.closing && s.expires.is_some_and(|t| t <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.invalidate(&key, Invalidated::Expired);
        }
    }

    /// The next expiry.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.subs
            .values()
            .filter(|s| !s.closing)
            .filter_map(|s| s.expires)
            .min()
    }

    /// The next datagram for the socket and where it goes, in the order
    /// offered, borrowed until the next call: it stays the next one until
    /// [`consume_transmit`](Hub::consume_transmit) says the socket took
    /// it, so one the socket would not take now is simply asked for again.
    /// `now` is checked against each credential's expiry first.
    pub fn pending_transmit(&mut self, now: Timestamp) -> Option<(&A, &[u8])> {
        if self.out.is_none() {
            self.out = self.next_out(now);
        }
        self.out.as_ref().map(|o| (&o.to, o.datagram.as_slice()))
    }

    /// The socket took the datagram [`pending_transmit`](Hub::pending_transmit)
    /// named: it leaves its queue.
    pub fn consume_transmit(&mut self) {
        let Some(out) = self.out.take() else {
            return;
        };
        match out.from {
            From::Control => {
                self.control.pop_front();
            }
            From::Event(key) => {
                if let Some(sub) = self.subs.get_mut(&key) {
                    sub.queue.pop_front();
                }
            }
            From::Closed(key) => {
                self.subs.remove(&key);
            }
        }
    }

    /// Chooses the next datagram without taking it from its queue.
    fn next_out(&mut self, now: Timestamp) -> Option<Out<A>> {
        self.handle_timeout(now);
        loop {
            let control = self.control.front().map(|(s, ..)| *s);
            let event = self
                .subs
                .iter()
                .filter_map(|(k, s)| s.queue.front().map(|q| (q.0, k)))
                .min_by_key(|(stamp, _)| *stamp)
                .map(|(stamp, k)| (stamp, k.clone()));
            let key = match (control, event) {
                (Some(c), Some((e, _))) if c < e => None,
                (Some(_), None) => None,
                (_, Some((_, k))) => Some(k),
                (None, None) => return self.close_next(),
            };
            let Some(key) = key else {
                let (_, to, datagram) = self.control.front()?;
                return Some(Out {
                    to: to.clone(),
                    datagram: datagram.clone().into_bytes(),
                    from: From::Control,
                });
            };
            // No event under an authorization older than the source's
            // revision.
            let sub = &self.subs[&key];
            if self.sources.revision(&sub.caller) != sub.revision {
                self.recheck(&key);
                continue;
            }
            let (_, seq, event) = sub.queue.front()?;
            let datagram = format!(
                "{{\"type\":\"event\",\"id\":{},\"topic\":{},\"seq\":{seq},\"payload\":{}}}",
                sub.id, self.topics_json[event.stream], event.payload
            );
            return Some(Out {
                to: key.0.clone(),
                datagram: datagram.into_bytes(),
                from: From::Event(key),
            });
        }
    }

    /// After `stop()`, a subscriber with nothing queued is sent `closed`
    /// (and forgotten once the socket took it).
    fn close_next(&self) -> Option<Out<A>> {
        let (key, sub) = self
            .subs
            .iter()
            .find(|(_, s)| s.closing && s.queue.is_empty())?;
        let datagram = format!(
            "{{\"type\":\"closed\",\"id\":{},\"reason\":\"shutting_down\"}}",
            sub.id
        );
        Some(Out {
            to: key.0.clone(),
            datagram: datagram.into_bytes(),
            from: From::Closed(key.clone()),
        })
    }

    fn recheck(&mut self, key: &Key<A>) {
        let Some(sub) = self.subs.get(key) else {
            return;
        };
        let caller = sub.caller.clone();
        if self.sources.authorized(&self.spec, &caller, sub.stream) {
            let revision = self.sources.revision(&caller);
            if let Some(sub) = self.subs.get_mut(key) {
                sub.revision = revision;
            }
        } else {
            self.invalidate(key, Invalidated::Revoked);
        }
    }

    /// Ends the subscription: one `unauthorized`, its queue dropped.
    fn invalidate(&mut self, key: &Key<A>, why: Invalidated) {
        let Some(sub) = self.subs.remove(key) else {
            return;
        };
        let topic = &self.spec.streams[sub.stream].topic;
        let datagram = format!(
            "{{\"type\":\"unauthorized\",\"id\":{},\"topic\":{},\"reason\":\"{}\"}}",
            sub.id,
            Value::from(topic.as_str()),
            why.as_str()
        );
        let stamp = self.stamp();
        self.control.push_back((stamp, key.0.clone(), datagram));
    }
}
