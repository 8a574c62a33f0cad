//! A real `redis-server` with the module loaded, on a free port, in a temp
//! directory; stopped when dropped, whatever the test did. Clusters of them,
//! created as an operator would. Shared by the integration tests of the
//! module and of hk-top (each test file: `use test_harness as common;`).

// Test support: a panic here fails the test that called it, which is what
// it is for; the workspace's no-panic rules are for code a server runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use redis::{Connection, FromRedisValue, Value};
use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Module arguments for a tracker that counts every command (no sampling)
/// and keeps rates for an hour: what a test sends is what it lists.
/// An append-only file of commands (no RDB preamble), every command on disk
/// before its reply: a story that restarts after a kill finds everything
/// that was acknowledged (at `everysec`, Valkey 9.1 replied to an `HK.ADD`
/// before writing it, and the restart missed it 1 run in 40).
pub const AOF_OF_COMMANDS: &[&str] = &[
    "--appendonly",
    "yes",
    "--aof-use-rdb-preamble",
    "no",
    "--appendfsync",
    "always",
];

pub const TRACK_EVERY_COMMAND: &[&str] = &[
    "track",
    "yes",
    "track-sample",
    "1",
    "track-halflife",
    "3600",
];

/// The module under test: `$HK_MODULE`, or the debug build in the
/// workspace's target directory (found from any crate of the workspace).
pub fn module_path() -> PathBuf {
    if let Ok(path) = std::env::var("HK_MODULE") {
        return PathBuf::from(path);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = here
        .ancestors()
        .map(|dir| dir.join("target/debug/libheavykeeper_redis.so"))
        .find(|path| path.exists());
    found.unwrap_or_else(|| {
        panic!(
            "target/debug/libheavykeeper_redis.so is missing above {}: run `cargo build` (or `make test`) first",
            here.display()
        )
    })
}

/// The server binary: `$REDIS_SERVER` or `redis-server` on the PATH.
pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    dir: TempDir,
    module_args: Vec<String>,
    extra: Vec<String>,
    /// Server arguments that come before the module's `--loadmodule` (another
    /// module loaded first, say).
    before: Vec<String>,
    /// Another server binary than [`server_binary`].
    binary: Option<String>,
    /// Started without the module.
    bare: bool,
}

impl Server {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a server with extra `--option value` arguments.
    pub fn start_with(extra: &[&str]) -> Self {
        Self::start_configured(&[], extra)
    }

    /// Starts a server with module load arguments (`name value ...`, as on
    /// a `loadmodule` line) and extra `--option value` server arguments.
    pub fn start_configured(module_args: &[&str], extra: &[&str]) -> Self {
        Self::start_after(&[], module_args, extra)
    }

    /// As [`Self::start_configured`], with `before` (say `--loadmodule
    /// other.so`) ahead of the module on the command line.
    pub fn start_after(before: &[&str], module_args: &[&str], extra: &[&str]) -> Self {
        Self::unstarted(before, module_args, extra).launched_on(None)
    }

    /// A server not yet launched, in a fresh temporary directory.
    fn unstarted(before: &[&str], module_args: &[&str], extra: &[&str]) -> Self {
        Server {
            child: None,
            port: 0,
            dir: tempfile::tempdir().expect("temp dir"),
            module_args: strings(module_args),
            extra: strings(extra),
            before: strings(before),
            binary: None,
            bare: false,
        }
    }

    /// Launched: a server of `binary` (`None`: [`server_binary`]).
    fn launched_on(mut self, binary: Option<&str>) -> Self {
        self.binary = binary.map(str::to_string);
        self.launch();
        self
    }

    /// A server of `binary` with the module (Valkey beside Redis in one run).
    pub fn start_binary(binary: &str, module_args: &[&str], extra: &[&str]) -> Self {
        Self::unstarted(&[], module_args, extra).launched_on(Some(binary))
    }

    /// A server of `binary` (`None`: [`server_binary`]) without the module,
    /// with extra `--option value` arguments.
    pub fn start_bare(binary: Option<&str>, extra: &[&str]) -> Self {
        let mut server = Self::unstarted(&[], &[], extra);
        server.bare = true;
        server.launched_on(binary)
    }

