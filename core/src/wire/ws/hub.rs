//! `ws::Hub` (§ Streams): every connection of one WebSocket hub, its
//! subscriptions and their queues, as one sans-I/O machine.
//!
//! A connection begins as HTTP: `GET /.description` is answered with the
//! caller's document, and a WebSocket upgrade is answered 101, the
//! credential it presents (`Authorization: Bearer` or `?access_token=`)
//! read once against the hub's bearer source. Then the connection speaks
//! the JSON frames of § Streams: `subscribe` in; `subscribed`, `refusal`,
//! `event`, `unauthorized` and `closed` out.
//!
//! Each subscription keeps its own queue of at most its row's `bound`
//! frames, shedding under its `on_full`; every event offered to it takes
//! the next `seq`, delivered or shed. A connection writes one frame at a
//! time, in the order the frames were offered: the next leaves its queue
//! only once the socket took the last one whole, so a reader that does not
//! read holds at most `bound` frames per subscription, and one that takes
//! nothing of a write for 5 s is dropped alone.
//!
//! Authorization is not once for all: the credential's expiry is a timer
//! ([`poll_timeout`](Hub::poll_timeout)) that ends the connection's
//! subscriptions with `unauthorized` `expired` at its instant, and a role
//! source's revision ([`announce`](Hub::announce), or a revision its
//! grants state found at a delivery) rechecks each subscription, ending the
//! ones whose row's requires no longer holds with `unauthorized` `revoked`
//! and dropping what they held.
//!
//! What one peer can hold is bounded by [`HubLimits`](super::HubLimits):
//! a connection owed `max_answers` answers (its calls with the exposure
//! and the answers waiting to be written) is read no further until it is
//! answered ([`wants_read`](Hub::wants_read)); a connection whose upgrade
//! named nobody is closed (1008) `anonymous_wait` after it; at most
//! `max_unproven` of the `max_connections` held are not yet upgraded or
//! name nobody, the oldest of them dropped to make room; and `stop()`
//! lets every connection go `teardown_wait` after it.
//!
//! # The order of calls
//!
//! 1. Make the hub ([`Hub::new`]); for each accepted socket,
//!    [`handle_accept`](Hub::handle_accept) with the driver's id for it.
//! 2. Feed it input: [`handle_data`](Hub::handle_data) with the bytes read
//!    (the wall clock with them: an upgrade reads the credential's expiry
//!    on it), [`handle_eof`](Hub::handle_eof) at the end of a socket's
//!    input, [`handle_timeout`](Hub::handle_timeout) once the deadline
//!    [`poll_timeout`](Hub::poll_timeout) named has passed.
//! 3. The program's side: [`publish`](Hub::publish) an event,
//!    [`announce`](Hub::announce) a revision, [`stop`](Hub::stop).
//! 4. After any of these, take [`poll_event`](Hub::poll_event) until
//!    `None`: write a connection's [`pending_output`](Hub::pending_output)
//!    on [`HubEvent::Output`] and report what the socket took with
//!    [`consume_output`](Hub::consume_output) (then look at the pending
//!    output again: the next frame may be waiting), and close the socket on
//!    [`HubEvent::Close`]. A driver that gathers a connection's frames into
//!    one write takes them with [`take_output`](Hub::take_output) instead.
//! 5. Re-arm the timer from [`poll_timeout`](Hub::poll_timeout).
//! 6. With a surface served over the hub ([`serve_calls`](Hub::serve_calls),
//!    § Rpcs on a hub), the same events carry its calls: hand each
//!    [`HubEvent::Call`] (and each [`HubEvent::Lost`]) to the exposure;
//!    hand each of its deliveries to [`deliver`](Hub::deliver), then poll
//!    events again.
//!
//! `now` is the driver's monotonic clock in nanoseconds; the wall clock
//! (nanoseconds since the Unix epoch) comes in only with bytes read, since
//! a credential's expiry is stated on it. The instant is turned into a
//! deadline on the monotonic clock at the upgrade.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

mod frames_in;
mod upgrade;

use super::admission::Sources;
use super::hub_spec::{frames, HubSpec, Invalidated, Offered, OnFull};
// Defined beside the rows, which admission (`super::admission`) reads as
// well: the hub and admission both import them from below, not from each
// other.
pub use super::hub_spec::{Published, EXPIRED_REASON, STOPPING_REASON};
use super::{close_code, upgrade, WsConn, WsEvent};
use crate::hale::runtime::outcome::reasons;
use crate::hale::runtime::sources;
use crate::hale::runtime::{
    BearerSource, Credential, Delivery, Describer, Outcome, Principal, Refusal, RefusalKind,
    Request, RoleSource,
};
use crate::wire::http1::{HttpConn, HttpEvent, HttpRequest};
use crate::wire::line::{parse_line_keeping, LineRequest};
use crate::wire::machine::Machine;
use crate::wire::unix;
use crate::Timestamp;

