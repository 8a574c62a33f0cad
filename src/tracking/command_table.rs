//! Which keys of a command are read and which are written, from the key
//! specs in the server's own command table (`COMMAND`).
//!
//! `RedisModule_GetCommandKeysWithFlags` finds every key, but Redis 7.0 and
//! Valkey 9 leave its flags empty for keys found through key specs (only
//! commands with their own key-finding code, such as `SET` and `SORT`, fill
//! them). So the table is read once, when tracking starts, and each key
//! found is matched to the key spec it came from: the spec whose search
//! begins last at or before the key's position (an index, or the argument
//! after a keyword). A key is a read if that spec says `RO`.
//!
//! The same specs also give the key positions of most commands (a fixed
//! index or a keyword, then a range or a key count), exactly as the server
//! computes them: for those the server's key extraction (a command lookup
//! and two allocations per command) is not needed at all. Commands whose
//! specs are incomplete (`SORT`, `MIGRATE`...) still ask the server.

use super::name_effects::{effect_of, NameEffect};
use super::script_watch::runs_scripts;
use hashbrown::HashMap;
use heavykeeper_tracker::Access;
use redis_module::{Context, RedisValue};
use std::cell::Cell;

/// A command's arguments by position (`None` past the end).
pub type Args<'a> = dyn Fn(usize) -> Option<&'a [u8]> + 'a;

/// Where a key spec's search begins.
#[derive(Clone, Debug, PartialEq)]
enum Begin {
    /// At a fixed argument position.
    Index(usize),
    /// After `keyword`, searched from argument `start_from` (from the end
    /// when negative).
    Keyword {
        keyword: Vec<u8>,
        start_from: i64,
    },
    Unknown,
}

#[derive(Clone, Debug, PartialEq)]
struct KeySpec {
    read_only: bool,
    begin: Begin,
    find: Find,
    /// The server says this spec may miss keys: ask the server instead.
    incomplete: bool,
}

/// How a key spec finds its keys once it knows where they begin.
#[derive(Clone, Debug, PartialEq)]
enum Find {
    /// Up to `last_key` (relative to the beginning; negative: from the end,
    /// the remaining arguments divided by `limit` when it is above 1),
    /// every `step` arguments.
    Range {
        last_key: i64,
        step: usize,
        limit: usize,
    },
    /// A count at `count_at` (relative), then that many keys from `first`,
    /// every `step` arguments.
    KeyCount {
        count_at: usize,
        first: usize,
        step: usize,
    },
    Unknown,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct CommandSpecs {
    /// `COMMAND`'s arity: exactly this many arguments, or at least `-arity`.
    arity: i64,
    /// The command's own `write` flag: the answer when no spec fits.
    write: bool,
    specs: Vec<KeySpec>,
    has_subcommands: bool,
    /// Every key is used the same way (the common case): no search needed.
    uniform: Option<Access>,
    /// Every spec can give its key positions here.
    positions_known: bool,
    /// The command's one key is its first argument (`GET`, `SET`, `HGET`,
    /// `INCR`...): no search at all.
    single_key: Option<Access>,
    /// What its name alone changes for the tracker (`SELECT`, `AUTH`...).
    effect: NameEffect,
    /// It may run a script (`EVAL`, `FCALL`, `EXEC`...).
    starts_script: bool,
}

/// Key specs of every command the server knew when tracking started.
#[derive(Clone, Debug, Default)]
pub struct CommandTable {
    specs: Vec<CommandSpecs>,
    /// Index in `specs` by lowercase name (`container|sub` for subcommands).
    commands: HashMap<Vec<u8>, usize>,
    /// The same, for names of at most 7 bytes (nearly every command), keyed
    /// by the lowercase name packed in a word: found with one integer hash,
    /// no copy and no byte comparison.
    short: HashMap<u64, usize>,
    /// The last short name looked up, as sent (not lowercased), and its
    /// index: a pipeline of one command (the common case under load) skips
    /// the lowercasing and the hash altogether. `0` is no name (a word
    /// carries its length).
    last_short: Cell<(u64, usize)>,
}

/// A name of at most 7 bytes as sent, with its length in the top byte, as
/// one word (so that no two names share one, NUL bytes and all); `None` for
/// a longer name.
#[inline(always)]
fn as_sent(name: &[u8]) -> Option<u64> {
    if name.is_empty() || name.len() > 7 {
        return None;
    }
    Some(little_endian(name) | (name.len() as u64) << 56)
}

/// A word of [`as_sent`], its letters lowercased; `None` for a name with a
/// byte outside ASCII.
#[inline]
fn lowercased(word: u64) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let bytes = word & 0x00ff_ffff_ffff_ffff;
    if bytes & (0x80 * ONES) != 0 {
        return None;
    }
    // SWAR: the high bit of each byte says whether it lies in 'A'..='Z'
    // (bytes below 0x80: no carry crosses a byte), then 0x20 is added to those.
    let upper = (bytes + (0x80 - b'A' as u64) * ONES) & !(bytes + (0x80 - b'Z' as u64 - 1) * ONES);
    let lower = bytes | ((upper & (0x80 * ONES)) >> 2);
    Some(lower | (word & !0x00ff_ffff_ffff_ffff))
}

