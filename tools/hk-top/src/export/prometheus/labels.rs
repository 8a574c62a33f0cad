//! Label values as the text format needs them.

use base64::Engine;

pub type Labels = Vec<(String, String)>;

/// `[("node", address)]`: every series has it.
pub fn node_labels(address: &str) -> Labels {
    vec![("node".to_string(), label_value(address))]
}

/// `name="text"` for bytes that are UTF-8, else `name_base64="..."`: a
/// key or a prefix may be any bytes, a label value may not.
pub fn bytes_label(name: &str, bytes: &[u8]) -> (String, String) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (name.to_string(), label_value(text)),
        Err(_) => (
            format!("{name}_base64"),
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ),
    }
}

/// A label value as the text format needs it: the encoder writes values as
/// given, so backslashes, quotes and line breaks are escaped here.
pub fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(label_value("user:1"), "user:1");
    }

    #[test]
    fn bytes_that_are_not_utf8_go_base64() {
        assert_eq!(
            bytes_label("prefix", b"tenant:7:*"),
            ("prefix".to_string(), "tenant:7:*".to_string())
        );
        assert_eq!(
            bytes_label("key", b"\xff"),
            ("key_base64".to_string(), "/w==".to_string())
        );
    }
}
