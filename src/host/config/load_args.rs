//! The `loadmodule ... name value ...` arguments, checked exactly as
//! `CONFIG SET heavykeeper.<name> value` checks them: an unknown or repeated
//! name, a missing value or one out of range refuses the load with one
//! message that names the argument. A typo must not leave a server running
//! with a setting the operator believes is on.

use crate::host::args::printable;
use std::collections::BTreeMap;

/// What a setting accepts.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Integer {
        min: i64,
        max: i64,
    },
    /// Bytes, with the units Redis's own memory configs take (`64mb`, `1gb`).
    Memory {
        min: i64,
        max: i64,
    },
    /// `yes` or `no`.
    Bool,
    Text,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Integer(i64),
    Bool(bool),
    Text(Vec<u8>),
}

/// The values given at load time, by setting name.
#[derive(Debug, Default)]
pub struct LoadArgs {
    values: BTreeMap<&'static str, Value>,
}

impl LoadArgs {
    pub fn integer(&self, name: &str) -> Option<i64> {
        match self.values.get(name) {
            Some(Value::Integer(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.values.get(name) {
            Some(Value::Bool(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn text(&self, name: &str) -> Option<&[u8]> {
        match self.values.get(name) {
            Some(Value::Text(v)) => Some(v),
            _ => None,
        }
    }
}

/// Parses `name value` pairs against `settings`. The error is one line,
/// printable, naming the argument at fault.
pub fn parse(args: &[&[u8]], settings: &[(&'static str, Kind)]) -> Result<LoadArgs, String> {
    let mut parsed = LoadArgs::default();
    let mut rest = args.iter();
    while let Some(raw_name) = rest.next() {
        let name = std::str::from_utf8(raw_name)
            .unwrap_or("")
            .to_ascii_lowercase();
        // `heavykeeper.track` is the CONFIG SET spelling: accept it here too.
        let name = name.strip_prefix("heavykeeper.").unwrap_or(&name);
        let Some(&(known, kind)) = settings.iter().find(|(n, _)| *n == name) else {
            return Err(unknown(raw_name, settings));
        };
        let Some(raw_value) = rest.next() else {
            return Err(format!("argument '{known}' has no value"));
        };
        let value = parse_value(raw_value, kind)
            .map_err(|why| format!("argument '{known}': '{}' {why}", printable(raw_value)))?;
        if parsed.values.insert(known, value).is_some() {
            return Err(format!("argument '{known}' is given twice"));
        }
    }
    Ok(parsed)
}

fn unknown(name: &[u8], settings: &[(&'static str, Kind)]) -> String {
    let names: Vec<&str> = settings.iter().map(|(n, _)| *n).collect();
    let given = String::from_utf8_lossy(name).to_ascii_lowercase();
    let hint = names
        .iter()
        .map(|n| (strsim::levenshtein(&given, n), *n))
        .min()
        .filter(|(d, _)| *d <= 3)
        .map(|(_, n)| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default();
    format!(
        "unknown argument '{}'{hint}; arguments are name/value pairs of: {}",
        printable(name),
        names.join(", ")
    )
}

fn parse_value(raw: &[u8], kind: Kind) -> Result<Value, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "is not text".to_string())?;
    match kind {
        Kind::Integer { min, max } => {
            let v: i64 = text.parse().map_err(|_| "is not an integer".to_string())?;
            in_range(v, min, max)
        }
        Kind::Memory { min, max } => {
            let v = memory_bytes(text).ok_or_else(|| {
                "is not a size (bytes, or a number with b, k, kb, m, mb, g, gb)".to_string()
            })?;
            in_range(v, min, max)
        }
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "yes" => Ok(Value::Bool(true)),
            "no" => Ok(Value::Bool(false)),
            _ => Err("is not yes or no".into()),
        },
        Kind::Text if raw.contains(&0) => Err("holds a NUL byte".into()),
        Kind::Text => Ok(Value::Text(raw.to_vec())),
    }
}

fn in_range(v: i64, min: i64, max: i64) -> Result<Value, String> {
    ((min..=max).contains(&v).then_some(Value::Integer(v)))
        .ok_or_else(|| format!("is out of range: must be between {min} and {max}"))
}

/// `64mb` → 67108864, with Redis's units: `k`/`m`/`g` are powers of 1000,
/// `kb`/`mb`/`gb` powers of 1024, `b` or nothing is bytes.
pub fn memory_bytes(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let number: i64 = number.parse().ok()?;
    let multiplier: i64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &[(&str, Kind)] = &[
        (
            "max-sketch-bytes",
            Kind::Memory {
                min: 1024,
                max: 1 << 40,
            },
        ),
        ("track", Kind::Bool),
        ("track-k", Kind::Integer { min: 1, max: 100 }),
        ("track-channel", Kind::Text),
    ];

    fn parse_all(args: &[&str]) -> Result<LoadArgs, String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse(&bytes, SETTINGS)
    }

    #[test]
    fn valid_arguments_are_read() {
        let args =
            parse_all(&["max-sketch-bytes", "64mb", "TRACK", "yes", "track-k", "7"]).unwrap();
        assert_eq!(args.integer("max-sketch-bytes"), Some(64 << 20));
        assert_eq!(args.bool("track"), Some(true));
        assert_eq!(args.integer("track-k"), Some(7));
        assert_eq!(args.integer("track-channel"), None);
    }

    #[test]
    fn the_config_set_spelling_is_accepted() {
        let args = parse_all(&["heavykeeper.track-k", "3"]).unwrap();
        assert_eq!(args.integer("track-k"), Some(3));
    }

    #[test]
    fn every_mistake_names_the_argument() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["max-sketch-byte", "1mb"],
                "unknown argument 'max-sketch-byte' (did you mean 'max-sketch-bytes'?)",
            ),
            (&["track"], "argument 'track' has no value"),
            (
                &["track", "yes", "track", "no"],
                "argument 'track' is given twice",
            ),
            (
                &["max-sketch-bytes", "10"],
                "argument 'max-sketch-bytes': '10' is out of range",
            ),
            (
                &["track-k", "1e3"],
                "argument 'track-k': '1e3' is not an integer",
            ),
            (&["track", "on"], "argument 'track': 'on' is not yes or no"),
            (&["max-sketch-bytes", "64tb"], "is not a size"),
            (&["bogus\u{100}", "1"], "unknown argument 'bogus\\xc4\\x80'"),
        ];
        for (args, expected) in cases {
            let error = parse_all(args).unwrap_err();
            assert!(error.contains(expected), "{args:?}: {error}");
            assert!(error.bytes().all(|b| (0x20..0x7f).contains(&b)), "{error}");
        }
    }

    #[test]
    fn memory_units_follow_redis() {
        assert_eq!(memory_bytes("100"), Some(100));
        assert_eq!(memory_bytes("1k"), Some(1000));
        assert_eq!(memory_bytes("1KB"), Some(1024));
        assert_eq!(memory_bytes("2gb"), Some(2 << 30));
        assert_eq!(memory_bytes("-1"), None);
        assert_eq!(memory_bytes("mb"), None);
        assert_eq!(memory_bytes("99999999999999gb"), None);
    }
}
