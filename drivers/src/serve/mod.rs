//! The serving driver: mio event loops, one per core by default, that move
//! bytes between sockets and the transport fronts of `limen_core`, one
//! owner of every exposure, and a serial worker thread per receiver
//! instance.
//!
//! - Each loop (`conn_loop.rs`) holds the connections it accepted and their
//!   [`Front`](limen_core::wire::front::Front)s: it reads into the fronts,
//!   writes what they queue, keeps their timers in a heap, and admits the
//!   requests a turn framed at the owner, on its own thread, once a turn.
//!   Every loop accepts on every listener: on a TCP port each has a socket
//!   of its own in the port's SO_REUSEPORT group, so the kernel spreads the
//!   connections; a Unix socket they share.
//! - The owner (`owner.rs`), behind one lock, holds every [`Exposure`]:
//!   whichever loop holds the lock feeds it that loop's requests, runs the
//!   inline receivers it hands calls to, and takes the deliveries for its
//!   own connections; the deliveries for another loop's go to that loop's
//!   mailbox (a correlation names its loop). The workers' reports and the
//!   operator's commands come to loop 0's mailbox, and loop 0 acts on them.
//! - A worker ([`worker`]) runs one call at a time of its receiver, behind
//!   a panic boundary, and reports how it ended to the owner. A receiver
//!   declared non-blocking (`inline.rs`, [`Server::add_inline_receiver`])
//!   runs under the owner's lock instead, on the loop that handed it the
//!   call, behind the same boundary. A receiver whose handlers are a
//!   process (`piped.rs`, [`Server::add_piped_receiver`]) has no thread
//!   either: its calls are written to the process's pipe by the loop that
//!   hands them, and its replies read by loop 0, which polls the pipe.
//! - A WebSocket hub ([`hub`]) runs on a loop of its own: its one machine
//!   holds every connection of the hub, and its sends are spread over the
//!   loop's thread and a few writer threads (`fanout.rs`); a datagram hub
//!   ([`udp_hub`]) on a loop of its own around its one socket.
//!
//! The owner's is the one lock held across a step of a machine (the
//! exposures' and the inline receivers'); it is held for a turn's
//! admission, never across a system call but the mailboxes' wake-ups.
//! Otherwise threads exchange messages through mailboxes. The driver frames nothing and encodes nothing; the
//! fronts do. A listener that cannot bind is an error the caller turns into
//! the boot failure (the diagnostic and exit status 2). See
//! `docs/architecture.md` for one call's path.

mod conn_loop;
mod fanout;
mod fronts;
pub mod hub;
mod inline;
mod linger;
mod mailbox;
mod net;
mod owner;
mod piped;
mod reactor;
pub mod record;
pub mod udp_hub;
pub mod worker;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use limen_core::hale::runtime::{Correlation, Delivery, Exposure, ExposureSpec, Input, Request};
use limen_core::wire::front::{FrontLimits, RawRequest};
use limen_core::wire::{grpc, mcp};
use limen_core::Timestamp;
use limen_grpc::GrpcLimits;

use conn_loop::ConnLoop;
use fronts::Framing;
pub use linger::LingerLimits;
use mailbox::Mailbox;
pub use net::{BoundAddress, Listener};
use owner::{Actor, OwnedExposure, Owner};
pub use piped::PipedHandler;
use reactor::{Clock, Reactor};
pub use record::{Exchange, RecordedRequest, Recorder};
use worker::{OnFailure, Report, Worker};

