//! Where the daemon runs when it is not on this machine: `--host [user@]HOST[:PORT]` (or
//! `AGENTCTL_HOST`), reached with the user's own `ssh`, which runs `agentctl bridge` there
//! (docs/architecture.md#another-machine-over-ssh).

use std::fmt;
use std::str::FromStr;

/// The environment variable that names a stand-in for `ssh` (same arguments; for tests).
pub const SSH_VAR: &str = "AGENTCTL_SSH";

/// A machine whose daemon this client talks to over ssh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The login name, when given (`user@`); ssh's own choice otherwise.
    pub user: Option<String>,
    /// The host name or address, as ssh (and its config) knows it.
    pub name: String,
    /// The ssh port, when given (`:PORT`); ssh's own choice otherwise.
    pub port: Option<u16>,
}

/// Why a `--host` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a host: {problem}; give [user@]HOST[:PORT], e.g. me@build.internal:2222")]
pub struct BadHost {
    /// The value given.
    pub value: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl FromStr for Host {
    type Err = BadHost;

    fn from_str(value: &str) -> Result<Host, BadHost> {
        let bad = |problem| BadHost {
            value: value.to_string(),
            problem,
        };
        if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("it has a space or a control character"));
        }
        // Nothing a shell or an ssh config's `%` tokens could make more of: the characters of
        // user and host names, IPv6 brackets and zone ids, and the port's colon.
        let allowed = |c: char| c.is_ascii_alphanumeric() || "._-@:[]%".contains(c);
        if !value.chars().all(allowed) {
            return Err(bad(
                "it has a character no user or host name has (letters, digits, `.`, `-` and `_`)",
            ));
        }
        let (user, rest) = match value.rsplit_once('@') {
            Some((user, rest)) => (Some(user), rest),
            None => (None, value),
        };
        if user.is_some_and(|u| u.is_empty() || u.starts_with('-') || u.contains('@')) {
            return Err(bad("the user name is empty, has an `@` or starts with `-`"));
        }
        let (name, port) =
            split_port(rest).ok_or_else(|| bad("the port is not a number from 1 to 65535"))?;
        // A leading `-` would be read by ssh as an option.
        if name.is_empty() || name.starts_with('-') {
            return Err(bad("the host name is empty or starts with `-`"));
        }
        Ok(Host {
            user: user.map(str::to_string),
            name: name.to_string(),
            port,
        })
    }
}

/// The host name and port of `HOST[:PORT]`; `[v6-address]:PORT` and a bare IPv6 address
/// (several colons: no port) are understood. `None` when the port is not one.
fn split_port(rest: &str) -> Option<(&str, Option<u16>)> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p > 0);
    if let Some(bracketed) = rest.strip_prefix('[') {
        let (name, after) = bracketed.split_once(']')?;
        return match after {
            "" => Some((name, None)),
            _ => Some((name, Some(port(after.strip_prefix(':')?)?))),
        };
    }
    match rest.split_once(':') {
        Some((name, p)) if !p.contains(':') => Some((name, Some(port(p)?))),
        _ => Some((rest, None)),
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        match (self.port, self.name.contains(':')) {
            (Some(port), true) => write!(f, "[{}]:{port}", self.name),
            (Some(port), false) => write!(f, "{}:{port}", self.name),
            (None, _) => f.write_str(&self.name),
        }
    }
}

impl Host {
    /// The arguments of the ssh command that runs `agentctl` (the program `remote_agentctl`
    /// names) as a bridge on this host: no terminal (`-T`, the stream carries frames), the
    /// port, the destination, the remote command.
    pub fn ssh_args(&self, remote_agentctl: &str) -> Vec<String> {
        let mut args = vec!["-T".to_string()];
        if let Some(port) = self.port {
            args.extend(["-p".to_string(), port.to_string()]);
        }
        // `--` ends ssh's options: nothing after it is read as one.
        args.push("--".to_string());
        args.push(match &self.user {
            Some(user) => format!("{user}@{}", self.name),
            None => self.name.clone(),
        });
        args.extend([remote_agentctl.to_string(), "bridge".to_string()]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(value: &str) -> Host {
        value.parse().unwrap()
    }

    #[test]
    fn a_bare_name_leaves_user_and_port_to_ssh() {
        assert_eq!(
            host("build"),
            Host {
                user: None,
                name: "build".into(),
                port: None
            }
        );
    }

    #[test]
    fn user_and_port_are_taken_apart() {
        let parsed = host("me@build.internal:2222");
        assert_eq!(parsed.user.as_deref(), Some("me"));
        assert_eq!(parsed.name, "build.internal");
        assert_eq!(parsed.port, Some(2222));
        assert_eq!(parsed.to_string(), "me@build.internal:2222");
    }

    #[test]
    fn ipv6_addresses_take_a_port_only_in_brackets() {
        assert_eq!(host("[::1]:2222").name, "::1");
        assert_eq!(host("[::1]:2222").port, Some(2222));
        assert_eq!(host("[::1]:2222").to_string(), "[::1]:2222");
        assert_eq!(host("fe80::1").port, None);
        assert_eq!(host("me@[::1]").name, "::1");
    }

    #[test]
    fn values_ssh_would_misread_are_refused() {
        for value in [
            "",
            "-oProxyCommand=evil",
            "me@-oProxyCommand=evil",
            "@build",
            "build:",
            "build:0",
            "build:65536",
            "build:ssh",
            "a b",
            "[::1]x",
            "x$(touch${IFS}/tmp/pwned)@h",
            "a;b",
            "h`id`",
            "ssh://h",
            "h\u{200b}",
        ] {
            let err = value.parse::<Host>().unwrap_err();
            assert!(
                err.to_string().contains("[user@]HOST[:PORT]"),
                "{value}: {err}"
            );
        }
    }

    #[test]
    fn ssh_runs_the_bridge_without_a_terminal() {
        assert_eq!(
            host("build").ssh_args("agentctl"),
            ["-T", "--", "build", "agentctl", "bridge"]
        );
        assert_eq!(
            host("me@build:2222").ssh_args("agentctl"),
            ["-T", "-p", "2222", "--", "me@build", "agentctl", "bridge"]
        );
    }
}
