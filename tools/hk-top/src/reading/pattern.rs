//! Key patterns as `SCAN ... MATCH` and `KEYS` take them, on bytes: `*` any
//! run of bytes, `?` one byte, `[abc]`, `[^a]`, `[a-z]` (a reversed range is
//! swapped), `\x` the byte `x`, and everything else itself (`{`, `}`, `!` and
//! `.` included).
//!
//! Hand-written rather than from a glob crate because none reads a pattern
//! as the server does: globset and glob-match take `{a,b}` as alternatives
//! (a cluster's hash tags, `{user42}:*`, would silently mean something else)
//! and `[!a]` as a negation; the glob crate has no `\` escape and works on
//! text; wildmatch has no classes. An operator copies a pattern from
//! `redis-cli --scan --pattern`, so it must select the same keys: the
//! integration tests check this one against the server's own `SCAN MATCH`.
//!
//! It follows the server's matcher in its corner cases too: an unclosed
//! class runs to the end of the pattern, `[]` matches nothing, a trailing
//! `\` is a literal backslash, and `*` alone matches every key (the empty
//! one too, as `SCAN` shortcuts it). One difference: a range with a byte
//! above 0x7f (`[a-\xff]`) compares bytes as unsigned, as the server does
//! where C's `char` is unsigned (ARM) and not where it is signed (x86).

/// The server gives up on a pattern nested deeper than this many `*`s.
const MAX_STARS: u32 = 1000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    bytes: Vec<u8>,
}

impl KeyPattern {
    /// Every byte string is a pattern: the server refuses none.
    pub fn new(pattern: impl Into<Vec<u8>>) -> Self {
        KeyPattern {
            bytes: pattern.into(),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn matches(&self, key: &[u8]) -> bool {
        if self.bytes == b"*" {
            return true;
        }
        let mut give_up = false;
        match_here(&self.bytes, key, &mut give_up, 0)
    }
}

/// Does `text` match `pattern` from their starts? `give_up` is set once a
/// star found no match for the rest anywhere in the text: a longer match
/// for an earlier star would then fail too, so the search stops (without
/// it, a pattern with many stars takes exponential time).
fn match_here(mut pattern: &[u8], mut text: &[u8], give_up: &mut bool, stars: u32) -> bool {
    if stars > MAX_STARS {
        return false;
    }
    while let ([token, after_token @ ..], [byte, after_byte @ ..]) = (pattern, text) {
        match token {
            b'*' => return match_star(pattern, text, give_up, stars),
            b'?' => pattern = after_token,
            b'[' => {
                let (matched, rest) = match_class(after_token, *byte);
                if !matched {
                    return false;
                }
                pattern = rest;
            }
            _ => {
                // `\x` is `x`; a backslash that ends the pattern is itself.
                let (literal, rest) = match (token, after_token) {
                    (b'\\', [escaped, rest @ ..]) => (escaped, rest),
                    _ => (token, after_token),
                };
                if literal != byte {
                    return false;
                }
                pattern = rest;
            }
        }
        text = after_byte;
        if text.is_empty() {
            while let [b'*', rest @ ..] = pattern {
                pattern = rest;
            }
        }
    }
    pattern.is_empty() && text.is_empty()
}

/// `pattern` starts with `*` and `text` is not empty: try the rest of the
/// pattern at every place in the text.
fn match_star(mut pattern: &[u8], mut text: &[u8], give_up: &mut bool, stars: u32) -> bool {
    // A run of stars is one star.
    while let [_, rest @ ..] = pattern {
        if !rest.starts_with(b"*") {
            break;
        }
        pattern = rest;
    }
    let after_star = match pattern {
        [_] => return true,
        [_, rest @ ..] => rest,
        // Not called so; an empty pattern matches no text that is not empty.
        [] => return false,
    };
    while let [_, after_byte @ ..] = text {
        if match_here(after_star, text, give_up, stars + 1) {
            return true;
        }
        if *give_up {
            return false;
        }
        text = after_byte;
    }
    *give_up = true;
    false
}

/// A class after its `[`: does `byte` match it, and what follows it (past
/// its `]`; nothing if it was never closed).
fn match_class(class: &[u8], byte: u8) -> (bool, &[u8]) {
    let (negated, mut class) = match class {
        [b'^', rest @ ..] => (true, rest),
        _ => (false, class),
    };
    let mut matched = false;
    loop {
        match class {
            [b'\\', escaped, rest @ ..] => {
                matched |= *escaped == byte;
                class = rest;
            }
            [b']', rest @ ..] => {
                class = rest;
                break;
            }
            [] => break,
            [start, b'-', end, rest @ ..] => {
                let (low, high) = if start <= end {
                    (*start, *end)
                } else {
                    (*end, *start)
                };
                matched |= (low..=high).contains(&byte);
                class = rest;
            }
            [single, rest @ ..] => {
                matched |= *single == byte;
                class = rest;
            }
        }
    }
    (matched != negated, class)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, key: &[u8]) -> bool {
        KeyPattern::new(pattern).matches(key)
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("user:*", b"user:1"));
        assert!(matches("user:*", b"user:"));
        assert!(!matches("user:*", b"users:1"));
        assert!(matches("*:cart", b"tenant:42:cart"));
        assert!(matches("a*b*c", b"a-x-b-y-c"));
        assert!(!matches("a*b*c", b"a-x-b-y-d"));
        assert!(matches("h?llo", b"hello"));
        assert!(!matches("h?llo", b"hllo"));
        assert!(matches("*", b""), "SCAN MATCH * lists the empty key too");
        assert!(!matches("?", b""));
        assert!(matches("", b""));
        assert!(!matches("", b"a"));
    }