/// Limits of the driver itself, beside each front's own. The default:
/// caps derived from the descriptor limit, the default lingering close,
/// the fronts' own defaults, one loop per core but one.
#[derive(Clone, Debug, Default)]
pub struct ServerConfig {
    /// The most connections each TCP listener holds open at once, over
    /// every loop; each listener counts its own, so a port at its cap
    /// leaves the others theirs, and a connection past it is closed at
    /// accept. 0 (the default): derived from the process's descriptor
    /// limit ([`connection_caps`]). [`Server::set_max_connections`] sets
    /// one listener's.
    pub max_connections: usize,
    /// The same for each Unix listener (an operator's socket); 0 (the
    /// default): derived from the descriptor limit ([`connection_caps`]).
    pub max_unix_connections: usize,
    /// How a connection refused before its request was read closes
    /// (RFC 9112 § 9.6's lingering close; `linger.rs`).
    pub linger: LingerLimits,
    /// The fronts' limits.
    pub fronts: FrontLimits,
    /// The gRPC front's limits.
    pub grpc: GrpcLimits,
    /// How many connection loops run (each on a thread; loop 0 on the one
    /// that calls [`Server::run`]). 0: one per core the process may use.
    pub loops: usize,
    /// How long [`StopHandle::drain_then_stop`] drains before it stops:
    /// every front's health check answers that the node is not serving
    /// while calls are still served, so a balancer takes the node out
    /// before `stop()` refuses its queue (`--drain-grace`). Zero (the
    /// default): the stop is at once, the spec's `stop()` alone.
    pub drain_grace: std::time::Duration,
}