/// The driver's id of one accepted connection.
pub type ConnId = u64;

/// The close reason of a connection whose upgrade named nobody, at the end
/// of its [`anonymous_wait`](super::HubLimits::anonymous_wait) (sent with
/// 1008, RFC 6455's code for a policy's end of a connection).
pub fn anonymous_reason(limits: &super::HubLimits) -> String {
    format!(
        "unauthenticated: a connection that names nobody is held {} ms",
        limits.anonymous_wait / 1_000_000
    )
}

/// What the hub asks of its driver, in the order it produced them: one
/// queue for the sockets and, with a surface served over the hub
/// ([`Hub::serve_calls`]), for its exposure. A connection that called is
/// [`Lost`](HubEvent::Lost) to the exposure just before its
/// [`Close`](HubEvent::Close), and every [`Call`](HubEvent::Call) of it
/// comes before both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HubEvent {
    /// The connection has bytes to write: write its
    /// [`pending_output`](Hub::pending_output).
    Output(ConnId),
    /// The connection is done (its last bytes written, or dropped): close
    /// the socket. The id is free again.
    Close(ConnId),
    /// A `call` frame, framed for the exposure: its correlation is the
    /// connection, its credential the one presented at the upgrade. Boxed:
    /// a request is many times the size of the other events.
    Call(Box<Request>),
    /// A connection that called is gone: its calls with the exposure are
    /// lost.
    Lost(ConnId),
}

/// A frame waiting in a subscription's queue.
#[derive(Debug)]
struct Queued {
    /// When it was offered to the connection, in the connection's order.
    stamp: u64,
    seq: u64,
    event: Arc<Offered>,
}

#[derive(Debug)]
struct Subscription {
    stream: usize,
    /// The last seq taken.
    seq: u64,
    /// The role source's revision the subscription was last authorized at
    /// (as its grants state it; 0 when the source states none).
    revision: u64,
    queue: VecDeque<Queued>,
}

/// Who the credential at the upgrade named.
#[derive(Clone, Debug)]
enum Caller {
    Named(Principal),
    /// Nobody, and why (the unauthenticated reason).
    Nobody(String),
}

enum Phase {
    /// Reading the HTTP request before any upgrade (boxed: a connection
    /// spends most of its life upgraded).
    Http(Box<HttpConn>),
    /// Upgraded.
    Ws(WsConn),
}

struct Conn {
    /// The driver's id: the correlation of its calls.
    id: ConnId,
    phase: Phase,
    /// The 101 response, written before anything of the WebSocket.
    head: Vec<u8>,
    head_at: usize,
    caller: Caller,
    /// The token presented at the upgrade, which every call carries.
    token: Option<String>,
    /// Whether a call was framed on this connection (its loss is then the
    /// exposure's to know).
    called: bool,
    /// Its place in the order of accepts: the oldest unproven connection is
    /// the first to make room.
    order: u64,
    /// Calls framed for the exposure and not yet answered.
    calls_out: usize,
    /// How many frames of `control` answer a frame the peer sent.
    answers_waiting: usize,
    /// For a connection whose upgrade named nobody: when it is closed.
    anonymous_until: Option<Timestamp>,
    /// The credential's expiry on the monotonic clock, until it passed.
    expires: Option<Timestamp>,
    /// The credential is spent.
    expired: bool,
    subs: Vec<Subscription>,
    /// Frames that are not events (answers, `unauthorized`, `closed`), each
    /// with its stamp and whether it answers a frame of the peer's.
    control: VecDeque<(u64, String, bool)>,
    next_stamp: u64,
    /// `stop()` ran: once everything queued is written, `closed` and the
    /// close frame follow.
    stopping: bool,
    /// When the close frame was written (the peer's is awaited).
    close_sent: Option<Timestamp>,
    /// When the socket last took bytes, or a write began.
    progress: Timestamp,
}

impl Conn {
    fn pending(&self) -> &[u8] {
        if self.head_at < self.head.len() {
            return &self.head[self.head_at..];
        }
        match &self.phase {
            Phase::Http(http) => http.pending_output(),
            Phase::Ws(ws) => ws.pending_output(),
        }
    }

    fn is_done(&self) -> bool {
        match &self.phase {
            Phase::Http(http) => http.is_closed(),
            Phase::Ws(ws) => ws.is_closed(),
        }
    }

