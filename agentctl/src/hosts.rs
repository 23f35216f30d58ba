//! Named hosts: the client's own config, `<config>/client.toml`, where a machine reached over
//! ssh gets a short name and what reaching it takes (docs/architecture.md#another-machine-over-ssh):
//!
//! ```toml
//! [hosts.build]
//! ssh = "me@build.internal:2222"          # [user@]HOST[:PORT], as --host takes it
//! agentctl = "~/.cargo/bin/agentctl"      # the agentctl there (default: `agentctl`)
//! ssh_options = ["-J", "jump.example"]    # given to ssh before the destination
//! forward_keys = false                    # send this shell's provider keys (default: no)
//! ```
//!
//! The file can make ssh run programs (`-o ProxyCommand=…`), so it must be this user's and
//! writable by nobody else, as the daemon's own config is; a file that fails that, or holds a
//! key this version does not know, is refused rather than half read.

use std::collections::BTreeMap;
use std::path::Path;

use agentctl::client::paths::Paths;
use serde::Deserialize;

use crate::Failure;
use crate::host::Host;

/// The client's config file's name, in the config directory.
pub const FILE: &str = "client.toml";

/// ssh's keep-alive, given after the host's own options (the first value ssh reads wins, so
/// theirs do): a link whose far end stops answering is found dead within 45 s, and a command
/// waiting on it ends or reconnects instead of waiting forever.
const KEEP_ALIVE: [&str; 4] = [
    "-o",
    "ServerAliveInterval=15",
    "-o",
    "ServerAliveCountMax=3",
];

/// The `agentctl` a remote shell runs when the host's entry names none.
const DEFAULT_AGENTCTL: &str = "agentctl";

/// A machine whose daemon this client reaches over ssh, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// What the views call it: the name in `client.toml`, or the `--host` value as given.
    pub label: String,
    /// The ssh destination.
    pub host: Host,
    /// The `agentctl` program the remote shell runs (a name on its PATH, or a path).
    pub agentctl: String,
    /// Options given to ssh before the destination.
    pub ssh_options: Vec<String>,
    /// Whether this shell's provider keys go to the remote runs.
    pub forward_keys: bool,
}

impl Remote {
    /// A host named by its address alone: ssh's defaults, the remote `agentctl` on its PATH.
    pub fn plain(host: Host) -> Remote {
        Remote {
            label: host.to_string(),
            host,
            agentctl: DEFAULT_AGENTCTL.to_string(),
            ssh_options: Vec::new(),
            forward_keys: false,
        }
    }

    /// The whole argument list of the ssh command that runs the bridge there: the host's own
    /// options, ssh's keep-alive, then the destination and the remote command.
    pub fn ssh_args(&self) -> Vec<String> {
        let mut args = self.ssh_options.clone();
        args.extend(KEEP_ALIVE.map(String::from));
        args.extend(self.host.ssh_args(&self.agentctl));
        args
    }
}

/// One `[hosts.NAME]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    /// `[user@]HOST[:PORT]`.
    ssh: String,
    /// The remote `agentctl`.
    agentctl: Option<String>,
    /// Options for ssh.
    #[serde(default)]
    ssh_options: Vec<String>,
    /// Whether provider keys go along.
    #[serde(default)]
    forward_keys: bool,
}

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// The named hosts.
    #[serde(default)]
    hosts: BTreeMap<String, HostEntry>,
}

/// The client's config: its named hosts.
#[derive(Debug, Default, Clone)]
pub struct ClientConfig {
    /// The named hosts, by name.
    hosts: BTreeMap<String, Remote>,
}

impl ClientConfig {
    /// The host `value` names: a name from `client.toml`, else `[user@]HOST[:PORT]`.
    pub fn resolve(&self, value: &str) -> Result<Remote, Failure> {
        if let Some(remote) = self.hosts.get(value) {
            return Ok(remote.clone());
        }
        // A bare name a letter or two from a named host is most likely that host mistyped:
        // ssh would get it with none of the host's options.
        if let Some(near) = self.hosts.keys().find(|name| close(value, name)) {
            eprintln!(
                "agentctl: `{value}` is not a host of client.toml (did you mean `{near}`?); \
                 passing it to ssh as it is"
            );
        }
        let host: Host = value.parse().map_err(|err| {
            let names = self.hosts.keys().cloned().collect::<Vec<_>>();
            let known = match names.is_empty() {
                true => String::new(),
                false => format!(" (named hosts: {})", names.join(", ")),
            };
            Failure::usage(format!("{err}{known}"))
        })?;
        Ok(Remote::plain(host))
    }