    #[test]
    fn classes_ranges_and_negation() {
        assert!(matches("h[ae]llo", b"hallo"));
        assert!(!matches("h[ae]llo", b"hillo"));
        assert!(matches("h[^e]llo", b"hallo"));
        assert!(!matches("h[^e]llo", b"hello"));
        assert!(matches("[a-c]x", b"bx"));
        assert!(matches("[c-a]x", b"bx"), "a reversed range is swapped");
        assert!(!matches("[a-c]x", b"dx"));
        // `!` is no negation for the server: it is the byte `!`.
        assert!(matches("[!a]", b"!"));
        assert!(matches("[!a]", b"a"));
        assert!(!matches("[!a]", b"b"));
        assert!(!matches("[]", b"a"), "an empty class matches nothing");
    }

    #[test]
    fn escapes_and_bytes_that_are_not_special() {
        assert!(matches(r"a\*b", b"a*b"));
        assert!(!matches(r"a\*b", b"axb"));
        assert!(matches(r"[\]]", b"]"));
        assert!(matches(r"a\", br"a\"), "a trailing backslash is itself");
        // Hash tags are literal braces, not alternatives.
        assert!(matches("{user42}:*", b"{user42}:cart"));
        assert!(!matches("{user42,user43}:*", b"user42:cart"));
        assert!(matches("user.*", b"user.1"));
        assert!(!matches("user.*", b"userX1"));
    }

    #[test]
    fn unclosed_classes_run_to_the_end_of_the_pattern() {
        assert!(matches("x[ab", b"xa"));
        assert!(!matches("x[ab", b"xab"));
        assert!(!matches("x[", b"xa"));
        assert!(
            matches("x[^", b"xz"),
            "an empty negated class matches any byte"
        );
        // `a-]` is a range from `]` to `a`, and the class is then unclosed.
        assert!(matches("[a-]", b"_"));
    }

    #[test]
    fn keys_are_bytes() {
        assert!(matches("bin:*", b"bin:\xff\x00"));
        assert!(matches("bin:?", b"bin:\xff"));
        let pattern = KeyPattern::new(b"\xff*".to_vec());
        assert!(pattern.matches(b"\xff\xfe"));
        assert!(!pattern.matches(b"\xfe"));
        // `?` is one byte, not one character.
        assert!(!matches("?", "é".as_bytes()));
        assert!(matches("??", "é".as_bytes()));
    }

    #[test]
    fn many_stars_finish() {
        let pattern = "*a".repeat(40) + "b";
        assert!(!matches(&pattern, "a".repeat(200).as_bytes()));
    }
}
