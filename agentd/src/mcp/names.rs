//! The names MCP tools have for the model: `mcp__<server>__<tool>`, made of what every provider
//! accepts (`[A-Za-z0-9_-]`, at most 64 characters) and unique within a run's tools.

use std::collections::HashSet;

/// The prefix of every MCP tool's name.
pub(crate) const PREFIX: &str = "mcp__";
/// The longest tool name providers accept.
pub(crate) const MAX_NAME: usize = 64;
/// The longest server name, so that its tools keep room for their own names.
pub(crate) const MAX_SERVER_NAME: usize = 30;

/// Checks a server's name from the config.
pub(crate) fn check_server_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > MAX_SERVER_NAME
        || name.contains("__")
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "a server's name must be 1 to {MAX_SERVER_NAME} letters, digits, `_` or `-`, without `__`"
        ));
    }
    Ok(())
}

/// The model's name for `tool` of `server`, not in `taken`, which it is added to.
pub(crate) fn exposed(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base: String = format!("{PREFIX}{server}__{clean}")
        .chars()
        .take(MAX_NAME)
        .collect();
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        let keep = MAX_NAME.saturating_sub(suffix.len()).min(base.len());
        name = format!("{}{suffix}", base.get(..keep).unwrap_or(&base));
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// The server and tool an exposed name stands for, as far as the name shows them: the server
/// exactly (its name has no `__`), the tool as sanitised.
pub(crate) fn split(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(PREFIX)?.split_once("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_clean_short_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(exposed("git", "log", &mut taken), "mcp__git__log");
        assert_eq!(exposed("git", "log", &mut taken), "mcp__git__log_2");
        assert_eq!(exposed("git", "a.b c", &mut taken), "mcp__git__a_b_c");
        assert_eq!(exposed("git", "a b c", &mut taken), "mcp__git__a_b_c_2");
        let long = exposed("git", &"x".repeat(100), &mut taken);
        assert_eq!(long.len(), MAX_NAME);
        let again = exposed("git", &"x".repeat(100), &mut taken);
        assert_eq!(again.len(), MAX_NAME);
        assert!(again.ends_with("_2"));
        let odd = exposed("git", "ünï/cödé", &mut taken);
        assert!(
            odd.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert_eq!(split("mcp__git__log_2"), Some(("git", "log_2")));
        assert_eq!(split("mcp__my-srv__a__b"), Some(("my-srv", "a__b")));
        assert_eq!(split("read"), None);
    }

    #[test]
    fn server_names_are_checked() {
        assert!(check_server_name("github").is_ok());
        assert!(check_server_name("my_srv-2").is_ok());
        assert!(check_server_name("a__b").is_err());
        assert!(check_server_name("a b").is_err());
        assert!(check_server_name("").is_err());
        assert!(check_server_name(&"a".repeat(31)).is_err());
    }
}