    /// The socket took `n` bytes of the pending output at `now`.
    fn consume(&mut self, now: Timestamp, n: usize) {
        let mut n = n;
        if n > 0 {
            self.progress = now;
        }
        if self.head_at < self.head.len() {
            let took = n.min(self.head.len() - self.head_at);
            self.head_at += took;
            n -= took;
        }
        match &mut self.phase {
            Phase::Http(http) => http.consume_output(now, n),
            Phase::Ws(ws) => ws.consume_output(now, n),
        }
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Queues a frame that answers none of the peer's (`unauthorized`).
    fn push_control(&mut self, frame: String) {
        let stamp = self.stamp();
        self.control.push_back((stamp, frame, false));
    }

    /// Queues the answer to a frame of the peer's (`subscribed`, a
    /// refusal, a reply).
    fn push_answer(&mut self, frame: String) {
        let stamp = self.stamp();
        self.answers_waiting += 1;
        self.control.push_back((stamp, frame, true));
    }

    fn clear_control(&mut self) {
        self.control.clear();
        self.answers_waiting = 0;
    }

    /// The answers the connection is owed: its calls with the exposure and
    /// the answers waiting to be written.
    fn owed(&self) -> usize {
        self.calls_out + self.answers_waiting
    }

    /// Whether frames the codec read wait to be taken, and the connection
    /// is owed few enough answers to take them now.
    fn resumable(&self, max_answers: usize) -> bool {
        matches!(&self.phase, Phase::Ws(ws) if ws.has_events()) && self.owed() < max_answers
    }

    /// The connection broke: its subscriptions go with it, and nothing more
    /// is written.
    fn drop_now(&mut self, now: Timestamp) {
        if let Phase::Ws(ws) = &mut self.phase {
            ws.handle_eof(now);
            while ws.poll_event().is_some() {}
            let pending = ws.pending_output().len();
            ws.consume_output(now, pending);
        }
        self.head_at = self.head.len();
        self.subs.clear();
        self.clear_control();
    }

    /// Ends the connection at once, in whatever phase, nothing more
    /// written: to make room for a newer one, or at the end of `stop()`'s
    /// wait.
    fn evict(&mut self, now: Timestamp) {
        if let Phase::Http(http) = &mut self.phase {
            // What it was writing counts as written (a response's writing
            // takes output only while it lasts), then it is ended.
            let pending = http.pending_output().len();
            http.consume_output(now, pending);
            http.abort();
            while http.poll_event().is_some() {}
        }
        self.drop_now(now);
    }

    /// Ends every subscription with one `unauthorized` frame each, dropping
    /// what they held.
    fn invalidate_all(&mut self, spec: &HubSpec, why: Invalidated) {
        for sub in std::mem::take(&mut self.subs) {
            self.push_control(frames::unauthorized(&spec.streams[sub.stream].topic, why));
        }
    }
}

/// The unproven connections (`HubLimits::max_unproven`), each by its place
/// in the order of accepts.
#[derive(Default)]
struct Unproven {
    /// Not yet upgraded.
    waiting: BTreeSet<(u64, ConnId)>,
    /// Upgraded, their credential naming nobody.
    anonymous: BTreeSet<(u64, ConnId)>,
}

impl Unproven {
    fn len(&self) -> usize {
        self.waiting.len() + self.anonymous.len()
    }

    /// The connection to drop to make room: the oldest that named nobody
    /// (it can do nothing), else the oldest still in its HTTP request.
    fn oldest(&self) -> Option<ConnId> {
        self.anonymous
            .first()
            .or_else(|| self.waiting.first())
            .map(|&(_, id)| id)
    }

    fn forget(&mut self, conn: &Conn) {
        let key = (conn.order, conn.id);
        if !self.waiting.remove(&key) {
            self.anonymous.remove(&key);
        }
    }
}

/// What every connection is held to: the rows, the sources, and the
/// frames' fixed parts. Apart from the connections so that a connection
/// can be worked on in place while these are read.
struct Rules {
    spec: HubSpec,
    /// Each row's topic as JSON text, written into every event frame.
    topics_json: Vec<String>,
    sources: Sources,
}

/// A WebSocket hub. See the module documentation.
pub struct Hub {
    rules: Rules,
    /// Boxed: [`with_conn`](Hub::with_conn) takes a connection out and
    /// puts it back for every frame it is offered or writes, and a B-tree
    /// shifts its values on each, so they are pointers, not whole
    /// connections (the fan-out's copies were a sixth of its time).
    conns: BTreeMap<ConnId, Box<Conn>>,
    events: VecDeque<HubEvent>,
    /// Whether a surface is served over the hub (`call` frames taken).
    serves_calls: bool,
    /// The unproven connections, which `max_unproven` bounds.
    unproven: Unproven,
    /// Sockets accepted so far: the next one's order.
    accepted: u64,
    stopped: bool,
    /// When `stop()`'s wait ends: every connection still open is dropped.
    stop_deadline: Option<Timestamp>,
    offered: u64,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("name", &self.rules.spec.name)
            .field("connections", &self.conns.len())
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// A hub serving `spec` under its two sources (`bearer: None` names
    /// nobody), describing itself to a caller with `describer` (handed the
    /// caller, the roles it holds among those the rows require, and no
    /// members).
    pub fn new(
        spec: HubSpec,
        bearer: Option<Box<dyn BearerSource + Send>>,
        roles: Box<dyn RoleSource + Send>,
        describer: Box<dyn Describer + Send>,
    ) -> Hub {
        let topics_json = spec
            .streams
            .iter()
            .map(|s| frames::topic_json(&s.topic))
            .collect();
        Hub {
            rules: Rules {
                spec,
                topics_json,
                sources: Sources {
                    bearer,
                    roles,
                    describer,
                },
            },
            conns: BTreeMap::new(),
            events: VecDeque::new(),
            serves_calls: false,
            unproven: Unproven::default(),
            accepted: 0,
            stopped: false,
            stop_deadline: None,
            offered: 0,
        }
    }

