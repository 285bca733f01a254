//! The lingering close of an HTTP connection (RFC 9112 § 9.6), for every
//! loop that answers HTTP: the request loops ([`ConnLoop`](super::conn_loop))
//! and a WebSocket hub's ([`HubServer`](super::hub::HubServer)).
//!
//! A server that closes a connection with input still unread makes the
//! kernel answer with a reset, and a client still sending its request (a
//! body over the limit, sent in one write) sees its write fail and never
//! reads the answer that was already on its way. So a connection refused
//! before its input was read closes in stages: once its answer is written,
//! its writing side is shut down (the client reads the answer and then the
//! end of stream), and what the client still sends is read and discarded
//! until it closes too — for at most [`LingerLimits::time`] and
//! [`LingerLimits::bytes`], after which the socket is closed whatever
//! comes (nginx's `lingering_close`; its `lingering_time` is 30 s, and
//! Apache's lingering close reads for 2 s).
//!
//! Only refusals and early closes linger: a connection whose request was
//! read whole closes at once, as before, and costs no system call more.
//! A lingering socket keeps its place in its listener's count (the loop
//! hands a value of its choosing in with it, dropped when the socket is),
//! so lingering cannot hold more descriptors than the listeners' caps.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::Shutdown;

use limen_core::{Timestamp, SECOND};
use mio::{Interest, Registry, Token};
use slab::Slab;

use super::net::Stream;

/// How long and how much a lingering close reads before it closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LingerLimits {
    /// The longest a socket lingers after its answer was written.
    pub time: Timestamp,
    /// The most bytes read and discarded from one lingering socket.
    pub bytes: usize,
}

impl Default for LingerLimits {
    /// 2 s and 16 MiB: 2 s is Apache's lingering close; a client sending
    /// on loopback or a LAN has long put 16 MiB (16 bodies over the HTTP
    /// transport's 1 MiB limit) into its socket by then. A slower client
    /// sending more than that is reset, as before.
    fn default() -> LingerLimits {
        LingerLimits {
            time: 2 * SECOND,
            bytes: 16 * 1024 * 1024,
        }
    }
}

/// The most bytes one lingering socket is read per wake of its loop
/// before the loop's other work: a socket that never stops sending is
/// read again at the next turn (its readiness is edge-triggered, so it is
/// kept on a ready list, not dropped).
const READ_BUDGET: usize = 64 * 1024;

struct Held<T> {
    stream: Stream,
    until: Timestamp,
    left: usize,
    /// The loop's token for it (dropped with the socket).
    _tag: T,
}

/// The lingering sockets of one loop, each registered under a token at
/// or above the loop's `base`. See the module documentation.
pub(super) struct Lingering<T> {
    base: usize,
    limits: LingerLimits,
    held: Slab<Held<T>>,
    /// (deadline, key), in the order lingering began: every socket lingers
    /// as long, so this is the order of the deadlines too. An entry whose
    /// socket closed early is passed over (its key may have been reused:
    /// the deadline tells them apart, and a reuse at the same instant
    /// shares the deadline anyway).
    order: VecDeque<(Timestamp, usize)>,
    /// Sockets whose read budget ran out: read again next turn.
    again: Vec<usize>,
}

impl<T> Lingering<T> {
    /// An empty set whose sockets take the tokens `base..`.
    pub(super) fn new(base: usize, limits: LingerLimits) -> Lingering<T> {
        Lingering {
            base,
            limits,
            held: Slab::new(),
            order: VecDeque::new(),
            again: Vec::new(),
        }
    }

    /// How many sockets linger.
    pub(super) fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether `token` is one of the lingering sockets' (`base` and the
    /// 2^40 tokens above it).
    pub(super) fn owns(&self, token: Token) -> bool {
        token.0.checked_sub(self.base).is_some_and(|k| k < 1 << 40)
    }

    /// Whether a socket waits to be read again: the loop polls without
    /// sleeping.
    pub(super) fn has_ready(&self) -> bool {
        !self.again.is_empty()
    }

    /// When the earliest lingering socket is let go.
    pub(super) fn next_deadline(&self) -> Option<Timestamp> {
        self.order.front().map(|&(t, _)| t)
    }

    /// Begins the lingering close of `stream`, whose answer is written:
    /// its writing side is shut down and it is read until the peer closes
    /// or the limits pass. `stream` is registered in `registry` already
    /// (under the loop's own token), or not at all when `registered` is
    /// false. A socket that cannot be shut down or watched is closed now.
    pub(super) fn start(
        &mut self,
        registry: &Registry,
        mut stream: Stream,
        registered: bool,
        tag: T,
        now: Timestamp,
    ) {
        if self.limits.time == 0 || stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let entry = self.held.vacant_entry();
        let key = entry.key();
        let token = Token(self.base + key);
        let watched = if registered {
            stream.reregister(registry, token, Interest::READABLE)
        } else {
            stream.register(registry, token, Interest::READABLE)
        };
        if watched.is_err() {
            return;
        }
        let until = now.saturating_add(self.limits.time);
        entry.insert(Held {
            stream,
            until,
            left: self.limits.bytes,
            _tag: tag,
        });
        self.order.push_back((until, key));
        // What already waits raises no new edge: read it now.
        self.read(key);
    }

