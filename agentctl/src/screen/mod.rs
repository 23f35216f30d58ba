//! How the terminal views draw: finished lines go to the terminal's history once, in order;
//! the unfinished line, what is under way and (in chat) the status and input lines live in a
//! bottom region redrawn whole at each change and on resize. `chat`, `attach` and `run` on a
//! terminal all draw through one [`Live`].

mod live;
mod region;
pub mod wrap;

pub use live::{Live, SharedLive};

/// Whether the terminal went away: it hung up, or it cannot be read any more.
pub fn terminal_gone() -> bool {
    let mut watch = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one struct we pass; it does not wait.
    let ready = unsafe { libc::poll(&mut watch, 1, 0) };
    if ready < 0 {
        return std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted;
    }
    watch.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}
