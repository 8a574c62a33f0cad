//! The live view's state: what is shown (the last snapshot, filtered and
//! sorted), the selection, the screen, a filter being typed, the pause,
//! each key's history. Keys change it through [`Console::press`]; drawing
//! (`draw`) only reads it, and polling the servers (`events`) only hands it
//! snapshots, so all of it is testable without a terminal or a server.

use crate::connection::nodes::Node;
use crate::live::history::History;
use crate::live::keymap::{self, Command, Edit};
use crate::reading::filter::Filter;
use crate::reading::hot_keys::{KeyId, Snapshot};
use crate::reading::metric::{Metric, Rates};
use crate::reading::sort::Order;
use crossterm::event::KeyEvent;

/// Ten minutes of refreshes at the default interval: the details' chart.
pub const HISTORY_SPAN: usize = 600;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screen {
    Keys,
    /// One key's details; it stays on that key even when the key leaves
    /// the list.
    Details(KeyId),
    Nodes,
    /// Each node's hottest clients.
    Clients,
    Help,
}

/// Which filter a prompt edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    KeyPattern,
    Node,
    Db,
}

impl Field {
    pub fn label(self) -> &'static str {
        match self {
            Field::KeyPattern => "match",
            Field::Node => "node",
            Field::Db => "db",
        }
    }
}

/// A filter being typed: applied as it is typed, put back on Esc.
#[derive(Clone, Debug)]
pub struct Prompt {
    pub field: Field,
    pub text: String,
    before: Filter,
}

/// What the command line asked the view for at start.
pub struct Settings {
    pub order: Order,
    pub filter: Filter,
    /// List at most this many keys (`--count`); every tracked key if `None`.
    pub limit: Option<usize>,
    pub interval_ms: u64,
}

pub struct Console {
    order: Order,
    filter: Filter,
    limit: Option<usize>,
    interval_ms: u64,
    snapshot: Snapshot,
    /// Refreshes applied (0: still waiting for the first).
    refreshes: u64,
    /// The snapshot's keys that the filter selects, in order.
    rows: Vec<(KeyId, Rates)>,
    selected: Option<KeyId>,
    selected_row: usize,
    first_row: usize,
    page_rows: usize,
    node_row: usize,
    paused: bool,
    screen: Screen,
    prompt: Option<Prompt>,
    history: History,
    message: Option<String>,
    quit: bool,
}

impl Console {
    pub fn new(nodes: Vec<Node>, settings: Settings) -> Self {
        Console {
            order: settings.order,
            filter: settings.filter,
            limit: settings.limit,
            interval_ms: settings.interval_ms,
            snapshot: Snapshot {
                nodes,
                ..Snapshot::default()
            },
            refreshes: 0,
            rows: Vec::new(),
            selected: None,
            selected_row: 0,
            first_row: 0,
            page_rows: 10,
            node_row: 0,
            paused: false,
            screen: Screen::Keys,
            prompt: None,
            history: History::new(HISTORY_SPAN),
            message: None,
            quit: false,
        }
    }

    /// A new snapshot, unless paused: then the screen stays as it is.
    pub fn apply(&mut self, snapshot: Snapshot) {
        if self.paused {
            return;
        }
        self.history.record(&snapshot.keys);
        self.snapshot = snapshot;
        self.refreshes += 1;
        self.relist();
    }

    pub fn press(&mut self, key: &KeyEvent) {
        self.message = None;
        if self.prompt.is_some() {
            match keymap::edit(key) {
                Some(Ok(edit)) => self.edit(edit),
                Some(Err(command)) => self.execute(command),
                None => {}
            }
        } else if let Some(command) = keymap::command(key) {
            self.execute(command);
        }
    }

    /// The rows the table has room for, for paging and scrolling.
    pub fn set_page_rows(&mut self, rows: usize) {
        self.page_rows = rows.max(1);
        self.scroll_to_selection();
    }

    pub fn execute(&mut self, command: Command) {
        match command {
            Command::Quit => self.quit = true,
            Command::Back => self.screen = Screen::Keys,
            Command::Up => self.step(-1),
            Command::Down => self.step(1),
            Command::PageUp => self.step(-(self.page_rows as isize)),
            Command::PageDown => self.step(self.page_rows as isize),
            Command::First => self.step(isize::MIN),
            Command::Last => self.step(isize::MAX),
            Command::Open => self.open(),
            Command::Nodes => self.toggle(Screen::Nodes),
            Command::Clients => self.toggle(Screen::Clients),
            Command::Help => self.toggle(Screen::Help),
            Command::SortLeft | Command::SortRight => {
                let right = command == Command::SortRight;
                self.order.key = self.order.key.step(right, &self.metrics());
                self.relist();
            }
            Command::Reverse => {
                self.order.reversed = !self.order.reversed;
                self.relist();
            }
            Command::EditKeyPattern => self.start_prompt(Field::KeyPattern),
            Command::EditNode => self.start_prompt(Field::Node),
            Command::EditDb => self.start_prompt(Field::Db),
            Command::ClearFilters => {
                self.filter = Filter::default();
                self.relist();
            }
            Command::Pause => self.paused = !self.paused,
        }
    }

