//! The serving driver: one mio event loop for every listener and connection
//! of the process, and a serial worker thread per receiver instance.
//!
//! The loop owns the machines — each connection's [`http1::Conn`] or
//! [`line::LineConn`], each [`Exposure`] — and does only I/O around them:
//! it reads into the machines, writes what they emit, keeps their timers,
//! hands dispatches to workers and feeds their completions back. A listener
//! that cannot bind is an error the caller turns into the boot failure
//! (the diagnostic and exit status 2).
//!
//! An MCP exposure ([`Server::serve_mcp`]) runs on the same HTTP machine;
//! only its framing and encoding are [`mcp`]'s: each connection keeps the
//! [`mcp::Reply`] its one request needs until the exposure answers it.

mod net;
pub mod record;
pub mod worker;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use limen_core::hale::runtime::{
    Correlation, Delivery, Event, Exposure, PeerCredentials, RequestId,
};
use limen_core::wire::{hale_http, http1, line, mcp};
use limen_core::Timestamp;
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

pub use net::{BoundAddress, Listener};
pub use record::{Exchange, RecordedRequest, Recorder};
use worker::{FromWorker, Job, OnFailure, Outbox, Worker, WorkerLink};

const WAKER: Token = Token(usize::MAX);
const LISTENER_BASE: usize = 1 << 40;
/// The size of one read from a connection.
const READ_BUF: usize = 16 * 1024;

/// Limits of the driver itself, beside each machine's own.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The most connections held open at once, over every listener; a
    /// connection past it is closed at accept.
    pub max_connections: usize,
    /// The HTTP machine's limits.
    pub http: http1::Limits,
    /// The Unix line machine's limits.
    pub line: line::Limits,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_connections: 4096,
            http: http1::Limits::default(),
            line: line::Limits::default(),
        }
    }
}

/// A worker, by the order it was added.
pub type WorkerId = usize;

/// A listener, by the order it was bound.
pub type ListenerId = usize;

/// What another thread may ask of a running [`Server`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// A worker's receiver drains: its members are refused `unavailable`.
    Drain(WorkerId),
    /// A drained worker's receiver is back: asked again, it answers.
    Resume(WorkerId),
}

/// Stops or steers a running [`Server`] from any thread.
#[derive(Clone)]
pub struct StopHandle {
    flag: Arc<AtomicBool>,
    waker: Arc<Waker>,
    commands: mpsc::Sender<Command>,
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle").finish_non_exhaustive()
    }
}

