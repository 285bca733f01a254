//! Serial workers: one thread per receiver instance, so a receiver is an
//! actor wherever its calls come from, and calls to different receivers
//! run in parallel.
//!
//! A worker never touches an exposure. It takes the calls the exposure's
//! owner handed it, runs each, and sends how it ended back to the owner as
//! a message ([`Report`]); the exposure decides every step from those
//! messages. A handler that panics is caught here: its call ends as a
//! violation would (the owner's on_failure runs, the caller receives the
//! server error), and the worker goes on with the next call. A call the
//! worker can no longer run — its thread ended — is reported not taken, so
//! the exposure settles it `unavailable` instead of forgetting it.
//!
//! An exposure may hand a worker calls ahead of the one it runs
//! ([`ExposureLimits::dispatch_ahead`]), and ask for them back when it
//! settles its queue. Each job carries a claim that exactly one side takes:
//! the worker just before it starts the call, or the owner recalling it
//! (the call then never starts; the exposure settles it as queued). After a
//! violation its supervision drains, the worker pauses, starting nothing
//! more until the owner has taken back what was handed and resumes it.
//!
//! [`ExposureLimits::dispatch_ahead`]: limen_core::hale::runtime::ExposureLimits::dispatch_ahead

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use limen_core::hale::runtime::{
    BatchCall, Completion, Dispatch, Receiver, RequestId, Supervision,
};

use super::mailbox::Mailbox;
use super::Message;

/// Which exposure a dispatch came from.
pub type ExposureIndex = usize;

/// How many times a worker with no call looks for the next before it parks
/// (tens of microseconds): under load the owner hands the next call soon
/// after a report, and a park and its unpark cost two context switches a
/// call (measured with `benches/scripts/unix-vs-line-echo`: about 400k
/// calls/s parking at once, about 680k with this wait).
const SPIN_BEFORE_PARK: u32 = 3000;

/// At most how many reports a worker holds before it sends them: calls
/// handed ahead end in bursts, and one message of many wakes the owner
/// once, where a message each would wake it for every call; the bound keeps
/// the first replies of a burst from waiting for the last.
const REPORT_BATCH: usize = 16;

/// The most calls a receiver that batches ([`Receiver::batches`]) is given
/// at once: what its exposures hand ahead bounds it first.
const BATCH_MOST: usize = 1024;

/// How a handed call ended, as the worker tells the exposure's owner.
#[derive(Debug)]
pub enum Report {
    /// The call ran (or was caught panicking): how it ended, and what the
    /// owner's on_failure decided after a violation.
    Ended {
        /// The exposure that handed it.
        exposure: ExposureIndex,
        /// The call.
        request_id: RequestId,
        /// How it ended.
        completion: Completion,
        /// The on_failure's decision, after a violation.
        supervision: Option<Supervision>,
        /// The worker.
        worker: usize,
    },
    /// The call was not run: it was handed to another incarnation, or the
    /// worker's thread has ended.
    NotTaken {
        /// The exposure that handed it.
        exposure: ExposureIndex,
        /// The call.
        request_id: RequestId,
        /// The worker.
        worker: usize,
    },
}

/// The owner's on_failure, run on the worker after a violation and before
/// the exposure answers it.
pub type OnFailure = Arc<dyn Fn(&str) -> Supervision + Send + Sync>;

/// A call handed to a worker.
pub struct Job {
    /// The exposure's index in the server.
    pub exposure: ExposureIndex,
    /// The exposure's member names, as receivers are called with them.
    pub names: Arc<[String]>,
    /// The call.
    pub dispatch: Box<Dispatch>,
    /// Taken by whoever decides the call's fate first: the worker when it
    /// starts it (or reports it not taken), the owner when it recalls it.
    pub claim: Claim,
}

/// A receiver instance as a worker holds it: behind a lock, so that an
/// inline receiver's spill worker (`serve/inline.rs`) and the owner can take
/// turns with it. A worker locks it for each call; nobody else holds it
/// then, so the lock costs one uncontended atomic pair.
pub type SharedReceiver = Arc<Mutex<Box<dyn Receiver + Send>>>;

/// A handed call's claim: set once, by the worker or by the owner.
pub type Claim = Arc<AtomicBool>;

