//! The sandbox helper: `agentd __sandbox [--network] [--write PATH]... -- PROGRAM ARGS...`.
//! A fresh, single-threaded process confines itself and then becomes the program, so that
//! nothing in the daemon runs between `fork` and `exec` but plain system calls. The
//! confinement is inherited by every child and survives `exec`:
//! - `PR_SET_NO_NEW_PRIVS`: no set-uid program gains rights;
//! - without the network, a new user and network namespace (only a loopback that is down): a
//!   socket can be made, but nothing is reachable, `AF_UNIX` paths included only as files;
//! - Landlock: reading and executing everywhere, writing only below the writable paths (and
//!   a few devices). The kernel checks the resolved path, so symlinks and `..` do not widen it.

use std::os::unix::process::CommandExt;

use landlock::{
    ABI, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};

use super::policy::{DEVICES, Policy, rights};

/// The newest Landlock ABI asked for; older kernels get what they know (best effort).
const ABI_WANTED: ABI = ABI::V7;

/// Runs the helper with its arguments (after `__sandbox`); never returns.
pub fn run(args: &[String]) -> ! {
    let (policy, program) = match Policy::from_helper_args(args) {
        Ok(parsed) => parsed,
        Err(err) => {
            eprintln!("agentd sandbox: {err}");
            std::process::exit(126);
        }
    };
    if let Err(err) = enter(&policy) {
        // Never run a command unconfined that was meant to be confined.
        eprintln!("agentd sandbox: cannot confine the command: {err}");
        std::process::exit(126);
    }
    let err = std::process::Command::new(&program[0])
        .args(&program[1..])
        .exec();
    eprintln!("agentd sandbox: cannot run {}: {err}", program[0]);
    std::process::exit(127);
}

/// Confines this process by `policy`.
pub fn enter(policy: &Policy) -> Result<(), String> {
    // SAFETY: prctl with these arguments only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_NO_NEW_PRIVS: {}",
            std::io::Error::last_os_error()
        ));
    }
    // Always a user namespace of its own, so that the daemon can tell a sandboxed peer (which
    // must not drive it); without the network, a network namespace too.
    isolate(!policy.network)?;
    let (handled, read) = rights(ABI_WANTED);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        // No signals to processes outside (the daemon), no abstract sockets (ABI 6).
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&policy.writable, handled)))
        .and_then(|r| r.add_rules(path_beneath_rules(DEVICES, handled)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel does not enforce Landlock".into());
    }
    Ok(())
}

/// A new user namespace (mapping only our own ids), with a new network namespace when
/// `no_network`.
fn isolate(no_network: bool) -> Result<(), String> {
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let flags = if no_network {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNET
    } else {
        libc::CLONE_NEWUSER
    };
    // SAFETY: unshare only changes this (single-threaded) process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!(
            "a user and network namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    let write =
        |file: &str, text: String| std::fs::write(file, text).map_err(|e| format!("{file}: {e}"));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}