    /// Every named host, in name order.
    pub fn named(&self) -> Vec<Remote> {
        self.hosts.values().cloned().collect()
    }
}

/// Whether `typed` is one or two edits (a letter added, removed, changed or two swapped) from
/// `name`, and not itself an address (`@`, `.` or `:` in it).
fn close(typed: &str, name: &str) -> bool {
    if typed.contains(['@', '.', ':']) || typed == name {
        return false;
    }
    let (a, b): (Vec<char>, Vec<char>) = (typed.chars().collect(), name.chars().collect());
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 {
        return false;
    }
    // Optimal string alignment distance, row by row.
    let mut before: Vec<usize> = Vec::new();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut next = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            next[j] = (row[j] + 1).min(next[j - 1] + 1).min(row[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                next[j] = next[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut row, next);
    }
    row[b.len()] <= 2
}

/// Reads `<config>/client.toml`; no file is an empty config.
pub fn load(paths: &Paths) -> Result<ClientConfig, Failure> {
    let path = paths.config_dir.join(FILE);
    let text = match read_trusted(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(ClientConfig::default()),
        Err(problem) => return Err(Failure::new(format!("{}: {problem}", path.display()))),
    };
    parse(&text).map_err(|problem| Failure::new(format!("{}: {problem}", path.display())))
}

/// The config `text` holds, or what is wrong with it.
fn parse(text: &str) -> Result<ClientConfig, String> {
    let file: File = toml::from_str(text).map_err(|err| {
        format!(
            "{}; fix the file (its keys: [hosts.NAME] ssh, agentctl, ssh_options, forward_keys)",
            err.message().trim_end()
        )
    })?;
    let mut hosts = BTreeMap::new();
    for (name, entry) in file.hosts {
        let remote = entry_to_remote(&name, entry).map_err(|p| format!("[hosts.{name}]: {p}"))?;
        hosts.insert(name, remote);
    }
    Ok(ClientConfig { hosts })
}

/// One entry checked: a name the views can show, an ssh destination, a remote program the
/// remote shell reads as one word.
fn entry_to_remote(name: &str, entry: HostEntry) -> Result<Remote, String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err("a host's name takes letters, digits, `.`, `-` and `_` (at most 64)".into());
    }
    let host: Host = entry.ssh.parse().map_err(|err| format!("ssh: {err}"))?;
    let agentctl = entry
        .agentctl
        .unwrap_or_else(|| DEFAULT_AGENTCTL.to_string());
    // The remote shell splits and expands the command ssh sends: only a plain path (with `~`
    // for the remote home) is one word there.
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+~".contains(c);
    if agentctl.is_empty() || agentctl.starts_with('-') || !agentctl.chars().all(plain) {
        return Err(format!(
            "agentctl: `{agentctl}` is not a plain path (letters, digits and `/._-+~`); give the path of agentctl on that machine"
        ));
    }
    if let Some(bad) = entry.ssh_options.iter().find(|o| o.contains('\0')) {
        return Err(format!("ssh_options: {bad:?} holds a NUL byte"));
    }
    Ok(Remote {
        label: name.to_string(),
        host,
        agentctl,
        ssh_options: entry.ssh_options,
        forward_keys: entry.forward_keys,
    })
}

/// The file's text, when it exists and only this user can change it; `Ok(None)` when it does
/// not exist.
fn read_trusted(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("cannot read it ({err}); it must be a regular file")),
    };
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot read it ({err})"))?;
    let me = agentctl::client::trust::current_uid();
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.uid() != me {
        return Err(format!(
            "it is owned by uid {}, not by you (uid {me}): it can make ssh run programs, so only yours is read",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others can write it (mode {:o}); run `chmod go-w {}`",
            meta.mode() & 0o777,
            path.display()
        ));
    }
    if meta.len() > 1 << 20 {
        return Err("it is larger than 1 MiB".into());
    }
    let mut text = String::new();
    file.take(1 << 20)
        .read_to_string(&mut text)
        .map_err(|err| format!("cannot read it as text ({err})"))?;
    Ok(Some(text))
}

