//! Argument parsing with error messages that say which argument is wrong.
//!
//! Every error goes through [`err`], which keeps the message printable ASCII:
//! the crate turns an error into a C string byte by byte (`char as u8`), so a
//! character such as U+0100 would become a NUL and abort the server. Client
//! bytes quoted in a message go through [`printable`] first.

use redis_module::{RedisError, RedisString};

/// Client bytes quoted in an error: at most this many, then `...`.
const QUOTED_BYTES: usize = 64;

/// An `ERR` reply; anything outside printable ASCII is escaped as `\xNN`.
pub fn err(message: impl std::fmt::Display) -> RedisError {
    let mut text = String::from("ERR ");
    for &byte in message.to_string().as_bytes() {
        push_escaped(&mut text, byte, false);
    }
    RedisError::String(text)
}

/// Client bytes as printable ASCII for an error message: `\xNN` for every
/// other byte (and `\\` for a backslash, so the rendering is unambiguous),
/// cut after 64 bytes.
pub fn printable(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().min(QUOTED_BYTES) + 8);
    for &byte in bytes.iter().take(QUOTED_BYTES) {
        push_escaped(&mut text, byte, true);
    }
    if bytes.len() > QUOTED_BYTES {
        text.push_str("...");
    }
    text
}

fn push_escaped(text: &mut String, byte: u8, escape_backslash: bool) {
    match byte {
        b'\\' if escape_backslash => text.push_str("\\\\"),
        0x20..=0x7e => text.push(char::from(byte)),
        _ => text.push_str(&format!("\\x{byte:02x}")),
    }
}

/// An argument's bytes, whether retained (`RedisString`) or read in place.
pub trait ArgBytes {
    fn arg_bytes(&self) -> &[u8];
}

impl ArgBytes for RedisString {
    fn arg_bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

impl ArgBytes for [u8] {
    fn arg_bytes(&self) -> &[u8] {
        self
    }
}

impl<T: ArgBytes + ?Sized> ArgBytes for &T {
    fn arg_bytes(&self) -> &[u8] {
        (**self).arg_bytes()
    }
}

fn text(arg: &(impl ArgBytes + ?Sized)) -> Option<&str> {
    std::str::from_utf8(arg.arg_bytes()).ok()
}

/// An integer in `min..=max`.
pub fn integer(
    arg: &(impl ArgBytes + ?Sized),
    what: &str,
    min: u64,
    max: u64,
) -> Result<u64, RedisError> {
    text(arg)
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| err(format!("{what} must be an integer between {min} and {max}")))
}

/// A finite decimal number.
pub fn decimal(arg: &(impl ArgBytes + ?Sized), what: &str) -> Result<f64, RedisError> {
    text(arg)
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| err(format!("{what} must be a number")))
}

/// Case-insensitive keyword comparison.
pub fn is_keyword(arg: &(impl ArgBytes + ?Sized), keyword: &str) -> bool {
    arg.arg_bytes().eq_ignore_ascii_case(keyword.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: RedisError) -> String {
        match e {
            RedisError::String(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_bytes_become_printable_ascii() {
        assert_eq!(printable("Ā".as_bytes()), "\\xc4\\x80");
        assert_eq!(printable(b"a\0b\r\n\\"), "a\\x00b\\x0d\\x0a\\\\");
        assert_eq!(printable(&[b'x'; 70]), format!("{}...", "x".repeat(64)));
    }

    #[test]
    fn every_error_is_printable_ascii_whatever_it_was_given() {
        let e = message(err("option 'Ā' \u{4e00}\r\n"));
        assert!(e.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{e}");
        assert!(e.starts_with("ERR option '"));
        // Already printable text (an escaped quote included) is left alone.
        assert_eq!(
            message(err(format!("x '{}'", printable(b"\\\xff")))),
            "ERR x '\\\\\\xff'"
        );
    }
}
