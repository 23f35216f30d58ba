//! Stands in for another local user's process squatting agentd's socket, for the trust tests:
//! binds a Unix socket at `PATH`, becomes uid `UID` before it listens (so a client sees that
//! user at the other end), accepts one connection and says how many bytes it received.
//!
//! Usage: `squatter PATH UID` (as root). Prints `listening`, then `received N`.

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::time::Duration;

fn fail(what: &str) -> ! {
    eprintln!("squatter: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(uid)) = (args.get(1), args.get(2).and_then(|u| u.parse::<u32>().ok()))
    else {
        eprintln!("usage: squatter PATH UID");
        std::process::exit(2);
    };
    // SAFETY: plain socket calls on a descriptor this process owns, with a zeroed address
    // whose path is copied within its bounds.
    let fd = unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            fail("socket");
        }
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = path.as_bytes();
        if bytes.len() >= addr.sun_path.len() {
            eprintln!("squatter: path too long");
            std::process::exit(2);
        }
        for (slot, byte) in addr.sun_path.iter_mut().zip(bytes) {
            *slot = *byte as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        if libc::bind(fd, (&raw const addr).cast(), len) != 0 {
            fail("bind");
        }
        if libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
            fail("setuid");
        }
        if libc::listen(fd, 8) != 0 {
            fail("listen");
        }
        fd
    };
    println!("listening");
    let _ = std::io::stdout().flush();
    // SAFETY: `fd` is a listening socket this process owns and hands over here.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    let Ok((mut conn, _)) = listener.accept() else {
        fail("accept");
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut received = Vec::new();
    let _ = conn.read_to_end(&mut received);
    println!("received {}", received.len());
}
