//! Keys and resizes from the terminal, read on a thread of their own while the board shows;
//! paused while a chat view has the terminal (it reads the keys then).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use tokio::sync::mpsc;

/// The reading thread's switch and what it read.
pub struct Input {
    /// The keys and resizes read.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// Whether the thread is to read.
    on: Arc<AtomicBool>,
    /// Where the thread says it has stopped reading after a pause.
    parked: std::sync::mpsc::Receiver<()>,
}

/// How long [`Input::pause`] waits for the thread to leave its read (it polls in 50 ms steps).
const PARK_WAIT: Duration = Duration::from_millis(500);

impl Input {
    /// Starts reading.
    pub fn start() -> Input {
        let (tx, events) = mpsc::unbounded_channel();
        let (park, parked) = std::sync::mpsc::channel();
        let on = Arc::new(AtomicBool::new(true));
        let reading = on.clone();
        std::thread::spawn(move || {
            let mut told = false;
            loop {
                if !reading.load(Ordering::Acquire) {
                    // Out of poll and read: no byte typed from now on is taken from the
                    // terminal by this process, so a chat in another process gets every key.
                    if !told {
                        told = true;
                        let _ = park.send(());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    if tx.is_closed() {
                        return;
                    }
                    continue;
                }
                told = false;
                match event::poll(Duration::from_millis(50)) {
                    Ok(true) => {}
                    Ok(false) => {
                        if tx.is_closed() {
                            return;
                        }
                        continue;
                    }
                    Err(_) => return,
                }
                // Checked again: a pause may have come while this thread waited.
                if !reading.load(Ordering::Acquire) {
                    continue;
                }
                match event::read() {
                    Ok(Event::Key(key)) if key.kind == KeyEventKind::Release => {}
                    Ok(event @ (Event::Key(_) | Event::Resize(..))) => {
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        });
        Input { events, on, parked }
    }

    /// Stops reading keys (a chat view takes over) and drops what was read but not handled.
    /// Returns once the thread has left its read (crossterm's poll takes bytes from the
    /// terminal into its own buffer, where a chat in another process would never see them).
    pub fn pause(&mut self) {
        while self.parked.try_recv().is_ok() {}
        self.on.store(false, Ordering::Release);
        let _ = self.parked.recv_timeout(PARK_WAIT);
        while self.events.try_recv().is_ok() {}
    }

    /// Reads keys again.
    pub fn resume(&mut self) {
        while self.events.try_recv().is_ok() {}
        self.on.store(true, Ordering::Release);
    }
}
