//! The kernel sandbox of `auto` mode (docs/architecture.md#sandbox): commands run in their own
//! user, mount, PID and network namespaces, confined by Landlock, by a helper mode of the daemon's
//! own binary.

pub(crate) mod cgroup;
pub(crate) mod config;
pub mod exec;
pub(crate) mod git_dirs;
pub(crate) mod guard;
pub(crate) mod guarded;
pub(crate) mod hidden;
pub(crate) mod limits;
pub(crate) mod links;
mod mounts;
pub(crate) mod policy;
pub(crate) mod protected;

use std::path::Path;
use std::sync::OnceLock;

pub use guard::{Guard, Sandbox};
pub use policy::Policy;

/// What the sandbox can do on this machine, found once at daemon start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Support {
    /// Commands can be confined; the text says how (Landlock ABI, network isolation).
    Available(String),
    /// They cannot, and why.
    Unavailable(String),
}

static SUPPORT: OnceLock<Support> = OnceLock::new();
static HELPER: OnceLock<std::path::PathBuf> = OnceLock::new();

/// The program that confines commands (the daemon's own binary), once found.
pub(crate) fn helper() -> Option<&'static Path> {
    HELPER.get().map(|p| p.as_path())
}

/// The sandbox support found at start (`Unavailable` before it was looked for).
pub(crate) fn support() -> Support {
    SUPPORT
        .get()
        .cloned()
        .unwrap_or_else(|| Support::Unavailable("not checked yet".into()))
}

/// Whether commands can be confined here.
pub(crate) fn available() -> bool {
    matches!(support(), Support::Available(_))
}

/// Looks for Landlock and user namespaces by confining `true` once with `helper` (the daemon's
/// binary); the answer is kept for [`support`].
pub(crate) fn detect(helper: &Path) -> Support {
    let found = probe(helper);
    let _ = HELPER.set(helper.to_path_buf());
    let _ = SUPPORT.set(found.clone());
    found
}

fn probe(helper: &Path) -> Support {
    let Some(abi) = landlock_abi() else {
        return Support::Unavailable(
            "the kernel has no Landlock (needs Linux 5.13 with Landlock enabled)".into(),
        );
    };
    // Before ABI 3 (Linux 6.2) truncating a file is not a write Landlock can refuse.
    if abi < 3 {
        return Support::Unavailable(format!(
            "the kernel's Landlock (ABI {abi}) cannot refuse truncating files; Linux 6.2 or later is needed"
        ));
    }
    // Every step a real call takes: a private /tmp, a protected, a hidden and a secret
    // directory, a secret file, the limits.
    let Ok(scratch) = tempfile::tempdir() else {
        return Support::Unavailable("cannot make a temporary directory to test it in".into());
    };
    let dir = |name: &str| {
        let path = scratch.path().join(name);
        std::fs::create_dir(&path).map(|()| path)
    };
    let (Ok(work), Ok(hidden), Ok(secret)) = (dir("work"), dir("hidden"), dir("secret")) else {
        return Support::Unavailable("cannot make a temporary directory to test it in".into());
    };
    let protected = work.join(".git");
    let _ = std::fs::create_dir(&protected);
    let secret_file = scratch.path().join("netrc");
    let _ = std::fs::write(&secret_file, "");
    let policy = Policy {
        writable: vec![work.clone()],
        readable: Vec::new(),
        protected: vec![protected],
        hidden: vec![hidden],
        secrets: vec![secret, secret_file],
        tmp: true,
        network: false,
        limits: limits::Limits::default(),
    };
    let mut args = policy.helper_args();
    args.push("true".into());
    match std::process::Command::new(helper)
        .args(&args)
        .current_dir(&work)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => Support::Available(format!(
            "Landlock ABI {abi} (writes confined), user, mount, PID and network namespaces (private /tmp, no network, agentd's files and credentials hidden)"
        )),
        Ok(out) => Support::Unavailable(
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .chars()
                .take(300)
                .collect(),
        ),
        Err(err) => Support::Unavailable(format!("cannot run the sandbox helper: {err}")),
    }
}

/// The Landlock ABI the kernel offers, if any.
fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and the VERSION flag the call only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (abi > 0).then_some(abi)
}

/// Whether a failed sandboxed command's output looks like the sandbox stopped it.
pub(crate) fn blocked(output: &str) -> bool {
    const SIGNS: [&str; 8] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Cannot assign requested address",
    ];
    SIGNS.iter().any(|sign| output.contains(sign))
}

/// The note a failed sandboxed command's result gets when [`blocked`].
pub(crate) const BLOCKED_NOTE: &str = "[sandbox: this command ran in auto mode's sandbox, which blocks writes outside the session directory, /tmp (private to this command, emptied after it) and [sandbox] writable, writes to .git, to PATH directories and to tools' configuration, the network, and hides agentd's own files and credential stores; if it needs them, call bash again with \"sandbox\": false (the user will be asked); to read a web page, use fetch]";

/// What one call may reach: the sandbox its command runs in (a `bash` call in auto mode), and
/// the paths it may not look at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Confinement {
    /// The sandbox of a `bash` call, if it runs in one.
    pub(crate) sandbox: Option<Box<Sandbox>>,
    /// What the call may not read, search or list.
    pub(crate) hidden: std::sync::Arc<hidden::HiddenPaths>,
    /// The file a `write` or `edit` call was allowed to write, resolved when it was checked.
    pub(crate) target: Option<std::path::PathBuf>,
    /// The rules a `fetch` or `web_search` call carries for the hosts it meets after its
    /// permission was decided (redirects; docs/architecture.md#web-access).
    pub(crate) reach: Option<std::sync::Arc<dyn crate::web::Reach>>,
}