    /// Tries to start a server that should refuse to load the module; returns
    /// its log (the server exits) or panics if it started after all.
    pub fn refused_load(module_args: &[&str], extra: &[&str]) -> String {
        Self::refused_load_after(&[], module_args, extra)
    }

    /// As [`Self::refused_load`], with `before` (say `--loadmodule other.so`)
    /// ahead of the module on the command line.
    pub fn refused_load_after(before: &[&str], module_args: &[&str], extra: &[&str]) -> String {
        let mut server = Self::unstarted(before, module_args, extra);
        assert!(
            !server.launch_on(free_port()),
            "the server started with {module_args:?} {extra:?}"
        );
        server.log()
    }

    /// A replica of `primary` loaded with `module_args` (its own limits,
    /// say), once its link to the primary is up.
    pub fn replica_of(primary: &Server, module_args: &[&str]) -> Self {
        let port = primary.port.to_string();
        let replica = Self::start_configured(module_args, &["--replicaof", "127.0.0.1", &port]);
        replica.wait_for_link();
        replica
    }

    /// Waits until this replica's link to its primary is up.
    pub fn wait_for_link(&self) {
        let mut con = self.client();
        wait_until("the replica link", Duration::from_secs(30), || {
            info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
        });
    }

    /// Restarts on the same directory and port with other arguments, as an
    /// operator editing redis.conf would; a client of the restarted server.
    pub fn restart_configured(&mut self, module_args: &[&str], extra: &[&str]) -> Connection {
        self.module_args = strings(module_args);
        self.extra = strings(extra);
        self.restart()
    }

    /// The server and a client of it, as most tests begin.
    pub fn with_client(self) -> (Self, Connection) {
        let con = self.client();
        (self, con)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server (without saving) and starts it again on the same
    /// directory and port: what it finds on disk is what it loads. A client
    /// of the restarted server.
    pub fn restart(&mut self) -> Connection {
        self.stop();
        assert!(
            self.launch_on(self.port),
            "redis-server did not restart:\n{}",
            self.log()
        );
        self.client()
    }

    /// Stops the server and waits for the process to end.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn client(&self) -> Connection {
        self.connect(&format!("redis://127.0.0.1:{}/", self.port))
    }

    pub fn client_resp3(&self) -> Connection {
        self.connect(&format!("redis://127.0.0.1:{}/?protocol=resp3", self.port))
    }

    /// The server's address as a URL, for clients of other crates.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A client logged in with `password` (the default user's, as
    /// `requirepass` sets it).
    pub fn client_with_password(&self, password: &str) -> Connection {
        self.connect(&format!("redis://:{password}@127.0.0.1:{}/", self.port))
    }

    fn connect(&self, url: &str) -> Connection {
        redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .unwrap_or_else(|e| panic!("connect to {url}: {e}\n{}", self.log()))
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        // Lossy: one odd byte (a key name the server logged) must not hide
        // the whole log.
        let bytes = std::fs::read(self.dir.path().join("server.log")).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn launch(&mut self) {
        for _ in 0..5 {
            let port = free_port();
            if self.launch_on(port) {
                return;
            }
        }
        panic!("redis-server did not start:\n{}", self.log());
    }

    fn launch_on(&mut self, port: u16) -> bool {
        let binary = self.binary.clone().unwrap_or_else(server_binary);
        let mut cmd = Command::new(binary);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--logfile", "server.log", "--daemonize", "no"])
            .args(["--save", "", "--appendonly", "no"])
            // A replica syncs at once: the default waits 5 s for more
            // replicas to share the transfer, which only tests ever notice.
            .args(["--repl-diskless-sync-delay", "0"])
            .args([
                "--enable-debug-command",
                "yes",
                "--enable-module-command",
                "yes",
            ])
            .args(&self.before);
        if !self.bare {
            cmd.arg("--loadmodule")
                .arg(module_path())
                .args(&self.module_args);
        }
        cmd.args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let readies_before = self.readies();
        let child = cmd.spawn().expect("spawn redis-server");
        self.child = Some(child);
        self.port = port;
        if self.wait_ready(readies_before) {
            true
        } else {
            self.stop();
            false
        }
    }

    /// How many times the log says a server got ready (a restarted
    /// server appends to the same log).
    fn readies(&self) -> usize {
        self.log().matches("Ready to accept connections").count()
    }

    fn wait_ready(&mut self, readies_before: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false;
                }
            }
            let ready = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(1)))
                .and_then(|mut c| {
                    (redis::cmd("INFO").arg("server").arg("persistence")).query::<String>(&mut c)
                });
            // The server that answers must be this one: another test's may
            // have taken the port between `free_port` and this server's
            // bind (then this one exits, and another port is tried). A
            // server that wants a password answers NOAUTH: its log says
            // whether it is listening. INFO answers while the server still
            // loads its data (every other command is refused): ready is
            // loaded.
            let ours = match &ready {
                Ok(info) => self.child.as_ref().is_some_and(|c| {
                    let line = |want: &str| info.lines().any(|l| l.trim() == want);
                    line(&format!("process_id:{}", c.id())) && line("loading:0")
                }),
                Err(e) => {
                    (e.code() == Some("NOAUTH") || e.to_string().contains("NOAUTH"))
                        && self.readies() > readies_before
                }
            };
            if ours {
                return true;
            }
            sleep(Duration::from_millis(20));
        }
        false
    }

    /// Is the process still running (it did not crash)?
    pub fn is_alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A loopback port no one listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Runs a command built from string-like parts.
