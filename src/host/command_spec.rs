//! What the server knows about each command: flags, arity, key specs, ACL
//! categories and the documentation `COMMAND DOCS` shows. Each command file
//! declares its `CommandSpec` beside its handler; `register` hands it to the
//! server.

use crate::host::argv::ArgV;
use crate::host::panic_guard::contain;
use redis_module::{raw, Context, RedisResult};
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::ptr;

/// The C signature the server calls.
pub type Callback =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// A command as registered: everything but the handler is plain data.
pub struct CommandSpec {
    pub name: &'static str,
    pub callback: Callback,
    /// Server flags (`write deny-oom fast`, `readonly`, ...).
    pub flags: &'static str,
    /// Redis arity: `n` exactly, `-n` at least (the command name counts).
    pub arity: i32,
    pub keys: &'static [KeySpec],
    /// ACL categories besides the module's own (`read fast`, `write slow dangerous`).
    pub acl: &'static str,
    pub summary: &'static str,
    pub complexity: &'static str,
    pub since: &'static str,
    pub args: &'static [Arg],
}

/// Where a command's keys are and what it does with them.
#[derive(Clone, Copy)]
pub struct KeySpec {
    /// `REDISMODULE_CMD_KEY_*` bits.
    pub flags: u32,
    /// Argument index of the first key (the command name is 0).
    pub first: i32,
    /// Last key relative to `first` (0: one key), or negative from the end (-1: the last argument).
    pub last: i32,
}

impl KeySpec {
    /// Reads the value and returns data from it.
    pub const READ: u32 = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
    /// Reads metadata only (parameters, sizes).
    pub const READ_METADATA: u32 = raw::REDISMODULE_CMD_KEY_RO;
    /// Reads and changes the value, returning data from it.
    pub const UPDATE: u32 = raw::REDISMODULE_CMD_KEY_RW
        | raw::REDISMODULE_CMD_KEY_ACCESS
        | raw::REDISMODULE_CMD_KEY_UPDATE;
    /// Changes the value's settings without returning its data.
    pub const CONFIGURE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;
    /// Creates the value (refused if the key exists).
    pub const CREATE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;
    /// Replaces the value without reading it.
    pub const OVERWRITE: u32 = raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE;

    pub const fn one(flags: u32, index: i32) -> Self {
        Self {
            flags,
            first: index,
            last: 0,
        }
    }

    pub const fn to_end(flags: u32, first: i32) -> Self {
        Self {
            flags,
            first,
            last: -1,
        }
    }
}

/// One argument as `COMMAND DOCS` and `redis-cli` hints show it.
#[derive(Clone, Copy)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgKind,
    pub token: Option<&'static str>,
    pub optional: bool,
    pub multiple: bool,
}

#[derive(Clone, Copy)]
pub enum ArgKind {
    /// A key, described by the key spec at this index.
    Key(u32),
    String,
    Integer,
    Double,
    UnixTime,
    PureToken,
    OneOf(&'static [Arg]),
    Block(&'static [Arg]),
}

impl Arg {
    const fn new(name: &'static str, kind: ArgKind) -> Self {
        Self {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
        }
    }
    pub const fn key(name: &'static str, spec: u32) -> Self {
        Self::new(name, ArgKind::Key(spec))
    }
    pub const fn string(name: &'static str) -> Self {
        Self::new(name, ArgKind::String)
    }
    pub const fn integer(name: &'static str) -> Self {
        Self::new(name, ArgKind::Integer)
    }
    pub const fn double(name: &'static str) -> Self {
        Self::new(name, ArgKind::Double)
    }
    pub const fn unix_time(name: &'static str) -> Self {
        Self::new(name, ArgKind::UnixTime)
    }
    /// A keyword on its own (`WITHCOUNT`).
    pub const fn flag(name: &'static str, token: &'static str) -> Self {
        Self::new(name, ArgKind::PureToken).token(token)
    }
    pub const fn one_of(name: &'static str, choices: &'static [Arg]) -> Self {
        Self::new(name, ArgKind::OneOf(choices))
    }
    pub const fn block(name: &'static str, parts: &'static [Arg]) -> Self {
        Self::new(name, ArgKind::Block(parts))
    }
    /// Introduced by a keyword (`COUNT n`).
    pub const fn token(mut self, token: &'static str) -> Self {
        self.token = Some(token);
        self
    }
    pub const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }
    pub const fn multiple(mut self) -> Self {
        self.multiple = true;
        self
    }
}

/// `key item [item ...]`, the arguments of every per-item command.
pub const KEY_AND_ITEMS: &[Arg] = &[Arg::key("key", 0), Arg::string("item").multiple()];

/// `item increment`, repeated: a weighted arrival.
pub const WEIGHTED_ARRIVALS: Arg =
    Arg::block("arrival", &[Arg::string("item"), Arg::integer("increment")]).multiple();

/// A command's handler, as the server's entry point calls it.
pub trait Handler {
    fn run(ctx: &Context, args: ArgV) -> RedisResult;
}

/// The C entry point of every command: arguments decoded, panics contained,
/// the result written as the reply. Generic over the handler, so the C
/// side (and its `unsafe`) is written here once, never where a command is
/// declared.
pub(crate) extern "C" fn entry<H: Handler>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the server's own arguments, valid for the command.
    let args = unsafe { ArgV::new(ctx, argv, argc) };
    let context = args.context();
    let reply = contain(&context, || H::run(&context, args));
    context.reply(reply) as c_int
}

