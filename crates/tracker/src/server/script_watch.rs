//! Redis 7.0 only: is a script running? Its commands pass the filter too,
//! but the script's own command already counted the keys it declared. The
//! filter cannot tell (7.0's says nothing of the client), and asking the
//! server (`RM_GetContextFlags`, which also works out the memory state)
//! costs more than counting the key. While the filter sees every command
//! (a counted slot of time, see the module's timers), the server is asked only
//! after a command that may run a script, until a command outside any
//! script says it has ended; after commands went unseen (between counted slots),
//! it is asked again until then. (7.2+ needs none of this: a script's
//! client is no connection, and its commands are skipped.)

/// What the filter knows of running scripts (nothing at first: a script
/// may be running).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptWatch {
    /// The server said no script is running, and nothing may have started
    /// one since: no need to ask before counting.
    none_running: bool,
}

impl ScriptWatch {
    pub fn script_started(&mut self) {
        self.none_running = false;
    }

    /// Commands went by unseen: one of them may have started a script.
    pub fn commands_unseen(&mut self) {
        self.none_running = false;
    }

    /// Must the server be asked whether a script is running?
    #[inline]
    pub fn may_run(&self) -> bool {
        !self.none_running
    }

    /// The server said no script is running.
    #[inline]
    pub fn none_running(&mut self) {
        self.none_running = true;
    }
}

/// `EVAL`, `EVALSHA`, `FCALL` (and their `_RO` forms), and `EXEC`, whose
/// transaction may hold any of them: a script may run once such a command
/// has been counted. Asked of every command, script or not (through the
/// command table, once per name when tracking starts): a script command
/// may set `none_running` while it is counted (no script runs *yet*), so
/// it must be known to start one whatever the state was.
pub fn runs_scripts(name: &[u8]) -> bool {
    [
        &b"eval"[..],
        b"evalsha",
        b"eval_ro",
        b"evalsha_ro",
        b"fcall",
        b"fcall_ro",
        b"exec",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_asked_only_after_a_script_may_have_started_or_commands_went_unseen() {
        let mut w = ScriptWatch::default();
        // Nothing known at first: ask until a command outside any script.
        assert!(w.may_run());
        w.none_running();
        assert!(!w.may_run());
        assert!(!runs_scripts(b"GET"));
        assert!(runs_scripts(b"evalsha"));
        w.script_started();
        assert!(w.may_run());
        assert!(runs_scripts(b"EVAL") && runs_scripts(b"EXEC") && runs_scripts(b"fcall_ro"));
        // Commands went by unseen: ask again.
        w.none_running();
        w.commands_unseen();
        assert!(w.may_run());
    }
}
