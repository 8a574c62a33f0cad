//! Writing `INFO` fields.

use redis_module::{InfoContext, InfoContextBuilderFieldBottomLevelValue as Value};

/// A counter as an INFO field (INFO integers are signed).
pub fn number(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Writes one section of the module's `INFO`, each field's name prefixed
/// with `prefix`; a field the server refuses ends the section unwritten.
pub fn add_section<'a, V: Into<Value>>(
    ctx: &InfoContext,
    section: &str,
    prefix: &str,
    fields: impl IntoIterator<Item = (&'a str, V)>,
) {
    let mut builder = ctx.builder().add_section(section);
    for (name, value) in fields {
        let Ok(more) = builder.field(&format!("{prefix}{name}"), value.into()) else {
            return;
        };
        builder = more;
    }
    let _ = builder.build_section().and_then(|b| b.build_info());
}
