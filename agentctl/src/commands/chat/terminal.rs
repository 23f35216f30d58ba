//! The input line on a terminal: a thread that reads keys in raw mode, edits the [`Editor`],
//! and draws the status and input rows at the bottom of the shared [`Live`] region (the view
//! draws the rest of it). It ends, and gives the terminal back as it found it, when told to,
//! and on its own when the terminal goes away (the window closed, tmux killed): the chat then
//! detaches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc;

use super::complete::Completer;
use super::editor::Editor;
use super::input::{Input, InputLine};
use super::status::Status;
use crate::Failure;
use crate::screen::{Live, SharedLive};

/// How long the key thread waits for a key before it looks whether to stop.
const KEY_WAIT: Duration = Duration::from_millis(50);

/// How long stopping waits for the key thread to end (it looks every [`KEY_WAIT`]). A thread
/// stuck in the terminal library (which spins on a terminal that hung up while it waited) is
/// left behind: the program ends anyway.
const STOP_WAIT: Duration = Duration::from_millis(300);

/// The terminal input line: keys read on their own thread.
pub(super) struct TerminalLine {
    editor: Arc<Mutex<Editor>>,
    live: SharedLive,
    quit: Arc<AtomicBool>,
    /// The key thread, and what says it ended (its sender is dropped then).
    thread: Mutex<Option<(std::thread::JoinHandle<()>, std_mpsc::Receiver<()>)>>,
}

/// What the key thread works with.
struct Keys {
    editor: Arc<Mutex<Editor>>,
    live: SharedLive,
    status: Arc<Mutex<Status>>,
    completer: Arc<Completer>,
    input: mpsc::UnboundedSender<Input>,
}

