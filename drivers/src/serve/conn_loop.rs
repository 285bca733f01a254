//! One connection loop: a mio poll, the connections it accepted and their
//! fronts, and a timer heap. See the [module above](super) for how loops,
//! the owner and the workers meet.
//!
//! A turn: write what the fronts queued, and put in the poll the
//! connections still open that were accepted last turn; sleep in the poll
//! until a socket, the mailbox or the earliest deadline wakes it; accept
//! (reading each connection at once), read into the fronts, write; take the
//! mailbox (deliveries from other loops' admissions — and, on loop 0, the
//! workers' reports, a hub's calls and the operators' nudge); fire the
//! timers that are due; then, under the owner's lock, admit what the turn
//! framed and take this loop's deliveries (`own_turn`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use limen_core::hale::runtime::{Correlation, Delivery, PeerCredentials};
use limen_core::wire::front::{Front, FrontEvent, FrontKind, RawRequest};
use limen_core::Timestamp;
use mio::unix::SourceFd;
use mio::{Events, Interest, Token};

use super::owner::Owner;
use super::piped::PIPE_BASE;
use super::reactor::{earliest, wait_until, Reactor, ReadBudget, WAKER};
use slab::Slab;

use super::fronts;
use super::linger::Lingering;
use super::mailbox::Mailbox;
use super::net::Stream;
use super::record::Exchange;
use super::{lock, unix_now, ListenerId, Message, Shared, ToOwner, CORRELATION_LOOP_SHIFT};

/// Listeners' tokens start here; connections take the slab's keys below.
const LISTENER_BASE: usize = 1 << 40;
/// Lingering sockets' tokens start here (`linger.rs`).
const LINGER_BASE: usize = 1 << 41;
/// The size of one read from a connection.
const READ_BUF: usize = 16 * 1024;
/// How long accepting pauses when the process is out of descriptors: short
/// enough that connections are taken again soon after the clients let go,
/// long enough that a full table costs nothing while it stays full.
const ACCEPT_PAUSE: Timestamp = 100 * MILLISECOND;
const MILLISECOND: Timestamp = 1_000_000;

/// Whether the shortage of descriptors was reported (once a process).
static SHORTAGE_LOGGED: AtomicBool = AtomicBool::new(false);

/// A connection's place in its listener's count, given back when it is
/// dropped (with its connection, or with its lingering socket after it).
pub(super) struct Admitted(Arc<AtomicUsize>);

