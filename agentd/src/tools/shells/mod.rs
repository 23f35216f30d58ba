//! Background shells (docs/architecture.md#background-shells): commands `bash` starts with
//! `"background": true` that keep running after the call, read with `bash_output` and ended
//! with `kill_shell`. Each session has one registry of them ([`registry`]), each shell a ring
//! of its output ([`ring`]) and a task that keeps it until it ends ([`keeper`]).

mod keeper;
pub(crate) mod registry;
pub(crate) mod ring;

pub(crate) use keeper::start;
pub(crate) use registry::ShellNews;
pub use registry::Shells;

/// A shell's number in a call's arguments: a positive integer, or one written as text.
pub(crate) fn id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    use serde::Deserialize;
    /// The forms a number takes.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        /// `1`.
        Number(u32),
        /// `"1"`.
        Text(String),
    }
    match Id::deserialize(deserializer)? {
        Id::Number(n) => Ok(n),
        Id::Text(text) => text.trim().trim_start_matches('#').parse().map_err(|_| {
            serde::de::Error::custom(format!(
                "`{text}` is not a shell id: give its number, as bash gave it"
            ))
        }),
    }
}

#[cfg(test)]
mod tests;