    /// The poll reported `token` (one of ours: [`owns`](Lingering::owns)).
    pub(super) fn ready(&mut self, token: Token) {
        if let Some(key) = token.0.checked_sub(self.base) {
            self.read(key);
        }
    }

    /// Reads again the sockets whose budget ran out last turn.
    pub(super) fn resume(&mut self) {
        for key in std::mem::take(&mut self.again) {
            self.read(key);
        }
    }

    /// Closes every socket whose time is up at `now`.
    pub(super) fn expire(&mut self, now: Timestamp) {
        while let Some(&(until, key)) = self.order.front() {
            if until > now {
                break;
            }
            self.order.pop_front();
            if self.held.get(key).is_some_and(|h| h.until == until) {
                self.held.remove(key);
            }
        }
    }

    /// Reads and discards what `key`'s peer sent, up to the budget of a
    /// wake; closes it at the peer's end, a failure, or past its bytes.
    fn read(&mut self, key: usize) {
        let Some(held) = self.held.get_mut(key) else {
            return;
        };
        let mut sink = [0u8; 16 * 1024];
        let mut budget = READ_BUDGET;
        let done = loop {
            if held.left == 0 {
                break true;
            }
            if budget == 0 {
                self.again.push(key);
                break false;
            }
            let want = sink.len().min(held.left).min(budget);
            match held.stream.read(&mut sink[..want]) {
                Ok(0) => break true,
                Ok(n) => {
                    held.left -= n;
                    budget -= n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        if done {
            // Its entry in `order` is passed over when it comes due.
            self.held.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::net::UnixStream;
    use mio::Poll;
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops: the listener's count a lingering socket keeps.
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn pair() -> (Stream, std::os::unix::net::UnixStream) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        (Stream::Unix(UnixStream::from_std(a)), b)
    }

    fn limits() -> LingerLimits {
        LingerLimits {
            time: 2 * SECOND,
            bytes: 1024 * 1024,
        }
    }

    #[test]
    fn the_peer_reads_the_end_of_stream_and_its_close_ends_the_linger() {
        let poll = Poll::new().unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut l = Lingering::new(100, limits());
        let (s, mut peer) = pair();
        peer.write_all(b"unread body").unwrap();
        l.start(poll.registry(), s, false, Counted(dropped.clone()), 0);
        assert_eq!(l.len(), 1);
        // The server's writing side is shut: the peer reads its end.
        let mut b = [0u8; 8];
        assert_eq!(std::io::Read::read(&mut peer, &mut b).unwrap(), 0);
        drop(peer);
        l.ready(Token(100));
        assert_eq!((l.len(), dropped.load(Ordering::SeqCst)), (0, 1));
        // Its deadline passes over the closed socket.
        l.expire(10 * SECOND);
        assert_eq!(l.next_deadline(), None);
    }

    #[test]
    fn a_peer_that_stays_is_let_go_at_the_deadline_on_the_loops_clock() {
        let poll = Poll::new().unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut l = Lingering::new(100, limits());
        let (s, _peer) = pair();
        l.start(poll.registry(), s, false, Counted(dropped.clone()), SECOND);
        assert_eq!(l.next_deadline(), Some(3 * SECOND));
        l.expire(3 * SECOND - 1);
        assert_eq!(l.len(), 1);
        l.expire(3 * SECOND);
        assert_eq!((l.len(), dropped.load(Ordering::SeqCst)), (0, 1));
    }

    #[test]
    fn a_peer_that_keeps_sending_is_read_a_budget_a_turn_and_let_go_past_its_bytes() {
        let poll = Poll::new().unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut l = Lingering::new(100, limits());
        let (s, mut peer) = pair();
        // The socket's buffer filled before lingering begins.
        peer.set_nonblocking(true).unwrap();
        let chunk = vec![b'x'; 16 * 1024];
        let mut filled = 0;
        while let Ok(n) = peer.write(&chunk) {
            filled += n;
        }
        assert!(filled > READ_BUDGET, "{filled}");
        peer.set_nonblocking(false).unwrap();
        l.start(poll.registry(), s, false, Counted(dropped.clone()), 0);
        // One call read its budget and no more: the rest waits for the
        // next turn, on the ready list (no edge would announce it).
        assert!(l.has_ready() && l.len() == 1);
        let writer = std::thread::spawn(move || {
            let chunk = vec![b'x'; 64 * 1024];
            let mut sent = 0usize;
            while peer.write_all(&chunk).is_ok() {
                sent += chunk.len();
            }
            sent
        });
        let started = std::time::Instant::now();
        while l.len() > 0 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "a lingering socket is let go"
            );
            if l.has_ready() {
                l.resume();
            } else {
                l.ready(Token(100));
                std::thread::yield_now();
            }
        }
        // Let go past its bytes, the writer still sending.
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        let sent = writer.join().unwrap() + filled;
        assert!(sent >= limits().bytes, "{sent}");
    }
}
