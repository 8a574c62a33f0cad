//! How a top-k settles equal counts: whether a newcomer that only equals the
//! minimum gets in, and in what order equal counts are listed.

/// Fixed when a sketch is created and saved with it, so that replicas and
/// reloads settle every tie the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ties {
    /// A newcomer must pass the minimum; equal counts are listed by item
    /// bytes, the same whatever order the items came in. `HK.RESERVE`'s rule.
    #[default]
    ByItem,
    /// RedisBloom's TopK, for sketches made by `TOPK.RESERVE`: the heap is a
    /// fixed array of k slots (empty ones count 0), a newcomer that reaches
    /// the minimum replaces the member at the root, sifts move on equal
    /// counts at the first step as RedisBloom's do, and equal counts are
    /// listed in heap order. What its clients see in `TOPK.ADD`'s expelled
    /// items and `TOPK.LIST`.
    RedisBloom,
}

impl Ties {
    /// The byte that stands for the rule in the encoding.
    pub fn code(self) -> u8 {
        match self {
            Ties::ByItem => 0,
            Ties::RedisBloom => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        [Ties::ByItem, Ties::RedisBloom]
            .into_iter()
            .find(|x| x.code() == code)
    }

    /// The rule's name in `HK.RESERVE ... TIES` and `HK.INFO`.
    pub fn name(self) -> &'static str {
        match self {
            Ties::ByItem => "item",
            Ties::RedisBloom => "redisbloom",
        }
    }

    pub fn from_name(name: &[u8]) -> Option<Self> {
        [Ties::ByItem, Ties::RedisBloom]
            .into_iter()
            .find(|t| t.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Does a non-member whose estimate equals the minimum get in?
    pub fn admits_at_minimum(self) -> bool {
        self == Ties::RedisBloom
    }
}
