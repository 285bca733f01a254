//! Serial workers: one thread per receiver instance, so a receiver is an
//! actor wherever its calls come from, and calls to different receivers
//! run in parallel.
//!
//! A worker reports a finished call to its exposure itself, under the
//! exposure's lock, and takes the exposure's next call for the same
//! receiver straight from that report: under load a receiver runs its calls
//! back to back with no trip through the event loop between them, and the
//! loop only hears what it must act on (an outcome to write, a connection
//! to close). The exposure machine still decides every step: which call is
//! handed over, when, and in which order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use limen_core::hale::runtime::{Completion, Dispatch, Event, Exposure, Receiver, Supervision};

/// Which exposure a dispatch came from.
pub type ExposureIndex = usize;

/// What a worker tells the event loop.
// An event is most of what flows here; boxing it to shrink the rare
// `Draining` would cost an allocation a call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum FromWorker {
    /// An exposure emitted an event the loop acts on.
    Event(ExposureIndex, Event),
    /// The worker's receiver drains (its owner's on_failure said so): every
    /// exposure bound to it learns.
    Draining(usize),
}

/// Where workers leave their reports for the loop: a list the loop takes
/// whole (swapping in an empty one), so a report costs a push under a lock
/// neither side holds for long, and no allocation once the lists have grown.
#[derive(Debug, Default)]
pub struct Outbox(Mutex<Vec<FromWorker>>);

impl Outbox {
    /// Leaves reports for the loop.
    pub fn send(&self, reports: impl IntoIterator<Item = FromWorker>) {
        self.reports().extend(reports);
    }

    /// Takes every report left so far, into `into` (which is emptied
    /// first; its allocation is kept for the next take).
    pub fn take(&self, into: &mut Vec<FromWorker>) {
        into.clear();
        std::mem::swap(&mut *self.reports(), into);
    }

    fn reports(&self) -> std::sync::MutexGuard<'_, Vec<FromWorker>> {
        // The lock guards a plain list and no code that can panic holds it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The owner's on_failure, run on the worker after a violation and before
/// the exposure answers it.
pub type OnFailure = Arc<dyn Fn(&str) -> Supervision + Send + Sync>;

/// A call handed to a worker, with the exposure that handed it.
pub struct Job {
    /// The exposure's index in the server.
    pub index: ExposureIndex,
    /// The exposure, to report to.
    pub exposure: Arc<Mutex<Exposure>>,
    /// The exposure's member names, as receivers are called with them.
    pub names: Arc<[String]>,
    /// The call.
    pub dispatch: Box<Dispatch>,
}

/// A receiver instance's serial worker thread.
pub struct Worker {
    name: String,
    inbox: Arc<Inbox>,
    thread: thread::Thread,
    stamp: u64,
}

/// The calls the loop handed a worker and it has not taken yet.
///
/// Not a channel: the loop hands calls without a wake-up syscall while the
/// worker is busy (an unpark of a thread that is not parked is one atomic
/// swap), and the worker takes every call queued for it under one hold of
/// the lock, then parks only when there is none.
#[derive(Default)]
struct Inbox {
    state: Mutex<InboxState>,
    /// Whether `state.jobs` may be non-empty: the worker looks at the lock
    /// only when it is set.
    queued: AtomicBool,
}

#[derive(Default)]
struct InboxState {
    jobs: VecDeque<Job>,
    /// The server let the worker go: it ends once its calls are run.
    closed: bool,
    /// The worker's thread has ended: nothing handed is run.
    gone: bool,
}

impl Inbox {
    fn state(&self) -> std::sync::MutexGuard<'_, InboxState> {
        // The lock guards plain data and no code that can panic holds it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Marks the inbox gone when the worker's thread ends, however it ends.
struct Gone(Arc<Inbox>);

impl Drop for Gone {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.gone = true;
        state.jobs.clear();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.inbox.state().closed = true;
        self.inbox.queued.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("name", &self.name)
            .field("stamp", &self.stamp)
            .finish()
    }
}

/// What a worker needs besides its receiver.
pub struct WorkerLink {
    /// Where events the loop must act on go.
    pub to_loop: Arc<Outbox>,
    /// Wakes the loop when it sleeps.
    pub wake: Arc<dyn Fn() + Send + Sync>,
    /// The owner's on_failure.
    pub on_failure: OnFailure,
}

impl Worker {
    /// Starts `receiver`, incarnation `stamp`, on a thread of its own named
    /// `name`; it is worker `id` of its server.
    pub fn spawn(
        id: usize,
        name: &str,
        stamp: u64,
        mut receiver: Box<dyn Receiver + Send>,
        link: WorkerLink,
    ) -> std::io::Result<Worker> {
        let inbox = Arc::new(Inbox::default());
        let mine = inbox.clone();
        let owner = name.to_owned();
        let handle = thread::Builder::new()
            .name(format!("receiver {name}"))
            .spawn(move || {
                let inbox = Gone(mine);
                // Calls the loop handed over, taken from the inbox together.
                let mut handed: VecDeque<Job> = VecDeque::new();
                // Calls this worker took for itself from its own reports,
                // behind any other exposure's call already handed over, so
                // two exposures bound to one receiver take turns.
                let mut own: VecDeque<Job> = VecDeque::new();
                // What a call's report tells the loop, gathered while the
                // exposure is locked and left in the outbox after.
                let mut reports: Vec<FromWorker> = Vec::new();
                loop {
                    if handed.is_empty() && inbox.0.queued.load(Ordering::SeqCst) {
                        let mut state = inbox.0.state();
                        // Once closed it stays set, so the worker comes
                        // back to find the close after the last calls.
                        if !state.closed {
                            inbox.0.queued.store(false, Ordering::SeqCst);
                        }
                        std::mem::swap(&mut handed, &mut state.jobs);
                        if state.closed && handed.is_empty() {
                            return;
                        }
                    }
                    let job = match handed.pop_front().or_else(|| own.pop_front()) {
                        Some(job) => job,
                        None => {
                            // Parks until a hand (or the close) unparks it;
                            // an unpark that came first returns at once, and
                            // a spurious return only looks again.
                            thread::park();
                            continue;
                        }
                    };
                    if let Some(next) = run(
                        id,
                        stamp,
                        &owner,
                        receiver.as_mut(),
                        job,
                        &link,
                        &mut reports,
                    ) {
                        own.push_back(next);
                    }
                }
            })?;
        Ok(Worker {
            name: name.to_owned(),
            inbox,
            thread: handle.thread().clone(),
            stamp,
        })
    }

