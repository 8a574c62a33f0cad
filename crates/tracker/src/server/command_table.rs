//! Which keys of a command are read and which are written, from the key
//! specs in the server's own command table (`COMMAND`, read once when
//! tracking starts and handed over as a [`Reply`]).
//!
//! `RedisModule_GetCommandKeysWithFlags` finds every key, but Redis 7.0 and
//! Valkey 9 leave its flags empty for keys found through key specs (only
//! commands with their own key-finding code, such as `SET` and `SORT`, fill
//! them). So each key found is matched to the key spec it came from: the
//! spec whose search begins last at or before the key's position. A key is
//! a read if that spec says `RO`.
//!
//! The same specs also give the key positions of most commands, exactly as
//! the server computes them ([`crate::server::key_spec`]): for those the server's
//! key extraction (a command lookup and two allocations per command) is not
//! needed at all. Commands whose specs are incomplete (`SORT`,
//! `MIGRATE`...) still ask the server.

use crate::server::command_name::{as_sent, lowercase_into, lowercased, packed};
use crate::server::command_reply::Reply;
use crate::server::key_spec::{begin_position, key_positions, key_spec, Begin, Find, KeySpec};
use crate::server::name_effect::{effect_of, NameEffect};
use crate::server::script_watch::runs_scripts;
use crate::Access;
use hashbrown::HashMap;
use std::cell::Cell;

pub use crate::server::key_spec::Args;

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

impl CommandTable {
    /// The table of `COMMAND`'s reply, one entry per command (an empty
    /// table for none: every key then counts as a write).
    pub fn from_reply(commands: &[Reply]) -> Self {
        let mut table = Self::default();
        for command in commands {
            table.add(command, None);
        }
        table
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    fn add(&mut self, command: &Reply, parent: Option<&[u8]>) {
        let Reply::Array(fields) = command else {
            return;
        };
        let Some(name) = fields.first().and_then(Reply::bytes) else {
            return;
        };
        let arity = match fields.get(1) {
            Some(Reply::Integer(n)) => *n,
            _ => 0,
        };
        let flags = fields.get(2).map(Reply::strings).unwrap_or_default();
        let specs = match fields.get(8) {
            Some(Reply::Array(specs)) => specs.iter().filter_map(key_spec).collect(),
            _ => Vec::new(),
        };
        let subcommands = match fields.get(9) {
            Some(Reply::Array(subs)) => subs.as_slice(),
            _ => &[],
        };
        for sub in subcommands {
            self.add(sub, Some(&name));
        }
        let uniform = match specs.split_first() {
            Some((first, rest)) if rest.iter().all(|s| s.read_only == first.read_only) => {
                Some(access_of(first.read_only))
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
                Some(access_of(only.read_only))
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
        for spec in self.spec.iter().flat_map(|c| &c.specs) {
            let Some(start) = begin_position(&spec.begin, args) else {
                continue;
            };
            for position in key_positions(&spec.find, start, argc, args) {
                each(position, access_of(spec.read_only));
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
            Some(spec) => access_of(spec.read_only),
            None if command.write => Access::Write,
            None => Access::Read,
        }
    }
}

/// How a key spec's keys are used.
fn access_of(read_only: bool) -> Access {
    if read_only {
        Access::Read
    } else {
        Access::Write
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(flag: &str, begin: Reply) -> Reply {
        let flags = Reply::Array(vec![Reply::text(flag)]);
        Reply::map([("flags", flags), ("begin_search", begin)])
    }

    fn index(i: i64) -> Reply {
        let spec = Reply::map([("index", Reply::Integer(i))]);
        Reply::map([("type", Reply::text("index")), ("spec", spec)])
    }

    fn keyword(k: &str, from: i64) -> Reply {
        let spec = Reply::map([
            ("keyword", Reply::text(k)),
            ("startfrom", Reply::Integer(from)),
        ]);
        Reply::map([("type", Reply::text("keyword")), ("spec", spec)])
    }

    fn command(name: &str, write: bool, specs: Vec<Reply>) -> Reply {
        let flag = if write { "write" } else { "readonly" };
        Reply::command(name, -2, flag, specs, vec![])
    }

    fn table() -> CommandTable {
        let zunion = vec![spec("OW", index(1)), spec("RO", index(2))];
        let georadius = vec![
            spec("RO", index(1)),
            spec("OW", keyword("STORE", 6)),
            spec("OW", keyword("STOREDIST", 6)),
        ];
        CommandTable::from_reply(&[
            command("get", false, vec![spec("RO", index(1))]),
            command("zunionstore", true, zunion),
            command("georadius", true, georadius),
        ])
    }

    /// The command `args` as the table finds it.
    fn key_use<'t>(t: &'t CommandTable, args: &[&str]) -> KeyUse<'t> {
        let get = |i: usize| args.get(i).map(|a| a.as_bytes());
        let name = args.first().map_or(&b""[..], |a| a.as_bytes());
        t.command_of(name, args.len(), &get)
    }

    fn access(t: &CommandTable, args: &[&str], position: usize) -> Access {
        let get = |i: usize| args.get(i).map(|a| a.as_bytes());
        key_use(t, args).access(&get, position)
    }

    #[test]
    fn a_subcommand_has_its_own_effect() {
        let subs = vec![
            command("acl|setuser", true, vec![]),
            command("acl|getuser", false, vec![]),
        ];
        let t = CommandTable::from_reply(&[
            Reply::command("acl", -2, "readonly", vec![], subs),
            command("select", false, vec![]),
        ]);
        let effect = |args: &[&str]| key_use(&t, args).effect();
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
        let exact = Reply::command("getdel", 2, "write", vec![spec("RW", index(1))], vec![]);
        t.add(&exact, None);
        let uses = |args: &[&str]| key_use(&t, args).has_keys();
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
