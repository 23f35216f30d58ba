//! Keys and resizes from the terminal, read on a thread of their own while the board shows;
//! paused while a chat view has the terminal (it reads the keys then).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use tokio::sync::mpsc;

/// The reading thread's switch and what it read.
pub struct Input {
    pub events: mpsc::UnboundedReceiver<Event>,
    on: Arc<AtomicBool>,
}

impl Input {
    /// Starts reading.
    pub fn start() -> Input {
        let (tx, events) = mpsc::unbounded_channel();
        let on = Arc::new(AtomicBool::new(true));
        let reading = on.clone();
        std::thread::spawn(move || {
            loop {
                if !reading.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(20));
                    if tx.is_closed() {
                        return;
                    }
                    continue;
                }
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
        Input { events, on }
    }

    /// Stops reading keys (a chat view takes over) and drops what was read but not handled.
    pub fn pause(&mut self) {
        self.on.store(false, Ordering::Release);
        while self.events.try_recv().is_ok() {}
    }

    /// Reads keys again.
    pub fn resume(&mut self) {
        while self.events.try_recv().is_ok() {}
        self.on.store(true, Ordering::Release);
    }
}