impl ServerConfig {
    /// The number of loops this configuration runs.
    pub fn loop_count(&self) -> usize {
        match self.loops {
            // A loop admits what it framed itself, under the owner's lock,
            // and accepts on a socket of its own: on 2 vCPUs two loops
            // served HTTP 0.93-0.94x and 1.01-1.05x peer-http-limit where
            // one served 0.85-0.87x and 1.00-1.03x, and gRPC 2.23x tonic
            // where one served 2.00x (benches/RESULTS.md, "One loop per
            // core"). When every call hopped to loop 0's thread, a second
            // loop gained nothing and took the workers' core.
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
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

/// Everything that travels between the server's threads.
#[derive(Debug)]
pub(crate) enum Message {
    /// To loop 0, for the owner: what a hub's loop framed this turn, in
    /// order (a connection loop admits its own under the owner's lock).
    FromLoop(Vec<ToOwner>),
    /// To the owner: a worker's report.
    Worker(Report),
    /// To loop 0: operators' commands wait in `Shared::commands`; act on
    /// them if no loop has yet.
    Commands,
    /// To a loop: encode and write a delivery (with the request's wire
    /// form, while recording).
    Deliver {
        exposure: usize,
        delivery: Delivery,
        raw: Option<Box<RawRequest>>,
    },
    /// To a loop: the exposure is finished with this connection.
    Abort(Correlation),
    /// To a loop: stop accepting on this listener.
    CloseListener(ListenerId),
    /// To a loop: every exposure has stopped; end once the connections
    /// held are done.
    Finish,
}

/// What a loop tells the owner.
#[derive(Debug)]
pub(crate) enum ToOwner {
    /// A framed request for `exposure`.
    Request {
        exposure: usize,
        request: Request,
        raw: Option<Box<RawRequest>>,
    },
    /// The connection `correlation` is gone.
    Lost {
        exposure: usize,
        correlation: Correlation,
    },
}

/// The bits of a correlation below the loop's number: a correlation is
/// How many calls an exposure served here should hand a receiver's worker
/// ahead of the one it runs ([`ExposureLimits::dispatch_ahead`]): enough
/// that a busy worker finds its next call waiting, few enough that a stop
/// or a drain has little to take back.
///
/// [`ExposureLimits::dispatch_ahead`]: limen_core::hale::runtime::ExposureLimits::dispatch_ahead
pub const DISPATCH_AHEAD: usize = 32;

/// `loop << CORRELATION_LOOP_SHIFT | n`, so a delivery finds its loop without a table.
pub(crate) const CORRELATION_LOOP_SHIFT: u32 = 48;

/// The first route that names a hub rather than a loop: a call framed on a
/// hub's connection `n` carries the correlation `(HUB_ROUTE_BASE + hub) <<
/// CORRELATION_LOOP_SHIFT | n`, far above any loop's number, so the owner
/// sends its delivery to the hub's mailbox.
pub(crate) const HUB_ROUTE_BASE: usize = 1 << 15;

/// The loop that owns the connection `correlation`.
pub(crate) fn loop_of(correlation: Correlation) -> usize {
    (correlation >> CORRELATION_LOOP_SHIFT) as usize
}

/// Told of every delivery an exposure of the server makes, on the thread
/// that makes it, under the owner's lock: it must be quick (count, format
/// a line), never block.
pub trait CallObserver: Send + Sync {
    /// `delivery` leaves exposure `exposure`; `member` is the member it
    /// called, when it named one the surface has.
    fn delivered(&self, exposure: &str, member: Option<&str>, delivery: &Delivery);

    /// Exposure `exposure` holds `pending` requests accepted and not yet
    /// answered (queued or executing), after a turn of its events.
    fn depth(&self, exposure: &str, pending: usize) {
        let _ = (exposure, pending);
    }
}

/// A hub's loop to run beside a server ([`Server::run_with`]).
pub struct HubRun {
    /// The thread's name.
    pub name: String,
    /// The hub's handle, to stop it once the exposures have stopped.
    pub handle: hub::HubHandle,
    /// The loop.
    pub run: Box<dyn FnOnce() -> io::Result<()> + Send>,
}

/// Stops or steers a running [`Server`] from any thread.
#[derive(Clone)]
pub struct StopHandle {
    flag: Arc<AtomicBool>,
    owner: Arc<Mailbox<Message>>,
    commands: Arc<Mutex<Vec<Command>>>,
    draining: Arc<AtomicBool>,
    grace: std::time::Duration,
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
        self.owner.wake_now();
    }

    /// Drains, then stops: from now on every front's health check
    /// (`GET /.health`, `grpc.health.v1.Health/Check`) answers that the
    /// node is not serving, while calls are admitted and answered as
    /// before; once [`ServerConfig::drain_grace`] has passed, loop 0 runs
    /// [`stop`](StopHandle::stop). A balancer that checks more often than
    /// the grace has taken the node out by then, so the stop refuses
    /// nothing it would have sent elsewhere. With no grace, the stop is at
    /// once. A [`stop`](StopHandle::stop) during the drain cuts it short;
    /// a second drain changes nothing.
    pub fn drain_then_stop(&self) {
        if self.grace.is_zero() {
            return self.stop();
        }
        self.draining.store(true, Ordering::SeqCst);
        self.owner.wake_now();
    }

    /// How long [`drain_then_stop`](StopHandle::drain_then_stop) drains.
    pub fn drain_grace(&self) -> std::time::Duration {
        self.grace
    }

    /// Sends the server a command.
    pub fn command(&self, command: Command) {
        // Queued where every loop looks before it admits a request, so a
        // command given before a client connected is in force for it on
        // whichever loop its connection lands; loop 0 is woken to act on it
        // at once when no request comes.
        lock(&self.commands).push(command);
        self.owner.send(Message::Commands);
    }
}

/// What every loop shares.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    /// The listeners, by id (a closed one is `Listener::Closed`).
    pub(crate) listeners: Vec<Arc<Mutex<Listener>>>,
    /// The exposure each listener serves, and how its connections are
    /// framed.
    pub(crate) served: Vec<Option<(usize, Framing)>>,
    /// Every exposure's spec, for recordings.
    pub(crate) specs: Vec<Arc<ExposureSpec>>,
    /// Connections open over every loop (lingering ones too), by
    /// listener.
    pub(crate) open: Vec<Arc<AtomicUsize>>,
    /// The most connections each listener holds.
    pub(crate) caps: Vec<usize>,
    /// Hears every exchange, when set.
    pub(crate) recorder: Option<Mutex<Box<dyn Recorder>>>,
    /// The loops' one monotonic clock.
    pub(crate) clock: Clock,
    pub(crate) stop: Arc<AtomicBool>,
    /// Whether the node drains ([`StopHandle::drain_then_stop`]): each
    /// loop tells a front so before it reads a request.
    pub(crate) draining: Arc<AtomicBool>,
    /// The operators' commands not yet acted on: taken under the owner's
    /// lock before a loop admits anything.
    pub(crate) commands: Arc<Mutex<Vec<Command>>>,
    /// The exposures' owner: each loop admits the requests it framed
    /// under this lock, on its own thread.
    pub(in crate::serve) owner: Mutex<Owner>,
}

impl Shared {
    /// The monotonic clock, in nanoseconds since the server started.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// The serving driver. See the module documentation.
pub struct Server {
    config: ServerConfig,
    /// Loop 0's reactor, made first so the owner's mailbox can wake it.
    reactor: Reactor,
    owner_box: Arc<Mailbox<Message>>,
    owner: Owner,
    listeners: Vec<Listener>,
    served: Vec<Option<(usize, Framing)>>,
    /// Each listener's cap, where set ([`Server::set_max_connections`]).
    caps: Vec<Option<usize>>,
    /// Each listener's connections open, over every loop.
    open: Vec<Arc<AtomicUsize>>,
    stop: Arc<AtomicBool>,
    /// Whether the node drains ([`StopHandle::drain_then_stop`]).
    draining: Arc<AtomicBool>,
    /// The operators' commands not yet acted on ([`StopHandle::command`]).
    commands: Arc<Mutex<Vec<Command>>>,
    recorder: Option<Box<dyn Recorder>>,
    clock: Clock,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("listeners", &self.listeners.len())
            .field("loops", &self.config.loop_count())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with no listener yet. The process's soft limit on open
    /// descriptors is raised to its hard limit, since a server holds one per
    /// connection.
    pub fn new(config: ServerConfig) -> io::Result<Server> {
        net::raise_descriptor_limit();
        let (reactor, waker) = Reactor::new()?;
        Ok(Server {
            config,
            reactor,
            owner_box: Arc::new(Mailbox::new(waker)),
            owner: Owner::new(),
            listeners: Vec::new(),
            served: Vec::new(),
            caps: Vec::new(),
            open: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            draining: Arc::new(AtomicBool::new(false)),
            commands: Arc::default(),
            recorder: None,
            clock: Clock::start(),
        })
    }

