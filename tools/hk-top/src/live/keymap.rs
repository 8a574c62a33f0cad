//! Keys and what they do: one table ([`BINDINGS`]) that both the key
//! handling and the help screen read, so that the help can never list a
//! key that does something else.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What the operator asked for, whatever key said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    /// Close the details, the help or the nodes view.
    Back,
    Up,
    Down,
    PageUp,
    PageDown,
    First,
    Last,
    /// The selected key's details (or, in the nodes view, that node's keys).
    Open,
    Nodes,
    /// The nodes' hottest clients.
    Clients,
    Help,
    SortLeft,
    SortRight,
    Reverse,
    EditKeyPattern,
    EditNode,
    EditDb,
    ClearFilters,
    Pause,
}

/// Keys while a filter is being typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    Type(char),
    Erase,
    /// Keep what was typed.
    Accept,
    /// Put the filter back as it was.
    Cancel,
}

pub struct Binding {
    pub keys: &'static [KeyCode],
    /// With Ctrl held (Ctrl-C).
    pub ctrl: bool,
    pub does: &'static str,
    /// A word for the one-line help at the bottom, if the key is listed there.
    pub footer: Option<&'static str>,
    pub command: Command,
}

impl Binding {
    /// How the help screen names the keys: `? h F1`, `Ctrl-C`, `Space p`.
    pub fn label(&self) -> String {
        let name = |code: &KeyCode| match *code {
            Char(' ') => "Space".to_string(),
            Char(c) if self.ctrl => format!("Ctrl-{}", c.to_ascii_uppercase()),
            Char(c) => c.to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Up => "↑".to_string(),
            KeyCode::Down => "↓".to_string(),
            KeyCode::PageUp => "PgUp".to_string(),
            KeyCode::PageDown => "PgDn".to_string(),
            // Esc, Enter, Tab, Home, End: as crossterm names them.
            other => format!("{other:?}"),
        };
        self.keys.iter().map(name).collect::<Vec<_>>().join(" ")
    }
}

const fn bind(keys: &'static [KeyCode], does: &'static str, command: Command) -> Binding {
    Binding {
        keys,
        ctrl: false,
        does,
        footer: None,
        command,
    }
}

impl Binding {
    /// Listed in the one-line help as `word`.
    const fn footer(self, word: &'static str) -> Binding {
        Binding {
            footer: Some(word),
            ..self
        }
    }
}

use KeyCode::{Char, Down, End, Enter, Esc, Home, PageDown, PageUp, Tab, Up, F};

pub const BINDINGS: &[Binding] = &[
    bind(&[Char('q')], "quit", Command::Quit).footer("quit"),
    Binding {
        ctrl: true,
        ..bind(&[Char('c')], "quit", Command::Quit)
    },
    bind(&[Char('?'), Char('h'), F(1)], "this help", Command::Help).footer("help"),
    bind(&[Esc], "back to the keys", Command::Back),
    bind(&[Up, Char('k')], "select the key above", Command::Up),
    bind(&[Down, Char('j')], "select the key below", Command::Down),
    bind(&[PageUp], "a page up", Command::PageUp),
    bind(&[PageDown], "a page down", Command::PageDown),
    bind(&[Home, Char('g')], "the first key", Command::First),
    bind(&[End, Char('G')], "the last key", Command::Last),
    bind(&[Enter], "details (nodes view: its keys)", Command::Open).footer("details"),
    bind(&[Tab], "the nodes and their shares", Command::Nodes).footer("nodes"),
    bind(
        &[Char('w')],
        "who sends the most (clients)",
        Command::Clients,
    )
    .footer("who"),
    bind(&[Char('<')], "sort: one column left", Command::SortLeft),
    bind(&[Char('>')], "sort: one column right", Command::SortRight).footer("sort"),
    bind(&[Char('r')], "reverse the order", Command::Reverse),
    bind(
        &[Char('/')],
        "filter: a key pattern",
        Command::EditKeyPattern,
    )
    .footer("match"),
    bind(
        &[Char('n')],
        "filter: a node (or *:7001)",
        Command::EditNode,
    )
    .footer("node"),
    bind(&[Char('d')], "filter: a database", Command::EditDb),
    bind(&[Char('c')], "clear every filter", Command::ClearFilters),
    bind(&[Char(' '), Char('p')], "pause or resume", Command::Pause).footer("pause"),
];

/// The command a key gives, outside of a filter being typed.
pub fn command(key: &KeyEvent) -> Option<Command> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let bound = BINDINGS
        .iter()
        .find(|b| b.ctrl == ctrl && b.keys.contains(&key.code));
    bound.map(|b| b.command)
}

/// What a key does while a filter is typed (Ctrl-C still quits).
pub fn edit(key: &KeyEvent) -> Option<Result<Edit, Command>> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return command(key).map(Err);
    }
    match key.code {
        Char(c) => Some(Ok(Edit::Type(c))),
        KeyCode::Backspace => Some(Ok(Edit::Erase)),
        KeyCode::Enter => Some(Ok(Edit::Accept)),
        KeyCode::Esc => Some(Ok(Edit::Cancel)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::key;

    #[test]
    fn each_key_means_one_thing() {
        let mut seen = Vec::new();
        for b in BINDINGS {
            for code in b.keys {
                assert!(!seen.contains(&(code, b.ctrl)), "{code:?} bound twice");
                seen.push((code, b.ctrl));
            }
        }
        assert_eq!(command(&key(Char('q'))), Some(Command::Quit));
        let ctrl_c = KeyEvent::new(Char('c'), KeyModifiers::CONTROL);
        assert_eq!(command(&ctrl_c), Some(Command::Quit));
        assert_eq!(command(&key(Char('c'))), Some(Command::ClearFilters));
        // Shift only changes the character: G is "the last key".
        let shifted = KeyEvent::new(Char('G'), KeyModifiers::SHIFT);
        assert_eq!(command(&shifted), Some(Command::Last));
        assert_eq!(command(&key(Char('x'))), None);
        // The help's names of the keys.
        let labels: Vec<String> = BINDINGS.iter().map(Binding::label).collect();
        let all =
            "q,Ctrl-C,? h F1,Esc,↑ k,↓ j,PgUp,PgDn,Home g,End G,Enter,Tab,w,<,>,r,/,n,d,c,Space p";
        assert_eq!(labels.join(","), all);
    }

    #[test]
    fn typing_a_filter_takes_every_character_but_ctrl_c() {
        assert_eq!(edit(&key(Char('q'))), Some(Ok(Edit::Type('q'))));
        assert_eq!(edit(&key(KeyCode::Esc)), Some(Ok(Edit::Cancel)));
        let ctrl_c = KeyEvent::new(Char('c'), KeyModifiers::CONTROL);
        assert_eq!(edit(&ctrl_c), Some(Err(Command::Quit)));
    }
}
