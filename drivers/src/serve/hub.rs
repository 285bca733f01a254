//! A WebSocket hub served: one mio loop on a thread of its own that accepts
//! on the hub's listener, moves bytes between its sockets and the core's
//! [`Hub`] machine, and takes the program's side (publish, announce, stop)
//! from a mailbox any thread may write to ([`HubHandle`]).
//!
//! The hub is one machine for all its connections (a publish is offered to
//! every subscription at once), so its connections live on this loop and
//! not on the request loops of [`Server`](super::Server). Only a surface
//! served over the hub ([`Server::serve_hub`](super::Server::serve_hub),
//! § Rpcs on a hub) passes through the exposures' owner: the calls its
//! connections frame are sent there as a loop's are, and the replies come
//! back through this loop's mailbox, behind the events published before
//! them, so a connection writes both in the order they reached it. Timers (a credential's expiry, a
//! write stalled 5 s, a close the peer never answers, a connection that
//! names nobody at its deadline, the end of `stop()`'s wait) are the
//! machine's, as are the limits on connections and on the answers one
//! connection may be owed (past which the loop stops reading it):
//! the loop sleeps until [`Hub::poll_timeout`] and hands it the time.
//!
//! Writing is done in rounds: after each wake the loop gathers what the
//! machine hands out for every connection that has output (up to 16 KiB
//! each, so events published together leave in one `send(2)`), and the
//! round's writes are spread over the loop's thread and its writer threads
//! (`fanout.rs`); the loop touches the machine again only once
//! all of them are done.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use limen_core::hale::runtime::{Correlation, Delivery};
use limen_core::wire::ws::{ConnId, Hub, HubEvent, Published};
use limen_core::Timestamp;
use mio::unix::SourceFd;
use mio::{Events, Interest, Token};

use super::fanout::{FanOut, Planned, Wrote};
use super::linger::{LingerLimits, Lingering};
use super::mailbox::Mailbox;
use super::net::{BoundAddress, Listener, Stream};
use super::reactor::{earliest, wait_until, Clock, Reactor, ReadBudget, READ_BUDGET, WAKER};
use super::{unix_now, Message, ToOwner, CORRELATION_LOOP_SHIFT};

const LISTENER: Token = Token(usize::MAX - 1);
/// Lingering sockets' tokens start here (`linger.rs`), far above any
/// connection's id.
const LINGER_BASE: usize = 1 << 62;
/// How long accepting pauses after a failure (out of descriptors): the
/// request loops' pause, in nanoseconds.
const ACCEPT_PAUSE: Timestamp = 100_000_000;
/// How many bytes of the machine's output one write gathers. The machine
/// hands out one frame at a time (an event stays in its subscription's
/// queue, where its row's policy and a moved revision still apply, until
/// it leaves); gathering the frames waiting for a connection into one
/// `send(2)` is the fan-out's saving, and to the machine the gathered
/// bytes are as written as those in the socket's buffer.
const WRITE_BATCH: usize = 16 * 1024;
/// How many bytes one round gathers at most; the connections left over
/// are the next round's, so a round's buffer stays small whatever the
/// backlog.
const ROUND_BYTES: usize = 1024 * 1024;

/// How many threads write a hub's rounds by default: the loop's and one
/// more per further core, up to four in all.
pub fn default_writers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// What another thread asks of a served hub.
#[derive(Debug)]
pub enum HubCommand {
    /// Publish `payload` (its JSON text by the row's codec) on `topic`.
    Publish {
        /// The topic.
        topic: String,
        /// The payload's JSON text.
        payload: String,
    },
    /// A role source's revision: recheck every subscription.
    Announce(u64),
    /// `stop()`: `closed` to every connection after what was queued, then
    /// the close frame; the listener closes.
    Stop,
    /// What the program asks of its hub: `events()`, `subscribers()`,
    /// `connections()`, answered on the channel.
    Report(std::sync::mpsc::Sender<HubReport>),
    /// From the exposures' owner: the outcome of a call framed on this hub,
    /// written as a `reply` frame on its connection.
    Deliver(Box<Delivery>),
    /// From the exposures' owner: the exposure abandoned a call of this
    /// connection (its caller must see the transport fail), so the
    /// connection ends with no `closed` frame.
    Abort(Correlation),
}

