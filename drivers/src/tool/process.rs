//! One implementation process behind a [`ToolConn`] machine.
//!
//! Three threads per running process: one reads standard output into the
//! machine, one drains standard error into a bounded buffer that is kept
//! (never mixed into the protocol), and one writes what the machine hands
//! out to standard input, reporting how much was written, and acts on the
//! machine's timer. The machine asks for the process to be started
//! ([`ConnEvent::Start`]) when a call or a describe needs it, and so a
//! process that ends is started again for the next call. Each start is a
//! new generation; threads of an older one only finish.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use limen_core::flow::tool::{
    split_command, Call, CallKey, ConnEvent, Described, Outcome, SendError, ToolConn,
};
use limen_core::Timestamp;
use mio::unix::pipe::Sender;
use mio::{Events, Interest, Poll, Token};

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
        })
    }

    /// A program and its arguments.
    pub fn new(program: &str, args: &[&str]) -> Spawn {
        Spawn {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            dir: None,
        }
    }
}

thread_local! {
    /// A sending thread's list of calls being sent, kept between sends.
    static BATCH: std::cell::RefCell<Vec<Call>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Called once per call with its outcome, on a driver thread.
pub type OnClosed = Box<dyn Fn(CallKey, Outcome) + Send + Sync>;

struct Inner {
    conn: Box<dyn ToolConn + Send>,
    spawn: Spawn,
    generation: u64,
    child: Option<Child>,
    /// The process's standard input (non-blocking), when no thread is
    /// writing with it.
    stdin: Option<Sender>,
    /// Bytes handed out by the machine and not yet written.
    unwritten: Vec<u8>,
    /// A thread is writing with `stdin`: what it wrote is not yet all
    /// reported, so the process's end waits for it.
    writing: bool,
    /// The latest describe result and how many there have been.
    described: (u64, Option<Result<Described, String>>),
    stderr: VecDeque<u8>,
    log: VecDeque<String>,
    starts: u64,
    closed: bool,
    /// Outcomes to hand to `on_closed` once the lock is released.
    outcomes: Vec<(CallKey, Outcome)>,
    /// Threads waiting on `settled`: a notify is a system call even with
    /// no one waiting, so it is made only when someone is.
    settling: usize,
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
    on_closed: OnClosed,
}

/// An implementation process, started and restarted as its machine asks.
pub struct Process {
    shared: Arc<Shared>,
}

impl Process {
    /// A process run with `spawn`, spoken to through `conn`; `on_closed`
    /// receives each call's outcome. Nothing starts until a call or a
    /// describe needs it.
    pub fn new(spawn: Spawn, conn: Box<dyn ToolConn + Send>, on_closed: OnClosed) -> Process {
        Process {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    conn,
                    spawn,
                    generation: 0,
                    child: None,
                    stdin: None,
                    unwritten: Vec::new(),
                    writing: false,
                    described: (0, None),
                    stderr: VecDeque::new(),
                    log: VecDeque::new(),
                    starts: 0,
                    closed: false,
                    outcomes: Vec::new(),
                    settling: 0,
                }),
                wake: Condvar::new(),
                settled: Condvar::new(),
                base: Instant::now(),
                on_closed,
            }),
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
        let outcomes = std::mem::take(&mut inner.outcomes);
        drop(inner);
        deliver(&self.shared, outcomes);
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

    /// Sends a call; its outcome goes to `on_closed`.
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
        // Written from the sending thread when no write is under way (so a
        // call costs no hand-off to the writer); else the writer that is
        // writing takes it along.
        let generation = inner.generation;
        let stdin = inner.stdin.take();
        inner.writing |= stdin.is_some();
        let out = stdin.as_ref().map(|_| take_output(&mut inner));
        let outcomes = std::mem::take(&mut inner.outcomes);
        drop(inner);
        deliver(&self.shared, outcomes);
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
        let outcomes = std::mem::take(&mut inner.outcomes);
        drop(inner);
        deliver(&self.shared, outcomes);
    }

    /// Closes a call without an outcome: a later reply is dropped.
    pub fn abandon(&self, key: &CallKey) {
        self.shared.lock().conn.abandon(key);
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
        inner.conn.handle_exit(now);
        pump(&self.shared, &mut inner);
        let outcomes = std::mem::take(&mut inner.outcomes);
        drop(inner);
        deliver(&self.shared, outcomes);
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

/// Hands outcomes to `on_closed`, with no lock held (so a caller woken by
/// one can send its next call at once).
fn deliver(shared: &Shared, outcomes: Vec<(CallKey, Outcome)>) {
    for (key, outcome) in outcomes {
        (shared.on_closed)(key, outcome);
    }
}

/// [`deliver`] from a list that is kept (emptied, its room left for the
/// next outcomes).
fn deliver_from(shared: &Shared, outcomes: &mut Vec<(CallKey, Outcome)>) {
    for (key, outcome) in outcomes.drain(..) {
        (shared.on_closed)(key, outcome);
    }
}

/// Acts on every event the machine has.
fn drain(shared: &Arc<Shared>, inner: &mut Inner) {
    while let Some(event) = inner.conn.poll_event() {
        match event {
            ConnEvent::Start => start(shared, inner),
            ConnEvent::Stop => {
                if let Some(child) = inner.child.as_mut() {
                    let _ = child.kill();
                }
            }
            ConnEvent::Described(result) => {
                if let Err(why) = &result {
                    note(inner, format!("describe failed: {why}"));
                }
                inner.described = (inner.described.0 + 1, Some(result));
                settle(shared, inner);
            }
            ConnEvent::Closed { key, outcome } => inner.outcomes.push((key, outcome)),
            ConnEvent::Dropped(why) => note(inner, why),
        }
    }
}

fn note(inner: &mut Inner, line: String) {
    if inner.log.len() == LOG_KEPT {
        inner.log.pop_front();
    }
    inner.log.push_back(line);
}

fn start(shared: &Arc<Shared>, inner: &mut Inner) {
    let now = shared.now();
    if inner.closed {
        inner
            .conn
            .handle_start_failed(now, "the host is shutting down");
        return;
    }
    let mut command = Command::new(&inner.spawn.program);
    command
        .args(&inner.spawn.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &inner.spawn.dir {
        command.current_dir(dir);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let why = format!("`{}`: {e}", inner.spawn.program);
            inner.conn.handle_start_failed(now, &why);
            return;
        }
    };
    inner.generation += 1;
    inner.starts += 1;
    let generation = inner.generation;
    let (Some(stdout), Some(stderr), Some(stdin)) =
        (child.stdout.take(), child.stderr.take(), child.stdin.take())
    else {
        let _ = child.kill();
        inner
            .conn
            .handle_start_failed(now, "its pipes could not be opened");
        return;
    };
    // Non-blocking, so a caller never waits on a full pipe: what does not
    // fit is left to the writer thread, which waits for room.
    let mut stdin = Sender::from(stdin);
    let poll = Poll::new().and_then(|poll| {
        stdin.set_nonblocking(true)?;
        poll.registry()
            .register(&mut stdin, Token(0), Interest::WRITABLE)?;
        Ok(poll)
    });
    let poll = match poll {
        Ok(poll) => poll,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            inner
                .conn
                .handle_start_failed(now, &format!("its standard input: {e}"));
            return;
        }
    };
    // Named, so a profile or a debugger tells them apart.
    let threads = {
        let (s1, s2, s3) = (shared.clone(), shared.clone(), shared.clone());
        thread::Builder::new()
            .name("tool stdout".into())
            .spawn(move || read_stdout(s1, generation, stdout))
            .and_then(|_| {
                thread::Builder::new()
                    .name("tool stderr".into())
                    .spawn(move || drain_stderr(s2, stderr))
            })
            .and_then(|_| {
                thread::Builder::new()
                    .name("tool stdin".into())
                    .spawn(move || write_stdin(s3, generation, poll))
            })
    };
    if let Err(e) = threads {
        // A thread that did start sees a newer generation and ends.
        inner.generation += 1;
        let _ = child.kill();
        let _ = child.wait();
        inner
            .conn
            .handle_start_failed(now, &format!("its threads could not be started: {e}"));
        return;
    }
    inner.child = Some(child);
    inner.stdin = Some(stdin);
    inner.unwritten.clear();
    inner.writing = false;
    inner.conn.handle_started(now);
}