pub fn run<T: FromRedisValue>(con: &mut Connection, parts: &[&[u8]]) -> redis::RedisResult<T> {
    let mut cmd = redis::cmd(std::str::from_utf8(parts[0]).expect("command name"));
    for part in &parts[1..] {
        cmd.arg(*part);
    }
    cmd.query(con)
}

/// Runs a command and returns its reply as `T`, or panics with the error.
pub fn query<T: FromRedisValue>(con: &mut Connection, parts: &[&str]) -> T {
    let bytes: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
    run(con, &bytes).unwrap_or_else(|e| panic!("{parts:?}: {e}"))
}

/// Sends a command `n` times in one pipeline; panics if any fails.
pub fn repeat(con: &mut Connection, n: usize, parts: &[&str]) {
    let mut pipe = redis::pipe();
    for _ in 0..n {
        pipe.cmd(parts[0]).arg(&parts[1..]).ignore();
    }
    pipe.query::<()>(con)
        .unwrap_or_else(|e| panic!("{parts:?} x {n}: {e}"));
}

/// A command written as one line, the way an operator types it into
/// `redis-cli`: its words split at spaces (so no argument may hold one, or
/// be empty). `value(con, &words("HK.RESERVE k 10 WIDTH 64"))`.
pub fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// [`value`] of a command written as one line (see [`words`]).
pub fn cli(con: &mut Connection, line: &str) -> Value {
    value(con, &words(line))
}

/// `CONFIG SET name value`, which must succeed.
pub fn config_set(con: &mut Connection, name: &str, value: &str) {
    let reply: Value = query(con, &["CONFIG", "SET", name, value]);
    assert_eq!(reply, Value::Okay, "CONFIG SET {name} {value}");
}

/// The server answers `PING`: it is up, and the connection in step.
pub fn assert_pong(con: &mut Connection) {
    assert_eq!(value(con, &["PING"]), Value::SimpleString("PONG".into()));
}

/// Runs a command and returns the raw reply value, or panics with the error.
pub fn value(con: &mut Connection, parts: &[&str]) -> Value {
    query(con, parts)
}

/// `RESTORE key 0 payload`: a dump (or a crafted payload) restored as a client would.
pub fn restore(con: &mut Connection, key: &str, payload: &[u8]) -> redis::RedisResult<()> {
    run(con, &[b"RESTORE", key.as_bytes(), b"0", payload])
}

/// The error a command fails with, as the server wrote it.
pub fn error(con: &mut Connection, parts: &[&str]) -> String {
    let bytes: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
    error_bytes(con, &bytes)
}

/// [`error`] of a command whose parts are any bytes.
pub fn error_bytes(con: &mut Connection, parts: &[&[u8]]) -> String {
    match run::<Value>(con, parts) {
        Ok(v) => panic!("{parts:?} succeeded with {v:?}"),
        Err(e) => server_error_text(&e),
    }
}

/// `CODE message` as the server sent it.
pub fn server_error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// `HK.LIST key WITHCOUNT` as (item, count) pairs, on a RESP2 connection.
pub fn list_with_count(con: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    list_with_count_at(con, key, None)
}

