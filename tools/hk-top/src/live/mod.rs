//! The live view: the console's state, drawn after every input, fed by the
//! keyboard, the poller and the signals (see `events`).

pub mod columns;
pub mod console;
pub mod draw;
pub mod elide;
pub mod events;
pub mod history;
pub mod keymap;
pub mod terminal;

use crate::connection::nodes::Node;
use crate::options::Options;
use console::{Console, Settings};
use events::{Input, Poller};
use std::sync::mpsc;
use std::time::Duration;
use terminal::TerminalSession;

/// How the view ended, for the exit status.
pub enum Ending {
    Quit,
    Signal(i32),
}

pub fn run(o: &Options, settings: Settings, nodes: Vec<Node>) -> Result<Ending, String> {
    let (send, inputs) = mpsc::channel();
    events::catch_signals(send.clone()).map_err(|e| format!("cannot catch signals: {e}"))?;
    let mut session = TerminalSession::start().map_err(|e| format!("terminal: {e}"))?;
    events::read_terminal(send.clone());
    Poller {
        connection: o.connection.clone(),
        address: o.address.clone(),
        replicas: o.replicas,
        nodes: nodes.clone(),
        interval: Duration::from_millis(o.interval_ms),
    }
    .spawn(send);
    let mut console = Console::new(nodes, settings);
    loop {
        let height = session.size().map_err(|e| format!("terminal: {e}"))?.height;
        console.set_page_rows(draw::table_rows(height));
        session
            .draw(|frame| draw::draw(frame, &console))
            .map_err(|e| format!("terminal: {e}"))?;
        match inputs.recv() {
            Ok(Input::Key(key)) => {
                crate::fault::panic_if_asked("key");
                console.press(&key);
            }
            Ok(Input::Resize) => {}
            Ok(Input::Snapshot(snapshot)) => console.apply(snapshot),
            Ok(Input::Signal(signal)) => return Ok(Ending::Signal(signal)),
            Ok(Input::TerminalLost(e)) => return Err(format!("terminal: {e}")),
            Err(_) => return Err("every input is gone".to_string()),
        }
        if console.wants_to_quit() {
            return Ok(Ending::Quit);
        }
    }
}
