//! Hot tenants: a key's prefix, the key cut after its `depth`-th
//! delimiter (`tenant:7:cart:19` at depth 2 is `tenant:7:`), so that a
//! tenant whose traffic is spread over many keys, none of them hot, shows
//! as one hot prefix.

/// Where keys are cut into prefixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixRule {
    delimiter: Vec<u8>,
    /// Depths, each at least 1, in increasing order, without repeats.
    depths: Vec<usize>,
}

/// The most depths a rule takes, and the deepest.
pub const MAX_DEPTHS: usize = 4;
pub const MAX_DEPTH: usize = 16;

impl PrefixRule {
    /// `None` when nothing is to be counted (no delimiter, or no depth).
    pub fn new(delimiter: &[u8], depths: &[usize]) -> Option<Self> {
        let mut depths = depths.to_vec();
        depths.retain(|d| (1..=MAX_DEPTH).contains(d));
        depths.sort_unstable();
        depths.dedup();
        depths.truncate(MAX_DEPTHS);
        (!delimiter.is_empty() && !depths.is_empty()).then(|| Self {
            delimiter: delimiter.to_vec(),
            depths,
        })
    }

    /// `"1,2"` (or spaces) as depths, at most [`MAX_DEPTHS`] of them, each
    /// up to [`MAX_DEPTH`]; `"0"` or `""`: none. `None` for anything else.
    pub fn parse_depths(text: &str) -> Option<Vec<usize>> {
        let depths: Vec<usize> = text
            .split([',', ' '])
            .filter(|part| !part.is_empty())
            .map(|part| part.parse::<usize>().ok().filter(|d| *d <= MAX_DEPTH))
            .collect::<Option<_>>()?;
        let depths: Vec<usize> = depths.into_iter().filter(|&d| d > 0).collect();
        (depths.len() <= MAX_DEPTHS).then_some(depths)
    }

    /// How many prefixes a key yields at most.
    pub fn depth_count(&self) -> usize {
        self.depths.len()
    }

    /// Calls `each(prefix)` for every prefix of `key`, shallowest first;
    /// a key with fewer delimiters than a depth has no prefix at that depth.
    pub fn each_prefix<'k>(&self, key: &'k [u8], mut each: impl FnMut(&'k [u8])) {
        let Some(&deepest) = self.depths.last() else {
            return;
        };
        let mut depth = 0;
        let mut from = 0;
        let step = self.delimiter.len();
        while depth < deepest {
            let Some(at) = key.get(from..).and_then(|rest| find(rest, &self.delimiter)) else {
                return;
            };
            from += at + step;
            depth += 1;
            if self.depths.contains(&depth) {
                each(key.get(..from).unwrap_or_default());
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if let [byte] = needle {
        return haystack.iter().position(|b| b == byte);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A prefix as a `SCAN MATCH` pattern for exactly the keys it starts:
/// glob characters in it escaped, then `*`.
pub fn as_pattern(prefix: &[u8]) -> Vec<u8> {
    let mut pattern = Vec::with_capacity(prefix.len() + 2);
    for &b in prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    pattern.push(b'*');
    pattern
}

/// The prefix a [`as_pattern`] pattern stands for (a prefix given as it
/// is, without the final `*`, is taken as it is).
pub fn from_pattern(pattern: &[u8]) -> Vec<u8> {
    let Some(body) = pattern.strip_suffix(b"*") else {
        return pattern.to_vec();
    };
    let mut prefix = Vec::with_capacity(body.len());
    let mut escaped = false;
    for &b in body {
        if b == b'\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        prefix.push(b);
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes(rule: &PrefixRule, key: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        rule.each_prefix(key, |p| out.push(p.to_vec()));
        out
    }

    #[test]
    fn a_key_is_cut_after_each_depths_delimiter() {
        let rule = PrefixRule::new(b":", &[2, 1]).unwrap();
        assert_eq!(
            prefixes(&rule, b"tenant:7:cart:19"),
            [b"tenant:".to_vec(), b"tenant:7:".to_vec()]
        );
        assert_eq!(prefixes(&rule, b"user:42"), [b"user:".to_vec()]);
        assert!(prefixes(&rule, b"plain").is_empty());
        let two = PrefixRule::new(b"::", &[1]).unwrap();
        assert_eq!(prefixes(&two, b"a::b::c"), [b"a::".to_vec()]);
        assert_eq!(PrefixRule::new(b"", &[1]), None);
        assert_eq!(PrefixRule::new(b":", &[0, 99]), None);
    }

    #[test]
    fn depths_parse_and_patterns_escape_and_give_their_prefix_back() {
        assert_eq!(PrefixRule::parse_depths("1,2"), Some(vec![1, 2]));
        assert_eq!(PrefixRule::parse_depths(" 2 "), Some(vec![2]));
        assert_eq!(PrefixRule::parse_depths(""), Some(vec![]));
        assert_eq!(PrefixRule::parse_depths("two"), None);
        assert_eq!(PrefixRule::parse_depths("0"), Some(vec![]));
        assert_eq!(PrefixRule::parse_depths("17"), None);
        assert_eq!(PrefixRule::parse_depths("1,2,3,4,5"), None);
        assert_eq!(PrefixRule::parse_depths("-1"), None);
        assert_eq!(as_pattern(b"tenant:7:"), b"tenant:7:*".to_vec());
        assert_eq!(as_pattern(b"a*[b]:"), b"a\\*\\[b\\]:*".to_vec());
        for prefix in [&b"tenant:7:"[..], b"a*b?[c]\\:", b""] {
            assert_eq!(from_pattern(&as_pattern(prefix)), prefix);
        }
        assert_eq!(from_pattern(b"tenant:7:"), b"tenant:7:");
    }
}