impl StopHandle {
    /// Runs `stop()` on every exposure: the server returns from
    /// [`Server::run`] once each has shut down.
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    /// Sends the loop a command.
    pub fn command(&self, command: Command) {
        if self.commands.send(command).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

enum Machine {
    Http(http1::Conn),
    Line(line::LineConn),
}

struct ConnEntry {
    stream: net::Stream,
    exposure: usize,
    correlation: Correlation,
    machine: Machine,
    peer: PeerCredentials,
    writable: bool,
    /// A read stopped for backpressure, leaving input the edge-triggered
    /// poll will not announce again: read once the output drains.
    read_paused: bool,
    /// Over MCP: how to answer the connection's request, once framed.
    mcp: Option<mcp::Reply>,
}

struct ExposureEntry {
    /// The machine, shared with the workers that report to it.
    exposure: Arc<Mutex<Exposure>>,
    /// The worker of each of the exposure's receivers.
    workers: Vec<WorkerId>,
    listener: ListenerId,
    /// The MCP framing, for an exposure served over MCP.
    mcp: Option<mcp::Framing>,
    /// Its members' names, shared with every job handed out.
    names: Arc<[String]>,
}

struct ListenerEntry {
    listener: Listener,
    exposure: Option<usize>,
    open: bool,
}

/// The serving driver. See the module documentation.
pub struct Server {
    config: ServerConfig,
    poll: Poll,
    waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
    /// Whether the loop sleeps (or is about to) in the poll, so a worker's
    /// completion must wake it; otherwise the loop finds it on its own.
    sleeping: Arc<AtomicBool>,
    listeners: Vec<ListenerEntry>,
    conns: Slab<ConnEntry>,
    by_correlation: HashMap<Correlation, usize, OwnIds>,
    exposures: Vec<ExposureEntry>,
    workers: Vec<Worker>,
    /// Whether each worker's receiver drains: asked, it is absent.
    draining: Vec<bool>,
    /// Connections to read again once the loop's events are handled.
    resume: Vec<usize>,
    /// The clock as the first reply of this turn read it: the turn's other
    /// replies take the same time (a turn lasts microseconds; reading the
    /// clock for each reply was a visible part of delivering it).
    reply_time: Option<Timestamp>,
    /// Where a connection's bytes are read into.
    read_buf: Box<[u8]>,
    /// Connections with output queued this turn, written at its end.
    dirty: Vec<usize>,
    /// Requests framed from one connection's input, admitted together
    /// (kept between reads so framing allocates no list).
    batch: Vec<(
        limen_core::hale::runtime::Request,
        Option<Box<RecordedRequest>>,
    )>,
    /// Events drained from an exposure, acted on once its lock is released.
    events: Vec<Event>,
    /// Where workers leave their reports.
    from_workers: Arc<Outbox>,
    /// The reports taken from the outbox, acted on one by one (kept, so
    /// taking allocates nothing).
    reports: Vec<FromWorker>,
    commands_tx: mpsc::Sender<Command>,
    commands_rx: mpsc::Receiver<Command>,
    next_correlation: Correlation,
    started: Instant,
    stopping: bool,
    /// Hears every exchange, when set.
    recorder: Option<Box<dyn Recorder>>,
    /// While recording: each request still owed a reply, by exposure and
    /// request id, with its connection.
    recording: HashMap<(usize, RequestId), (Correlation, RecordedRequest)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("listeners", &self.listeners.len())
            .field("conns", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with no listener yet. The process's soft limit on open
    /// descriptors is raised to its hard limit, since a server holds one per
    /// connection.
    pub fn new(config: ServerConfig) -> io::Result<Server> {
        net::raise_descriptor_limit();
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (commands_tx, commands_rx) = mpsc::channel();
        Ok(Server {
            commands_tx,
            commands_rx,
            config,
            poll,
            waker,
            stop: Arc::new(AtomicBool::new(false)),
            sleeping: Arc::new(AtomicBool::new(false)),
            listeners: Vec::new(),
            conns: Slab::new(),
            by_correlation: HashMap::default(),
            exposures: Vec::new(),
            workers: Vec::new(),
            draining: Vec::new(),
            resume: Vec::new(),
            reply_time: None,
            read_buf: vec![0u8; READ_BUF].into_boxed_slice(),
            dirty: Vec::new(),
            batch: Vec::new(),
            events: Vec::new(),
            from_workers: Arc::new(Outbox::default()),
            reports: Vec::new(),
            next_correlation: 1,
            started: Instant::now(),
            stopping: false,
            recorder: None,
            recording: HashMap::new(),
        })
    }

    /// A handle that stops the server from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.stop.clone(),
            waker: self.waker.clone(),
            commands: self.commands_tx.clone(),
        }
    }

    /// Sets the recorder that hears every exchange from now on.
    pub fn set_recorder(&mut self, recorder: Box<dyn Recorder>) {
        self.recorder = Some(recorder);
    }

    /// Binds an HTTP listener at `addr` (`host:port`; port 0 takes what the
    /// kernel gives). Nothing is accepted until an exposure is served on it.
    pub fn bind_http(&mut self, addr: &str) -> io::Result<(ListenerId, BoundAddress)> {
        let listener = Listener::bind_tcp(addr)?;
        self.add_listener(listener)
    }

    /// Binds a Unix socket listener at `path`: a stale socket file is
    /// replaced, a live one refused. An empty path binds nothing (`None`).
    pub fn bind_unix(&mut self, path: &Path) -> io::Result<Option<(ListenerId, BoundAddress)>> {
        if path.as_os_str().is_empty() {
            return Ok(None);
        }
        let listener = Listener::bind_unix(path)?;
        self.add_listener(listener).map(Some)
    }

    fn add_listener(&mut self, listener: Listener) -> io::Result<(ListenerId, BoundAddress)> {
        let id = self.listeners.len();
        let bound = listener.bound();
        self.listeners.push(ListenerEntry {
            listener,
            exposure: None,
            open: true,
        });
        Ok((id, bound))
    }

    /// Starts a worker for a receiver instance, announcing incarnation
    /// `stamp`; `on_failure` is its owner's, run after a violation.
    pub fn add_worker(
        &mut self,
        name: &str,
        stamp: u64,
        receiver: Box<dyn limen_core::hale::runtime::Receiver + Send>,
        on_failure: OnFailure,
    ) -> io::Result<WorkerId> {
        let waker = self.waker.clone();
        let sleeping = self.sleeping.clone();
        let link = WorkerLink {
            to_loop: self.from_workers.clone(),
            wake: Arc::new(move || {
                // The report is in the outbox before this swap, and the
                // loop marks itself sleeping before its last look at the
                // outbox (SeqCst orders the two), so no report is missed. The
                // first report after the mark clears it and wakes the loop;
                // the rest of that sleep's reports find it cleared and make
                // no syscall (the loop reads every report once awake).
                if sleeping.swap(false, Ordering::SeqCst) {
                    let _ = waker.wake();
                }
            }),
            on_failure,
        };
        let worker = Worker::spawn(self.workers.len(), name, stamp, receiver, link)?;
        self.workers.push(worker);
        self.draining.push(false);
        Ok(self.workers.len() - 1)
    }

    /// Serves `exposure` on `listener`, its receivers answered by `workers`
    /// (one per entry of its spec's receivers). Accepting starts now.
    pub fn serve(
        &mut self,
        listener: ListenerId,
        exposure: Exposure,
        workers: Vec<WorkerId>,
    ) -> io::Result<()> {
        self.serve_framed(listener, exposure, workers, None)
    }

    /// [`serve`](Server::serve) over MCP (§ The MCP transport): `POST /mcp`
    /// on the HTTP listener `listener`, framed and answered by
    /// [`mcp::Framing`]. The exposure's describer answers `tools/list`.
    pub fn serve_mcp(
        &mut self,
        listener: ListenerId,
        exposure: Exposure,
        workers: Vec<WorkerId>,
    ) -> io::Result<()> {
        let framing = mcp::Framing::new(exposure.spec());
        self.serve_framed(listener, exposure, workers, Some(framing))
    }

    fn serve_framed(
        &mut self,
        listener: ListenerId,
        mut exposure: Exposure,
        workers: Vec<WorkerId>,
        mcp: Option<mcp::Framing>,
    ) -> io::Result<()> {
        for (r, &w) in workers.iter().enumerate() {
            exposure.receiver_born(r, self.workers[w].stamp());
        }
        let index = self.exposures.len();
        let names = exposure
            .spec()
            .members
            .iter()
            .map(|m| m.name.clone())
            .collect();
        self.exposures.push(ExposureEntry {
            names,
            exposure: Arc::new(Mutex::new(exposure)),
            workers,
            listener,
            mcp,
        });
        let entry = &mut self.listeners[listener];
        entry.exposure = Some(index);
        entry
            .listener
            .register(self.poll.registry(), Token(LISTENER_BASE + listener))?;
        self.drain_exposure(index);
        Ok(())
    }

    /// Runs until every exposure has stopped (after a [`StopHandle::stop`]).
    pub fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            // Nothing queued may wait out a sleep.
            self.flush();
            let timeout = self.next_timeout();
            self.sleeping.store(true, Ordering::SeqCst);
            // A report left before the mark is in the outbox now.
            let ready = self.take_from_workers();
            let timeout = if ready { Some(Duration::ZERO) } else { timeout };
            let polled = self.poll.poll(&mut events, timeout);
            self.sleeping.store(false, Ordering::SeqCst);
            self.reply_time = None;
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            // Commands first: one sent before a client connected is in
            // force when that client's request is read.
            while let Ok(command) = self.commands_rx.try_recv() {
                match command {
                    Command::Drain(w) => self.drain_worker(w),
                    Command::Resume(w) => self.draining[w] = false,
                }
            }
            for event in events.iter() {
                let token = event.token().0;
                if event.token() == WAKER {
                    continue;
                }
                if token >= LISTENER_BASE {
                    self.accept(token - LISTENER_BASE);
                } else {
                    if event.is_readable() || event.is_read_closed() {
                        self.read(token);
                    }
                    if event.is_writable() {
                        self.write(token);
                    }
                }
            }
            self.take_from_workers();
            while let Some(key) = self.resume.pop() {
                self.read(key);
            }
            self.flush();
            if self.stop.load(Ordering::SeqCst) && !self.stopping {
                self.stopping = true;
                let now = unix_now();
                for i in 0..self.exposures.len() {
                    self.exposure(i).stop(now);
                    self.drain_exposure(i);
                }
            }
            self.fire_timers();
            if self.stopping
                && (0..self.exposures.len()).all(|i| self.exposure(i).is_stopped())
                && self.conns.is_empty()
            {
                return Ok(());
            }
        }
    }

    fn mono_now(&self) -> Timestamp {
        self.started.elapsed().as_nanos() as Timestamp
    }

    fn next_timeout(&self) -> Option<Duration> {
        let now = self.mono_now();
        let mut next: Option<Timestamp> = None;
        for (_, c) in &self.conns {
            let t = match &c.machine {
                Machine::Http(m) => m.poll_timeout(),
                Machine::Line(m) => m.poll_timeout(),
            };
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let mut timeout = next.map(|t| Duration::from_nanos(t.saturating_sub(now)));
        let unix = unix_now();
        for i in 0..self.exposures.len() {
            if let Some(t) = self.exposure(i).poll_timeout() {
                let d = Duration::from_nanos(t.saturating_sub(unix));
                timeout = Some(timeout.map_or(d, |x| x.min(d)));
            }
        }
        // Round up so a timer is never polled a hair early and spun on.
        timeout.map(|d| d + Duration::from_millis(1))
    }

    fn fire_timers(&mut self) {
        let now = self.mono_now();
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            let due = match &self.conns[key].machine {
                Machine::Http(m) => m.poll_timeout(),
                Machine::Line(m) => m.poll_timeout(),
            }
            .is_some_and(|t| t <= now);
            if due {
                match &mut self.conns[key].machine {
                    Machine::Http(m) => m.handle_timeout(now),
                    Machine::Line(m) => m.handle_timeout(now),
                }
                self.after_machine(key);
            }
        }
        let unix = unix_now();
        for i in 0..self.exposures.len() {
            let mut ex = self.exposure(i);
            if ex.poll_timeout().is_some_and(|t| t <= unix) {
                ex.handle_timeout(unix);
                drop(ex);
                self.drain_exposure(i);
            }
        }
    }

    fn accept(&mut self, listener: ListenerId) {
        loop {
            let entry = &self.listeners[listener];
            if !entry.open {
                return;
            }
            let Some(exposure) = entry.exposure else {
                return;
            };
            let (stream, peer) = match entry.listener.accept() {
                Ok(Some(accepted)) => accepted,
                Ok(None) => return,
                Err(_) => continue,
            };
            if self.conns.len() >= self.config.max_connections {
                // Past the cap: closed at once, harming nobody held.
                drop(stream);
                continue;
            }
            let now = self.mono_now();
            let machine = if stream.is_unix() {
                Machine::Line(line::LineConn::new(now, self.config.line, peer))
            } else {
                Machine::Http(http1::Conn::new(now, self.config.http))
            };
            let correlation = self.next_correlation;
            self.next_correlation += 1;
            let key = self.conns.insert(ConnEntry {
                stream,
                exposure,
                correlation,
                machine,
                peer,
                writable: false,
                read_paused: false,
                mcp: None,
            });
            let conn = &mut self.conns[key];
            if conn
                .stream
                .register(self.poll.registry(), Token(key), Interest::READABLE)
                .is_err()
            {
                self.conns.remove(key);
                continue;
            }
            self.by_correlation.insert(correlation, key);
        }
    }

    fn read(&mut self, key: usize) {
        // The server's buffer, zeroed once: a fresh one zeroed for every
        // read cost more than the framing of a short read's lines. (Taken
        // out while reading; a nested read would find it gone and make its
        // own.)
        let mut buf = std::mem::take(&mut self.read_buf);
        if buf.is_empty() {
            buf = vec![0u8; READ_BUF].into_boxed_slice();
        }
        self.read_into(key, &mut buf);
        self.read_buf = buf;
    }

    fn read_into(&mut self, key: usize, buf: &mut [u8]) {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return;
            };
            if let Machine::Line(m) = &conn.machine {
                // Backpressure: a peer that does not read its replies is not
                // read from until it does (or the stalled write ends it).
                if !m.wants_read() {
                    conn.read_paused = true;
                    return;
                }
            }
            let now = self.started.elapsed().as_nanos() as Timestamp;
            match conn.stream.read(buf) {
                Ok(0) => {
                    match &mut conn.machine {
                        Machine::Http(m) => m.handle_eof(now),
                        Machine::Line(m) => m.handle_eof(now),
                    }
                    self.after_machine(key);
                    return;
                }
                Ok(n) => {
                    match &mut conn.machine {
                        Machine::Http(m) => m.handle_data(now, &buf[..n]),
                        Machine::Line(m) => m.handle_data(now, &buf[..n]),
                    }
                    self.after_machine(key);
                    // A machine may answer input itself (a line that is not
                    // a request): write what it queued, with the rest.
                    if self.has_output(key) {
                        self.dirty.push(key);
                    }
                    // A short read emptied the socket: the next byte that
                    // arrives raises a new edge, so no read to EAGAIN.
                    if n < buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    match &mut conn.machine {
                        Machine::Http(m) => m.handle_eof(now),
                        Machine::Line(m) => m.handle_eof(now),
                    }
                    self.after_machine(key);
                    return;
                }
            }
        }
    }

    /// Writes every connection that queued output this turn.
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

    fn has_output(&self, key: usize) -> bool {
        self.conns.get(key).is_some_and(|c| match &c.machine {
            Machine::Http(m) => !m.pending_output().is_empty(),
            Machine::Line(m) => !m.pending_output().is_empty(),
        })
    }

    fn write(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let now = self.started.elapsed().as_nanos() as Timestamp;
        loop {
            let pending = match &conn.machine {
                Machine::Http(m) => m.pending_output(),
                Machine::Line(m) => m.pending_output(),
            };
            if pending.is_empty() {
                break;
            }
            match conn.stream.write(pending) {
                Ok(n) => match &mut conn.machine {
                    Machine::Http(m) => m.consume_output(now, n),
                    Machine::Line(m) => m.consume_output(now, n),
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    match &mut conn.machine {
                        Machine::Http(m) => m.abort(),
                        Machine::Line(m) => m.abort(),
                    }
                    break;
                }
            }
        }
        let want_write = match &conn.machine {
            Machine::Http(m) => !m.pending_output().is_empty(),
            Machine::Line(m) => !m.pending_output().is_empty(),
        };
        // Output drained below the backpressure mark after a read stopped
        // for it: input may be waiting that an edge-triggered poll will not
        // announce again. (Otherwise every read ran to a short read or
        // EAGAIN, and reading again would only cost an empty syscall.)
        let resume_read =
            conn.read_paused && matches!(&conn.machine, Machine::Line(m) if m.wants_read());
        if want_write != conn.writable {
            conn.writable = want_write;
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let _ = conn
                .stream
                .reregister(self.poll.registry(), Token(key), interest);
        }
        self.after_machine(key);
        if resume_read && !want_write {
            // Read again from the loop, not from here: a reply written
            // from a read would otherwise nest reads without bound.
            if let Some(conn) = self.conns.get_mut(key) {
                conn.read_paused = false;
            }
            self.resume.push(key);
        }
    }

    /// Handles what a connection's machine emitted. The requests a read
    /// framed together are admitted under one hold of the exposure's lock,
    /// and what they caused is acted on after it: the workers reporting to
    /// the exposure wait once a read, not once a line.
    fn after_machine(&mut self, key: usize) {
        let mut batch = std::mem::take(&mut self.batch);
        while let Some(conn) = self.conns.get_mut(key) {
            let exposure = conn.exposure;
            let correlation = conn.correlation;
            let peer = conn.peer;
            let recording = self.recorder.is_some();
            let framing = self.exposures[exposure].mcp.as_ref();
            // Frames every request the machine has, in order, up to the
            // first event that is not one. An HTTP connection's request is
            // answered before the next is framed (its MCP reply is kept on
            // the connection), so a batch there is one request.
            let mut end = None;
            while end.is_none() {
                let framed = match &mut conn.machine {
                    Machine::Http(m) if framing.is_some() => {
                        let framing = framing.expect("checked");
                        match m.poll_event() {
                            None => break,
                            Some(http1::ConnEvent::Request(req)) => {
                                let (request, reply) = framing.frame(&req, correlation);
                                conn.mcp = Some(reply);
                                Framed::Request(
                                    request,
                                    recording.then(|| Box::new(RecordedRequest::Mcp(req))),
                                )
                            }
                            Some(http1::ConnEvent::Malformed { reason, head }) => {
                                let (request, reply) =
                                    framing.frame_malformed(&reason, head.as_ref(), correlation);
                                conn.mcp = Some(reply);
                                Framed::Request(request, None)
                            }
                            Some(http1::ConnEvent::Lost) => Framed::Lost,
                            Some(http1::ConnEvent::Close) => Framed::Close,
                        }
                    }
                    Machine::Http(m) => match m.poll_event() {
                        None => break,
                        Some(http1::ConnEvent::Request(req)) => {
                            let request = hale_http::frame(&req, correlation);
                            Framed::Request(
                                request,
                                recording.then(|| Box::new(RecordedRequest::Http(req))),
                            )
                        }
                        Some(http1::ConnEvent::Malformed { reason, head }) => Framed::Request(
                            hale_http::frame_malformed(&reason, head.as_ref(), correlation),
                            None,
                        ),
                        Some(http1::ConnEvent::Lost) => Framed::Lost,
                        Some(http1::ConnEvent::Close) => Framed::Close,
                    },
                    Machine::Line(m) => match m.poll_event() {
                        None => break,
                        Some(line::LineEvent::Request(req)) => {
                            let raw =
                                recording.then(|| Box::new(RecordedRequest::Line(req.clone())));
                            Framed::Request(line::to_request(req, correlation, peer), raw)
                        }
                        Some(line::LineEvent::Lost) => Framed::Lost,
                        Some(line::LineEvent::Close) => Framed::Close,
                    },
                };
                match framed {
                    Framed::Request(request, raw) => {
                        batch.push((request, raw));
                        if matches!(conn.machine, Machine::Http(_)) {
                            break;
                        }
                    }
                    other => end = Some(other),
                }
            }
            if batch.is_empty() && end.is_none() {
                break;
            }
            if !batch.is_empty() {
                let now = unix_now();
                {
                    let mut ex = self.exposures[exposure]
                        .exposure
                        .lock()
                        .expect("exposure lock");
                    for (request, raw) in batch.drain(..) {
                        let id = ex.handle_request(now, request);
                        if let Some(raw) = raw {
                            self.recording.insert((exposure, id), (correlation, *raw));
                        }
                    }
                }
                self.drain_exposure(exposure);
            }
            match end {
                None => {}
                Some(Framed::Lost) => {
                    self.exposure(exposure).connection_lost(correlation);
                    self.drain_exposure(exposure);
                }
                Some(Framed::Close) => {
                    self.close(key);
                    break;
                }
                Some(Framed::Request(..)) => unreachable!("a request is batched"),
            }
        }
        self.batch = batch;
    }

    fn close(&mut self, key: usize) {
        if let Some(mut conn) = self.conns.try_remove(key) {
            let _ = conn.stream.deregister(self.poll.registry());
            self.by_correlation.remove(&conn.correlation);
            let correlation = conn.correlation;
            let exposure = conn.exposure;
            drop(conn);
            if !self.recording.is_empty() {
                // No reply reaches a closed connection: forget its requests.
                self.recording.retain(|_, (c, _)| *c != correlation);
            }
            // The runtime may still hold requests of this connection: they
            // run, and their replies are dropped.
            self.exposure(exposure).connection_lost(correlation);
            self.drain_exposure(exposure);
        }
    }

    /// The exposure `index`, locked: the loop and the workers reporting to
    /// it take turns, each for one step of the machine.
    fn exposure(&self, index: usize) -> MutexGuard<'_, Exposure> {
        self.exposures[index]
            .exposure
            .lock()
            .expect("an exposure's lock is never poisoned: machines do not panic")
    }

    /// Acts on everything the workers reported; returns whether there was
    /// anything.
    fn take_from_workers(&mut self) -> bool {
        let mut any = false;
        // Which exposures heard a report: each is drained once, after every
        // report is acted on, so the loop takes an exposure's lock once a
        // wake-up rather than once a completion.
        let mut heard = 0u64;
        let mut reports = std::mem::take(&mut self.reports);
        self.from_workers.take(&mut reports);
        for report in reports.drain(..) {
            any = true;
            match report {
                FromWorker::Event(index, event) => {
                    self.act(index, event);
                    if index < 64 {
                        heard |= 1 << index;
                    } else {
                        self.drain_exposure(index);
                    }
                }
                FromWorker::Draining(worker) => self.drain_worker(worker),
            }
        }
        while heard != 0 {
            let index = heard.trailing_zeros() as usize;
            heard &= heard - 1;
            self.drain_exposure(index);
        }
        self.reports = reports;
        any
    }

    /// Every exposure bound to `worker` learns that its receiver drains:
    /// their queued calls for it settle unavailable.
    pub fn drain_worker(&mut self, worker: WorkerId) {
        self.draining[worker] = true;
        let stamp = self.workers[worker].stamp();
        for i in 0..self.exposures.len() {
            let receivers: Vec<usize> = (0..self.exposures[i].workers.len())
                .filter(|&r| self.exposures[i].workers[r] == worker)
                .collect();
            for r in receivers {
                self.exposure(i).receiver_draining(r, stamp);
            }
            self.drain_exposure(i);
        }
    }

    /// Acts on everything an exposure emitted.
    fn drain_exposure(&mut self, index: usize) {
        // The buffer is the server's, kept between calls so draining
        // allocates nothing; `act` may drain again (a nested call finds it
        // taken and uses a fresh one).
        let mut events = std::mem::take(&mut self.events);
        loop {
            {
                let mut ex = self.exposure(index);
                events.extend(std::iter::from_fn(|| ex.poll_event()));
            }
            if events.is_empty() {
                break;
            }
            for event in events.drain(..) {
                self.act(index, event);
            }
        }
        self.events = events;
    }

    /// Acts on one event of exposure `index`.
    fn act(&mut self, index: usize, event: Event) {
        match event {
            Event::Deliver(d) => self.deliver(index, d),
            Event::Dispatch(d) => {
                let worker = self.exposures[index].workers[d.receiver];
                let job = Job {
                    index,
                    exposure: self.exposures[index].exposure.clone(),
                    names: self.exposures[index].names.clone(),
                    dispatch: d,
                };
                if let Err(request_id) = self.workers[worker].hand(job) {
                    self.exposure(index).dispatch_not_taken(request_id);
                }
            }
            Event::Ask(r) => {
                let worker = self.exposures[index].workers[r];
                let stamp = self.workers[worker].stamp();
                let draining = self.draining[worker];
                let mut ex = self.exposure(index);
                if draining {
                    ex.receiver_absent(r);
                } else {
                    ex.receiver_born(r, stamp);
                }
            }
            Event::CloseConnection(c) => {
                if let Some(&key) = self.by_correlation.get(&c) {
                    match &mut self.conns[key].machine {
                        Machine::Http(m) => m.abort(),
                        Machine::Line(m) => m.abort(),
                    }
                    self.after_machine(key);
                }
            }
            Event::StopListening => {
                let l = self.exposures[index].listener;
                let entry = &mut self.listeners[l];
                if entry.open {
                    entry.open = false;
                    entry.listener.close(self.poll.registry());
                }
            }
        }
    }

    fn deliver(&mut self, index: usize, d: Delivery) {
        let recorded = match self.recorder {
            Some(_) => self.recording.remove(&(index, d.request_id)),
            None => None,
        };
        let Some(&key) = self.by_correlation.get(&d.correlation) else {
            return;
        };
        let now = match self.reply_time {
            Some(now) => now,
            None => *self.reply_time.insert(self.mono_now()),
        };
        let outcome = recorded.as_ref().map(|_| d.outcome.clone());
        let conn = &mut self.conns[key];
        let peer = conn.peer;
        let mcp = match (&self.exposures[index].mcp, conn.mcp.take()) {
            (Some(framing), Some(reply)) => Some((framing, reply)),
            _ => None,
        };
        let reply = match &mut conn.machine {
            Machine::Http(m) if mcp.is_some() => {
                let (framing, reply) = mcp.expect("checked");
                let answer = framing.answer(&reply, d.outcome);
                m.send(now, answer.status, &answer.headers, &answer.body);
                recorded.as_ref().map(|_| m.pending_output().to_vec())
            }
            Machine::Http(m) => {
                let (status, body) = hale_http::encode(d.outcome);
                m.send_json(now, status, &body);
                recorded.as_ref().map(|_| m.pending_output().to_vec())
            }
            Machine::Line(m) if recorded.is_some() => {
                let reply = d
                    .outcome
                    .unix_line(d.request_id, d.client_id.as_deref(), &d.caller);
                m.send_line(now, &reply);
                Some(reply)
            }
            Machine::Line(m) => {
                m.send_reply(
                    now,
                    d.request_id,
                    d.client_id.as_deref(),
                    &d.caller,
                    &d.outcome,
                );
                None
            }
        };
        if let (Some(recorder), Some((_, request)), Some(outcome), Some(reply)) =
            (self.recorder.as_mut(), &recorded, &outcome, &reply)
        {
            let ex = self.exposures[index]
                .exposure
                .lock()
                .expect("exposure lock");
            recorder.exchange(&Exchange {
                exposure: ex.spec(),
                peer,
                request,
                request_id: d.request_id,
                caller: &d.caller,
                outcome,
                reply,
            });
        }
        // Written once the loop has heard everything this turn, so the
        // replies a connection earned together go out in one write.
        self.dirty.push(key);
    }
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

enum Framed {
    /// A framed request, and its wire form while recording.
    Request(
        limen_core::hale::runtime::Request,
        Option<Box<RecordedRequest>>,
    ),
    Lost,
    Close,
}

/// Nanoseconds since the Unix epoch: the clock a bearer source's expiry is
/// stated on.
pub fn unix_now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as Timestamp)
        .unwrap_or(0)
}

/// Where a Unix listener's socket file is, for callers that print it.
pub fn socket_path(bound: &BoundAddress) -> Option<PathBuf> {
    match bound {
        BoundAddress::Unix(p) => Some(p.clone()),
        BoundAddress::Tcp(_) => None,
    }
}
