//! What a plan does to each primary: the plan computes it, the advice reads
//! it (what is still over its share once every useful move is made).

/// A primary's load before the plan and once it is carried out.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeOutcome {
    pub node: String,
    pub before: f64,
    pub after: f64,
    /// Over the target beyond its measurement's bounds before the plan:
    /// what the plan acts on (see the crate's "No move on noise").
    pub surely_over: bool,
}
