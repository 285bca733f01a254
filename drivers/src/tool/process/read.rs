//! The process's standard output, read into the machine: by a thread of
//! its own that hands each outcome to `on_closed` (callback delivery), or
//! by the caller waiting for outcomes ([`Process::wait`](super::Process::wait),
//! queued delivery). Either way, its end is the process's end.

use std::io::Read;
use std::process::ChildStdout;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use mio::unix::pipe::Receiver;
use mio::{Events, Interest, Poll, Token};

use super::write::untaken;
use super::{deliver_from, drain, forget_output, pump, release, settle, Inner, Shared};

pub(super) fn read_stdout(shared: Arc<Shared>, generation: u64, mut stdout: impl Read) {
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
            if untaken(&inner) {
                shared.wake.notify_all();
            }
            std::mem::swap(&mut inner.outcomes, &mut outcomes);
            drop(inner);
            deliver_from(&shared, &mut outcomes);
            data = &data[cut..];
        }
    }
    process_ended(&shared, generation);
}

/// Standard output is closed: the process is done speaking. It is ended
/// (if it has not ended by itself) and reaped, once a write under way has
/// said how much it wrote (a call that reached the process is Unknown, not
/// NotRun), and the machine learns it ended.
fn process_ended(shared: &Arc<Shared>, generation: u64) {
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
    inner.conn.handle_eof(now);
    forget_output(&mut inner);
    pump(shared, &mut inner);
    settle(shared, &inner);
    release(shared, inner);
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

/// Standard output as the caller reads it (queued delivery): held in the
/// shared state while no one reads, taken by the thread that does.
pub(super) struct Reader {
    /// The process it belongs to.
    pub generation: u64,
    stdout: Receiver,
    poll: Poll,
    events: Events,
    /// Whether the pipe may hold output not yet read: the poll is
    /// edge-triggered, so it is set by a readiness event and cleared only
    /// by a read that finds nothing.
    readable: bool,
    buf: Vec<u8>,
}

/// What one [`Reader::read`] found.
enum Found {
    /// This many bytes, at the start of the reader's buffer.
    Data(usize),
    /// Nothing before the deadline.
    Nothing,
    /// The end of the output: the process is done speaking.
    End,
}

impl Reader {
    /// Reads `stdout` (non-blocking, with a poll of its own).
    pub(super) fn new(stdout: ChildStdout, generation: u64) -> std::io::Result<Reader> {
        let mut stdout = Receiver::from(stdout);
        stdout.set_nonblocking(true)?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut stdout, Token(0), Interest::READABLE)?;
        Ok(Reader {
            generation,
            stdout,
            poll,
            events: Events::with_capacity(4),
            readable: true,
            buf: vec![0u8; 64 << 10],
        })
    }

    /// One read, waiting for output until `deadline` at most.
    fn read(&mut self, deadline: Instant) -> Found {
        loop {
            if !self.readable {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.poll.poll(&mut self.events, Some(left)) {
                    Ok(()) if self.events.is_empty() => return Found::Nothing,
                    Ok(()) => self.readable = true,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return Found::End,
                }
            }
            match self.stdout.read(&mut self.buf) {
                Ok(0) => return Found::End,
                Ok(n) => {
                    // A read short of the buffer took all the pipe held:
                    // the next waits for the poll, rather than spending a
                    // read to find nothing (output written since then
                    // finds the pipe empty, which is an edge the poll
                    // reports).
                    if n < self.buf.len() {
                        self.readable = false;
                    }
                    return Found::Data(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Found::End,
            }
        }
    }
}

/// Queued delivery: reads the process's output once, on this thread,
/// waiting for it until `deadline` at most, and feeds it to the machine;
/// or, when another thread is reading it (or no process runs), waits on
/// `settled` for that to change. Returns with the lock held again.
pub(super) fn read_or_wait<'a>(
    shared: &'a Arc<Shared>,
    mut inner: MutexGuard<'a, Inner>,
    deadline: Instant,
) -> MutexGuard<'a, Inner> {
    let Some(mut reader) = inner.reader.take() else {
        let left = deadline.saturating_duration_since(Instant::now());
        inner.settling += 1;
        inner = shared
            .settled
            .wait_timeout(inner, left)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
        inner.settling -= 1;
        return inner;
    };
    drop(inner);
    let found = reader.read(deadline);
    let mut inner = shared.lock();
    if inner.generation != reader.generation {
        // A newer process runs: this one's output is worth nothing.
        return inner;
    }
    match found {
        Found::Data(n) => {
            let now = shared.now();
            inner.conn.handle_data(now, &reader.buf[..n]);
            drain(shared, &mut inner);
            if untaken(&inner) {
                shared.wake.notify_all();
            }
        }
        Found::Nothing => {}
        Found::End => {
            let generation = reader.generation;
            drop(inner);
            drop(reader);
            process_ended(shared, generation);
            return shared.lock();
        }
    }
    if inner.generation == reader.generation {
        inner.reader = Some(reader);
    }
    // Whoever waits for the reader (or for outcomes) looks again.
    settle(shared, &inner);
    inner
}