/// A name of at most 7 bytes, lowercased, with its length in the top byte
/// (the table's key); `None` for a longer name or one outside ASCII.
#[inline]
fn packed(name: &[u8]) -> Option<u64> {
    lowercased(as_sent(name)?)
}

/// One to seven bytes as a little-endian word (zeros above), read as two
/// overlapping loads rather than a copy of variable length: the bytes both
/// loads see land in the same place, so OR-ing them is exact.
#[inline(always)]
fn little_endian(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
    };
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map_or(0, |b| u64::from(u16::from_le_bytes(b)))
    };
    match n {
        4..=7 => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
        2..=3 => u16_at(0) | u16_at(n - 2) << (8 * (n - 2)),
        1 => bytes.first().map_or(0, |&b| u64::from(b)),
        _ => 0,
    }
}

impl CommandTable {
    /// Reads `COMMAND` through `ctx`; an empty table if that fails (every
    /// key then counts by its command's `write` flag... or as a write).
    pub fn load(ctx: &Context) -> Self {
        let mut table = Self::default();
        if let Ok(RedisValue::Array(commands)) = ctx.call("COMMAND", &[] as &[&str]) {
            for command in &commands {
                table.add(command, None);
            }
        }
        table
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    fn add(&mut self, command: &RedisValue, parent: Option<&[u8]>) {
        let RedisValue::Array(fields) = command else {
            return;
        };
        let Some(name) = fields.first().and_then(bytes) else {
            return;
        };
        let arity = match fields.get(1) {
            Some(RedisValue::Integer(n)) => *n,
            _ => 0,
        };
        let flags = fields.get(2).map(strings).unwrap_or_default();
        let specs = match fields.get(8) {
            Some(RedisValue::Array(specs)) => specs.iter().filter_map(key_spec).collect(),
            _ => Vec::new(),
        };
        let subcommands = match fields.get(9) {
            Some(RedisValue::Array(subs)) => subs.as_slice(),
            _ => &[],
        };
        for sub in subcommands {
            self.add(sub, Some(&name));
        }
        let access = |read_only: bool| {
            if read_only {
                Access::Read
            } else {
                Access::Write
            }
        };
        let uniform = match specs.split_first() {
            Some((first, rest)) if rest.iter().all(|s| s.read_only == first.read_only) => {
                Some(access(first.read_only))
            }
            _ => None,
        };
        let positions_known = specs
            .iter()
            .all(|s| !s.incomplete && s.begin != Begin::Unknown && s.find != Find::Unknown);
        let single_key = match specs.as_slice() {
            [only]
                if only.begin == Begin::Index(1)
                    && matches!(only.find, Find::Range { last_key: 0, .. })
                    && !only.incomplete
                    && subcommands.is_empty() =>
            {
                Some(access(only.read_only))
            }
            _ => None,
        };
        // Effects are the subcommand's own (`CONFIG SET`, not `CONFIG GET`);
        // a container's name says whether a script may run.
        let command = CommandSpecs {
            arity,
            effect: effect_of(&name),
            starts_script: runs_scripts(parent.unwrap_or(&name)),
            single_key,
            write: flags.iter().any(|f| f.eq_ignore_ascii_case(b"write")),
            // A command with subcommands has its keys in theirs.
            positions_known: positions_known && subcommands.is_empty(),
            specs,
            has_subcommands: !subcommands.is_empty(),
            uniform,
        };
        let lowercase = name.to_ascii_lowercase();
        let index = self.specs.len();
        self.specs.push(command);
        if let Some(word) = packed(&lowercase) {
            self.short.insert(word, index);
        }
        self.commands.insert(lowercase, index);
    }

    /// How the command named `name` (its first argument, read already)
    /// uses its keys: looked up once per command. `args` is only asked for
    /// a subcommand's name.
    /// How the command named `name` (its first argument, read already)
    /// uses its keys: looked up once per command. `args` is only asked for
    /// a subcommand's name. A command the server would refuse (unknown, or
    /// the wrong number of arguments, `argc`) uses no keys: it never runs.
    #[inline(always)]
    pub fn command_of<'t, 'a>(&'t self, name: &[u8], argc: usize, args: &Args<'a>) -> KeyUse<'t> {
        let spec = self.command(name, args);
        KeyUse {
            runs: spec.is_some_and(|c| c.arity_allows(argc)),
            spec,
        }
    }

