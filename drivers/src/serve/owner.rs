//! The exposures' owner: the one place admission runs.
//!
//! It holds every [`Exposure`] of the server and nothing else touches them.
//! It sits behind one lock (`Shared::owner`): each connection loop takes
//! it once a turn to admit the requests it framed (a turn's worth at once),
//! on its own thread; loop 0 also takes it for what comes to its mailbox
//! (the workers' reports, the operator's commands, a hub's calls) and for
//! the stop. It feeds each to the exposure as an input, hands dispatches to
//! the workers or runs them inline, and routes every delivery to the loop
//! that owns its connection, in the order the exposure produced them: the
//! loop holding the lock takes its own ([`Owner::take_for`]) and the others
//! are sent theirs ([`Owner::send_remote`]).
//!
//! A surface served over a WebSocket hub (§ Rpcs on a hub) is owned here
//! too, so its receivers are the same workers every other exposure of
//! theirs uses (one call at a time per receiver): the hub's loop sends its
//! calls as a loop does, and its deliveries go back to the hub's mailbox,
//! found by the route its correlations carry ([`HUB_ROUTE_BASE`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use limen_core::hale::runtime::{
    pump, Answer, Correlation, Delivery, Dispatch, Exposure, ExposureDriver, ExposureSpec, Handed,
    Input, ReceiverId, RequestId, Supervision,
};
use limen_core::wire::front::RawRequest;
use limen_core::Timestamp;

use super::hub::HubCommand;
use super::inline::Inline;
use super::mailbox::Mailbox;
use super::piped::{Piped, PIPE_TOKENS};
use super::worker::{take, Claim, Job, Report, Worker};
use super::CallObserver;
use super::{loop_of, Command, ListenerId, Message, ToOwner, WorkerId, HUB_ROUTE_BASE};

pub(super) struct OwnedExposure {
    pub(super) exposure: Exposure,
    /// The worker of each of the exposure's receivers.
    pub(super) workers: Vec<WorkerId>,
    /// The listener it is served on; `None` over a hub, whose listener is
    /// the hub's and is closed by the hub's own stop.
    pub(super) listener: Option<ListenerId>,
    /// Its members' names, shared with every job handed out.
    pub(super) names: Arc<[String]>,
}

/// Who runs a receiver instance's calls: a worker thread of its own (a
/// handler that may block) or the owner itself, inline (one declared
/// non-blocking). Both take the same jobs and make the same reports.
pub(super) enum Actor {
    /// A serial worker thread ([`super::worker`]).
    Thread(Worker),
    /// Run under the owner's lock, by the loop holding it
    /// ([`super::inline`]).
    Inline(Inline),
    /// A process whose pipes the loops drive ([`super::piped`]): its
    /// calls written by the loop holding the owner's lock, its replies
    /// read by loop 0.
    Piped(Box<Piped>),
}

impl Actor {
    /// The incarnation stamp its receiver announced at birth.
    pub(super) fn stamp(&self) -> u64 {
        match self {
            Actor::Thread(w) => w.stamp(),
            Actor::Inline(i) => i.stamp(),
            Actor::Piped(p) => p.stamp(),
        }
    }
}

/// See the module documentation.
pub(super) struct Owner {
    pub(super) exposures: Vec<OwnedExposure>,
    pub(super) workers: Vec<Actor>,
    /// Inline receivers handed a call since they last ran, to be run once
    /// the input that handed it has been acted on.
    inline_ready: Vec<usize>,
    /// Whether the requests a loop framed this turn came at least two to a
    /// connection, or a worker's report dispatched calls queued behind a
    /// burst: an inline receiver's burst then spills to its worker
    /// (`inline.rs`).
    pipelined: bool,
    /// The connections of a turn's requests (kept to spare an allocation).
    turn_connections: Vec<Correlation>,
    /// Whether each worker's receiver drains: asked, it is absent.
    pub(super) draining: Vec<bool>,
    /// The calls handed to each worker and not reported yet, in the order
    /// handed, each with its claim, so a recall can take one back.
    pub(super) handed: Vec<VecDeque<(usize, RequestId, Claim)>>,
    /// Every loop's mailbox, by loop id.
    pub(super) loops: Vec<Arc<Mailbox<Message>>>,
    /// What each loop is sent this turn, sent together at its end.
    outgoing: Vec<Vec<Message>>,
    /// The mailbox of each hub a surface is served over, by route
    /// (a correlation's loop number less [`HUB_ROUTE_BASE`]).
    pub(super) hubs: Vec<Arc<Mailbox<HubCommand>>>,
    /// What each hub is sent this turn.
    hub_outgoing: Vec<Vec<HubCommand>>,
    /// While recording: the wire form of each request owed a reply, by
    /// exposure and request id.
    recording: HashMap<(usize, RequestId), (Correlation, Box<RawRequest>)>,
    stopping: bool,
    /// Listeners closed at shutdown.
    pub(super) closed_listeners: Vec<ListenerId>,
    /// Told of every delivery (a call log, metrics).
    pub(super) observer: Option<Arc<dyn CallObserver>>,
    /// The loop holding the owner's lock now (a piped receiver's standard
    /// output follows the loop that writes its calls).
    pub(super) at: usize,
}

