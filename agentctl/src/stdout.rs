//! Standard output that a closed pipe ends quietly. `agentctl run --json … | head -1` closes the
//! pipe after one line; like any Unix tool, `agentctl` then ends as if by `SIGPIPE` (status
//! 141) instead of panicking on the failed write. The daemon goes on with the run.

use std::io::Write;

/// Writes `text` to standard output and flushes it; a closed pipe ends the program.
pub fn write(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(err) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        closed_if_broken(&err);
    }
}

/// Writes formatted text to standard output; a closed pipe ends the program.
pub fn write_fmt(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(err) = out.write_fmt(args).and_then(|()| out.flush()) {
        closed_if_broken(&err);
    }
}

/// Ends the program the way a closed pipe ends Unix tools, when `err` says the pipe is closed.
pub fn closed_if_broken(err: &std::io::Error) {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        // SAFETY: restoring the default action of SIGPIPE and raising it on ourselves.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        std::process::exit(141);
    }
}

/// When standard output is a pipe, ends the program as soon as its reader goes away, even
/// while nothing is being written (`agentctl sessions --watch | head -1` would otherwise wait
/// for the next change to find out).
pub fn end_when_closed() {
    use std::os::fd::AsRawFd;
    let fd = std::io::stdout().as_raw_fd();
    // SAFETY: an all-zero stat is a valid value to be overwritten; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on standard output.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    std::thread::spawn(move || {
        let mut watch = libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        };
        loop {
            // SAFETY: poll reads and writes the one struct we pass. With no events asked for,
            // it returns only when the pipe's reader is gone (POLLERR) or it hung up.
            let ready = unsafe { libc::poll(&mut watch, 1, -1) };
            if ready > 0 && watch.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                closed_if_broken(&std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            if ready < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return;
            }
        }
    });
}

/// `print!` that a closed pipe ends quietly.
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write_fmt(format_args!($($arg)*)) };
}

/// `println!` that a closed pipe ends quietly.
macro_rules! outln {
    () => { $crate::stdout::write("\n") };
    ($($arg:tt)*) => {{
        $crate::stdout::write_fmt(format_args!($($arg)*));
        $crate::stdout::write("\n");
    }};
}
