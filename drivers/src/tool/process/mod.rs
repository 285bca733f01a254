//! One implementation process behind a [`ToolConn`] machine.
//!
//! Standard error is drained by a thread into a bounded buffer that is kept
//! (never mixed into the protocol); a writer thread writes what the machine
//! hands out to standard input when the thread that sent it could not
//! (`write`), reporting how much was written, and acts on the machine's
//! timer. Standard output is read into the machine one of two ways
//! (`read`), chosen when the process is made:
//!
//! - **callback** ([`Process::new`]): a thread of its own reads it and hands
//!   each outcome to `on_closed` as it comes;
//! - **queued** ([`Process::queued`]): outcomes wait in a queue, and the
//!   caller takes them with [`Process::wait`], which reads standard output
//!   on the caller's thread. A host that sends its calls and waits for
//!   their outcomes from one thread (a batch, a command-line call, an event
//!   loop of its own) trades no call or outcome between threads this way.
//!
//! The machine asks for the process to be started ([`HostEvent::Start`])
//! when a call or a describe needs it, and so a process that ends is
//! started again for the next call. Each start is a new generation; threads
//! and readers of an older one only finish.

mod read;
mod write;

use std::collections::VecDeque;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{
    split_command, Call, CallKey, Described, HostEvent, Outcome, SendError, ToolConn,
};
use limen_core::Timestamp;
use mio::unix::pipe::Sender;
use mio::{Interest, Poll, Token};

use read::{read_or_wait, read_stdout, Reader};
use write::{drain_stderr, take_output, write_out, write_stdin};

/// The most standard error kept, in bytes: the latest part.
pub const STDERR_KEPT: usize = 64 << 10;
/// The most log lines kept.
const LOG_KEPT: usize = 256;

/// How to start the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spawn {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (the host's when `None`).
    pub dir: Option<String>,
    /// Variables set in its environment, beside the host's.
    pub env: Vec<(String, String)>,
}

impl Spawn {
    /// From a command line split as [`split_command`] does.
    pub fn from_command_line(line: &str, dir: Option<String>) -> Result<Spawn, String> {
        let mut words = split_command(line)?.into_iter();
        let program = words.next().ok_or("the command line is empty")?;
        Ok(Spawn {
            program,
            args: words.collect(),
            dir,
            env: Vec::new(),
        })
    }

    /// A program and its arguments.
    pub fn new(program: &str, args: &[&str]) -> Spawn {
        Spawn {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            dir: None,
            env: Vec::new(),
        }
    }
}