    /// The command (or subcommand) named by the first arguments, looked up
    /// without allocating.
    #[inline(always)]
    fn command<'a>(&self, first: &[u8], args: &Args<'a>) -> Option<&CommandSpecs> {
        let index = match as_sent(first) {
            Some(word) => self.short_index(word)?,
            None => {
                let mut buffer = [0u8; 64];
                *self.commands.get(lowercase_into(&mut buffer, &[first])?)?
            }
        };
        let command = self.specs.get(index)?;
        if !command.has_subcommands {
            return Some(command);
        }
        let mut buffer = [0u8; 64];
        let full = args(1).and_then(|sub| lowercase_into(&mut buffer, &[first, b"|", sub]));
        full.and_then(|full| self.commands.get(full))
            .and_then(|&index| self.specs.get(index))
            .or(Some(command))
    }

    /// The index of a short name, `sent` as [`as_sent`] packs it.
    #[inline(always)]
    fn short_index(&self, sent: u64) -> Option<usize> {
        let (last, index) = self.last_short.get();
        if last == sent {
            return Some(index);
        }
        let index = *self.short.get(&lowercased(sent)?)?;
        self.last_short.set((sent, index));
        Some(index)
    }
}

impl CommandSpecs {
    #[inline(always)]
    fn arity_allows(&self, argc: usize) -> bool {
        let argc = argc as i64;
        match self.arity {
            0 => true, // the table could not say
            n if n > 0 => argc == n,
            n => argc >= -n,
        }
    }
}

/// One command's key specs (or none, for a command the table lacks).
pub struct KeyUse<'t> {
    spec: Option<&'t CommandSpecs>,
    /// The server would run it (a known command, the right arity).
    runs: bool,
}

