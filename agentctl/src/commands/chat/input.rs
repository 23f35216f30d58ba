//! The input side of the interactive view: a reedline editor on its own thread on a terminal,
//! plain lines from stdin otherwise.

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reedline::{
    ColumnarMenu, EditCommand, EditMode, Emacs, ExternalPrinter, KeyCode, KeyModifiers,
    MenuBuilder, PromptEditMode, Reedline, ReedlineEvent, ReedlineMenu, ReedlineRawEvent, Signal,
    ValidationResult, Validator, default_emacs_keybindings,
};
use tokio::sync::mpsc;

use super::status::{Status, StatusPrompt};
use crate::Failure;

/// What the user did at the input line.
#[derive(Debug)]
pub(super) enum Input {
    Line(String),
    /// A key pressed while a permission request was shown (no Enter needed).
    Key(char),
    CtrlC,
    CtrlD,
    Eof,
    Failed(String),
}

/// The input side: the terminal editor, or plain stdin.
pub(super) trait InputLine {
    /// Redraws the status line.
    fn refresh(&self);
    /// Puts text back into the input line.
    fn restore(&self, text: String);
    /// Stops reading input.
    fn stop(&self);
}

/// The terminal input line: reedline on its own thread.
pub(super) struct TerminalLine {
    repaint: Box<dyn Fn() + Send + Sync>,
    interrupt: Arc<AtomicBool>,
    restore: Arc<Mutex<Vec<String>>>,
    quit: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl TerminalLine {
    pub(super) fn start(
        status: Arc<Mutex<Status>>,
        partial: Arc<Mutex<String>>,
        input: mpsc::UnboundedSender<Input>,
        commands: Vec<protocol::CommandInfo>,
    ) -> Result<(TerminalLine, std::sync::mpsc::SyncSender<String>), Failure> {
        let printer = ExternalPrinter::new(4096);
        let sender = printer.sender();
        let interrupt = Arc::new(AtomicBool::new(false));
        let restore: Arc<Mutex<Vec<String>>> = Arc::default();
        let quit = Arc::new(AtomicBool::new(false));
        let (repaint_tx, repaint_rx) = std::sync::mpsc::channel();
        let thread = {
            let (interrupt, restore, quit) = (interrupt.clone(), restore.clone(), quit.clone());
            let input_tx = input;
            std::thread::spawn(move || {
                let mut keys = default_emacs_keybindings();
                // Esc cancels the run; what was typed travels along behind an ESC mark.
                keys.add_binding(
                    KeyModifiers::NONE,
                    KeyCode::Esc,
                    ReedlineEvent::Multiple(vec![
                        ReedlineEvent::Edit(vec![
                            EditCommand::MoveToStart { select: false },
                            EditCommand::InsertChar('\u{1b}'),
                        ]),
                        ReedlineEvent::Submit,
                    ]),
                );
                // Alt+Enter steers with what was typed.
                keys.add_binding(
                    KeyModifiers::ALT,
                    KeyCode::Enter,
                    ReedlineEvent::Multiple(vec![
                        ReedlineEvent::Edit(vec![
                            EditCommand::MoveToStart { select: false },
                            EditCommand::InsertString("/steer ".to_string()),
                        ]),
                        ReedlineEvent::Submit,
                    ]),
                );
                // Tab completes slash commands.
                keys.add_binding(
                    KeyModifiers::NONE,
                    KeyCode::Tab,
                    ReedlineEvent::UntilFound(vec![
                        ReedlineEvent::Menu("commands".to_string()),
                        ReedlineEvent::MenuNext,
                    ]),
                );
                // Shift+Enter (where the terminal reports it) starts a new line; so does a `\`
                // at the end of a line (see `Continuation`).
                keys.add_binding(
                    KeyModifiers::SHIFT,
                    KeyCode::Enter,
                    ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
                );
                let commands =
                    super::complete::SlashCompleter::new(super::SLASH_COMMANDS, &commands);
                let keys = ApprovalKeys {
                    inner: Emacs::new(keys),
                    status: status.clone(),
                };
                let mut editor = Reedline::create()
                    .with_edit_mode(Box::new(keys))
                    .with_external_printer(printer)
                    .with_completer(Box::new(commands))
                    .with_menu(ReedlineMenu::EngineCompleter(Box::new(
                        ColumnarMenu::default().with_name("commands"),
                    )))
                    .with_validator(Box::new(Continuation))
                    .with_break_signal(interrupt.clone())
                    .with_poll_interval(std::time::Duration::from_millis(10));
                let signal = editor.repaint_signal();
                let repaint: Box<dyn Fn() + Send + Sync> =
                    Box::new(move || signal.request_repaint());
                let _ = repaint_tx.send(repaint);
                let prompt = StatusPrompt { status, partial };
                while !quit.load(Ordering::Relaxed) {
                    let input = match editor.read_line(&prompt) {
                        Ok(Signal::Success(line)) => Input::Line(line.replace("\\\n", "\n")),
                        Ok(Signal::CtrlC) => Input::CtrlC,
                        Ok(Signal::CtrlD) => Input::CtrlD,
                        Ok(Signal::HostCommand(command)) => {
                            match command.strip_prefix(KEY).and_then(|k| k.chars().next()) {
                                // A message being typed goes on: the key is text.
                                Some(key) if !editor.current_buffer_contents().is_empty() => {
                                    editor.run_edit_commands(&[EditCommand::InsertChar(key)]);
                                    continue;
                                }
                                Some(key) => Input::Key(key),
                                None => continue,
                            }
                        }
                        Ok(Signal::ExternalBreak(typed)) => {
                            if quit.load(Ordering::Relaxed) {
                                break;
                            }
                            let mut texts: Vec<String> = std::mem::take(
                                &mut *restore.lock().unwrap_or_else(|e| e.into_inner()),
                            );
                            if !typed.is_empty() {
                                texts.push(typed);
                            }
                            editor.run_edit_commands(&[
                                EditCommand::Clear,
                                EditCommand::InsertString(texts.join("\n")),
                            ]);
                            continue;
                        }
                        Ok(_) => continue,
                        Err(err) => Input::Failed(err.to_string()),
                    };
                    let failed = matches!(input, Input::Failed(_));
                    if input_tx.send(input).is_err() || failed {
                        break;
                    }
                }
            })
        };
        let repaint = repaint_rx
            .recv()
            .map_err(|_| Failure::new("the input line did not start"))?;
        Ok((
            TerminalLine {
                repaint,
                interrupt,
                restore,
                quit,
                thread: Mutex::new(Some(thread)),
            },
            sender,
        ))
    }
}

impl InputLine for TerminalLine {
    fn refresh(&self) {
        (self.repaint)();
    }

