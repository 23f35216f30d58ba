//! What `agentctl run` listens to besides the daemon: signals, and single keys that answer a
//! permission request on a terminal.
//!
//! The terminal is in raw mode only while a request waits, and the mode is switched by the
//! caller's thread, never by the thread that reads keys: once [`AskKeys::want`]`(false)`
//! returns (or the keys are dropped), the terminal is cooked, and nothing turns it raw again
//! behind the caller's back. A panic gives the terminal back too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::signal::unix::SignalKind;

/// A signal to wait for, or none where the platform has no such signal.
pub struct Signal(Option<tokio::signal::unix::Signal>);

impl Signal {
    /// Listens for `kind` from now on.
    pub fn new(kind: SignalKind) -> Signal {
        Signal(tokio::signal::unix::signal(kind).ok())
    }

    /// Waits for the signal; never returns when it cannot be received.
    pub async fn recv(&mut self) {
        match &mut self.0 {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    }
}

/// The key Ctrl+C gives while the terminal is raw (it sends no signal then).
pub const CTRL_C: char = '\u{3}';

/// How often the reading thread looks whether it should still read.
const POLL: Duration = Duration::from_millis(50);

/// Single keys from the terminal while a permission request waits: the terminal is in raw mode
/// only then, so Enter is not needed, and typing at other times is left alone.
pub struct AskKeys {
    keys: tokio::sync::mpsc::UnboundedReceiver<char>,
    /// What the reading thread should do.
    ask: Arc<Ask>,
    /// Wakes the reading thread; dropped to end it.
    wake: Option<std::sync::mpsc::Sender<()>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// Whether this turned the terminal raw (and must give it back).
    raw: bool,
}

/// Shared with the reading thread: whether to read keys, and which question they answer (a
/// new question is a new turn, even when it follows the last at once).
#[derive(Default)]
struct Ask {
    asking: AtomicBool,
    turn: AtomicU64,
}

impl Ask {
    /// Whether keys still answer question `turn`.
    fn still(&self, turn: u64) -> bool {
        self.asking.load(Ordering::SeqCst) && self.turn.load(Ordering::SeqCst) == turn
    }
}

impl AskKeys {
    /// Starts the thread that reads keys; nothing is read until [`AskKeys::want`] asks.
    /// `prompt`: the thread writes the question itself (when the view does not draw it).
    pub fn start(prompt: bool) -> AskKeys {
        install_panic_hook();
        let (tx, keys) = tokio::sync::mpsc::unbounded_channel();
        let (wake, woken) = std::sync::mpsc::channel::<()>();
        let ask = Arc::new(Ask::default());
        let shared = ask.clone();
        let reader = std::thread::spawn(move || {
            use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
            let mut served = None;
            while woken.recv().is_ok() {
                let turn = shared.turn.load(Ordering::SeqCst);
                // A question is shown once, however many wakes it took.
                if !shared.still(turn) || served == Some(turn) {
                    continue;
                }
                served = Some(turn);
                if prompt {
                    eprint!("allow? [y]es / [n]o / [a]lways: ");
                }
                while shared.still(turn) {
                    // A terminal that went away gives no keys: crossterm's poll would spin on
                    // it, and the run goes on without answers from here.
                    if crate::screen::terminal_gone() {
                        return;
                    }
                    if !event::poll(POLL).unwrap_or(false) {
                        continue;
                    }
                    let Ok(Event::Key(key)) = event::read() else {
                        continue;
                    };
                    if key.kind == KeyEventKind::Release {
                        continue;
                    }
                    let c = match key.code {
                        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                            CTRL_C
                        }
                        KeyCode::Char(c) => c,
                        _ => continue,
                    };
                    // A key read as the question went away answers nothing.
                    if !shared.still(turn) {
                        break;
                    }
                    if tx.send(c).is_err() {
                        return;
                    }
                    // An answer ends the question: keys after it wait for the next one.
                    if matches!(c.to_ascii_lowercase(), 'y' | 'n' | 'a') {
                        break;
                    }
                }
            }
        });
        AskKeys {
            keys,
            ask,
            wake: Some(wake),
            reader: Some(reader),
            raw: false,
        }
    }

    /// Whether a request waits for a key: the terminal turns raw (keys typed before are
    /// dropped) and the question is shown, or the terminal is cooked again when this returns.
    /// Call it before the view shows the question.
    pub fn want(&mut self, asking: bool) {
        if asking == self.raw {
            return;
        }
        self.ask.turn.fetch_add(1, Ordering::SeqCst);
        if asking {
            if crossterm::terminal::enable_raw_mode().is_err() {
                return;
            }
            self.raw = true;
            // Keys typed before the question are not its answer (read here, before the
            // question shows).
            while crossterm::event::poll(Duration::ZERO).unwrap_or(false) {
                let _ = crossterm::event::read();
            }
            self.ask.asking.store(true, Ordering::SeqCst);
            if let Some(wake) = &self.wake {
                let _ = wake.send(());
            }
        } else {
            self.ask.asking.store(false, Ordering::SeqCst);
            self.raw = false;
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }

    /// Whether a key now answers a request (one read before it was asked, or after, does not).
    pub fn asking(&self) -> bool {
        self.raw
    }
}

impl Drop for AskKeys {
    fn drop(&mut self) {
        self.want(false);
        // The thread ends at its next look; it then writes nothing more to the terminal.
        self.wake.take();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The next key read while a request waits; never returns without keys.
pub async fn next_key(keys: &mut Option<AskKeys>) -> Option<char> {
    match keys {
        Some(keys) => keys.keys.recv().await,
        None => std::future::pending().await,
    }
}

/// A panic gives the terminal back before its message is printed.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = crossterm::terminal::disable_raw_mode();
            previous(info);
        }));
    });
}