/// `HK.LIST key WITHCOUNT [AT at]` as (item, count) pairs.
pub fn list_with_count_at(con: &mut Connection, key: &str, at: Option<i64>) -> Vec<(Vec<u8>, i64)> {
    let mut cmd = redis::cmd("HK.LIST");
    cmd.arg(key).arg("WITHCOUNT");
    if let Some(at) = at {
        cmd.arg("AT").arg(at);
    }
    let flat: Vec<Value> = cmd.query(con).expect("HK.LIST");
    flat.chunks(2)
        .map(|pair| {
            (
                Vec::<u8>::from_redis_value(&pair[0]).expect("item"),
                i64::from_redis_value(&pair[1]).expect("count"),
            )
        })
        .collect()
}

/// What [`list_with_count`] answers for these (item, count) pairs.
pub fn listed(pairs: &[(&str, i64)]) -> Vec<(Vec<u8>, i64)> {
    (pairs.iter())
        .map(|&(item, n)| (item.as_bytes().to_vec(), n))
        .collect()
}

/// `HK.INFO key` as a name -> value map, on a RESP2 connection.
pub fn hk_info(con: &mut Connection, key: &str) -> std::collections::HashMap<String, Value> {
    let flat: Vec<Value> = redis::cmd("HK.INFO").arg(key).query(con).expect("HK.INFO");
    flat.chunks(2)
        .map(|pair| {
            (
                String::from_redis_value(&pair[0]).expect("field name"),
                pair[1].clone(),
            )
        })
        .collect()
}

pub fn digest(con: &mut Connection, key: &str) -> String {
    query::<Vec<String>>(con, &["DEBUG", "DIGEST-VALUE", key]).remove(0)
}

/// Waits until `condition` holds, polling; panics after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(20));
    }
}

/// A listed key's rate and count, and its count's 95% bounds (the rate's
/// bounds `WITHBOUNDS` gives, turned into the count's).
#[derive(Clone, Copy, Debug, Default)]
pub struct CountBounds {
    pub rate: f64,
    pub count: f64,
    pub low: f64,
    pub high: f64,
}

impl CountBounds {
    /// The count's bounds from a row's rate, count and rate bounds.
    pub fn from_rates(rate: f64, count: f64, low_rate: f64, high_rate: f64) -> Self {
        let per = if rate > 0.0 { count / rate } else { 0.0 };
        CountBounds {
            rate,
            count,
            low: low_rate * per,
            high: high_rate * per,
        }
    }

    /// Is `truth` within twice the 95% bar on its side (about four
    /// standard errors: a true bar fails this once in ten thousand
    /// readings)? Where every access counted, low = count = high give or
    /// take a rounding: half an access is allowed for it.
    pub fn holds(&self, truth: f64) -> bool {
        let bar = if truth < self.count {
            self.count - self.low
        } else {
            self.high - self.count
        };
        (self.count - truth).abs() <= 2.0 * bar.max(0.0) + 0.5
    }
}

/// `HK.HOTKEYS COUNT count WITHBOUNDS`: each key listed, in order, with its
/// rate, count and bounds.
pub fn hotkeys_with_bounds(con: &mut Connection, count: usize) -> Vec<(String, CountBounds)> {
    let rows: Vec<(String, Value, f64, f64, f64, f64)> = query(
        con,
        &["HK.HOTKEYS", "COUNT", &count.to_string(), "WITHBOUNDS"],
    );
    rows.into_iter()
        .map(|(key, _, rate, count, low, high)| {
            (key, CountBounds::from_rates(rate, count, low, high))
        })
        .collect()
}

/// A field of `INFO section`.
pub fn info_field(con: &mut Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(con).ok()?;
    info.lines().find_map(|l| {
        l.strip_prefix(&format!("{field}:"))
            .map(|v| v.trim().to_string())
    })
}

/// A number in `INFO section`; panics if the field is missing or not a number.
pub fn info_number<T: std::str::FromStr>(con: &mut Connection, section: &str, field: &str) -> T {
    let text =
        info_field(con, section, field).unwrap_or_else(|| panic!("INFO {section} has no {field}"));
    text.parse()
        .unwrap_or_else(|_| panic!("INFO {section}: {field} is {text}, not a number"))
}

