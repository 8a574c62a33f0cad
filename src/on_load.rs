//! Loading the module: the order matters and every refusal is one log line.
//!
//! 1. the load arguments are checked before anything is registered;
//! 2. the data type, the module's ACL category (where the server has one),
//!    the `HK.*` commands with their key specs, docs and categories;
//! 3. the configs, with the load arguments as their values, then redis.conf's
//!    `heavykeeper.*` lines (`RM_LoadConfigs`);
//! 4. `TOPK.*` if `topk-compat` is on (known only after step 3);
//! 5. INFO, the tracking filter and the watch timer.

use crate::data_type::{stats, HK_TYPE};
use crate::host::command_spec::{self, ServerSupport};
use crate::host::{module_load, panic_guard};
use crate::{commands, config, data_type, host, tracking, watching};
use redis_module::{Context, InfoContext, ModuleOptions};
use std::os::raw::c_int;

/// The module's own ACL category, where the server can add one (Redis 7.4+,
/// Valkey): `+@heavykeeper` grants every command of the module.
pub const ACL_CATEGORY: &str = "heavykeeper";
/// `TOPK.*` are in both the module's category and RedisBloom's.
const TOPK_ACL_CATEGORIES: &str = "heavykeeper topk";

/// The module's steps at load, in order (the server side of loading is
/// [`host::module_load`]).
pub fn load(context: &Context, args: &[&[u8]]) -> Result<(), String> {
    let settings = config::all();
    let given = host::config::parse_load_args(args, &settings)?;

    HK_TYPE
        .create_data_type(context.ctx)
        .map_err(|e| format!("cannot create the data type: {e}"))?;
    let support = server_support(context);
    for spec in commands::all() {
        command_spec::register(context, spec, &support)?;
    }
    host::config::register(context, &settings, &given)?;
    if !module_load::load_configs(context) {
        return Err("a heavykeeper.* config in the server's configuration is invalid".into());
    }
    if config::topk_compat() {
        register_topk(context, &support)?;
    }
    module_load::register_info(context, info);
    // Without this, a truncated payload in RESTORE or an RDB makes the server
    // panic; with it, the read fails and the callback refuses the value.
    context.set_module_options(ModuleOptions::HANDLE_IO_ERRORS);
    declare_atomic_slot_migration(context);
    host::module_context::attach(context);
    data_type::lifecycle::register(watching::KEY_HOOKS);
    tracking::filter::attach(context)?;
    tracking::timers::attach()?;
    if let Err(why) = tracking::config_events::subscribe(context) {
        context.log_warning(&format!(
            "heavykeeper: {why}; a password set by CONFIG SET between counted slots is noticed within a second"
        ));
    }
    tracking::apply_configs();
    if let Err(why) = watching::follow::subscribe(context) {
        // Loading goes on: only the fade events of a renamed, moved or
        // swapped watched sketch would wait for its next arrival.
        context.log_warning(&format!(
            "heavykeeper: {why}; watched sketches are followed through commands and loads only"
        ));
    }
    watching::timer::start(context);
    Ok(())
}

/// Valkey's option bit `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION`.
const VALKEY_HANDLES_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// Valkey 9 refuses `CLUSTER MIGRATESLOTS` while a loaded module has not
/// said it handles it. It moves a slot as an AOF stream of its keys (a
/// sketch is its `HK.LOADSTATE`, the type's AOF rewrite) followed by the
/// slot's replication stream, then drops the keys on the source (the type's
/// unlink): paths the module takes already, and it keeps no aux data. Only
/// Valkey is told: other servers may give that bit another meaning.
fn declare_atomic_slot_migration(context: &Context) {
    if !host::server_info::is_valkey_from(context, 9) {
        return;
    }
    let options =
        ModuleOptions::HANDLE_IO_ERRORS.bits() as c_int | VALKEY_HANDLES_ATOMIC_SLOT_MIGRATION;
    module_load::set_module_options(context, options);
}

/// ACL categories: Redis 7.2+ and Valkey set them per command; Redis 7.4+
/// and Valkey also add the module's own. Redis 7.0 has neither: the module
/// loads all the same, and says once what that means.
fn server_support(context: &Context) -> ServerSupport {
    let acl_categories = module_load::has_acl_categories();
    let module_category =
        module_load::add_acl_category(context, c"heavykeeper").then_some(ACL_CATEGORY);
    if !acl_categories {
        context.log_notice(
            "heavykeeper: this server has no module ACL categories (Redis < 7.2): HK.* commands belong to no category, so +@read, -@write and the like do not cover them; grant or deny them by name (+hk.list, -hk.add). Key permissions (%R~, %W~) apply through the key specs.",
        );
    }
    ServerSupport {
        acl_categories,
        module_category,
    }
}

/// `TOPK.*` also belong to a `topk` category where the server takes module
/// categories, as RedisBloom's do: users of Redis 8 grant `+@topk`.
fn register_topk(context: &Context, support: &ServerSupport) -> Result<(), String> {
    let topk_category = module_load::add_acl_category(context, c"topk");
    let support = ServerSupport {
        acl_categories: support.acl_categories,
        module_category: match (support.module_category, topk_category) {
            (Some(_), true) => Some(TOPK_ACL_CATEGORIES),
            (None, true) => Some("topk"),
            (own, false) => own,
        },
    };
    for spec in commands::topk_compat::SPECS.iter() {
        command_spec::register(context, spec, &support).map_err(|why| {
            format!(
                "topk-compat is on but {why}: the name is probably taken by RedisBloom (Redis 8 bundles it); load one or the other, or set topk-compat no"
            )
        })?;
    }
    Ok(())
}

/// `INFO heavykeeper`: each section on its own, so that a panic in one
/// leaves the others.
fn info(ctx: &InfoContext, for_crash_report: bool) {
    panic_guard::or_fallback("INFO", (), || {
        crate::host::fault::on_info(&tracking::config::channel());
        stats::add_section(ctx);
    });
    panic_guard::or_fallback("INFO", (), || {
        tracking::info::add_section(ctx, for_crash_report)
    });
    panic_guard::or_fallback("INFO", (), || watching::add_info_section(ctx));
}