impl Owner {
    pub(super) fn new() -> Owner {
        Owner {
            exposures: Vec::new(),
            workers: Vec::new(),
            inline_ready: Vec::new(),
            pipelined: false,
            turn_connections: Vec::new(),
            draining: Vec::new(),
            handed: Vec::new(),
            loops: Vec::new(),
            outgoing: Vec::new(),
            hubs: Vec::new(),
            hub_outgoing: Vec::new(),
            recording: HashMap::new(),
            stopping: false,
            closed_listeners: Vec::new(),
            observer: None,
            at: 0,
        }
    }

    /// Takes a receiver instance's actor, numbered next, with nothing
    /// handed to it and not draining; returns its number.
    pub(super) fn add_actor(&mut self, actor: Actor) -> WorkerId {
        self.workers.push(actor);
        self.draining.push(false);
        self.handed.push(Default::default());
        self.workers.len() - 1
    }

    /// Gives every piped receiver the loops' polls, by loop id.
    pub(super) fn set_polls(&mut self, polls: &[mio::Registry]) -> std::io::Result<()> {
        for actor in &mut self.workers {
            if let Actor::Piped(piped) = actor {
                let polls = polls
                    .iter()
                    .map(mio::Registry::try_clone)
                    .collect::<std::io::Result<Vec<_>>>()?;
                piped.set_loops(polls);
            }
        }
        Ok(())
    }

    pub(super) fn set_loops(&mut self, loops: Vec<Arc<Mailbox<Message>>>) {
        self.outgoing = loops.iter().map(|_| Vec::new()).collect();
        self.loops = loops;
    }

    /// Routes deliveries whose correlation carries route `HUB_ROUTE_BASE +
    /// n` to `hub`'s mailbox, returning `n`.
    pub(super) fn add_hub(&mut self, hub: Arc<Mailbox<HubCommand>>) -> usize {
        self.hubs.push(hub);
        self.hub_outgoing.push(Vec::new());
        self.hubs.len() - 1
    }

    /// The spec of every exposure, for the loops' recordings.
    pub(super) fn specs(&self) -> Vec<Arc<ExposureSpec>> {
        self.exposures
            .iter()
            .map(|e| Arc::new(e.exposure.spec().clone()))
            .collect()
    }

    /// Requests and losses a loop framed, in its order.
    pub(super) fn take_framed(&mut self, now: Timestamp, wall: Timestamp, items: Vec<ToOwner>) {
        self.turn_connections.clear();
        self.turn_connections
            .extend(items.iter().filter_map(|item| match item {
                ToOwner::Request { request, .. } => Some(request.correlation),
                ToOwner::Lost { .. } => None,
            }));
        let calls = self.turn_connections.len();
        self.turn_connections.sort_unstable();
        self.turn_connections.dedup();
        self.pipelined = calls >= 2 * self.turn_connections.len().max(1);
        for item in items {
            match item {
                ToOwner::Request {
                    exposure,
                    request,
                    raw,
                } => {
                    let ex = &mut self.exposures[exposure].exposure;
                    if let Some(raw) = raw {
                        self.recording
                            .insert((exposure, ex.next_request_id()), (request.correlation, raw));
                    }
                    ex.handle_input(now, Input::Request { request, wall });
                    self.pump(now, exposure);
                }
                ToOwner::Lost {
                    exposure,
                    correlation,
                } => {
                    self.exposures[exposure]
                        .exposure
                        .handle_input(now, Input::Lost(correlation));
                    self.pump(now, exposure);
                }
            }
        }
        self.run_inline(now);
    }

    /// A worker's report.
    pub(super) fn take_report(&mut self, now: Timestamp, report: Report) {
        // What a report dispatches next was queued behind a spilled burst:
        // a burst of it spills too.
        self.pipelined = true;
        self.report(now, report);
        self.run_inline(now);
    }