impl KeyUse<'_> {
    /// What the command's name changes for the tracker.
    #[inline]
    pub fn effect(&self) -> NameEffect {
        self.spec.map_or(NameEffect::None, |c| c.effect)
    }

    /// May it run a script?
    #[inline]
    pub fn starts_script(&self) -> bool {
        self.spec.is_some_and(|c| c.starts_script)
    }

    /// Can the table give this command's key positions itself?
    pub fn positions_known(&self) -> bool {
        self.spec.is_some_and(|c| c.positions_known)
    }

    /// Does the command, as sent, use keys (and would the server run it)?
    #[inline]
    pub fn has_keys(&self) -> bool {
        self.runs && self.spec.is_some_and(|c| !c.specs.is_empty())
    }

    /// The command's only key is argument 1, used this way.
    #[inline]
    pub fn single_key(&self) -> Option<Access> {
        self.spec.and_then(|c| c.single_key)
    }

    /// Calls `each(position, access)` for every key of the command `args`
    /// (`argc` arguments), as the server's own key extraction would find
    /// them. Only for commands whose [`Self::positions_known`].
    pub fn for_each_key<'a>(
        &self,
        args: &Args<'a>,
        argc: usize,
        mut each: impl FnMut(usize, Access),
    ) {
        let Some(command) = self.spec else {
            return;
        };
        for spec in &command.specs {
            let Some(start) = begin_position(&spec.begin, args) else {
                continue;
            };
            let access = if spec.read_only {
                Access::Read
            } else {
                Access::Write
            };
            for position in key_positions(&spec.find, start, argc, args) {
                each(position, access);
            }
        }
    }

    /// How the command `args` uses the key at `position`.
    pub fn access<'a>(&self, args: &Args<'a>, position: usize) -> Access {
        let Some(command) = self.spec else {
            return Access::Write;
        };
        if let Some(access) = command.uniform {
            return access;
        }
        let spec = if let [only] = command.specs.as_slice() {
            Some(only)
        } else {
            command
                .specs
                .iter()
                .filter_map(|spec| Some((begin_position(&spec.begin, args)?, spec)))
                .filter(|&(begin, _)| begin <= position)
                .max_by_key(|&(begin, _)| begin)
                .map(|(_, spec)| spec)
        };
        match spec {
            Some(spec) if spec.read_only => Access::Read,
            Some(_) => Access::Write,
            None if command.write => Access::Write,
            None => Access::Read,
        }
    }
}

/// The positions a spec's keys take, from `start`, within `argc` arguments.
fn key_positions<'a>(
    find: &Find,
    start: usize,
    argc: usize,
    args: &Args<'a>,
) -> impl Iterator<Item = usize> {
    let (first, last, step) = match *find {
        Find::Range {
            last_key,
            step,
            limit,
        } => {
            let last = if last_key >= 0 {
                start.saturating_add(last_key as usize)
            } else if limit > 1 {
                // The remaining arguments, divided by `limit` (XREAD's streams
                // then their IDs).
                start + (argc.saturating_sub(start) / limit).saturating_sub(1)
            } else {
                argc.saturating_sub(last_key.unsigned_abs() as usize)
            };
            (start, last, step)
        }
        Find::KeyCount {
            count_at,
            first,
            step,
        } => {
            let count = args(start + count_at)
                .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            let first = start + first;
            let last = first.saturating_add(count.saturating_sub(1).saturating_mul(step));
            (first, if count == 0 { 0 } else { last }, step)
        }
        Find::Unknown => (1, 0, 1),
    };
    let last = last.min(argc.saturating_sub(1));
    (first..=last)
        .step_by(step.max(1))
        .filter(move |_| first <= last)
}

/// `parts` joined and lowercased in `buffer`; `None` if too long to be a
/// command name.
fn lowercase_into<'b>(buffer: &'b mut [u8; 64], parts: &[&[u8]]) -> Option<&'b [u8]> {
    let mut len = 0;
    for part in parts {
        let end = len + part.len();
        let target = buffer.get_mut(len..end)?;
        target.copy_from_slice(part);
        target.make_ascii_lowercase();
        len = end;
    }
    buffer.get(..len)
}

/// Where the spec's keys begin in this very command.
fn begin_position<'a>(begin: &Begin, args: &Args<'a>) -> Option<usize> {
    match begin {
        Begin::Index(i) => Some(*i),
        Begin::Keyword {
            keyword,
            start_from,
        } => {
            let count = (0..).take_while(|&i| args(i).is_some()).count();
            let matches = |i: &usize| args(*i).is_some_and(|a| a.eq_ignore_ascii_case(keyword));
            let found = if *start_from >= 0 {
                (*start_from as usize..count).find(matches)
            } else {
                let from = count.checked_sub(start_from.unsigned_abs() as usize)?;
                (1..=from).rev().find(matches)
            };
            found.map(|i| i + 1)
        }
        Begin::Unknown => None,
    }
}

