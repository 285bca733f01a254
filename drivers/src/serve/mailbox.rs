//! A thread's mailbox: a list other threads push to and the owner takes
//! whole, with a wake-up only when the owner sleeps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use mio::Waker;

/// Messages for one loop thread. Senders push and wake the loop only when
/// it has said it sleeps (or is about to): under load a message costs a push
/// under a lock neither side holds for long, and no syscall.
pub(super) struct Mailbox<T> {
    items: Mutex<Vec<T>>,
    waker: Waker,
    sleeping: AtomicBool,
}

impl<T> Mailbox<T> {
    pub(super) fn new(waker: Waker) -> Mailbox<T> {
        Mailbox {
            items: Mutex::new(Vec::new()),
            waker,
            sleeping: AtomicBool::new(false),
        }
    }

    /// Leaves one message.
    pub(super) fn send(&self, item: T) {
        self.list().push(item);
        self.wake();
    }

    /// Leaves every message of `items` (emptied), with one wake-up.
    pub(super) fn send_all(&self, items: &mut Vec<T>) {
        if items.is_empty() {
            return;
        }
        self.list().append(items);
        self.wake();
    }

    /// Wakes the loop whatever it is doing (a stop).
    pub(super) fn wake_now(&self) {
        let _ = self.waker.wake();
    }

    fn wake(&self) {
        // The message is in the list before this swap, and the loop marks
        // itself sleeping before its last look at the list (SeqCst orders
        // the two), so no message is missed; the first message after the
        // mark clears it and wakes the loop, the rest make no syscall.
        if self.sleeping.swap(false, Ordering::SeqCst) {
            let _ = self.waker.wake();
        }
    }

    /// Marks the loop as about to sleep; take the list once more after.
    pub(super) fn sleep(&self) {
        self.sleeping.store(true, Ordering::SeqCst);
    }

    /// Marks the loop awake.
    pub(super) fn awake(&self) {
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Takes every message left so far into `into` (emptied first; its
    /// allocation is swapped in for the next senders).
    pub(super) fn take(&self, into: &mut Vec<T>) {
        into.clear();
        std::mem::swap(&mut *self.list(), into);
    }

    fn list(&self) -> std::sync::MutexGuard<'_, Vec<T>> {
        // The lock guards a plain list and no code that can panic holds it:
        // a poisoned lock still holds a whole list.
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}
