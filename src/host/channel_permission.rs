//! A watch publishes on a channel in the name of the user who set it: that
//! user must be allowed to `PUBLISH` there, exactly as the server would
//! check it, and a refusal is answered and logged (`ACL LOG`) as the
//! server does.

use crate::host::module_string;
use redis_module::{raw, Context, ContextFlags, RedisError};
use std::os::raw::c_int;

/// The error the server answers a `PUBLISH` the user may not send: Redis
/// 7.0 says it one way, 7.2+ and Valkey another.
fn noperm() -> RedisError {
    // SAFETY: a plain query of the server.
    let version = unsafe { raw::RedisModule_GetServerVersion.map_or(0, |f| f()) };
    if version >= 0x00_07_02_00 {
        RedisError::Str("NOPERM No permissions to access a channel")
    } else {
        RedisError::Str(
            "NOPERM this user has no permissions to access one of the channels used as arguments",
        )
    }
}

/// Refuses `channel` unless the calling user may publish on it. Commands
/// from the primary or from a load already passed this check where they
/// were first run.
pub fn check_publish(ctx: &Context, channel: &[u8]) -> Result<(), RedisError> {
    if ctx
        .get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
    {
        return Ok(());
    }
    // SAFETY: the command's own context; every string and user obtained
    // here is freed before returning.
    unsafe {
        let (Some(current_user), Some(user_of), Some(check), Some(free_user)) = (
            raw::RedisModule_GetCurrentUserName,
            raw::RedisModule_GetModuleUserFromUserName,
            raw::RedisModule_ACLCheckChannelPermissions,
            raw::RedisModule_FreeModuleUser,
        ) else {
            return Ok(()); // a server without ACLs
        };
        let name = current_user(ctx.ctx);
        if name.is_null() {
            return Ok(()); // no user: the server itself
        }
        let user = user_of(name);
        if let Some(free_string) = raw::RedisModule_FreeString {
            free_string(ctx.ctx, name);
        }
        if user.is_null() {
            return Err(noperm());
        }
        let channel = module_string::of(ctx, channel);
        let allowed = check(
            user,
            channel.inner,
            raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int,
        ) == raw::Status::Ok as c_int;
        if !allowed {
            if let Some(log) = raw::RedisModule_ACLAddLogEntry {
                log(
                    ctx.ctx,
                    user,
                    channel.inner,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CHANNEL,
                );
            }
        }
        free_user(user);
        allowed.then_some(()).ok_or_else(noperm)
    }
}