impl Admitted {
    /// A place in `count` when it is under `cap`.
    fn take(count: &Arc<AtomicUsize>, cap: usize) -> Option<Admitted> {
        if count.fetch_add(1, Ordering::SeqCst) >= cap {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Admitted(count.clone()))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Conn {
    stream: Stream,
    /// Its place in its listener's count.
    admitted: Admitted,
    exposure: usize,
    front: Box<dyn Front + Send>,
    peer: PeerCredentials,
    writable: bool,
    /// Whether its socket is in the poll. A connection is put there only
    /// if it outlives the turn that accepted it (`register_new`).
    registered: bool,
    /// A read stopped for backpressure, leaving input the edge-triggered
    /// poll will not announce again: read once the output drains.
    read_paused: bool,
    /// The deadline this connection has in the heap, if any.
    armed: Option<Timestamp>,
}

/// See the module documentation.
pub(super) struct ConnLoop {
    id: usize,
    reactor: Reactor,
    mailbox: Arc<Mailbox<Message>>,
    shared: Arc<Shared>,
    /// The exposures' earliest deadline, as the owner said at this loop's
    /// last turn with it.
    owner_deadline: Option<Timestamp>,
    conns: Slab<Conn>,
    by_correlation: HashMap<Correlation, usize, OwnIds>,
    next_correlation: u64,
    /// Deadlines by connection: (when, slab key, correlation). A
    /// connection's later deadline is found when its earlier entry fires,
    /// so a deadline that moves with every write costs no entry each.
    timers: BinaryHeap<Reverse<(Timestamp, usize, Correlation)>>,
    /// Whether each listener is accepted on here.
    listening: Vec<bool>,
    /// This loop's own socket of each TCP listener, in the listener's
    /// SO_REUSEPORT group (loops past the first; loop 0 takes the
    /// listener's own): the kernel spreads the connections over the loops,
    /// so no two loops wake for one connection or wait on one lock.
    own: Vec<Option<super::Listener>>,
    accept_paused_until: Option<Timestamp>,
    /// What this turn framed, for the owner.
    to_owner: Vec<ToOwner>,
    /// Connections with output queued this turn, written at its end.
    dirty: Vec<usize>,
    /// Connections accepted and not yet in the poll (`register_new`).
    unregistered: Vec<usize>,
    /// Connections to read again once the turn's events are handled.
    resume: Vec<usize>,
    /// Connections whose read budget ran out: read again next turn.
    again: Vec<usize>,
    /// Connections closing in stages after a refusal (`linger.rs`).
    lingering: Lingering<Admitted>,
    read_buf: Box<[u8]>,
    /// The clock as the first delivery or write of this turn read it
    /// ([`ConnLoop::turn_time`]): a turn lasts microseconds, and reading
    /// the clock for each reply was a visible part of delivering it.
    reply_time: Option<Timestamp>,
    finishing: bool,
    finish_sent: bool,
    /// Loop 0: when the drain ends in the stop
    /// ([`super::StopHandle::drain_then_stop`]), once it has begun.
    drain_until: Option<Timestamp>,
    /// Piped receivers' pipes ready this turn (loop 0's poll holds them),
    /// by token less [`PIPE_BASE`]: acted on at the turn with the owner.
    pipes_ready: Vec<usize>,
}

impl ConnLoop {
    pub(super) fn new(
        id: usize,
        reactor: Reactor,
        mailbox: Arc<Mailbox<Message>>,
        shared: Arc<Shared>,
    ) -> io::Result<ConnLoop> {
        let linger = shared.config.linger;
        let mut listening = Vec::new();
        let mut own = Vec::new();
        for (l, listener) in shared.listeners.iter().enumerate() {
            let served = shared.served[l].is_some();
            let joined = if id > 0 && served {
                lock(listener).join()?
            } else {
                None
            };
            let fd = match &joined {
                Some(j) => j.raw_fd(),
                None => lock(listener).raw_fd(),
            };
            own.push(joined);
            let on = match (fd, served) {
                (Some(fd), true) => {
                    reactor.registry().register(
                        &mut SourceFd(&fd),
                        Token(LISTENER_BASE + l),
                        Interest::READABLE,
                    )?;
                    true
                }
                _ => false,
            };
            listening.push(on);
        }
        Ok(ConnLoop {
            id,
            reactor,
            mailbox,
            shared,
            owner_deadline: None,
            conns: Slab::new(),
            by_correlation: HashMap::default(),
            next_correlation: 1,
            timers: BinaryHeap::new(),
            listening,
            own,
            accept_paused_until: None,
            to_owner: Vec::new(),
            dirty: Vec::new(),
            unregistered: Vec::new(),
            resume: Vec::new(),
            again: Vec::new(),
            lingering: Lingering::new(LINGER_BASE, linger),
            read_buf: vec![0u8; READ_BUF].into_boxed_slice(),
            reply_time: None,
            finishing: false,
            finish_sent: false,
            drain_until: None,
            pipes_ready: Vec::new(),
        })
    }

    pub(super) fn id(&self) -> usize {
        self.id
    }

    /// Runs until the owner says every exposure has stopped and the
    /// connections held are done. Loop 0 passes the owner.
    pub(super) fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut messages = Vec::new();
        loop {
            self.flush();
            self.register_new();
            if self.finishing && self.conns.is_empty() {
                return Ok(());
            }
            let now = self.shared.now();
            if self.id == 0 {
                self.drain(now);
            }
            let deadline = earliest(self.next_deadline(), self.owner_deadline);
            let deadline = earliest(deadline, self.drain_until);
            self.mailbox.sleep();
            // A message left before the mark is in the mailbox now.
            self.mailbox.take(&mut messages);
            let stop_due = self.id == 0 && self.shared.stop.load(Ordering::SeqCst);
            // Requests framed after this turn's admission (a gRPC
            // reflection stream frames its next message once the last is
            // answered, when the answer is written in `flush`) are admitted
            // at once, not at the next event or timer.
            let busy =
                !self.again.is_empty() || self.lingering.has_ready() || !self.to_owner.is_empty();
            let timeout = if busy || !messages.is_empty() || stop_due && !self.finish_sent {
                Some(Duration::ZERO)
            } else {
                wait_until(deadline, now)
            };
            let polled = self.reactor.turn(&mut events, timeout);
            self.mailbox.awake();
            self.reply_time = None;
            polled?;
            let now = self.shared.now();
            // Messages first: a command sent before a client connected is in
            // force when that client's request is read.
            self.handle_messages(&mut messages, now);
            for event in events.iter() {
                let token = event.token();
                if token == WAKER {
                    continue;
                }
                if let Some(pipe) = token.0.checked_sub(PIPE_BASE) {
                    self.pipes_ready.push(pipe);
                    continue;
                }
                if self.lingering.owns(token) {
                    self.lingering.ready(token);
                    continue;
                }
                if token.0 >= LISTENER_BASE {
                    self.accept(token.0 - LISTENER_BASE, now);
                    continue;
                }
                if event.is_readable() || event.is_read_closed() {
                    self.read(token.0);
                }
                if event.is_writable() {
                    self.write(token.0);
                }
            }
            while let Some(key) = self.resume.pop() {
                self.read(key);
            }
            // Last turn's heavy senders, after everyone this turn woke:
            // what runs out of budget again waits for the next turn.
            for key in std::mem::take(&mut self.again) {
                self.read(key);
            }
            self.lingering.resume();
            self.mailbox.take(&mut messages);
            self.handle_messages(&mut messages, now);
            self.fire_timers(now);
            if self.accept_paused_until.is_some_and(|t| t <= now) {
                self.accept_paused_until = None;
                for l in 0..self.listening.len() {
                    self.accept(l, now);
                }
            }
            self.own_turn(now);
        }
    }

    /// Loop 0's part of a drain: its end is set when it begins, and when
    /// it is reached the stop is run, as [`super::StopHandle::stop`] does.
    fn drain(&mut self, now: Timestamp) {
        if !self.shared.draining.load(Ordering::SeqCst) {
            return;
        }
        let until = *self.drain_until.get_or_insert_with(|| {
            let grace = self.shared.config.drain_grace.as_nanos() as Timestamp;
            eprintln!(
                "hale: draining: the health checks answer 503 for {} ms, then stop()",
                grace / MILLISECOND
            );
            now + grace
        });
        if until <= now {
            self.shared.stop.store(true, Ordering::SeqCst);
            // Done: no deadline left to wake for.
            self.drain_until = Some(Timestamp::MAX);
        }
    }

    /// The loop's turn with the owner, behind its lock: the requests this
    /// turn framed admitted here, on this thread, with no hop to another
    /// (whichever loop framed them runs the pump and the inline receivers
    /// it hands calls to); the exposures' timers; and what the owner sent
    /// this loop, acted on once the lock is released. Loop 0 also hands on
    /// the stop, closes the listeners the exposures released, and tells the
    /// other loops to finish.
    fn own_turn(&mut self, now: Timestamp) {
        let mut local = Vec::new();
        // Acting on deliveries may frame more (a connection closing is
        // lost), so go round until the owner is quiet.
        loop {
            let mut released = Vec::new();
            {
                let mut owner = owner_at(&self.shared, self.id);
                commands(&self.shared, &mut owner, now);
                // A piped receiver's replies, read and reported here.
                for pipe in self.pipes_ready.drain(..) {
                    owner.pipe_ready(now, pipe);
                }
                if !self.to_owner.is_empty() {
                    let items = std::mem::take(&mut self.to_owner);
                    owner.take_framed(now, unix_now(), items);
                }
                if self.id == 0 {
                    if self.shared.stop.load(Ordering::SeqCst) {
                        owner.stop(now);
                    }
                    released = std::mem::take(&mut owner.closed_listeners);
                    if owner.stopped() && !self.finish_sent {
                        self.finish_sent = true;
                        for mailbox in owner.loops.iter().skip(1) {
                            mailbox.send(Message::Finish);
                        }
                        self.finishing = true;
                    }
                }
                owner.handle_timeout(now);
                owner.take_for(self.id, &mut local);
                owner.send_remote(self.id);
                // Every loop wakes for the exposures' earliest deadline:
                // whichever loop made it is awake and sees it here, so no
                // loop need be woken for one another loop made.
                self.owner_deadline = owner.poll_timeout();
            }
            for l in released {
                self.close_listener(l, true);
            }
            if local.is_empty() && self.to_owner.is_empty() {
                break;
            }
            for message in local.drain(..) {
                self.handle_message(message, now);
            }
        }
    }

    fn handle_messages(&mut self, messages: &mut Vec<Message>, now: Timestamp) {
        for message in messages.drain(..) {
            self.handle_message(message, now);
        }
    }

    /// A message from the mailbox. Those for the owner come to loop 0's
    /// (a hub's calls, the workers' reports, the operator's commands); what
    /// they make the owner send this loop is taken at the turn's end.
    fn handle_message(&mut self, message: Message, now: Timestamp) {
        match message {
            Message::Deliver {
                exposure,
                delivery,
                raw,
            } => self.deliver(exposure, delivery, raw),
            Message::Abort(c) => {
                if let Some(&key) = self.by_correlation.get(&c) {
                    self.conns[key].front.abort();
                    self.after_front(key);
                }
            }
            Message::CloseListener(l) => self.close_listener(l, false),
            Message::Finish => self.finishing = true,
            Message::FromLoop(items) => {
                owner_at(&self.shared, self.id).take_framed(now, unix_now(), items);
            }
            Message::Worker(report) => owner_at(&self.shared, self.id).take_report(now, report),
            Message::Commands => {
                let mut owner = owner_at(&self.shared, self.id);
                commands(&self.shared, &mut owner, now);
            }
        }
    }

    /// Stops accepting on `l`. Loop 0 (`release`) also closes it: the
    /// descriptor closed leaves every poll it was in, so the other loops
    /// only stop looking at it (deregistering a descriptor number that may
    /// already name another file would be wrong). A loop's own socket of
    /// it is closed here, which takes it out of this loop's poll and out of
    /// the port's group.
    fn close_listener(&mut self, l: ListenerId, release: bool) {
        if let Some(on) = self.listening.get_mut(l) {
            *on = false;
        }
        if let Some(own) = self.own.get_mut(l) {
            *own = None;
        }
        // The exposure has stopped: its gRPC connections, which outlive a
        // request, send GOAWAY after their replies and end.
        if let Some((exposure, _)) = self.shared.served.get(l).and_then(Option::as_ref) {
            let now = self.shared.now();
            let keys: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, c)| c.exposure == *exposure)
                .map(|(k, _)| k)
                .collect();
            for key in keys {
                self.conns[key].front.stop(now);
                self.dirty.push(key);
                self.after_front(key);
            }
        }
        if release {
            let mut listener = lock(&self.shared.listeners[l]);
            if let Some(fd) = listener.raw_fd() {
                let _ = self.reactor.registry().deregister(&mut SourceFd(&fd));
            }
            *listener = super::Listener::Closed;
        }
    }

    fn next_deadline(&mut self) -> Option<Timestamp> {
        let timer = self.timers.peek().map(|Reverse((t, _, _))| *t);
        let timer = earliest(timer, self.lingering.next_deadline());
        earliest(timer, self.accept_paused_until)
    }

    fn fire_timers(&mut self, now: Timestamp) {
        self.lingering.expire(now);
        while let Some(&Reverse((t, key, correlation))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            if conn.front.correlation() != correlation || conn.armed != Some(t) {
                continue;
            }
            conn.armed = None;
            match conn.front.poll_timeout() {
                Some(due) if due <= now => {
                    conn.front.handle_timeout(now);
                    self.after_front(key);
                }
                Some(later) => {
                    conn.armed = Some(later);
                    self.timers.push(Reverse((later, key, correlation)));
                }
                None => {}
            }
        }
    }

    /// Puts the connection's deadline in the heap when it is earlier than
    /// the one already there.
    fn rearm(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        // Armed once it is in the poll: a connection answered and closed
        // in the turn that accepted it costs the heap nothing.
        if !conn.registered {
            return;
        }
        let Some(want) = conn.front.poll_timeout() else {
            return;
        };
        if conn.armed.is_none_or(|armed| want < armed) {
            conn.armed = Some(want);
            self.timers
                .push(Reverse((want, key, conn.front.correlation())));
        }
    }

    fn accept(&mut self, l: ListenerId, now: Timestamp) {
        if !self.listening.get(l).copied().unwrap_or(false) || self.accept_paused_until.is_some() {
            return;
        }
        let Some((exposure, framing)) = self.shared.served[l].clone() else {
            return;
        };
        let mut failures = 0;
        loop {
            let accepted = match &self.own[l] {
                Some(own) => own.accept(),
                None => lock(&self.shared.listeners[l]).accept(),
            };
            let (stream, peer) = match accepted {
                Ok(Some(accepted)) => accepted,
                Ok(None) => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    failures += 1;
                    // Out of descriptors (or of kernel memory): the waiting
                    // connection stays in the backlog and every accept fails
                    // the same way until one is released. Pause instead of
                    // spinning; the connections held are served meanwhile.
                    // Another error concerns one connection (reset before it
                    // was taken): go on, a few times.
                    if out_of_descriptors(&e) || failures >= 16 {
                        self.accept_paused_until = Some(now + ACCEPT_PAUSE);
                        if !SHORTAGE_LOGGED.swap(true, Ordering::SeqCst) {
                            eprintln!(
                                "hale: accept failed: {e}; accepting pauses {} ms at a time until it succeeds, the connections held are served",
                                ACCEPT_PAUSE / MILLISECOND
                            );
                        }
                        return;
                    }
                    continue;
                }
            };
            // Each listener counts its own: a public port at its cap
            // leaves the operator's socket and the other ports their
            // places (issue #26).
            let Some(admitted) = Admitted::take(&self.shared.open[l], self.shared.caps[l]) else {
                // Past the cap: closed at once, harming nobody held.
                drop(stream);
                continue;
            };
            let correlation = ((self.id as u64) << CORRELATION_LOOP_SHIFT) | self.next_correlation;
            self.next_correlation += 1;
            let config = &self.shared.config;
            let Some(mut front) = fronts::accept(
                now,
                &config.fronts,
                config.grpc,
                &framing,
                stream.is_unix(),
                peer,
                correlation,
            ) else {
                continue;
            };
            front.set_keep_raw(self.shared.recorder.is_some());
            let key = self.conns.insert(Conn {
                stream,
                admitted,
                exposure,
                front,
                peer,
                writable: false,
                registered: false,
                read_paused: false,
                armed: None,
            });
            self.unregistered.push(key);
            self.by_correlation.insert(correlation, key);
            self.rearm(key);
            // A front that speaks first (HTTP/2's server SETTINGS) is
            // written this turn, not after the client's first bytes.
            if !self.conns[key].front.pending_output().is_empty() {
                self.dirty.push(key);
            }
            // A client sends its request as soon as it connects, so the
            // bytes are usually there already: read them now rather than a
            // turn later, when the readiness event says so.
            self.read(key);
        }
    }

    fn read(&mut self, key: usize) {
        let mut buf = std::mem::take(&mut self.read_buf);
        if buf.is_empty() {
            buf = vec![0u8; READ_BUF].into_boxed_slice();
        }
        self.read_into(key, &mut buf);
        self.read_buf = buf;
    }

    fn read_into(&mut self, key: usize, buf: &mut [u8]) {
        let mut budget = ReadBudget::turn();
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return;
            };
            // Backpressure: a peer that does not read its replies is not
            // read from until it does (or the stalled write ends it).
            if !conn.front.wants_read() {
                conn.read_paused = true;
                return;
            }
            let now = self.shared.now();
            // One load a read: a front answers a health check as it frames
            // the request these bytes complete.
            if self.shared.draining.load(Ordering::Relaxed) {
                conn.front.set_draining(true);
            }
            match conn.stream.read(buf) {
                Ok(0) => {
                    conn.front.handle_eof(now);
                    self.after_front(key);
                    return;
                }
                Ok(n) => {
                    conn.front.handle_data(now, &buf[..n]);
                    self.after_front(key);
                    // A front may answer input itself (a line that is not
                    // a request): write what it queued, with the rest.
                    if self
                        .conns
                        .get(key)
                        .is_some_and(|c| !c.front.pending_output().is_empty())
                    {
                        self.dirty.push(key);
                    }
                    // A short read emptied the socket: the next byte that
                    // arrives raises a new edge, so no read to EAGAIN.
                    if n < buf.len() {
                        return;
                    }
                    if budget.spend(n) {
                        // More may wait, and no edge will say so.
                        self.again.push(key);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    conn.front.handle_eof(now);
                    self.after_front(key);
                    return;
                }
            }
        }
    }

    /// Writes every connection that queued output this turn.
    /// Puts in the poll the connections accepted this turn that are still
    /// open. Most HTTP/1.1 connections are read, answered and closed within
    /// the turn that accepted them (the request is read at the accept),
    /// and never cost the two changes to the poll's set, its add and its
    /// removal at the close. Nothing is missed for the wait: an add reports
    /// the socket's readiness at that moment, and the edge-triggered poll
    /// every change after it.
    fn register_new(&mut self) {
        for key in std::mem::take(&mut self.unregistered) {
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            if conn.registered {
                continue;
            }
            let interest = if conn.writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if conn
                .stream
                .register(self.reactor.registry(), Token(key), interest)
                .is_ok()
            {
                conn.registered = true;
                self.rearm(key);
            } else {
                // Unwatched, it would never be read again: it ends.
                conn.front.abort();
                self.after_front(key);
            }
        }
    }

    fn flush(&mut self) {
        while !self.dirty.is_empty() {
            let mut keys = std::mem::take(&mut self.dirty);
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                self.write(key);
            }
        }
    }

    fn write(&mut self, key: usize) {
        let now = self.turn_time();
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        loop {
            let pending = conn.front.pending_output();
            if pending.is_empty() {
                break;
            }
            match conn.stream.write(pending) {
                Ok(n) => conn.front.consume_output(now, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    conn.front.abort();
                    break;
                }
            }
        }
        let want_write = !conn.front.pending_output().is_empty();
        // Output drained below the backpressure mark after a read stopped
        // for it: input may be waiting that an edge-triggered poll will not
        // announce again.
        let resume_read = conn.read_paused && conn.front.wants_read();
        if !conn.registered {
            // Put in the poll with this interest, if it outlives the turn.
            conn.writable = want_write;
        } else if want_write != conn.writable {
            conn.writable = want_write;
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let _ = conn
                .stream
                .reregister(self.reactor.registry(), Token(key), interest);
        }
        self.after_front(key);
        if resume_read && !want_write {
            // Read again from the loop, not from here: a reply written from
            // a read would otherwise nest reads without bound.
            if let Some(conn) = self.conns.get_mut(key) {
                conn.read_paused = false;
            }
            self.resume.push(key);
        }
    }

    /// Takes what a connection's front emitted: requests and losses for the
    /// owner, a close done here; then its timer.
    fn after_front(&mut self, key: usize) {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return;
            };
            match conn.front.poll_event() {
                None => break,
                Some(FrontEvent::Request { request, raw }) => {
                    self.to_owner.push(ToOwner::Request {
                        exposure: conn.exposure,
                        request,
                        raw,
                    });
                }
                Some(FrontEvent::Lost) => {
                    self.to_owner.push(ToOwner::Lost {
                        exposure: conn.exposure,
                        correlation: conn.front.correlation(),
                    });
                }
                Some(FrontEvent::Closed) => {
                    self.close(key);
                    return;
                }
            }
        }
        self.rearm(key);
    }

    fn close(&mut self, key: usize) {
        let Some(conn) = self.conns.try_remove(key) else {
            return;
        };
        // No deregistration: the socket is never duplicated, so closing its
        // descriptor (when `conn` drops) takes it out of the epoll set, and
        // an EPOLL_CTL_DEL first would be one more syscall per connection.
        let correlation = conn.front.correlation();
        self.by_correlation.remove(&correlation);
        let Conn {
            stream,
            admitted,
            exposure,
            front,
            registered,
            ..
        } = conn;
        // A refusal whose request was not read whole closes in stages, so
        // the client still sending reads it (RFC 9112 § 9.6); it keeps its
        // place in the listener's count meanwhile. Any other close is the
        // descriptor's drop, here.
        if front.lingers() {
            let now = self.shared.now();
            self.lingering
                .start(self.reactor.registry(), stream, registered, admitted, now);
        }
        // The runtime may still hold requests of this connection: they run,
        // and their replies are dropped.
        self.to_owner.push(ToOwner::Lost {
            exposure,
            correlation,
        });
    }

    /// The clock as this turn first read it for a write: a turn lasts
    /// microseconds, and reading the clock for each reply was a visible
    /// part of answering it.
    fn turn_time(&mut self) -> Timestamp {
        match self.reply_time {
            Some(now) => now,
            None => *self.reply_time.insert(self.shared.now()),
        }
    }

    fn deliver(&mut self, exposure: usize, delivery: Delivery, raw: Option<Box<RawRequest>>) {
        let Some(&key) = self.by_correlation.get(&delivery.correlation) else {
            return;
        };
        let now = self.turn_time();
        let conn = &mut self.conns[key];
        match (&self.shared.recorder, raw) {
            (Some(recorder), Some(raw)) => {
                let outcome = delivery.outcome.clone();
                let caller = delivery.caller.clone();
                let request_id = delivery.request_id;
                let n = conn.front.deliver(now, delivery);
                let out = conn.front.pending_output();
                let mut reply = &out[out.len() - n..];
                if conn.front.kind() == FrontKind::Unix {
                    reply = reply.strip_suffix(b"\n").unwrap_or(reply);
                }
                lock(recorder).exchange(&Exchange {
                    exposure: &self.shared.specs[exposure],
                    peer: conn.peer,
                    request: &raw,
                    request_id,
                    caller: &caller,
                    outcome: &outcome,
                    reply,
                });
            }
            _ => {
                conn.front.deliver(now, delivery);
            }
        }
        // Written once the loop has heard everything this turn, so the
        // replies a connection earned together go out in one write.
        self.dirty.push(key);
    }
}

/// The owner, behind its lock, told which loop (`id`) holds it.
fn owner_at(shared: &Shared, id: usize) -> std::sync::MutexGuard<'_, Owner> {
    let mut owner = lock(&shared.owner);
    owner.at = id;
    owner
}

/// Acts on the operators' commands not yet acted on, in the order given.
fn commands(shared: &Shared, owner: &mut Owner, now: Timestamp) {
    let queued = std::mem::take(&mut *lock(&shared.commands));
    for command in queued {
        owner.command(now, command);
    }
}

/// Whether an accept failed for want of descriptors or kernel memory: it
/// will fail again until something is released.
fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// The hasher of maps keyed by numbers the server assigns itself
/// (correlations): no peer chooses them, so they need no keyed hash, and
/// SipHash was a visible part of delivering each reply.
type OwnIds = std::hash::BuildHasherDefault<OwnIdHasher>;

/// See [`OwnIds`]: a multiplicative hash of one integer.
#[derive(Default)]
struct OwnIdHasher(u64);

impl std::hash::Hasher for OwnIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        // hashbrown takes its control bits from the top of the hash and its
        // bucket from the bottom: fold the well-mixed high half down.
        self.0 ^ (self.0 >> 32)
    }
}
