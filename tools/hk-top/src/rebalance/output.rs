//! A plan as text (for a person deciding whether to `--apply` it) and as
//! JSON (`--json`, for scripts): moves, each primary's share before and
//! after, and the advice on what moving slots cannot fix.

use super::apply::by_pair;
use crate::export::snapshot::{printable_key, put, put_bytes};
use heavykeeper_rebalance::{Advice, Plan, Remedy};
use serde_json::{json, Value};

pub fn plan_json(plan: &Plan, source: &str) -> Value {
    let moves: Vec<Value> = (plan.moves.iter())
        .map(|m| {
            let mut row = json!({
                "slot": m.slot,
                "from": m.from,
                "to": m.to,
                "reads_per_second": m.reads_per_second,
                "writes_per_second": m.writes_per_second,
                "keys": m.keys,
            });
            if plan.measure.is_slot_stats() {
                put(&mut row, "cpu_usec_per_second", json!(m.stats.cpu_usec));
                put(
                    &mut row,
                    "network_bytes_per_second",
                    json!(m.stats.network_bytes),
                );
            }
            row
        })
        .collect();
    let nodes: Vec<Value> = (plan.nodes.iter())
        .map(|n| {
            json!({
                "node": n.node,
                "per_second_before": n.before,
                "per_second_after": n.after,
                "share_before": plan.share(n.before),
                "share_after": plan.share(n.after),
            })
        })
        .collect();
    json!({
        "source": source,
        "measure": plan.measure.name(),
        "unit": plan.measure.unit(),
        "total_per_second": plan.total,
        "target_per_second": plan.target,
        "target_share": plan.share(plan.target),
        "moves": moves,
        "keys_moved": plan.keys_moved(),
        "nodes": nodes,
        "advice": plan.advice.iter().map(advice_json).collect::<Vec<Value>>(),
        "reaches_target": plan.reaches_target(),
        "cut_short": plan.cut_short,
        "too_light": plan.too_light,
    })
}

fn remedies_json(remedies: &[Remedy]) -> Vec<Value> {
    (remedies.iter())
        .map(|r| json!({"remedy": r.name(), "how": r.how()}))
        .collect()
}

fn advice_json(advice: &Advice) -> Value {
    match advice {
        Advice::HotKey {
            key,
            slot,
            node,
            reads_per_second,
            writes_per_second,
            share,
            remedies,
        } => {
            let mut row = json!({
                "kind": "hot-key",
                "slot": slot,
                "node": node,
                "reads_per_second": reads_per_second,
                "writes_per_second": writes_per_second,
                "share": share,
                "remedies": remedies_json(remedies),
            });
            put_bytes(&mut row, "key", key);
            row
        }
        Advice::HotSlot {
            slot,
            node,
            reads_per_second,
            writes_per_second,
            share,
            keys,
            remedies,
        } => json!({
            "kind": "hot-slot",
            "slot": slot,
            "node": node,
            "reads_per_second": reads_per_second,
            "writes_per_second": writes_per_second,
            "share": share,
            "keys": keys,
            "remedies": remedies_json(remedies),
        }),
        Advice::OverTarget { node, share } => json!({
            "kind": "over-target",
            "node": node,
            "share": share,
            "remedies": [{"remedy": "run-again", "how": "its slots are too coarse to share out, or the plan was cut short: run again once traffic has settled, or add a primary"}],
        }),
    }
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// The plan for a person: the primaries, the moves summed per pair, the advice.
pub fn plan_text(plan: &Plan, source: &str) -> String {
    let mut out = format!(
        "{} ({}, measured by {source}): {:.1} in all; target: no primary above {} ({:.1})\n",
        plan.measure.name(),
        plan.measure.unit(),
        plan.total,
        percent(plan.share(plan.target)),
        plan.target
    );
    for n in &plan.nodes {
        out.push_str(&format!(
            "  {:<24} {:>7} -> {:>7}\n",
            n.node,
            percent(plan.share(n.before)),
            percent(plan.share(n.after))
        ));
    }
    if plan.too_light {
        out.push_str("the cluster's load is under --min-load: nothing worth balancing\n");
    } else if plan.moves.is_empty() {
        out.push_str("no slot to move\n");
    } else {
        out.push_str(&format!(
            "{} slots to move ({} keys):\n",
            plan.moves.len(),
            plan.keys_moved()
        ));
        for (from, to, moves) in by_pair(&plan.moves) {
            let keys: u64 = moves.iter().map(|m| m.keys).sum();
            let load: f64 = moves.iter().map(|m| m.load(plan.measure)).sum();
            out.push_str(&format!(
                "  {from} -> {to}: {} slots, {keys} keys, {load:.1} {}\n",
                moves.len(),
                plan.measure.unit()
            ));
        }
    }
    for advice in &plan.advice {
        out.push_str(&advice_text(advice));
    }
    if plan.cut_short {
        out.push_str("the plan was cut short by --max-moves: run again to go on\n");
    }
    out.trim_end().to_string()
}

fn advice_text(advice: &Advice) -> String {
    let how = |remedies: &[Remedy]| {
        (remedies.iter())
            .map(|r| format!("    - {}: {}\n", r.name(), r.how()))
            .collect::<String>()
    };
    match advice {
        Advice::HotKey { key, slot, node, share, remedies, .. } => format!(
            "advice: key {} (slot {slot}, {}) alone serves {}: no slot move fixes it\n{}",
            printable_key(key),
            node.as_deref().unwrap_or("?"),
            percent(*share),
            how(remedies)
        ),
        Advice::HotSlot { slot, node, share, keys, remedies, .. } => format!(
            "advice: slot {slot} ({node}, {keys} keys) alone serves {}, no key of it does\n{}",
            percent(*share),
            how(remedies)
        ),
        Advice::OverTarget { node, share } => format!(
            "advice: {node} stays at {}: its slots are too coarse to share out, or the plan was cut short\n",
            percent(*share)
        ),
    }
}
