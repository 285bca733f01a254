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
use std::sync::{mpsc, Arc, Mutex};
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
    pub dispatch: Dispatch,
}

/// A receiver instance's serial worker thread.
pub struct Worker {
    name: String,
    jobs: mpsc::Sender<Job>,
    stamp: u64,
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
    pub to_loop: mpsc::Sender<FromWorker>,
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
        let (jobs, rx) = mpsc::channel::<Job>();
        let owner = name.to_owned();
        thread::Builder::new()
            .name(format!("receiver {name}"))
            .spawn(move || {
                // Calls this worker took for itself from its own reports,
                // behind any other exposure's call already handed over, so
                // two exposures bound to one receiver take turns.
                let mut own: VecDeque<Job> = VecDeque::new();
                loop {
                    let job = match rx.try_recv() {
                        Ok(job) => job,
                        Err(mpsc::TryRecvError::Disconnected) => return,
                        Err(mpsc::TryRecvError::Empty) => match own.pop_front() {
                            Some(job) => job,
                            None => match rx.recv() {
                                Ok(job) => job,
                                Err(_) => return,
                            },
                        },
                    };
                    if let Some(next) = run(id, stamp, &owner, receiver.as_mut(), job, &link) {
                        own.push_back(next);
                    }
                }
            })?;
        Ok(Worker {
            name: name.to_owned(),
            jobs,
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
        self.jobs.send(job).map_err(|e| e.0.dispatch.request_id)
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
                    let _ = link.to_loop.send(FromWorker::Draining(id));
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
                    let _ = link.to_loop.send(FromWorker::Event(index, other));
                    told = true;
                }
            }
        }
    }
    if told {
        (link.wake)();
    }
    next
}
