//! What a sandboxed command may do (SPEC §12): read and execute everywhere, write only below
//! the writable roots (the session directory, `[sandbox] writable`, a worktree's grants) and
//! its private `/tmp`, never into a protected path, never see the daemon's socket directory,
//! and reach the network only when `[sandbox] network = true`.

use std::path::PathBuf;

use landlock::{ABI, Access, AccessFs, BitFlags};

/// The rights of one sandboxed command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Directories (and files) below which writes are allowed.
    pub writable: Vec<PathBuf>,
    /// Paths that stay read-only even inside a writable root, because what is written there
    /// runs later outside the sandbox (`.git`, the daemon's files, shell start-up files).
    pub protected: Vec<PathBuf>,
    /// Directories that are not visible at all (the daemon's socket directory).
    pub hidden: Vec<PathBuf>,
    /// The session's private temporary directory, mounted at `/tmp`.
    pub tmp: Option<PathBuf>,
    /// Whether the network is reachable.
    pub network: bool,
}

/// Files every command writes to without it counting as a write (`> /dev/null`).
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

/// Where the private temporary directory appears inside the sandbox.
pub const TMP_MOUNT: &str = "/tmp";

/// A private shared-memory directory (a fresh tmpfs) for programs that need one.
pub const SHM_MOUNT: &str = "/dev/shm";

/// The access rights handled under `abi` (all of them are refused unless a rule grants them),
/// and the ones granted everywhere: reading and executing.
pub fn rights(abi: ABI) -> (BitFlags<AccessFs>, BitFlags<AccessFs>) {
    (AccessFs::from_all(abi), AccessFs::from_read(abi))
}

impl Policy {
    /// The command line of the sandbox helper for this policy, before the program.
    pub fn helper_args(&self) -> Vec<String> {
        let mut args = vec!["__sandbox".to_string()];
        if self.network {
            args.push("--network".into());
        }
        if let Some(tmp) = &self.tmp {
            args.push("--tmp".into());
            args.push(tmp.display().to_string());
        }
        for (flag, paths) in [
            ("--write", &self.writable),
            ("--protect", &self.protected),
            ("--hide", &self.hidden),
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
    pub fn from_helper_args(args: &[String]) -> Result<(Policy, Vec<String>), String> {
        let mut policy = Policy::default();
        let mut rest = args.iter();
        loop {
            let flag = rest.next().map(String::as_str);
            let list = match flag {
                Some("--network") => {
                    policy.network = true;
                    continue;
                }
                Some("--") => break,
                Some("--tmp") => None,
                Some("--write") => Some(&mut policy.writable),
                Some("--protect") => Some(&mut policy.protected),
                Some("--hide") => Some(&mut policy.hidden),
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
            match list {
                Some(list) => list.push(path),
                None => policy.tmp = Some(path),
            }
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
            protected: vec!["/w/.git".into()],
            hidden: vec!["/run/agentd".into()],
            tmp: Some("/data/sessions/s/tmp".into()),
            network: true,
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
    }
}
