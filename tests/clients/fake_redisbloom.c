/* A stand-in for RedisBloom in tests: a module that owns TOPK.RESERVE, as
 * RedisBloom does (Redis 8 bundles it). Only what it needs of the module
 * API is declared: the server hands the API getter in the context. */
typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef int (*Command)(RedisModuleCtx *, RedisModuleString **, int);

static int (*get_api)(const char *, void *);
static int (*set_module_attribs)(RedisModuleCtx *, const char *, int, int);
static int (*create_command)(RedisModuleCtx *, const char *, Command, const char *, int, int, int);
static int (*reply_with_simple_string)(RedisModuleCtx *, const char *);

static int reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    return reply_with_simple_string(ctx, "OK");
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    get_api = (int (*)(const char *, void *))((void **)ctx)[0];
    get_api("RedisModule_SetModuleAttribs", &set_module_attribs);
    get_api("RedisModule_CreateCommand", &create_command);
    get_api("RedisModule_ReplyWithSimpleString", &reply_with_simple_string);
    set_module_attribs(ctx, "fakebloom", 1, 1);
    return create_command(ctx, "topk.reserve", reserve, "write", 1, 1, 1);
}