/// Waits until the server's background thread has freed what it was handed
/// (`lazyfree_pending_objects` 0): Valkey frees a large value apart from the
/// command that dropped it (`DEL`, a flush, `DEBUG RELOAD`), and the
/// module's figures count a sketch until its free callback ran.
pub fn wait_for_lazy_frees(con: &mut Connection) {
    wait_until("the lazy frees", Duration::from_secs(10), || {
        info_field(con, "memory", "lazyfree_pending_objects").is_none_or(|n| n == "0")
    });
}

/// Does the server's command filter say which client sent a command
/// (Redis 7.2+, Valkey)? Redis 7.0's does not: the tracker then counts
/// every key in database 0.
pub fn filter_names_clients(con: &mut Connection) -> bool {
    let version = info_field(con, "server", "redis_version").unwrap_or_default();
    let valkey = info_field(con, "server", "valkey_version").is_some();
    valkey || !version.starts_with("7.0")
}

/// Do the module's fault hooks exist? Debug builds only: the release module
/// compiles them out, and tests that need one say so and skip.
pub fn fault_hooks_compiled_in() -> bool {
    module_path().to_string_lossy().contains("/debug/")
}

/// [`fault_hooks_compiled_in`], saying that the test skips where not.
pub fn fault_hooks_or_skip() -> bool {
    let compiled = fault_hooks_compiled_in();
    if !compiled {
        eprintln!("skipped: the release module has no fault hooks");
    }
    compiled
}

/// Waits until no AOF rewrite is in progress or scheduled.
pub fn wait_for_aof_rewrite(con: &mut Connection) {
    wait_until("the AOF rewrite", Duration::from_secs(30), || {
        let field = |con: &mut Connection, f: &str| info_field(con, "persistence", f);
        field(con, "aof_rewrite_in_progress").as_deref() == Some("0")
            && field(con, "aof_rewrite_scheduled").as_deref() == Some("0")
    });
}

/// The encoded state of an empty sketch, as `HK.LOADSTATE` takes it.
pub fn empty_sketch_payload(params: heavykeeper_sketch::Params, created_ms: i64) -> Vec<u8> {
    heavykeeper_sketch::encode(&heavykeeper_sketch::HeavyKeeper::new(params, created_ms))
}

/// A client subscribed to one channel (`SUBSCRIBE`, or `SSUBSCRIBE` for
/// shard channels), reading the JSON events published there. A thread reads
/// the connection without timeouts (a timed-out read could lose a message)
/// and hands the events over.
pub struct Subscriber {
    events: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl Subscriber {
    pub fn new(server: &Server, channel: &str, shard: bool) -> Self {
        Self::on_bytes(server, channel.as_bytes(), shard)
    }

    /// A subscriber to a channel whose name is any bytes.
    pub fn on_bytes(server: &Server, channel: &[u8], shard: bool) -> Self {
        Self::on_connection(server.client(), channel, shard)
    }

    /// A subscriber on a connection of the caller's (one logged in, say).
    pub fn on_connection(mut con: Connection, channel: &[u8], shard: bool) -> Self {
        let command = if shard { "SSUBSCRIBE" } else { "SUBSCRIBE" };
        let _: Value = redis::cmd(command)
            .arg(channel)
            .query(&mut con)
            .expect(command);
        let (send, events) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Ok(Value::Array(parts)) = con.recv_response() {
                if let Some(Value::BulkString(payload)) = parts.get(2) {
                    let event = serde_json::from_slice(payload).expect("a JSON event");
                    if send.send(event).is_err() {
                        break;
                    }
                }
            }
        });
        Subscriber { events }
    }

    /// Every event published within `window` (stops early after `max`).
    pub fn events(&mut self, window: Duration, max: usize) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + window;
        let mut events = Vec::new();
        while events.len() < max {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            match self.events.recv_timeout(left) {
                Ok(event) => events.push(event),
                Err(_) => break,
            }
        }
        events
    }
}

/// The current time in milliseconds since the epoch, as the server reads it.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as i64
}

