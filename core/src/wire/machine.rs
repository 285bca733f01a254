//! The vocabulary every connection machine of the project shares.
//!
//! A [`Machine`] is one connection's protocol state between a driver's
//! socket and whatever the machine serves. It never reads a socket or a
//! clock: the driver hands it the bytes it read and the time, takes the
//! bytes it queued, and arms one timer from it. The call order, for every
//! machine (quinn-proto's, in short):
//!
//! 1. While [`wants_read`](Machine::wants_read), read from the socket and
//!    hand the bytes to [`handle_data`](Machine::handle_data); on the
//!    peer's end of stream (or a failed read) call
//!    [`handle_eof`](Machine::handle_eof).
//! 2. When the deadline [`poll_timeout`](Machine::poll_timeout) named has
//!    passed, call [`handle_timeout`](Machine::handle_timeout).
//! 3. After any input, take the machine's events (each machine's own
//!    `poll_event`: a [`Front`](crate::wire::front::Front)'s are
//!    [`FrontEvent`](crate::wire::front::FrontEvent)s).
//! 4. Write [`pending_output`](Machine::pending_output) and report what the
//!    socket took with [`consume_output`](Machine::consume_output).
//! 5. Re-arm the timer from [`poll_timeout`](Machine::poll_timeout); close
//!    the socket once [`is_closed`](Machine::is_closed).
//!
//! Every input takes `now`, the driver's monotonic clock in nanoseconds.

use crate::Timestamp;

/// One connection's protocol machine. See the module documentation for the
/// order of calls.
pub trait Machine {
    /// Whether the machine takes more input now: false while the peer does
    /// not read what is queued (backpressure), and once it has read all it
    /// will.
    fn wants_read(&self) -> bool;

    /// Bytes read from the connection at `now`.
    fn handle_data(&mut self, now: Timestamp, data: &[u8]);

    /// The peer closed its end (or a read failed) at `now`.
    fn handle_eof(&mut self, now: Timestamp);

    /// Time passes: a deadline at `now` or earlier acts. Before the
    /// deadline, nothing happens.
    fn handle_timeout(&mut self, now: Timestamp);

    /// The deadline [`handle_timeout`](Machine::handle_timeout) next acts
    /// on, if any.
    fn poll_timeout(&self) -> Option<Timestamp>;

    /// The bytes still to write, borrowed until the next call on the
    /// machine.
    fn pending_output(&self) -> &[u8];

    /// `n` bytes of [`pending_output`](Machine::pending_output) were
    /// written at `now`.
    fn consume_output(&mut self, now: Timestamp, n: usize);

    /// Whether the connection is done: nothing more is read or written.
    fn is_closed(&self) -> bool;
}
