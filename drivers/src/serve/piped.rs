//! Piped receivers: a receiver instance whose handlers are a process
//! spoken to over its pipes (a Flow Tool process, `hale serve`'s
//! `command = [...]`), driven by the connection loops themselves, with no
//! thread of its own.
//!
//! A call to a worker ([`super::worker`]) that speaks to a process crosses
//! loop → owner → worker → pipe → process → pipe → worker → owner → loop,
//! one stage after another: a window of pipelined calls waits for two
//! thread hand-offs besides the process's own work (benches/RESULTS.md,
//! "hale serve with Tool processes"). Here the process's machine (a
//! sans-I/O [`ToolConn`]) is held by the exposures' owner: a call handed
//! to the receiver is encoded and written to the process's standard input
//! by the loop that holds the owner's lock (non-blocking: what does not
//! fit waits for the pipe's writable event). The process's standard error
//! and standard input are in loop 0's poll; its standard output is in the
//! poll of one loop, loop 0 at first, and moves to the loop that writes its
//! calls once that loop has written them [`FOLLOW_AFTER`] turns in a row
//! (a pipelined connection's loop), so a reply is read, decoded and
//! reported to the owner under the same lock, in the turn that read it,
//! by the loop that writes it to its caller. The process's replies are
//! the only thing that wakes the server for it.
//!
//! It keeps every guarantee of a worker: each call handed ahead carries a
//! claim, taken just before the call is written (a recalled call is never
//! written); the first call handed is claimed as it starts, then waits
//! (unclaimed calls behind it may still be recalled) for the control
//! socket's gate ([`PipedHandler::may_start`], looked at on a loop timer,
//! never a blocking wait) and for the backoff after a failure; after a
//! violation its supervision drains it starts nothing until the operator's
//! resume; on_failure runs for every violation ([`super::worker::ended`]).
//! A structural failure of the process — it ended with calls out, answered
//! what the machine could not decode or what the handler does not accept,
//! never answered within the machine's reply deadline (its timer is the
//! owner's, so a loop wakes for it) — is the server error for each call it
//! failed; no call is written to that process after it, and once its open
//! calls have closed it is ended and a new one started for the next call,
//! the receiver's next generation, after a backoff that doubles while
//! failures follow each other (a deadline on the loops' timers, not a
//! sleep).
//!
//! Every system call it makes is a non-blocking read or write of a pipe,
//! under the owner's lock (as an inline receiver's handler runs there),
//! but moving standard output to another loop's poll (two `epoll_ctl`),
//! and starting a process (a fork and exec) and reaping one that ended or
//! was killed: rare, at the first call and after a failure.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Child;
use std::sync::Arc;

use limen_core::flow::tool::{Call, CallKey, HostEvent, Outcome, ToolConn};
use limen_core::hale::runtime::{Completion, RequestId, ServedContext, Supervision};
use limen_core::Timestamp;
use mio::unix::pipe::{Receiver, Sender};
use mio::{Interest, Registry, Token};

use super::reactor::earliest;
use super::worker::{ended, take, ExposureIndex, Job, OnFailure, Report};
use crate::tool::process::{command, STDERR_KEPT};
use crate::tool::Spawn;

/// The first poll token of the piped receivers' pipes (loop 0's poll):
/// receiver `id`'s are `PIPE_BASE + id * PIPE_TOKENS + `[`STDOUT`],
/// [`STDIN`] and [`STDERR`]. Above the listeners' and the lingering
/// sockets' ranges.
pub(crate) const PIPE_BASE: usize = 1 << 42;
/// How many tokens each piped receiver takes.
pub(crate) const PIPE_TOKENS: usize = 4;
/// The token offset of a process's standard output.
const STDOUT: usize = 0;
/// The token offset of its standard input.
const STDIN: usize = 1;
/// The token offset of its standard error.
const STDERR: usize = 2;