/// An integer field of `INFO heavykeeper` (0 when absent).
pub fn module_figure(con: &mut Connection, field: &str) -> i64 {
    info_field(con, "heavykeeper", &format!("heavykeeper_{field}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Three primaries on loopback, joined by `redis-cli --cluster create`
/// (with a replica each if asked), each started with `module_args`;
/// stopped when dropped.
pub struct Cluster {
    /// The primaries, in the order they were created.
    pub nodes: Vec<Server>,
    /// `replicas[i]` replicates `nodes[i]` (none unless asked for).
    pub replicas: Vec<Server>,
}

/// How a [`Cluster`] is started.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions<'a> {
    pub module_args: &'a [&'a str],
    /// Without the module (then `module_args` are not used).
    pub bare: bool,
    /// A replica for each primary.
    pub replicas: bool,
    /// Another server binary than [`server_binary`].
    pub binary: Option<String>,
    /// More `--option value` arguments for every node.
    pub extra: &'a [&'a str],
}

const CLUSTER_ARGS: [&str; 4] = [
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
];

/// Runs `redis-cli` with `args` (a line, see [`words`]); panics with what
/// it said if it fails.
fn redis_cli(args: &str) {
    let run = Command::new("redis-cli").args(words(args)).output();
    let out = run.expect("redis-cli");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "redis-cli {args}: {said}");
}

impl Cluster {
    pub fn start(module_args: &[&str]) -> Self {
        Self::start_with(&ClusterOptions {
            module_args,
            ..ClusterOptions::default()
        })
    }

    pub fn start_with(o: &ClusterOptions<'_>) -> Self {
        let mut extra: Vec<&str> = CLUSTER_ARGS.to_vec();
        extra.extend(o.extra);
        let start = || {
            if o.bare {
                Server::start_bare(o.binary.as_deref(), &extra)
            } else {
                Server::unstarted(&[], o.module_args, &extra).launched_on(o.binary.as_deref())
            }
        };
        let nodes: Vec<Server> = (0..3).map(|_| start()).collect();
        let addresses: Vec<String> = nodes.iter().map(Server::address).collect();
        let addresses = addresses.join(" ");
        redis_cli(&format!(
            "--cluster create {addresses} --cluster-replicas 0 --cluster-yes"
        ));
        let replicas: Vec<Server> = if o.replicas {
            (0..3).map(|_| start()).collect()
        } else {
            Vec::new()
        };
        for (primary, replica) in nodes.iter().zip(&replicas) {
            let id: String = query(&mut primary.client(), &["CLUSTER", "MYID"]);
            let nodes = format!("{} {}", replica.address(), primary.address());
            redis_cli(&format!(
                "--cluster add-node {nodes} --cluster-slave --cluster-master-id {id}"
            ));
        }
        for node in nodes.iter().chain(&replicas) {
            let mut con = node.client();
            wait_until("the cluster", Duration::from_secs(30), || {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap();
                info.contains("cluster_state:ok")
            });
        }
        replicas.iter().for_each(Server::wait_for_link);
        for node in &nodes {
            let mut con = node.client();
            // A tracker reads what its node serves at its next tick: until
            // then it takes the cluster to be down and counts nothing.
            wait_until("the tracker's view", Duration::from_secs(10), || {
                let tracking = info_field(&mut con, "heavykeeper", "heavykeeper_tracker_enabled");
                tracking.as_deref() != Some("1")
                    || info_field(&mut con, "heavykeeper", "heavykeeper_tracker_cluster_state")
                        .as_deref()
                        == Some("ok")
            });
        }
        Cluster { nodes, replicas }
    }

    /// The node that serves `key`.
    pub fn owner_of(&self, key: &str) -> &Server {
        let slot = query(&mut self.nodes[0].client(), &["CLUSTER", "KEYSLOT", key]);
        self.owner_of_slot(slot)
    }

    /// The node that serves `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> &Server {
        let (address, _) = self
            .slot_ranges()
            .into_iter()
            .find(|(_, ranges)| ranges.iter().any(|r| r.contains(&slot)))
            .unwrap_or_else(|| panic!("no node serves slot {slot}"));
        self.nodes
            .iter()
            .find(|n| n.address() == address)
            .expect("a node of this cluster")
    }

    /// Each primary's address and the slot ranges it serves, as
    /// `CLUSTER NODES` says now.
    pub fn slot_ranges(&self) -> Vec<(String, Vec<std::ops::RangeInclusive<u16>>)> {
        let mut con = self.nodes[0].client();
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con).unwrap();
        nodes
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let address = fields[1].split('@').next().unwrap().to_string();
                let ranges = fields[8..]
                    .iter()
                    .filter(|range| !range.starts_with('['))
                    .map(|range| {
                        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                        lo.parse::<u16>().unwrap()..=hi.parse().unwrap()
                    })
                    .collect();
                (address, ranges)
            })
            .collect()
    }
}

