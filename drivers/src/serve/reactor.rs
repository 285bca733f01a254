//! The one mio reactor skeleton the serving loops share: the connection
//! loops (`conn_loop.rs`), the WebSocket hub's loop (`hub.rs`) and the
//! datagram hub's (`udp_hub.rs`). It owns what every loop did alike: the
//! [`Poll`] and its [`Events`], the [`Waker`] registered at [`WAKER`], the
//! [`Clock`] that turns an [`Instant`] into the core's [`Timestamp`], the
//! conversion of the next deadline into a poll timeout, the poll turn
//! itself (an interrupted poll is an empty turn) and the per-turn read
//! budget ([`ReadBudget`]). What a loop does with the events, its timers'
//! owners and its mailbox stay in the loop.

use std::io;
use std::time::{Duration, Instant};

use limen_core::Timestamp;
use mio::{Events, Poll, Registry, Token, Waker};

/// The token of every loop's waker: no connection, listener or lingering
/// socket is given it.
pub(crate) const WAKER: Token = Token(usize::MAX);

/// The most bytes read from one connection per turn of a loop: one that
/// never stops sending is read again next turn (its readiness is
/// edge-triggered and will not be announced anew), after every other
/// connection ready now, so it cannot starve them. A request or a burst of
/// frames of usual size is read in one turn, and a body of 1 MiB in 16.
pub(crate) const READ_BUDGET: usize = 64 * 1024;

/// A monotonic clock in nanoseconds since its start: the time every loop
/// hands the core, which has no clock of its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock(Instant);

impl Clock {
    /// A clock that reads 0 now.
    pub(crate) fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Nanoseconds since the clock started.
    pub(crate) fn now(&self) -> Timestamp {
        self.0.elapsed().as_nanos() as Timestamp
    }
}

/// What one connection may still be read this turn; see [`READ_BUDGET`].
#[derive(Debug)]
pub(crate) struct ReadBudget(usize);

impl ReadBudget {
    /// A whole turn's budget.
    pub(crate) fn turn() -> ReadBudget {
        ReadBudget(READ_BUDGET)
    }

    /// Counts `n` bytes read: whether the budget is spent now (more may
    /// wait, and no edge will say so: the caller reads again next turn).
    pub(crate) fn spend(&mut self, n: usize) -> bool {
        self.0 = self.0.saturating_sub(n);
        self.spent()
    }

    /// Whether nothing more is read this turn.
    pub(crate) fn spent(&self) -> bool {
        self.0 == 0
    }
}

/// A loop's poll, with its waker registered. The loop keeps its
/// [`Events`] itself (sized to its load), so it can walk them while it
/// acts on its own state.
pub(crate) struct Reactor {
    poll: Poll,
}

impl std::fmt::Debug for Reactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reactor").finish_non_exhaustive()
    }
}

impl Reactor {
    /// A new poll, with the waker at [`WAKER`] for the loop's mailbox
    /// (made with the reactor: a mailbox may be needed before its loop
    /// runs).
    pub(crate) fn new() -> io::Result<(Reactor, Waker)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok((Reactor { poll }, waker))
    }

    /// Where the loop registers its sockets.
    pub(crate) fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    /// One turn's wait: until an event, or `timeout`, with the events in
    /// `events`. An interrupted poll is a turn with no event.
    pub(crate) fn turn(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        match self.poll.poll(events, timeout) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                events.clear();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// How long to sleep for `deadline` at `now`: rounded up to the next
/// millisecond (the poll rounds down), so a timer is never polled a hair
/// early and spun on; none without a deadline.
pub(crate) fn wait_until(deadline: Option<Timestamp>, now: Timestamp) -> Option<Duration> {
    deadline.map(|t| Duration::from_nanos(t.saturating_sub(now)) + Duration::from_millis(1))
}

/// The earlier of two deadlines, either absent.
pub(crate) fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_by_its_bytes() {
        let mut b = ReadBudget::turn();
        assert!(!b.spent());
        assert!(!b.spend(READ_BUDGET - 1));
        assert!(b.spend(16 * 1024));
        assert!(b.spent());
    }

    #[test]
    fn a_wait_rounds_up_and_never_goes_negative() {
        assert_eq!(wait_until(None, 5), None);
        assert_eq!(wait_until(Some(3), 5), Some(Duration::from_millis(1)));
        assert_eq!(
            wait_until(Some(1_000_000), 0),
            Some(Duration::from_millis(2))
        );
        assert_eq!(earliest(Some(4), None), Some(4));
        assert_eq!(earliest(Some(4), Some(2)), Some(2));
        assert_eq!(earliest(None, None), None);
    }

    #[test]
    fn the_clock_moves_forward() {
        let c = Clock::start();
        let a = c.now();
        assert!(c.now() >= a);
    }
}
