//! A heap of its own for one thread (the tracker's worker): carved from one
//! block the server's allocator gave, so that the server counts it in
//! `used_memory` and `maxmemory`, and then allocated from without calling
//! the server's allocator again.
//!
//! Why: Redis 8's and Valkey 8+'s allocators keep a memory counter for
//! every thread that ever allocated or freed, and sum them all after every
//! command (`call` → `zmalloc_used_memory`). The worker's first allocation
//! took that sum from one counter to two: 15 instructions more for every
//! command of the server (Valkey 9.1, callgrind), a third of what the
//! tracker's default may cost inside `processCommand`. On its own heap the
//! worker never calls the server's allocator: what it allocates comes from
//! the heap, and what it frees of the server's memory (the job it was
//! handed, a batch it grew, a channel's block) is left for the next thread
//! that allocates or frees to free.
//!
//! It is sized before its thread starts, for what that thread will hold
//! (the main thread adds blocks, as large as all before or as needed), and
//! grows past three quarters full (at the tracker's tick), up to
//! [`MAX_BLOCKS`]. Where it still runs out, its thread allocates from the
//! server as any other (counted as an overflow in `INFO`: it costs the one
//! counter more, nothing else).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use talc::{ErrOnOom, Span, Talc, Talck};

/// The most blocks a heap is made of: each as large as all before, the
/// last is 2^7 times the first.
pub const MAX_BLOCKS: usize = 8;

pub struct ThreadHeap {
    heap: Talck<spin::Mutex<()>, ErrOnOom>,
    /// The heap's blocks, each `[base, end)`: the first `blocks` are set.
    bounds: [(AtomicUsize, AtomicUsize); MAX_BLOCKS],
    blocks: AtomicUsize,
    /// The thread it is for (`pthread_self`; 0 for none, [`NEXT`] for the
    /// next thread that asks, other than `spawner`).
    owner: AtomicUsize,
    /// The thread that starts the owner (never the owner itself).
    spawner: AtomicUsize,
    /// Blocks of the server's that the owner freed, to be freed by another
    /// thread (where they were allocated by an allocation's start).
    deferred: Mutex<Vec<usize>>,
    pending: AtomicBool,
    overflows: AtomicU64,
}

/// What `INFO` shows of a heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapFigures {
    pub bytes: usize,
    pub used_bytes: usize,
    pub overflows: u64,
}

/// The owner is the next thread that allocates or frees (no thread has
/// this handle: it is no address a thread's could be).
const NEXT: usize = usize::MAX;

fn this_thread() -> usize {
    // SAFETY: no preconditions; the calling thread's own handle.
    (unsafe { libc::pthread_self() }) as usize
}

impl ThreadHeap {
    pub const fn new() -> Self {
        Self {
            heap: Talc::new(ErrOnOom).lock(),
            bounds: [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_BLOCKS],
            blocks: AtomicUsize::new(0),
            owner: AtomicUsize::new(0),
            spawner: AtomicUsize::new(0),
            deferred: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            overflows: AtomicU64::new(0),
        }
    }

    /// Makes the heap at least `bytes` large, with blocks from `alloc`
    /// (call from one thread only, the main one). False if it could not.
    pub fn reserve(&self, bytes: usize, mut alloc: impl FnMut(usize) -> *mut u8) -> bool {
        loop {
            let size = self.size();
            if size >= bytes {
                return true;
            }
            if !self.add_block((bytes - size).max(size), &mut alloc) {
                return false;
            }
        }
    }

    /// Past three quarters full, adds a block as large as the heap from
    /// `alloc` (call from one thread only, the main one).
    pub fn grow_if_needed(&self, alloc: impl FnOnce(usize) -> *mut u8) {
        let HeapFigures {
            bytes, used_bytes, ..
        } = self.figures();
        if bytes > 0 && used_bytes > bytes / 4 * 3 {
            self.add_block(bytes, alloc);
        }
    }

    fn add_block(&self, bytes: usize, alloc: impl FnOnce(usize) -> *mut u8) -> bool {
        let n = self.blocks.load(Ordering::Acquire);
        let Some((base, end)) = self.bounds.get(n) else {
            return false;
        };
        let block = alloc(bytes);
        if block.is_null() {
            return false;
        }
        // Set before the heap may give any of it, so that a block freed is
        // always known for the heap's.
        end.store(block as usize + bytes, Ordering::Release);
        base.store(block as usize, Ordering::Release);
        self.blocks.store(n + 1, Ordering::Release);
        let span = Span::from_base_size(block, bytes);
        // SAFETY: the block is `bytes` of memory no one else uses, and it
        // lives for the process's life (it is never freed).
        unsafe { self.heap.lock().claim(span) }.is_ok()
    }

