//! What a sandboxed command may do (docs/architecture.md#sandbox): read and execute everywhere,
//! write only below the writable roots (the session directory, `[sandbox] writable`, a worktree's
//! grants) and its private `/tmp`, never into a protected path, never see the daemon's directories
//! or the user's credential stores, reach the network only when `[sandbox] network = true`, and
//! take no more processes, memory and `/tmp` than its limits.

use std::path::PathBuf;

use landlock::{ABI, Access, AccessFs, BitFlags};

use super::limits::Limits;

/// The rights of one sandboxed command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Directories (and files) below which writes are allowed.
    pub writable: Vec<PathBuf>,
    /// Directories that stay readable, never writable, where the sandbox's own steps would
    /// hide them: a language server's project under `/tmp` (covered by the private one) or in
    /// the daemon's data directory (a worktree).
    pub readable: Vec<PathBuf>,
    /// Paths that stay read-only even inside a writable root, because what is written there
    /// runs later outside the sandbox (`.git`, the daemon's files, shell start-up files).
    pub protected: Vec<PathBuf>,
    /// Directories that are seen empty (the daemon's own directories).
    pub hidden: Vec<PathBuf>,
    /// Credential stores: a directory is seen empty and unreadable, a file unreadable.
    pub secrets: Vec<PathBuf>,
    /// Whether the command gets a private, size-limited `/tmp` (and `/dev/shm`).
    pub tmp: bool,
    /// Whether the network is reachable.
    pub network: bool,
    /// The bounds of the call.
    pub limits: Limits,
}

/// Files every command writes to without it counting as a write (`> /dev/null`).
pub(crate) const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

/// Where the private temporary directory appears inside the sandbox.
pub(crate) const TMP_MOUNT: &str = "/tmp";

/// A private shared-memory directory (a fresh tmpfs) for programs that need one.
pub(crate) const SHM_MOUNT: &str = "/dev/shm";

/// The access rights handled under `abi` (all of them are refused unless a rule grants them),
/// and the ones granted everywhere: reading and executing.
pub(crate) fn rights(abi: ABI) -> (BitFlags<AccessFs>, BitFlags<AccessFs>) {
    (AccessFs::from_all(abi), AccessFs::from_read(abi))
}

impl Policy {
    /// The command line of the sandbox helper for this policy, before the program.
    pub fn helper_args(&self) -> Vec<String> {
        let mut args = vec!["__sandbox".to_string()];
        if self.network {
            args.push("--network".into());
        }
        if self.tmp {
            args.push("--tmp".into());
        }
        for (flag, value) in [
            ("--max-processes", self.limits.max_processes),
            ("--max-memory-mb", self.limits.max_memory_mb),
            ("--tmp-size-mb", self.limits.tmp_size_mb),
        ] {
            args.push(flag.into());
            args.push(value.to_string());
        }
        for (flag, paths) in [
            ("--write", &self.writable),
            ("--read", &self.readable),
            ("--protect", &self.protected),
            ("--hide", &self.hidden),
            ("--secret", &self.secrets),
        ] {
            for path in paths {
                args.push(flag.into());
                args.push(path.display().to_string());
            }
        }
        args.push("--".into());
        args
    }

    /// Reads the helper's command line back: the policy and the program with its arguments.
    pub(crate) fn from_helper_args(args: &[String]) -> Result<(Policy, Vec<String>), String> {
        let mut policy = Policy::default();
        let mut rest = args.iter();
        loop {
            let flag = rest.next().map(String::as_str);
            let list = match flag {
                Some("--network") => {
                    policy.network = true;
                    continue;
                }
                Some("--tmp") => {
                    policy.tmp = true;
                    continue;
                }
                Some(limit @ ("--max-processes" | "--max-memory-mb" | "--tmp-size-mb")) => {
                    let value = rest
                        .next()
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|v| *v > 0)
                        .ok_or_else(|| format!("{limit} needs a positive number"))?;
                    *match limit {
                        "--max-processes" => &mut policy.limits.max_processes,
                        "--max-memory-mb" => &mut policy.limits.max_memory_mb,
                        _ => &mut policy.limits.tmp_size_mb,
                    } = value;
                    continue;
                }
                Some("--") => break,
                Some("--write") => &mut policy.writable,
                Some("--read") => &mut policy.readable,
                Some("--protect") => &mut policy.protected,
                Some("--hide") => &mut policy.hidden,
                Some("--secret") => &mut policy.secrets,
                Some(other) => return Err(format!("unknown sandbox option `{other}`")),
                None => return Err("no program to run".into()),
            };
            let Some(path) = rest.next() else {
                return Err(format!("{} needs a path", flag.unwrap_or_default()));
            };
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(format!("{} is not an absolute path", path.display()));
            }
            list.push(path);
        }
        let program: Vec<String> = rest.cloned().collect();
        if program.is_empty() {
            return Err("no program to run".into());
        }
        Ok((policy, program))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_abi_handles_writes_and_grants_reads_only() {
        for abi in [
            ABI::V1,
            ABI::V2,
            ABI::V3,
            ABI::V4,
            ABI::V5,
            ABI::V6,
            ABI::V7,
        ] {
            let (handled, granted) = rights(abi);
            assert!(granted.contains(AccessFs::ReadFile | AccessFs::Execute | AccessFs::ReadDir));
            assert!(!granted.contains(AccessFs::WriteFile));
            assert!(
                handled.contains(AccessFs::WriteFile | AccessFs::MakeReg | AccessFs::RemoveFile)
            );
            // Renames across directories (ABI 2) and truncation (ABI 3) are handled once the
            // kernel knows them.
            assert_eq!(handled.contains(AccessFs::Refer), abi >= ABI::V2);
            assert_eq!(handled.contains(AccessFs::Truncate), abi >= ABI::V3);
        }
        assert!(rights(ABI::Unsupported).0.is_empty());
    }

    #[test]
    fn the_helper_line_round_trips() {
        let policy = Policy {
            writable: vec!["/w".into(), "/x y".into()],
            readable: vec!["/tmp/project".into()],
            protected: vec!["/w/.git".into()],
            hidden: vec!["/run/agentd".into()],
            secrets: vec!["/home/u/.ssh".into(), "/home/u/.netrc".into()],
            tmp: true,
            network: true,
            limits: Limits {
                max_processes: 3,
                max_memory_mb: 5,
                tmp_size_mb: 7,
            },
        };
        let mut args = policy.helper_args();
        args.extend(["bash".to_string(), "-c".into(), "true".into()]);
        let (back, program) = Policy::from_helper_args(&args[1..]).unwrap();
        assert_eq!(back, policy);
        assert_eq!(program, ["bash", "-c", "true"]);
    }

    #[test]
    fn a_relative_or_missing_path_is_refused() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(Policy::from_helper_args(&args(&["--write", "rel", "--", "true"])).is_err());
        assert!(Policy::from_helper_args(&args(&["--protect"])).is_err());
        assert!(Policy::from_helper_args(&args(&["--write", "/a"])).is_err());
        assert!(Policy::from_helper_args(&args(&["--max-processes", "0", "--", "x"])).is_err());
        assert!(Policy::from_helper_args(&args(&["--tmp-size-mb", "x", "--", "x"])).is_err());
    }
}
