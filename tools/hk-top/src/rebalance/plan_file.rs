//! `--plan FILE`: the moves of a plan printed earlier (`rebalance --json`),
//! to carry out exactly what was reviewed. It is checked whole before the
//! first move ([`heavykeeper_rebalance::check_plan`]): a slot listed
//! twice, one no longer where the plan found it, a target that is not
//! another primary, and the plan is refused with nothing touched.

use super::error::Error;
use super::topology::Views;
use heavykeeper_rebalance::{check_plan, Measure, Move, Plan};
use serde_json::Value;

/// The moves of the JSON plan in `text`.
pub fn parse(text: &str) -> Result<Plan, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not a plan: {e}"))?;
    let moves = (value.get("moves").and_then(Value::as_array))
        .ok_or("not a plan: no \"moves\"")?
        .iter()
        .enumerate()
        .map(|(i, m)| one_move(m).ok_or(format!("move {i} is not a slot, a from and a to")))
        .collect::<Result<Vec<Move>, String>>()?;
    Ok(Plan {
        measure: Measure::Total,
        total: 0.0,
        target: 0.0,
        moves,
        nodes: Vec::new(),
        advice: Vec::new(),
        cut_short: false,
        too_light: false,
    })
}

fn one_move(m: &Value) -> Option<Move> {
    let rate = |name: &str| m.get(name).and_then(Value::as_f64).unwrap_or(0.0);
    Some(Move {
        slot: u16::try_from(m.get("slot")?.as_u64()?)
            .ok()
            .filter(|&s| s < 16384)?,
        from: m.get("from")?.as_str()?.to_string(),
        to: m.get("to")?.as_str()?.to_string(),
        reads_per_second: rate("reads_per_second"),
        writes_per_second: rate("writes_per_second"),
        stats: Default::default(),
        keys: m.get("keys").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// Every move's slot once, served by its `from` now, to another primary.
pub fn check(plan: &Plan, views: &Views) -> Result<(), Error> {
    let primaries: Vec<String> = (views.primaries().iter())
        .map(|n| n.address.clone())
        .collect();
    let owner = |slot: u16| views.owner_of(slot).map(|n| n.address.clone());
    let problems = check_plan(&plan.moves, owner, &primaries);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Plan(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_plan_reads_back_and_odd_ones_are_refused() {
        let plan = parse(r#"{"moves": [{"slot": 7, "from": "a:1", "to": "a:2", "keys": 3, "reads_per_second": 1.5}]}"#).unwrap();
        assert_eq!(plan.moves.len(), 1);
        assert_eq!((plan.moves[0].slot, plan.moves[0].keys), (7, 3));
        assert!(parse("{}").is_err());
        assert!(parse(r#"{"moves": [{"slot": 16384, "from": "a", "to": "b"}]}"#).is_err());
        assert!(parse("not json").is_err());
    }
}