    fn edit(&mut self, edit: Edit) {
        let Some(prompt) = self.prompt.as_mut() else {
            return;
        };
        match edit {
            Edit::Type(c) => prompt.text.push(c),
            Edit::Erase => {
                prompt.text.pop();
            }
            Edit::Accept => {
                self.prompt = None;
                return;
            }
            Edit::Cancel => {
                self.filter = prompt.before.clone();
                self.prompt = None;
                self.relist();
                return;
            }
        }
        let (field, text) = (prompt.field, prompt.text.clone());
        self.set_filter(field, &text);
    }

    /// The filter as typed so far; a database that is not a number leaves
    /// the database filter as it was, and says so.
    fn set_filter(&mut self, field: Field, text: &str) {
        match field {
            Field::KeyPattern => self.filter.set_key_pattern(text.as_bytes()),
            Field::Node => self.filter.set_node(text),
            Field::Db if text.is_empty() => self.filter.set_db(None),
            Field::Db => match text.parse() {
                Ok(db) => self.filter.set_db(Some(db)),
                Err(_) => self.message = Some(format!("not a database number: {text}")),
            },
        }
        self.relist();
    }

    fn start_prompt(&mut self, field: Field) {
        let filter = &self.filter;
        let pattern = filter
            .key_pattern()
            .and_then(|p| std::str::from_utf8(p).ok());
        let text = match field {
            Field::KeyPattern => pattern.map(str::to_string),
            Field::Node => filter.node().map(str::to_string),
            Field::Db => filter.db().map(|db| db.to_string()),
        };
        self.prompt = Some(Prompt {
            field,
            text: text.unwrap_or_default(),
            before: self.filter.clone(),
        });
    }

    /// Enter: a key's details from the keys (or from its details, back);
    /// in the nodes view, the selected node's keys.
    fn open(&mut self) {
        match &self.screen {
            Screen::Keys => {
                if let Some(id) = self.selected.clone() {
                    self.screen = Screen::Details(id);
                }
            }
            Screen::Details(_) | Screen::Help | Screen::Clients => self.screen = Screen::Keys,
            Screen::Nodes => {
                if let Some(node) = self.snapshot.nodes.get(self.node_row) {
                    let address = node.address.clone();
                    self.filter.set_node(&address);
                    self.screen = Screen::Keys;
                    self.relist();
                }
            }
        }
    }

    fn toggle(&mut self, screen: Screen) {
        self.screen = if self.screen == screen {
            Screen::Keys
        } else {
            screen
        };
    }

    /// Moves the selection (of keys, or of nodes in the nodes view); the
    /// details follow it.
    fn step(&mut self, by: isize) {
        if self.screen == Screen::Nodes {
            let last = self.snapshot.nodes.len().saturating_sub(1);
            self.node_row = self.node_row.saturating_add_signed(by).min(last);
            return;
        }
        let last = self.rows.len().saturating_sub(1);
        let to = self.selected_row.saturating_add_signed(by).min(last);
        // No rows: nothing to select.
        let Some((id, _)) = self.rows.get(to) else {
            return;
        };
        let id = id.clone();
        self.selected_row = to;
        if let Screen::Details(_) = self.screen {
            self.screen = Screen::Details(id.clone());
        }
        self.selected = Some(id);
        self.scroll_to_selection();
    }

    /// The rows again after a new snapshot, filter or order; the selection
    /// stays on its key while the key is listed, else on its row.
    fn relist(&mut self) {
        self.rows = self.filter.select(&self.snapshot.keys, self.order);
        if let Some(limit) = self.limit {
            self.rows.truncate(limit);
        }
        if self.rows.is_empty() {
            self.selected = None;
            self.selected_row = 0;
            self.first_row = 0;
            return;
        }
        let found = self
            .selected
            .as_ref()
            .and_then(|id| self.rows.iter().position(|(row, _)| row == id));
        self.selected_row = found.unwrap_or(self.selected_row.min(self.rows.len() - 1));
        // Some: the rows are not empty and the row is one of them.
        self.selected = self.rows.get(self.selected_row).map(|(id, _)| id.clone());
        self.scroll_to_selection();
    }

    fn scroll_to_selection(&mut self) {
        if self.selected_row < self.first_row {
            self.first_row = self.selected_row;
        } else if self.selected_row >= self.first_row + self.page_rows {
            self.first_row = self.selected_row + 1 - self.page_rows;
        }
        let last_page_start = self.rows.len().saturating_sub(self.page_rows);
        self.first_row = self.first_row.min(last_page_start);
    }

    pub fn wants_to_quit(&self) -> bool {
        self.quit
    }

    pub fn rows(&self) -> &[(KeyId, Rates)] {
        &self.rows
    }

    /// The selected row's place in [`Self::rows`].
    pub fn selected_row(&self) -> Option<usize> {
        self.selected.as_ref().map(|_| self.selected_row)
    }

    /// The first row the table shows.
    pub fn first_row(&self) -> usize {
        self.first_row
    }

    pub fn node_row(&self) -> usize {
        self.node_row
    }

    /// The key's rates now, if it is listed.
    pub fn rates_of(&self, id: &KeyId) -> Option<(usize, &Rates)> {
        (self.rows.iter().enumerate())
            .find(|(_, (row, _))| row == id)
            .map(|(at, (_, rates))| (at, rates))
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The rate columns: misses only once a node counts them.
    pub fn metrics(&self) -> Vec<Metric> {
        self.snapshot.metrics()
    }

    pub fn refreshes(&self) -> u64 {
        self.refreshes
    }

    pub fn order(&self) -> Order {
        self.order
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }
}

#[cfg(test)]
mod tests;
