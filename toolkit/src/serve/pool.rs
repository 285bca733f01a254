//! Calls run on a pool of threads that take turns reading: leader and
//! followers.
//!
//! Handing each call from a reading thread to a worker and its reply back
//! cost more than the call itself for the fast calls most Tools answer (a
//! wake-up, a lock taken against another thread, and the call's values
//! made on one thread and freed on another, each time). So no thread only
//! reads: whichever thread is free reads a piece of standard input, queues
//! its calls, runs them itself one at a time, writes their replies, and
//! reads the next piece, exactly as a single thread would. The other
//! threads sleep.
//!
//! A call may wait for long, and then the calls behind it, the input not
//! yet read and the replies not yet written must not wait with it. A
//! watchdog thread looks every [`HAND_OFF`] while calls run: a call queued
//! that long, or input left unread that long, wakes a sleeping thread,
//! which takes over (runs the queued calls, reads on); and replies pending
//! that long are written by the watchdog itself. So calls that wait still
//! overlap, up to the pool's size, a hand-off later; and a pool answering
//! fast calls makes no hand-off at all. The watchdog sleeps without a
//! deadline while no call runs or waits.
//!
//! The machine, the queue and who holds the input are under one lock, taken
//! for a piece, for each call taken and for each reply: with one thread
//! working, no other wants it. Output is copied out under the lock and
//! written outside it (a thread blocked on a full pipe must not stop
//! another from reading), one writer at a time, who takes along what was
//! queued meanwhile.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use limen_core::flow::tool::{CallKey, ToolkitConn, ToolkitEvent};
use limen_core::flow::Value;
use limen_core::Timestamp;

use crate::cancel::Cancel;

use super::{lock, log, pieces, read, run_call, Clock, Context, Service, PIECE_LINES, READ_BUF};

/// How long a call may wait to be started, input wait to be read, or a
/// reply wait to be written, while the threads working are busy, before
/// another thread is woken to take over (or the watchdog writes): what a
/// call that waits for long costs the calls beside it, at most.
pub const HAND_OFF: Duration = Duration::from_millis(1);

/// A call to run.
struct Job {
    tool: usize,
    key: CallKey,
    expects: Option<serde_json::Value>,
    args: Vec<Value>,
    /// When it was queued.
    queued: Timestamp,
    /// The host cancelled it while it was queued: it is not run (NotRun).
    cancelled: bool,
}

/// Standard input and what was read of it and not yet fed to the machine.
struct Input<R> {
    reader: R,
    buf: Vec<u8>,
    /// The bytes read and not yet fed: `buf[start..end]`.
    start: usize,
    end: usize,
}

struct State<R> {
    conn: ToolkitConn,
    /// The clock as the pool last read it (at each piece, each write and
    /// each look of the watchdog, so at least every [`HAND_OFF`] while
    /// calls run): the time a reply is given to the machine at. The
    /// machine has no timer, and a reading per call cost a twentieth of
    /// the call.
    now: Timestamp,
    /// The input, when no thread holds it (to read or feed it); `None`
    /// while one does, and after its end.
    input: Option<Input<R>>,
    /// When the input was last put back.
    free_since: Timestamp,
    /// The input has ended (or failed): no more calls come.
    ended: bool,
    read_error: Option<io::Error>,
    queue: VecDeque<Job>,
    /// The key of each call running and the thread running it (at most
    /// one a thread): the host's cancel trips that thread's token; a
    /// queued call's cancel marks its job. A list, not a map: a cancel is
    /// rare, and a call's start and end must not pay for hashing its key
    /// (the pipe bench measured that).
    running_calls: Vec<(CallKey, usize)>,
    /// Each thread's cancel token, the loop's copy: a thread reuses one
    /// token from call to call ([`Cancel::renew`]) and lends it to the
    /// call's [`Context`], so a call allocates none and clones none.
    tokens: Vec<Cancel>,
    /// Threads inside a call.
    running: usize,
    /// Threads waiting to be woken.
    sleeping: usize,
    /// A thread is writing (it takes along what is queued meanwhile).
    writing: bool,
    /// A write failed: the first error, and no more work.
    write_error: Option<io::Error>,
    stop: bool,
    /// The watchdog sleeps with no deadline: wake it when work comes.
    watch_idle: bool,
}

