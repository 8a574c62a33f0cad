//! The live view as an operator meets it: the real binary in a real
//! terminal (tmux, on a private socket), against real servers. It is
//! started, sorted, filtered, paused, resized, asked for a key's details,
//! the nodes and the help, and ended every way it can end (q, Ctrl-C,
//! SIGTERM, SIGHUP, a panic in either thread, with a server gone on the
//! way); each time the terminal must be as it was found: cooked mode (the
//! shell's own `stty -a` after hk-top), the normal screen with what it
//! showed before, the cursor shown.

use test_harness as common;

use crate::support::{get_n, signal};
use common::{config_set, value, Cluster, Server, TRACK_EVERY_COMMAND};
use std::path::PathBuf;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// What the pane shows before hk-top starts: it must be back at the end.
const BEFORE: &str = "the shell before hk-top";

/// One tmux server of our own, running `hk-top` in its only pane.
struct Terminal {
    dir: TempDir,
    socket: PathBuf,
}

impl Terminal {
    /// A `width`×`height` terminal running `hk-top args`, with `env` set
    /// (by a shell that writes its pid to `pid`, then becomes hk-top);
    /// when hk-top ends, the shell prints its exit status and saves the
    /// terminal's settings.
    fn start(width: u16, height: u16, args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let quoted = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let mut line: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k}={}", quoted(v)))
            .collect();
        let pid = quoted(&dir.path().join("pid").to_string_lossy());
        let become_hk_top = quoted(&format!("echo $$ > {pid}; exec \"$@\""));
        line.extend(["sh -c".into(), become_hk_top, "sh".into()]);
        line.push(quoted(env!("CARGO_BIN_EXE_hk-top")));
        line.extend(args.iter().map(|a| quoted(a)));
        let stty = dir.path().join("stty");
        let script = format!(
            "echo '{BEFORE}'\n{}\necho \"hk-top exited $?\"\nstty -a > {}\nexec sleep 3600\n",
            line.join(" "),
            quoted(&stty.to_string_lossy())
        );
        let script_path = dir.path().join("run.sh");
        std::fs::write(&script_path, script).unwrap();
        let terminal = Terminal {
            socket: dir.path().join("tmux.sock"),
            dir,
        };
        let (w, h) = (width.to_string(), height.to_string());
        let shell = format!("sh {}", script_path.display());
        terminal.tmux(&["new-session", "-d", "-s", "hk", "-x", &w, "-y", &h, &shell]);
        terminal
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .env("TERM", "xterm-256color")
            // Run from inside a tmux of one's own: this one is apart.
            .env_remove("TMUX")
            .output()
            .expect("tmux (make testdeps installs it)");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tmux {args:?}: {said}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Keys by tmux's names (`Down`, `Enter`, `C-c`, `Tab`, `Escape`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "hk"];
        args.extend(keys);
        self.tmux(&args);
    }

    /// Text typed as it is.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "hk", "-l", text]);
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "hk"])
    }

    /// The normal screen with what has scrolled off it (a long panic
    /// message, with RUST_BACKTRACE set, scrolls).
    fn history(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-S", "-", "-t", "hk"])
    }

    fn show(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", "hk", format])
            .trim()
            .to_string()
    }

    /// The screen once `ready` holds for it (or a panic with the screen).
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            sleep(Duration::from_millis(50));
        }
    }

    fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    fn resize(&self, width: u16, height: u16) {
        let (w, h) = (width.to_string(), height.to_string());
        self.tmux(&["resize-window", "-t", "hk", "-x", &w, "-y", &h]);
    }

    /// hk-top's process.
    fn hk_top_pid(&self) -> u32 {
        let pid = std::fs::read_to_string(self.dir.path().join("pid")).unwrap();
        pid.trim().parse().unwrap()
    }

    /// hk-top has ended with `status`, and left the terminal as it found it.
    fn assert_restored(&self, status: i32) -> String {
        // The shell saves the settings once hk-top has ended.
        let stty_path = self.dir.path().join("stty");
        common::wait_until("hk-top to end", Duration::from_secs(20), || {
            std::fs::read_to_string(&stty_path).is_ok_and(|t| t.contains("speed"))
        });
        let stty = std::fs::read_to_string(&stty_path).unwrap();
        let settings: Vec<&str> = stty.split([' ', ';', '\n']).collect();
        for cooked in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(settings.contains(&cooked), "{cooked} not back:\n{stty}");
        }
        self.wait_for_text("hk-top exited");
        assert_eq!(
            self.show("#{alternate_on}"),
            "0",
            "left the alternate screen"
        );
        let screen = self.history();
        assert!(
            screen.contains(&format!("hk-top exited {status}")),
            "exit status: {screen}"
        );
        // The shell's line, then what hk-top printed on its way out (a
        // panic's message), and nothing of the view.
        let before = screen
            .find(BEFORE)
            .unwrap_or_else(|| panic!("the normal screen is back:\n{screen}"));
        assert!(
            !screen[before..].contains(" q quit "),
            "a frame after the restore:\n{screen}"
        );
        assert_eq!(self.show("#{cursor_flag}"), "1", "the cursor is shown");
        screen
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn long_key(i: usize) -> String {
    format!("some:much:longer:key:name:for:user:{i:012}")
}