/// The most bytes of replies read in one wake: a process that never stops
/// writing is read again in the next turn (a deadline due at once), after
/// the connections ready now.
const READ_MOST: usize = 256 << 10;
/// The size of one read of standard output.
const READ_BUF: usize = 64 << 10;
/// How often a call waiting for the control socket's gate looks at it.
const GATE_LOOK: Timestamp = 5 * MILLISECOND;
/// The first wait before a replaced process is started again.
const BACKOFF_FIRST: Timestamp = 50 * MILLISECOND;
/// The longest wait before a replaced process is started again.
const BACKOFF_MOST: Timestamp = 2_000 * MILLISECOND;
const MILLISECOND: Timestamp = 1_000_000;
/// After how many turns in a row that wrote calls from one other loop the
/// process's standard output moves to that loop's poll (two `epoll_ctl`):
/// a pipelined connection's replies are then read by the loop that writes
/// them to it, with no hop through a mailbox, while calls that come from
/// every loop by turns (HTTP) leave it where it is.
const FOLLOW_AFTER: u32 = 16;

/// What a piped receiver asks of whoever knows its protocol's calls (the
/// program's Tool receiver, `program/tool_receiver.rs`): how to start the
/// process, how a call becomes a protocol call, and how an outcome ends the
/// call. Called under the owner's lock, on a loop: each must be quick and
/// never block.
pub trait PipedHandler: Send {
    /// How the process is started.
    fn spawn(&self) -> &Spawn;

    /// The call to `member` with `payload`, as the machine sends it; `Err`
    /// says why it cannot be made (a structural failure).
    fn call(
        &mut self,
        member: &str,
        payload: &serde_json::Value,
        ctx: &ServedContext,
    ) -> Result<Call, String>;

    /// How `outcome` ends a call to `member`: its completion, or `Err` with
    /// why it is a structural failure.
    fn answer(&mut self, member: &str, outcome: Outcome) -> Result<Completion, String>;

    /// A call ended in a structural failure: told before its report is
    /// made, so the on_failure that report runs knows it.
    fn failed(&mut self);

    /// Whether a call may start now (the control socket's gate is open).
    fn may_start(&self) -> bool;

    /// The process is being replaced after the structural failures `why`;
    /// `stderr` is the last line it wrote to its standard error.
    fn replaced(&mut self, why: &str, stderr: &str);
}

/// A running process's pipes, in loop 0's poll.
struct Running {
    child: Child,
    /// Gone once the process no longer reads.
    stdin: Option<Sender>,
    stdout: Receiver,
    /// Gone at its end.
    stderr: Option<Receiver>,
}

/// A call written (or queued to be written) to the process.
struct OpenCall {
    exposure: ExposureIndex,
    request_id: RequestId,
    member: usize,
    names: Arc<[String]>,
}

/// A receiver instance whose process's pipes the loops drive. See the
/// module documentation.
pub(super) struct Piped {
    id: usize,
    name: String,
    stamp: u64,
    conn: Box<dyn ToolConn + Send>,
    handler: Box<dyn PipedHandler>,
    on_failure: OnFailure,
    /// Loop 0's poll, where standard input and standard error are
    /// registered (and standard output, until the loops' are known).
    registry: Registry,
    /// Every loop's poll, by loop id, once the server runs.
    loops: Vec<Registry>,
    /// The loop whose poll holds standard output.
    polled_by: usize,
    /// Turns in a row that wrote calls from a loop other than `polled_by`.
    streak: u32,
    /// Calls handed and not claimed yet, in the order handed.
    jobs: VecDeque<Job>,
    /// The first call handed, claimed, waiting for the gate or the
    /// backoff.
    head: Option<Job>,
    /// Calls given to the machine and not closed, by key (keys the
    /// handler makes, so a fixed hasher, as the machine's own map).
    open: HashMap<CallKey, OpenCall, limen_core::hash::Fixed>,
    /// Set after a violation its supervision drains, cleared by the
    /// resume: while set, nothing starts.
    paused: bool,
    running: Option<Running>,
    /// The structural failures of the running process: nothing more is
    /// written to it, and once its open calls have closed it is replaced.
    failed: Vec<String>,
    /// Replacements in a row, for the backoff.
    failures: u32,
    /// No process starts before this.
    not_before: Option<Timestamp>,
    /// When a call waiting for the gate looks at it again.
    gate_look: Option<Timestamp>,
    /// Standard output's read budget ran out: read again at once.
    more: bool,
    /// The latest part of what the processes wrote to standard error.
    stderr: VecDeque<u8>,
    buf: Box<[u8]>,
}

