//! A served program in memory: the demo's arrangement (every exposure the
//! program serves over a transport limen has machines for — HTTP, MCP, a
//! Unix socket — and Public over MCP and over gRPC as the demo adds them,
//! bound to one set of receiver instances) driven through the real
//! machines — each connection a [`Machine`](limen_core::wire::machine::Machine) of its transport (the core's
//! front, or the gRPC front over nghttp2; [`Form::front_maker`]), the
//! [`Exposure`] behind it — with no socket, no thread and no clock.
//!
//! Time is a virtual clock, two readings of it kept apart as the machines
//! keep them: the monotonic clock every machine's `now` is read on, which
//! starts at 0, and the wall clock (nanoseconds since the Unix epoch, the
//! clock a bearer credential's expiry is stated on), which is [`EPOCH`]
//! plus the monotonic reading. Every input moves the clock one millisecond
//! ([`TICK`]); a silence ([`World::wait`]) moves it as far as it says. The
//! world knows every deadline its machines name — each open connection's
//! front ([`Machine::poll_timeout`](limen_core::wire::machine::Machine::poll_timeout): HTTP's read and stalled-write timers,
//! a Unix line's stalled write, an HTTP/2 connection's stalled write) and each exposure's (the end of `stop()`'s
//! wait) — and however the clock moves it stops at each deadline on the way
//! in turn, firing `handle_timeout` on what is due and acting on what that
//! emits (a front closing, an exposure abandoning its executing calls),
//! before it reaches the instant it was moving to: the model is quinn-proto's
//! test pair, time jumping from deadline to deadline.
//!
//! Handlers run at once, in the order the exposure hands them over, unless
//! their instance is gated; a violation is absorbed (the witness's
//! `on_failure` counts it and lets execution return). The same inputs
//! therefore give the same bytes, every run.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{Exposure as ModelExposure, Program, Source, TransportKind};
use limen_core::hale::runtime::{
    pump, Answer, BearerSource, Correlation, Delivery, Describer, Dispatch, Exposure,
    ExposureDriver, Handed, Input, PeerCredentials, Receiver, ReceiverId, RequestId, RoleTable,
};
use limen_core::hale::serving::{exposure_spec, ShapeCodec};
use limen_core::wire::front::{Front, FrontEvent, FrontLimits};
use limen_core::{Timestamp, SECOND};
use limen_witness::exposures::{grpc_exposure, mcp_exposure};
use limen_witness::{self as witness, Instances};

use crate::transport::{self, Form, FrontMaker, Transport};

/// The wall clock when the monotonic clock reads 0: 2026-01-01T00:00:00Z,
/// in nanoseconds since the Unix epoch (the clock a bearer source's expiry
/// is read on).
pub const EPOCH: Timestamp = 1_767_225_600 * SECOND;

/// How far one input moves the clock.
pub const TICK: Timestamp = 1_000_000;

/// The incarnation stamp every receiver is born with (no scenario restarts
/// one).
const STAMP: u64 = 1;

/// How the machines are fed a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Feed {
    /// All at once.
    #[default]
    Whole,
    /// One byte at a time (a machine fed in any split yields the same
    /// events).
    Bytes,
}

/// Builds the describer of one exposure, in place of the model's.
pub type DescriberFactory = dyn Fn(&Program, &ModelExposure) -> Box<dyn Describer + Send>;

struct Conn {
    served: usize,
    front: Box<dyn Front>,
    output: Vec<u8>,
    closed: bool,
    /// When the server closed it, on the monotonic clock.
    closed_at: Option<Timestamp>,
}

impl Conn {
    /// Takes what its front has to write, as a reader that reads
    /// everything at once.
    fn take_output(&mut self, now: Timestamp) {
        let pending = self.front.pending_output();
        let n = pending.len();
        self.output.extend_from_slice(pending);
        self.front.consume_output(now, n);
    }
}

