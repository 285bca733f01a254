//! The in-process fixture transport, `std::api::test::Rpc`.
//!
//! A conforming transport with no socket: a test hands it framed requests
//! ([`FixtureRpc::call`], [`FixtureRpc::describe`], [`FixtureRpc::lose`])
//! and reads the outcomes it was asked to deliver
//! ([`FixtureRpc::outcome`]), each as the Unix JSON reply line of
//! § Outcomes. It drives the same [`Exposure`] every transport drives, and
//! runs each receiver's calls through the [`Receiver`] the test gives it,
//! one at a time. A receiver can be gated, so a test decides when its
//! handler runs: that is how the orders of § The request lifecycle (a lost
//! connection before or after completion, a stop with calls queued) are
//! held deterministically.

use std::collections::{BTreeMap, VecDeque};

use super::exposure::{
    Completion, Correlation, Dispatch, Event, Exposure, Payload, ReceiverId, Request, RequestKind,
    ServedContext,
};
use super::sources::Credential;
use crate::Timestamp;

/// A receiver instance: what answers the calls of the members bound to it.
pub trait Receiver {
    /// Runs `member` with its decoded payload. A `ClosureViolation` is
    /// [`Completion::Violated`]; the fixture runs the owner's on_failure
    /// before the exposure answers it.
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Completion;

    /// Whether calls handed ahead are better run together
    /// ([`call_batch`](Receiver::call_batch)): a receiver that writes its
    /// calls to a process answers a batch for one write and one read. A
    /// driver that runs the receiver on a worker of its own asks once.
    fn batches(&self) -> bool {
        false
    }

    /// Waits until the receiver can start calls (a gate held shut, a
    /// restart's backoff). A worker that batches calls it once it has
    /// taken a batch's first call and before it takes the rest, so the
    /// calls behind one that waits are still the exposure's to take back
    /// (a stop refuses them `shutting_down`). The default returns at once.
    fn ready(&mut self) {}

    /// Runs `calls`, handing each one's completion to `done` with its
    /// index as soon as it has one (in any order, once each), so a driver
    /// can answer the first calls of a batch while the last run. Every
    /// call of a batch has started when the batch starts (the exposure
    /// counts each as executing); a call `done` never heard of failed
    /// structurally. The default runs them one at a time, in order.
    fn call_batch(&mut self, calls: &[BatchCall<'_>], done: &mut dyn FnMut(usize, Completion)) {
        for (i, c) in calls.iter().enumerate() {
            done(i, self.call(c.member, c.payload, c.ctx));
        }
    }
}

/// One call of a batch ([`Receiver::call_batch`]).
#[derive(Clone, Copy, Debug)]
pub struct BatchCall<'a> {
    /// The member.
    pub member: &'a str,
    /// Its decoded payload.
    pub payload: &'a serde_json::Value,
    /// Its context.
    pub ctx: &'a ServedContext,
}

/// What the owner's on_failure decided after a receiver violated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervision {
    /// It absorbed the failure: execution returns and the receiver serves on.
    Absorb,
    /// It restarts the receiver: execution returns, and the receiver is
    /// born again as a new incarnation (a new generation).
    Restart,
    /// It drains the receiver: execution returns, and the receiver's other
    /// calls settle unavailable.
    Drain,
    /// Supervision exits the process: the caller sees a transport failure.
    ExitProcess,
}

type OnFailure = Box<dyn FnMut(ReceiverId) -> Supervision + Send>;

/// `std::api::test::Rpc`. See the module documentation.
pub struct FixtureRpc {
    exposure: Exposure,
    receivers: Vec<Box<dyn Receiver + Send>>,
    stamps: Vec<u64>,
    gated: Vec<bool>,
    draining: Vec<bool>,
    held: Vec<VecDeque<Dispatch>>,
    on_failure: OnFailure,
    now: Timestamp,
    lines: BTreeMap<Correlation, VecDeque<Vec<u8>>>,
    closed: Vec<Correlation>,
    listening: bool,
    exited: bool,
}

impl std::fmt::Debug for FixtureRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixtureRpc")
            .field("exposure", &self.exposure)
            .field("listening", &self.listening)
            .finish()
    }
}