/// The table's rows on a screen: the lines after its header.
fn table_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("KEY"))
        .skip(1)
        .filter(|l| !l.trim().is_empty() && !l.starts_with(" q quit"))
        .collect()
}

/// The line of a screen that starts with `start` (or a panic with the screen).
fn line_of<'a>(screen: &'a str, start: &str) -> &'a str {
    (screen.lines().find(|l| l.starts_with(start)))
        .unwrap_or_else(|| panic!("no line starts with {start}:\n{screen}"))
}

/// `HK.HOTKEYS` commands the server has answered.
fn hotkeys_calls(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_hk.hotkeys:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// A server with five long keys read 20, 16, 12, 8 and 4 times, a counter
/// written 30 times and a binary key read 10 times.
fn busy_server() -> Server {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    for i in 1..=5 {
        get_n(&mut con, long_key(i).as_bytes(), 4 * (6 - i));
    }
    for n in 0..30 {
        value(&mut con, &["SET", "counter:hot", &n.to_string()]);
    }
    get_n(&mut con, b"bin:\xff\xfe", 10);
    server
}

fn start_on(server: &Server, width: u16, height: u16, env: &[(&str, &str)]) -> Terminal {
    let port = server.port.to_string();
    let terminal = Terminal::start(width, height, &["-p", &port, "--interval-ms", "200"], env);
    terminal.wait_for("the hot keys", |s| {
        s.contains("counter:hot") && s.contains(r"bin:\xff\xfe")
    });
    terminal
}

#[test]
fn an_operator_sorts_filters_reads_details_pauses_and_quits() {
    let server = busy_server();
    let address = server.address();
    let t = start_on(&server, 80, 24, &[]);
    at_80_columns_rows_are_distinct_and_addresses_whole(&t, &address);
    sorted_by_writes_then_reads(&t);
    filtered_then_a_key_in_detail(&t, &address);
    t.keys(&["Tab"]);
    let screen = t.wait_for_text("SHARE");
    let node_row = line_of(&screen, &address);
    assert!(
        node_row.contains("primary") && node_row.contains("100.0%"),
        "{screen}"
    );
    t.keys(&["Tab"]);
    t.type_text("?");
    t.wait_for_text("filter: a key pattern");
    t.type_text("?");
    t.wait_for_text("KEY ");
    paused_the_view_stays_until_resumed(&t, &server);
    // Wider: whole names, every row still distinct.
    t.resize(200, 50);
    let screen = t.wait_for("whole names", |s| s.contains(&format!("{} ", long_key(5))));
    for i in 1..=5 {
        let row = table_rows(&screen)
            .into_iter()
            .find(|r| r.starts_with(&format!("{} ", long_key(i))))
            .unwrap_or_else(|| panic!("{} not whole:\n{screen}", long_key(i)));
        assert!(row.contains(&format!(" {address} ")), "{row}");
    }
    t.type_text("q");
    t.assert_restored(0);
}

fn at_80_columns_rows_are_distinct_and_addresses_whole(t: &Terminal, address: &str) {
    let screen = t.screen();
    let rows = table_rows(&screen);
    assert_eq!(rows.len(), 7, "{screen}");
    // Sorted by total: the counter's 30 writes, then the keys by reads.
    assert!(rows[0].starts_with("counter:hot "), "{screen}");
    let mut seen = std::collections::HashSet::new();
    for (row, i) in rows[1..].iter().filter(|r| r.starts_with("some:")).zip(1..) {
        // Shortened in the middle, the end kept, the address whole.
        let key_cell = row.split(' ').next().unwrap();
        assert!(key_cell.contains('…'), "{row}");
        assert!(key_cell.ends_with(&format!("{i:012}")), "{screen}");
        assert!(row.contains(&format!(" {address} ")), "{row}");
        assert!(
            seen.insert(key_cell.to_string()),
            "two rows alike: {screen}"
        );
    }
    assert_eq!(seen.len(), 5);
    let binary = rows.iter().find(|r| r.starts_with("bin:")).expect(&screen);
    assert!(binary.starts_with(r"bin:\xff\xfe "), "escaped: {binary}");
}

fn sorted_by_writes_then_reads(t: &Terminal) {
    t.type_text("<");
    let screen = t.wait_for_text("WRITES/S▼");
    let rows = table_rows(&screen);
    assert!(rows[0].starts_with("counter:hot"), "{screen}");
    t.type_text("<");
    let screen = t.wait_for_text("READS/S▼");
    let rows = table_rows(&screen);
    // Long key 1's row: its first cell ends like the key.
    let first_cell = rows[0].split(' ').next().unwrap();
    assert!(first_cell.ends_with("000000000001"), "{screen}");
    assert!(rows[6].starts_with("counter:hot"), "{screen}");
}

fn filtered_then_a_key_in_detail(t: &Terminal, address: &str) {
    t.type_text("/");
    t.type_text("*00000000000[23]");
    t.keys(&["Enter"]);
    let screen = t.wait_for("two rows", |s| table_rows(s).len() == 2);
    assert!(screen.contains("match: *00000000000[23]"), "{screen}");
    // The second row's details: the whole name, where it lives, its rates.
    t.keys(&["Home", "Down", "Enter"]);
    let screen = t.wait_for_text(&format!("KEY      {}", long_key(3)));
    assert!(screen.contains("DB       0"), "{screen}");
    let node = format!("NODE     {address} (primary)");
    assert!(screen.contains(&node), "{screen}");
    assert!(screen.contains("#2 of 2 by reads"), "{screen}");
    t.keys(&["Escape"]);
    t.type_text("c");
    t.wait_for("every key back", |s| table_rows(s).len() == 7);
}

/// Paused, a refresh that would show a new key does not; resumed, it does.
fn paused_the_view_stays_until_resumed(t: &Terminal, server: &Server) {
    let mut con = server.client();
    t.keys(&["Space"]);
    t.wait_for_text("PAUSED");
    get_n(&mut con, b"late:key", 50);
    // Two whole polls after the key was read (each asks READS, WRITES and
    // MISSES, which a server not counting misses refuses: still a call).
    let asked = hotkeys_calls(&mut con);
    common::wait_until("two polls", Duration::from_secs(20), || {
        hotkeys_calls(&mut con) >= asked + 6
    });
    let screen = t.screen();
    assert!(
        !screen.contains("late:key") && screen.contains("PAUSED"),
        "{screen}"
    );
    t.keys(&["Space"]);
    let screen = t.wait_for_text("late:key");
    assert!(!screen.contains("PAUSED"), "{screen}");
}

/// Then the server goes: shown as not answering, and q leaves clean.
#[test]
fn hot_misses_join_the_view_once_the_server_counts_them_then_it_is_gone() {
    let mut server = busy_server();
    let address = server.address();
    let t = start_on(&server, 80, 24, &[]);
    // Misses off (the default): no column, and no error for it.
    let screen = t.screen();
    assert!(
        !screen.contains("MISSES") && !screen.contains("not answering"),
        "{screen}"
    );
    let mut con = server.client();
    config_set(&mut con, "heavykeeper.track-misses", "yes");
    get_n(&mut con, b"absent:user:404", 50);
    let screen = t.wait_for("the misses column", |s| {
        s.contains("MISSES/S") && s.contains("absent:user:404")
    });
    assert!(!screen.contains("not answering"), "{screen}");
    // `<` from the total: by misses, the missing key first.
    t.type_text("<");
    let screen = t.wait_for_text("MISSES/S▼");
    let rows = table_rows(&screen);
    assert!(rows[0].starts_with("absent:user:404 "), "{screen}");
    assert!(rows[0].contains(&format!(" {address} ")), "{screen}");
    server.stop();
    let screen = t.wait_for_text("1 not answering");
    assert!(screen.contains("no hot keys:"), "{screen}");
    t.keys(&["Tab"]);
    let screen = t.wait_for_text("NOT ANSWERING");
    let row = line_of(&screen, &address);
    assert!(row.contains("NOT ANSWERING"), "{screen}");
    assert!(
        screen.contains(&format!("{address}: ")),
        "the reason: {screen}"
    );
    t.type_text("q");
    t.assert_restored(0);
}

#[test]
fn ctrl_c_sigterm_and_sighup_each_leave_the_terminal_as_found() {
    let server = busy_server();
    for (end, status) in [("C-c", 0), ("TERM", 128 + 15), ("HUP", 128 + 1)] {
        let t = start_on(&server, 80, 24, &[]);
        match end {
            "C-c" => t.keys(&[end]),
            name => signal(t.hk_top_pid(), name),
        }
        t.assert_restored(status);
    }
}

#[test]
fn a_panic_in_either_thread_leaves_the_terminal_as_found() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the fault hooks are in debug builds only");
        return;
    }
    let server = busy_server();
    let port = server.port.to_string();
    // In the poller thread: before any key, after its first poll.
    let t = Terminal::start(80, 24, &["-p", &port], &[("HK_TOP_TEST_PANIC", "poller")]);
    let screen = t.assert_restored(101);
    assert!(
        screen.contains("hk-top test fault: a panic in the poller path"),
        "{screen}"
    );
    drop(t);
    // In the main thread, on a key.
    let t = start_on(&server, 80, 24, &[("HK_TOP_TEST_PANIC", "key")]);
    t.type_text("x");
    let screen = t.assert_restored(101);
    assert!(screen.contains("a panic in the key path"), "{screen}");
}