    /// A handle that stops the server from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            flag: self.stop.clone(),
            owner: self.owner_box.clone(),
            commands: self.commands.clone(),
            draining: self.draining.clone(),
            grace: self.config.drain_grace,
        }
    }

    /// Sets the recorder that hears every exchange from now on.
    pub fn set_recorder(&mut self, recorder: Box<dyn Recorder>) {
        self.recorder = Some(recorder);
    }

    /// Tells `observer` of every delivery (`hale serve --log calls`,
    /// `--metrics`).
    pub fn set_observer(&mut self, observer: Arc<dyn CallObserver>) {
        self.owner.observer = Some(observer);
    }

    /// Binds an HTTP listener at `addr` (`host:port`; port 0 takes what the
    /// kernel gives). Nothing is accepted until an exposure is served on it.
    pub fn bind_http(&mut self, addr: &str) -> io::Result<(ListenerId, BoundAddress)> {
        let listener = Listener::bind_tcp(addr)?;
        Ok(self.add_listener(listener))
    }

    /// Binds a gRPC listener at `addr` (`host:port`): a TCP listener, as
    /// [`bind_http`](Server::bind_http)'s; what it speaks is set by
    /// [`serve_grpc`](Server::serve_grpc).
    pub fn bind_grpc(&mut self, addr: &str) -> io::Result<(ListenerId, BoundAddress)> {
        self.bind_http(addr)
    }

    /// Binds a Unix socket listener at `path`: a stale socket file is
    /// replaced, a live one refused. An empty path binds nothing (`None`).
    pub fn bind_unix(&mut self, path: &Path) -> io::Result<Option<(ListenerId, BoundAddress)>> {
        if path.as_os_str().is_empty() {
            return Ok(None);
        }
        let listener = Listener::bind_unix(path)?;
        Ok(Some(self.add_listener(listener)))
    }

