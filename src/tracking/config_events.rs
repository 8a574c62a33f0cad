//! Config changes (`CONFIG SET requirepass`, `CONFIG SET` of anything),
//! from the server's config-change event. The filter sees `CONFIG` only
//! while it is registered: between counted slots a new password would go
//! unnoticed until the next time the users are asked, and clients not
//! logged in would count meanwhile. The event reaches the tracker however
//! it samples.

use super::with_state;
use crate::host::events;
use redis_module::Context;

/// Subscribes to config changes (at load). Returns what the server refused.
pub fn subscribe(ctx: &Context) -> Result<(), String> {
    events::on_config_change(ctx, users_may_have_changed)
}

/// Any config: asked again at once (one `ACL GETUSER`), so that nothing
/// counted meanwhile is thrown away for want of an answer.
fn users_may_have_changed(ctx: &Context) {
    with_state(|state| state.as_mut().map(|t| t.users_changed(ctx)));
}