    /// Runs the calls handed to inline receivers, and what their reports
    /// hand next, until none is left that may start. Called once an input
    /// has been acted on whole, so a call never runs inside the pump that
    /// handed it.
    fn run_inline(&mut self, now: Timestamp) {
        while let Some(w) = self.inline_ready.pop() {
            if let Actor::Piped(piped) = &mut self.workers[w] {
                let mut reports = Vec::new();
                piped.run(now, self.at, &mut reports);
                for report in reports {
                    self.report(now, report);
                }
                continue;
            }
            // A pipelined burst goes to the receiver's spill worker, in
            // order.
            let burst = match &mut self.workers[w] {
                Actor::Inline(inline) if self.pipelined => inline.take_burst(),
                _ => Default::default(),
            };
            for job in burst {
                let exposure = job.exposure;
                let Actor::Inline(inline) = &self.workers[w] else {
                    break;
                };
                if let Err(request_id) = inline.spill().hand(job) {
                    self.not_taken(now, w, exposure, request_id);
                }
            }
            while let Some(report) = match &mut self.workers[w] {
                Actor::Inline(inline) => inline.run_next(),
                Actor::Thread(_) | Actor::Piped(_) => None,
            } {
                self.report(now, report);
            }
        }
        // Only the turn that framed the requests is pipelined.
        self.pipelined = false;
    }

    /// A report, from a worker or an inline receiver.
    fn report(&mut self, now: Timestamp, report: Report) {
        match report {
            Report::NotTaken {
                exposure,
                request_id,
                worker,
            } => {
                self.reported(worker, exposure, request_id);
                self.exposures[exposure]
                    .exposure
                    .handle_input(now, Input::DispatchNotTaken(request_id));
                self.pump(now, exposure);
            }
            Report::Ended {
                exposure,
                request_id,
                completion,
                supervision,
                worker,
            } => {
                self.reported(worker, exposure, request_id);
                let drain = supervision == Some(Supervision::Drain);
                if drain {
                    // Drained before the completion is taken, so no call
                    // is handed to a receiver that will not run it.
                    self.drain_worker(now, worker);
                }
                self.exposures[exposure].exposure.handle_input(
                    now,
                    Input::Completion {
                        request_id,
                        completion,
                    },
                );
                self.pump(now, exposure);
            }
        }
    }

    /// A call its worker's thread could not take (the thread is gone):
    /// the exposure settles it.
    fn not_taken(&mut self, now: Timestamp, worker: usize, exposure: usize, request_id: RequestId) {
        self.reported(worker, exposure, request_id);
        self.exposures[exposure]
            .exposure
            .handle_input(now, Input::DispatchNotTaken(request_id));
        self.pump(now, exposure);
    }

    /// A handed call was reported: it leaves its worker's list.
    fn reported(&mut self, worker: usize, exposure: usize, request_id: RequestId) {
        let handed = &mut self.handed[worker];
        // Reports come in the order handed, so this is nearly always the
        // first entry.
        if let Some(at) = handed
            .iter()
            .position(|h| h.0 == exposure && h.1 == request_id)
        {
            handed.remove(at);
        }
    }

    /// An operator's command.
    pub(super) fn command(&mut self, now: Timestamp, command: Command) {
        match command {
            Command::Drain(w) => self.drain_worker(now, w),
            Command::Resume(w) => {
                self.draining[w] = false;
                match &mut self.workers[w] {
                    Actor::Thread(worker) => worker.resume(),
                    Actor::Inline(inline) => {
                        inline.resume();
                        if inline.ready() {
                            self.inline_ready.push(w);
                        }
                    }
                    Actor::Piped(piped) => {
                        piped.resume();
                        if piped.ready() {
                            self.inline_ready.push(w);
                        }
                    }
                }
            }
        }
        self.run_inline(now);
    }

    /// Every exposure bound to `worker` learns that its receiver drains:
    /// their queued calls for it settle unavailable.
    pub(super) fn drain_worker(&mut self, now: Timestamp, worker: WorkerId) {
        self.draining[worker] = true;
        let stamp = self.workers[worker].stamp();
        for i in 0..self.exposures.len() {
            for r in 0..self.exposures[i].workers.len() {
                if self.exposures[i].workers[r] == worker {
                    self.exposures[i]
                        .exposure
                        .handle_input(now, Input::ReceiverDraining { receiver: r, stamp });
                }
            }
            self.pump(now, i);
        }
    }