/// What an exposure's event leaves to do once the pump has returned.
enum After {
    /// Run a call handed to an open receiver ([`World::execute`]).
    Run(Dispatch),
    /// Act on what the front of a connection emitted
    /// ([`World::after_machine`]).
    Machine(Correlation),
}

/// The world's side of exposure `s`'s events, borrowed from the world's
/// fields apart from the exposure, for [`pump`].
struct WorldDriver<'a> {
    s: usize,
    now: Timestamp,
    /// The exposure's receivers' instance names, by receiver id.
    receivers: &'a [String],
    listening: &'a mut bool,
    conns: &'a mut BTreeMap<Correlation, Conn>,
    gated: &'a BTreeSet<String>,
    draining: &'a BTreeSet<String>,
    held: &'a mut Vec<(usize, Dispatch)>,
    after: &'a mut VecDeque<After>,
}

impl ExposureDriver for WorldDriver<'_> {
    fn deliver(&mut self, d: Delivery) {
        let c = d.correlation;
        let Some(conn) = self.conns.get_mut(&c) else {
            return;
        };
        if conn.closed {
            return;
        }
        conn.front.deliver(self.now, d);
        conn.take_output(self.now);
        self.after.push_back(After::Machine(c));
    }

    fn dispatch(&mut self, d: Box<Dispatch>) -> Handed {
        if self.gated.contains(&self.receivers[d.receiver]) {
            self.held.push((self.s, *d));
        } else {
            self.after.push_back(After::Run(*d));
        }
        Handed::Taken
    }

    fn ask(&mut self, r: ReceiverId) -> Answer {
        if self.draining.contains(&self.receivers[r]) {
            Answer::Absent
        } else {
            Answer::Born(STAMP)
        }
    }

    fn recall(&mut self, _receiver: ReceiverId, request_id: RequestId) -> bool {
        // A call held at a gate has not started: it comes back.
        let s = self.s;
        let at = self
            .held
            .iter()
            .position(|(e, d)| *e == s && d.request_id == request_id);
        at.map(|at| self.held.remove(at)).is_some()
    }

    fn close_connection(&mut self, c: Correlation) {
        if let Some(conn) = self.conns.get_mut(&c) {
            conn.front.abort();
        }
        self.after.push_back(After::Machine(c));
    }

    fn stop_listening(&mut self) {
        *self.listening = false;
        // As the server's loop does when it closes the listener: the
        // exposure's gRPC connections, which outlive a request, are told
        // to end.
        for (c, conn) in self.conns.iter_mut() {
            if conn.served == self.s && !conn.closed {
                conn.front.stop(self.now);
                conn.take_output(self.now);
                self.after.push_back(After::Machine(*c));
            }
        }
    }
}

/// One exposure the world serves.
pub struct Served {
    /// `as:`.
    pub name: String,
    /// `<Surface>@<digest>/<name>`.
    pub identity: String,
    /// Its transport.
    pub transport: Transport,
    /// Its transport's machines.
    pub form: &'static dyn Form,
    exposure: Exposure,
    /// Its receivers' instance names, by receiver id.
    receivers: Vec<String>,
    listening: bool,
    /// Builds its connections' fronts.
    fronts: FrontMaker,
}

impl Served {
    /// What it serves.
    pub fn spec(&self) -> &limen_core::hale::runtime::ExposureSpec {
        self.exposure.spec()
    }
}

/// The world. See the module documentation.
pub struct World {
    /// The monotonic clock.
    now: Timestamp,
    feed: Feed,
    served: Vec<Served>,
    receivers: BTreeMap<String, Box<dyn Receiver + Send>>,
    gated: BTreeSet<String>,
    draining: BTreeSet<String>,
    held: Vec<(usize, Dispatch)>,
    conns: BTreeMap<Correlation, Conn>,
    next_correlation: Correlation,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("now", &self.now)
            .field("served", &self.served.len())
            .finish_non_exhaustive()
    }
}

fn role_param(e: &ModelExposure) -> Option<&str> {
    match &e.roles {
        Source::Param { param, .. } => Some(param),
        _ => None,
    }
}

