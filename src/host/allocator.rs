//! Module memory goes through the server's allocator, so that `INFO memory`,
//! `maxmemory` and `MEMORY USAGE` see it.
//!
//! Unlike the crate's allocator it asks with `RedisModule_TryAlloc` where the
//! server has it: a failed allocation returns null instead of aborting the
//! server, so that a sketch's large arrays, reserved with `try_reserve`,
//! turn an out-of-memory into an error reply. (A small allocation that fails
//! still aborts, in Rust's `handle_alloc_error`, as it would in C.)
//!
//! Any alignment is honoured, whatever allocator the server was built with:
//! jemalloc, libc (`malloc=libc`, as Valkey 9.1's and Redis 8's builds here)
//! or tcmalloc all align a block to at least [`GUARANTEED_ALIGN`]; a layout
//! that asks for more is over-allocated and aligned by hand.

use crate::host::thread_heap::{HeapFigures, ThreadHeap};
use std::alloc::{GlobalAlloc, Layout};

/// What every server allocator guarantees on 64-bit Linux (`max_align_t`):
/// glibc's malloc 16, jemalloc and tcmalloc 16 from 16 bytes up (8 below,
/// where a size rounded up to its alignment never asks for more).
const GUARANTEED_ALIGN: usize = 16;

/// The bytes before an over-aligned block that hold where its allocation
/// starts.
const HEADER: usize = std::mem::size_of::<usize>();

pub struct ServerAllocator;

fn server_alloc(size: usize) -> *mut u8 {
    match (
        crate::server_api!(RedisModule_TryAlloc),
        crate::server_api!(RedisModule_Alloc),
    ) {
        // SAFETY: the server's allocators take any size; null is failure.
        (Some(try_alloc), _) => unsafe { try_alloc(size) }.cast(),
        // SAFETY: as above (this one aborts on failure, in the server).
        (None, Some(alloc)) => unsafe { alloc(size) }.cast(),
        // Nothing can be allocated before the server hands out its API.
        (None, None) => std::ptr::null_mut(),
    }
}

fn server_free(ptr: *mut u8) {
    if let Some(free) = crate::server_api!(RedisModule_Free) {
        // SAFETY: `ptr` came from `server_alloc`, freed once.
        unsafe { free(ptr.cast()) };
    }
}

/// A block of `layout` from `raw_alloc`, which aligns to at least
/// [`GUARANTEED_ALIGN`] (null if it fails).
fn alloc_with(layout: Layout, raw_alloc: impl FnOnce(usize) -> *mut u8) -> *mut u8 {
    let align = layout.align();
    if align <= GUARANTEED_ALIGN {
        // Rounded up to the alignment: an allocator's size classes then
        // align it (a 16-byte block, not an 8-byte one, for align 16).
        return raw_alloc((layout.size() + align - 1) & !(align - 1));
    }
    // Room to slide the block up to the alignment, with the start of the
    // allocation kept just before it.
    let Some(size) = layout.size().checked_add(align + HEADER) else {
        return std::ptr::null_mut();
    };
    let base = raw_alloc(size);
    if base.is_null() {
        return base;
    }
    let offset = (base as usize + HEADER).next_multiple_of(align) - base as usize;
    let block = base.wrapping_add(offset);
    // SAFETY: `block - HEADER .. block + layout.size()` lies within the
    // allocation (`offset <= align - 1 + HEADER`); written unaligned.
    unsafe {
        block
            .sub(HEADER)
            .cast::<usize>()
            .write_unaligned(base as usize)
    };
    block
}

/// Frees a block [`alloc_with`] gave for the same `layout`.
///
/// # Safety
/// `ptr` came from `alloc_with(layout, ..)` and is freed once.
unsafe fn dealloc_with(ptr: *mut u8, layout: Layout, raw_free: impl FnOnce(*mut u8)) {
    if layout.align() <= GUARANTEED_ALIGN {
        raw_free(ptr);
        return;
    }
    // SAFETY: an over-aligned block from `alloc_with`: its header before it.
    let base = unsafe { ptr.sub(HEADER).cast::<usize>().read_unaligned() };
    raw_free(base as *mut u8);
}

/// The tracker's worker's own heap ([`ThreadHeap`] says why).
static WORKER_HEAP: ThreadHeap = ThreadHeap::new();

/// Makes the worker's heap large enough for `bytes`; call on the main
/// thread before the worker starts counting.
pub fn reserve_worker_heap(bytes: usize) -> bool {
    WORKER_HEAP.reserve(bytes, server_alloc)
}

/// Grows the worker's heap if it is nearly full; call on the main thread.
pub fn grow_worker_heap() {
    WORKER_HEAP.grow_if_needed(server_alloc);
}

/// The next thread the caller starts (the worker's) allocates from the
/// worker's heap.
pub fn give_next_thread_the_worker_heap() {
    WORKER_HEAP.adopt_next_new_thread();
}

pub fn worker_heap_figures() -> HeapFigures {
    WORKER_HEAP.figures()
}

// SAFETY: every block returned is at least `layout.size()` bytes aligned to
// `layout.align()` (`alloc_with`, or the worker's heap, which honours any
// layout), and `dealloc` frees each block to where it came from: the heap
// holds its blocks in its own range, every other block is the server's.
unsafe impl GlobalAlloc for ServerAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WORKER_HEAP.is_owner() {
            // SAFETY: a GlobalAlloc layout has a non-zero size.
            let block = unsafe { WORKER_HEAP.alloc(layout) };
            if !block.is_null() {
                return block;
            }
        } else {
            WORKER_HEAP.free_deferred(server_free);
        }
        alloc_with(layout, server_alloc)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if WORKER_HEAP.contains(ptr) {
            // SAFETY: the heap's range holds only its own blocks.
            return unsafe { WORKER_HEAP.free(ptr, layout) };
        }
        if WORKER_HEAP.is_owner() {
            let defer = |block| WORKER_HEAP.defer(block, server_free);
            // SAFETY: the caller's promise: `ptr` is ours, for this layout.
            return unsafe { dealloc_with(ptr, layout, defer) };
        }
        WORKER_HEAP.free_deferred(server_free);
        // SAFETY: the caller's promise: `ptr` is ours, for this layout.
        unsafe { dealloc_with(ptr, layout, server_free) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alignment_is_honoured_over_an_allocator_that_gives_sixteen() {
        // glibc's malloc: 16-byte aligned, as a `malloc=libc` server's.
        let malloc = |size| {
            // SAFETY: plain malloc; freed below.
            let p = unsafe { libc::malloc(size) }.cast::<u8>();
            assert_eq!(p as usize % GUARANTEED_ALIGN, 0);
            p
        };
        // SAFETY: blocks from libc::malloc, freed once.
        let free = |p: *mut u8| unsafe { libc::free(p.cast()) };
        for align in (0..13).map(|shift| 1usize << shift) {
            for size in [1, 7, 8, 16, 24, 100, 4096] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let block = alloc_with(layout, malloc);
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0, "size {size} align {align}");
                // SAFETY: the block holds `size` bytes.
                unsafe {
                    std::ptr::write_bytes(block, 0xa5, size);
                    dealloc_with(block, layout, free);
                }
            }
        }
    }
}