    /// `stop()` on every exposure (once).
    pub(super) fn stop(&mut self, now: Timestamp) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        for i in 0..self.exposures.len() {
            self.exposures[i].exposure.handle_input(now, Input::Stop);
            self.pump(now, i);
        }
        self.run_inline(now);
    }

    /// Whether every exposure has shut down.
    pub(super) fn stopped(&self) -> bool {
        self.stopping && self.exposures.iter().all(|e| e.exposure.is_stopped())
    }

    /// The earliest deadline of an exposure or of a piped receiver (its
    /// process's reply deadlines, its backoff).
    pub(super) fn poll_timeout(&self) -> Option<Timestamp> {
        let exposures = self
            .exposures
            .iter()
            .filter_map(|e| e.exposure.poll_timeout());
        let piped = self.workers.iter().filter_map(|w| match w {
            Actor::Piped(p) => p.poll_timeout(),
            _ => None,
        });
        exposures.chain(piped).min()
    }

    /// A piped receiver's pipe is ready (`token`: its poll token less
    /// [`super::piped::PIPE_BASE`]), on the loop whose poll holds it: its
    /// replies read and reported here.
    pub(super) fn pipe_ready(&mut self, now: Timestamp, token: usize) {
        let (w, which) = (token / PIPE_TOKENS, token % PIPE_TOKENS);
        let mut reports = Vec::new();
        if let Some(Actor::Piped(piped)) = self.workers.get_mut(w) {
            piped.on_ready(now, which, self.at, &mut reports);
        }
        for report in reports {
            self.report(now, report);
        }
        self.run_inline(now);
    }

    /// Time passes for every exposure whose deadline is due.
    pub(super) fn handle_timeout(&mut self, now: Timestamp) {
        for i in 0..self.exposures.len() {
            if self.exposures[i]
                .exposure
                .poll_timeout()
                .is_some_and(|t| t <= now)
            {
                self.exposures[i].exposure.handle_input(now, Input::Timeout);
                self.pump(now, i);
            }
        }
        for w in 0..self.workers.len() {
            let mut reports = Vec::new();
            if let Actor::Piped(piped) = &mut self.workers[w] {
                if piped.poll_timeout().is_some_and(|t| t <= now) {
                    piped.handle_timeout(now, self.at, &mut reports);
                }
            }
            for report in reports {
                self.report(now, report);
            }
        }
        self.run_inline(now);
    }

    /// Acts on everything exposure `index` emitted, until it is quiet,
    /// through the core's one pump ([`pump()`]): the exposure is one field
    /// of its [`OwnedExposure`], everything the events act on the owner's
    /// other fields, borrowed apart as an [`OwnerDriver`].
    pub(super) fn pump(&mut self, now: Timestamp, index: usize) {
        let OwnedExposure {
            exposure,
            workers: receivers,
            listener,
            names,
        } = &mut self.exposures[index];
        let mut driver = OwnerDriver {
            index,
            // Only an observer reads it: no allocation on the call path
            // otherwise.
            exposure_name: match self.observer {
                Some(_) => exposure.spec().name.clone(),
                None => String::new(),
            },
            observer: self.observer.as_deref(),
            receivers,
            listener: *listener,
            names,
            workers: &mut self.workers,
            draining: &self.draining,
            handed: &mut self.handed,
            inline_ready: &mut self.inline_ready,
            recording: &mut self.recording,
            outgoing: &mut self.outgoing,
            hub_outgoing: &mut self.hub_outgoing,
            closed_listeners: &mut self.closed_listeners,
        };
        pump(exposure, now, &mut driver);
        if let Some(observer) = &self.observer {
            observer.depth(&exposure.spec().name, exposure.pending_len());
        }
    }

    /// Takes what loop `id` is sent this turn (by the loop itself, at its
    /// turn with the owner).
    pub(super) fn take_for(&mut self, id: usize, into: &mut Vec<Message>) {
        if let Some(out) = self.outgoing.get_mut(id) {
            into.append(out);
        }
    }

    /// Sends every loop but `id` (and every hub) what it was given this
    /// turn, one wake-up a loop.
    pub(super) fn send_remote(&mut self, id: usize) {
        for (i, out) in self.outgoing.iter_mut().enumerate() {
            if i != id {
                self.loops[i].send_all(out);
            }
        }
        for (hub, out) in self.hubs.iter().zip(&mut self.hub_outgoing) {
            hub.send_all(out);
        }
    }
}

