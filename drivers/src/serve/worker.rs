//! Serial workers: one thread per receiver instance, so a receiver is an
//! actor wherever its calls come from, and calls to different receivers
//! run in parallel.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use limen_core::hale::runtime::{Completion, Dispatch, Receiver, RequestId, Supervision};

/// Which exposure a dispatch came from, so its completion goes back there.
pub type ExposureIndex = usize;

/// A finished call, on its way back to the event loop.
#[derive(Debug)]
pub struct Completed {
    /// The worker that ran it.
    pub worker: usize,
    /// The exposure that handed the call over.
    pub exposure: ExposureIndex,
    /// The exposure's request id.
    pub request_id: RequestId,
    /// What became of the call.
    pub ended: Ended,
}

/// What became of a call handed to a worker.
#[derive(Debug)]
pub enum Ended {
    /// The call was handed to another incarnation and did not run.
    NotTaken,
    /// The handler ran and ended so; after a violation, the owner's
    /// on_failure decided what follows.
    Ran(Completion, Option<Supervision>),
}

/// The owner's on_failure, run on the worker after a violation and before
/// the exposure answers it.
pub type OnFailure = Arc<dyn Fn(&str) -> Supervision + Send + Sync>;

struct Job {
    exposure: ExposureIndex,
    member: String,
    dispatch: Dispatch,
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

impl Worker {
    /// Starts `receiver` on a thread of its own named `name`. Each finished
    /// call is sent on `done`, then `wake` is called so the loop looks.
    #[allow(clippy::too_many_arguments)]
    pub fn spawn(
        id: usize,
        name: &str,
        stamp: u64,
        mut receiver: Box<dyn Receiver + Send>,
        on_failure: OnFailure,
        done: mpsc::Sender<Completed>,
        wake: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<Worker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let thread_name = format!("receiver {name}");
        let owner = name.to_owned();
        thread::Builder::new().name(thread_name).spawn(move || {
            for job in rx {
                let d = job.dispatch;
                // A call handed to another incarnation is not run by this
                // one; the loop reports it not taken.
                let ended = if d.stamp != stamp {
                    Ended::NotTaken
                } else {
                    match receiver.call(&job.member, &d.payload, &d.context) {
                        Completion::Violated => {
                            Ended::Ran(Completion::Violated, Some(on_failure(&owner)))
                        }
                        c => Ended::Ran(c, None),
                    }
                };
                let sent = done.send(Completed {
                    worker: id,
                    exposure: job.exposure,
                    request_id: d.request_id,
                    ended,
                });
                if sent.is_err() {
                    return;
                }
                wake();
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

    /// Hands the worker a call. Returns false when the worker is gone.
    pub fn hand(&self, exposure: ExposureIndex, member: String, dispatch: Dispatch) -> bool {
        self.jobs
            .send(Job {
                exposure,
                member,
                dispatch,
            })
            .is_ok()
    }
}
