//! The markdown report and the console summary.

use crate::accuracy::Accuracy;
use crate::contenders::Kind;
use crate::plots::human_bytes;
use crate::Measurements;
use std::fmt::Write;
use std::path::{Path, PathBuf};

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
    let kinds = Kind::ALL.map(Kind::short).join(" | ");
    let rules = "---|".repeat(Kind::ALL.len() + 1);
    let mut out = format!(
        "| budget | {kinds} | ours: memory, rel. / abs. error, over-estimates |\n|---|{rules}\n"
    );
    for &budget in budgets {
        let _ = write!(out, "| {} |", human_bytes(budget as f64));
        let find = |kind| {
            rows.iter().find(|r| {
                r.workload == workload && r.k == k && r.budget == budget && r.kind == kind
            })
        };
        for kind in Kind::ALL {
            out.push_str(&find(kind).map_or(" — |".into(), |r| format!(" {:.3} |", r.precision)));
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

/// A figure the sketches are compared on at equal memory.
#[derive(Clone, Copy)]
pub enum Measure {
    Precision,
    /// Mean relative count error over the true top-k items reported.
    CountError,
}

impl Measure {
    fn of(self, r: &Accuracy) -> f64 {
        match self {
            Measure::Precision => r.precision,
            Measure::CountError => r.relative_error,
        }
    }

    /// Is `a` worse than `b` (beyond rounding)?
    fn worse(self, a: f64, b: f64) -> bool {
        match self {
            Measure::Precision => a + 1e-9 < b,
            Measure::CountError => a > b + 1e-9,
        }
    }
}

/// Every (workload, k, budget) where ours is worse than a peer on `measure`.
/// A count error is compared only where both sketches reported some of the
/// true top-k: an empty listing has no error to speak of.
pub fn losses(rows: &[Accuracy], measure: Measure) -> (usize, Vec<String>) {
    let mut compared = 0;
    let mut losses = Vec::new();
    let counted = |r: &Accuracy| match measure {
        Measure::Precision => true,
        Measure::CountError => r.precision > 0.0,
    };
    for ours in rows.iter().filter(|r| r.kind == Kind::Ours && counted(r)) {
        let best_peer = rows
            .iter()
            .filter(|r| {
                r.kind != Kind::Ours
                    && r.workload == ours.workload
                    && r.k == ours.k
                    && r.budget == ours.budget
                    && counted(r)
            })
            .reduce(|best, r| {
                if measure.worse(measure.of(best), measure.of(r)) {
                    r
                } else {
                    best
                }
            });
        compared += 1;
        if let Some(peer) = best_peer.filter(|p| measure.worse(measure.of(ours), measure.of(p))) {
            losses.push(format!(
                "{} k={} at {}: ours {} vs {} {}",
                ours.workload,
                ours.k,
                human_bytes(ours.budget as f64),
                readable(measure.of(ours)),
                peer.kind.short(),
                readable(measure.of(peer))
            ));
        }
    }
    (compared, losses)
}

/// Four decimals, or two significant digits for what four decimals would
/// show as 0.0000 (a loss by a relative error of 3e-5 is still a loss).
fn readable(x: f64) -> String {
    if x != 0.0 && x.abs() < 5e-5 {
        format!("{x:.1e}")
    } else {
        format!("{x:.4}")
    }
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

pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'));
    model.map_or("unknown CPU".into(), |(_, m)| m.trim().to_string())
}

/// Writes the markdown report and the plots under `out`; returns the
/// report's path. A quick or partial (`--only`) run never overwrites the
/// full run's files.
pub fn write(m: &Measurements, out: &Path) -> PathBuf {
    let suffix = match (m.quick, m.partial) {
        (true, _) => "-quick",
        (false, true) => "-partial",
        (false, false) => "",
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# HeavyKeeper benchmark report\n\nMode: {}. {} arrivals per synthetic workload over {} distinct items; fixed seeds. Machine: {} ({} cores). Run took {:.0} s.\n",
        if m.quick { "quick (`make bench QUICK=1`)" } else { "full (`make bench`)" },
        m.arrivals,
        m.distinct,
        cpu_model(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        m.seconds
    );
    let _ = writeln!(md, "## Goals\n\n{}", goals_table(&m.goals));
    md.push_str("## Default `HK.RESERVE key k`\n\nMemory is what the type reports to `MEMORY USAGE` at the end of the stream (items included), before the key's own ~32-64 bytes.\n\n| workload | k | width x depth | memory | precision | rel. error | over-estimates |\n|---|---|---|---|---|---|---|\n");
    for d in &m.defaults {
        let _ = writeln!(
            md,
            "| {} | {} | {} x {} | {} B | {:.3} | {:.4} | {} |",
            d.workload,
            d.k,
            d.width,
            d.depth,
            d.memory,
            d.precision,
            d.relative_error,
            d.overestimates
        );
    }
    if !m.shapes.is_empty() {
        md.push_str(&crate::shapes::markdown(&m.shapes, m.shape_seeds));
    }
    md.push_str("\n## Precision at equal memory\n\nBudgets count everything a sketch holds, items included (peers: their own `mem_bytes`; Space-Saving: its counters, index, heap and filter). A sketch that cannot fit a budget shows —. Precision counts an item tied with the true k-th as correct; relative error is over the true top-k items reported.\n\n");
    for &k in &m.ks {
        let _ = writeln!(md, "![precision k={k}](precision_k{k}{suffix}.png)\n");
        for w in &m.names {
            let _ = writeln!(
                md,
                "### {w}, k = {k}\n\n{}",
                precision_table(&m.rows, w, k, &m.budgets)
            );
        }
    }
    let error_budget = if m.quick { 128 << 10 } else { 64 << 10 };
    let _ = writeln!(
        md,
        "## Count errors at {}\n\nHeavyKeeper counts are lower bounds (never above the truth without a fingerprint collision); Space-Saving counts are upper bounds.\n\n{}",
        crate::plots::human_bytes(error_budget as f64),
        error_table(&m.rows, error_budget)
    );
    let _ = write!(md, "## Speed\n\n![throughput](throughput{suffix}.png)\n\n| sketch | memory | M arrivals/s |\n|---|---|---|\n");
    for t in &m.equal {
        let _ = writeln!(md, "| {} | {} B | {:.2} |", t.kind.name(), t.memory, t.mops);
    }
    md.push_str(
        "\nOur default sketch, ns per arrival by k (zipf-1.0):\n\n| k | ns/arrival |\n|---|---|\n",
    );
    for (k, ns) in &m.by_k {
        let _ = writeln!(md, "| {k} | {ns:.1} |");
    }
    md.push_str(&m.redis.markdown());
    md.extend(
        [
            m.fade.as_ref().map(|f| f.markdown()),
            (!m.merges.is_empty()).then(|| crate::accuracy::merges_markdown(&m.merges)),
            m.layout.as_ref().map(|l| l.markdown()),
            m.ties.as_ref().map(|t| t.markdown()),
            m.tracked.as_ref().map(|t| t.markdown()),
            m.watched.as_ref().map(|w| w.markdown()),
        ]
        .into_iter()
        .flatten(),
    );

    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("cannot create {}: {e}", out.display());
    }
    if crate::plots::load_font() {
        for &k in &m.ks {
            let path = out.join(format!("precision_k{k}{suffix}.png"));
            if let Err(e) = crate::plots::precision_vs_memory(&m.rows, k, &m.names, &path) {
                eprintln!("plot k={k}: {e}");
            }
        }
        let title = "k = 100, 64 KiB each, zipf-1.0";
        let path = out.join(format!("throughput{suffix}.png"));
        if let Err(e) = crate::plots::throughput_bars(&m.equal, title, &path) {
            eprintln!("plot throughput: {e}");
        }
    } else {
        eprintln!("no font found (apt-get install fonts-dejavu-core): plots skipped");
    }
    let report_path = out.join(format!("REPORT{suffix}.md"));
    if let Err(e) = std::fs::write(&report_path, &md) {
        eprintln!("cannot write {}: {e}", report_path.display());
    }

    report_path
}
