//! What the agent never sees unless the user lets it (in every mode but `bypass`): agentd's
//! own config and data directories (provider keys in `env`, other sessions' histories) and the
//! credential stores of the home directory. Whatever a command or a tool reads reaches the
//! model and its provider, so these stay out of both: the sandbox covers them, and `read`,
//! `grep`, `glob` and `edit` refuse them.

use std::path::{Path, PathBuf};

use super::config::SandboxConfig;

/// Credential stores hidden by default, relative to the home directory.
pub(crate) const CREDENTIALS: [&str; 12] = [
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".gnupg",
    ".pypirc",
    ".npmrc",
];

/// The hidden paths of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HiddenPaths {
    /// agentd's own directories: seen empty in the sandbox.
    pub(crate) daemon: Vec<PathBuf>,
    /// Credential stores and `[sandbox] hidden`: seen empty and unreadable.
    pub(crate) secrets: Vec<PathBuf>,
    /// Paths inside those that the session may still use: its own directory (a worktree lives
    /// in the data directory) and its plan file.
    pub(crate) exceptions: Vec<PathBuf>,
}

impl HiddenPaths {
    /// The hidden paths for a session whose commands have these home directories.
    /// `[sandbox] hidden` and `visible` entries starting with `~/` are in each home; relative
    /// ones are the session directory's.
    pub(crate) fn new(
        homes: &[PathBuf],
        config: &SandboxConfig,
        daemon: Vec<PathBuf>,
        exceptions: Vec<PathBuf>,
        cwd: &Path,
    ) -> HiddenPaths {
        let place = |entry: &Path| -> Vec<PathBuf> {
            match entry.strip_prefix("~") {
                Ok(rest) => homes.iter().map(|h| h.join(rest)).collect(),
                Err(_) if entry.is_absolute() => vec![entry.to_path_buf()],
                Err(_) => vec![cwd.join(entry)],
            }
        };
        // Every call builds this list: directories shared by its entries are resolved once.
        let mut resolver = Resolver::default();
        let visible: Vec<PathBuf> = config
            .visible
            .iter()
            .flat_map(|v| place(v))
            .flat_map(|p| resolver.forms(p))
            .collect();
        let mut secrets: Vec<PathBuf> = Vec::new();
        let candidates = homes
            .iter()
            .flat_map(|home| CREDENTIALS.iter().map(move |c| home.join(c)))
            .chain(config.hidden.iter().flat_map(|h| place(h)));
        for candidate in candidates {
            let forms = resolver.forms(candidate);
            if !forms.iter().any(|f| visible.contains(f)) {
                secrets.extend(forms);
            }
        }
        secrets.sort();
        secrets.dedup();
        let mut daemon: Vec<PathBuf> = daemon.into_iter().flat_map(|d| resolver.forms(d)).collect();
        daemon.sort();
        daemon.dedup();
        HiddenPaths {
            daemon,
            secrets,
            exceptions: exceptions
                .into_iter()
                .flat_map(|e| resolver.forms(e))
                .collect(),
        }
    }

    /// Why the agent may not look at `path` (absolute), if it may not.
    pub(crate) fn refusal(&self, path: &Path) -> Option<String> {
        let forms = both_forms(path.to_path_buf());
        let (hidden, secret) = forms.iter().find_map(|f| self.covering(f))?;
        Some(if secret {
            format!(
                "{} is hidden from the agent: {} holds credentials. If the task really needs it, the user can let it through with [sandbox] visible = [\"{}\"] in config.toml",
                path.display(),
                hidden.display(),
                hidden.display()
            )
        } else {
            format!(
                "{} is hidden from the agent: it is inside agentd's own directory {} (keys, other sessions)",
                path.display(),
                hidden.display()
            )
        })
    }

    /// Whether `real` (a path without symlinks) is hidden: a quick test for walks.
    pub(crate) fn hides_real(&self, real: &Path) -> bool {
        self.covering(real).is_some()
    }

    /// The hidden path that covers `path`, and whether it is a secret; none where an exception
    /// inside it (the session's own worktree in the data directory) holds the path.
    fn covering(&self, path: &Path) -> Option<(&Path, bool)> {
        let secrets = self.secrets.iter().map(|s| (s, true));
        let daemon = self.daemon.iter().map(|d| (d, false));
        secrets
            .chain(daemon)
            .find(|(hidden, _)| {
                path.starts_with(hidden)
                    && !self
                        .exceptions
                        .iter()
                        .any(|e| e.starts_with(hidden) && path.starts_with(e))
            })
            .map(|(hidden, secret)| (hidden.as_path(), secret))
    }