struct Pool<'s, R, W> {
    state: Mutex<State<R>>,
    /// Wakes a sleeping thread: there is work it must take over, or the
    /// end.
    wake: Condvar,
    /// Wakes the watchdog from its sleep without deadline.
    watch: Condvar,
    /// Standard output, used only by the one thread writing.
    sink: Mutex<W>,
    service: &'s dyn Service,
    clock: Clock,
}

/// Serves `conn` with `threads` threads running `service` (this one and
/// `threads - 1` more), and a watchdog.
pub(super) fn serve<R: Read + Send, W: Write + Send>(
    conn: ToolkitConn,
    service: &dyn Service,
    threads: usize,
    input: R,
    output: W,
) -> io::Result<()> {
    let pool = Pool {
        state: Mutex::new(State {
            conn,
            now: 0,
            input: Some(Input {
                reader: input,
                buf: vec![0; READ_BUF],
                start: 0,
                end: 0,
            }),
            free_since: 0,
            ended: false,
            read_error: None,
            queue: VecDeque::new(),
            running_calls: Vec::new(),
            tokens: (0..threads.max(1)).map(|_| Cancel::new()).collect(),
            running: 0,
            sleeping: 0,
            writing: false,
            write_error: None,
            stop: false,
            watch_idle: false,
        }),
        wake: Condvar::new(),
        watch: Condvar::new(),
        sink: Mutex::new(output),
        service,
        clock: Clock::new(),
    };
    thread::scope(|s| {
        for thread in 1..threads {
            let pool = &pool;
            s.spawn(move || pool.work(thread));
        }
        s.spawn(|| pool.watchdog());
        pool.work(0);
    });
    let mut copy = Vec::new();
    let mut st = pool.flush(lock(&pool.state), &mut copy);
    match (st.read_error.take(), st.write_error.take()) {
        (Some(e), _) | (None, Some(e)) => Err(e),
        (None, None) => Ok(()),
    }
}