    fn add_listener(&mut self, listener: Listener) -> (ListenerId, BoundAddress) {
        let bound = listener.bound();
        self.listeners.push(listener);
        self.served.push(None);
        self.caps.push(None);
        self.open.push(Arc::new(AtomicUsize::new(0)));
        (self.listeners.len() - 1, bound)
    }

    /// How many connections `listener` holds open, as it serves (a
    /// metrics gauge).
    pub fn connections(&self, listener: ListenerId) -> Option<Arc<AtomicUsize>> {
        self.open.get(listener).cloned()
    }

    /// Sets the most connections `listener` holds open at once (at least
    /// one), in place of the default of its kind
    /// ([`ServerConfig::max_connections`]); a connection past it is closed
    /// at accept, and the other listeners count theirs apart.
    pub fn set_max_connections(&mut self, listener: ListenerId, max: usize) -> io::Result<()> {
        if max == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a listener holds at least one connection",
            ));
        }
        match self.caps.get_mut(listener) {
            Some(cap) => {
                *cap = Some(max);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no listener {listener}"),
            )),
        }
    }

    /// Starts a worker for a receiver instance, announcing incarnation
    /// `stamp`; `on_failure` is its owner's, run after a violation or a
    /// panic.
    pub fn add_worker(
        &mut self,
        name: &str,
        stamp: u64,
        receiver: Box<dyn limen_core::hale::runtime::Receiver + Send>,
        on_failure: OnFailure,
    ) -> io::Result<WorkerId> {
        let id = self.owner.workers.len();
        let worker = Worker::spawn(
            id,
            name,
            stamp,
            Arc::new(std::sync::Mutex::new(receiver)),
            on_failure,
            self.owner_box.clone(),
        )?;
        Ok(self.owner.add_actor(Actor::Thread(worker)))
    }

    /// Adds a receiver instance declared non-blocking: while its calls come
    /// one or a few at a time they run under the owner's lock, on the loop
    /// that admitted them, without the two thread hops a call to a worker takes; a turn that
    /// hands it a burst sends them to a thread of its own, where they run
    /// beside the loop (`serve/inline.rs` says when). One call at a time
    /// either way, behind the same panic boundary and with the same
    /// reports, drain and resume as a worker's
    /// ([`add_worker`](Server::add_worker)). A handler that may block (on a
    /// lock, a file, another process) belongs on a worker: here it would
    /// stall that loop's connections, and every loop waiting for the
    /// owner's lock, while it waits.
    pub fn add_inline_receiver(
        &mut self,
        name: &str,
        stamp: u64,
        receiver: Box<dyn limen_core::hale::runtime::Receiver + Send>,
        on_failure: OnFailure,
    ) -> io::Result<WorkerId> {
        let id = self.owner.workers.len();
        let receiver = Arc::new(std::sync::Mutex::new(receiver));
        let spill = Worker::spawn(
            id,
            name,
            stamp,
            receiver.clone(),
            on_failure.clone(),
            self.owner_box.clone(),
        )?;
        let inline = inline::Inline::new(id, name, stamp, receiver, on_failure, spill);
        Ok(self.owner.add_actor(Actor::Inline(inline)))
    }

    /// Adds a receiver instance whose handlers are a process spoken to over
    /// its pipes through `conn` (a Flow Tool process), with no thread of
    /// its own: a call handed to it is written to the process's standard
    /// input by the loop that admitted it, and its reply is read by loop 0,
    /// whose poll holds the process's standard output, and reported to the
    /// exposure there (`serve/piped.rs`). One call handed after another,
    /// each claimed as it is written, with the same reports, drain, resume
    /// and on_failure as a worker's ([`add_worker`](Server::add_worker));
    /// a process that fails structurally is replaced, after a backoff, as
    /// the receiver's next generation. `handler` says how its process is
    /// started, how a call becomes a protocol call and how an outcome ends
    /// it.
    pub fn add_piped_receiver(
        &mut self,
        name: &str,
        stamp: u64,
        conn: Box<dyn limen_core::flow::tool::ToolConn + Send>,
        handler: Box<dyn PipedHandler>,
        on_failure: OnFailure,
    ) -> io::Result<WorkerId> {
        let id = self.owner.workers.len();
        let registry = self.reactor.registry().try_clone()?;
        let piped = piped::Piped::new(id, name, stamp, conn, handler, on_failure, registry);
        Ok(self.owner.add_actor(Actor::Piped(Box::new(piped))))
    }

    /// Serves `exposure` on `listener`, its receivers answered by `workers`
    /// (one per entry of its spec's receivers). Accepting starts with
    /// [`run`](Server::run).
    pub fn serve(
        &mut self,
        listener: ListenerId,
        exposure: Exposure,
        workers: Vec<WorkerId>,
    ) -> io::Result<()> {
        self.serve_framed(listener, exposure, workers, Framing::Plain)
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
        let framing = Arc::new(mcp::Framing::new(exposure.spec()));
        self.serve_framed(listener, exposure, workers, Framing::Mcp(framing))
    }

    /// [`serve`](Server::serve) over gRPC (§ gRPC): HTTP/2 with prior
    /// knowledge on the TCP listener `listener` (bound with
    /// [`bind_grpc`](Server::bind_grpc)), each stream's call framed and
    /// answered by `framing` (built from the same model as the exposure;
    /// its codec decodes protobuf payloads, `ShapeCodec::with_protobuf`).
    /// `stop()` answers the executing calls, refuses the queued ones and
    /// sends each connection GOAWAY after the replies already queued.
    pub fn serve_grpc(
        &mut self,
        listener: ListenerId,
        exposure: Exposure,
        workers: Vec<WorkerId>,
        framing: grpc::Framing,
    ) -> io::Result<()> {
        self.serve_framed(
            listener,
            exposure,
            workers,
            Framing::Grpc(Arc::new(framing)),
        )
    }

    /// Takes `exposure` into the owner with its `workers`, each announced
    /// as a receiver born now, and returns its index. One path for a
    /// listener's exposure and a hub's, so both admit the same way.
    fn own_exposure(
        &mut self,
        mut exposure: Exposure,
        workers: Vec<WorkerId>,
        listener: Option<ListenerId>,
    ) -> usize {
        let now = self.now();
        for (r, &w) in workers.iter().enumerate() {
            let stamp = self.owner.workers[w].stamp();
            exposure.handle_input(now, Input::ReceiverBorn { receiver: r, stamp });
        }
        let index = self.owner.exposures.len();
        let names = exposure
            .spec()
            .members
            .iter()
            .map(|m| m.name.clone())
            .collect();
        self.owner.exposures.push(OwnedExposure {
            exposure,
            workers,
            listener,
            names,
        });
        index
    }

    fn serve_framed(
        &mut self,
        listener: ListenerId,
        exposure: Exposure,
        workers: Vec<WorkerId>,
        framing: Framing,
    ) -> io::Result<()> {
        if listener >= self.listeners.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no listener {listener}"),
            ));
        }
        let index = self.own_exposure(exposure, workers, Some(listener));
        self.served[listener] = Some((index, framing));
        Ok(())
    }

    /// Serves `exposure` over the WebSocket hub `hub` (`api::serve(S,
    /// self.hub, …)`, § Rpcs on a hub): the hub's `call` frames reach the
    /// exposure here, admitted as every transport's calls are, and each
    /// outcome goes back to the hub as a `reply` frame on the caller's
    /// connection. The exposure's bearer source is meant to be the hub's,
    /// so the caller is the one the credential at the upgrade names. The
    /// hub runs on its own loop ([`HubServer::run`](hub::HubServer::run));
    /// stop it once this server's [`run`](Server::run) has returned, so
    /// the replies of calls that were executing at the stop are written
    /// before its `closed`.
    pub fn serve_hub(
        &mut self,
        hub: &mut hub::HubServer,
        exposure: Exposure,
        workers: Vec<WorkerId>,
    ) -> io::Result<()> {
        if hub.serves_calls() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the hub already carries a surface",
            ));
        }
        let index = self.own_exposure(exposure, workers, None);
        let route = HUB_ROUTE_BASE + self.owner.add_hub(hub.inbox());
        hub.carry_calls(self.owner_box.clone(), index, route);
        Ok(())
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// [`run`](Server::run) with `hubs` on threads of their own: each is
    /// stopped once the exposures have (`closed` to each of its
    /// connections after what was queued for it), and waited for.
    pub fn run_with(self, hubs: Vec<HubRun>) -> io::Result<()> {
        let mut threads = Vec::new();
        for h in hubs {
            let thread = std::thread::Builder::new().name(h.name).spawn(h.run)?;
            threads.push((h.handle, thread));
        }
        let served = self.run();
        for (handle, _) in &threads {
            handle.stop();
        }
        for (_, thread) in threads {
            match thread.join() {
                Ok(r) => r?,
                Err(_) => return Err(io::Error::other("a hub's loop panicked")),
            }
        }
        served
    }

    /// Runs until every exposure has stopped (after a [`StopHandle::stop`])
    /// and every connection held is done. Loops past the first run on
    /// threads of their own; loop 0, with the owner, on the caller's.
    pub fn run(self) -> io::Result<()> {
        let Server {
            config,
            reactor,
            owner_box,
            mut owner,
            listeners,
            served,
            caps,
            open,
            stop,
            draining,
            commands,
            recorder,
            clock,
        } = self;
        let count = config.loop_count().max(1);
        let mut reactors = vec![reactor];
        let mut boxes = vec![owner_box];
        for _ in 1..count {
            let (reactor, waker) = Reactor::new()?;
            boxes.push(Arc::new(Mailbox::new(waker)));
            reactors.push(reactor);
        }
        owner.set_loops(boxes.clone());
        let polls = reactors
            .iter()
            .map(|r| r.registry().try_clone())
            .collect::<io::Result<Vec<_>>>()?;
        owner.set_polls(&polls)?;
        let kinds: Vec<(bool, Option<usize>)> = listeners
            .iter()
            .zip(&caps)
            .map(|(l, &cap)| (matches!(l, Listener::Unix { .. }), cap))
            .collect();
        let caps = connection_caps(&config, &kinds, net::descriptor_limit());
        // The exposures' first events (a receiver asked at birth) are
        // acted on before the first connection.
        let now = clock.now();
        for i in 0..owner.exposures.len() {
            owner.pump(now, i);
        }
        let shared = Arc::new(Shared {
            config,
            specs: owner.specs(),
            listeners: listeners
                .into_iter()
                .map(|l| Arc::new(Mutex::new(l)))
                .collect(),
            served,
            open,
            caps,
            recorder: recorder.map(Mutex::new),
            clock,
            stop,
            draining,
            commands,
            owner: Mutex::new(owner),
        });
        let mut loops = Vec::new();
        for (i, reactor) in reactors.into_iter().enumerate() {
            loops.push(ConnLoop::new(i, reactor, boxes[i].clone(), shared.clone())?);
        }
        let mut threads = Vec::new();
        let mut first = None;
        for l in loops {
            if l.id() == 0 {
                first = Some(l);
                continue;
            }
            let name = format!("hale loop {}", l.id());
            threads.push(
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || l.run())?,
            );
        }
        let result = match first {
            Some(l) => l.run(),
            None => Ok(()),
        };
        // Loop 0 ends after the owner told every loop to finish.
        for t in threads {
            match t.join() {
                Ok(r) => r?,
                Err(_) => {
                    return Err(io::Error::other("a connection loop panicked"));
                }
            }
        }
        result
    }
}

