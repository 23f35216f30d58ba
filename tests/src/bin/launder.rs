//! Opens a connection to agentd's socket from a short-lived process, as a command escaping a
//! sandbox would: a child process connects on a socket its parent created and exits at once,
//! so the peer the daemon sees is gone by the time it looks. The parent then says `Hello` on
//! the connection it kept and prints what the daemon answered.
//!
//! Usage: `launder SOCKET`. Prints `sent` once the child is gone and `Hello` is written, then
//! `welcome` or `refused: MESSAGE` (or `cannot connect: ERROR`).

use std::io::{Read, Write};
use std::os::fd::FromRawFd;

use agentctl::client::frames as frame;
use protocol::{ClientFrame, Hello, PROTOCOL_VERSION, ServerFrame};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: launder SOCKET");
        std::process::exit(2);
    };
    // SAFETY: plain socket calls on descriptors this process owns, with a zeroed address whose
    // path is copied within its bounds; the child only connects and exits.
    let fd = unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, src) in addr.sun_path.iter_mut().zip(path.bytes().take(107)) {
            *dst = src as libc::c_char;
        }
        match libc::fork() {
            0 => {
                let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                let done = libc::connect(fd, (&raw const addr).cast(), len);
                libc::_exit(if done == 0 {
                    0
                } else {
                    *libc::__errno_location()
                });
            }
            child => {
                let mut status = 0;
                libc::waitpid(child, &mut status, 0);
                let code = libc::WEXITSTATUS(status);
                if code != 0 {
                    println!(
                        "cannot connect: {}",
                        std::io::Error::from_raw_os_error(code)
                    );
                    return;
                }
            }
        }
        fd
    };
    // SAFETY: the descriptor is connected and ours alone now.
    let mut stream = unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) };
    let hello = ClientFrame::Hello(Hello {
        protocol_version: PROTOCOL_VERSION,
        client: "launder".into(),
    });
    let bytes = frame::encode(&hello).expect("a Hello encodes");
    if let Err(err) = stream.write_all(&bytes) {
        println!("cannot connect: {err}");
        return;
    }
    println!("sent");
    let _ = std::io::stdout().flush();
    let mut prefix = [0u8; 4];
    if stream.read_exact(&mut prefix).is_err() {
        println!("refused: the connection was closed");
        return;
    }
    let mut payload = vec![0u8; u32::from_be_bytes(prefix).min(1 << 20) as usize];
    if stream.read_exact(&mut payload).is_err() {
        println!("refused: the connection was closed");
        return;
    }
    match frame::decode::<ServerFrame>(&payload) {
        Ok(ServerFrame::Welcome(_)) => println!("welcome"),
        Ok(ServerFrame::Error(info)) => println!("refused: {}", info.message),
        other => println!("refused: unexpected answer {other:?}"),
    }
}