fn read_stdout(shared: Arc<Shared>, generation: u64, mut stdout: impl Read) {
    let mut buf = vec![0u8; 64 << 10];
    // Swapped with the shared list each time, so neither is reallocated.
    let mut outcomes = Vec::new();
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Fed a few lines at a time, the lock let go between them: a caller
        // woken by an outcome sends its next call while the rest are read.
        let mut data = &buf[..n];
        while !data.is_empty() {
            let cut = piece(data, 8);
            let mut inner = shared.lock();
            if inner.generation != generation {
                return;
            }
            let now = shared.now();
            inner.conn.handle_data(now, &data[..cut]);
            drain(&shared, &mut inner);
            if inner.conn.wants_write() {
                shared.wake.notify_all();
            }
            std::mem::swap(&mut inner.outcomes, &mut outcomes);
            drop(inner);
            deliver_from(&shared, &mut outcomes);
            data = &data[cut..];
        }
    }
    // Standard output is closed: the process is done speaking. It is
    // ended (if it has not ended by itself) and reaped, once a write under
    // way has said how much it wrote (a call that reached the process is
    // Unknown, not NotRun).
    let child = {
        let mut inner = shared.lock();
        let deadline = Instant::now() + Duration::from_secs(5);
        while inner.writing && inner.generation == generation && Instant::now() < deadline {
            inner.settling += 1;
            inner = shared
                .settled
                .wait_timeout(inner, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
            inner.settling -= 1;
        }
        if inner.generation != generation {
            return;
        }
        inner.stdin = None;
        inner.child.take()
    };
    if let Some(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut inner = shared.lock();
    if inner.generation != generation {
        return;
    }
    inner.generation += 1;
    let now = shared.now();
    inner.conn.handle_exit(now);
    pump(&shared, &mut inner);
    let outcomes = std::mem::take(&mut inner.outcomes);
    drop(inner);
    deliver(&shared, outcomes);
}

/// The length of the first `lines` lines of `data` (all of it if fewer).
fn piece(data: &[u8], lines: usize) -> usize {
    let mut end = 0;
    for _ in 0..lines {
        match memchr::memchr(b'\n', &data[end..]) {
            Some(nl) => end += nl + 1,
            None => return data.len(),
        }
    }
    end
}

fn drain_stderr(shared: Arc<Shared>, mut stderr: impl Read) {
    let mut buf = vec![0u8; 8 << 10];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            break;
        }
        let mut inner = shared.lock();
        inner.stderr.extend(&buf[..n]);
        let excess = inner.stderr.len().saturating_sub(STDERR_KEPT);
        inner.stderr.drain(..excess);
    }
}