impl FixtureRpc {
    /// Serves `exposure` with `receivers` (one per
    /// [`ExposureSpec::receivers`](super::ExposureSpec::receivers) entry),
    /// each born at once with incarnation stamp 1. A violation is absorbed
    /// unless [`on_failure`](FixtureRpc::on_failure) says otherwise.
    pub fn new(exposure: Exposure, receivers: Vec<Box<dyn Receiver + Send>>) -> FixtureRpc {
        let n = receivers.len();
        let mut rpc = FixtureRpc {
            exposure,
            receivers,
            stamps: vec![1; n],
            gated: vec![false; n],
            draining: vec![false; n],
            held: (0..n).map(|_| VecDeque::new()).collect(),
            on_failure: Box::new(|_| Supervision::Absorb),
            now: 0,
            lines: BTreeMap::new(),
            closed: Vec::new(),
            listening: true,
            exited: false,
        };
        for r in 0..n {
            rpc.exposure.receiver_born(r, 1);
        }
        rpc.run();
        rpc
    }

    /// Sets the owner's on_failure, asked after every violation.
    pub fn on_failure(&mut self, hook: impl FnMut(ReceiverId) -> Supervision + Send + 'static) {
        self.on_failure = Box::new(hook);
    }

    /// The exposure the fixture drives.
    pub fn exposure(&self) -> &Exposure {
        &self.exposure
    }

    /// Sets the fixture's clock (nanoseconds since the Unix epoch).
    pub fn set_time(&mut self, now: Timestamp) {
        self.now = now;
        self.exposure.handle_timeout(now);
        self.run();
    }

    /// A call on connection `correlation`: `payload` is the JSON text, `id`
    /// the client's id as JSON text.
    pub fn call(
        &mut self,
        correlation: Correlation,
        member: &str,
        payload: &str,
        credential: Credential,
        digest: Option<&str>,
        id: Option<&str>,
    ) {
        self.request(Request {
            correlation,
            kind: RequestKind::Call {
                member: member.to_owned(),
                payload: Payload::Json(payload.as_bytes().to_vec()),
            },
            digest: digest.map(str::to_owned),
            credential,
            client_id: id.map(str::to_owned),
        });
    }

    /// A describe on connection `correlation`.
    pub fn describe(&mut self, correlation: Correlation, credential: Credential) {
        self.request(Request {
            correlation,
            kind: RequestKind::Describe,
            digest: None,
            credential,
            client_id: None,
        });
    }

    /// Any framed request.
    pub fn request(&mut self, request: Request) {
        if !self.listening {
            // The listener is closed: the network refuses the connection.
            self.closed.push(request.correlation);
            return;
        }
        self.exposure.handle_request(self.now, self.now, request);
        self.run();
    }

    /// The connection `correlation` is lost. Returns once the exposure has
    /// handled the loss.
    pub fn lose(&mut self, correlation: Correlation) {
        self.exposure.connection_lost(correlation);
        self.run();
    }

    /// The next reply line delivered to `correlation`, if any.
    pub fn outcome(&mut self, correlation: Correlation) -> Option<String> {
        let line = self.lines.get_mut(&correlation)?.pop_front()?;
        Some(String::from_utf8(line).expect("reply lines are UTF-8"))
    }

    /// Whether the runtime told the transport it is finished with
    /// `correlation` (its reply was dropped: a transport failure).
    pub fn was_closed(&self, correlation: Correlation) -> bool {
        self.closed.contains(&correlation)
    }

    /// Whether the listener is still held.
    pub fn is_listening(&self) -> bool {
        self.listening
    }

    /// Whether supervision exited the process.
    pub fn exited(&self) -> bool {
        self.exited
    }

    /// Gates `receiver`: its calls are handed over but wait to run until
    /// [`open`](FixtureRpc::open) or [`step`](FixtureRpc::step).
    pub fn gate(&mut self, receiver: ReceiverId) {
        self.gated[receiver] = true;
    }

    /// Opens `receiver`'s gate and runs what waits behind it.
    pub fn open(&mut self, receiver: ReceiverId) {
        self.gated[receiver] = false;
        self.run_held(receiver, usize::MAX);
        self.run();
    }

    /// Runs one call waiting behind `receiver`'s gate, if any.
    pub fn step(&mut self, receiver: ReceiverId) {
        self.run_held(receiver, 1);
        self.run();
    }

