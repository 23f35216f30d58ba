//! How much of the machine one sandboxed call may take: processes, memory, its private `/tmp`,
//! and the free space its session directory's disk must keep. The kernel enforces the first
//! three inside the sandbox (resource limits counted in the call's own user namespace, a
//! size-limited tmpfs); the free space is checked before the call starts.

use std::path::Path;

/// The bounds of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads at once.
    pub(crate) max_processes: u64,
    /// Memory in MiB (of each process: `RLIMIT_DATA`).
    pub(crate) max_memory_mb: u64,
    /// Size of the private `/tmp` and `/dev/shm` in MiB.
    pub(crate) tmp_size_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_processes: 512,
            max_memory_mb: 8192,
            tmp_size_mb: 1024,
        }
    }
}

/// Exit code of a call the sandbox ended because it reached its process limit.
pub(crate) const PROCESS_LIMIT_EXIT: i32 = 125;

impl Limits {
    /// Sets the resource limits in the calling process, for it and everything it starts. The
    /// process count is per user namespace, so a fresh one counts this call alone; `extra`
    /// is the sandbox's own processes that count too.
    pub(crate) fn apply(&self, extra: u64) -> Result<(), String> {
        let set = |resource, value: u64, what: &str| {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: setrlimit reads the struct we pass.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(format!("{what}: {}", std::io::Error::last_os_error()));
            }
            Ok(())
        };
        set(
            libc::RLIMIT_NPROC,
            self.max_processes.saturating_add(extra),
            "the process limit",
        )?;
        set(
            libc::RLIMIT_DATA,
            self.max_memory_mb.saturating_mul(1 << 20),
            "the memory limit",
        )
    }

    /// The note a failed call's result gets when its output shows it met one of the limits.
    pub(crate) fn note(&self, output: &str) -> Option<String> {
        // The sandbox itself said so.
        if output.contains(PROCESS_LIMIT_SIGN) {
            return None;
        }
        const PROCESSES: [&str; 4] = [
            "Resource temporarily unavailable",
            "fork: retry",
            "Cannot fork",
            "can't fork",
        ];
        const MEMORY: [&str; 6] = [
            "MemoryError",
            "Cannot allocate memory",
            "out of memory",
            "Out of memory",
            "memory allocation of",
            "std::bad_alloc",
        ];
        if PROCESSES.iter().any(|s| output.contains(s)) {
            return Some(format!(
                "[sandbox: a call may have at most {} processes and threads at once ([sandbox] max_processes); the command seems to have reached it]",
                self.max_processes
            ));
        }
        if MEMORY.iter().any(|s| output.contains(s)) {
            return Some(format!(
                "[sandbox: a process of a call may use at most {} MiB of memory ([sandbox] max_memory_mb); the command seems to have reached it]",
                self.max_memory_mb
            ));
        }
        if output.contains("No space left on device") || output.contains("File too large") {
            return Some(format!(
                "[sandbox: the private /tmp of a call holds at most {} MiB ([sandbox] tmp_size_mb); if the disk of the session directory is full, free space there]",
                self.tmp_size_mb
            ));
        }
        None
    }

    /// The line the sandbox writes when it ends a call at its process limit.
    pub(crate) fn process_limit_message(&self) -> String {
        format!(
            "{PROCESS_LIMIT_SIGN} of {} processes at once ([sandbox] max_processes), so it was ended with everything it started",
            self.max_processes
        )
    }
}

/// How the sandbox's message about the process limit begins.
pub(crate) const PROCESS_LIMIT_SIGN: &str = "agentd sandbox: the command reached the limit";

/// Refuses a call when the file system of `dir` has less than `min_free_mb` MiB free: a call
/// that fills the disk would stop the daemon writing the session's history.
pub(crate) fn check_free_space(dir: &Path, min_free_mb: u64) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return Err(format!("{} has a NUL byte", dir.display()));
    };
    // SAFETY: an all-zero statvfs is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs reads a NUL-terminated path and writes into the struct we own.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(format!(
            "cannot tell the free space of {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    let free_mb = (st.f_bavail as u128 * st.f_frsize as u128) >> 20;
    if free_mb < u128::from(min_free_mb) {
        return Err(format!(
            "the disk of {} has {free_mb} MiB free, less than the {min_free_mb} MiB a call needs ([sandbox] min_free_mb); free some space first",
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_names_the_limit_that_was_met() {
        let limits = Limits {
            max_processes: 7,
            max_memory_mb: 9,
            tmp_size_mb: 11,
        };
        let note = |out: &str| limits.note(out).unwrap_or_default();
        assert!(
            note("bash: fork: retry: Resource temporarily unavailable").contains("7 processes")
        );
        assert!(note("MemoryError").contains("9 MiB"));
        assert!(note("fallocate: fallocate failed: No space left on device").contains("11 MiB"));
        assert_eq!(limits.note("all fine"), None);
    }

    #[test]
    fn free_space_below_the_minimum_refuses() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_free_space(dir.path(), 0).is_ok());
        let err = check_free_space(dir.path(), u64::MAX >> 21).unwrap_err();
        assert!(err.contains("min_free_mb"), "{err}");
    }
}