impl TerminalLine {
    /// Puts the terminal in raw mode and starts reading keys; what is typed is drawn under
    /// `status` in `live`.
    pub(super) fn start(
        live: SharedLive,
        status: Arc<Mutex<Status>>,
        completer: Arc<Completer>,
        input: mpsc::UnboundedSender<Input>,
    ) -> Result<TerminalLine, Failure> {
        // A panic gives the terminal back cooked, as the end does.
        crate::commands::run_keys::install_panic_hook();
        crossterm::terminal::enable_raw_mode()
            .map_err(|e| Failure::new(format!("cannot read keys from the terminal: {e}")))?;
        // Pasted text comes as one piece, newlines and all.
        crate::stdout::write("\x1b[?2004h");
        let editor: Arc<Mutex<Editor>> = Arc::default();
        {
            let (editor, status) = (editor.clone(), status.clone());
            Live::lock(&live).set_bottom(Box::new(move |cols| {
                let mut rows = vec![
                    status
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .line()
                        .trim_end()
                        .to_string(),
                ];
                rows.extend(editor.lock().unwrap_or_else(|e| e.into_inner()).rows(cols));
                rows
            }));
        }
        let quit = Arc::new(AtomicBool::new(false));
        let keys = Keys {
            editor: editor.clone(),
            live: live.clone(),
            status,
            completer,
            input,
        };
        let stop = quit.clone();
        let (ended, done) = std_mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            keys.read(&stop);
            drop(ended);
        });
        Live::lock(&live).draw();
        Ok(TerminalLine {
            editor,
            live,
            quit,
            thread: Mutex::new(Some((thread, done))),
        })
    }

    fn editor(&self) -> std::sync::MutexGuard<'_, Editor> {
        self.editor.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl InputLine for TerminalLine {
    fn refresh(&self) {
        Live::lock(&self.live).draw();
    }

    fn restore(&self, text: String) {
        {
            let mut editor = self.editor();
            let typed = editor.text().to_string();
            let text = if typed.is_empty() {
                text
            } else {
                format!("{text}\n{typed}")
            };
            editor.set(&text);
        }
        self.refresh();
    }

    fn gone(&self) -> bool {
        crate::screen::terminal_gone()
    }

    fn stop(&self) {
        self.quit.store(true, Ordering::Relaxed);
        if let Some((thread, done)) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // Joined once it ended; a thread that does not end in time is left behind.
            if let Err(std_mpsc::RecvTimeoutError::Disconnected) = done.recv_timeout(STOP_WAIT) {
                let _ = thread.join();
            }
        }
        Live::lock(&self.live).close();
        crate::stdout::write("\x1b[?2004l");
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

impl Drop for TerminalLine {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Keys {
    /// Reads keys until `quit` is set, the chat stops listening or the terminal goes away.
    fn read(&self, quit: &AtomicBool) {
        while !quit.load(Ordering::Relaxed) {
            // The terminal library reads a terminal that hung up over and over without end:
            // it is not asked once the terminal is gone. (One that goes while the library
            // waits keeps this thread; the chat sees it gone too and ends without it.)
            if crate::screen::terminal_gone() {
                let _ = self.input.send(Input::Gone);
                return;
            }
            let next = event::poll(KEY_WAIT).and_then(|ready| match ready {
                true => event::read().map(Some),
                false => Ok(None),
            });
            match next {
                Ok(None) => {}
                Ok(Some(event)) => {
                    if !self.event(event) {
                        return;
                    }
                }
                Err(err) => {
                    let _ = self.input.send(if crate::screen::terminal_gone() {
                        Input::Gone
                    } else {
                        Input::Failed(err.to_string())
                    });
                    return;
                }
            }
        }
    }

    /// Handles one event of the terminal; false when the chat no longer listens.
    fn event(&self, event: Event) -> bool {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.key(key),
            Event::Paste(text) => {
                self.edit(|editor| editor.insert(&text.replace("\r\n", "\n")));
                true
            }
            Event::Resize(..) => {
                Live::lock(&self.live).draw();
                true
            }
            _ => true,
        }
    }

    /// Changes the text, then draws it.
    fn edit(&self, change: impl FnOnce(&mut Editor)) {
        change(&mut self.editor.lock().unwrap_or_else(|e| e.into_inner()));
        Live::lock(&self.live).draw();
    }

    fn send(&self, input: Input) -> bool {
        self.input.send(input).is_ok()
    }

    /// Handles one key; false when the chat no longer listens.
    fn key(&self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let (empty, menu) = {
            let editor = self.editor.lock().unwrap_or_else(|e| e.into_inner());
            (editor.text().is_empty(), editor.menu_open())
        };
        // While a permission request has been shown a moment, a plain key on an empty line
        // answers it at once.
        if let KeyCode::Char(c) = key.code
            && !ctrl
            && !alt
            && empty
            && self
                .status
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .keys_answer()
        {
            return self.send(Input::Key(c));
        }
        match key.code {
            KeyCode::Char('c') if ctrl => {
                if empty {
                    return self.send(Input::CtrlC);
                }
                self.edit(|editor| editor.set(""));
            }
            KeyCode::Char('d') if ctrl => {
                if empty {
                    return self.send(Input::CtrlD);
                }
                self.edit(Editor::delete_forward);
            }
            KeyCode::Char('a') if ctrl => self.edit(Editor::home),
            KeyCode::Char('e') if ctrl => self.edit(Editor::end),
            KeyCode::Char('b') if ctrl => self.edit(Editor::left),
            KeyCode::Char('f') if ctrl => self.edit(Editor::right),
            KeyCode::Char('b') if alt => self.edit(Editor::word_left),
            KeyCode::Char('f') if alt => self.edit(Editor::word_right),
            KeyCode::Char('w') if ctrl => self.edit(Editor::delete_word_back),
            KeyCode::Char('u') if ctrl => self.edit(Editor::delete_to_start),
            KeyCode::Char('k') if ctrl => self.edit(Editor::delete_to_end),
            KeyCode::Char('p') if ctrl => self.edit(Editor::up),
            KeyCode::Char('n') if ctrl => self.edit(Editor::down),
            KeyCode::Char('j') if ctrl => self.edit(|editor| editor.insert("\n")),
            KeyCode::Char('l') if ctrl => Live::lock(&self.live).draw(),
            KeyCode::Char(_) if ctrl => {}
            KeyCode::Char(c) => self.edit(|editor| editor.insert(c.encode_utf8(&mut [0; 4]))),
            KeyCode::Backspace if alt || ctrl => self.edit(Editor::delete_word_back),
            KeyCode::Backspace => self.edit(Editor::delete_back),
            KeyCode::Delete => self.edit(Editor::delete_forward),
            KeyCode::Left if ctrl || alt => self.edit(Editor::word_left),
            KeyCode::Right if ctrl || alt => self.edit(Editor::word_right),
            KeyCode::Left => self.edit(Editor::left),
            KeyCode::Right => self.edit(Editor::right),
            KeyCode::Home => self.edit(Editor::home),
            KeyCode::End => self.edit(Editor::end),
            KeyCode::Up => self.edit(Editor::up),
            KeyCode::Down => self.edit(Editor::down),
            KeyCode::Tab => {
                let completion = {
                    let editor = self.editor.lock().unwrap_or_else(|e| e.into_inner());
                    (!editor.menu_open())
                        .then(|| self.completer.complete(editor.head()))
                        .flatten()
                };
                self.edit(|editor| editor.complete(completion));
            }
            KeyCode::Esc if menu => self.edit(Editor::close_menu),
            KeyCode::Esc => {
                // Cancels the run; what was typed travels along behind an ESC mark.
                let typed = self.take();
                return self.send(Input::Line(format!("\u{1b}{typed}")));
            }
            KeyCode::Enter if menu => self.edit(Editor::accept),
            KeyCode::Enter if alt => {
                let typed = self.take();
                return self.send(Input::Line(format!("/steer {typed}")));
            }
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.edit(|editor| editor.insert("\n"));
            }
            KeyCode::Enter => {
                let continued = {
                    let mut editor = self.editor.lock().unwrap_or_else(|e| e.into_inner());
                    if editor.head().ends_with('\\') {
                        // A `\` at the end of a line goes on on the next one.
                        editor.delete_back();
                        editor.insert("\n");
                        true
                    } else {
                        false
                    }
                };
                if continued {
                    Live::lock(&self.live).draw();
                } else {
                    let typed = self.take();
                    return self.send(Input::Line(typed));
                }
            }
            _ => {}
        }
        true
    }

    /// Takes the typed text away from the input line (it is being sent).
    fn take(&self) -> String {
        let text = self.editor.lock().unwrap_or_else(|e| e.into_inner()).take();
        Live::lock(&self.live).draw();
        text
    }
}