#[test]
fn a_cluster_shows_its_balance_slots_and_a_node_that_stops() {
    let mut cluster = Cluster::start(TRACK_EVERY_COMMAND);
    for i in 0..30 {
        let key = format!("user:{i}");
        let mut con = cluster.owner_of(&key).client();
        get_n(&mut con, key.as_bytes(), 40 - i);
    }
    let key = "{tenant7}:cart";
    get_n(&mut cluster.owner_of(key).client(), key.as_bytes(), 60);
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut cluster.nodes[0].client())
        .unwrap();
    let port = cluster.nodes[0].port.to_string();
    let t = Terminal::start(120, 30, &["-p", &port, "--interval-ms", "200"], &[]);
    t.wait_for_text(key);
    // Every node, its share; together all of the traffic.
    t.keys(&["Tab"]);
    let screen = t.wait_for_text("SHARE");
    let mut total = 0.0;
    for node in &cluster.nodes {
        let row = line_of(&screen, &node.address());
        let percent = row.trim_end().rsplit(' ').next().unwrap();
        total += percent.trim_end_matches('%').parse::<f64>().expect(row);
    }
    assert!((total - 100.0).abs() < 0.5, "{screen}");
    // The hottest key's details: its slot, its hash tag.
    t.keys(&["Tab", "Home", "Enter"]);
    t.wait_for_text(&format!("SLOT     {slot} (hash tag {{tenant7}})"));
    t.keys(&["Escape"]);
    // A node stops: it stays in the view, as not answering.
    let gone = cluster.nodes[1].address();
    cluster.nodes[1].stop();
    t.wait_for_text("3 nodes, 1 not answering");
    t.keys(&["Tab"]);
    let screen = t.wait_for_text("NOT ANSWERING");
    let row = line_of(&screen, &gone);
    assert!(row.contains("NOT ANSWERING"), "{screen}");
    t.type_text("q");
    t.assert_restored(0);
}
