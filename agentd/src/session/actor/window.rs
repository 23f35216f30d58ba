//! A message that cannot fit the model's context window is refused before it is stored or
//! sent: no model could answer it, and every later run of the session would fail on it too.
//! The error gives both sizes.

use protocol::text::thousands;
use protocol::{ErrorCode, ErrorInfo, RunOptions};

use super::SessionActor;

impl SessionActor {
    /// Refuses `text` when its estimated tokens exceed the context window of the model the
    /// run would use. A window that is not known (a local server's, unless configured) lets
    /// everything through: the server says so itself.
    pub(super) fn fits_window(&self, text: &str, options: &RunOptions) -> Result<(), ErrorInfo> {
        let config = self.env.config();
        let (profile, model) = self.run_names(options);
        let names = config.names(profile, model, &options.env);
        let Some(model) = names.model else {
            return Ok(());
        };
        let window = match config.configured_context_window(Some(&names.provider)) {
            Some(window) => window,
            None => match crate::compact::known_context_window(&model) {
                Some(window) => window,
                None => return Ok(()),
            },
        };
        let tokens = estimate(text);
        if tokens <= window {
            return Ok(());
        }
        Err(ErrorInfo::new(
            ErrorCode::InvalidRequest,
            format!(
                "the message is about {} tokens ({} bytes); {model}'s context window is {} \
                 tokens: send less, or put the text in a file and let the agent read what it needs",
                thousands(tokens),
                thousands(text.len() as u64),
                thousands(window)
            ),
        ))
    }
}

/// A rough token count of a message's text: a quarter of its bytes, as compaction counts.
fn estimate(text: &str) -> u64 {
    text.len() as u64 / 4
}