/// Takes `claim`; true for the one side that took it first.
pub fn take(claim: &Claim) -> bool {
    !claim.swap(true, Ordering::AcqRel)
}

/// A receiver instance's serial worker thread.
pub struct Worker {
    name: String,
    inbox: Arc<Inbox>,
    thread: thread::Thread,
    stamp: u64,
}

/// The calls handed to a worker and not taken yet.
///
/// Not a channel: the owner hands calls without a wake-up syscall while the
/// worker is busy (an unpark of a thread that is not parked is one atomic
/// swap), and the worker takes every call queued for it under one hold of
/// the lock, then parks only when there is none.
#[derive(Default)]
struct Inbox {
    state: Mutex<InboxState>,
    /// Whether `state.jobs` may be non-empty: the worker looks at the lock
    /// only when it is set.
    queued: AtomicBool,
    /// Set by the worker after a violation its supervision drains, cleared
    /// by the owner's resume: while set, the worker starts nothing.
    paused: AtomicBool,
    /// Calls handed and not done with (run, skipped or reported not
    /// taken): at 0 the worker neither runs nor holds a call, and only the
    /// owner's next hand changes that.
    in_hand: AtomicUsize,
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

/// When the worker's thread ends, however it ends: the inbox is marked gone
/// and every call still in it, or taken and not run, is reported not taken.
struct Gone {
    inbox: Arc<Inbox>,
    owner: Arc<Mailbox<Message>>,
    taken: VecDeque<Job>,
    worker: usize,
    /// Reports not sent yet: sent together when the calls taken are done
    /// (or every [`REPORT_BATCH`]), one wake-up of the owner for them all.
    reports: Vec<Message>,
}

impl Gone {
    fn flush(&mut self) {
        self.owner.send_all(&mut self.reports);
    }
}

impl Drop for Gone {
    fn drop(&mut self) {
        self.flush();
        let mut state = self.inbox.state();
        state.gone = true;
        let left: Vec<Job> = self.taken.drain(..).chain(state.jobs.drain(..)).collect();
        drop(state);
        // A call the owner took back is its to settle; the rest are ours.
        for job in left.into_iter().filter(|job| take(&job.claim)) {
            self.owner.send(Message::Worker(Report::NotTaken {
                exposure: job.exposure,
                request_id: job.dispatch.request_id,
                worker: self.worker,
            }));
        }
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

impl Worker {
    /// Starts `receiver`, incarnation `stamp`, on a thread of its own named
    /// `name`; it is worker `id` of its server and reports to `owner`, the
    /// mailbox of the exposures' owner. `on_failure` is run after a
    /// violation or a panic.
    pub(super) fn spawn(
        id: usize,
        name: &str,
        stamp: u64,
        receiver: SharedReceiver,
        on_failure: OnFailure,
        owner: Arc<Mailbox<Message>>,
    ) -> std::io::Result<Worker> {
        let inbox = Arc::new(Inbox::default());
        let mine = inbox.clone();
        let owner_name = name.to_owned();
        let batches = receiver.lock().map(|r| r.batches()).unwrap_or(false);
        let handle = thread::Builder::new()
            .name(format!("receiver {name}"))
            .spawn(move || {
                let mut gone = Gone {
                    inbox: mine,
                    owner,
                    taken: VecDeque::new(),
                    worker: id,
                    reports: Vec::new(),
                };
                loop {
                    if gone.inbox.paused.load(Ordering::SeqCst) {
                        gone.flush();
                        // Drained after a violation: nothing starts until
                        // the owner, having taken back what it handed,
                        // resumes the worker (or lets it go).
                        if gone.inbox.state().closed {
                            return;
                        }
                        thread::park();
                        continue;
                    }
                    if gone.taken.is_empty() && gone.inbox.queued.load(Ordering::SeqCst) {
                        let mut state = gone.inbox.state();
                        // Once closed it stays set, so the worker comes
                        // back to find the close after the last calls.
                        if !state.closed {
                            gone.inbox.queued.store(false, Ordering::SeqCst);
                        }
                        std::mem::swap(&mut gone.taken, &mut state.jobs);
                        if state.closed && gone.taken.is_empty() {
                            return;
                        }
                    }
                    if batches && !gone.taken.is_empty() {
                        // Every call handed and still its to take, run as
                        // one batch (a process written to once).
                        let mut batch = Vec::new();
                        let mut receiver = receiver.lock().unwrap_or_else(|e| e.into_inner());
                        // The first call starts; the receiver may wait
                        // before it can start any (a gate, a backoff), and
                        // the calls behind it are taken only then, so the
                        // owner can still take them back meanwhile.
                        if let Some(job) = gone.taken.pop_front() {
                            if !take(&job.claim) {
                                gone.inbox.in_hand.fetch_sub(1, Ordering::SeqCst);
                                continue;
                            }
                            batch.push(job);
                            receiver.ready();
                        }
                        while batch.len() < BATCH_MOST {
                            let Some(job) = gone.taken.pop_front() else {
                                break;
                            };
                            if take(&job.claim) {
                                batch.push(job);
                            } else {
                                gone.inbox.in_hand.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        if batch.is_empty() {
                            continue;
                        }
                        let inbox = &gone.inbox;
                        let reports = &mut gone.reports;
                        let owner_box = &gone.owner;
                        run_batch(
                            id,
                            stamp,
                            &owner_name,
                            receiver.as_mut(),
                            batch,
                            &on_failure,
                            &mut |report| {
                                inbox.in_hand.fetch_sub(1, Ordering::SeqCst);
                                if let Report::Ended {
                                    supervision: Some(Supervision::Drain),
                                    ..
                                } = report
                                {
                                    // Paused before the report leaves, as
                                    // for one call.
                                    inbox.paused.store(true, Ordering::SeqCst);
                                }
                                reports.push(Message::Worker(report));
                                // Sent as they come, a few at a time: the
                                // first calls of a batch are answered while
                                // the last run.
                                if reports.len() >= REPORT_BATCH {
                                    owner_box.send_all(reports);
                                }
                            },
                        );
                        drop(receiver);
                        gone.flush();
                        continue;
                    }
                    let Some(job) = gone.taken.pop_front() else {
                        // The owner usually hands the next call within
                        // microseconds of a report: look for it a moment
                        // before parking, since a park and its unpark cost
                        // two context switches a call.
                        gone.flush();
                        let mut spun = 0;
                        while spun < SPIN_BEFORE_PARK && !gone.inbox.queued.load(Ordering::Relaxed)
                        {
                            std::hint::spin_loop();
                            spun += 1;
                        }
                        if spun < SPIN_BEFORE_PARK {
                            continue;
                        }
                        // Parks until a hand (or the close) unparks it; an
                        // unpark that came first returns at once, and a
                        // spurious return only looks again.
                        thread::park();
                        continue;
                    };
                    if !take(&job.claim) {
                        // The owner took it back: the exposure settled it.
                        gone.inbox.in_hand.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let report = {
                        // A panic is caught inside `run`, so the lock is
                        // never poisoned by a handler; `into_inner` only
                        // keeps a worker going if it ever were.
                        let mut receiver = receiver.lock().unwrap_or_else(|e| e.into_inner());
                        run(id, stamp, &owner_name, receiver.as_mut(), job, &on_failure)
                    };
                    gone.inbox.in_hand.fetch_sub(1, Ordering::SeqCst);
                    if let Report::Ended {
                        supervision: Some(Supervision::Drain),
                        ..
                    } = report
                    {
                        // Paused before the report leaves, so no call
                        // handed ahead starts on a receiver that drains.
                        gone.inbox.paused.store(true, Ordering::SeqCst);
                    }
                    gone.reports.push(Message::Worker(report));
                    if gone.reports.len() >= REPORT_BATCH {
                        gone.flush();
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

    /// Whether the worker neither runs nor holds a call (none handed is
    /// left). Read by the owner, the only one who hands: it stays true
    /// until the owner hands again.
    pub(super) fn idle(&self) -> bool {
        self.inbox.in_hand.load(Ordering::SeqCst) == 0
    }

    /// Whether the worker paused after a violation its supervision drains
    /// (until [`resume`](Worker::resume)).
    pub(super) fn paused(&self) -> bool {
        self.inbox.paused.load(Ordering::SeqCst)
    }

    /// Lets a worker paused after a drained violation start calls again.
    pub(super) fn resume(&self) {
        if self.inbox.paused.swap(false, Ordering::SeqCst) {
            self.thread.unpark();
        }
    }

    /// Hands the worker a call. Returns the call's request id when the
    /// worker is gone.
    pub(super) fn hand(&self, job: Job) -> Result<(), RequestId> {
        {
            let mut state = self.inbox.state();
            if state.gone {
                return Err(job.dispatch.request_id);
            }
            self.inbox.in_hand.fetch_add(1, Ordering::SeqCst);
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

/// Runs one call, behind a panic boundary, and says how it ended (a
/// worker's and an inline receiver's one boundary).
pub(super) fn run(
    id: usize,
    stamp: u64,
    owner: &str,
    receiver: &mut (dyn Receiver + Send),
    job: Job,
    on_failure: &OnFailure,
) -> Report {
    let Job {
        exposure,
        names,
        dispatch: d,
        ..
    } = job;
    // A call handed to another incarnation is not run by this one.
    if d.stamp != stamp {
        return Report::NotTaken {
            exposure,
            request_id: d.request_id,
            worker: id,
        };
    }
    let member = &names[d.member];
    let called = catch_unwind(AssertUnwindSafe(|| {
        receiver.call(member, &d.payload, &d.context)
    }));
    let completion = match called {
        Ok(completion) => completion,
        Err(panic) => {
            // A panic is a structural failure of the receiver, as a
            // violation is (docs/decisions.md): the caller gets the server
            // error and the owner's supervision decides what follows.
            eprintln!(
                "hale: {owner} panicked in {member}: {}",
                panic_text(panic.as_ref())
            );
            Completion::Violated
        }
    };
    ended(id, owner, exposure, d.request_id, completion, on_failure)
}

/// Runs a batch of calls ([`Receiver::call_batch`]), behind one panic
/// boundary: a panic is every call's structural failure.
fn run_batch(
    id: usize,
    stamp: u64,
    owner: &str,
    receiver: &mut (dyn Receiver + Send),
    jobs: Vec<Job>,
    on_failure: &OnFailure,
    sent: &mut dyn FnMut(Report),
) {
    // A call handed to another incarnation is not run by this one.
    let (run, other): (Vec<Job>, Vec<Job>) =
        jobs.into_iter().partition(|j| j.dispatch.stamp == stamp);
    for job in other {
        sent(Report::NotTaken {
            exposure: job.exposure,
            request_id: job.dispatch.request_id,
            worker: id,
        });
    }
    let calls: Vec<BatchCall<'_>> = run
        .iter()
        .map(|j| BatchCall {
            member: &j.names[j.dispatch.member],
            payload: &j.dispatch.payload,
            ctx: &j.dispatch.context,
        })
        .collect();
    let mut answered = vec![false; run.len()];
    let mut done = |i: usize, completion: Completion| {
        let Some(job) = run.get(i).filter(|_| !answered[i]) else {
            return;
        };
        answered[i] = true;
        let report = ended(
            id,
            owner,
            job.exposure,
            job.dispatch.request_id,
            completion,
            on_failure,
        );
        sent(report);
    };
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| receiver.call_batch(&calls, &mut done))) {
        eprintln!(
            "hale: {owner} panicked in a batch of {} calls: {}",
            calls.len(),
            panic_text(panic.as_ref())
        );
    }
    // A call the batch never answered failed structurally.
    for i in 0..run.len() {
        done(i, Completion::Violated);
    }
}

/// The report of a call that ran: after a violation, with what the owner's
/// on_failure decided.
pub(super) fn ended(
    id: usize,
    owner: &str,
    exposure: ExposureIndex,
    request_id: RequestId,
    completion: Completion,
    on_failure: &OnFailure,
) -> Report {
    let supervision = match completion {
        Completion::Violated => Some(
            // An on_failure that panics itself leaves the receiver as a
            // drain would: nobody said it may go on.
            catch_unwind(AssertUnwindSafe(|| on_failure(owner))).unwrap_or(Supervision::Drain),
        ),
        _ => None,
    };
    if supervision == Some(Supervision::ExitProcess) {
        // Supervision exits the process: every caller sees its connection
        // end, never a swallowed structural failure.
        eprintln!("hale: {owner} violated and its supervision exits the process");
        std::process::exit(70);
    }
    Report::Ended {
        exposure,
        request_id,
        completion,
        supervision,
        worker: id,
    }
}

/// The message a panic carried, when it is text.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic with no message")
}
