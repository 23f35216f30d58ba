//! `Extensions`: the hooks in force and a directory's skills and commands, for `agentctl hooks
//! list`, `skills list`, chat's completion and an editor's command list.

use std::path::Path;

use protocol::{CommandInfo, Extensions, HookInfo, SkillInfo};

use super::super::Connection;
use crate::hooks::OnError;

impl Connection {
    pub(super) fn extensions(&self, cwd: &str) -> Extensions {
        let config = self.shared.config.borrow().config.clone();
        let hooks = config
            .hooks
            .iter()
            .flat_map(|(event, hooks)| {
                hooks.iter().map(move |hook| HookInfo {
                    event: event.as_str().to_string(),
                    matcher: hook.matcher.as_ref().map(|m| m.pattern().to_string()),
                    command: hook.command.clone(),
                    timeout_secs: hook.timeout_secs,
                    on_error: match hook.on_error {
                        OnError::Ignore => "ignore",
                        OnError::Block => "block",
                    }
                    .to_string(),
                })
            })
            .collect();
        // Only an absolute directory is looked in: a relative one would be the daemon's.
        let cwd = Path::new(cwd);
        if !cwd.is_absolute() {
            return Extensions {
                hooks,
                ..Extensions::default()
            };
        }
        let config_dir = &self.shared.config_dir;
        let skills = crate::skills::discover(&crate::skills::directories(cwd, config_dir))
            .into_iter()
            .map(|s| SkillInfo {
                name: s.name,
                description: s.description,
                path: s.path.display().to_string(),
            })
            .collect();
        let commands = crate::commands::discover(&crate::commands::directories(cwd, config_dir))
            .into_iter()
            .map(|c| CommandInfo {
                name: c.name,
                description: c.description,
                argument_hint: c.argument_hint,
            })
            .collect();
        Extensions {
            hooks,
            skills,
            commands,
        }
    }
}
