//! State that only the server's main thread reaches (the command filter,
//! commands, events, timers, INFO, config callbacks), held in a `static`
//! without a lock. Not a thread-local: in a loaded module every access to
//! one is a call (`__tls_get_addr`), paid on every command the filter sees.

use std::cell::{Cell, UnsafeCell};

pub struct MainThreadCell<T> {
    busy: Cell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: every `MainThreadCell` is reached only from the server's main
// thread (its users are the server's callbacks, which the server calls
// there), and `busy` refuses a second, nested borrow: no two references to
// the value ever exist at once.
unsafe impl<T> Sync for MainThreadCell<T> {}

/// Clears `busy` however the borrow ends, a panic included.
struct Borrowed<'a>(&'a Cell<bool>);

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl<T> MainThreadCell<T> {
    pub const fn new(value: T) -> Self {
        MainThreadCell {
            busy: Cell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the value; `None` if it is already borrowed further up
    /// the stack (a callback the server made from inside another).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if self.busy.replace(true) {
            return None;
        }
        let _borrowed = Borrowed(&self.busy);
        // SAFETY: the main thread only, and `busy` was clear: no other
        // reference to the value exists until `_borrowed` is dropped.
        Some(f(unsafe { &mut *self.value.get() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_borrow_is_refused_and_a_panic_frees_the_cell() {
        static CELL: MainThreadCell<u32> = MainThreadCell::new(1);
        assert_eq!(
            CELL.with(|v| CELL.with(|_| ()).is_none() && *v == 1),
            Some(true)
        );
        let _ = std::panic::catch_unwind(|| CELL.with(|_| panic!("inside")));
        assert_eq!(CELL.with(|v| *v), Some(1), "free again after a panic");
    }
}
