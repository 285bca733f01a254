//! The process's standard input and standard error: what the machine
//! hands out written (by a sending thread when no write is under way, else
//! by the writer thread, which also runs the machine's timer), and
//! standard error drained into a bounded buffer that is kept.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use limen_core::Timestamp;
use mio::unix::pipe::Sender;
use mio::{Events, Poll};

use super::{pump, release, settle, Inner, Shared, STDERR_KEPT};

pub(super) fn drain_stderr(shared: Arc<Shared>, mut stderr: impl Read) {
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
pub(super) fn write_stdin(shared: Arc<Shared>, generation: u64, mut poll: Poll) {
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
                    release(&shared, inner);
                    inner = shared.lock();
                    continue;
                }
                if inner.stdin.is_some() && !inner.conn.pending_output().is_empty() {
                    break;
                }
                let timer = inner.conn.poll_timeout();
                let wait = timer.map_or(Duration::from_secs(1), |t| {
                    Duration::from_nanos(t.saturating_sub(now)).max(Duration::from_millis(1))
                });
                // A sender whose call's deadline comes sooner wakes it.
                inner.writer_sleeps_until = timer.unwrap_or(Timestamp::MAX);
                inner = shared
                    .wake
                    .wait_timeout(inner, wait)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
                inner.writer_sleeps_until = 0;
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
pub(super) enum Flushed {
    /// Everything was written.
    Done,
    /// The pipe is full: the rest waits for the writer thread.
    Full,
    /// The process no longer reads (or a newer one runs).
    Gone,
}

/// What is to be written: what did not fit the pipe last time, then what
/// the machine queued since.
pub(super) fn take_output(inner: &mut Inner) -> Vec<u8> {
    let mut out = std::mem::take(&mut inner.unwritten);
    take_more(inner, &mut out);
    out
}

/// Whether the machine queued output that no write holds yet.
pub(super) fn untaken(inner: &Inner) -> bool {
    inner.conn.pending_output().len() > inner.held
}

/// Appends to `out` what the machine queued since its output was last
/// taken, and holds it; returns how many bytes.
fn take_more(inner: &mut Inner, out: &mut Vec<u8>) -> usize {
    let pending = inner.conn.pending_output();
    let new = pending.get(inner.held..).unwrap_or_default();
    out.extend_from_slice(new);
    inner.held = pending.len();
    new.len()
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
pub(super) fn write_out(
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
            if take_more(&mut inner, &mut out) == 0 {
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
                let now = shared.now();
                inner.conn.consume_output(now, n);
                inner.held = inner.held.saturating_sub(n);
                if out.is_empty() && take_more(&mut inner, &mut out) == 0 {
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
