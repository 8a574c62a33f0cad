//! The event loop's passes, heard only while asked for. A pass begins when
//! the server's wait for events returns (`AFTER_SLEEP`); every command the
//! server runs belongs to exactly one pass: its clients' reads, then the
//! timers, then what runs before the next wait (clients just unblocked).
//! So a feature that acts at the start of a pass acts between commands, and
//! on whole passes.
//!
//! Hearing every pass costs the server ~1,100 instructions a pass
//! (callgrind, Redis 7.0: the event's context and temporary client, both
//! sub-events), 2% of a core at the 58,000 passes a second of a saturated
//! Valkey: passes are heard for as short a time as a feature needs.
//!
//! The server frees a listener as soon as it is dropped, and its loop over
//! listeners reads the one it just called after the call returns: dropping
//! the subscription from within the hook would be a use after free. So a
//! hook that no longer needs passes only says so, and a timer of no delay
//! (it runs later in the same pass) drops the subscription, unless passes
//! were asked for again meanwhile.

use super::events::{Refused, ServerCallback};
use super::main_thread_cell::MainThreadCell;
use super::panic_guard::or_fallback;
use redis_module::{raw, Context};
use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;
use std::time::Duration;

/// A pass of the event loop began (its wait for events returned).
pub type PassBegun = fn(ctx: &Context);

static PASS_BEGUN: OnceLock<PassBegun> = OnceLock::new();

/// Whether passes are wanted, heard (subscribed), and whether the hook is
/// running or a drop is already due.
#[derive(Clone, Copy, Default)]
struct Hearing {
    wanted: bool,
    subscribed: bool,
    in_hook: bool,
    drop_due: bool,
}

static HEARING: MainThreadCell<Hearing> = MainThreadCell::new(Hearing {
    wanted: false,
    subscribed: false,
    in_hook: false,
    drop_due: false,
});

fn hearing() -> Hearing {
    HEARING.with(|h| *h).unwrap_or_default()
}

fn set_hearing(f: impl FnOnce(&mut Hearing)) {
    HEARING.with(f);
}

/// `hook` hears of every pass while passes are asked for
/// ([`hear_passes`]); none is heard until then.
pub fn on_pass_begun(hook: PassBegun) -> Result<(), Refused> {
    PASS_BEGUN
        .set(hook)
        .map_err(|_| "a second hook for event-loop passes".to_string())
}

/// Passes are heard from now on (`on`), or no longer (from within the hook
/// too: the subscription is then dropped later in the same pass).
pub fn hear_passes(ctx: &Context, on: bool) {
    set_hearing(|h| h.wanted = on);
    let now = hearing();
    if on && !now.subscribed {
        if subscribe(ctx, true) {
            set_hearing(|h| h.subscribed = true);
        }
    } else if !on && now.subscribed {
        if now.in_hook {
            if !now.drop_due {
                set_hearing(|h| h.drop_due = true);
                ctx.create_timer(Duration::ZERO, drop_if_unwanted, ());
            }
        } else {
            drop_subscription(ctx);
        }
    }
}

fn drop_if_unwanted(ctx: &Context, (): ()) {
    set_hearing(|h| h.drop_due = false);
    let now = hearing();
    if !now.wanted && now.subscribed {
        drop_subscription(ctx);
    }
}

fn drop_subscription(ctx: &Context) {
    if subscribe(ctx, false) {
        set_hearing(|h| h.subscribed = false);
    }
}

/// Subscribes to the event-loop event, or unsubscribes (only when
/// subscribed: the server would otherwise add a listener with no callback).
fn subscribe(ctx: &Context, on: bool) -> bool {
    let Some(subscribe) = crate::server_api!(RedisModule_SubscribeToServerEvent) else {
        return false;
    };
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_EVENTLOOP,
        dataver: 1,
    };
    let callback: Option<ServerCallback> = if on { Some(pass_event) } else { None };
    // SAFETY: a live context on the main thread; the callback contains
    // every panic; unsubscribing happens only outside the callback.
    let status = unsafe { subscribe(ctx.ctx, event, callback) };
    status == raw::Status::Ok as c_int
}

unsafe extern "C" fn pass_event(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_EVENTLOOP_AFTER_SLEEP || ctx.is_null() {
        return;
    }
    set_hearing(|h| h.in_hook = true);
    or_fallback("an event-loop pass", (), || {
        if let Some(hook) = PASS_BEGUN.get() {
            hook(&Context::new(ctx));
        }
    });
    set_hearing(|h| h.in_hook = false);
}
