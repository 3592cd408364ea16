//! The counting global allocator: the system allocator, plus the bytes held and their
//! peak while counting is on (only the `memory` subcommand turns it on, so the other
//! subcommands pay one relaxed load per allocation). The one place of the workspace with
//! `unsafe`: a `GlobalAlloc` cannot be written without it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// The system allocator, counting while [`COUNTING`] is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
// Signed: a block allocated before counting began may be freed after it.
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn count(grown: usize, shrunk: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        let delta = grown as isize - shrunk as isize;
        let now = CURRENT.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the counters only add what was granted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size(), 0);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(0, layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller's contract for `new_size`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size, layout.size());
        }
        new
    }
}

/// Starts counting.
pub(crate) fn start() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// Bytes held now, counted since [`start`].
pub(crate) fn current() -> isize {
    CURRENT.load(Ordering::Relaxed)
}

/// The most bytes held at once since the last [`reset_peak`].
pub(crate) fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts the peak again from the bytes held now.
pub(crate) fn reset_peak() {
    PEAK.store(current(), Ordering::Relaxed);
}
