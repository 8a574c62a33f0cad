//! Commands whose mere name changes what the tracker knows, whether or not
//! their keys are counted. Worked out once per command name when tracking
//! starts (the command table keeps each command's effect), never per
//! command.

/// What a command does to the tracker's knowledge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameEffect {
    #[default]
    None,
    /// `SELECT`, or `EXEC` (its transaction may hold a `SELECT`, seen by the
    /// filter when it was queued but run only now): the client's database.
    Database,
    /// `RESET`: another database, and logged out.
    Reset,
    /// `AUTH`, `HELLO`: the client may be let in now.
    Login,
    /// `ACL SETUSER`/`DELUSER`/`LOAD`: who needs a password may have
    /// changed. (`CONFIG SET requirepass` is heard through the server's
    /// config-change event, which also fires when the filter is not
    /// registered, and only when something changed.)
    Users,
    /// `ASKING`: the client's next command may use a slot being imported.
    Asking,
    /// A `CLUSTER` command that may move slots or change this node's role
    /// (`SETSLOT`, `ADDSLOTS`, `FAILOVER`, ...): what the node serves.
    Slots,
}

/// The effect of the command named `name` (`container|sub` for a
/// subcommand, as `COMMAND` names them).
pub fn effect_of(name: &[u8]) -> NameEffect {
    let name = name.to_ascii_lowercase();
    match name.as_slice() {
        b"select" | b"exec" => NameEffect::Database,
        b"reset" => NameEffect::Reset,
        b"auth" | b"hello" => NameEffect::Login,
        b"acl|setuser" | b"acl|deluser" | b"acl|load" => NameEffect::Users,
        b"asking" => NameEffect::Asking,
        b"cluster|setslot"
        | b"cluster|addslots"
        | b"cluster|addslotsrange"
        | b"cluster|delslots"
        | b"cluster|delslotsrange"
        | b"cluster|flushslots"
        | b"cluster|failover"
        | b"cluster|reset"
        | b"cluster|replicate"
        | b"cluster|forget"
        | b"cluster|migrateslots"
        | b"cluster|bumpepoch" => NameEffect::Slots,
        _ => NameEffect::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_has_its_effect_and_others_none() {
        for (name, effect) in [
            (&b"SELECT"[..], NameEffect::Database),
            (b"exec", NameEffect::Database),
            (b"Reset", NameEffect::Reset),
            (b"AUTH", NameEffect::Login),
            (b"hello", NameEffect::Login),
            (b"acl|setuser", NameEffect::Users),
            (b"ASKING", NameEffect::Asking),
            (b"cluster|setslot", NameEffect::Slots),
            (b"CLUSTER|FAILOVER", NameEffect::Slots),
        ] {
            assert_eq!(effect_of(name), effect, "{name:?}");
        }
        for name in [
            &b"GET"[..],
            b"SELECTX",
            b"MULTI",
            b"EXECS",
            b"",
            b"\x00\x00\x00\x00",
            b"acl",
            b"config|get",
            b"config|set",
            b"cluster|nodes",
            b"cluster",
        ] {
            assert_eq!(effect_of(name), NameEffect::None, "{name:?}");
        }
    }
}
