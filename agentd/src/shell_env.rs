//! The environment commands run with (docs/architecture.md#tools): the environment of the
//! `agentctl` that created the session (its PATH, virtualenv, locale, HOME), not the daemon's, and
//! never a secret. A variable whose name holds KEY, SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL or
//! AUTH is left out unless `[shell_env] include` names it; `exclude` leaves out more, `set` fixes
//! values.
//!
//! ```toml
//! [shell_env]
//! include = ["GITHUB_TOKEN"]      # names (globs) let through although they look secret
//! exclude = ["AWS_*"]             # more names (globs) to leave out
//! set = { CI = "1" }              # fixed values
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Words that mark a variable's name as a secret, matched without regard to case.
pub(crate) const SECRET_WORDS: [&str; 7] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];

/// `[shell_env]`: how the client's environment becomes the commands' environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ShellEnv {
    /// Names (globs) kept although they look like secrets.
    pub(crate) include: Vec<String>,
    /// More names (globs) left out.
    pub(crate) exclude: Vec<String>,
    /// Variables set to fixed values.
    pub(crate) set: BTreeMap<String, String>,
}

impl ShellEnv {
    /// Checks that every pattern is a valid glob.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for pattern in self.include.iter().chain(&self.exclude) {
            glob(pattern)?;
        }
        Ok(())
    }

    /// `env` without secrets and excluded names: what a session keeps of its client's
    /// environment, on disk too.
    pub(crate) fn filter(
        &self,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Vec<(String, String)> {
        let include = matcher(&self.include);
        let exclude = matcher(&self.exclude);
        env.into_iter()
            .filter(|(name, _)| {
                include.is_match(name)
                    || !(is_secret(name) || exclude.is_match(name) || name.is_empty())
            })
            .collect()
    }

    /// The environment a command runs with: `stored` filtered again (the configuration may
    /// have changed since it was stored), with the fixed values of `set`.
    pub(crate) fn for_commands(&self, stored: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> =
            self.filter(stored.iter().cloned()).into_iter().collect();
        env.extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        env.into_iter().collect()
    }
}

/// Whether `name` looks like it holds a secret.
pub(crate) fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// This process's environment, the variables that are text.
pub fn current() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

fn glob(pattern: &str) -> Result<globset::Glob, String> {
    globset::GlobBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map_err(|e| format!("[shell_env] pattern `{pattern}` is not a valid glob: {e}"))
}

fn matcher(patterns: &[String]) -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = glob(pattern) {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn secrets_are_left_out_whatever_their_case() {
        let kept = ShellEnv::default().filter(env(&[
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_API_KEY", "k"),
            ("github_token", "t"),
            ("DB_Password", "p"),
            ("MYSQL_PWD_PASSWD", "p"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/c.json"),
            ("NPM_AUTH", "a"),
            ("VIRTUAL_ENV", "/venv"),
        ]));
        assert_eq!(names(&kept), ["PATH", "VIRTUAL_ENV"]);
    }

    #[test]
    fn include_exclude_and_set_adjust_the_filter() {
        let config = ShellEnv {
            include: vec!["SSH_AUTH_SOCK".into()],
            exclude: vec!["internal_*".into()],
            set: [("CI".to_string(), "1".to_string())].into(),
        };
        let stored = config.filter(env(&[
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("INTERNAL_URL", "x"),
            ("HOME", "/home/u"),
        ]));
        assert_eq!(names(&stored), ["SSH_AUTH_SOCK", "HOME"]);
        let run = config.for_commands(&stored);
        assert_eq!(names(&run), ["CI", "HOME", "SSH_AUTH_SOCK"]);
        assert!(
            ShellEnv {
                include: vec!["[".into()],
                ..ShellEnv::default()
            }
            .validate()
            .is_err()
        );
    }
}