/// One key spec, from its flat `[name, value, ...]` form.
fn key_spec(spec: &RedisValue) -> Option<KeySpec> {
    let fields = pairs(spec)?;
    let flags = fields
        .get(b"flags".as_slice())
        .map(|f| strings(f))
        .unwrap_or_default();
    let begin = fields
        .get(b"begin_search".as_slice())
        .and_then(|b| pairs(b))
        .map_or(Begin::Unknown, |search| begin_search(&search));
    let find = fields
        .get(b"find_keys".as_slice())
        .and_then(|f| pairs(f))
        .map_or(Find::Unknown, |found| find_keys(&found));
    let has = |flag: &[u8]| flags.iter().any(|f| f.eq_ignore_ascii_case(flag));
    Some(KeySpec {
        read_only: has(b"RO"),
        begin,
        find,
        // Variable flags only matter here if they can turn a read into a
        // write (SET's RW or OW is a write either way).
        incomplete: has(b"incomplete") || (has(b"variable_flags") && has(b"RO")),
    })
}

fn find_keys(found: &HashMap<Vec<u8>, &RedisValue>) -> Find {
    let kind = found.get(b"type".as_slice()).and_then(|t| bytes(t));
    let Some(spec) = found.get(b"spec".as_slice()).and_then(|s| pairs(s)) else {
        return Find::Unknown;
    };
    let number = |name: &[u8]| spec.get(name).and_then(|v| integer(v));
    let count = |name: &[u8]| number(name).and_then(|v| usize::try_from(v).ok());
    match kind.as_deref() {
        Some(b"range") => match (number(b"lastkey"), count(b"keystep"), count(b"limit")) {
            (Some(last_key), Some(step), Some(limit)) if step > 0 => Find::Range {
                last_key,
                step,
                limit,
            },
            _ => Find::Unknown,
        },
        Some(b"keynum") => match (count(b"keynumidx"), count(b"firstkey"), count(b"keystep")) {
            (Some(count_at), Some(first), Some(step)) if step > 0 => Find::KeyCount {
                count_at,
                first,
                step,
            },
            _ => Find::Unknown,
        },
        _ => Find::Unknown,
    }
}

fn begin_search(search: &HashMap<Vec<u8>, &RedisValue>) -> Begin {
    let kind = search.get(b"type".as_slice()).and_then(|t| bytes(t));
    let Some(spec) = search.get(b"spec".as_slice()).and_then(|s| pairs(s)) else {
        return Begin::Unknown;
    };
    match kind.as_deref() {
        Some(b"index") => spec
            .get(b"index".as_slice())
            .and_then(|i| integer(i))
            .and_then(|i| usize::try_from(i).ok())
            .map_or(Begin::Unknown, Begin::Index),
        Some(b"keyword") => {
            let keyword = spec.get(b"keyword".as_slice()).and_then(|k| bytes(k));
            let start_from = spec.get(b"startfrom".as_slice()).and_then(|s| integer(s));
            match (keyword, start_from) {
                (Some(keyword), Some(start_from)) => Begin::Keyword {
                    keyword,
                    start_from,
                },
                _ => Begin::Unknown,
            }
        }
        _ => Begin::Unknown,
    }
}

/// A flat `[name, value, name, value, ...]` array (RESP2's map).
fn pairs(value: &RedisValue) -> Option<HashMap<Vec<u8>, &RedisValue>> {
    let RedisValue::Array(items) = value else {
        return None;
    };
    Some(
        items
            .chunks(2)
            .filter_map(|pair| match pair {
                [name, value] => Some((bytes(name)?.to_ascii_lowercase(), value)),
                _ => None,
            })
            .collect(),
    )
}