    /// Serves a surface over the hub (`api::serve(S, self.hub, …)`): its
    /// `call` frames are framed for the exposure ([`HubEvent::Call`], among
    /// the hub's events) and its outcomes written back as `reply` frames
    /// ([`deliver`](Hub::deliver)). The exposure's bearer source is the
    /// hub's, so the caller is the one the upgrade's credential names.
    pub fn serve_calls(&mut self) {
        self.serves_calls = true;
    }

    /// Writes the exposure's outcome as a `reply` frame on its connection
    /// (the Unix reply's fields, § Rpcs on a hub), in the order frames are
    /// offered there. A delivery for a connection gone is dropped.
    pub fn deliver(&mut self, now: Timestamp, delivery: Delivery) {
        let Delivery {
            correlation,
            request_id,
            client_id,
            caller,
            outcome,
            ..
        } = delivery;
        self.with_conn(now, correlation, |hub, conn| {
            conn.calls_out = conn.calls_out.saturating_sub(1);
            let mut caller_json = Vec::with_capacity(64);
            caller.write_json(&mut caller_json);
            // The Unix reply's members under `"type":"reply"`.
            let mut frame = Vec::with_capacity(160);
            frame.extend_from_slice(b"{\"type\":\"reply\",");
            unix::write_reply_members(
                &outcome,
                request_id,
                client_id.as_deref(),
                &caller_json,
                &mut frame,
            );
            frame.push(b'}');
            let frame = String::from_utf8(frame)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            conn.push_answer(frame);
            hub.rules.pump(now, conn);
        });
    }

    /// What the hub serves.
    pub fn spec(&self) -> &HubSpec {
        &self.rules.spec
    }

    /// The role source, to change its grants before an
    /// [`announce`](Hub::announce) (a table fixed in the program cannot
    /// announce its own revisions).
    pub fn roles_mut(&mut self) -> &mut (dyn RoleSource + Send) {
        self.rules.sources.roles.as_mut()
    }

    /// `events()`: how many events the hub's topics have offered (each
    /// publish that fit the bus frame, whether or not anyone subscribed).
    pub fn events(&self) -> u64 {
        self.offered
    }

    /// `subscribers()`: the subscriptions admitted and not ended, over
    /// every connection.
    pub fn subscribers(&self) -> usize {
        self.conns.values().map(|c| c.subs.len()).sum()
    }

    /// `connections()`: the WebSocket connections held (upgraded, not yet
    /// closed).
    pub fn connections(&self) -> usize {
        self.conns
            .values()
            .filter(|c| matches!(c.phase, Phase::Ws(_)))
            .count()
    }

    /// How many frames the subscription of connection `id` to `topic`
    /// holds behind its write (at most its row's `bound`); `None` when
    /// there is no such subscription.
    pub fn queued(&self, id: ConnId, topic: &str) -> Option<usize> {
        let stream = self.rules.spec.stream(topic)?;
        let conn = self.conns.get(&id)?;
        conn.subs
            .iter()
            .find(|s| s.stream == stream)
            .map(|s| s.queue.len())
    }

    /// Whether `stop()` ran.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the hub stopped and every connection is closed.
    pub fn is_finished(&self) -> bool {
        self.stopped && self.conns.is_empty()
    }

    /// Whether the hub reads `id` now: false while the client is owed as
    /// many answers as the limits allow (`max_answers`: its calls with the
    /// exposure and the answers waiting to be written; it sends faster
    /// than it is answered, or does not read), or has more bytes waiting
    /// to be written than `max_output`, until it is answered and reads. A
    /// driver stops reading the socket meanwhile and reads it again once
    /// this is true.
    pub fn wants_read(&self, id: ConnId) -> bool {
        let limits = &self.rules.spec.limits;
        self.conns.get(&id).is_some_and(|c| match &c.phase {
            Phase::Http(http) => http.wants_read(),
            Phase::Ws(ws) => {
                !ws.has_events()
                    && c.owed() < limits.max_answers
                    && c.pending().len() < limits.max_output
            }
        })
    }

