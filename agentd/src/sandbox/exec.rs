//! The sandbox helper: `agentd __sandbox [OPTIONS] -- PROGRAM ARGS...`, a fresh,
//! single-threaded process that confines itself and then runs the program, so that nothing in
//! the daemon runs between `fork` and `exec` but plain system calls. In order, as bubblewrap:
//! 1. a new user namespace (mapping only our own ids), mount namespace, PID namespace and,
//!    without the network, network namespace (only a loopback that is down);
//! 2. the file system view of the `mounts` module;
//! 3. a fork: the child is the first process of the PID namespace. It mounts its own `/proc`,
//!    sets `PR_SET_NO_NEW_PRIVS`, applies Landlock (writes only below the writable roots) and
//!    forks the program, then reaps until the program ends. When it ends (or is killed, or
//!    its parent here is), the kernel ends every other process of the namespace: nothing the
//!    command started outlives the call, however it detached;
//! 4. this process waits and ends as the program ended.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use landlock::{
    ABI, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    path_beneath_rules,
};

use super::policy::{DEVICES, Policy, SHM_MOUNT, TMP_MOUNT, rights};

/// The newest Landlock ABI asked for; older kernels get what they know (best effort).
const ABI_WANTED: ABI = ABI::V7;

/// Exit code of the helper when it cannot confine the command (it never runs it then).
pub(crate) const CANNOT_CONFINE: i32 = 126;

/// Runs the helper with its arguments (after `__sandbox`); never returns.
pub fn run(args: &[String]) -> ! {
    // Descriptors the helper inherited without close-on-exec (from whoever started the
    // daemon) must not reach the command.
    close_inherited();
    let (policy, program) = match Policy::from_helper_args(args) {
        Ok(parsed) => parsed,
        Err(err) => fail(&err),
    };
    // The working directory, by name: the one inherited still leads into the mounts as they
    // were, past every read-only mount made below.
    let cwd =
        std::env::current_dir().unwrap_or_else(|e| fail(&format!("the working directory: {e}")));
    if let Err(err) = isolate(&policy) {
        fail(&err);
    }
    if let Err(err) = super::mounts::build(&policy) {
        fail(&err);
    }
    if let Err(err) = std::env::set_current_dir(&cwd) {
        fail(&format!("the working directory {}: {err}", cwd.display()));
    }
    let (status_read, status_write) = pipe().unwrap_or_else(|e| fail(&format!("a pipe: {e}")));
    let (life_read, life_write) = pipe().unwrap_or_else(|e| fail(&format!("a pipe: {e}")));
    // SAFETY: this process has one thread; the child only makes system calls before it execs
    // or exits (it allocates in `init`, which is safe in a single-threaded child).
    match unsafe { libc::fork() } {
        -1 => fail(&format!(
            "a process in a PID namespace: {}",
            std::io::Error::last_os_error()
        )),
        0 => {
            drop(status_read);
            drop(life_write);
            init(&policy, &program, status_write, life_read)
        }
        child => {
            drop(status_write);
            drop(life_read);
            let status = wait_for(child);
            // The first process tells how the program ended; if it was killed, it could not.
            let mut word = [0u8; 4];
            let told = read_exact(&status_read, &mut word);
            let status = if told {
                i32::from_ne_bytes(word)
            } else {
                status
            };
            drop(life_write);
            end_as(status)
        }
    }
}

fn fail(err: &str) -> ! {
    // Never run a command unconfined that was meant to be confined.
    eprintln!("agentd sandbox: cannot confine the command: {err}");
    std::process::exit(CANNOT_CONFINE);
}

