//! hk-top's figures for other programs: one snapshot as a table or JSON
//! (`--once`, `--json`: [`snapshot`]), or served to Prometheus
//! (`--prometheus`: [`prometheus`]).

pub mod prometheus;
pub mod snapshot;