/// Where a hub that carries a surface sends its calls.
struct CallLink {
    owner: Arc<Mailbox<Message>>,
    /// The exposure's index at the owner.
    exposure: usize,
    /// The route bits every correlation of this hub carries.
    route: Correlation,
    /// What this turn framed, sent at its end as one message.
    framed: Vec<ToOwner>,
}

/// A hub's counts, as the program reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HubReport {
    /// `events()`: the events its topics have offered.
    pub events: u64,
    /// `subscribers()`: the subscriptions admitted and not ended.
    pub subscribers: usize,
    /// `connections()`: the connections held (a datagram hub has none).
    pub connections: usize,
}

/// Publishes to, announces to and stops a served hub, from any thread.
#[derive(Clone)]
pub struct HubHandle {
    inbox: Arc<Mailbox<HubCommand>>,
}

impl std::fmt::Debug for HubHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubHandle").finish_non_exhaustive()
    }
}

impl HubHandle {
    /// A handle on the mailbox of a hub's loop.
    pub(super) fn new(inbox: Arc<Mailbox<HubCommand>>) -> HubHandle {
        HubHandle { inbox }
    }

    /// Publishes `payload` (JSON text) on `topic`.
    pub fn publish(&self, topic: &str, payload: String) {
        self.inbox.send(HubCommand::Publish {
            topic: topic.to_owned(),
            payload,
        });
    }

    /// Announces a role source's revision.
    pub fn announce(&self, revision: u64) {
        self.inbox.send(HubCommand::Announce(revision));
    }

    /// The hub's counts, read on its loop; `None` once it has ended.
    pub fn report(&self) -> Option<HubReport> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.inbox.send(HubCommand::Report(tx));
        rx.recv_timeout(Duration::from_secs(5)).ok()
    }

    /// Stops the hub; [`HubServer::run`] returns once every connection is
    /// closed.
    pub fn stop(&self) {
        self.inbox.send(HubCommand::Stop);
    }
}