    /// How many answers connection `id` is owed: its calls handed to the
    /// exposure and not yet answered, and the answers waiting to be
    /// written. Never above `max_answers`: the frames past it wait, unread.
    pub fn owed(&self, id: ConnId) -> Option<usize> {
        self.conns.get(&id).map(|c| c.owed())
    }

    /// How many connections are unproven (not yet upgraded, or upgraded
    /// with a credential that named nobody): at most `max_unproven`.
    pub fn unproven(&self) -> usize {
        self.unproven.len()
    }

    /// The next event, if any. Poll until `None` after every input.
    pub fn poll_event(&mut self) -> Option<HubEvent> {
        self.events.pop_front()
    }

    /// A socket was accepted at `now`; `id` names it until its
    /// [`HubEvent::Close`]. The hub holds at most `max_connections`, and of
    /// them at most `max_unproven` not yet upgraded or naming nobody: past
    /// either, the oldest unproven connection is dropped to make room (one
    /// that named nobody first), and when every connection held is proven
    /// the new one is closed at once (its `Close` follows).
    pub fn handle_accept(&mut self, now: Timestamp, id: ConnId) {
        let limits = self.rules.spec.limits;
        // An id accepted again replaces its connection (a driver's error):
        // the one replaced is no longer counted.
        if let Some(old) = self.conns.remove(&id) {
            self.unproven.forget(&old);
        }
        if self.conns.len() >= limits.max_connections || self.unproven.len() >= limits.max_unproven
        {
            match self.unproven.oldest() {
                Some(victim) => self.with_conn(now, victim, |_, conn| conn.evict(now)),
                None => return self.events.push_back(HubEvent::Close(id)),
            }
        }
        let order = self.accepted;
        self.accepted += 1;
        self.unproven.waiting.insert((order, id));
        let conn = Conn {
            id,
            phase: Phase::Http(Box::new(HttpConn::new(now, self.rules.spec.limits.http))),
            head: Vec::new(),
            head_at: 0,
            caller: Caller::Nobody(reasons::NOBODY.to_owned()),
            token: None,
            called: false,
            order,
            calls_out: 0,
            answers_waiting: 0,
            anonymous_until: None,
            expires: None,
            expired: false,
            subs: Vec::new(),
            control: VecDeque::new(),
            next_stamp: 0,
            stopping: false,
            close_sent: None,
            progress: now,
        };
        self.conns.insert(id, Box::new(conn));
    }

    /// Bytes read from the connection `id` at `now`; `wall` is the wall
    /// clock, which an upgrade reads the credential's expiry against.
    pub fn handle_data(&mut self, now: Timestamp, wall: Timestamp, id: ConnId, data: &[u8]) {
        self.with_conn(now, id, |hub, conn| {
            match &mut conn.phase {
                Phase::Http(http) => http.handle_data(now, data),
                Phase::Ws(ws) => ws.handle_data(now, data),
            }
            hub.take_input(now, wall, conn);
        });
    }

    /// The peer's end of `id` closed (or a read failed) at `now`: the
    /// connection is forgotten, its subscriptions with it, and nothing
    /// more is written to it.
    pub fn handle_eof(&mut self, now: Timestamp, id: ConnId) {
        self.with_conn(now, id, |hub, conn| match &mut conn.phase {
            Phase::Http(http) => {
                http.handle_eof(now);
                hub.take_input(now, 0, conn);
            }
            Phase::Ws(_) => conn.drop_now(now),
        });
    }

