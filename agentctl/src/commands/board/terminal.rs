//! The terminal while the board is up: raw mode on the alternate screen, given back as it was
//! when the board ends, also by a panic or a signal; and the bell and desktop notification
//! when a session starts needing you.

use std::io::Write;

use crossterm::{cursor, execute, terminal};

/// Holds the terminal in the board's state; gives it back when dropped.
pub struct Screen {
    /// Whether the terminal is held now.
    on: bool,
    /// Whether stderr goes aside while the terminal is held ([`super::stderr`]).
    capture: bool,
}

impl Screen {
    /// Raw mode, the alternate screen, no cursor. A panic from now on gives the terminal back
    /// before its message is printed.
    pub fn enter() -> std::io::Result<Screen> {
        Screen::enter_with(false)
    }

    /// [`Screen::enter`], with what this process writes to stderr kept aside while the
    /// terminal is held, and written out when it is given back.
    pub fn enter_capturing_stderr() -> std::io::Result<Screen> {
        Screen::enter_with(true)
    }

    /// Takes the terminal, stderr aside when `capture`.
    fn enter_with(capture: bool) -> std::io::Result<Screen> {
        install_panic_hook();
        let mut screen = Screen { on: false, capture };
        screen.resume()?;
        Ok(screen)
    }

    /// Takes the terminal again (after a chat view gave it back).
    pub fn resume(&mut self) -> std::io::Result<()> {
        terminal::enable_raw_mode()?;
        self.on = true;
        if self.capture {
            super::stderr::capture();
        }
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide,
            terminal::Clear(terminal::ClearType::All)
        )
    }

    /// Gives the terminal back as it was (for a chat view, or for good).
    pub fn suspend(&mut self) {
        if std::mem::take(&mut self.on) {
            restore();
        }
    }

    /// Gives the terminal back to a child process for a while, stderr still kept aside
    /// (what this process's other work writes there would land in the child's screen); the
    /// child is given the real stderr ([`super::stderr::real`]).
    pub fn lend(&mut self) {
        if std::mem::take(&mut self.on) {
            restore_terminal();
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.suspend();
    }
}

/// Leaves the alternate screen, shows the cursor, ends raw mode and gives stderr back;
/// harmless when the board did not take the terminal.
pub fn restore() {
    restore_terminal();
    super::stderr::release();
}

/// Leaves the alternate screen, shows the cursor and ends raw mode.
fn restore_terminal() {
    let _ = execute!(
        std::io::stdout(),
        terminal::LeaveAlternateScreen,
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
}

/// Makes a panic give the terminal back before its message is printed.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Rings the bell and, where the terminal is known to show them, sends a desktop notification
/// (OSC 9 or OSC 777) saying `message`.
pub fn attention(message: &str) {
    let message: String = message
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .take(200)
        .collect();
    let mut out = std::io::stdout();
    let mut text = String::from("\x07");
    match notification_kind() {
        Some(Osc::Nine) => text.push_str(&format!("\x1b]9;{message}\x07")),
        Some(Osc::SevenSevenSeven) => {
            text.push_str(&format!("\x1b]777;notify;agentd;{message}\x07"))
        }
        None => {}
    }
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The desktop notifications terminals understand.
enum Osc {
    Nine,
    SevenSevenSeven,
}

/// Which notification the terminal understands, from what it says about itself.
fn notification_kind() -> Option<Osc> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let program = var("TERM_PROGRAM");
    let term = var("TERM");
    if matches!(
        program.as_str(),
        "iTerm.app" | "WezTerm" | "ghostty" | "vscode" | "WarpTerminal"
    ) || term.contains("kitty")
        || term.contains("ghostty")
        || std::env::var_os("WT_SESSION").is_some()
    {
        Some(Osc::Nine)
    } else if std::env::var_os("VTE_VERSION").is_some()
        || term.starts_with("foot")
        || term.starts_with("rxvt-unicode")
        || program == "konsole"
    {
        Some(Osc::SevenSevenSeven)
    } else {
        None
    }
}
