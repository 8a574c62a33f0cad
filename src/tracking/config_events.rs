//! Config changes (`CONFIG SET requirepass`, `CONFIG SET` of anything),
//! from the server's config-change event. The filter sees `CONFIG` only
//! while it is registered: between counted slots a new password would go
//! unnoticed until the next time the users are asked, and clients not
//! logged in would count meanwhile. The event reaches the tracker however
//! it samples.

use super::with_state;
use crate::host::panic_guard::or_fallback;
use redis_module::{raw, Context};
use std::os::raw::{c_int, c_void};

/// Subscribes to config changes (at load). Returns what the server refused.
pub fn subscribe(ctx: &Context) -> Result<(), String> {
    let subscribe = crate::server_api!(RedisModule_SubscribeToServerEvent)
        .ok_or("no RedisModule_SubscribeToServerEvent")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_CONFIG,
        dataver: 1,
    };
    // SAFETY: the server's context, during OnLoad; the callback contains
    // every panic.
    let status = unsafe { subscribe(ctx.ctx, event, Some(on_config_change)) };
    if status == raw::Status::Ok as c_int {
        Ok(())
    } else {
        Err("the server refused the config-change event".into())
    }
}

unsafe extern "C" fn on_config_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    if ctx.is_null() {
        return;
    }
    let ctx = Context::new(ctx);
    // Any config: asked again at once (one `ACL GETUSER`), so that nothing
    // counted meanwhile is thrown away for want of an answer.
    or_fallback("a config-change event", (), || {
        with_state(|state| state.as_mut().map(|t| t.users_changed(&ctx)));
    });
}
