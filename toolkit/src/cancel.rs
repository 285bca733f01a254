//! A call's cancellation, as its author's code sees it.
//!
//! The host may send `cancel` for a call that is open: a request to stop
//! work on it, which proves nothing (§ The Tool process protocol). The
//! serve loop keeps a [`Cancel`] per open call, hands a clone to the
//! author's code in [`Context::cancel`](crate::Context::cancel), and trips
//! it when the host's cancel comes. The author's code polls it
//! ([`Cancel::is_cancelled`]) between steps, or blocks on it
//! ([`Cancel::wait_timeout`]) where it would sleep; nothing is ever killed
//! or unwound from outside, so a call ends only when its code returns.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A cancellation token: cloned, every clone sees the same state. It starts
/// not cancelled and, once cancelled, stays so.
///
/// Two tokens are equal when they are clones of one token.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// Read without the lock, so polling costs an atomic load.
    cancelled: AtomicBool,
    /// Held to set `cancelled` and to wait for it, so a waiter cannot miss
    /// the wake-up between its check and its sleep.
    lock: Mutex<()>,
    wake: Condvar,
}

impl Cancel {
    /// A token not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels: every clone sees it, and every thread waiting on one wakes.
    /// Cancelling again changes nothing. The serve loop calls it when the
    /// host cancels the call; the author's code may call it too, to stop
    /// work of its own that waits on the token.
    pub fn cancel(&self) {
        let _held = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.0.cancelled.store(true, Ordering::Release);
        self.0.wake.notify_all();
    }

    /// Makes this token a fresh one, not cancelled, for the next call,
    /// where `holders` clones of it are the serve loop's own (this one
    /// among them): the same allocation when no other clone is left, so a
    /// thread that runs calls one at a time allocates no token a call;
    /// else a new token (whether it is the same one), so a clone the
    /// author's code kept never sees the next call's cancel. No one may
    /// cancel it meanwhile (the loop renews it under the lock its cancels
    /// are taken under).
    pub(crate) fn renew(&mut self, holders: usize) -> bool {
        if Arc::strong_count(&self.0) == holders && Arc::weak_count(&self.0) == 0 {
            // A clone dropped on another thread is seen gone here.
            std::sync::atomic::fence(Ordering::Acquire);
            self.0.cancelled.store(false, Ordering::Release);
            true
        } else {
            *self = Cancel::new();
            false
        }
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Blocks until it is cancelled. A call's host may never cancel it:
    /// prefer [`wait_timeout`](Cancel::wait_timeout) where the call has
    /// other work to see to.
    pub fn wait(&self) {
        let mut held = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_cancelled() {
            held = self.0.wake.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks until it is cancelled or `timeout` has passed, whichever is
    /// first: whether it is cancelled. In place of a sleep, it is a sleep a
    /// cancel cuts short.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut held = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_cancelled() {
            let left = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                // Too far to name: as long as it takes.
                None => Duration::from_secs(u32::MAX.into()),
            };
            held = self
                .0
                .wake
                .wait_timeout(held, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        true
    }
}

impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Cancel;
    use std::thread;
    use std::time::{Duration, Instant};

    /// A token starts not cancelled, a cancel reaches every clone and stays,
    /// and a waiter is woken by it, well before its timeout.
    #[test]
    fn a_cancel_reaches_every_clone_and_wakes_a_waiter() {
        let token = Cancel::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        assert!(!clone.wait_timeout(Duration::from_millis(10)));
        let started = Instant::now();
        let waiter = thread::spawn(move || clone.wait_timeout(Duration::from_secs(60)));
        thread::sleep(Duration::from_millis(20));
        token.cancel();
        assert!(waiter.join().unwrap());
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(token.is_cancelled());
        token.cancel();
        token.wait();
        assert!(token.wait_timeout(Duration::ZERO));
        assert_eq!(token, token.clone());
        assert_ne!(token, Cancel::new());
    }

    /// A token renewed with no clone left but the loop's is the same one,
    /// not cancelled; one with a clone left is a new one, and the clone
    /// keeps its state.
    #[test]
    fn a_renewed_token_is_fresh_and_never_one_a_clone_still_holds() {
        let mut token = Cancel::new();
        token.cancel();
        let before = std::sync::Arc::as_ptr(&token.0);
        assert!(token.renew(1));
        assert!(!token.is_cancelled());
        assert_eq!(std::sync::Arc::as_ptr(&token.0), before);
        // The loop's own second clone (the pool's copy) does not count.
        let loops = token.clone();
        token.cancel();
        assert!(token.renew(2));
        assert!(!loops.is_cancelled());
        assert_eq!(token, loops);
        drop(loops);
        let kept = token.clone();
        token.cancel();
        assert!(!token.renew(1));
        assert!(!token.is_cancelled());
        assert!(kept.is_cancelled());
        assert_ne!(token, kept);
        token.cancel();
        assert!(kept.is_cancelled());
    }
}