    /// Time passes: credentials reach their expiry, a write stalled past
    /// its limit drops its connection, a peer that never answered the
    /// close frame is let go, an HTTP request too slow is ended. Before
    /// every deadline, nothing happens.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        if self.stop_deadline.is_some_and(|t| now >= t) {
            // stop()'s wait is over: whoever is still open is let go.
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                self.with_conn(now, id, |_, conn| conn.evict(now));
            }
            return;
        }
        let ids: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| self.rules.deadline(c).is_some_and(|d| d <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.with_conn(now, id, |hub, conn| hub.conn_timeout(now, conn));
        }
    }

    /// The deadline [`handle_timeout`](Hub::handle_timeout) next acts on.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let stop = self.stop_deadline.filter(|_| !self.conns.is_empty());
        self.conns
            .values()
            .filter_map(|c| self.rules.deadline(c))
            .chain(stop)
            .min()
    }

    /// The bytes `id` still has to write, borrowed until the next call.
    pub fn pending_output(&self, id: ConnId) -> &[u8] {
        self.conns.get(&id).map_or(&[], |c| c.pending())
    }

    /// The socket of `id` took `n` bytes of its pending output at `now`;
    /// the next frame may follow at once.
    pub fn consume_output(&mut self, now: Timestamp, id: ConnId, n: usize) {
        self.in_place(now, id, |rules, conn| {
            conn.consume(now, n);
            rules.pump(now, conn);
        });
    }

    /// Appends what `id` has to write to `out` and counts it written at
    /// `now`, frame after frame, until it has appended `max` bytes or more
    /// or nothing is pending; true when more is pending. The same as
    /// [`pending_output`](Hub::pending_output) and
    /// [`consume_output`](Hub::consume_output) in turn, in one step, for a
    /// driver that gathers a connection's frames into one write: to the
    /// hub, bytes gathered are bytes the socket took.
    pub fn take_output(
        &mut self,
        now: Timestamp,
        id: ConnId,
        out: &mut Vec<u8>,
        max: usize,
    ) -> bool {
        let start = out.len();
        loop {
            let mut more = false;
            self.in_place(now, id, |rules, conn| loop {
                let pending = conn.pending();
                if pending.is_empty() {
                    return;
                }
                if out.len() - start >= max {
                    more = true;
                    return;
                }
                let n = pending.len();
                out.extend_from_slice(pending);
                conn.consume(now, n);
                rules.pump(now, conn);
            });
            // Answers written let the connection read on frames it had
            // held back, whose answers may be waiting now: gathered too.
            if more || self.pending_output(id).is_empty() {
                return more;
            }
        }
    }

    /// Publishes `payload` (its JSON text by the row's codec) on `topic`:
    /// offered to every admitted subscription of the topic, each taking the
    /// next seq and shedding under its row's policy when its queue is full.
    pub fn publish(&mut self, now: Timestamp, topic: &str, payload: &str) -> Published {
        if self.stopped {
            return Published::Stopped;
        }
        let event = match self.rules.spec.offer(topic, payload) {
            Ok(event) => event,
            Err(refused) => return refused,
        };
        let stream = event.stream;
        self.offered += 1;
        let row = &self.rules.spec.streams[stream];
        let (bound, on_full) = (row.bound, row.on_full);
        let mut offered = 0;
        let mut done = Vec::new();
        // Each subscription is offered the event in place: a fan-out to
        // every connection takes no connection out of the map.
        for (&id, conn) in self.conns.iter_mut() {
            let Some(i) = conn.subs.iter().position(|s| s.stream == stream) else {
                continue;
            };
            let was_empty = conn.pending().is_empty();
            let stamp = conn.stamp();
            let sub = &mut conn.subs[i];
            offered += 1;
            sub.seq += 1;
            let frame = Queued {
                stamp,
                seq: sub.seq,
                event: event.clone(),
            };
            if sub.queue.len() < bound {
                sub.queue.push_back(frame);
            } else if on_full == OnFull::DropOld {
                sub.queue.pop_front();
                sub.queue.push_back(frame);
            }
            self.rules.pump(now, conn);
            if settle(
                &mut self.events,
                &mut self.unproven,
                now,
                id,
                was_empty,
                conn,
            ) {
                done.push(id);
            }
            // A connection whose frames wait for its answers to leave is
            // not read on here: the answer this pump staged is its Output,
            // and the write that takes it reads on (`in_place`), so the
            // fan-out does no more per subscriber than it did.
        }
        for id in done {
            self.conns.remove(&id);
        }
        Published::Offered(offered)
    }

    /// A role source's revision (`self.hub.announce(revision)`, or one
    /// read on `__api.roles.revision`): every subscription is rechecked
    /// against the source's grants now; one whose row's requires no longer
    /// holds receives one `unauthorized` frame (`revoked`) and loses what it
    /// held, the rest go on in order.
    pub fn announce(&mut self, now: Timestamp, revision: u64) {
        let _ = revision;
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            self.with_conn(now, id, |hub, conn| {
                hub.rules.recheck(conn, None);
                hub.rules.pump(now, conn);
            });
        }
    }

    /// `stop()`: each connection writes `closed` after what was queued for
    /// it, then the close frame; a subscribe after it is refused
    /// `shutting_down` and nothing more is published. The driver stops
    /// accepting. The wait is bounded: `teardown_wait` after `stop()`,
    /// every connection still open (not reading, or not answering the
    /// close) is dropped. Idempotent.
    pub fn stop(&mut self, now: Timestamp) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.stop_deadline = Some(now.saturating_add(self.rules.spec.limits.teardown_wait));
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            self.with_conn(now, id, |hub, conn| {
                conn.stopping = true;
                hub.rules.pump(now, conn);
            });
        }
    }

    /// Takes the connection out, runs `f` on it, and puts it back (or
    /// closes it), telling the driver when it has bytes to write.
    fn with_conn(&mut self, now: Timestamp, id: ConnId, f: impl FnOnce(&mut Hub, &mut Conn)) {
        let Some(mut conn) = self.conns.remove(&id) else {
            return;
        };
        let was_empty = conn.pending().is_empty();
        f(self, &mut conn);
        if conn.resumable(self.rules.spec.limits.max_answers) {
            // Frames held back while the connection was owed its answers.
            self.take_input(now, 0, &mut conn);
        }
        if !settle(
            &mut self.events,
            &mut self.unproven,
            now,
            id,
            was_empty,
            &mut conn,
        ) {
            self.conns.insert(id, conn);
        }
    }

    /// As [`with_conn`](Hub::with_conn), for work that reads only the
    /// rules: the connection stays in the map.
    fn in_place(&mut self, now: Timestamp, id: ConnId, f: impl FnOnce(&Rules, &mut Conn)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let was_empty = conn.pending().is_empty();
        f(&self.rules, conn);
        let resume = conn.resumable(self.rules.spec.limits.max_answers);
        if settle(
            &mut self.events,
            &mut self.unproven,
            now,
            id,
            was_empty,
            conn,
        ) {
            self.conns.remove(&id);
        } else if resume {
            // Rare (frames held back while the connection was owed its
            // answers): taken out of the map to read them.
            self.with_conn(now, id, |hub, conn| hub.take_input(now, 0, conn));
        }
    }

    fn conn_timeout(&mut self, now: Timestamp, conn: &mut Conn) {
        let limits = self.rules.spec.limits;
        let stalled =
            !conn.pending().is_empty() && now >= conn.progress.saturating_add(limits.stalled_write);
        let unanswered = conn
            .close_sent
            .is_some_and(|t| now >= t.saturating_add(limits.close_wait));
        match &mut conn.phase {
            Phase::Http(http) => {
                http.handle_timeout(now);
                self.take_input(now, 0, conn);
            }
            Phase::Ws(ws) => {
                if stalled || unanswered {
                    // A reader that takes nothing is dropped alone.
                    return conn.drop_now(now);
                }
                if conn.close_sent.is_none() && conn.anonymous_until.is_some_and(|t| now >= t) {
                    // A connection that names nobody can do nothing here:
                    // its time is up (what it was owed is not written).
                    ws.close(
                        now,
                        close_code::POLICY_VIOLATION,
                        &anonymous_reason(&limits),
                    );
                    conn.anonymous_until = None;
                    conn.clear_control();
                    conn.close_sent = Some(now);
                }
                self.rules.pump(now, conn);
            }
        }
    }

    /// Acts on what the connection's machine read.
    fn take_input(&mut self, now: Timestamp, wall: Timestamp, conn: &mut Conn) {
        let max_answers = self.rules.spec.limits.max_answers;
        loop {
            // Past its answers owed, what the connection sent waits in the
            // codec (and its socket): taken once it is answered.
            if matches!(conn.phase, Phase::Ws(_)) && conn.owed() >= max_answers {
                break;
            }
            match &mut conn.phase {
                Phase::Http(http) => match http.poll_event() {
                    None => return,
                    Some(HttpEvent::Request(req)) => self.take_request(now, wall, conn, &req),
                    Some(HttpEvent::Malformed { reason, .. }) => {
                        let refusal = Refusal::new(RefusalKind::Malformed, reason);
                        let (status, body) = Outcome::from(refusal).into_http();
                        http.send_json(now, status, &body);
                    }
                    Some(HttpEvent::Lost | HttpEvent::Close) => http.abort(),
                },
                Phase::Ws(ws) => match ws.poll_event() {
                    None => break,
                    Some(WsEvent::Text(text)) => self.take_frame(now, conn, &text),
                    // The hub's limits take no binary message (1003).
                    Some(WsEvent::Binary(_)) => {}
                    Some(WsEvent::Closed { .. }) => {
                        // The connection is over: its subscriptions go
                        // with it; what the codec answered (an echoed
                        // close) is still written.
                        conn.subs.clear();
                        conn.clear_control();
                    }
                },
            }
        }
        self.rules.pump(now, conn);
    }
}