fn bytes(value: &RedisValue) -> Option<Vec<u8>> {
    match value {
        RedisValue::SimpleStringStatic(s) => Some(s.as_bytes().to_vec()),
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => Some(s.as_bytes().to_vec()),
        RedisValue::StringBuffer(b) => Some(b.clone()),
        RedisValue::BulkRedisString(s) => Some(s.as_slice().to_vec()),
        _ => None,
    }
}

fn strings(value: &RedisValue) -> Vec<Vec<u8>> {
    match value {
        RedisValue::Array(items) => items.iter().filter_map(bytes).collect(),
        _ => Vec::new(),
    }
}

fn integer(value: &RedisValue) -> Option<i64> {
    match value {
        RedisValue::Integer(i) => Some(*i),
        other => std::str::from_utf8(&bytes(other)?).ok()?.parse().ok(),
    }
}

#[cfg(test)]
mod packed_tests {
    use super::{little_endian, packed};

    #[test]
    fn short_names_pack_lowercase_and_apart() {
        assert_eq!(packed(b"GET"), packed(b"get"));
        assert_eq!(packed(b"GeT"), packed(b"gEt"));
        assert_ne!(packed(b"get"), packed(b"get\x00"));
        assert_ne!(packed(b"get"), packed(b"gets"));
        // Only letters change case: '@' and '[' sit just outside 'A'..='Z'.
        assert_ne!(packed(b"@"), packed(b"`"));
        assert_ne!(packed(b"["), packed(b"{"));
        assert_eq!(packed(b"ZSCAN"), packed(b"zscan"));
        assert_eq!(packed(b"x_1-z.Y"), packed(b"X_1-Z.y"));
        for long_or_foreign in [&b""[..], b"getrange", b"g\xc3\xa9t"] {
            assert_eq!(packed(long_or_foreign), None);
        }
    }

