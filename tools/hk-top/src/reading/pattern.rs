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

    #[test]
    fn patterns_select_what_the_servers_matcher_selects() {
        let cases: &[(&[u8], &[u8], bool)] = &[
            // Stars and question marks.
            (b"user:*", b"user:1", true),
            (b"user:*", b"user:", true),
            (b"user:*", b"users:1", false),
            (b"*:cart", b"tenant:42:cart", true),
            (b"a*b*c", b"a-x-b-y-c", true),
            (b"a*b*c", b"a-x-b-y-d", false),
            (b"h?llo", b"hello", true),
            (b"h?llo", b"hllo", false),
            // SCAN MATCH * lists the empty key too.
            (b"*", b"", true),
            (b"?", b"", false),
            (b"", b"", true),
            (b"", b"a", false),
            // Classes, ranges and negation.
            (b"h[ae]llo", b"hallo", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hallo", true),
            (b"h[^e]llo", b"hello", false),
            (b"[a-c]x", b"bx", true),
            // A reversed range is swapped.
            (b"[c-a]x", b"bx", true),
            (b"[a-c]x", b"dx", false),
            // `!` is no negation for the server: it is the byte `!`.
            (b"[!a]", b"!", true),
            (b"[!a]", b"a", true),
            (b"[!a]", b"b", false),
            // An empty class matches nothing.
            (b"[]", b"a", false),
            // Escapes, and bytes that are not special.
            (br"a\*b", b"a*b", true),
            (br"a\*b", b"axb", false),
            (br"[\]]", b"]", true),
            // A trailing backslash is itself.
            (br"a\", br"a\", true),
            // Hash tags are literal braces, not alternatives.
            (b"{user42}:*", b"{user42}:cart", true),
            (b"{user42,user43}:*", b"user42:cart", false),
            (b"user.*", b"user.1", true),
            (b"user.*", b"userX1", false),
            // Unclosed classes run to the end of the pattern.
            (b"x[ab", b"xa", true),
            (b"x[ab", b"xab", false),
            (b"x[", b"xa", false),
            // An empty negated class matches any byte.
            (b"x[^", b"xz", true),
            // `a-]` is a range from `]` to `a`, and the class is then unclosed.
            (b"[a-]", b"_", true),
            // Keys are bytes; `?` is one byte, not one character.
            (b"bin:*", b"bin:\xff\x00", true),
            (b"bin:?", b"bin:\xff", true),
            (b"\xff*", b"\xff\xfe", true),
            (b"\xff*", b"\xfe", false),
            (b"?", "é".as_bytes(), false),
            (b"??", "é".as_bytes(), true),
        ];
        for &(pattern, key, matches) in cases {
            let (p, k) = (pattern.escape_ascii(), key.escape_ascii());
            assert_eq!(KeyPattern::new(pattern).matches(key), matches, "{p} on {k}");
        }
    }

    #[test]
    fn many_stars_finish() {
        let pattern = "*a".repeat(40) + "b";
        assert!(!KeyPattern::new(pattern).matches("a".repeat(200).as_bytes()));
    }
}
