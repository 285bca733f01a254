//! The hub's writes, spread over threads.
//!
//! A WebSocket hub is one machine for all its connections, so one thread
//! runs it; but a publish to a thousand subscribers is a thousand
//! `send(2)`s, and on loopback each one also runs the receiver's side of
//! TCP and wakes its reader. That is nearly all of a fan-out's time, and it
//! touches nothing of the machine: the loop gathers what the machine hands
//! out into one buffer (a *round*: each connection's range of it), and the
//! round's writes are split among the loop's thread and a few writer
//! threads, which each try their share once and report what the socket
//! took. The loop waits for all of them before it touches the machine
//! again, so every connection has one writer at a time and its bytes leave
//! in the machine's order.
//!
//! A small round is written by the loop alone: handing it over costs more
//! than its writes.

use std::io::{self, Write};
use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::net::Stream;

/// The fewest writes a round hands to the writer threads; a smaller round
/// is written by the loop's thread alone.
const SPREAD_FROM: usize = 64;

/// What one write of a round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wrote {
    /// The socket took the whole range.
    All,
    /// The socket took this many bytes of it, and no more for now.
    Part(usize),
    /// The socket took nothing for now.
    Blocked,
    /// The socket failed: the connection is over.
    Failed,
}

/// One write of a round: the connection's socket and its range of the
/// round's bytes.
#[derive(Debug)]
pub(super) struct Planned {
    /// The socket.
    pub stream: Arc<Stream>,
    /// Its bytes, in the round's buffer.
    pub range: Range<usize>,
}

/// A share of a round, for one writer thread.
struct Job {
    bytes: Arc<Vec<u8>>,
    /// The share's writes, and where the first stands in the round.
    writes: Vec<Planned>,
    first: usize,
}

/// The writer threads. See the module documentation.
pub(super) struct FanOut {
    jobs: Vec<Sender<Job>>,
    done: Receiver<(usize, Vec<Wrote>)>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for FanOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("writers", &self.jobs.len())
            .finish()
    }
}

impl FanOut {
    /// A round's writes spread over the caller's thread and `extra` more
    /// (none: the caller writes every round). A thread that cannot be
    /// started is done without.
    pub(super) fn new(extra: usize, name: &str) -> FanOut {
        let (done_tx, done) = channel();
        let mut jobs = Vec::new();
        let mut threads = Vec::new();
        for i in 0..extra {
            let (tx, rx) = channel::<Job>();
            let done_tx = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{name} writer {}", i + 1))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        let wrote = write_each(&job.bytes, &job.writes);
                        let first = job.first;
                        // The round's buffer goes back to the loop only
                        // once no share holds it.
                        drop(job);
                        if done_tx.send((first, wrote)).is_err() {
                            return;
                        }
                    }
                });
            if let Ok(handle) = spawned {
                jobs.push(tx);
                threads.push(handle);
            }
        }
        FanOut {
            jobs,
            done,
            threads,
        }
    }

    /// Tries each write of `plan` once, from `bytes`: what each did, in the
    /// plan's order, and the buffer handed back.
    pub(super) fn write(&mut self, bytes: Vec<u8>, plan: Vec<Planned>) -> (Vec<u8>, Vec<Wrote>) {
        if self.jobs.is_empty() || plan.len() < SPREAD_FROM {
            let wrote = write_each(&bytes, &plan);
            return (bytes, wrote);
        }
        let total = plan.len();
        let shares = self.jobs.len() + 1;
        let per = total.div_ceil(shares);
        let bytes = Arc::new(bytes);
        let mut plan = plan;
        // Share i is the plan's [i * per, (i + 1) * per): the loop's own is
        // the first, the writers' are split off from the end.
        let mut handed = 0;
        for (i, tx) in self.jobs.iter().enumerate().rev() {
            let first = (i + 1) * per;
            if first >= plan.len() {
                continue;
            }
            let job = Job {
                bytes: bytes.clone(),
                writes: plan.split_off(first),
                first,
            };
            match tx.send(job) {
                Ok(()) => handed += 1,
                // A writer gone (it cannot be, but if it were): its share
                // is written here.
                Err(back) => plan.extend(back.0.writes),
            }
        }
        let mut wrote = write_each(&bytes, &plan);
        wrote.resize(total, Wrote::Blocked);
        drop(plan);
        for _ in 0..handed {
            // Every writer answers each job it took: it only writes.
            let Ok((first, theirs)) = self.done.recv() else {
                break;
            };
            wrote[first..first + theirs.len()].copy_from_slice(&theirs);
        }
        (Arc::try_unwrap(bytes).unwrap_or_default(), wrote)
    }
}