impl World {
    /// Serves every exposure of [`served_exposures`] whose listener speaks
    /// a transport limen has machines for, its role sources the program's
    /// literals with `roles` (by role source param, role → holder) in place
    /// of theirs, each described by its transport's describer where it has
    /// one (an MCP exposure by its tools, as over the wire), else by
    /// `describer`, else by the model's describer, its listener as
    /// written.
    pub fn new(
        program: &Program,
        roles: &BTreeMap<String, BTreeMap<String, String>>,
        describer: Option<&DescriberFactory>,
        feed: Feed,
    ) -> Result<World, String> {
        let instances = Instances::new(program);
        let mut world = World {
            now: 0,
            feed,
            served: Vec::new(),
            receivers: BTreeMap::new(),
            gated: BTreeSet::new(),
            draining: BTreeSet::new(),
            held: Vec::new(),
            conns: BTreeMap::new(),
            next_correlation: 1,
        };
        for e in &served_exposures(program) {
            let Some(form) = e
                .listener
                .as_ref()
                .and_then(|l| transport::by_listener(&l.transport))
            else {
                continue;
            };
            let spec = exposure_spec(program, e, form.name()).map_err(|e| e.to_string())?;
            for r in &spec.receivers {
                if !world.receivers.contains_key(r) {
                    let receiver = instances
                        .receiver(r)
                        .ok_or_else(|| format!("the witness's loci implement no receiver `{r}`"))?;
                    world.receivers.insert(r.clone(), receiver);
                }
            }
            let bearer: Option<Box<dyn BearerSource + Send>> = match e.principals {
                Source::Kernel => None,
                _ => Some(Box::new(witness::tokens())),
            };
            let table = match role_param(e) {
                None => RoleTable::new(),
                Some(param) => {
                    let over = roles.get(param);
                    witness::grant_pairs(program, param)
                        .into_iter()
                        .map(|(role, holder)| match over.and_then(|o| o.get(&role)) {
                            Some(h) => (role, h.clone()),
                            None => (role, holder),
                        })
                        .fold(RoleTable::new(), |t, (role, holder)| {
                            t.grant(&holder, &role)
                        })
                }
            };
            let codec = ShapeCodec::new(program, e).map_err(|e| e.to_string())?;
            // A gRPC exposure's codec reads the protobuf calls too, as the
            // demo serves it.
            let codec = if form.listener() == TransportKind::Grpc {
                codec.with_protobuf()
            } else {
                codec
            };
            let docs: Box<dyn Describer + Send> = match (form.describer(program, e), describer) {
                (Some(own), _) => own.map_err(|err| format!("exposure `{}`: {err}", spec.name))?,
                (None, Some(f)) => f(program, e),
                // The listener as written: nothing is bound.
                (None, None) => Box::new(
                    ExposureDescriber::new(program, &spec.name, None)
                        .map_err(|e| format!("exposure `{}`: {e}", spec.name))?,
                ),
            };
            let receivers = spec.receivers.clone();
            let name = spec.name.clone();
            let identity = spec.identity();
            let fronts = form
                .front_maker(program, e, &spec)
                .map_err(|err| format!("exposure `{}`: {err}", spec.name))?;
            let mut exposure = Exposure::new(spec, bearer, Box::new(table), Box::new(codec), docs);
            for r in 0..receivers.len() {
                exposure.handle_input(
                    0,
                    Input::ReceiverBorn {
                        receiver: r,
                        stamp: STAMP,
                    },
                );
            }
            world.served.push(Served {
                name,
                identity,
                transport: Transport::from(form),
                form,
                exposure,
                receivers,
                listening: true,
                fronts,
            });
            let s = world.served.len() - 1;
            world.pump(s);
        }
        Ok(world)
    }

    /// The exposure named `name`, by its index.
    pub fn served(&self, name: &str) -> Option<usize> {
        self.served.iter().position(|s| s.name == name)
    }

    /// The exposure at `index`.
    pub fn exposure(&self, index: usize) -> &Served {
        &self.served[index]
    }