impl Rules {
    fn deadline(&self, c: &Conn) -> Option<Timestamp> {
        let limits = &self.spec.limits;
        let mut at: Option<Timestamp> = None;
        let mut earliest = |t: Timestamp| at = Some(at.map_or(t, |a| a.min(t)));
        match &c.phase {
            Phase::Http(http) => {
                if let Some(t) = http.poll_timeout() {
                    earliest(t);
                }
            }
            Phase::Ws(_) => {
                if !c.pending().is_empty() {
                    earliest(c.progress.saturating_add(limits.stalled_write));
                }
                if let Some(t) = c.expires {
                    earliest(t);
                }
                if let Some(t) = c.close_sent {
                    earliest(t.saturating_add(limits.close_wait));
                } else if let Some(t) = c.anonymous_until {
                    earliest(t);
                }
            }
        }
        at
    }

    /// Rechecks the connection's subscriptions (only `stream`'s when
    /// given): each whose requires no longer holds ends `revoked`.
    fn recheck(&self, conn: &mut Conn, stream: Option<usize>) {
        let Caller::Named(caller) = conn.caller.clone() else {
            return;
        };
        let revision = self.sources.revision(&caller);
        let mut ended = Vec::new();
        conn.subs.retain_mut(|sub| {
            if stream.is_some_and(|s| s != sub.stream) {
                return true;
            }
            if self.sources.authorized(&self.spec, &caller, sub.stream) {
                sub.revision = revision;
                true
            } else {
                ended.push(sub.stream);
                false
            }
        });
        for s in ended {
            conn.push_control(frames::unauthorized(
                &self.spec.streams[s].topic,
                Invalidated::Revoked,
            ));
        }
    }

