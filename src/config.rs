//! Every module config, gathered from the layers that declare them (the
//! data type's limits, the tracker, watches) plus the one that decides
//! which commands exist: `topk-compat`.

use crate::host::config::Setting;
use std::sync::atomic::{AtomicBool, Ordering};

/// Registers RedisBloom's `TOPK.*` names on this data type (load time only:
/// commands cannot be added later).
static TOPK_COMPAT: AtomicBool = AtomicBool::new(false);

static TOPK_SETTINGS: [Setting; 1] = [Setting::Bool {
    name: "topk-compat",
    variable: &TOPK_COMPAT,
    default: false,
    immutable: true,
    on_change: None,
}];

pub fn topk_compat() -> bool {
    TOPK_COMPAT.load(Ordering::Relaxed)
}

/// Every setting, in the order `CONFIG GET heavykeeper.*` lists them.
pub fn all() -> Vec<&'static Setting> {
    crate::data_type::limits::SETTINGS
        .iter()
        .chain(&TOPK_SETTINGS)
        .chain(&crate::tracking::config::SETTINGS)
        .chain(&crate::watching::config::SETTINGS)
        .collect()
}
