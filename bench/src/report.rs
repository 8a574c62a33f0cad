//! The markdown report and the console summary.

use crate::accuracy::Accuracy;
use crate::contenders::Kind;
use crate::plots::human_bytes;
use std::fmt::Write;

/// A claim with its measured value: met or not.
pub struct Goal {
    pub name: String,
    pub target: String,
    pub measured: String,
    pub met: bool,
}

impl Goal {
    pub fn new(
        name: impl Into<String>,
        target: impl Into<String>,
        measured: impl Into<String>,
        met: bool,
    ) -> Self {
        Self {
            name: name.into(),
            target: target.into(),
            measured: measured.into(),
            met,
        }
    }
}

pub fn goals_table(goals: &[Goal]) -> String {
    let mut out = String::from("| goal | target | measured | met |\n|---|---|---|---|\n");
    for g in goals {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            g.name,
            g.target,
            g.measured,
            if g.met { "yes" } else { "**no**" }
        );
    }
    out
}

/// Precision per budget and sketch, for one workload and k.
pub fn precision_table(rows: &[Accuracy], workload: &str, k: usize, budgets: &[usize]) -> String {
    let mut out = String::from("| budget |");
    for kind in Kind::ALL {
        let _ = write!(out, " {} |", kind.short());
    }
    out.push_str(" ours: memory, rel. / abs. error, over-estimates |\n|---|");
    for _ in 0..=Kind::ALL.len() {
        out.push_str("---|");
    }
    out.push('\n');
    for &budget in budgets {
        let _ = write!(out, "| {} |", human_bytes(budget as f64));
        let find = |kind| {
            rows.iter().find(|r| {
                r.workload == workload && r.k == k && r.budget == budget && r.kind == kind
            })
        };
        for kind in Kind::ALL {
            match find(kind) {
                Some(r) => {
                    let _ = write!(out, " {:.3} |", r.precision);
                }
                None => out.push_str(" — |"),
            }
        }
        match find(Kind::Ours) {
            Some(r) => {
                let _ = writeln!(
                    out,
                    " {} B, {:.4} / {:.1}, {} |",
                    r.memory, r.relative_error, r.absolute_error, r.overestimates
                );
            }
            None => out.push_str(" does not fit |\n"),
        }
    }
    out
}

/// Every (workload, k, budget) where ours is below the best peer.
pub fn precision_losses(rows: &[Accuracy]) -> (usize, Vec<String>) {
    let mut compared = 0;
    let mut losses = Vec::new();
    for ours in rows.iter().filter(|r| r.kind == Kind::Ours) {
        let best_peer = rows
            .iter()
            .filter(|r| {
                r.kind != Kind::Ours
                    && r.workload == ours.workload
                    && r.k == ours.k
                    && r.budget == ours.budget
            })
            .max_by(|a, b| a.precision.total_cmp(&b.precision));
        compared += 1;
        if let Some(peer) = best_peer {
            if ours.precision + 1e-9 < peer.precision {
                losses.push(format!(
                    "{} k={} at {}: ours {:.3} < {} {:.3}",
                    ours.workload,
                    ours.k,
                    human_bytes(ours.budget as f64),
                    ours.precision,
                    peer.kind.short(),
                    peer.precision
                ));
            }
        }
    }
    (compared, losses)
}

/// Count errors of every sketch at one budget: mean relative and absolute
/// error over the true top-k it reported, and how many reported counts
/// exceeded the truth.
pub fn error_table(rows: &[Accuracy], budget: usize) -> String {
    let mut out = String::from("| workload | k | sketch | precision | rel. error | abs. error | counts above the truth |\n|---|---|---|---|---|---|---|\n");
    for r in rows.iter().filter(|r| r.budget == budget) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | {:.4} | {:.1} | {} |",
            r.workload,
            r.k,
            r.kind.short(),
            r.precision,
            r.relative_error,
            r.absolute_error,
            r.overestimates
        );
    }
    out
}