impl Drop for FanOut {
    fn drop(&mut self) {
        self.jobs.clear();
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

/// One try of each write.
fn write_each(bytes: &[u8], writes: &[Planned]) -> Vec<Wrote> {
    writes
        .iter()
        .map(|w| write_once(&w.stream, &bytes[w.range.clone()]))
        .collect()
}

fn write_once(stream: &Stream, bytes: &[u8]) -> Wrote {
    loop {
        let mut socket = stream;
        return match socket.write(bytes) {
            Ok(n) if n == bytes.len() => Wrote::All,
            Ok(0) => Wrote::Blocked,
            Ok(n) => Wrote::Part(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Wrote::Blocked,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => Wrote::Failed,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pairs(n: usize) -> (Vec<Arc<Stream>>, Vec<mio::net::UnixStream>) {
        (0..n)
            .map(|_| {
                let (a, b) = mio::net::UnixStream::pair().unwrap();
                (Arc::new(Stream::Unix(a)), b)
            })
            .unzip()
    }

    fn read_all(peer: &mut mio::net::UnixStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match peer.read(&mut buf) {
                Ok(0) => return got,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return got,
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// A round spread over the writers: each socket gets its own range,
    /// and what each write did comes back in the plan's order, a socket
    /// that takes no more reported as such.
    #[test]
    fn a_spread_round_writes_each_range_to_its_socket_and_reports_in_plan_order() {
        for extra in [0, 1, 3] {
            let mut fanout = FanOut::new(extra, "test");
            let n = SPREAD_FROM * 3 + 5;
            let (streams, mut peers) = pairs(n);
            // These sockets' buffers are filled first (one in each share
            // of three): they take part or none.
            let blocked = [7, n / 2, n - 3];
            let full = vec![b'x'; 8 << 20];
            for &b in &blocked {
                let took = (&*streams[b]).write(&full).unwrap();
                assert!(took < full.len());
            }
            let mut bytes = Vec::new();
            let mut plan = Vec::new();
            for (i, s) in streams.iter().enumerate() {
                let start = bytes.len();
                bytes.extend_from_slice(format!("round to {i};").as_bytes());
                plan.push(Planned {
                    stream: s.clone(),
                    range: start..bytes.len(),
                });
            }
            let (back, wrote) = fanout.write(bytes.clone(), plan);
            assert_eq!(back, bytes, "the round's buffer comes back whole");
            assert_eq!(wrote.len(), n);
            for (i, peer) in peers.iter_mut().enumerate() {
                if blocked.contains(&i) {
                    assert!(matches!(wrote[i], Wrote::Blocked | Wrote::Part(_)));
                    continue;
                }
                assert_eq!(wrote[i], Wrote::All, "socket {i}");
                assert_eq!(read_all(peer), format!("round to {i};").into_bytes());
            }
            // A socket whose peer is gone fails.
            drop(peers);
            let (bytes, plan) = (
                b"late".to_vec(),
                vec![Planned {
                    stream: streams[0].clone(),
                    range: 0..4,
                }],
            );
            let (_, wrote) = fanout.write(bytes, plan);
            assert_eq!(wrote, vec![Wrote::Failed]);
        }
    }
}