    /// The thread the caller starts next owns the heap from its first
    /// allocation or free on. Why not the new thread saying so itself: a
    /// thread's start frees what its spawner allocated for it (Rust's
    /// `ThreadInit`) before any of its own code runs. Another thread of
    /// the server's that allocated through the module in that instant
    /// would own the heap instead: nothing breaks, the worker then counts
    /// on the server's allocator as before.
    pub fn adopt_next_new_thread(&self) {
        self.spawner.store(this_thread(), Ordering::Release);
        self.owner.store(NEXT, Ordering::Release);
    }

    #[inline]
    pub fn is_owner(&self) -> bool {
        let (owner, me) = (self.owner.load(Ordering::Relaxed), this_thread());
        owner == me || (owner == NEXT && self.claim(me))
    }

    #[cold]
    fn claim(&self, me: usize) -> bool {
        me != self.spawner.load(Ordering::Acquire)
            && (self.owner)
                .compare_exchange(NEXT, me, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    #[inline]
    pub fn contains(&self, ptr: *mut u8) -> bool {
        let at = ptr as usize;
        let blocks = self.bounds.iter().take(self.blocks.load(Ordering::Acquire));
        blocks.into_iter().any(|(base, end)| {
            at >= base.load(Ordering::Relaxed) && at < end.load(Ordering::Relaxed)
        })
    }

    /// A block of `layout` from the heap; null when it has no room (counted
    /// as an overflow: the caller allocates elsewhere).
    ///
    /// # Safety
    /// `layout` has a non-zero size.
    pub unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's promise.
        let block = unsafe { self.heap.alloc(layout) };
        if block.is_null() {
            self.overflows.fetch_add(1, Ordering::Relaxed);
        }
        block
    }

    /// # Safety
    /// `ptr` came from [`Self::alloc`] with `layout`, freed once.
    pub unsafe fn free(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's promise.
        unsafe { self.heap.dealloc(ptr, layout) }
    }

    /// The owner frees a block of the server's: it is kept for another
    /// thread to free. `free_now` frees it at once where it cannot be kept
    /// (the list is being grown by this very call).
    pub fn defer(&self, block: *mut u8, free_now: impl FnOnce(*mut u8)) {
        match self.deferred.try_lock() {
            Ok(mut deferred) => {
                deferred.push(block as usize);
                self.pending.store(true, Ordering::Release);
            }
            Err(_) => free_now(block),
        }
    }

    /// Frees, with `free`, the blocks the owner left (called by any other
    /// thread as it allocates or frees).
    #[inline]
    pub fn free_deferred(&self, free: impl Fn(*mut u8)) {
        if self.pending.load(Ordering::Relaxed) {
            self.free_deferred_now(free);
        }
    }

    #[cold]
    fn free_deferred_now(&self, free: impl Fn(*mut u8)) {
        if !self.pending.swap(false, Ordering::AcqRel) {
            return;
        }
        let blocks = match self.deferred.lock() {
            Ok(mut deferred) => std::mem::take(&mut *deferred),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for block in &blocks {
            free(*block as *mut u8);
        }
    }

    /// The bytes of every block, in use or not.
    fn size(&self) -> usize {
        let blocks = self.bounds.iter().take(self.blocks.load(Ordering::Acquire));
        let size = |(base, end): &(AtomicUsize, AtomicUsize)| {
            end.load(Ordering::Acquire) - base.load(Ordering::Acquire)
        };
        blocks.map(size).sum()
    }

    pub fn figures(&self) -> HeapFigures {
        HeapFigures {
            bytes: self.size(),
            used_bytes: (self.heap.try_lock())
                .map_or(0, |talc| talc.get_counters().allocated_bytes),
            overflows: self.overflows.load(Ordering::Relaxed),
        }
    }
}

impl Default for ThreadHeap {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn is_block_of(block: *mut u8, layout: Layout) -> bool {
        !block.is_null() && block as usize % layout.align() == 0
    }

    fn reserved(bytes: usize) -> ThreadHeap {
        let heap = ThreadHeap::new();
        // Leaked: a heap's block lives for the process's life.
        let block = Box::leak(vec![0u8; bytes].into_boxed_slice());
        let mut given = Some(block.as_mut_ptr());
        assert!(heap.reserve(bytes, |_| given.take().expect("one block")));
        heap
    }

    #[test]
    fn the_owner_allocates_from_its_block_until_full_then_overflows() {
        let heap = reserved(64 * 1024);
        assert!(!heap.is_owner());
        heap.owner.store(this_thread(), Ordering::SeqCst);
        assert!(heap.is_owner());
        let layout = Layout::from_size_align(1000, 64).unwrap();
        let mut blocks = Vec::new();
        loop {
            // SAFETY: a non-zero size.
            let block = unsafe { heap.alloc(layout) };
            if block.is_null() {
                break;
            }
            assert!(is_block_of(block, layout) && heap.contains(block));
            blocks.push(block);
        }
        assert!(
            blocks.len() > 50,
            "{} blocks of 1000 in 64 KiB",
            blocks.len()
        );
        assert_eq!(heap.figures().overflows, 1);
        assert!(heap.figures().used_bytes >= 1000 * blocks.len());
        for block in blocks {
            // SAFETY: allocated above with this layout, freed once.
            unsafe { heap.free(block, layout) };
        }
        assert_eq!(heap.figures().used_bytes, 0);
        assert_eq!(heap.figures().bytes, 64 * 1024);
        // A heap large enough stays as it is; one too small grows.
        assert!(heap.reserve(64 * 1024, |_| panic!("large enough")));
        let mut asked = Vec::new();
        let leak = |bytes| {
            asked.push(bytes);
            Box::leak(vec![0u8; bytes].into_boxed_slice()).as_mut_ptr()
        };
        assert!(heap.reserve(200 * 1024, leak));
        assert_eq!(asked, [136 * 1024]);
        assert_eq!(heap.figures().bytes, 200 * 1024);
    }

    #[test]
    fn a_heap_three_quarters_full_doubles_until_its_last_block() {
        let heap = reserved(16 * 1024);
        heap.owner.store(this_thread(), Ordering::SeqCst);
        let leak = |bytes| Box::leak(vec![0u8; bytes].into_boxed_slice()).as_mut_ptr();
        heap.grow_if_needed(|_| panic!("nearly empty"));
        let layout = Layout::from_size_align(1024, 16).unwrap();
        let mut blocks = Vec::new();
        for expected in (0..MAX_BLOCKS).map(|n| (16 * 1024) << n) {
            assert_eq!(heap.figures().bytes, expected);
            while heap.figures().used_bytes <= expected / 4 * 3 {
                // SAFETY: a non-zero size.
                let block = unsafe { heap.alloc(layout) };
                assert!(heap.contains(block));
                blocks.push(block);
            }
            heap.grow_if_needed(leak);
        }
        assert_eq!(heap.figures().bytes, (16 * 1024) << (MAX_BLOCKS - 1));
        assert_eq!(heap.figures().overflows, 0);
        for block in blocks {
            // SAFETY: allocated above with this layout, freed once.
            unsafe { heap.free(block, layout) };
        }
    }

    #[test]
    fn another_thread_is_no_owner_and_frees_what_the_owner_left() {
        let heap = std::sync::Arc::new(reserved(4096));
        heap.owner.store(this_thread(), Ordering::SeqCst);
        let outside = 0x1000 as *mut u8;
        assert!(!heap.contains(outside));
        heap.defer(outside, |_| panic!("the list was free"));
        heap.defer(outside.wrapping_add(16), |_| panic!("the list was free"));
        static FREED: AtomicUsize = AtomicUsize::new(0);
        let other = std::sync::Arc::clone(&heap);
        std::thread::spawn(move || {
            assert!(!other.is_owner());
            other.free_deferred(|_| {
                FREED.fetch_add(1, Ordering::SeqCst);
            });
            other.free_deferred(|_| panic!("freed twice"));
        })
        .join()
        .unwrap();
        assert_eq!(FREED.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_next_thread_started_owns_the_heap_and_its_spawner_never_does() {
        let heap = std::sync::Arc::new(reserved(4096));
        heap.adopt_next_new_thread();
        assert!(!heap.is_owner(), "the spawner");
        let started = std::sync::Arc::clone(&heap);
        let (done, wait) = std::sync::mpsc::channel::<()>();
        // Kept alive while the next is asked: a new thread may get the
        // handle of one that ended.
        let owner = std::thread::spawn(move || {
            assert!(started.is_owner());
            wait.recv().unwrap();
        });
        while heap.owner.load(Ordering::SeqCst) == NEXT {
            std::thread::yield_now();
        }
        let later = std::sync::Arc::clone(&heap);
        std::thread::spawn(move || assert!(!later.is_owner()))
            .join()
            .unwrap();
        done.send(()).unwrap();
        owner.join().unwrap();
        assert!(!heap.is_owner());
    }

    #[test]
    fn a_block_is_freed_at_once_while_the_list_is_held() {
        let heap = reserved(4096);
        let held = heap.deferred.lock().unwrap();
        let mut freed = false;
        heap.defer(0x2000 as *mut u8, |_| freed = true);
        drop(held);
        assert!(freed);
        heap.free_deferred(|_| panic!("nothing was kept"));
    }
}
