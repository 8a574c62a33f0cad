//! Text too wide for its column loses its middle: `user:sess…:8f3a:cart`.
//!
//! Why the middle: key names are built from the general to the particular
//! (`tenant:42:cart:items:<id>`), so the start says what kind of key it is
//! and the end which one. Cutting the end (what the console used to do)
//! makes every key of one scheme look the same; keeping only the end loses
//! the kind. The end gets two thirds of the room, since that is where keys
//! of one scheme differ; a node address keeps its port the same way. The
//! whole name is always in the key's details.
//!
//! Widths are terminal columns (`unicode-width`, as ratatui counts them),
//! not bytes or characters: a wide character takes two.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What stands for the part left out.
pub const ELLIPSIS: char = '…';

/// The columns `text` takes on a terminal.
pub fn width(text: &str) -> usize {
    text.width()
}

/// `text` as is if it fits in `columns`, else its start and end around an
/// ellipsis, never wider than `columns`.
pub fn elide_middle(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_string();
    }
    if columns == 0 {
        return String::new();
    }
    let room = columns - 1;
    let head_room = room / 3;
    let head = take_columns(text.chars(), head_room);
    // What the head could not use (a wide character that did not fit) goes
    // to the tail.
    let tail_room = room - width(&head);
    let mut tail: Vec<char> = take_columns(text.chars().rev(), tail_room)
        .chars()
        .collect();
    tail.reverse();
    let mut out = head;
    out.push(ELLIPSIS);
    out.extend(tail);
    out
}

/// The first characters of `chars` that fit in `columns`.
fn take_columns(chars: impl Iterator<Item = char>, columns: usize) -> String {
    let mut used = 0;
    let mut out = String::new();
    for c in chars {
        let w = c.width().unwrap_or(0);
        if used + w > columns {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_untouched() {
        assert_eq!(elide_middle("user:1", 6), "user:1");
        assert_eq!(elide_middle("user:1", 60), "user:1");
    }

    #[test]
    fn the_middle_goes_and_the_end_keeps_two_thirds() {
        let key = "some:much:longer:key:name:for:user:000000012345";
        let short = elide_middle(key, 31);
        // 30 columns around the ellipsis: 10 of the start, 20 of the end.
        assert_eq!(short, "some:much:…or:user:000000012345");
        assert_eq!(width(&short), 31);
    }

    #[test]
    fn keys_that_differ_at_the_end_stay_distinct() {
        let a = elide_middle("tenant:42:cart:items:session:000001", 20);
        let b = elide_middle("tenant:42:cart:items:session:000002", 20);
        assert_ne!(a, b);
        assert!(a.starts_with("tenant"), "{a}");
    }

    #[test]
    fn wide_characters_count_as_two_columns() {
        let key = "用户:会话:0000000001";
        assert_eq!(width(key), 20);
        let short = elide_middle(key, 11);
        assert!(width(&short) <= 11, "{short}");
        assert!(short.ends_with("0000001"), "{short}");
        assert_eq!(elide_middle("ab", 0), "");
        assert_eq!(elide_middle("abc", 1), "…");
    }
}