    /// Whether `instance` is a receiver instance of the world.
    pub fn has_instance(&self, instance: &str) -> bool {
        self.receivers.contains_key(instance)
    }

    /// The monotonic clock: what every machine's `now` reads.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The wall clock: [`EPOCH`] plus the monotonic reading.
    pub fn wall(&self) -> Timestamp {
        EPOCH + self.now
    }

    /// One input's worth of time passes.
    fn tick(&mut self) -> Timestamp {
        self.advance(self.now + TICK);
        self.now
    }

    /// A silence of `duration`: nothing is sent, the clock moves on, and
    /// every deadline on the way fires in turn.
    pub fn wait(&mut self, duration: Timestamp) {
        self.advance(self.now.saturating_add(duration));
    }

    /// The earliest deadline any machine of the world names: an open
    /// connection's front's, or an exposure's.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        let fronts = self
            .conns
            .values()
            .filter(|c| !c.closed)
            .filter_map(|c| c.front.poll_timeout());
        let exposures = self.served.iter().filter_map(|s| s.exposure.poll_timeout());
        fronts.chain(exposures).min()
    }

    /// Moves the clock to `to`, stopping at each deadline on the way: the
    /// clock is set to it, and every machine whose deadline it is (or was)
    /// is told so, its events acted on.
    fn advance(&mut self, to: Timestamp) {
        let mut fired = None;
        while let Some(at) = self.next_deadline().filter(|&t| t <= to) {
            // A machine that keeps naming a deadline it has been told of
            // would stop time here: leave it to the next move.
            if fired == Some(at) {
                break;
            }
            fired = Some(at);
            self.now = self.now.max(at);
            self.fire();
        }
        self.now = self.now.max(to);
    }

    /// `handle_timeout` on every machine whose deadline is due at `now`,
    /// connections in the order they were made, then exposures.
    fn fire(&mut self) {
        let now = self.now;
        let due: Vec<Correlation> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closed && c.front.poll_timeout().is_some_and(|t| t <= now))
            .map(|(c, _)| *c)
            .collect();
        for c in due {
            if let Some(conn) = self.conns.get_mut(&c) {
                conn.front.handle_timeout(now);
            }
            self.after_machine(c);
        }
        for s in 0..self.served.len() {
            if self.served[s]
                .exposure
                .poll_timeout()
                .is_some_and(|t| t <= now)
            {
                self.served[s].exposure.handle_timeout(now);
                self.pump(s);
            }
        }
    }

    /// A connection to exposure `served` from `peer` (a Unix peer's kernel
    /// credentials; unnamed over TCP). `None` once its listener is closed.
    pub fn connect(&mut self, served: usize, peer: PeerCredentials) -> Option<Correlation> {
        if !self.served[served].listening {
            return None;
        }
        let now = self.tick();
        let c = self.next_correlation;
        self.next_correlation += 1;
        let front = (self.served[served].fronts)(now, &FrontLimits::default(), peer, c);
        self.conns.insert(
            c,
            Conn {
                served,
                front,
                output: Vec::new(),
                closed: false,
                closed_at: None,
            },
        );
        Some(c)
    }

    /// Bytes from the client of `c`.
    pub fn send(&mut self, c: Correlation, bytes: &[u8]) {
        let now = self.tick();
        let chunks: Vec<&[u8]> = match self.feed {
            Feed::Whole => vec![bytes],
            Feed::Bytes => bytes.chunks(1).collect(),
        };
        for chunk in chunks {
            let Some(conn) = self.conns.get_mut(&c) else {
                return;
            };
            conn.front.handle_data(now, chunk);
            self.after_machine(c);
        }
    }

    /// Every byte the server wrote to `c`.
    pub fn output(&self, c: Correlation) -> &[u8] {
        self.conns
            .get(&c)
            .map_or(&[], |conn| conn.output.as_slice())
    }

    /// Whether the server closed `c`.
    pub fn is_closed(&self, c: Correlation) -> bool {
        self.conns.get(&c).is_none_or(|conn| conn.closed)
    }

    /// When the server closed `c`, on the monotonic clock.
    pub fn closed_at(&self, c: Correlation) -> Option<Timestamp> {
        self.conns.get(&c).and_then(|conn| conn.closed_at)
    }

    /// Whether exposure `served` still accepts connections.
    pub fn is_listening(&self, served: usize) -> bool {
        self.served[served].listening
    }

    /// Closes `instance`'s gate: calls handed to it wait.
    pub fn gate(&mut self, instance: &str) {
        self.tick();
        self.gated.insert(instance.to_owned());
    }

    /// Opens `instance`'s gate and runs what waits, in order.
    pub fn open(&mut self, instance: &str) {
        self.tick();
        self.gated.remove(instance);
        let held = std::mem::take(&mut self.held);
        let (run, keep): (Vec<_>, Vec<_>) = held
            .into_iter()
            .partition(|(s, d)| self.served[*s].receivers[d.receiver] == instance);
        self.held = keep;
        for (s, d) in run {
            self.execute(s, d);
            self.pump(s);
        }
    }

    /// `instance` drains: every exposure bound to it learns so.
    pub fn drain(&mut self, instance: &str) {
        self.tick();
        self.draining.insert(instance.to_owned());
        for s in 0..self.served.len() {
            let ids: Vec<usize> = (0..self.served[s].receivers.len())
                .filter(|&r| self.served[s].receivers[r] == instance)
                .collect();
            for r in ids {
                self.served[s].exposure.receiver_draining(r, STAMP);
            }
            self.pump(s);
        }
    }

    /// `instance` is back: asked next, it answers.
    pub fn resume(&mut self, instance: &str) {
        self.tick();
        self.draining.remove(instance);
    }

    /// `stop()` on every exposure.
    pub fn stop(&mut self) {
        let now = self.tick();
        for s in 0..self.served.len() {
            self.served[s].exposure.stop(now);
            self.pump(s);
        }
    }

    /// Runs a call handed to exposure `s`'s receiver and feeds its
    /// completion (or, with no such receiver, that it was not taken).
    fn execute(&mut self, s: usize, d: Dispatch) {
        let now = self.now;
        let member = self.served[s].exposure.spec().members[d.member]
            .name
            .clone();
        let instance = &self.served[s].receivers[d.receiver];
        let input = match self.receivers.get_mut(instance) {
            None => Input::DispatchNotTaken(d.request_id),
            Some(receiver) => Input::Completion {
                request_id: d.request_id,
                completion: receiver.call(&member, &d.payload, &d.context),
            },
        };
        self.served[s].exposure.handle_input(now, input);
    }

    /// Acts on everything exposure `s` emitted, through the core's one
    /// pump ([`pump`]), as the server's owner does: what an event leaves to
    /// do that reaches back into the exposure — a handler run at once, a
    /// front's new events after a delivery or a close — is queued and
    /// done after the pump returns, in the order the events came, the
    /// exposure pumped again after each.
    fn pump(&mut self, s: usize) {
        let mut after = VecDeque::new();
        loop {
            let Served {
                exposure,
                receivers,
                listening,
                ..
            } = &mut self.served[s];
            let mut driver = WorldDriver {
                s,
                now: self.now,
                receivers,
                listening,
                conns: &mut self.conns,
                gated: &self.gated,
                draining: &self.draining,
                held: &mut self.held,
                after: &mut after,
            };
            pump(exposure, self.now, &mut driver);
            match after.pop_front() {
                None => return,
                Some(After::Run(d)) => self.execute(s, d),
                Some(After::Machine(c)) => self.after_machine(c),
            }
        }
    }

    /// Takes what the front of `c` has to write, as a reader that reads
    /// everything at once.
    fn flush(&mut self, c: Correlation) {
        if let Some(conn) = self.conns.get_mut(&c) {
            conn.take_output(self.now);
        }
        self.after_machine(c);
    }

    /// Handles what the front of `c` emitted.
    fn after_machine(&mut self, c: Correlation) {
        loop {
            let Some(conn) = self.conns.get_mut(&c) else {
                return;
            };
            if conn.closed {
                return;
            }
            let s = conn.served;
            match conn.front.poll_event() {
                None => break,
                Some(FrontEvent::Request { request, .. }) => {
                    let (now, wall) = (self.now, self.wall());
                    self.served[s]
                        .exposure
                        .handle_input(now, Input::Request { request, wall });
                    self.pump(s);
                }
                Some(FrontEvent::Lost) => {
                    self.served[s]
                        .exposure
                        .handle_input(self.now, Input::Lost(c));
                    self.pump(s);
                }
                Some(FrontEvent::Closed) => {
                    conn.closed = true;
                    conn.closed_at = Some(self.now);
                    self.served[s]
                        .exposure
                        .handle_input(self.now, Input::Lost(c));
                    self.pump(s);
                    return;
                }
            }
        }
        // A line the front answered itself (request_id 0) is queued output
        // no exposure delivered: take it as well.
        if self
            .conns
            .get(&c)
            .is_some_and(|conn| !conn.front.pending_output().is_empty())
        {
            self.flush(c);
        }
    }
}

