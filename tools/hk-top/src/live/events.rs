//! Everything the live view waits for, on one channel: keys and resizes
//! (a thread reading the terminal), snapshots (the poller), and the
//! signals that end it (SIGTERM, SIGHUP, SIGINT, SIGQUIT, through
//! signal-hook, so that hk-top restores the terminal before it exits
//! instead of dying in raw mode).

use crate::reading::hot_keys::Snapshot;
use crossterm::event::{self, Event, KeyEvent, KeyEventKind};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::mpsc::Sender;

pub enum Input {
    Key(KeyEvent),
    /// The terminal changed size: draw again.
    Resize,
    Snapshot(Snapshot),
    Signal(i32),
    /// The terminal cannot be read any more.
    TerminalLost(std::io::Error),
}

/// Keys and resizes, until the terminal fails or the view is gone.
pub fn read_terminal(inputs: Sender<Input>) {
    std::thread::spawn(move || loop {
        let input = match event::read() {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => Input::Key(key),
            Ok(Event::Resize(..)) => Input::Resize,
            Ok(_) => continue,
            Err(e) => {
                let _ = inputs.send(Input::TerminalLost(e));
                return;
            }
        };
        if inputs.send(input).is_err() {
            return;
        }
    });
}

/// The ending signals, caught from now on (before the terminal is taken,
/// so that none can leave it in raw mode).
pub fn catch_signals(inputs: Sender<Input>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])?;
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if inputs.send(Input::Signal(signal)).is_err() {
                return;
            }
        }
    });
    Ok(())
}