/// The daemons a command talks to (`None` for this machine's): this machine's alone without
/// `--host`; each `--host` value (a name of `client.toml`, or an address) in order; with
/// `all_hosts`, this machine's and every named host.
pub fn targets(
    paths: &Paths,
    values: &[String],
    all_hosts: bool,
) -> Result<Vec<Option<Remote>>, Failure> {
    if values.is_empty() && !all_hosts {
        return Ok(vec![None]);
    }
    let config = load(paths)?;
    let mut targets = Vec::new();
    if all_hosts {
        let named = config.named();
        if named.is_empty() {
            return Err(Failure::usage(format!(
                "--all-hosts: {} names no host; add one as `[hosts.NAME]` with `ssh = \"[user@]HOST\"`",
                paths.config_dir.join(FILE).display()
            )));
        }
        targets.push(None);
        targets.extend(named.into_iter().map(Some));
    }
    for value in values {
        let remote = config.resolve(value)?;
        if !targets
            .iter()
            .flatten()
            .any(|t: &Remote| t.label == remote.label)
        {
            targets.push(Some(remote));
        }
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_host_carries_its_options() {
        let config = parse(
            r#"
            [hosts.build]
            ssh = "me@build.internal:2222"
            agentctl = "~/.cargo/bin/agentctl"
            ssh_options = ["-J", "jump"]
            forward_keys = true
            "#,
        )
        .unwrap();
        let build = config.resolve("build").unwrap();
        assert_eq!(build.label, "build");
        assert!(build.forward_keys);
        assert_eq!(
            build.ssh_args(),
            [
                "-J",
                "jump",
                "-o",
                "ServerAliveInterval=15",
                "-o",
                "ServerAliveCountMax=3",
                "-T",
                "-p",
                "2222",
                "--",
                "me@build.internal",
                "~/.cargo/bin/agentctl",
                "bridge"
            ]
        );
        let plain = config.resolve("other:22").unwrap();
        assert_eq!(plain.label, "other:22");
        assert_eq!(plain.agentctl, "agentctl");
        assert!(!plain.forward_keys);
    }

    #[test]
    fn typos_and_unsafe_values_are_refused() {
        for (text, says) in [
            (
                "[hosts.a]\nssh = \"h\"\nforward_key = true\n",
                "forward_key",
            ),
            ("[host.a]\nssh = \"h\"\n", "host"),
            ("[hosts.a]\nagentctl = \"x\"\n", "ssh"),
            ("[hosts.a]\nssh = \"-oProxyCommand=x\"\n", "ssh:"),
            (
                "[hosts.a]\nssh = \"h\"\nagentctl = \"agentctl; rm -rf ~\"\n",
                "plain path",
            ),
            (
                "[hosts.a]\nssh = \"h\"\nagentctl = \"$(id)\"\n",
                "plain path",
            ),
            ("[hosts.\"a b\"]\nssh = \"h\"\n", "name"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_name_an_edit_or_two_from_a_named_host_is_seen_as_a_typo() {
        assert!(close("buidl", "build"));
        assert!(close("bild", "build"));
        assert!(close("builds", "build"));
        assert!(!close("gpu", "build"));
        assert!(!close("build", "build"));
        assert!(!close("b.ld", "build"));
        assert!(!close("me@build", "build"));
    }

    #[test]
    fn an_unknown_name_that_is_no_address_lists_the_named_ones() {
        let config = parse("[hosts.build]\nssh = \"b\"\n").unwrap();
        let err = config.resolve("bu ild").unwrap_err();
        assert!(
            err.message.contains("named hosts: build"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_file_others_can_write_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        std::fs::write(&file, "[hosts.a]\nssh = \"h\"\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read_trusted(&file).unwrap_err().contains("chmod go-w"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_trusted(&file).unwrap().is_some());
        assert_eq!(read_trusted(&dir.path().join("none")).unwrap(), None);
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        assert!(read_trusted(&dir.path().join("link")).is_err());
    }
}