impl Server {
    /// `127.0.0.1:port`, as the cluster names its nodes.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// A connection from host 127.0.0.`N`: another host to the server (its
/// own address in `CLIENT LIST`), speaking RESP by hand.
pub struct HostClient {
    replies: std::io::BufReader<std::net::TcpStream>,
}

impl HostClient {
    /// Connects from 127.0.0.`host` to the server on `port`.
    pub fn connect(port: u16, host: u8) -> Self {
        use socket2::{Domain, Socket, Type};
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
        let local: std::net::SocketAddr = format!("127.0.0.{host}:0").parse().unwrap();
        socket.bind(&local.into()).expect("bind to 127.0.0.N");
        let remote: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        socket.connect(&remote.into()).expect("connect");
        HostClient {
            replies: std::io::BufReader::new(socket.into()),
        }
    }

    /// Sends `commands` in one pipeline and waits for every reply (none
    /// read back: the commands' replies must not be the line `+done`).
    pub fn pipeline<'a>(&mut self, commands: impl IntoIterator<Item = &'a [&'a str]>) {
        self.send(commands.into_iter().chain([&["PING", "done"][..]]));
        let mut line = String::new();
        while line != "$4\r\n" || !self.next_is("done\r\n") {
            line.clear();
            assert_ne!(
                self.replies.read_line(&mut line).expect("read"),
                0,
                "closed"
            );
        }
    }

    /// Sends `command` `n` times, each refused with an error line (a
    /// client not logged in: even `PING` is refused), and reads the errors.
    pub fn refused(&mut self, command: &[&str], n: usize) -> Vec<String> {
        self.send(std::iter::repeat_n(command, n));
        (0..n)
            .map(|_| {
                let mut line = String::new();
                self.replies.read_line(&mut line).expect("read");
                assert!(line.starts_with('-'), "not refused: {line:?}");
                line
            })
            .collect()
    }

    fn send<'a>(&mut self, commands: impl IntoIterator<Item = &'a [&'a str]>) {
        let mut sent = Vec::new();
        for parts in commands {
            sent.extend(format!("*{}\r\n", parts.len()).as_bytes());
            for part in parts {
                sent.extend(format!("${}\r\n{part}\r\n", part.len()).as_bytes());
            }
        }
        self.replies.get_mut().write_all(&sent).expect("send");
    }

    fn next_is(&mut self, wanted: &str) -> bool {
        let mut line = String::new();
        self.replies.read_line(&mut line).is_ok() && line == wanted
    }
}

/// Hosts 127.0.0.2, .3, ... (`hosts` of them), each in a thread of its own,
/// read `keys` steadily: every 10 ms host `h` sends `reads(h, k)` `GET`s of
/// key `k` in one pipeline, for `run`. What each host sent of each key.
pub fn steady_reads_from_hosts(
    port: u16,
    hosts: usize,
    keys: &[String],
    reads: fn(usize, usize) -> usize,
    run: Duration,
) -> Vec<Vec<usize>> {
    let threads: Vec<_> = (0..hosts)
        .map(|h| {
            let keys = keys.to_vec();
            std::thread::spawn(move || {
                let mut client = HostClient::connect(port, h as u8 + 2);
                let gets: Vec<[&str; 2]> = (keys.iter().enumerate())
                    .flat_map(|(k, key)| std::iter::repeat_n(["GET", key.as_str()], reads(h, k)))
                    .collect();
                let start = Instant::now();
                let mut ticks = 0;
                while start.elapsed() < run {
                    client.pipeline(gets.iter().map(|g| &g[..]));
                    ticks += 1;
                    let due = start + Duration::from_millis(10 * ticks);
                    sleep(due.saturating_duration_since(Instant::now()));
                }
                (0..keys.len())
                    .map(|k| reads(h, k) * ticks as usize)
                    .collect()
            })
        })
        .collect();
    (threads.into_iter())
        .map(|t| t.join().expect("a reading host"))
        .collect()
}
