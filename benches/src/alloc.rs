//! A counting global allocator: a bench installs [`Counting`] as its
//! `#[global_allocator]` and asks what a closure keeps or peaks at.
//!
//! Counting is switched on only inside [`peak`] and [`live_during`], so
//! timed runs pay one relaxed load per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

/// The counting allocator; install it with `#[global_allocator]`.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
// Signed: a window may free what was allocated before it opened.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to the system allocator with the same
// arguments; the counters are plain atomics. A measuring instrument of the
// benches, never linked into what the project ships; the one `unsafe` of
// this crate (scripts/check-core-purity lists where `unsafe` may be).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            let size = layout.size() as isize;
            let live = LIVE.fetch_add(size, Relaxed) + size;
            PEAK.fetch_max(live, Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Relaxed) {
            let grown = new_size as isize - layout.size() as isize;
            let live = LIVE.fetch_add(grown, Relaxed) + grown;
            PEAK.fetch_max(live, Relaxed);
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
    let peak = PEAK.load(Relaxed).max(0) as usize;
    drop(out);
    COUNTING.store(false, Relaxed);
    peak
}

/// The heap `f` allocated and left live when it returned (its result
/// included), less what it freed of older allocations; 0 if it freed more.
pub fn live_during<T>(f: impl FnOnce() -> T) -> usize {
    LIVE.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    let out = f();
    let live = LIVE.load(Relaxed).max(0) as usize;
    COUNTING.store(false, Relaxed);
    drop(out);
    live
}
