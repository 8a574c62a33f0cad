//! A key spec, as the server's command table (`COMMAND`) gives it: where
//! its search for keys begins (an index, or the argument after a keyword)
//! and how it finds them from there (a range, or a key count), and whether
//! its keys are read only. From a spec, the key positions of one command
//! exactly as the server computes them.

use crate::server::command_reply::Reply;
use hashbrown::HashMap;

/// A command's arguments by position (`None` past the end).
pub type Args<'a> = dyn Fn(usize) -> Option<&'a [u8]> + 'a;

/// Where a key spec's search begins.
#[derive(Clone, Debug, PartialEq)]
pub enum Begin {
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
pub struct KeySpec {
    pub read_only: bool,
    pub begin: Begin,
    pub find: Find,
    /// The server says this spec may miss keys: ask the server instead.
    pub incomplete: bool,
}

/// How a key spec finds its keys once it knows where they begin.
#[derive(Clone, Debug, PartialEq)]
pub enum Find {
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

/// One key spec, from its flat `[name, value, ...]` form.
pub fn key_spec(spec: &Reply) -> Option<KeySpec> {
    let fields = spec.pairs()?;
    let flags = fields
        .get(b"flags".as_slice())
        .map(|f| f.strings())
        .unwrap_or_default();
    let begin = fields
        .get(b"begin_search".as_slice())
        .and_then(|b| b.pairs())
        .map_or(Begin::Unknown, |search| begin_search(&search));
    let find = fields
        .get(b"find_keys".as_slice())
        .and_then(|f| f.pairs())
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

fn find_keys(found: &HashMap<Vec<u8>, &Reply>) -> Find {
    let kind = found.get(b"type".as_slice()).and_then(|t| t.bytes());
    let Some(spec) = found.get(b"spec".as_slice()).and_then(|s| s.pairs()) else {
        return Find::Unknown;
    };
    let number = |name: &[u8]| spec.get(name).and_then(|v| v.integer());
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

fn begin_search(search: &HashMap<Vec<u8>, &Reply>) -> Begin {
    let kind = search.get(b"type".as_slice()).and_then(|t| t.bytes());
    let Some(spec) = search.get(b"spec".as_slice()).and_then(|s| s.pairs()) else {
        return Begin::Unknown;
    };
    match kind.as_deref() {
        Some(b"index") => spec
            .get(b"index".as_slice())
            .and_then(|i| i.integer())
            .and_then(|i| usize::try_from(i).ok())
            .map_or(Begin::Unknown, Begin::Index),
        Some(b"keyword") => {
            let keyword = spec.get(b"keyword".as_slice()).and_then(|k| k.bytes());
            let start_from = spec.get(b"startfrom".as_slice()).and_then(|s| s.integer());
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

/// The positions a spec's keys take, from `start`, within `argc` arguments.
pub fn key_positions<'a>(
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

/// Where the spec's keys begin in this very command.
pub fn begin_position<'a>(begin: &Begin, args: &Args<'a>) -> Option<usize> {
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