    #[test]
    fn overlapping_loads_read_every_byte_once_in_place() {
        let bytes = [0x11u8, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77];
        for n in 0..=7 {
            let mut expected = [0u8; 8];
            expected[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(
                little_endian(&bytes[..n]),
                u64::from_le_bytes(expected),
                "{n}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> RedisValue {
        RedisValue::SimpleString(text.to_string())
    }

    fn arr(items: Vec<RedisValue>) -> RedisValue {
        RedisValue::Array(items)
    }

    fn spec(flag: &str, begin: RedisValue) -> RedisValue {
        arr(vec![
            s("flags"),
            arr(vec![s(flag)]),
            s("begin_search"),
            begin,
        ])
    }

    fn index(i: i64) -> RedisValue {
        arr(vec![
            s("type"),
            s("index"),
            s("spec"),
            arr(vec![s("index"), RedisValue::Integer(i)]),
        ])
    }

    fn keyword(k: &str, from: i64) -> RedisValue {
        arr(vec![
            s("type"),
            s("keyword"),
            s("spec"),
            arr(vec![
                s("keyword"),
                s(k),
                s("startfrom"),
                RedisValue::Integer(from),
            ]),
        ])
    }

    fn command(name: &str, write: bool, specs: Vec<RedisValue>) -> RedisValue {
        let flag = if write { "write" } else { "readonly" };
        arr(vec![
            s(name),
            RedisValue::Integer(-2),
            arr(vec![s(flag)]),
            RedisValue::Integer(1),
            RedisValue::Integer(1),
            RedisValue::Integer(1),
            arr(vec![]),
            arr(vec![]),
            arr(specs),
            arr(vec![]),
        ])
    }

    fn table() -> CommandTable {
        let mut t = CommandTable::default();
        t.add(&command("get", false, vec![spec("RO", index(1))]), None);
        t.add(
            &command(
                "zunionstore",
                true,
                vec![spec("OW", index(1)), spec("RO", index(2))],
            ),
            None,
        );
        t.add(
            &command(
                "georadius",
                true,
                vec![
                    spec("RO", index(1)),
                    spec("OW", keyword("STORE", 6)),
                    spec("OW", keyword("STOREDIST", 6)),
                ],
            ),
            None,
        );
        t
    }

    fn access(t: &CommandTable, args: &[&str], position: usize) -> Access {
        let get = |i: usize| args.get(i).map(|a| a.as_bytes());
        let name = args.first().map_or(&b""[..], |a| a.as_bytes());
        t.command_of(name, args.len(), &get).access(&get, position)
    }

    #[test]
    fn a_subcommand_has_its_own_effect() {
        let mut t = CommandTable::default();
        let mut acl = command("acl", false, vec![]);
        if let RedisValue::Array(fields) = &mut acl {
            fields[9] = arr(vec![
                command("acl|setuser", true, vec![]),
                command("acl|getuser", false, vec![]),
            ]);
        }
        t.add(&acl, None);
        t.add(&command("select", false, vec![]), None);
        let effect = |args: &[&str]| {
            let get = |i: usize| args.get(i).map(|a| a.as_bytes());
            t.command_of(args[0].as_bytes(), args.len(), &get).effect()
        };
        assert_eq!(
            effect(&["ACL", "SETUSER", "default", ">x"]),
            NameEffect::Users
        );
        assert_eq!(effect(&["acl", "getuser", "default"]), NameEffect::None);
        assert_eq!(effect(&["SELECT", "1"]), NameEffect::Database);
        assert_eq!(effect(&["NOSUCH", "1"]), NameEffect::None);
    }

    #[test]
    fn a_command_the_server_would_refuse_has_no_keys() {
        let mut t = table();
        let mut exact = command("getdel", true, vec![spec("RW", index(1))]);
        if let RedisValue::Array(fields) = &mut exact {
            fields[1] = RedisValue::Integer(2);
        }
        t.add(&exact, None);
        let uses = |args: &[&str]| {
            let get = |i: usize| args.get(i).map(|a| a.as_bytes());
            t.command_of(args[0].as_bytes(), args.len(), &get)
                .has_keys()
        };
        assert!(uses(&["GETDEL", "k"]));
        assert!(!uses(&["GETDEL", "k", "extra"]), "arity 2 exactly");
        assert!(uses(&["GET", "k"]), "arity -2: at least two");
        assert!(!uses(&["GET"]));
        assert!(!uses(&["NOSUCH", "k"]), "unknown");
    }

    #[test]
    fn each_key_takes_the_spec_it_came_from() {
        let t = table();
        assert_eq!(access(&t, &["GET", "a"], 1), Access::Read);
        let zunion = ["ZUNIONSTORE", "out", "2", "a", "b"];
        assert_eq!(access(&t, &zunion, 1), Access::Write);
        assert_eq!(access(&t, &zunion, 3), Access::Read);
        assert_eq!(access(&t, &zunion, 4), Access::Read);
        let geo = ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst"];
        assert_eq!(access(&t, &geo, 1), Access::Read);
        assert_eq!(access(&t, &geo, 7), Access::Write);
        // Unknown commands count as writes.
        assert_eq!(access(&t, &["NOSUCH", "k"], 1), Access::Write);
    }

    #[test]
    fn the_last_name_remembered_never_answers_for_another() {
        let mut t = table();
        t.add(&command("set", true, vec![spec("OW", index(1))]), None);
        let at_1 = |name: &str| access(&t, &[name, "k"], 1);
        for _ in 0..2 {
            assert_eq!(at_1("GET"), Access::Read);
            assert_eq!(at_1("get"), Access::Read);
            assert_eq!(at_1("SET"), Access::Write);
            assert_eq!(at_1("GET"), Access::Read);
            // Unknown (a write) right after a known read.
            assert_eq!(at_1("GETX"), Access::Write);
            assert_eq!(at_1("GET"), Access::Read);
            assert_eq!(at_1("GE"), Access::Write);
            assert_eq!(at_1("GET\0"), Access::Write);
        }
    }
}
