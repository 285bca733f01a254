//! A counting global allocator: a bench installs [`Counting`] as its
//! `#[global_allocator]` and asks what a closure keeps or peaks at.
//!
//! Counting is switched on only inside [`peak`] and [`live_during`], so
//! timed runs pay one relaxed load per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// The counting allocator; install it with `#[global_allocator]`.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator with the same
// arguments; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            if new_size >= layout.size() {
                let live =
                    LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The peak heap live during `f`, counting only what `f` allocates (its
/// result is dropped before counting stops).
pub fn peak<T>(f: impl FnOnce() -> T) -> usize {
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    let out = f();
    let peak = PEAK.load(Relaxed);
    drop(out);
    COUNTING.store(false, Relaxed);
    peak
}

/// The heap `f` allocated and left live when it returned (its result
/// included).
pub fn live_during<T>(f: impl FnOnce() -> T) -> usize {
    LIVE.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    let out = f();
    let live = LIVE.load(Relaxed);
    COUNTING.store(false, Relaxed);
    drop(out);
    live
}