/// The entry point for a handler fn: `callback!(f)` hands `f` the
/// arguments as retained strings, `callback!(argv f)` in place (the
/// per-item commands, where a retained string per item costs). Expands to
/// safe code only: a unit type naming the handler, and [`entry`] for it.
#[macro_export]
macro_rules! callback {
    (argv $handler:path) => {
        $crate::callback!(@entry |ctx, args| $handler(ctx, args))
    };
    ($handler:path) => {
        $crate::callback!(@entry |ctx, args| $handler(ctx, args.strings()))
    };
    (@entry |$ctx:ident, $args:ident| $run:expr) => {{
        struct ThisCommand;
        impl $crate::host::command_spec::Handler for ThisCommand {
            fn run(
                $ctx: &redis_module::Context,
                $args: $crate::host::argv::ArgV,
            ) -> redis_module::RedisResult {
                $run
            }
        }
        $crate::host::command_spec::entry::<ThisCommand> as $crate::host::command_spec::Callback
    }};
}

/// What the server offers beyond creating a command.
pub struct ServerSupport {
    /// `RedisModule_SetCommandACLCategories` (Redis 7.2+, Valkey).
    pub acl_categories: bool,
    /// The module's own category was added (Redis 7.4+, Valkey).
    pub module_category: Option<&'static str>,
}

/// Registers one command with its key specs, docs and ACL categories.
pub fn register(ctx: &Context, spec: &CommandSpec, support: &ServerSupport) -> Result<(), String> {
    let name = CString::new(spec.name).map_err(|e| e.to_string())?;
    let flags = CString::new(spec.flags).map_err(|e| e.to_string())?;
    let create =
        crate::server_api!(RedisModule_CreateCommand).ok_or("no RedisModule_CreateCommand")?;
    // Keys come from the key specs set below, not from first/last/step.
    // SAFETY: the server's context during OnLoad; the strings live through
    // the call (the server copies them); the callback is an entry point.
    if unsafe {
        create(
            ctx.ctx,
            name.as_ptr(),
            Some(spec.callback),
            flags.as_ptr(),
            0,
            0,
            0,
        )
    } == raw::Status::Err as c_int
    {
        return Err(format!("the server refused to create {}", spec.name));
    }
    let get = crate::server_api!(RedisModule_GetCommand).ok_or("no RedisModule_GetCommand")?;
    // SAFETY: as above.
    let command = unsafe { get(ctx.ctx, name.as_ptr()) };
    if command.is_null() {
        return Err(format!("{} vanished after it was created", spec.name));
    }
    set_info(command, spec)?;
    if support.acl_categories {
        set_acl_categories(command, spec, support.module_category)?;
    }
    Ok(())
}

