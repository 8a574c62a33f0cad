//! A server's reply, as plain Rust: what `COMMAND` answers, handed over by
//! the module (which reads it through the server's API) to the parsers
//! here, which know no server.

use hashbrown::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Integer(i64),
    /// A simple or bulk string.
    Bytes(Vec<u8>),
    Array(Vec<Reply>),
    /// Anything else (a null, a double...): read as nothing.
    Other,
}

impl Reply {
    /// A string reply's bytes.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Reply::Bytes(b) => Some(b.clone()),
            _ => None,
        }
    }

    /// An array of strings (what is not a string left out).
    pub fn strings(&self) -> Vec<Vec<u8>> {
        match self {
            Reply::Array(items) => items.iter().filter_map(Reply::bytes).collect(),
            _ => Vec::new(),
        }
    }

    /// An integer, or a string holding one.
    pub fn integer(&self) -> Option<i64> {
        match self {
            Reply::Integer(i) => Some(*i),
            other => std::str::from_utf8(&other.bytes()?).ok()?.parse().ok(),
        }
    }

    /// A flat `[name, value, name, value, ...]` array (RESP2's map), by
    /// lowercase name.
    pub fn pairs(&self) -> Option<HashMap<Vec<u8>, &Reply>> {
        let Reply::Array(items) = self else {
            return None;
        };
        Some(
            items
                .chunks(2)
                .filter_map(|pair| match pair {
                    [name, value] => Some((name.bytes()?.to_ascii_lowercase(), value)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// A string reply of `text`.
    pub fn text(text: &str) -> Reply {
        Reply::Bytes(text.as_bytes().to_vec())
    }

    /// A flat `[name, value, ...]` array, as [`Self::pairs`] reads it.
    pub fn map<const N: usize>(pairs: [(&str, Reply); N]) -> Reply {
        let flat = pairs
            .into_iter()
            .flat_map(|(name, value)| [Reply::text(name), value]);
        Reply::Array(flat.collect())
    }

    /// One command as `COMMAND` describes it (key positions left to its key
    /// `specs`), as the tests hand it to the tables that read it.
    pub fn command(
        name: &str,
        arity: i64,
        flag: &str,
        specs: Vec<Reply>,
        subs: Vec<Reply>,
    ) -> Reply {
        let (one, none) = (Reply::Integer(1), Reply::Array(vec![]));
        let head = [
            Reply::text(name),
            Reply::Integer(arity),
            Reply::Array(vec![Reply::text(flag)]),
        ];
        let keys = [one.clone(), one.clone(), one, none.clone(), none];
        let tail = [Reply::Array(specs), Reply::Array(subs)];
        Reply::Array(head.into_iter().chain(keys).chain(tail).collect())
    }
}