/// Writes what the machine hands out, reports what was written, and runs
/// the machine's timer: the writer of last resort, for output queued by
/// the reader, or that did not fit the pipe when it was sent.
fn write_stdin(shared: Arc<Shared>, generation: u64, mut poll: Poll) {
    let mut events = Events::with_capacity(4);
    loop {
        let stdin = {
            let mut inner = shared.lock();
            loop {
                if inner.generation != generation {
                    return;
                }
                let now = shared.now();
                if inner.conn.poll_timeout().is_some_and(|t| now >= t) {
                    inner.conn.handle_timeout(now);
                    pump(&shared, &mut inner);
                    let outcomes = std::mem::take(&mut inner.outcomes);
                    drop(inner);
                    deliver(&shared, outcomes);
                    inner = shared.lock();
                    continue;
                }
                if inner.stdin.is_some()
                    && (!inner.unwritten.is_empty() || inner.conn.wants_write())
                {
                    break;
                }
                let wait = inner
                    .conn
                    .poll_timeout()
                    .map_or(Duration::from_secs(1), |t| {
                        Duration::from_nanos(t.saturating_sub(now)).max(Duration::from_millis(1))
                    });
                inner = shared
                    .wake
                    .wait_timeout(inner, wait)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            match inner.stdin.take() {
                Some(stdin) => {
                    inner.writing = true;
                    stdin
                }
                None => continue,
            }
        };
        if flush(&shared, generation, stdin) == Flushed::Full {
            // Wait for room (or a while, to look at the timer again).
            let _ = poll.poll(&mut events, Some(Duration::from_millis(100)));
        }
    }
}

/// How a [`flush`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flushed {
    /// Everything was written.
    Done,
    /// The pipe is full: the rest waits for the writer thread.
    Full,
    /// The process no longer reads (or a newer one runs).
    Gone,
}

