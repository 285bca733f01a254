//! Inline receivers: a receiver instance declared non-blocking, run under
//! the exposures' owner's lock, on the loop that handed it the call, while
//! its calls come one or a few at a time, and on a worker thread of its own (its spill worker)
//! when they come in bursts.
//!
//! A call to a worker crosses two threads and back (loop → owner → worker
//! → owner → loop); a handler that cannot block gains nothing from its own
//! thread and pays two wake-ups a call. But a pipelined burst (a Unix
//! connection with 64 calls in flight hands tens in one turn) gains from
//! the second core: the loop's work per call is small there (one read for
//! many calls), so the handler and its codec are much of the whole, and
//! they run beside the loop on a thread of their own. Calls that each came
//! on a connection of their own (HTTP/1.1's one call per connection) cost
//! the loop an accept, a read, a write and a close apiece, beside which the
//! handler is small: there the hop is the loss. So a turn whose calls came
//! at least two to a connection (the owner's `pipelined`; so is a spill
//! worker's report, which dispatches calls that queued behind a burst) and
//! hands an idle receiver [`SPILL_AT`] or more sends them to the spill
//! worker; any
//! other turn runs them inline; and while the spill worker still holds a
//! call every call follows it there, so calls start in the order handed.
//! Measured both ways (benches/RESULTS.md, "Inline receivers"): inline
//! only, a pipelined Unix connection served 0.35× the line echo where a
//! worker served 0.70×; spilling, 1.00×. The
//! receiver itself is behind a lock the two take turns with
//! ([`SharedReceiver`]): one call at a time, whoever runs it.
//!
//! An inline receiver keeps every guarantee of a worker
//! ([`super::worker`]): one call at a time, the same panic boundary and
//! on_failure ([`super::worker::run`]), the same reports to the exposure,
//! the same claim on each call handed ahead (a recalled call is never
//! started), and the same pause after a violation its supervision drains,
//! until the operator's resume. What it gives up is only that a handler
//! which does block stalls the loop running it, and every loop waiting for
//! the owner's lock: the server's API asks the caller to say which
//! receivers are which ([`super::Server::add_inline_receiver`]).

use std::collections::VecDeque;

use limen_core::hale::runtime::Supervision;

use super::worker::{self, take, Job, OnFailure, Report, SharedReceiver, Worker};

/// From how many calls handed in one turn a receiver's calls go to its
/// spill worker instead of running inline. Measured with
/// `benches/scripts/http-vs-limit` and `benches/scripts/unix-vs-line-echo`
/// (benches/RESULTS.md, "Inline receivers").
pub(super) const SPILL_AT: usize = 4;

/// A receiver instance run under the owner's lock. See the module
/// documentation.
pub(super) struct Inline {
    id: usize,
    name: String,
    stamp: u64,
    receiver: SharedReceiver,
    on_failure: OnFailure,
    /// The thread a burst of calls goes to (see the module documentation).
    spill: Worker,
    /// Calls handed and not started, in the order handed.
    jobs: VecDeque<Job>,
    /// Set after a violation its supervision drains, cleared by the
    /// resume: while set, nothing starts.
    paused: bool,
}

impl Inline {
    /// Receiver instance `id` of its server, named `name`, incarnation
    /// `stamp`, shared with `spill`, its spill worker; `on_failure` runs
    /// after a violation or a panic.
    pub(super) fn new(
        id: usize,
        name: &str,
        stamp: u64,
        receiver: SharedReceiver,
        on_failure: OnFailure,
        spill: Worker,
    ) -> Inline {
        Inline {
            id,
            name: name.to_owned(),
            stamp,
            receiver,
            on_failure,
            spill,
            jobs: VecDeque::new(),
            paused: false,
        }
    }

    /// Where a call handed now goes: to the spill worker while it holds a
    /// call (so calls start in the order handed), else queued to run
    /// inline (`None`).
    pub(super) fn spill_worker_busy(&self) -> Option<&Worker> {
        (!self.spill.idle()).then_some(&self.spill)
    }

    /// The spill worker.
    pub(super) fn spill(&self) -> &Worker {
        &self.spill
    }

    /// Takes the calls queued to run inline when this turn handed a burst
    /// of them ([`SPILL_AT`] or more): the owner hands them to the spill
    /// worker, in order. Empty when they are few. Asked only of a turn
    /// whose calls were pipelined (see the module documentation).
    pub(super) fn take_burst(&mut self) -> VecDeque<Job> {
        if self.jobs.len() >= SPILL_AT && !self.paused {
            std::mem::take(&mut self.jobs)
        } else {
            VecDeque::new()
        }
    }

    /// The incarnation stamp this receiver announced at birth.
    pub(super) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Queues a call; the owner runs it with [`Inline::run_next`] once the
    /// input that handed it has been acted on.
    pub(super) fn hand(&mut self, job: Job) {
        self.jobs.push_back(job);
    }

    /// Lets a receiver paused after a drained violation start calls again,
    /// inline and on its spill worker.
    pub(super) fn resume(&mut self) {
        self.paused = false;
        self.spill.resume();
    }

    /// Whether a call waits that may start now.
    pub(super) fn ready(&self) -> bool {
        !self.is_paused() && !self.jobs.is_empty()
    }

    /// Paused after a drained violation, inline or on the spill worker.
    fn is_paused(&self) -> bool {
        self.paused || self.spill.paused()
    }

    /// Runs the next call handed and not recalled, behind the worker's
    /// panic boundary, and says how it ended; `None` when none may start.
    pub(super) fn run_next(&mut self) -> Option<Report> {
        while !self.is_paused() {
            let job = self.jobs.pop_front()?;
            if !take(&job.claim) {
                // The owner took it back: the exposure settled it.
                continue;
            }
            // The spill worker holds no call when calls are queued here
            // (see `spill_worker_busy`), so the lock is free.
            let mut receiver = self.receiver.lock().unwrap_or_else(|e| e.into_inner());
            let report = worker::run(
                self.id,
                self.stamp,
                &self.name,
                receiver.as_mut(),
                job,
                &self.on_failure,
            );
            drop(receiver);
            if let Report::Ended {
                supervision: Some(Supervision::Drain),
                ..
            } = report
            {
                // Paused before the report is taken, so no call handed
                // ahead starts on a receiver that drains.
                self.paused = true;
            }
            return Some(report);
        }
        None
    }
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inline")
            .field("name", &self.name)
            .field("stamp", &self.stamp)
            .finish()
    }
}
