//! What `agentctl run` listens to besides the daemon: signals, and single keys that answer a
//! permission request on a terminal.

use tokio::signal::unix::SignalKind;

/// A signal to wait for, or none where the platform has no such signal.
pub struct Signal(Option<tokio::signal::unix::Signal>);

impl Signal {
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

/// Single keys from the terminal while a permission request waits: the terminal is in raw mode
/// only then, so Enter is not needed, and typing at other times is left alone.
pub struct AskKeys {
    keys: tokio::sync::mpsc::UnboundedReceiver<char>,
    asking: std::sync::Arc<std::sync::atomic::AtomicBool>,
    wake: std::sync::mpsc::Sender<()>,
}

impl AskKeys {
    pub fn start() -> AskKeys {
        use std::sync::atomic::Ordering;
        let (tx, keys) = tokio::sync::mpsc::unbounded_channel();
        let (wake, woken) = std::sync::mpsc::channel::<()>();
        let asking = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = asking.clone();
        std::thread::spawn(move || {
            use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
            while woken.recv().is_ok() {
                if !flag.load(Ordering::Relaxed) || crossterm::terminal::enable_raw_mode().is_err()
                {
                    continue;
                }
                // Keys typed before the question are not its answer.
                while event::poll(std::time::Duration::ZERO).unwrap_or(false) {
                    let _ = event::read();
                }
                eprint!("allow? [y]es / [n]o / [a]lways: ");
                while flag.load(Ordering::Relaxed) {
                    if !event::poll(std::time::Duration::from_millis(50)).unwrap_or(false) {
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
                            '\u{3}'
                        }
                        KeyCode::Char(c) => c,
                        _ => continue,
                    };
                    let answered = matches!(c.to_ascii_lowercase(), 'y' | 'n' | 'a');
                    if tx.send(c).is_err() {
                        break;
                    }
                    if answered {
                        // The next request (if any) wakes this thread again.
                        flag.store(false, Ordering::Relaxed);
                    }
                }
                let _ = crossterm::terminal::disable_raw_mode();
            }
        });
        AskKeys { keys, asking, wake }
    }

    /// Whether a request waits for a key.
    pub fn want(&self, asking: bool) {
        use std::sync::atomic::Ordering;
        if asking && !self.asking.swap(true, Ordering::Relaxed) {
            let _ = self.wake.send(());
        } else if !asking {
            self.asking.store(false, Ordering::Relaxed);
        }
    }
}

impl Drop for AskKeys {
    fn drop(&mut self) {
        self.asking
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

pub async fn next_key(keys: &mut Option<AskKeys>) -> Option<char> {
    match keys {
        Some(keys) => keys.keys.recv().await,
        None => std::future::pending().await,
    }
}
