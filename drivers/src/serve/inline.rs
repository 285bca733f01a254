//! Inline receivers: a receiver instance declared non-blocking, run on the
//! thread of the exposures' owner (loop 0) instead of a worker thread.
//!
//! A call to a worker crosses two threads and back (loop → owner → worker
//! → owner → loop); a handler that cannot block gains nothing from its own
//! thread and pays two wake-ups a call. An inline receiver keeps every
//! guarantee of a worker ([`super::worker`]): one call at a time (the
//! owner runs one at a time), the same panic boundary and on_failure
//! ([`super::worker::run`]), the same reports to the exposure, the same
//! claim on each call handed ahead (a recalled call is never started), and
//! the same pause after a violation its supervision drains, until the
//! operator's resume. What it gives up is only that a handler which does
//! block stalls loop 0: the server's API asks the caller to say which
//! receivers are which ([`super::Server::add_inline_receiver`]).

use std::collections::VecDeque;

use limen_core::hale::runtime::{Receiver, Supervision};

use super::worker::{self, take, Job, OnFailure, Report};

/// A receiver instance run on the owner's thread. See the module
/// documentation.
pub(super) struct Inline {
    id: usize,
    name: String,
    stamp: u64,
    receiver: Box<dyn Receiver + Send>,
    on_failure: OnFailure,
    /// Calls handed and not started, in the order handed.
    jobs: VecDeque<Job>,
    /// Set after a violation its supervision drains, cleared by the
    /// resume: while set, nothing starts.
    paused: bool,
}

impl Inline {
    /// Receiver instance `id` of its server, named `name`, incarnation
    /// `stamp`; `on_failure` runs after a violation or a panic.
    pub(super) fn new(
        id: usize,
        name: &str,
        stamp: u64,
        receiver: Box<dyn Receiver + Send>,
        on_failure: OnFailure,
    ) -> Inline {
        Inline {
            id,
            name: name.to_owned(),
            stamp,
            receiver,
            on_failure,
            jobs: VecDeque::new(),
            paused: false,
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

    /// Lets a receiver paused after a drained violation start calls again.
    pub(super) fn resume(&mut self) {
        self.paused = false;
    }

    /// Whether a call waits that may start now.
    pub(super) fn ready(&self) -> bool {
        !self.paused && !self.jobs.is_empty()
    }

    /// Runs the next call handed and not recalled, behind the worker's
    /// panic boundary, and says how it ended; `None` when none may start.
    pub(super) fn run_next(&mut self) -> Option<Report> {
        while !self.paused {
            let job = self.jobs.pop_front()?;
            if !take(&job.claim) {
                // The owner took it back: the exposure settled it.
                continue;
            }
            let report = worker::run(
                self.id,
                self.stamp,
                &self.name,
                self.receiver.as_mut(),
                job,
                &self.on_failure,
            );
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
