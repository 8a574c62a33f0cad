//! A command's options after its fixed arguments: keywords in any order and
//! any case, each at most once, some followed by a value. Every command
//! parses them here, so every command refuses an unknown or repeated option
//! with the same words: `unknown or repeated option 'X': expected ...`.

use super::args::{err, printable, ArgBytes};
use redis_module::RedisError;

/// The options of one command, read one at a time.
pub struct Options<'a, A> {
    args: std::slice::Iter<'a, A>,
    /// The options as the error lists them (`WITHCOUNT, AT timestamp`).
    expected: &'static str,
    /// Each entry is one option, or alternatives given as `A|B` of which one
    /// may be named once.
    names: &'static [&'static str],
    seen: Vec<usize>,
}

impl<'a, A: ArgBytes> Options<'a, A> {
    pub fn new(args: &'a [A], names: &'static [&'static str], expected: &'static str) -> Self {
        Self {
            args: args.iter(),
            expected,
            names,
            seen: Vec::new(),
        }
    }

    /// The next option (as it is spelled in `names`), `None` at the end.
    /// An option not in `names`, or a second of one entry, is refused.
    pub fn next_option(&mut self) -> Result<Option<&'static str>, RedisError> {
        let Some(arg) = self.args.next() else {
            return Ok(None);
        };
        let given = arg.arg_bytes();
        let found = self.names.iter().enumerate().find_map(|(entry, names)| {
            names
                .split('|')
                .find(|name| given.eq_ignore_ascii_case(name.as_bytes()))
                .map(|name| (entry, name))
        });
        match found {
            Some((entry, name)) if !self.seen.contains(&entry) => {
                self.seen.push(entry);
                Ok(Some(name))
            }
            _ => Err(err(format!(
                "unknown or repeated option '{}': expected {}",
                printable(given),
                self.expected
            ))),
        }
    }

    /// The value after the option just read; a missing one is an arity error.
    pub fn value(&mut self) -> Result<&'a A, RedisError> {
        self.args.next().ok_or(RedisError::WrongArity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&[u8]]) -> Result<Vec<String>, String> {
        let mut options = Options::new(args, &["WITHCOUNT", "AT", "READS|WRITES"], "them");
        let mut out = Vec::new();
        loop {
            match options.next_option() {
                Ok(Some("AT")) => {
                    let v = options.value().map_err(|e| e.to_string())?;
                    out.push(format!("AT={}", String::from_utf8_lossy(v)));
                }
                Ok(Some(name)) => out.push(name.to_string()),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn options_come_in_any_order_and_case_once_each() {
        assert_eq!(
            parse(&[b"at", b"5", b"WithCount"]).unwrap(),
            ["AT=5", "WITHCOUNT"]
        );
        assert_eq!(parse(&[b"writes"]).unwrap(), ["WRITES"]);
        let repeated = parse(&[b"WITHCOUNT", b"withcount"]).unwrap_err();
        assert!(
            repeated.contains("unknown or repeated option 'withcount': expected them"),
            "{repeated}"
        );
        let both = parse(&[b"READS", b"WRITES"]).unwrap_err();
        assert!(both.contains("'WRITES'"), "{both}");
        assert!(parse(&[b"\xff\x00"]).unwrap_err().contains("'\\xff\\x00'"));
        assert!(parse(&[b"AT"]).is_err());
    }
}
