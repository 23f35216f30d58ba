//! Whether this machine lets the daemon bound a whole call with a cgroup v2 child of its own
//! cgroup (a delegated subtree with the `pids` and `memory` controllers, as systemd gives a
//! user's services). Where it does not, the call is bounded by resource limits: processes per
//! call (counted in the call's own user namespace) and memory per process, and `daemon status`
//! says which bound the set-up does not allow.

use std::path::PathBuf;

/// What the cgroup set-up allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CgroupSupport {
    /// A delegated cgroup with both controllers, at this directory.
    Delegated(PathBuf),
    /// None, and why.
    Unavailable(String),
}

/// Looks at the daemon's own cgroup v2 directory.
pub(crate) fn detect() -> CgroupSupport {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return CgroupSupport::Unavailable("/proc/self/cgroup cannot be read".into());
    };
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return CgroupSupport::Unavailable("the daemon is in no cgroup v2 hierarchy".into());
    };
    let Some(mount) = cgroup2_mount() else {
        return CgroupSupport::Unavailable("no cgroup v2 file system is mounted".into());
    };
    let dir = mount.join(path.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let words: Vec<&str> = controllers.split_whitespace().collect();
    if !(words.contains(&"pids") && words.contains(&"memory")) {
        return CgroupSupport::Unavailable(format!(
            "the daemon's cgroup {} offers no pids and memory controllers (offered: {})",
            dir.display(),
            if words.is_empty() {
                "none".to_string()
            } else {
                words.join(" ")
            }
        ));
    }
    let writable = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        // SAFETY: access reads the NUL-terminated path.
        .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0);
    if !writable {
        return CgroupSupport::Unavailable(format!(
            "the daemon's cgroup {} is not delegated to it (not writable)",
            dir.display()
        ));
    }
    CgroupSupport::Delegated(dir)
}

fn cgroup2_mount() -> Option<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    table.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// What `daemon status` says of the bounds of a call, naming what the set-up does not allow.
pub(crate) fn describe(limits: &super::limits::Limits) -> String {
    let why = match detect() {
        CgroupSupport::Delegated(dir) => format!(
            "a delegated cgroup v2 ({}) was found, but calls are bounded by resource limits",
            dir.display()
        ),
        CgroupSupport::Unavailable(why) => why,
    };
    format!(
        "limits per call: {} processes and threads, a {} MiB private /tmp; memory: {} MiB per process, not per call ({why})",
        limits.max_processes, limits.tmp_size_mb, limits.max_memory_mb
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_every_bound_and_why_memory_is_per_process() {
        let text = describe(&super::super::limits::Limits {
            max_processes: 3,
            max_memory_mb: 5,
            tmp_size_mb: 7,
        });
        assert!(text.contains("3 processes"), "{text}");
        assert!(text.contains("7 MiB private /tmp"), "{text}");
        assert!(text.contains("5 MiB per process, not per call ("), "{text}");
    }
}
