//! One config as the module declares it: its name (without the
//! `heavykeeper.` prefix), where its value lives, what it accepts and what
//! runs when it changes. Each layer declares its own settings beside the
//! values they set; the host registers them all alike.

use super::load_args::Kind;
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::Mutex;

/// What happens when a config changes (at load or by `CONFIG SET`).
pub type OnChange = Option<fn()>;

pub enum Setting {
    Integer {
        name: &'static str,
        variable: &'static AtomicI64,
        default: i64,
        min: i64,
        max: i64,
        /// Takes Redis's memory units (`64mb`).
        memory: bool,
        on_change: OnChange,
    },
    Bool {
        name: &'static str,
        variable: &'static AtomicBool,
        default: bool,
        /// Settable at load time only.
        immutable: bool,
        on_change: OnChange,
    },
    Text {
        name: &'static str,
        variable: &'static Mutex<Vec<u8>>,
        default: &'static str,
        /// Why a value is refused (`None`: accepted).
        check: fn(&[u8]) -> Option<&'static str>,
        on_change: OnChange,
    },
}

/// Any bytes will do.
pub fn any_bytes(_: &[u8]) -> Option<&'static str> {
    None
}

impl Setting {
    /// A plain integer config; `on_change` runs after every change.
    pub const fn integer(
        name: &'static str,
        variable: &'static AtomicI64,
        (default, min, max): (i64, i64, i64),
        on_change: OnChange,
    ) -> Setting {
        Setting::Integer {
            name,
            variable,
            default,
            min,
            max,
            memory: false,
            on_change,
        }
    }

    /// A bool config settable at run time.
    pub const fn bool(
        name: &'static str,
        variable: &'static AtomicBool,
        default: bool,
        on_change: OnChange,
    ) -> Setting {
        Setting::Bool {
            name,
            variable,
            default,
            immutable: false,
            on_change,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Setting::Integer { name, .. }
            | Setting::Bool { name, .. }
            | Setting::Text { name, .. } => name,
        }
    }

    /// What runs after a change.
    pub fn on_change(&self) -> OnChange {
        match self {
            Setting::Integer { on_change, .. }
            | Setting::Bool { on_change, .. }
            | Setting::Text { on_change, .. } => *on_change,
        }
    }

    /// What a load argument for this setting must be.
    pub fn kind(&self) -> Kind {
        match *self {
            Setting::Integer {
                min,
                max,
                memory: true,
                ..
            } => Kind::Memory { min, max },
            Setting::Integer { min, max, .. } => Kind::Integer { min, max },
            Setting::Bool { .. } => Kind::Bool,
            Setting::Text { .. } => Kind::Text,
        }
    }
}