/// The most connections a TCP listener holds by default.
pub const DEFAULT_TCP_CONNECTIONS: usize = 4096;
/// The most connections a Unix listener (an operator's socket) holds by
/// default.
pub const DEFAULT_UNIX_CONNECTIONS: usize = 256;

/// Each listener's cap, given each listener's kind (`true`: Unix) and the
/// cap set on it, under `config` and a process allowed `nofile`
/// descriptors (`None`: unlimited).
///
/// A cap set on a listener, or in `config`, is kept as given. Otherwise
/// (docs/decisions.md, "Connection caps by listener"): a descriptor
/// reserve of a sixteenth of the limit (16 to 1024) is left for the
/// process's own files, pipes, polls and Tool processes; each Unix
/// listener takes a sixteenth of the limit (4 to
/// [`DEFAULT_UNIX_CONNECTIONS`]); and the TCP listeners share what is left
/// evenly (1 to [`DEFAULT_TCP_CONNECTIONS`] each). So the caps' sum fits
/// the limit, and a flood of every TCP port at once still leaves the
/// operator's socket the descriptors of its cap: a full table of
/// descriptors no longer starves it. A WebSocket hub's cap is its
/// machine's (`HubLimits::max_connections`, 4096 by default), outside
/// this sum.
pub fn connection_caps(
    config: &ServerConfig,
    listeners: &[(bool, Option<usize>)],
    nofile: Option<u64>,
) -> Vec<usize> {
    let limit = nofile.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let reserve = (limit / 16).clamp(16, 1024);
    let unix_default = match config.max_unix_connections {
        0 => (limit / 16).clamp(4, DEFAULT_UNIX_CONNECTIONS),
        n => n,
    };
    let unix_cap = |set: Option<usize>| set.unwrap_or(unix_default);
    // What the TCP listeners without a cap of their own share.
    let mut left = limit.saturating_sub(reserve);
    let mut sharing = 0usize;
    for &(unix, set) in listeners {
        match (unix, set) {
            (true, set) => left = left.saturating_sub(unix_cap(set)),
            (false, Some(n)) => left = left.saturating_sub(n),
            (false, None) => sharing += 1,
        }
    }
    let tcp_default = match config.max_connections {
        0 => (left / sharing.max(1)).clamp(1, DEFAULT_TCP_CONNECTIONS),
        n => n,
    };
    listeners
        .iter()
        .map(|&(unix, set)| match unix {
            true => unix_cap(set),
            false => set.unwrap_or(tcp_default),
        })
        .collect()
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

/// Locks `m`. A panic under the server's locks leaves whole values (the
/// code holding them moves plain data, or runs a handler behind its own
/// panic boundary), so a poisoned lock is taken as it is.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_fit_the_descriptor_limit_and_leave_the_unix_socket_its_share() {
        let config = ServerConfig::default();
        // The demo's listeners: public, partner, admin (Unix), mcp, grpc.
        let demo = [
            (false, None),
            (false, None),
            (true, None),
            (false, None),
            (false, None),
        ];
        // A generous limit: the defaults.
        assert_eq!(
            connection_caps(&config, &demo, Some(1 << 20)),
            [4096, 4096, 256, 4096, 4096]
        );
        assert_eq!(
            connection_caps(&config, &demo, None),
            [4096, 4096, 256, 4096, 4096]
        );
        // This machine's 20000: 1024 reserved, 256 for the socket, the
        // rest shared by four.
        let caps = connection_caps(&config, &demo, Some(20_000));
        assert_eq!(caps, [4096, 4096, 256, 4096, 4096]);
        // 1024: 64 reserved, 64 for the socket, 224 for each TCP port.
        let caps = connection_caps(&config, &demo, Some(1024));
        assert_eq!(caps, [224, 224, 64, 224, 224]);
        assert!(caps.iter().sum::<usize>() + 64 <= 1024);
        // Tiny: at least one each.
        let caps = connection_caps(&config, &demo, Some(20));
        assert_eq!(caps, [1, 1, 4, 1, 1]);
        // A cap set is kept, and taken from the share of the others.
        let set = [(false, Some(100)), (false, None), (true, Some(8))];
        assert_eq!(connection_caps(&config, &set, Some(1024)), [100, 852, 8]);
        // So is the configuration's.
        let config = ServerConfig {
            max_connections: 32,
            max_unix_connections: 2,
            ..ServerConfig::default()
        };
        assert_eq!(
            connection_caps(&config, &demo, Some(64)),
            [32, 32, 2, 32, 32]
        );
    }
}
