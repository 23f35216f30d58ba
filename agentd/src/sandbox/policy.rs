//! What a sandboxed command may do (SPEC §12): read and execute everywhere, write only below
//! the session directory, the temporary directory and `[sandbox] writable`, and reach the
//! network only when `[sandbox] network = true`.

use std::path::PathBuf;

use landlock::{ABI, Access, AccessFs, BitFlags};

/// The rights of one sandboxed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Directories (and files) below which writes are allowed.
    pub writable: Vec<PathBuf>,
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

/// The access rights handled under `abi` (all of them are refused unless a rule grants them),
/// and the ones granted everywhere: reading and executing.
pub fn rights(abi: ABI) -> (BitFlags<AccessFs>, BitFlags<AccessFs>) {
    (AccessFs::from_all(abi), AccessFs::from_read(abi))
}

impl Policy {
    /// The command line of the sandbox helper for this policy, before `--` and the program.
    pub fn helper_args(&self) -> Vec<String> {
        let mut args = vec!["__sandbox".to_string()];
        if self.network {
            args.push("--network".into());
        }
        for path in &self.writable {
            args.push("--write".into());
            args.push(path.display().to_string());
        }
        args.push("--".into());
        args
    }

    /// Reads the helper's command line back: the policy and the program with its arguments.
    pub fn from_helper_args(args: &[String]) -> Result<(Policy, Vec<String>), String> {
        let mut policy = Policy {
            writable: Vec::new(),
            network: false,
        };
        let mut rest = args.iter();
        loop {
            match rest.next().map(String::as_str) {
                Some("--network") => policy.network = true,
                Some("--write") => match rest.next() {
                    Some(path) => policy.writable.push(PathBuf::from(path)),
                    None => return Err("--write needs a path".into()),
                },
                Some("--") => break,
                Some(other) => return Err(format!("unknown sandbox option `{other}`")),
                None => return Err("no program to run".into()),
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
            writable: vec!["/w".into(), "/tmp".into()],
            network: true,
        };
        let mut args = policy.helper_args();
        args.extend(["bash".to_string(), "-c".into(), "true".into()]);
        let (back, program) = Policy::from_helper_args(&args[1..]).unwrap();
        assert_eq!(back, policy);
        assert_eq!(program, ["bash", "-c", "true"]);
    }
}