    /// The incarnation stamp this worker's receiver announced at birth.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The receiver's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Hands the worker a call. Returns the call's request id when the
    /// worker is gone.
    pub fn hand(&self, job: Job) -> Result<(), limen_core::hale::runtime::RequestId> {
        {
            let mut state = self.inbox.state();
            if state.gone {
                return Err(job.dispatch.request_id);
            }
            state.jobs.push_back(job);
        }
        // Set after the push and read by the worker before it parks again
        // (SeqCst on both), so a hand is never left unseen; the unpark is a
        // syscall only when the worker is parked.
        self.inbox.queued.store(true, Ordering::SeqCst);
        self.thread.unpark();
        Ok(())
    }
}

/// Runs one call and reports it; returns the exposure's next call for the
/// same receiver, when the report hands one over.
fn run(
    id: usize,
    stamp: u64,
    owner: &str,
    receiver: &mut (dyn Receiver + Send),
    job: Job,
    link: &WorkerLink,
    reports: &mut Vec<FromWorker>,
) -> Option<Job> {
    let Job {
        index,
        exposure,
        names,
        dispatch: d,
    } = job;
    // A call handed to another incarnation is not run by this one.
    let ended =
        (d.stamp == stamp).then(
            || match receiver.call(&names[d.member], &d.payload, &d.context) {
                Completion::Violated => (Completion::Violated, Some((link.on_failure)(owner))),
                c => (c, None),
            },
        );
    if let Some((_, Some(Supervision::ExitProcess))) = ended {
        // Supervision exits the process: every caller sees its connection
        // end, never a swallowed structural failure.
        eprintln!("hale: {owner} violated and its supervision exits the process");
        std::process::exit(70);
    }
    let mut next = None;
    let mut told = false;
    {
        let mut ex = exposure.lock().expect("exposure lock");
        match ended {
            None => ex.dispatch_not_taken(d.request_id),
            Some((completion, supervision)) => {
                if supervision == Some(Supervision::Drain) {
                    // Drained before the completion is taken, so no call is
                    // handed to a receiver that will not run it.
                    ex.receiver_draining(d.receiver, stamp);
                }
                ex.handle_completion(d.request_id, completion);
                if supervision == Some(Supervision::Drain) {
                    reports.push(FromWorker::Draining(id));
                    told = true;
                }
            }
        }
        while let Some(event) = ex.poll_event() {
            match event {
                Event::Dispatch(n) if n.receiver == d.receiver => {
                    next = Some(Job {
                        index,
                        exposure: exposure.clone(),
                        names: names.clone(),
                        dispatch: n,
                    });
                }
                other => {
                    reports.push(FromWorker::Event(index, other));
                    told = true;
                }
            }
        }
    }
    if told {
        link.to_loop.send(reports.drain(..));
        (link.wake)();
    }
    next
}