/// The owner's side of one exposure's events, borrowed from the owner's
/// fields apart from the exposure itself, for [`pump()`]: deliveries go to
/// the loop (or hub) of their connection, dispatches to the receiver's
/// actor (an inline receiver's is run after the pump, by `run_inline`).
struct OwnerDriver<'a> {
    /// The exposure's index.
    index: usize,
    /// Its name, for the observer.
    exposure_name: String,
    observer: Option<&'a dyn CallObserver>,
    /// The worker of each of the exposure's receivers.
    receivers: &'a [WorkerId],
    listener: Option<ListenerId>,
    names: &'a Arc<[String]>,
    workers: &'a mut [Actor],
    draining: &'a [bool],
    handed: &'a mut [VecDeque<(usize, RequestId, Claim)>],
    inline_ready: &'a mut Vec<usize>,
    recording: &'a mut HashMap<(usize, RequestId), (Correlation, Box<RawRequest>)>,
    outgoing: &'a mut [Vec<Message>],
    hub_outgoing: &'a mut [Vec<HubCommand>],
    closed_listeners: &'a mut Vec<ListenerId>,
}

impl ExposureDriver for OwnerDriver<'_> {
    fn deliver(&mut self, delivery: Delivery) {
        if let Some(observer) = self.observer {
            let member = delivery
                .member
                .and_then(|m| self.names.get(m))
                .map(String::as_str);
            observer.delivered(&self.exposure_name, member, &delivery);
        }
        let raw = if self.recording.is_empty() {
            None
        } else {
            self.recording
                .remove(&(self.index, delivery.request_id))
                .map(|(_, raw)| raw)
        };
        let to = loop_of(delivery.correlation);
        if let Some(hub) = to.checked_sub(HUB_ROUTE_BASE) {
            self.hub_outgoing[hub].push(HubCommand::Deliver(Box::new(delivery)));
            return;
        }
        self.outgoing[to].push(Message::Deliver {
            exposure: self.index,
            delivery,
            raw,
        });
    }

    fn dispatch(&mut self, dispatch: Box<Dispatch>) -> Handed {
        let worker = self.receivers[dispatch.receiver];
        let claim = Claim::default();
        let request_id = dispatch.request_id;
        self.handed[worker].push_back((self.index, request_id, claim.clone()));
        let job = Job {
            exposure: self.index,
            names: self.names.clone(),
            dispatch,
            claim,
        };
        let taken = match &mut self.workers[worker] {
            Actor::Thread(w) => w.hand(job).is_ok(),
            Actor::Inline(inline) => match inline.spill_worker_busy() {
                // Its spill worker still holds a call: this one follows it
                // there, so calls start in order.
                Some(spill) => spill.hand(job).is_ok(),
                None => {
                    inline.hand(job);
                    if self.inline_ready.last() != Some(&worker) {
                        self.inline_ready.push(worker);
                    }
                    true
                }
            },
            // Written once the input that handed it has been acted on
            // (`run_inline`), with the other calls it handed.
            Actor::Piped(piped) => {
                piped.hand(job);
                if self.inline_ready.last() != Some(&worker) {
                    self.inline_ready.push(worker);
                }
                true
            }
        };
        if taken {
            Handed::Taken
        } else {
            self.handed[worker].pop_back();
            Handed::NotTaken
        }
    }

    fn ask(&mut self, receiver: ReceiverId) -> Answer {
        let worker = self.receivers[receiver];
        if self.draining[worker] {
            Answer::Absent
        } else {
            Answer::Born(self.workers[worker].stamp())
        }
    }

    fn recall(&mut self, receiver: ReceiverId, request_id: RequestId) -> bool {
        let handed = &mut self.handed[self.receivers[receiver]];
        let at = handed
            .iter()
            .position(|h| h.0 == self.index && h.1 == request_id);
        // Taken back only if its worker has not started it; otherwise its
        // report follows.
        match at.filter(|&at| take(&handed[at].2)) {
            Some(at) => {
                handed.remove(at);
                true
            }
            None => false,
        }
    }

    fn close_connection(&mut self, c: Correlation) {
        if !self.recording.is_empty() {
            // No reply reaches it: forget its requests.
            self.recording.retain(|_, (on, _)| *on != c);
        }
        match loop_of(c).checked_sub(HUB_ROUTE_BASE) {
            Some(hub) => self.hub_outgoing[hub].push(HubCommand::Abort(c)),
            None => self.outgoing[loop_of(c)].push(Message::Abort(c)),
        }
    }

    fn stop_listening(&mut self) {
        // Over a hub there is no listener of the server's to close: the
        // exposure refuses what arrives after its stop, and the hub stops
        // once the exposures have.
        let Some(listener) = self.listener else {
            return;
        };
        self.closed_listeners.push(listener);
        for out in self.outgoing.iter_mut() {
            out.push(Message::CloseListener(listener));
        }
    }
}