/// The first process of the PID namespace: confines itself, runs the program and reaps.
fn init(policy: &Policy, program: &[String], status: OwnedFd, life: OwnedFd) -> ! {
    // SAFETY: prctl with these arguments only sets a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    // The parent may have died before the line above: then its end of `life` is closed.
    if closed(&life) {
        std::process::exit(CANNOT_CONFINE);
    }
    // Without a /proc of its own the sandbox would see the host's processes (Landlock still
    // keeps it from reading them); where the kernel refuses, the command runs all the same.
    let own_proc = super::mounts::own_proc().is_ok();
    // The kernel's own bound on the call's processes and threads, whoever runs it: the
    // process limit below is not enforced for root. PIDs below 300 are not reused once the
    // namespace has counted past them, hence the margin.
    if own_proc {
        let _ = std::fs::write(
            "/proc/sys/kernel/pid_max",
            (policy.limits.max_processes.saturating_add(300)).to_string(),
        );
    }
    if let Err(err) = confine(policy) {
        fail(&err);
    }
    // Counted in this call's own user namespace: this process and the helper count too.
    if let Err(err) = policy.limits.apply(2) {
        fail(&err);
    }
    let mut chld = empty_sigset();
    // SAFETY: sigaddset and sigprocmask work on the set we own; blocking SIGCHLD lets the
    // loop below wait for it with a timeout. The program starts with an empty mask again.
    unsafe {
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
    }
    let mut command = std::process::Command::new(&program[0]);
    command.args(&program[1..]);
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(child) => child.id() as libc::pid_t,
        Err(err) => {
            eprintln!("agentd sandbox: cannot run {}: {err}", program[0]);
            report(&status, 127 << 8);
            std::process::exit(127);
        }
    };
    // Reap everything that ends (orphans come here) until the program itself has; between
    // signals, look whether the call has reached its process limit.
    let tick = libc::timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        loop {
            let mut raw = 0;
            // SAFETY: waitpid writes the status into `raw`.
            let pid = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
            if pid == child {
                report(&status, raw);
                std::process::exit(0);
            }
            if pid == 0 {
                break;
            }
            if pid == -1 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                report(&status, 127 << 8);
                std::process::exit(127);
            }
        }
        if own_proc && processes() >= policy.limits.max_processes {
            // SAFETY: from the first process of the namespace, -1 is every other process in it.
            unsafe { libc::kill(-1, libc::SIGKILL) };
            eprintln!("\n{}", policy.limits.process_limit_message());
            report(&status, super::limits::PROCESS_LIMIT_EXIT << 8);
            std::process::exit(0);
        }
        // SAFETY: sigtimedwait reads the set and the timeout we own.
        unsafe { libc::sigtimedwait(&chld, std::ptr::null_mut(), &tick) };
    }
}

fn empty_sigset() -> libc::sigset_t {
    // SAFETY: an all-zero sigset is valid storage, and sigemptyset initialises it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    }
}

/// The processes of the namespace besides its first one, as its own `/proc` lists them.
fn processes() -> u64 {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .as_encoded_bytes()
                        .iter()
                        .all(u8::is_ascii_digit)
                })
                .count() as u64
        })
        .unwrap_or(0)
        .saturating_sub(1)
}

/// Sets no-new-privs and applies Landlock: reading and executing everywhere, writing only below
/// the writable roots, the private `/tmp` and `/dev/shm`, and a few devices.
fn confine(policy: &Policy) -> Result<(), String> {
    // SAFETY: prctl with these arguments only sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_NO_NEW_PRIVS: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut writable: Vec<&std::path::Path> = policy
        .writable
        .iter()
        .map(|p| p.as_path())
        .filter(|p| p.exists())
        .collect();
    if policy.tmp {
        writable.push(std::path::Path::new(TMP_MOUNT));
    }
    if std::path::Path::new(SHM_MOUNT).is_dir() {
        writable.push(std::path::Path::new(SHM_MOUNT));
    }
    let (handled, read) = rights(ABI_WANTED);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        // No signals to processes outside (the daemon), no abstract sockets (ABI 6).
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&writable, handled)))
        .and_then(|r| r.add_rules(path_beneath_rules(DEVICES, handled)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel does not enforce Landlock".into());
    }
    Ok(())
}

/// New user, mount and PID namespaces (mapping only our own ids), with a new network
/// namespace unless the policy allows the network.
fn isolate(policy: &Policy) -> Result<(), String> {
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if !policy.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare only changes this (single-threaded) process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!(
            "user, mount, PID{} namespaces: {}",
            if policy.network { "" } else { " and network" },
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

/// Marks every descriptor above standard error close-on-exec.
pub fn close_inherited() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range only changes flags of this process's descriptors.
    unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) };
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Whether the other end of the pipe `fd` reads from is closed.
fn closed(fd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one struct we pass.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready != 0 && poll.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

fn report(fd: &OwnedFd, status: i32) {
    let word = status.to_ne_bytes();
    // SAFETY: write reads the four bytes of `word`.
    unsafe { libc::write(fd.as_raw_fd(), word.as_ptr().cast(), word.len()) };
}

fn read_exact(fd: &OwnedFd, buf: &mut [u8; 4]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: read writes at most the bytes left in `buf`.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        match n {
            n if n > 0 => got += n as usize,
            -1 if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => return false,
        }
    }
    true
}

fn wait_for(child: libc::pid_t) -> i32 {
    loop {
        let mut raw = 0;
        // SAFETY: waitpid writes the status into `raw`.
        let pid = unsafe { libc::waitpid(child, &mut raw, 0) };
        if pid == child {
            return raw;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 127 << 8;
        }
    }
}

/// Ends this process the way the status says the program ended: with its exit code, or by
/// its signal.
fn end_as(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and raising a signal on ourselves.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        std::process::exit(128 + signal);
    }
    std::process::exit(libc::WEXITSTATUS(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inherited_descriptors_are_closed_at_exec() {
        let (read, _write) = std::io::pipe().unwrap();
        let fd = read.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        close_inherited();
        // SAFETY: fcntl on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }
}