    /// How many calls have been handed to `receiver` and wait at its gate.
    pub fn waiting(&self, receiver: ReceiverId) -> usize {
        self.held[receiver].len()
    }

    /// Restarts `receiver` in place: a new incarnation, a new generation.
    pub fn restart(&mut self, receiver: ReceiverId) {
        self.stamps[receiver] += 1;
        self.draining[receiver] = false;
        // A call handed to the old incarnation and still at the gate is not
        // run by the new one: it reports the handover not taken.
        let stale: Vec<Dispatch> = self.held[receiver].drain(..).collect();
        for d in stale {
            self.exposure.dispatch_not_taken(d.request_id);
        }
        self.exposure.receiver_born(receiver, self.stamps[receiver]);
        self.run();
    }

    /// Drains `receiver`: its queued calls settle unavailable.
    pub fn drain(&mut self, receiver: ReceiverId) {
        self.draining[receiver] = true;
        self.exposure
            .receiver_draining(receiver, self.stamps[receiver]);
        self.run();
    }

    /// `stop()` on the serve handle.
    pub fn stop(&mut self) {
        self.exposure.stop(self.now);
        self.run();
    }

    /// The serving locus's teardown.
    pub fn teardown(&mut self) {
        self.exposure.teardown(self.now);
        self.run();
    }

    fn run_held(&mut self, receiver: ReceiverId, mut budget: usize) {
        while budget > 0 {
            let Some(d) = self.held[receiver].pop_front() else {
                return;
            };
            budget -= 1;
            self.execute(d);
        }
    }

    fn execute(&mut self, d: Dispatch) {
        if d.stamp != self.stamps[d.receiver] {
            self.exposure.dispatch_not_taken(d.request_id);
            return;
        }
        let member = self.exposure.spec().members[d.member].name.clone();
        let completion = self.receivers[d.receiver].call(&member, &d.payload, &d.context);
        if completion == Completion::Violated {
            match (self.on_failure)(d.receiver) {
                Supervision::Absorb => self.exposure.handle_completion(d.request_id, completion),
                Supervision::Restart => {
                    self.exposure.handle_completion(d.request_id, completion);
                    self.stamps[d.receiver] += 1;
                    self.draining[d.receiver] = false;
                    self.exposure
                        .receiver_born(d.receiver, self.stamps[d.receiver]);
                }
                Supervision::Drain => {
                    self.exposure.handle_completion(d.request_id, completion);
                    self.draining[d.receiver] = true;
                    self.exposure
                        .receiver_draining(d.receiver, self.stamps[d.receiver]);
                }
                Supervision::ExitProcess => {
                    self.exited = true;
                    self.exposure
                        .handle_completion(d.request_id, Completion::ProcessExits);
                }
            }
        } else {
            self.exposure.handle_completion(d.request_id, completion);
        }
    }

    /// Polls the exposure until it is quiet, running ungated calls.
    fn run(&mut self) {
        while let Some(event) = self.exposure.poll_event() {
            match event {
                Event::Deliver(d) => {
                    let line = super::unix_reply::reply_line(
                        &d.outcome,
                        d.request_id,
                        d.client_id.as_deref(),
                        &d.caller,
                    );
                    self.lines.entry(d.correlation).or_default().push_back(line);
                }
                Event::Dispatch(d) => {
                    if self.gated[d.receiver] {
                        self.held[d.receiver].push_back(*d);
                    } else {
                        self.execute(*d);
                    }
                }
                Event::Ask(r) if self.draining[r] => self.exposure.receiver_absent(r),
                Event::Ask(r) => self.exposure.receiver_born(r, self.stamps[r]),
                Event::Recall {
                    receiver,
                    request_id,
                } => {
                    // A call held at a gate has not started: it comes back.
                    let held = &mut self.held[receiver];
                    if let Some(at) = held.iter().position(|d| d.request_id == request_id) {
                        held.remove(at);
                        self.exposure.recalled(request_id);
                    }
                }
                Event::CloseConnection(c) => self.closed.push(c),
                Event::StopListening => self.listening = false,
            }
        }
    }
}

/// A credential helper for tests: a bearer token.
pub fn bearer(token: &str) -> Credential {
    Credential::Bearer(Some(token.to_owned()))
}
