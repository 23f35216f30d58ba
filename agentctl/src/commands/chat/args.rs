//! What `agentctl chat` or `agentctl attach` was asked to do.

use protocol::Mode;

/// What `chat` or `attach` was asked to do.
pub struct ChatArgs {
    /// The session to join; a new one in the current directory when absent.
    pub session: Option<String>,
    /// The model of a new session.
    pub model: Option<String>,
    /// The provider of a new session.
    pub provider: Option<String>,
    /// The mode of a new session.
    pub mode: Option<Mode>,
    /// The turn limit of runs started here (0, the default, is none).
    pub max_turns: Option<u32>,
    /// Whether this is `attach` (for the client's name).
    pub attach: bool,
    /// Give a new session its own git worktree.
    pub worktree: bool,
    /// Run with the defaults when the daemon has no usable configuration.
    pub ignore_config: bool,
}

impl ChatArgs {
    /// `attach`: join the existing session `id`, changing none of its settings.
    pub fn attach(id: String) -> ChatArgs {
        ChatArgs {
            session: Some(id),
            model: None,
            provider: None,
            mode: None,
            max_turns: None,
            attach: true,
            worktree: false,
            ignore_config: false,
        }
    }
}