    fn restore(&self, text: String) {
        self.restore
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
        self.interrupt.store(true, Ordering::Relaxed);
    }

    fn stop(&self) {
        self.quit.store(true, Ordering::Relaxed);
        self.interrupt.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// A line that ends with `\` goes on on the next line (Enter inserts a newline); the `\` is
/// dropped when the message is sent.
struct Continuation;

impl Validator for Continuation {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// Marks a key pressed while a permission request was shown, in reedline's host command.
const KEY: &str = "agentctl-key:";

/// Emacs keys, except that while a permission request is shown (for 300 ms at least, so that
/// typing that was under way is not taken for an answer) a plain key press on an empty input
/// line goes to the chat at once (y, n or a answers; the rest gets a hint).
struct ApprovalKeys {
    inner: Emacs,
    status: Arc<Mutex<Status>>,
}

impl EditMode for ApprovalKeys {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        let event: crossterm::event::Event = event.into();
        let asking = self
            .status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys_answer();
        if asking
            && let crossterm::event::Event::Key(key) = &event
            && let crossterm::event::KeyCode::Char(c) = key.code
            && (key.modifiers - crossterm::event::KeyModifiers::SHIFT).is_empty()
        {
            return ReedlineEvent::ExecuteHostCommand(format!("{KEY}{c}"));
        }
        match ReedlineRawEvent::try_from(event) {
            Ok(event) => self.inner.parse_event(event),
            Err(()) => ReedlineEvent::None,
        }
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.inner.edit_mode()
    }
}

/// Plain stdin lines, without a terminal.
pub(super) struct StdinLine;

impl StdinLine {
    pub(super) fn start(input: mpsc::UnboundedSender<Input>) -> StdinLine {
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(line) => {
                        if input.send(Input::Line(line)).is_err() {
                            return;
                        }
                    }
                    Err(err) => {
                        let _ = input.send(Input::Failed(err.to_string()));
                        return;
                    }
                }
            }
            let _ = input.send(Input::Eof);
        });
        StdinLine
    }
}

impl InputLine for StdinLine {
    fn refresh(&self) {}

    fn restore(&self, text: String) {
        outln!("(not sent: {text})");
    }

    fn stop(&self) {}
}