    /// Whether the agent may read `file`, as it was opened: its real path, read back from the
    /// descriptor, is checked, so that a link swapped in after a path was checked reaches
    /// nothing hidden.
    pub(crate) fn check_opened(&self, file: &std::fs::File, shown: &str) -> Result<(), String> {
        use std::os::fd::AsRawFd;
        if self.is_empty() {
            return Ok(());
        }
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| format!("cannot tell where {shown} leads: {e}"))?;
        match self.covering(&real) {
            None => Ok(()),
            Some(_) => Err(self
                .refusal(&real)
                .unwrap_or_else(|| format!("{} is hidden from the agent", real.display()))),
        }
    }

    /// Whether nothing is hidden (`bypass` mode).
    pub(crate) fn is_empty(&self) -> bool {
        self.daemon.is_empty() && self.secrets.is_empty()
    }

    /// The note a failed command's result gets when it names a hidden path.
    pub(crate) fn note(&self, command: &str, output: &str) -> Option<String> {
        let named = |p: &Path| {
            let text = p.to_string_lossy();
            command.contains(text.as_ref()) || output.contains(text.as_ref())
        };
        let tilde = |p: &Path| {
            p.file_name().is_some_and(|name| {
                let short = format!("~/{}", name.to_string_lossy());
                command.contains(&short) || output.contains(&short)
            })
        };
        let secret = self.secrets.iter().find(|s| named(s) || tilde(s));
        let what = match secret {
            Some(secret) => format!(
                "{} holds credentials and is hidden from commands (the user can let it through with [sandbox] visible)",
                secret.display()
            ),
            None => {
                let dir = self.daemon.iter().find(|d| named(d))?;
                format!("{} is agentd's own and hidden from commands", dir.display())
            }
        };
        Some(format!("[sandbox: {what}]"))
    }
}

/// A path as given and with its symlinks resolved (the longest part that exists).
fn both_forms(path: PathBuf) -> Vec<PathBuf> {
    let real = real(&path);
    if real == path {
        vec![path]
    } else {
        vec![path, real]
    }
}

/// Resolves paths as the kernel would, remembering the directories it resolved: a directory
/// is looked at once however many entries lie in it.
#[derive(Default)]
struct Resolver {
    memo: std::collections::HashMap<PathBuf, PathBuf>,
}

impl Resolver {
    /// The path as given, and resolved when that differs.
    fn forms(&mut self, path: PathBuf) -> Vec<PathBuf> {
        let real = self.real(&path);
        if real == path {
            vec![path]
        } else {
            vec![path, real]
        }
    }

    fn real(&mut self, path: &Path) -> PathBuf {
        if let Some(known) = self.memo.get(path) {
            return known.clone();
        }
        let plain = path.components().all(|c| {
            matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        });
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let resolved = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if plain && !link => self.real(parent).join(name),
            _ => real(path),
        };
        self.memo.insert(path.to_path_buf(), resolved.clone());
        resolved
    }
}

fn real(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => real(parent).join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_daemon_directories_are_refused_and_exceptions_kept() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().canonicalize().unwrap();
        std::fs::create_dir_all(h.join(".ssh")).unwrap();
        std::fs::create_dir_all(h.join("data/worktrees/s1")).unwrap();
        std::os::unix::fs::symlink(h.join(".ssh"), h.join("keys")).unwrap();
        let config = SandboxConfig {
            hidden: vec!["~/private".into()],
            visible: vec!["~/.npmrc".into()],
            ..SandboxConfig::default()
        };
        let hidden = HiddenPaths::new(
            std::slice::from_ref(&h),
            &config,
            vec![h.join("data")],
            vec![h.join("data/worktrees/s1")],
            &h.join("project"),
        );
        let refused = |p: &str| hidden.refusal(&h.join(p)).is_some();
        assert!(refused(".ssh/id_ed25519"));
        assert!(refused("keys/id_ed25519"), "through a link");
        assert!(refused(".aws/credentials"));
        assert!(refused("private/x"));
        assert!(refused("data/sessions/x/log"));
        assert!(!refused(".npmrc"), "let through on purpose");
        assert!(!refused("data/worktrees/s1/src/main.rs"));
        assert!(!refused("project/src/main.rs"));
        assert!(!refused(".sshx"));
        // The session directory holding the daemon's home lets nothing of it through.
        let inside = HiddenPaths::new(&[], &config, vec![h.join("data")], vec![h.clone()], &h);
        assert!(inside.refusal(&h.join("data/env")).is_some());
        // A file opened through a link is judged by where it leads.
        std::fs::write(h.join(".ssh/id_ed25519"), "key").unwrap();
        let opened = std::fs::File::open(h.join("keys/id_ed25519")).unwrap();
        assert!(hidden.check_opened(&opened, "keys/id_ed25519").is_err());
        let note = hidden.note("cat ~/.ssh/id_ed25519", "Permission denied");
        assert!(note.is_some_and(|n| n.contains(".ssh")));
    }
}