/// A hub bound and ready to run. See the module documentation.
pub struct HubServer {
    reactor: Reactor,
    listener: Option<Listener>,
    bound: BoundAddress,
    hub: Hub,
    inbox: Arc<Mailbox<HubCommand>>,
    /// The sockets, shared with the writer threads for a round's length.
    conns: HashMap<ConnId, Arc<Stream>>,
    next_id: ConnId,
    /// Connections not read while the hub holds them back.
    paused: std::collections::HashSet<ConnId>,
    /// Connections that had [`READ_BUDGET`] read in their last turn and may
    /// have more waiting: read again next turn, before the poll sleeps (an
    /// edge-triggered socket raises no new event for what it holds).
    unread: Vec<ConnId>,
    /// The read buffer.
    buf: Vec<u8>,
    /// Bytes gathered from the machine that a socket has not taken yet,
    /// by connection; written before anything more is gathered.
    held: HashMap<ConnId, Vec<u8>>,
    /// Connections with something to write, gathered in the next round.
    ready: Vec<ConnId>,
    /// The buffer a round gathers into, kept between rounds.
    round: Vec<u8>,
    /// The writer threads.
    fanout: FanOut,
    /// When accepting, paused by a failure, is tried again.
    accept_again: Option<Timestamp>,
    clock: Clock,
    /// Set when a surface is served over the hub.
    calls: Option<CallLink>,
    /// Closed connections whose peer may still be sending (an HTTP
    /// refusal, a description, a WebSocket close), closing in stages.
    lingering: Lingering<()>,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer")
            .field("bound", &self.bound)
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

impl HubServer {
    /// Serves `hub` on `listener` (a TCP listener; see
    /// [`Listener::bind_tcp`]), which is what its describer was told.
    pub fn new(listener: Listener, hub: Hub) -> io::Result<HubServer> {
        let bound = listener.bound();
        let (BoundAddress::Tcp(_), Some(fd)) = (&bound, listener.raw_fd()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a WebSocket hub listens on TCP",
            ));
        };
        let (reactor, waker) = Reactor::new()?;
        reactor
            .registry()
            .register(&mut SourceFd(&fd), LISTENER, Interest::READABLE)?;
        Ok(HubServer {
            reactor,
            listener: Some(listener),
            bound,
            hub,
            inbox: Arc::new(Mailbox::new(waker)),
            conns: HashMap::new(),
            next_id: 0,
            paused: std::collections::HashSet::new(),
            unread: Vec::new(),
            // One read may take a whole turn's budget.
            buf: vec![0u8; READ_BUDGET],
            held: HashMap::new(),
            ready: Vec::new(),
            round: Vec::new(),
            fanout: FanOut::new(default_writers() - 1, "hale hub"),
            accept_again: None,
            clock: Clock::start(),
            calls: None,
            lingering: Lingering::new(LINGER_BASE, LingerLimits::default()),
        })
    }

    /// Writes its rounds with `n` threads in all (the loop's and `n - 1`
    /// writers; 1 or 0: the loop alone). By default
    /// [`default_writers`].
    pub fn set_writers(&mut self, n: usize) {
        self.fanout = FanOut::new(n.saturating_sub(1), "hale hub");
    }

    /// Whether a surface is served over this hub.
    pub(super) fn serves_calls(&self) -> bool {
        self.calls.is_some()
    }

    /// The hub's mailbox, where the owner sends the replies.
    pub(super) fn inbox(&self) -> Arc<Mailbox<HubCommand>> {
        self.inbox.clone()
    }

    /// Takes `call` frames for the owner's exposure `exposure`, naming each
    /// connection by `route` above its id.
    pub(super) fn carry_calls(
        &mut self,
        owner: Arc<Mailbox<Message>>,
        exposure: usize,
        route: usize,
    ) {
        self.hub.serve_calls();
        self.calls = Some(CallLink {
            owner,
            exposure,
            route: (route as Correlation) << CORRELATION_LOOP_SHIFT,
            framed: Vec::new(),
        });
    }

    /// Where the hub listens.
    pub fn bound(&self) -> &BoundAddress {
        &self.bound
    }

    /// A handle for the program's side.
    pub fn handle(&self) -> HubHandle {
        HubHandle {
            inbox: self.inbox.clone(),
        }
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Serves until stopped ([`HubHandle::stop`]) and every connection is
    /// closed.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(256);
        let mut commands = Vec::new();
        // The machine's next deadline, read once a turn (it walks every
        // connection): after the turn's work, for the next sleep.
        let mut deadline = self.hub.poll_timeout();
        loop {
            // The machine's, the lingering sockets' and the paused
            // accept's deadlines, whichever comes first.
            let next = earliest(deadline, self.lingering.next_deadline());
            let next = earliest(next, self.accept_again);
            let timeout = if self.lingering.has_ready() {
                Some(Duration::ZERO)
            } else {
                wait_until(next, self.now())
            };
            self.inbox.sleep();
            self.inbox.take(&mut commands);
            let timeout = if commands.is_empty() && self.unread.is_empty() {
                timeout
            } else {
                Some(Duration::ZERO)
            };
            let polled = self.reactor.turn(&mut events, timeout);
            self.inbox.awake();
            polled?;
            for id in std::mem::take(&mut self.unread) {
                self.read(id);
            }
            if self.accept_again.is_some_and(|at| self.now() >= at) {
                self.accept_again = None;
                self.accept();
                self.drain();
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    t if self.lingering.owns(t) => self.lingering.ready(t),
                    Token(t) => {
                        let id = t as ConnId;
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            self.read(id);
                        }
                        if event.is_writable() {
                            self.ready.push(id);
                        }
                    }
                }
            }
            self.lingering.resume();
            self.lingering.expire(self.now());
            // What the wake's reads answered is written in one round.
            self.drain();
            let mut more = Vec::new();
            self.inbox.take(&mut more);
            commands.append(&mut more);
            for command in commands.drain(..) {
                let now = self.now();
                match command {
                    HubCommand::Publish { topic, payload } => {
                        // An event too large for the bus frame reaches no
                        // remote subscriber: the machine says so and
                        // offers it to nobody.
                        let _: Published = self.hub.publish(now, &topic, &payload);
                    }
                    HubCommand::Announce(revision) => self.hub.announce(now, revision),
                    HubCommand::Report(to) => {
                        let _ = to.send(HubReport {
                            events: self.hub.events(),
                            subscribers: self.hub.subscribers(),
                            connections: self.hub.connections(),
                        });
                    }
                    HubCommand::Deliver(delivery) => {
                        let mut delivery = *delivery;
                        delivery.correlation = self.conn_of(delivery.correlation);
                        self.hub.deliver(now, delivery);
                    }
                    HubCommand::Abort(correlation) => {
                        let id = self.conn_of(correlation);
                        self.hub.handle_eof(now, id);
                    }
                    HubCommand::Stop => {
                        self.hub.stop(now);
                        if let Some(l) = self.listener.take() {
                            if let Some(fd) = l.raw_fd() {
                                let _ = self.reactor.registry().deregister(&mut SourceFd(&fd));
                            }
                        }
                    }
                }
            }
            // Written once every command taken is in the machine: events
            // published together reach each connection in one write.
            self.drain();
            let now = self.now();
            deadline = self.hub.poll_timeout();
            if deadline.is_some_and(|at| at <= now) {
                self.hub.handle_timeout(now);
                self.drain();
                deadline = self.hub.poll_timeout();
            }
            self.send_calls();
            if self.hub.is_finished() {
                return Ok(());
            }
        }
    }

    /// The hub's connection a correlation names (its route bits off).
    fn conn_of(&self, correlation: Correlation) -> ConnId {
        correlation & ((1 << CORRELATION_LOOP_SHIFT) - 1)
    }

    /// Frames for the owner what a connection called, or the loss of one
    /// that called, in the order the machine framed them. Without a
    /// surface served over the hub there are none.
    fn take_call(&mut self, call: HubEvent) {
        let Some(link) = &mut self.calls else { return };
        link.framed.push(match call {
            HubEvent::Call(request) => {
                let mut request = *request;
                request.correlation |= link.route;
                ToOwner::Request {
                    exposure: link.exposure,
                    request,
                    raw: None,
                }
            }
            HubEvent::Lost(id) => ToOwner::Lost {
                exposure: link.exposure,
                correlation: id | link.route,
            },
            HubEvent::Output(_) | HubEvent::Close(_) => return,
        });
    }

    /// Sends the owner what this turn framed, as one message.
    fn send_calls(&mut self) {
        if let Some(link) = &mut self.calls {
            if !link.framed.is_empty() {
                let items = std::mem::take(&mut link.framed);
                link.owner.send(Message::FromLoop(items));
            }
        }
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok(None) => return,
                // Every socket is handed to the machine, which holds the
                // limits (`max_connections`, `max_unproven`): one it has
                // no room for, or one it drops to make room, is closed as
                // its `Close` is taken.
                Ok(Some((mut stream, _))) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    let token = Token(id as usize);
                    if stream
                        .register(
                            self.reactor.registry(),
                            token,
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .is_err()
                    {
                        continue;
                    }
                    self.conns.insert(id, Arc::new(stream));
                    let now = self.now();
                    self.hub.handle_accept(now, id);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Out of descriptors and the like: the connection waits in
                // the backlog, and no new readiness may come for it, so
                // accepting pauses and is tried again (not spinning).
                Err(_) => {
                    self.accept_again = Some(self.now() + ACCEPT_PAUSE);
                    return;
                }
            }
        }
    }

    fn read(&mut self, id: ConnId) {
        // The buffer is the loop's, lent out for the read.
        let mut buf = std::mem::take(&mut self.buf);
        self.read_into(id, &mut buf);
        self.buf = buf;
    }

    fn read_into(&mut self, id: ConnId, buf: &mut [u8]) {
        let mut budget = ReadBudget::turn();
        loop {
            if budget.spent() {
                self.unread.push(id);
                return;
            }
            // A client that sends and does not read is held back: its
            // socket is read again once it has read its answers (`flush`).
            if !self.hub.wants_read(id) {
                if self.conns.contains_key(&id) {
                    self.paused.insert(id);
                }
                return;
            }
            let Some(stream) = self.conns.get(&id) else {
                return;
            };
            match (&**stream).read(buf) {
                Ok(0) => {
                    let now = self.now();
                    self.hub.handle_eof(now, id);
                    return;
                }
                Ok(n) => {
                    budget.spend(n);
                    let now = self.now();
                    self.hub.handle_data(now, unix_now(), id, &buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    let now = self.now();
                    self.hub.handle_eof(now, id);
                    return;
                }
            }
        }
    }

    /// Writes a round: gathers, for each connection ready, what a write
    /// left (alone: only then is more gathered, so a peer that does not
    /// read leaves the machine's output pending, its stall timer running
    /// and its queues where they are) or up to [`WRITE_BATCH`] bytes of
    /// the machine's output, writes them all ([`FanOut`]), and keeps what
    /// each socket did not take. A connection the machine still has output
    /// for after its write is ready again; one held back reads again once
    /// the hub wants it to (no new readiness may come for what already
    /// waits in its socket).
    fn write_round(&mut self) {
        let mut ids = std::mem::take(&mut self.ready);
        ids.sort_unstable();
        ids.dedup();
        let mut round = std::mem::take(&mut self.round);
        round.clear();
        let mut plan = Vec::with_capacity(ids.len());
        let mut planned = Vec::with_capacity(ids.len());
        let now = self.now();
        for (k, &id) in ids.iter().enumerate() {
            if round.len() >= ROUND_BYTES {
                self.ready.extend_from_slice(&ids[k..]);
                ids.truncate(k);
                break;
            }
            let Some(stream) = self.conns.get(&id) else {
                continue;
            };
            let start = round.len();
            // Whether the machine has more for it once this is written.
            let held = if self.held.is_empty() {
                None
            } else {
                self.held.remove(&id)
            };
            let more = match held {
                Some(held) => {
                    round.extend_from_slice(&held);
                    !self.hub.pending_output(id).is_empty()
                }
                None => self.hub.take_output(now, id, &mut round, WRITE_BATCH),
            };
            if round.len() > start {
                plan.push(Planned {
                    stream: stream.clone(),
                    range: start..round.len(),
                });
                planned.push((id, more, start..round.len()));
            }
        }
        let (round, wrote) = self.fanout.write(round, plan);
        let now = self.now();
        for ((id, more, range), did) in planned.into_iter().zip(wrote) {
            match did {
                Wrote::All => {
                    if more {
                        self.ready.push(id);
                    }
                }
                Wrote::Part(n) => {
                    self.held
                        .insert(id, round[range.start + n..range.end].to_vec());
                }
                Wrote::Blocked => {
                    self.held.insert(id, round[range].to_vec());
                }
                Wrote::Failed => self.hub.handle_eof(now, id),
            }
        }
        self.round = round;
        if self.paused.is_empty() {
            return;
        }
        for id in ids {
            if self.paused.contains(&id) && self.hub.wants_read(id) {
                self.paused.remove(&id);
                self.read(id);
            }
        }
    }

    /// Acts on the machine's events until it has none: its sockets' and
    /// the calls it framed.
    fn drain(&mut self) {
        loop {
            while let Some(event) = self.hub.poll_event() {
                match event {
                    HubEvent::Call(_) | HubEvent::Lost(_) => self.take_call(event),
                    HubEvent::Output(id) => self.ready.push(id),
                    // Dropping the socket closes it, which takes it out of
                    // the poll.
                    HubEvent::Close(id) => {
                        self.paused.remove(&id);
                        let stream = self.conns.remove(&id);
                        // The machine saw these bytes as written: one last
                        // try before the socket closes.
                        if let (Some(stream), Some(held)) = (&stream, self.held.remove(&id)) {
                            let _ = (&**stream).write(&held);
                        }
                        // Closed in stages (RFC 9112 § 9.6), so a peer still
                        // sending reads what was written rather than a
                        // reset: an HTTP refusal with input unread behind
                        // it, a description, a WebSocket close. A peer
                        // already gone ends it at the first read.
                        // Lingering sockets are bounded by the machine's
                        // own cap: evictions made to let proven peers in
                        // could otherwise fill the descriptor table two
                        // seconds at a time. Past it a socket closes at once.
                        let room = self.lingering.len() < self.hub.spec().limits.max_connections;
                        if let Some(stream) = stream
                            .filter(|_| room)
                            .and_then(|s| Arc::try_unwrap(s).ok())
                        {
                            let now = self.now();
                            self.lingering
                                .start(self.reactor.registry(), stream, true, (), now);
                        }
                    }
                }
            }
            if self.ready.is_empty() {
                break;
            }
            // Writing may read a connection held back, or end one.
            self.write_round();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::hub_conn::{HubConn, Incoming};
    use limen_core::hale::docs::ExposureDescriber;
    use limen_core::hale::model::parse_program;
    use limen_core::hale::runtime::{RoleHierarchy, RoleTable, TokenTable};
    use limen_core::wire::ws::{HubLimits, HubSpec, OnFull, StreamSpec};
    use serde_json::{json, Value};

    const DESK: &str = include_str!("../../../conformance/programs/desk.hl");

    /// A hub of one topic any named caller may read, bound `bound`.
    fn served(bound: usize) -> HubServer {
        let spec = HubSpec::new(
            "fills",
            vec![StreamSpec {
                topic: "Fills".into(),
                bound,
                on_full: OnFull::DropNew,
                requires: vec![],
            }],
            RoleHierarchy::flat(),
            HubLimits::default(),
        )
        .unwrap();
        let program = parse_program("desk.hl", DESK).unwrap();
        let listener = Listener::bind_tcp("127.0.0.1:0").unwrap();
        let describer =
            ExposureDescriber::new(&program, "fills", Some(&listener.bound().to_string())).unwrap();
        let hub = Hub::new(
            spec,
            Some(Box::new(TokenTable::new(None).with("t-dave", "dave"))),
            Box::new(RoleTable::new()),
            Box::new(describer),
        );
        HubServer::new(listener, hub).unwrap()
    }

    fn text(conn: &mut HubConn) -> Value {
        match conn.next().unwrap() {
            Incoming::Text(t) => serde_json::from_str(&t).unwrap(),
            Incoming::Closed(code) => panic!("closed {code} where a frame was awaited"),
        }
    }

    /// Rounds large enough to be spread over writer threads lose nothing
    /// and reorder nothing: every subscriber reads every event, seq 1 to
    /// N in the order published, then `closed` and 1001 at `stop()`.
    #[test]
    fn a_fan_out_spread_over_writer_threads_reaches_every_subscriber_whole_and_in_order() {
        const SUBSCRIBERS: usize = 150;
        const EVENTS: u64 = 40;
        let mut server = served(EVENTS as usize);
        server.set_writers(3);
        let addr = server.bound().to_string();
        let handle = server.handle();
        let running = std::thread::spawn(move || server.run());
        let mut conns: Vec<HubConn> = (0..SUBSCRIBERS)
            .map(|_| {
                let mut c =
                    HubConn::connect(&addr, Some("t-dave"), Some(Duration::from_secs(20))).unwrap();
                c.send(r#"{"type":"subscribe","topic":"Fills"}"#).unwrap();
                assert_eq!(
                    text(&mut c),
                    json!({"type": "subscribed", "topic": "Fills"})
                );
                c
            })
            .collect();
        for n in 1..=EVENTS {
            handle.publish("Fills", format!(r#"{{"n":{n}}}"#));
        }
        handle.stop();
        for c in &mut conns {
            for n in 1..=EVENTS {
                assert_eq!(
                    text(c),
                    json!({"type": "event", "topic": "Fills", "seq": n, "payload": {"n": n}})
                );
            }
            assert_eq!(
                text(c),
                json!({"type": "closed", "reason": "shutting_down"})
            );
            assert!(matches!(c.next().unwrap(), Incoming::Closed(1001)));
            c.close();
        }
        running.join().unwrap().unwrap();
    }
}