impl Piped {
    /// Receiver instance `id` of its server, named `name`, incarnation
    /// `stamp`: its process run as `handler` says and spoken to through
    /// `conn`, its pipes registered with `registry` (loop 0's poll);
    /// `on_failure` runs after a violation.
    pub(super) fn new(
        id: usize,
        name: &str,
        stamp: u64,
        conn: Box<dyn ToolConn + Send>,
        handler: Box<dyn PipedHandler>,
        on_failure: OnFailure,
        registry: Registry,
    ) -> Piped {
        Piped {
            id,
            name: name.to_owned(),
            stamp,
            conn,
            handler,
            on_failure,
            registry,
            loops: Vec::new(),
            polled_by: 0,
            streak: 0,
            jobs: VecDeque::new(),
            head: None,
            open: HashMap::default(),
            paused: false,
            running: None,
            failed: Vec::new(),
            failures: 0,
            not_before: None,
            gate_look: None,
            more: false,
            stderr: VecDeque::new(),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
        }
    }

    /// The incarnation stamp its receiver announced at birth.
    pub(super) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Every loop's poll, by loop id (the server's loops are made when it
    /// runs): standard output may move to the loop that writes the calls.
    pub(super) fn set_loops(&mut self, loops: Vec<Registry>) {
        self.loops = loops;
    }

    /// The poll that holds standard output.
    fn stdout_poll(&self) -> &Registry {
        self.loops.get(self.polled_by).unwrap_or(&self.registry)
    }

    /// Calls were written from loop `at`: after [`FOLLOW_AFTER`] turns in a
    /// row from one other loop, standard output moves to its poll.
    fn follow(&mut self, at: usize) {
        if at == self.polled_by || at >= self.loops.len() {
            self.streak = 0;
            return;
        }
        self.streak += 1;
        if self.streak < FOLLOW_AFTER {
            return;
        }
        self.streak = 0;
        let token = Token(PIPE_BASE + self.id * PIPE_TOKENS + STDOUT);
        let Some(r) = self.running.as_mut() else {
            self.polled_by = at;
            return;
        };
        let from = self.loops.get(self.polled_by).unwrap_or(&self.registry);
        let _ = from.deregister(&mut r.stdout);
        // An add reports the pipe's readiness at once: replies already
        // waiting are not missed.
        if self.loops[at]
            .register(&mut r.stdout, token, Interest::READABLE)
            .is_ok()
        {
            self.polled_by = at;
        } else if from
            .register(&mut r.stdout, token, Interest::READABLE)
            .is_err()
        {
            // Unwatched, its replies would never be read: it ends.
            let _ = r.child.kill();
        }
    }