/// The exposures a program is served with, as `hale demo` serves them:
/// its own, and when it declares no MCP serve site, Public's over MCP as
/// the exposure `mcp` (the demo's `--mcp`, [`mcp_exposure`]);
/// when it declares no gRPC serve site, Public's over gRPC as the exposure
/// `grpc` (the demo's `--grpc`, [`grpc_exposure`]).
pub fn served_exposures(program: &Program) -> Vec<ModelExposure> {
    let declares_mcp = program
        .exposures
        .iter()
        .any(|e| e.listener.as_ref().map(|l| &l.transport) == Some(&TransportKind::Mcp));
    let declares_grpc = program
        .exposures
        .iter()
        .any(|e| e.listener.as_ref().map(|l| &l.transport) == Some(&TransportKind::Grpc));
    let mut all = program.exposures.clone();
    if !declares_mcp && program.exposure("mcp").is_none() {
        all.extend(mcp_exposure(program, DEMO_MCP));
    }
    if !declares_grpc && program.exposure("grpc").is_none() {
        all.extend(grpc_exposure(program, DEMO_GRPC));
    }
    all
}

/// The exposure named `name` among [`served_exposures`].
pub fn served_exposure(program: &Program, name: &str) -> Option<ModelExposure> {
    served_exposures(program)
        .into_iter()
        .find(|e| e.name.as_deref() == Some(name))
}

