//! The terminal while the live view runs: raw mode, the alternate screen,
//! the cursor hidden; and all three given back however hk-top ends: `q`,
//! a signal (the caller returns and this is dropped), an error (likewise),
//! or a panic on any thread (the panic hook restores, prints the panic on
//! the normal screen, and ends the process: a view whose poller died would
//! otherwise go on showing old figures as if they were new).
//!
//! A panic on another thread than the one that draws waits for a frame
//! being drawn to finish, and no frame starts after it: a frame drawn after
//! the restore would land on the normal screen.

use crossterm::cursor::Show;
use crossterm::execute;
use crossterm::terminal::{disable_raw_mode, LeaveAlternateScreen};
use ratatui::layout::Size;
use ratatui::{DefaultTerminal, Frame};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

/// Held while a frame is drawn, and by a panic on another thread for good.
static DRAWING: Mutex<()> = Mutex::new(());
/// The thread that draws.
static DRAWER: OnceLock<ThreadId> = OnceLock::new();

/// The exit status of a panic, as Rust's own.
const PANIC_STATUS: i32 = 101;

pub struct TerminalSession {
    terminal: DefaultTerminal,
}

impl TerminalSession {
    /// Takes the terminal; this thread is the one that draws.
    pub fn start() -> std::io::Result<Self> {
        let _ = DRAWER.set(std::thread::current().id());
        let terminal = ratatui::try_init()?;
        // After ratatui's own hook (which restores at once), so that this
        // one runs first and stops the frames before anything is restored.
        restore_on_panic();
        Ok(TerminalSession { terminal })
    }

    pub fn size(&self) -> std::io::Result<Size> {
        self.terminal.size()
    }

    pub fn draw(&mut self, frame: impl FnOnce(&mut Frame)) -> std::io::Result<()> {
        let _drawing = DRAWING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.terminal.draw(frame).map(|_| ())
    }
}

impl Drop for TerminalSession {
    fn drop(&mut self) {
        restore();
    }
}

/// Cooked mode, the normal screen and the cursor back. Safe to call twice,
/// and on a terminal that is gone (errors are ignored: nothing is left to
/// tell).
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, Show);
}

fn restore_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // The drawing thread itself may be inside a frame: it cannot wait.
        let _no_more_frames = (DRAWER.get() != Some(&std::thread::current().id())).then(|| {
            DRAWING
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        });
        restore();
        previous(info);
        std::process::exit(PANIC_STATUS);
    }));
}