fn set_acl_categories(
    command: *mut raw::RedisModuleCommand,
    spec: &CommandSpec,
    module_category: Option<&str>,
) -> Result<(), String> {
    let Some(set) = crate::server_api!(RedisModule_SetCommandACLCategories) else {
        return Ok(());
    };
    let categories = match module_category {
        Some(own) => format!("{} {own}", spec.acl),
        None => spec.acl.to_string(),
    };
    let categories = CString::new(categories).map_err(|e| e.to_string())?;
    // SAFETY: a command the server just made; the string lives through the call.
    if unsafe { set(command, categories.as_ptr()) } == raw::Status::Err as c_int {
        return Err(format!(
            "the server refused the ACL categories of {}",
            spec.name
        ));
    }
    Ok(())
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

fn set_info(command: *mut raw::RedisModuleCommand, spec: &CommandSpec) -> Result<(), String> {
    let set =
        crate::server_api!(RedisModule_SetCommandInfo).ok_or("no RedisModule_SetCommandInfo")?;
    // The server copies everything it is given: the strings live until the call returns.
    let mut strings = Strings::default();
    let mut key_specs: Vec<_> = spec.keys.iter().map(raw_key_spec).collect();
    // SAFETY: the server reads a spec of all zeroes as the end of the list.
    key_specs.push(unsafe { std::mem::zeroed() });
    let mut args = raw_args(spec.args, &mut strings);
    let info = raw::RedisModuleCommandInfo {
        version: &INFO_VERSION,
        summary: strings.add(spec.summary),
        complexity: strings.add(spec.complexity),
        since: strings.add(spec.since),
        history: ptr::null_mut(),
        tips: ptr::null(),
        arity: spec.arity,
        key_specs: key_specs.as_mut_ptr(),
        args: args.as_mut_ptr(),
    };
    // SAFETY: a command the server just made; `info` and everything it
    // points to live until the call returns.
    if unsafe { set(command, &info) } == raw::Status::Err as c_int {
        return Err(format!(
            "the server refused the command info of {}",
            spec.name
        ));
    }
    Ok(())
}

fn raw_key_spec(spec: &KeySpec) -> raw::RedisModuleCommandKeySpec {
    raw::RedisModuleCommandKeySpec {
        notes: ptr::null(),
        flags: u64::from(spec.flags),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: raw::RedisModuleCommandKeySpec__bindgen_ty_1 {
            index: raw::RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 { pos: spec.first },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
        fk: raw::RedisModuleCommandKeySpec__bindgen_ty_2 {
            range: raw::RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 {
                lastkey: spec.last,
                keystep: 1,
                limit: 0,
            },
        },
    }
}

/// The argument tree as the server reads it, each level ending in a zeroed
/// entry. Sub-levels are kept in `strings` so they outlive the call.
fn raw_args(args: &[Arg], strings: &mut Strings) -> Vec<raw::RedisModuleCommandArg> {
    let mut out: Vec<raw::RedisModuleCommandArg> =
        args.iter().map(|a| raw_arg(a, strings)).collect();
    // SAFETY: an all-zero argument (null name) ends the list.
    out.push(unsafe { std::mem::zeroed() });
    out
}

fn raw_arg(arg: &Arg, strings: &mut Strings) -> raw::RedisModuleCommandArg {
    use ArgKind::*;
    let type_ = match arg.kind {
        Key(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
        String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
        Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
        UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
        PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
        OneOf(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
        Block(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
    };
    let (key_spec_index, children) = match arg.kind {
        Key(spec) => (spec as c_int, None),
        OneOf(c) | Block(c) => (-1, Some(c)),
        _ => (-1, None),
    };
    let subargs = children.map_or(ptr::null_mut(), |c| {
        let level = raw_args(c, strings);
        strings.keep(level)
    });
    let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
    if arg.optional {
        flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
    }
    if arg.multiple {
        flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
    }
    raw::RedisModuleCommandArg {
        name: strings.add(arg.name),
        type_,
        key_spec_index,
        token: arg.token.map_or(ptr::null(), |t| strings.add(t)),
        summary: ptr::null(),
        since: ptr::null(),
        flags: flags as c_int,
        deprecated_since: ptr::null(),
        subargs,
        display_text: ptr::null(),
    }
}

/// C strings and argument levels that must outlive one `SetCommandInfo` call.
#[derive(Default)]
struct Strings {
    texts: Vec<CString>,
    levels: Vec<Vec<raw::RedisModuleCommandArg>>,
}

impl Strings {
    fn add(&mut self, text: &str) -> *const c_char {
        // Every text here is a literal of this crate: none holds a NUL.
        let text = CString::new(text).unwrap_or_default();
        let ptr = text.as_ptr();
        self.texts.push(text);
        ptr
    }

    fn keep(
        &mut self,
        mut level: Vec<raw::RedisModuleCommandArg>,
    ) -> *mut raw::RedisModuleCommandArg {
        let ptr = level.as_mut_ptr();
        self.levels.push(level);
        ptr
    }
}
