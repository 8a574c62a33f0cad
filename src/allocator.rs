//! Module memory goes through the server's allocator, so that `INFO memory`,
//! `maxmemory` and `MEMORY USAGE` see it.
//!
//! Unlike the crate's allocator it asks with `RedisModule_TryAlloc` where the
//! server has it: a failed allocation returns null instead of aborting the
//! server, so that a sketch's large arrays, reserved with `try_reserve`,
//! turn an out-of-memory into an error reply. (A small allocation that fails
//! still aborts, in Rust's `handle_alloc_error`, as it would in C.)

use redis_module::raw;
use std::alloc::{GlobalAlloc, Layout};

pub struct ServerAllocator;

unsafe impl GlobalAlloc for ServerAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // jemalloc aligns every allocation to its size class: rounding the
        // size up to the alignment is enough for any alignment Rust asks.
        let size = (layout.size() + layout.align() - 1) & !(layout.align() - 1);
        match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
            (Some(try_alloc), _) => try_alloc(size).cast(),
            (None, Some(alloc)) => alloc(size).cast(),
            // Nothing can be allocated before the server hands out its API.
            (None, None) => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if let Some(free) = raw::RedisModule_Free {
            free(ptr.cast());
        }
    }
}