    /// Queues a call; the owner starts it with [`Piped::run`] once the
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
        self.head.is_some() || !self.paused && !self.jobs.is_empty()
    }

    /// Starts what may start: every call handed and still its to take is
    /// given to the machine and written to the process, unless the gate is
    /// shut, a backoff runs, or the running process failed; `at` is the
    /// loop running it. Reports go to `reports`.
    pub(super) fn run(&mut self, now: Timestamp, at: usize, reports: &mut Vec<Report>) {
        if self.start_calls(now, reports) > 0 {
            self.follow(at);
        }
        self.settle(now, reports);
    }

    /// Claims and writes the calls that may start. A claimed call always
    /// runs (as a worker's and an inline receiver's do): a pause stops
    /// only the claiming.
    fn start_calls(&mut self, now: Timestamp, reports: &mut Vec<Report>) -> usize {
        if self.head.is_none() && !self.paused {
            // The first call starts: it is claimed now, as a worker claims
            // the call it starts before it waits for a gate or a backoff;
            // the calls behind it can still be taken back meanwhile.
            while let Some(job) = self.jobs.pop_front() {
                if take(&job.claim) {
                    self.head = Some(job);
                    break;
                }
            }
        }
        if self.head.is_none() || !self.failed.is_empty() {
            return 0;
        }
        if self.not_before.is_some_and(|t| now < t) {
            return 0;
        }
        self.not_before = None;
        if !self.handler.may_start() {
            self.gate_look = Some(now + GATE_LOOK);
            return 0;
        }
        self.gate_look = None;
        let mut sent = 0;
        if let Some(job) = self.head.take() {
            self.send(now, job, reports);
            sent += 1;
        }
        while !self.paused {
            let Some(job) = self.jobs.pop_front() else {
                break;
            };
            if take(&job.claim) {
                self.send(now, job, reports);
                sent += 1;
            }
        }
        sent
    }

    /// Gives one claimed call to the machine.
    fn send(&mut self, now: Timestamp, job: Job, reports: &mut Vec<Report>) {
        let Job {
            exposure,
            names,
            dispatch: d,
            ..
        } = job;
        // A call handed to another incarnation is not run by this one.
        if d.stamp != self.stamp {
            reports.push(Report::NotTaken {
                exposure,
                request_id: d.request_id,
                worker: self.id,
            });
            return;
        }
        let member = &names[d.member];
        let handler = &mut self.handler;
        let made = catch_unwind(AssertUnwindSafe(|| {
            handler.call(member, &d.payload, &d.context)
        }))
        .unwrap_or_else(|_| Err("the call could not be made (a panic)".to_owned()));
        let sent = made.and_then(|call| {
            let key = call.key.clone();
            self.conn
                .send_call(now, call)
                .map(|()| key)
                .map_err(|e| format!("not sent: {e}"))
        });
        match sent {
            Ok(key) => {
                self.open.insert(
                    key,
                    OpenCall {
                        exposure,
                        request_id: d.request_id,
                        member: d.member,
                        names,
                    },
                );
            }
            Err(why) => {
                let why = format!("`{member}`: {why}");
                self.structural(exposure, d.request_id, why, reports);
            }
        }
    }

    /// A call's structural failure: the server error for it, counted for
    /// the on_failure its report runs, and the process to be replaced.
    fn structural(
        &mut self,
        exposure: ExposureIndex,
        request_id: RequestId,
        why: String,
        reports: &mut Vec<Report>,
    ) {
        self.handler.failed();
        self.failed.push(why);
        self.report(exposure, request_id, Completion::Violated, reports);
    }

    fn report(
        &mut self,
        exposure: ExposureIndex,
        request_id: RequestId,
        completion: Completion,
        reports: &mut Vec<Report>,
    ) {
        let report = ended(
            self.id,
            &self.name,
            exposure,
            request_id,
            completion,
            &self.on_failure,
        );
        if let Report::Ended {
            supervision: Some(Supervision::Drain),
            ..
        } = report
        {
            // Paused before the report is taken, so no call handed ahead
            // starts on a receiver that drains.
            self.paused = true;
        }
        reports.push(report);
    }

    /// After any step: the machine's events acted on, a failed process
    /// replaced once its calls have closed, and what the machine queued
    /// written.
    fn settle(&mut self, now: Timestamp, reports: &mut Vec<Report>) {
        loop {
            self.events(now, reports);
            if self.failed.is_empty() || !self.open.is_empty() {
                break;
            }
            self.replace(now);
        }
        self.flush(now);
    }

    /// Acts on every event the machine has.
    fn events(&mut self, now: Timestamp, reports: &mut Vec<Report>) {
        while let Some(event) = self.conn.poll_event() {
            match event {
                HostEvent::Start => self.start(now),
                HostEvent::Stop => {
                    // Its end comes as standard output's.
                    if let Some(r) = self.running.as_mut() {
                        let _ = r.child.kill();
                    }
                }
                HostEvent::Closed { key, outcome } => {
                    let Some(open) = self.open.remove(&key) else {
                        continue;
                    };
                    let member = &open.names[open.member];
                    let handler = &mut self.handler;
                    let answered =
                        catch_unwind(AssertUnwindSafe(|| handler.answer(member, outcome)))
                            .unwrap_or_else(|_| {
                                Err("its outcome could not be read (a panic)".into())
                            });
                    match answered {
                        Ok(completion) => {
                            self.failures = 0;
                            self.report(open.exposure, open.request_id, completion, reports);
                        }
                        Err(why) => {
                            let why = format!("`{member}`: {why}");
                            self.structural(open.exposure, open.request_id, why, reports);
                        }
                    }
                }
                // A failed describe closes the calls waiting for it, each
                // with the reason; the rest is the machine's log.
                HostEvent::Described(_) | HostEvent::Dropped(_) => {}
            }
        }
    }

    /// Starts the process the machine asked for, its pipes in the poll.
    fn start(&mut self, now: Timestamp) {
        let spawn = self.handler.spawn();
        let mut child = match command(spawn).spawn() {
            Ok(child) => child,
            Err(e) => {
                let why = format!("`{}`: {e}", spawn.program);
                self.conn.handle_start_failed(now, &why);
                return;
            }
        };
        match self.attach(&mut child) {
            Ok((stdin, stdout, stderr)) => {
                self.running = Some(Running {
                    child,
                    stdin: Some(stdin),
                    stdout,
                    stderr: Some(stderr),
                });
                self.conn.handle_started(now);
            }
            Err(why) => {
                let _ = child.kill();
                let _ = child.wait();
                self.conn.handle_start_failed(now, &why);
            }
        }
    }

    /// A started child's pipes, non-blocking and registered.
    fn attach(&mut self, child: &mut Child) -> Result<(Sender, Receiver, Receiver), String> {
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("its pipes could not be opened".into());
        };
        let base = PIPE_BASE + self.id * PIPE_TOKENS;
        let mut stdin = Sender::from(stdin);
        let mut stdout = Receiver::from(stdout);
        let mut stderr = Receiver::from(stderr);
        let registered = (|| -> io::Result<()> {
            stdin.set_nonblocking(true)?;
            stdout.set_nonblocking(true)?;
            stderr.set_nonblocking(true)?;
            self.loops
                .get(self.polled_by)
                .unwrap_or(&self.registry)
                .register(&mut stdout, Token(base + STDOUT), Interest::READABLE)?;
            self.registry
                .register(&mut stdin, Token(base + STDIN), Interest::WRITABLE)?;
            self.registry
                .register(&mut stderr, Token(base + STDERR), Interest::READABLE)?;
            Ok(())
        })();
        match registered {
            Ok(()) => Ok((stdin, stdout, stderr)),
            Err(e) => {
                let _ = self.stdout_poll().deregister(&mut stdout);
                let _ = self.registry.deregister(&mut stdin);
                let _ = self.registry.deregister(&mut stderr);
                Err(format!("its pipes: {e}"))
            }
        }
    }

    /// Ends the running process, if one runs: its pipes out of the poll,
    /// killed and reaped, what it left on standard error kept.
    fn end_process(&mut self) {
        let Some(mut r) = self.running.take() else {
            return;
        };
        self.read_stderr_of(&mut r);
        let _ = self.stdout_poll().deregister(&mut r.stdout);
        if let Some(stdin) = r.stdin.as_mut() {
            let _ = self.registry.deregister(stdin);
        }
        if let Some(stderr) = r.stderr.as_mut() {
            let _ = self.registry.deregister(stderr);
        }
        let _ = r.child.kill();
        let _ = r.child.wait();
    }

    /// The process ended (its standard output closed): the machine learns
    /// it, and closes the calls it had out.
    fn process_ended(&mut self, now: Timestamp) {
        self.end_process();
        self.conn.handle_eof(now);
    }

    /// Replaces a process whose calls failed structurally: ended now, and
    /// the next started for the next call, after the backoff.
    fn replace(&mut self, now: Timestamp) {
        let why = std::mem::take(&mut self.failed).join("; ");
        self.end_process();
        let stderr: Vec<u8> = self.stderr.drain(..).collect();
        let stderr = String::from_utf8_lossy(&stderr);
        let tail = stderr.trim().lines().last().unwrap_or("");
        self.handler.replaced(&why, tail);
        // Down, with nothing open: the next call asks for a start.
        self.conn.handle_eof(now);
        self.failures = self.failures.saturating_add(1);
        let wait = BACKOFF_FIRST
            .saturating_mul(1 << self.failures.min(16).saturating_sub(1))
            .min(BACKOFF_MOST);
        self.not_before = Some(now.saturating_add(wait));
    }

    /// Writes what the machine queued, as much as the pipe takes; the rest
    /// waits for its writable event.
    fn flush(&mut self, now: Timestamp) {
        let Some(stdin) = self.running.as_mut().and_then(|r| r.stdin.as_mut()) else {
            return;
        };
        loop {
            let out = self.conn.pending_output();
            if out.is_empty() {
                return;
            }
            match stdin.write(out) {
                Ok(0) => break,
                Ok(n) => self.conn.consume_output(now, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The process no longer reads: its end comes as standard
        // output's (or its calls' deadlines stop it).
        if let Some(r) = self.running.as_mut() {
            if let Some(mut stdin) = r.stdin.take() {
                let _ = self.registry.deregister(&mut stdin);
            }
        }
    }

    /// Reads the replies the process wrote, up to [`READ_MOST`].
    fn read_stdout(&mut self, now: Timestamp, reports: &mut Vec<Report>) {
        let mut budget = READ_MOST;
        loop {
            let Some(r) = self.running.as_mut() else {
                return;
            };
            match r.stdout.read(&mut self.buf) {
                Ok(0) => {
                    self.process_ended(now);
                    return;
                }
                Ok(n) => {
                    self.conn.handle_data(now, &self.buf[..n]);
                    // Reported as they are read: the first replies of a
                    // window go out while the process writes the rest.
                    self.events(now, reports);
                    // A short read emptied the pipe: what the process
                    // writes next is a new edge.
                    if n < self.buf.len() {
                        return;
                    }
                    budget = budget.saturating_sub(n);
                    if budget == 0 {
                        self.more = true;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.process_ended(now);
                    return;
                }
            }
        }
    }

    /// Keeps what the running process wrote to standard error.
    fn read_stderr(&mut self) {
        if let Some(mut r) = self.running.take() {
            self.read_stderr_of(&mut r);
            self.running = Some(r);
        }
    }

    fn read_stderr_of(&mut self, r: &mut Running) {
        let Some(stderr) = r.stderr.as_mut() else {
            return;
        };
        let mut buf = [0u8; 8 << 10];
        // A process that floods its standard error is read a bounded part
        // a wake (only the latest part is kept): what it writes next is a
        // new edge.
        let mut budget = READ_MOST;
        while budget > 0 {
            match stderr.read(&mut buf) {
                Ok(0) => {
                    if let Some(mut stderr) = r.stderr.take() {
                        let _ = self.registry.deregister(&mut stderr);
                    }
                    return;
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    self.stderr.extend(&buf[..n]);
                    let excess = self.stderr.len().saturating_sub(STDERR_KEPT);
                    self.stderr.drain(..excess);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// One of its pipes is ready (`which`: its token's offset).
    pub(super) fn on_ready(
        &mut self,
        now: Timestamp,
        which: usize,
        at: usize,
        reports: &mut Vec<Report>,
    ) {
        match which {
            STDOUT => self.read_stdout(now, reports),
            STDERR => self.read_stderr(),
            // Written by `settle`.
            _ => {}
        }
        self.run(now, at, reports);
    }

    /// When it next needs the loop's time: the machine's deadlines (a
    /// describe's, each call's reply deadline), the end of a backoff or
    /// the next look at the gate while a call waits, or at once when
    /// standard output was left unread.
    pub(super) fn poll_timeout(&self) -> Option<Timestamp> {
        let mut t = self.conn.poll_timeout();
        if self.more {
            t = earliest(t, Some(0));
        }
        if self.ready() {
            t = earliest(t, self.not_before);
            t = earliest(t, self.gate_look);
        }
        t
    }

    /// Time passes: the machine's deadlines, standard output left unread,
    /// and the calls that waited for the gate or the backoff.
    pub(super) fn handle_timeout(&mut self, now: Timestamp, at: usize, reports: &mut Vec<Report>) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        if std::mem::take(&mut self.more) {
            self.read_stdout(now, reports);
        }
        self.run(now, at, reports);
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        self.end_process();
    }
}

impl std::fmt::Debug for Piped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Piped")
            .field("name", &self.name)
            .field("stamp", &self.stamp)
            .field("open", &self.open.len())
            .finish_non_exhaustive()
    }
}