/// Where the demo serves MCP unless told otherwise (the address a
/// description of it would name; nothing is bound).
const DEMO_MCP: &str = "127.0.0.1:8090";

/// Where the demo serves gRPC in its usage (`hale demo --grpc
/// 127.0.0.1:8091`); a description of it would name it, nothing is bound.
const DEMO_GRPC: &str = "127.0.0.1:8091";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{http, unix};
    use limen_core::hale::model::parse_program;

    fn world() -> World {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/programs/desk.hl");
        let program = parse_program(path, &std::fs::read_to_string(path).unwrap()).unwrap();
        World::new(&program, &BTreeMap::new(), None, Feed::Whole).unwrap()
    }

    /// Public's describe as alice: a GET whose head ends with its blank
    /// line.
    fn describe() -> Vec<u8> {
        http::request(&http::get("/.description", Some("t-alice")), None).unwrap()
    }

    #[test]
    fn the_wall_clock_is_the_epoch_plus_the_monotonic_clock() {
        let mut w = world();
        let (now, wall) = (w.now(), w.wall());
        assert_eq!(wall, EPOCH + now);
        let public = w.served("public").unwrap();
        w.connect(public, PeerCredentials::UNNAMED).unwrap();
        assert_eq!(w.now(), now + TICK, "an input moves the clock a tick");
        w.wait(7 * SECOND);
        assert_eq!(w.now(), now + TICK + 7 * SECOND);
        assert_eq!(w.wall(), EPOCH + w.now());
    }

    #[test]
    fn a_head_that_never_ends_is_closed_at_five_seconds_of_silence() {
        let mut w = world();
        let public = w.served("public").unwrap();
        let c = w.connect(public, PeerCredentials::UNNAMED).unwrap();
        let bytes = describe();
        w.send(c, &bytes[..bytes.len() - 2]);
        let last_read = w.now();
        assert_eq!(w.next_deadline(), Some(last_read + 5 * SECOND));
        w.wait(5 * SECOND - 1);
        assert!(!w.is_closed(c), "open a nanosecond before the deadline");
        // A long silence stops at the deadline on its way.
        w.wait(60 * SECOND);
        assert_eq!(w.closed_at(c), Some(last_read + 5 * SECOND));
        assert!(w.output(c).is_empty(), "nothing is written to it");
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn a_trickled_request_is_closed_at_ten_seconds_in_all() {
        let mut w = world();
        let public = w.served("public").unwrap();
        let c = w.connect(public, PeerCredentials::UNNAMED).unwrap();
        let accepted = w.now();
        let bytes = describe();
        // A byte every three seconds keeps the silence timer away.
        for b in &bytes[..5] {
            w.send(c, std::slice::from_ref(b));
            w.wait(3 * SECOND);
        }
        assert_eq!(w.closed_at(c), Some(accepted + 10 * SECOND));
        assert!(w.output(c).is_empty());
    }

    #[test]
    fn stop_abandons_an_executing_call_at_the_end_of_its_wait() {
        let mut w = world();
        let admin = w.served("admin").unwrap();
        let operator = PeerCredentials {
            uid: 1000,
            gid: 1000,
            pid: 1,
            groups: None,
        };
        w.gate("self.ledger");
        let c = w.connect(admin, operator).unwrap();
        let call =
            serde_json::json!({"call": "Ledger::rebalance", "payload": {"book": "main"}, "id": 1});
        w.send(c, &unix::line(&call));
        w.stop();
        let stopped = w.now();
        assert_eq!(w.next_deadline(), Some(stopped + 10 * SECOND));
        w.wait(10 * SECOND - 1);
        assert!(!w.is_closed(c) && w.is_listening(admin));
        w.wait(1);
        // Abandoned: its connection is closed with nothing written, and the
        // exposure, with nothing left pending, stops listening.
        assert_eq!(w.closed_at(c), Some(stopped + 10 * SECOND));
        assert!(w.output(c).is_empty());
        assert!(!w.is_listening(admin));
        // The handler still runs once its gate opens; nothing is written.
        w.open("self.ledger");
        assert!(w.output(c).is_empty());
    }

    /// The frame types of `bytes`, in order.
    fn frame_types(mut bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while bytes.len() >= 9 {
            let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
            out.push(bytes[3]);
            bytes = &bytes[(9 + len).min(bytes.len())..];
        }
        out
    }

    #[test]
    fn stop_ends_a_grpc_connection_with_goaway_after_its_answer() {
        use crate::transport::grpc;
        const GOAWAY: u8 = 7;
        let mut w = world();
        let s = w.served("grpc").unwrap();
        let c = w.connect(s, PeerCredentials::UNNAMED).unwrap();
        let describe = grpc::Grpc.describe_request(Some("t-alice"));
        w.send(c, &grpc::request(&describe, None).unwrap());
        let answered = grpc::read_reply(w.output(c), false).unwrap().unwrap();
        assert_eq!(answered["trailers"]["grpc-status"], "0");
        // An HTTP/2 connection outlives its call: open until stop().
        assert!(!w.is_closed(c));
        assert!(!frame_types(w.output(c)).contains(&GOAWAY));
        w.stop();
        // GOAWAY after the answer, and the connection, with no stream
        // left, ends; the answer read is the same.
        assert_eq!(frame_types(w.output(c)).last(), Some(&GOAWAY));
        assert!(w.is_closed(c));
        assert_eq!(grpc::read_reply(w.output(c), true).unwrap(), Some(answered));
    }
}