/// What is to be written: what did not fit the pipe last time, then what
/// the machine hands out.
fn take_output(inner: &mut Inner) -> Vec<u8> {
    let mut out = std::mem::take(&mut inner.unwritten);
    inner.conn.poll_transmit(&mut out);
    out
}

/// Writes what the machine hands out with `stdin` (taken out of the shared
/// state, which says a write is under way) until it is all written or the
/// pipe is full, reporting what was written, then puts it back.
fn flush(shared: &Arc<Shared>, generation: u64, stdin: Sender) -> Flushed {
    let out = {
        let mut inner = shared.lock();
        if inner.generation != generation {
            return Flushed::Gone;
        }
        take_output(&mut inner)
    };
    write_out(shared, generation, stdin, out)
}

/// Writes `out`, then whatever the machine hands out meanwhile, with
/// `stdin`. Written outside the lock (a full pipe must not stop replies
/// from being read), and the lock taken once per write, to report it and
/// take what came since: the reader of replies needs the same lock.
fn write_out(
    shared: &Arc<Shared>,
    generation: u64,
    mut stdin: Sender,
    mut out: Vec<u8>,
) -> Flushed {
    loop {
        if out.is_empty() {
            // Output queued since `out` was taken (a reader's answer) would
            // otherwise wait for the writer thread's next look.
            let mut inner = shared.lock();
            if inner.generation != generation {
                return Flushed::Gone;
            }
            if inner.conn.poll_transmit(&mut out) == 0 {
                return put_back(shared, &mut inner, generation, stdin, out, Flushed::Done);
            }
            continue;
        }
        match stdin.write(&out) {
            Ok(0) => return gone(shared, generation),
            Ok(n) => {
                out.drain(..n);
                // Reported as it goes: a call whose text reached the pipe is
                // Unknown if the process ends, whatever follows it.
                let mut inner = shared.lock();
                if inner.generation != generation {
                    return Flushed::Gone;
                }
                inner.conn.handle_sent(n);
                if out.is_empty() && inner.conn.poll_transmit(&mut out) == 0 {
                    return put_back(shared, &mut inner, generation, stdin, out, Flushed::Done);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut inner = shared.lock();
                // The writer thread waits for room.
                shared.wake.notify_all();
                return put_back(shared, &mut inner, generation, stdin, out, Flushed::Full);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // The process no longer reads; the reader sees it end.
            Err(_) => return gone(shared, generation),
        }
    }
}

/// Ends a write: `stdin` and what is left of `out` back in the shared
/// state, the write no longer under way.
fn put_back(
    shared: &Shared,
    inner: &mut Inner,
    generation: u64,
    stdin: Sender,
    out: Vec<u8>,
    how: Flushed,
) -> Flushed {
    if inner.generation != generation {
        return Flushed::Gone;
    }
    inner.unwritten = out;
    inner.stdin = Some(stdin);
    inner.writing = false;
    // What waits for the write to be reported waits on `settled`.
    settle(shared, inner);
    how
}

/// Ends a write to a process that no longer reads.
fn gone(shared: &Shared, generation: u64) -> Flushed {
    let mut inner = shared.lock();
    if inner.generation == generation {
        inner.writing = false;
        settle(shared, &inner);
    }
    Flushed::Gone
}