thread_local! {
    /// A sending thread's list of calls being sent, kept between sends.
    static BATCH: std::cell::RefCell<Vec<Call>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Called once per call with its outcome, on a driver thread.
pub type OnClosed = Box<dyn Fn(CallKey, Outcome) + Send + Sync>;

/// How outcomes reach whoever sent the calls.
enum Delivery {
    /// Handed to the callback by the thread that reads standard output.
    Callback(OnClosed),
    /// Queued for [`Process::wait`], which reads standard output itself.
    Queued,
}

struct Inner {
    conn: Box<dyn ToolConn + Send>,
    spawn: Spawn,
    generation: u64,
    child: Option<Child>,
    /// The process's standard input (non-blocking), when no thread is
    /// writing with it.
    stdin: Option<Sender>,
    /// Bytes of the machine's pending output copied out and not yet
    /// written, when no thread is writing: the front of what it holds.
    unwritten: Vec<u8>,
    /// How many bytes at the front of the machine's pending output were
    /// copied out to be written (`unwritten`, or the write under way): the
    /// rest is what it queued since. A write outside the lock needs its own
    /// copy; the machine is told only what was written.
    held: usize,
    /// A thread is writing with `stdin`: what it wrote is not yet all
    /// reported, so the process's end waits for it.
    writing: bool,
    /// The latest describe result and how many there have been.
    described: (u64, Option<Result<Described, String>>),
    stderr: VecDeque<u8>,
    log: VecDeque<String>,
    starts: u64,
    closed: bool,
    /// Outcomes to hand to `on_closed` once the lock is released, or
    /// queued for [`Process::wait`].
    outcomes: Vec<(CallKey, Outcome)>,
    /// Queued delivery: standard output, when no thread is reading it.
    reader: Option<Reader>,
    /// Threads waiting on `settled`: a notify is a system call even with
    /// no one waiting, so it is made only when someone is.
    settling: usize,
    /// The time the writer thread sleeps until on `wake` (the machine's
    /// timer then; `Timestamp::MAX` with none), or 0 when it is not
    /// sleeping: a call sent whose reply deadline comes sooner wakes it,
    /// where a send otherwise wakes no one.
    writer_sleeps_until: Timestamp,
}

struct Shared {
    inner: Mutex<Inner>,
    /// Wakes the writer thread: there is output to write, a timer, or a
    /// change of generation.
    wake: Condvar,
    /// Wakes a describe waiting for its result, and the reader of an ended
    /// process waiting for a write under way to report: kept apart from
    /// `wake` so that a call sent, written and reported wakes no one.
    settled: Condvar,
    base: Instant,
    delivery: Delivery,
}

/// An implementation process, started and restarted as its machine asks.
pub struct Process {
    shared: Arc<Shared>,
}

impl Process {
    /// A process run with `spawn`, spoken to through `conn`; `on_closed`
    /// receives each call's outcome, on the thread that reads the process's
    /// output. Nothing starts until a call or a describe needs it.
    pub fn new(spawn: Spawn, conn: Box<dyn ToolConn + Send>, on_closed: OnClosed) -> Process {
        Process::with_delivery(spawn, conn, Delivery::Callback(on_closed))
    }

    /// A process run with `spawn`, spoken to through `conn`, whose outcomes
    /// are queued for [`Process::wait`]: no thread reads its output but the
    /// one that waits. Nothing starts until a call or a describe needs it.
    ///
    /// Its output is read only while someone waits, so a host that sends
    /// and never waits leaves the process blocked once its output pipe is
    /// full (and the calls sent meanwhile queued in this process, as for a
    /// process that stops reading); the end of a process is likewise seen
    /// by the next wait, or by the next send that finds its input closed.
    pub fn queued(spawn: Spawn, conn: Box<dyn ToolConn + Send>) -> Process {
        Process::with_delivery(spawn, conn, Delivery::Queued)
    }

    fn with_delivery(spawn: Spawn, conn: Box<dyn ToolConn + Send>, delivery: Delivery) -> Process {
        Process {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    conn,
                    spawn,
                    generation: 0,
                    child: None,
                    stdin: None,
                    unwritten: Vec::new(),
                    held: 0,
                    writing: false,
                    described: (0, None),
                    stderr: VecDeque::new(),
                    log: VecDeque::new(),
                    starts: 0,
                    closed: false,
                    outcomes: Vec::new(),
                    reader: None,
                    settling: 0,
                    writer_sleeps_until: 0,
                }),
                wake: Condvar::new(),
                settled: Condvar::new(),
                base: Instant::now(),
                delivery,
            }),
        }
    }

    /// Queued delivery: moves the outcomes that have come into `out`
    /// (appending), reading the process's output on this thread until at
    /// least one comes or `timeout` passes; returns how many. Returns 0 at
    /// once when no call is open, and always under callback delivery
    /// (outcomes go to `on_closed` there). Several threads may wait: one
    /// reads while the others wait for it.
    pub fn wait(&self, out: &mut Vec<(CallKey, Outcome)>, timeout: Duration) -> usize {
        if !matches!(self.shared.delivery, Delivery::Queued) {
            return 0;
        }
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            // The machine's timer runs here too: a call closed at its
            // reply deadline is an outcome this wait must see, not one the
            // writer thread leaves queued until the read below ends.
            let now = self.shared.now();
            if inner.conn.poll_timeout().is_some_and(|t| now >= t) {
                inner.conn.handle_timeout(now);
                pump(&self.shared, &mut inner);
            }
            if !inner.outcomes.is_empty() {
                let n = inner.outcomes.len();
                out.append(&mut inner.outcomes);
                return n;
            }
            if inner.conn.open_calls() == 0 || Instant::now() >= deadline {
                return 0;
            }
            // Read until the wait's end or the machine's next deadline,
            // whichever comes first.
            let until = inner
                .conn
                .poll_timeout()
                .and_then(|t| self.shared.base.checked_add(Duration::from_nanos(t)))
                .map_or(deadline, |t| t.min(deadline));
            inner = read_or_wait(&self.shared, inner, until);
        }
    }

    /// The implementation's describe, starting the process if needed,
    /// waiting at most `timeout` (the machine's own describe timeout
    /// applies too).
    pub fn describe(&self, timeout: Duration) -> Result<Described, String> {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        let seen = inner.described.0;
        let now = self.shared.now();
        inner.conn.describe(now);
        pump(&self.shared, &mut inner);
        release(&self.shared, inner);
        let mut inner = self.shared.lock();
        loop {
            if inner.described.0 > seen {
                if let Some(result) = &inner.described.1 {
                    return result.clone();
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "did not describe itself within {} ms",
                    timeout.as_millis()
                ));
            }
            if let Delivery::Queued = self.shared.delivery {
                // No thread reads the answer but this one (what else it
                // reads waits in the queue).
                inner = read_or_wait(&self.shared, inner, deadline);
                continue;
            }
            inner.settling += 1;
            inner = self
                .shared
                .settled
                .wait_timeout(inner, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
            inner.settling -= 1;
        }
    }

    /// Sends a call; its outcome goes to `on_closed`, or to the queue.
    pub fn send(&self, call: Call) -> Result<(), SendError> {
        self.send_all(std::iter::once(call)).map(|_| ())
    }

    /// Sends calls, written together; returns how many were taken before
    /// the first refused one (whose error is returned).
    pub fn send_all(&self, calls: impl IntoIterator<Item = Call>) -> Result<usize, SendError> {
        // Made before the lock is taken (the reader needs it for replies),
        // into a list this thread keeps from one send to the next: a batch
        // of calls is kilobytes, and allocating it each time cost more than
        // the rest of the send. Taken out of its cell, so a send made from
        // `on_closed` while this one delivers finds the cell usable.
        let mut batch = BATCH.with(|b| std::mem::take(&mut *b.borrow_mut()));
        batch.extend(calls);
        let mut inner = self.shared.lock();
        let now = self.shared.now();
        let mut taken = 0;
        let mut refused = None;
        let mut calls = batch.drain(..);
        for call in calls.by_ref() {
            if let Err(e) = inner.conn.send_call(now, call) {
                refused = Some(e);
                break;
            }
            taken += 1;
        }
        drop(calls);
        BATCH.with(|b| {
            let mut cell = b.borrow_mut();
            if cell.capacity() < batch.capacity() {
                *cell = batch;
            }
        });
        drain(&self.shared, &mut inner);
        // A deadline sooner than the writer's sleep (the first call out,
        // or the first since a describe's) is one only it acts on.
        if inner
            .conn
            .poll_timeout()
            .is_some_and(|t| t < inner.writer_sleeps_until)
        {
            inner.writer_sleeps_until = 0;
            self.shared.wake.notify_all();
        }
        // Written from the sending thread when no write is under way (so a
        // call costs no hand-off to the writer); else the writer that is
        // writing takes it along.
        let generation = inner.generation;
        let stdin = inner.stdin.take();
        inner.writing |= stdin.is_some();
        let out = stdin.as_ref().map(|_| take_output(&mut inner));
        release(&self.shared, inner);
        if let (Some(stdin), Some(out)) = (stdin, out) {
            write_out(&self.shared, generation, stdin, out);
        }
        match refused {
            Some(e) => Err(e),
            None => Ok(taken),
        }
    }

    /// Asks the implementation to stop work on a call.
    pub fn cancel(&self, key: &CallKey) {
        let mut inner = self.shared.lock();
        let now = self.shared.now();
        inner.conn.cancel(now, key);
        pump(&self.shared, &mut inner);
        release(&self.shared, inner);
    }

    /// Closes a call without an outcome: a later reply is dropped.
    pub fn abandon(&self, key: &CallKey) {
        let now = self.shared.now();
        self.shared.lock().conn.abandon(now, key);
    }

    /// The latest part of what the process wrote to standard error, over
    /// every time it ran.
    pub fn stderr(&self) -> Vec<u8> {
        self.shared.lock().stderr.iter().copied().collect()
    }

    /// What the machine dropped or noted, latest last.
    pub fn log(&self) -> Vec<String> {
        self.shared.lock().log.iter().cloned().collect()
    }

    /// How many times the process has been started.
    pub fn starts(&self) -> u64 {
        self.shared.lock().starts
    }

    /// The process id of the running process, if one runs.
    pub fn pid(&self) -> Option<u32> {
        self.shared.lock().child.as_ref().map(Child::id)
    }

    /// How many calls are open.
    pub fn open_calls(&self) -> usize {
        self.shared.lock().conn.open_calls()
    }

    /// Ends the process (its open calls close as a process that ends
    /// closes them) and starts none again.
    pub fn shutdown(&self) {
        let child = {
            let mut inner = self.shared.lock();
            inner.closed = true;
            inner.stdin = None;
            inner.child.take()
        };
        self.shared.wake.notify_all();
        self.shared.settled.notify_all();
        if let Some(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut inner = self.shared.lock();
        let now = self.shared.now();
        inner.generation += 1;
        inner.conn.handle_eof(now);
        forget_output(&mut inner);
        pump(&self.shared, &mut inner);
        inner.reader = None;
        settle(&self.shared, &inner);
        release(&self.shared, inner);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Timestamp {
        self.base.elapsed().as_nanos() as Timestamp
    }
}

/// Acts on every event the machine has, then wakes the writer (not on
/// the path of a call and its reply, so it wakes it unasked).
fn pump(shared: &Arc<Shared>, inner: &mut Inner) {
    drain(shared, inner);
    shared.wake.notify_all();
}

/// Wakes the threads waiting on `settled`, if any.
fn settle(shared: &Shared, inner: &Inner) {
    if inner.settling > 0 {
        shared.settled.notify_all();
    }
}

/// Lets the lock go, then hands the outcomes that came to `on_closed`
/// (callback delivery: with no lock held, so a caller woken by one can send
/// its next call at once), or leaves them queued and wakes whoever waits
/// for them (queued delivery).
fn release(shared: &Shared, mut inner: MutexGuard<'_, Inner>) {
    match &shared.delivery {
        Delivery::Callback(on_closed) => {
            if inner.outcomes.is_empty() {
                return;
            }
            let outcomes = std::mem::take(&mut inner.outcomes);
            drop(inner);
            for (key, outcome) in outcomes {
                on_closed(key, outcome);
            }
        }
        Delivery::Queued => {
            if !inner.outcomes.is_empty() {
                settle(shared, &inner);
            }
        }
    }
}

/// Callback delivery: hands `outcomes` to `on_closed` from a list that is
/// kept (emptied, its room left for the next outcomes).
fn deliver_from(shared: &Shared, outcomes: &mut Vec<(CallKey, Outcome)>) {
    if let Delivery::Callback(on_closed) = &shared.delivery {
        for (key, outcome) in outcomes.drain(..) {
            on_closed(key, outcome);
        }
    }
}

/// Acts on every event the machine has.
fn drain(shared: &Arc<Shared>, inner: &mut Inner) {
    while let Some(event) = inner.conn.poll_event() {
        match event {
            HostEvent::Start => start(shared, inner),
            HostEvent::Stop => {
                if let Some(child) = inner.child.as_mut() {
                    let _ = child.kill();
                }
            }
            HostEvent::Described(result) => {
                if let Err(why) = &result {
                    note(inner, format!("describe failed: {why}"));
                }
                inner.described = (inner.described.0 + 1, Some(result));
                settle(shared, inner);
            }
            HostEvent::Closed { key, outcome } => inner.outcomes.push((key, outcome)),
            HostEvent::Dropped(why) => note(inner, why),
        }
    }
}

/// The machine's output was emptied (a process started or ended): nothing
/// of it is held for a write any more.
fn forget_output(inner: &mut Inner) {
    inner.unwritten.clear();
    inner.held = 0;
}

fn note(inner: &mut Inner, line: String) {
    if inner.log.len() == LOG_KEPT {
        inner.log.pop_front();
    }
    inner.log.push_back(line);
}

/// The command that starts `spawn`'s process, its three standard streams
/// piped: one place for every host of a process (this one, and the
/// loop-driven receiver of `serve/piped.rs`).
pub(crate) fn command(spawn: &Spawn) -> Command {
    let mut command = Command::new(&spawn.program);
    command
        .args(&spawn.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spawn.dir {
        command.current_dir(dir);
    }
    command.envs(spawn.env.iter().map(|(k, v)| (k, v)));
    command
}

fn start(shared: &Arc<Shared>, inner: &mut Inner) {
    let now = shared.now();
    if inner.closed {
        inner
            .conn
            .handle_start_failed(now, "the host is shutting down");
        return;
    }
    let mut child = match command(&inner.spawn).spawn() {
        Ok(child) => child,
        Err(e) => {
            let why = format!("`{}`: {e}", inner.spawn.program);
            inner.conn.handle_start_failed(now, &why);
            return;
        }
    };
    inner.generation += 1;
    inner.starts += 1;
    match attach(shared, inner.generation, &mut child) {
        Ok((stdin, reader)) => {
            inner.child = Some(child);
            inner.stdin = Some(stdin);
            inner.reader = reader;
            forget_output(inner);
            inner.writing = false;
            inner.conn.handle_started(now);
        }
        Err(why) => {
            // A thread that did start sees a newer generation and ends.
            inner.generation += 1;
            let _ = child.kill();
            let _ = child.wait();
            inner.conn.handle_start_failed(now, &why);
        }
    }
}

/// Takes a started child's pipes: standard input made non-blocking (so a
/// caller never waits on a full pipe: what does not fit is left to the
/// writer thread, which waits for room), the threads of generation
/// `generation` started, and standard output given to a thread of its own
/// or kept as the reader a waiting caller takes. `Err` says what failed.
fn attach(
    shared: &Arc<Shared>,
    generation: u64,
    child: &mut Child,
) -> Result<(Sender, Option<Reader>), String> {
    let (Some(stdout), Some(stderr), Some(stdin)) =
        (child.stdout.take(), child.stderr.take(), child.stdin.take())
    else {
        return Err("its pipes could not be opened".into());
    };
    let mut stdin = Sender::from(stdin);
    let poll = Poll::new()
        .and_then(|poll| {
            stdin.set_nonblocking(true)?;
            poll.registry()
                .register(&mut stdin, Token(0), Interest::WRITABLE)?;
            Ok(poll)
        })
        .map_err(|e| format!("its standard input: {e}"))?;
    let (reader, stdout) = match &shared.delivery {
        Delivery::Callback(_) => (None, Some(stdout)),
        Delivery::Queued => {
            let reader =
                Reader::new(stdout, generation).map_err(|e| format!("its standard output: {e}"))?;
            (Some(reader), None)
        }
    };
    // Named, so a profile or a debugger tells them apart.
    let named = |name: &str| thread::Builder::new().name(name.into());
    let (s1, s2, s3) = (shared.clone(), shared.clone(), shared.clone());
    if let Some(stdout) = stdout {
        named("tool stdout")
            .spawn(move || read_stdout(s1, generation, stdout))
            .map_err(|e| format!("its threads could not be started: {e}"))?;
    }
    named("tool stderr")
        .spawn(move || drain_stderr(s2, stderr))
        .and_then(|_| named("tool stdin").spawn(move || write_stdin(s3, generation, poll)))
        .map_err(|e| format!("its threads could not be started: {e}"))?;
    Ok((stdin, reader))
}