    /// The credential's expiry, when `now` has reached it.
    fn check_expiry(&self, now: Timestamp, conn: &mut Conn) {
        if conn.expires.is_some_and(|t| now >= t) {
            conn.expires = None;
            conn.expired = true;
            conn.invalidate_all(&self.spec, Invalidated::Expired);
        }
    }

    /// Moves the next frame, in the order offered, to the socket once the
    /// last one is written whole.
    fn pump(&self, now: Timestamp, conn: &mut Conn) {
        if !matches!(conn.phase, Phase::Ws(_)) {
            return;
        }
        self.check_expiry(now, conn);
        loop {
            if !conn.pending().is_empty() {
                return;
            }
            let Phase::Ws(ws) = &conn.phase else { return };
            if ws.is_closed() || conn.close_sent.is_some() {
                return;
            }
            let control = conn.control.front().map(|(s, _, _)| *s);
            let event = conn
                .subs
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.queue.front().map(|q| (q.stamp, i)))
                .min();
            let frame = match (control, event) {
                (None, None) => {
                    if conn.stopping {
                        // Everything queued is written: `closed`, then the
                        // close frame.
                        if let Phase::Ws(ws) = &mut conn.phase {
                            ws.send_text(now, &frames::closed());
                            ws.close(now, close_code::GOING_AWAY, "shutting_down");
                        }
                        conn.close_sent = Some(now);
                    }
                    return;
                }
                (Some(c), Some((e, _))) if c < e => self.take_control(conn),
                (Some(_), None) => self.take_control(conn),
                (_, Some((_, i))) => {
                    // No event under an authorization older than the role
                    // source's current revision: a moved revision is a
                    // recheck before the frame leaves.
                    if let Caller::Named(caller) = &conn.caller {
                        if self.sources.revision(caller) != conn.subs[i].revision {
                            let stream = conn.subs[i].stream;
                            self.recheck(conn, Some(stream));
                            continue;
                        }
                    }
                    let q = conn.subs[i].queue.pop_front().expect("a front");
                    let Phase::Ws(ws) = &mut conn.phase else {
                        return;
                    };
                    // Written straight into the frame: a fan-out makes one
                    // per subscriber.
                    let mut digits = [0u8; 20];
                    let seq = sources::decimal(q.seq, &mut digits);
                    let topic = &self.topics_json[q.event.stream];
                    ws.send_text_parts(now, &frames::event_parts(topic, seq, &q.event.payload));
                    continue;
                }
            };
            let Some(frame) = frame else { continue };
            let Phase::Ws(ws) = &mut conn.phase else {
                return;
            };
            ws.send_text(now, &frame);
        }
    }

    fn take_control(&self, conn: &mut Conn) -> Option<String> {
        let (_, frame, answer) = conn.control.pop_front()?;
        if answer {
            conn.answers_waiting -= 1;
        }
        Some(frame)
    }
}

/// What follows any work on connection `id`: the driver is told when it
/// has bytes to write again, or that it is done (true: it leaves the map;
/// a connection that called is lost to the exposure).
fn settle(
    events: &mut VecDeque<HubEvent>,
    unproven: &mut Unproven,
    now: Timestamp,
    id: ConnId,
    was_empty: bool,
    conn: &mut Conn,
) -> bool {
    let empty = conn.pending().is_empty();
    if conn.is_done() && empty {
        unproven.forget(conn);
        if conn.called {
            events.push_back(HubEvent::Lost(id));
        }
        events.push_back(HubEvent::Close(id));
        return true;
    }
    if was_empty && !empty {
        conn.progress = now;
        events.push_back(HubEvent::Output(id));
    }
    false
}