impl<R: Read, W: Write> Pool<'_, R, W> {
    /// One thread's work, until the input has ended and no call is left
    /// to start: the queued calls first, then what is pending written, then
    /// the next piece of input; else sleep.
    fn work(&self, thread: usize) {
        let mut copy = Vec::new();
        let mut st = lock(&self.state);
        let mut token = st.tokens[thread].clone();
        loop {
            if st.stop || (st.ended && st.queue.is_empty()) {
                return;
            }
            if let Some(job) = st.queue.pop_front() {
                // The loop's copy and this one: renewed in place unless the
                // author's code kept a clone, when the copy is replaced.
                if !token.renew(2) {
                    st.tokens[thread] = token.clone();
                }
                if job.cancelled {
                    token.cancel();
                }
                let cx = Context {
                    key: job.key,
                    expects: job.expects,
                    cancel: token,
                };
                st.running += 1;
                st.running_calls.push((cx.key.clone(), thread));
                drop(st);
                let reply = run_call(self.service, job.tool, &cx, job.args);
                st = lock(&self.state);
                st.running -= 1;
                if let Some(i) = st.running_calls.iter().position(|(_, t)| *t == thread) {
                    st.running_calls.swap_remove(i);
                }
                let now = st.now;
                st.conn.reply(now, &cx.key, &reply);
                token = cx.cancel;
                continue;
            }
            // No call waits: write what is pending before this thread
            // blocks (reading, or asleep).
            if !st.writing && !st.conn.pending_output().is_empty() {
                st = self.flush(st, &mut copy);
                continue;
            }
            let Some(input) = st.input.take() else {
                st.sleeping += 1;
                st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                st.sleeping -= 1;
                continue;
            };
            st = self.feed(st, input);
        }
    }

    /// Feeds the next piece of `input` (read first if none is left,
    /// outside the lock) to the machine and queues its calls; puts the
    /// input back, or marks its end.
    fn feed<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<R>>,
        mut input: Input<R>,
    ) -> MutexGuard<'a, State<R>> {
        if input.start == input.end {
            drop(st);
            let read = read(&mut input.reader, &mut input.buf);
            st = lock(&self.state);
            match read {
                Ok(Some(n)) => (input.start, input.end) = (0, n),
                Ok(None) => {
                    let now = self.tick(&mut st);
                    st.conn.handle_eof(now);
                    self.take_events(&mut st, now);
                    return self.end(st);
                }
                Err(e) => {
                    st.read_error = Some(e);
                    return self.end(st);
                }
            }
        }
        let rest = &input.buf[input.start..input.end];
        let piece = pieces(rest, PIECE_LINES).next().unwrap_or(rest);
        let now = self.tick(&mut st);
        st.conn.handle_data(now, piece);
        input.start += piece.len();
        self.take_events(&mut st, now);
        st.input = Some(input);
        st.free_since = now;
        if st.watch_idle && !st.queue.is_empty() {
            st.watch_idle = false;
            self.watch.notify_one();
        }
        st
    }

    /// Reads the clock into the state (never backwards).
    fn tick(&self, st: &mut State<R>) -> Timestamp {
        st.now = st.now.max(self.clock.now());
        st.now
    }

    /// Queues the calls the machine yielded, and trips the cancellation of
    /// those the host cancels (a call queued then is not run: NotRun).
    fn take_events(&self, st: &mut State<R>, now: Timestamp) {
        while let Some(event) = st.conn.poll_event() {
            match event {
                ToolkitEvent::Call(incoming) => {
                    st.queue.push_back(Job {
                        tool: incoming.tool,
                        key: incoming.key,
                        expects: incoming.expects,
                        args: incoming.args,
                        queued: now,
                        cancelled: false,
                    });
                }
                ToolkitEvent::Cancel(key) => {
                    // The machine yields a cancel only for a call open on
                    // it, so one not found here has just been answered.
                    if let Some(job) = st.queue.iter_mut().find(|j| j.key == key) {
                        job.cancelled = true;
                    } else if let Some(&(_, thread)) =
                        st.running_calls.iter().find(|(k, _)| *k == key)
                    {
                        st.tokens[thread].cancel();
                    }
                }
                ToolkitEvent::Dropped(why) => log(&why),
            }
        }
    }

    /// The input has ended: the threads finish the calls queued and leave.
    fn end<'a>(&'a self, mut st: MutexGuard<'a, State<R>>) -> MutexGuard<'a, State<R>> {
        st.ended = true;
        self.wake.notify_all();
        self.watch.notify_one();
        st
    }

    /// Writes what the machine holds, unless a write is under way (whose
    /// writer takes it along): copied out under the lock, written outside
    /// it, reported written, until nothing is pending.
    fn flush<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<R>>,
        copy: &mut Vec<u8>,
    ) -> MutexGuard<'a, State<R>> {
        if st.writing {
            return st;
        }
        loop {
            if st.conn.pending_output().is_empty() || st.write_error.is_some() {
                st.writing = false;
                return st;
            }
            st.writing = true;
            if st.watch_idle {
                // A write may block on a full pipe: the watchdog sees to it
                // that the input is read meanwhile.
                st.watch_idle = false;
                self.watch.notify_one();
            }
            copy.clear();
            copy.extend_from_slice(st.conn.pending_output());
            drop(st);
            let written = {
                let mut sink = lock(&self.sink);
                sink.write_all(copy).and_then(|()| sink.flush())
            };
            st = lock(&self.state);
            match written {
                Ok(()) => {
                    let now = self.tick(&mut st);
                    st.conn.consume_output(now, copy.len());
                }
                Err(e) => {
                    // Nothing more can be written: the pool stops.
                    st.write_error = Some(e);
                    st.stop = true;
                    self.wake.notify_all();
                    self.watch.notify_one();
                }
            }
        }
    }

    /// Looks every [`HAND_OFF`] while calls run or wait, or a write is
    /// under way: wakes a thread to take over a call or input left waiting
    /// that long, and writes the replies pending. Sleeps without a deadline
    /// while nothing runs.
    fn watchdog(&self) {
        let hand_off = HAND_OFF.as_nanos() as Timestamp;
        let mut copy = Vec::new();
        let mut st = lock(&self.state);
        loop {
            if st.stop || (st.ended && st.queue.is_empty() && st.running == 0) {
                return;
            }
            if st.running == 0 && st.queue.is_empty() && !st.writing {
                st.watch_idle = true;
                st = self.watch.wait(st).unwrap_or_else(|e| e.into_inner());
                st.watch_idle = false;
                continue;
            }
            st = self
                .watch
                .wait_timeout(st, HAND_OFF)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
            let now = self.tick(&mut st);
            let late = |since: Timestamp| now.saturating_sub(since) >= hand_off;
            let call_waits = st.queue.front().is_some_and(|job| late(job.queued));
            let input_waits = st.input.is_some() && late(st.free_since);
            if (call_waits || input_waits) && st.sleeping > 0 {
                self.wake.notify_one();
            }
            st = self.flush(st, &mut copy);
        }
    }
}
