//! A pseudo-terminal for driving interactive clients: the child gets a real terminal (its own
//! session, the pty as controlling terminal), the test types bytes and waits for text on the
//! screen. Cursor-position queries are answered so that line editors can start.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};

use crate::WAIT;

/// A child process on a pseudo-terminal.
pub struct Pty {
    writer: Mutex<File>,
    screen: Arc<(Mutex<Vec<u8>>, Condvar)>,
    mark: Mutex<usize>,
    child: Mutex<Child>,
    /// Where in the output each resize happened, and the size it made.
    resizes: Mutex<Vec<(usize, u16, u16)>>,
}

impl Pty {
    /// Starts `command` on a new pseudo-terminal of `rows` × `cols`.
    pub fn spawn(mut command: Command, rows: u16, cols: u16) -> Pty {
        let (master, slave) = open_pty(rows, cols);
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup pty"));
        command
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = command.spawn().expect("the child starts on the pty");
        drop(slave);
        let master = File::from(master);
        let mut reader = master.try_clone().expect("dup pty");
        let mut answerer = master.try_clone().expect("dup pty");
        let screen: Arc<(Mutex<Vec<u8>>, Condvar)> = Arc::default();
        let shared = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut answered = 0;
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let (lock, ready) = &*shared;
                let mut screen = lock.lock().unwrap_or_else(|e| e.into_inner());
                screen.extend_from_slice(&buf[..n]);
                let queries = count(&screen, b"\x1b[6n");
                while answered < queries {
                    let _ = answerer.write_all(format!("\x1b[{rows};1R").as_bytes());
                    answered += 1;
                }
                ready.notify_all();
            }
            // End of output: the child and everything holding the terminal are gone.
            shared
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(EOF_MARK);
            shared.1.notify_all();
        });
        Pty {
            writer: Mutex::new(master),
            screen,
            mark: Mutex::new(0),
            child: Mutex::new(child),
            resizes: Mutex::new(Vec::new()),
        }
    }

    /// `agentctl` with `args` against the scripted `server`, in `cwd`, on a new terminal of
    /// `rows` × `cols` that says it is an xterm.
    pub fn agentctl(
        home: &crate::Home,
        server: &crate::model_server::ModelServer,
        cwd: &std::path::Path,
        args: &[&str],
        (rows, cols): (u16, u16),
    ) -> Pty {
        let mut command = home.agentctl_against(server, cwd, args);
        command.env("TERM", "xterm-256color");
        Pty::spawn(command, rows, cols)
    }

    /// Types `text` (use `\r` for Enter, `\x1b` for Esc, `\x04` for Ctrl+D).
    pub fn send(&self, text: &str) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        writer.write_all(text.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Waits until `text` appears on the screen after the previous match, and moves past it.
    pub fn expect(&self, text: &str) {
        let (lock, ready) = &*self.screen;
        let deadline = std::time::Instant::now() + WAIT;
        let mut screen = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let plain = strip_ansi(&screen);
            let mut mark = self.mark.lock().unwrap_or_else(|e| e.into_inner());
            let from = (*mark).min(plain.len());
            if let Some(at) = plain[from..].find(text) {
                *mark = from + at + text.len();
                return;
            }
            drop(mark);
            let now = std::time::Instant::now();
            if now >= deadline {
                panic!(
                    "`{text}` did not appear; the screen after the last match:\n{}",
                    &plain[from..]
                );
            }
            screen = ready.wait_timeout(screen, deadline - now).unwrap().0;
        }
    }

    /// The terminal's contents now, as a terminal of `rows` × `cols` shows what the child
    /// wrote (cursor movements and erasures applied).
    pub fn screen(&self, rows: u16, cols: u16) -> String {
        parse(&self.raw(), rows, cols).screen().contents()
    }

    /// Waits until the screen (as a terminal of `rows` × `cols` shows it) contains `text`;
    /// returns the screen.
    pub fn expect_screen(&self, rows: u16, cols: u16, text: &str) -> String {
        self.wait_screen(rows, cols, |screen| screen.contents().contains(text))
            .unwrap_or_else(|screen| panic!("`{text}` is not on the screen:\n{screen}"))
    }

    /// Waits until `ready` holds for the screen of `rows` × `cols`; returns its contents, or
    /// `Err` with them when it did not come in time.
    pub fn wait_screen(
        &self,
        rows: u16,
        cols: u16,
        ready: impl Fn(&vt100::Screen) -> bool,
    ) -> Result<String, String> {
        let (lock, signal) = &*self.screen;
        let deadline = std::time::Instant::now() + WAIT;
        let mut raw = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let parser = parse(&raw, rows, cols);
            if ready(parser.screen()) {
                return Ok(parser.screen().contents());
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(parser.screen().contents());
            }
            raw = signal.wait_timeout(raw, deadline - now).unwrap().0;
        }
    }

    /// The terminal as a terminal of `rows` × `cols` shows it now (for its bell count,
    /// alternate screen and cursor).
    pub fn terminal(&self, rows: u16, cols: u16) -> vt100::Parser {
        parse(&self.raw(), rows, cols)
    }

    /// Whether the terminal echoes and reads lines (not raw mode), as the kernel has it now.
    pub fn cooked(&self) -> bool {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: tcgetattr fills the zeroed struct for a descriptor we own.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::tcgetattr(writer.as_raw_fd(), &mut termios) };
        assert_eq!(rc, 0, "tcgetattr on the pty");
        termios.c_lflag & libc::ECHO != 0 && termios.c_lflag & libc::ICANON != 0
    }

    /// Makes the terminal `rows` × `cols`; the kernel tells the child with SIGWINCH.
    pub fn resize(&self, rows: u16, cols: u16) {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: TIOCSWINSZ reads the winsize we pass for a descriptor we own.
        let rc = unsafe { libc::ioctl(writer.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(rc, 0, "TIOCSWINSZ on the pty");
        let at = self.raw().len();
        self.resizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, rows, cols));
    }

    /// Everything a person could read in the terminal now, history included, as lines: the
    /// rows the terminal wrapped are joined again, trailing blanks dropped. The terminal starts
    /// at `rows` × `cols` and changes size where [`Pty::resize`] was called.
    pub fn transcript(&self, rows: u16, cols: u16) -> Vec<String> {
        let raw = self.raw();
        let raw = raw.strip_suffix(&[EOF_MARK]).unwrap_or(&raw);
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal is at least 1 × 1");
        let mut parser = vt100::Parser::new(size(rows), size(cols), 5000);
        let mut done = 0;
        for (at, rows, cols) in self
            .resizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let at = (*at).min(raw.len());
            parser.process(&raw[done..at]);
            parser.screen_mut().set_size(size(*rows), size(*cols));
            done = at;
        }
        parser.process(&raw[done..]);
        let screen = parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let history = screen.scrollback();
        let width = screen.size().1.get();
        let mut rows: Vec<(String, bool)> = Vec::new();
        for line in 0..history {
            screen.set_scrollback(history - line);
            let text = screen.rows(0, width).next().unwrap_or_default();
            rows.push((text, screen.row_wrapped(0)));
        }
        screen.set_scrollback(0);
        let visible: Vec<String> = screen.rows(0, width).collect();
        for (row, text) in visible.into_iter().enumerate() {
            let wrapped = screen.row_wrapped(row as u16);
            rows.push((text, wrapped));
        }
        let mut lines = Vec::new();
        let mut open = String::new();
        for (text, wrapped) in rows {
            open.push_str(&text);
            if !wrapped {
                lines.push(open.trim_end().to_string());
                open.clear();
            }
        }
        if !open.is_empty() {
            lines.push(open.trim_end().to_string());
        }
        lines
    }

    /// Waits until the child has written more than `from` bytes; returns what came after
    /// them (empty when nothing came in time).
    pub fn output_after(&self, from: usize) -> Vec<u8> {
        let (lock, ready) = &*self.screen;
        let raw = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (raw, _) = ready
            .wait_timeout_while(raw, WAIT, |raw| raw.len() <= from)
            .unwrap();
        raw.get(from..).unwrap_or_default().to_vec()
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// Everything the child wrote so far, escape sequences included.
    pub fn raw(&self) -> Vec<u8> {
        let (lock, _) = &*self.screen;
        lock.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits for the child to close the terminal and exit; returns its exit code.
    pub fn wait(&self) -> Option<i32> {
        let (lock, ready) = &*self.screen;
        let screen = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (screen, timeout) = ready
            .wait_timeout_while(screen, WAIT, |s| s.last() != Some(&EOF_MARK))
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "the child did not exit:\n{}",
            strip_ansi(&screen)
        );
        drop(screen);
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .wait()
            .unwrap()
            .code()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// What a terminal of `rows` × `cols` makes of `raw` (the end-of-output mark left out).
fn parse(raw: &[u8], rows: u16, cols: u16) -> vt100::Parser {
    let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal is at least 1 × 1");
    let mut parser = vt100::Parser::new(size(rows), size(cols), 1000);
    parser.process(raw.strip_suffix(&[EOF_MARK]).unwrap_or(raw));
    parser
}

/// A new pseudo-terminal of `rows` × `cols`: its master and its slave side. Both descriptors
/// are close-on-exec from the start, so a process another test starts meanwhile (the tests
/// share one process) never inherits the terminal and holds it open past its child's end.
pub fn open_pty(rows: u16, cols: u16) -> (OwnedFd, OwnedFd) {
    use std::os::unix::fs::OpenOptionsExt;
    let open = |path: &std::path::Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(path)
            .map(OwnedFd::from)
    };
    let master = open(std::path::Path::new("/dev/ptmx")).expect("a new pty");
    let mut name = [0u8; 128];
    // SAFETY: grantpt and unlockpt take a master descriptor we own; ptsname_r writes at most
    // `name.len()` bytes, NUL included, into the buffer we pass.
    let rc = unsafe {
        let fd = master.as_raw_fd();
        if libc::grantpt(fd) != 0 || libc::unlockpt(fd) != 0 {
            -1
        } else {
            libc::ptsname_r(fd, name.as_mut_ptr().cast(), name.len())
        }
    };
    assert_eq!(rc, 0, "the pty's slave side is unlocked and named");
    let name = std::ffi::CStr::from_bytes_until_nul(&name).expect("a NUL-terminated name");
    let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes());
    let slave = open(std::path::Path::new(path)).expect("the pty's slave side opens");
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads the winsize we pass for a descriptor we own.
    let rc = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
    assert_eq!(rc, 0, "TIOCSWINSZ on the new pty");
    (master, slave)
}

/// Appended to the screen when the terminal closes (a byte a UTF-8 terminal never sends).
const EOF_MARK: u8 = 0xff;

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// The text of terminal output without escape sequences and carriage returns.
pub fn strip_ansi(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.peek() == Some(&'\\')) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
