//! Subagents as a parent's view shows them (docs/architecture.md#subagents): a line when one starts
//! and when it ends, and while they run one live line each (what it does now and for how long),
//! redrawn in place on a terminal.

use std::time::Instant;

use protocol::{SessionId, StopReason, TokenUsage};

use crate::format::thousands;
use crate::style::{Style, one_line};

/// A running subagent.
struct Child {
    id: SessionId,
    description: String,
    activity: String,
    started: Instant,
}

/// The running subagents of the session shown, oldest first.
#[derive(Default)]
pub struct Children {
    running: Vec<Child>,
}

impl Children {
    /// A subagent started; its line.
    pub fn started(
        &mut self,
        style: Style,
        id: &SessionId,
        description: &str,
        agent: &str,
        background: bool,
    ) -> String {
        self.running.retain(|c| &c.id != id);
        self.running.push(Child {
            id: id.clone(),
            description: one_line(description).into_owned(),
            activity: "starting".to_string(),
            started: Instant::now(),
        });
        let how = if background { " in the background" } else { "" };
        style.dim(&format!(
            "⧉ subagent {} ({}){how}: {}",
            super::far::id(id),
            one_line(agent),
            one_line(description)
        ))
    }

    /// What a subagent does now.
    pub fn activity(&mut self, id: &SessionId, activity: &str) {
        if let Some(child) = self.running.iter_mut().find(|c| &c.id == id) {
            child.activity = one_line(activity).into_owned();
        }
    }

    /// A subagent's run ended; its line.
    pub fn finished(
        &mut self,
        style: Style,
        id: &SessionId,
        stop: StopReason,
        turns: u32,
        usage: &TokenUsage,
        duration_ms: u64,
    ) -> String {
        self.running.retain(|c| &c.id != id);
        let tokens = thousands(usage.total_input() + usage.output);
        let text = format!(
            "⧉ subagent {} {} · {} · {tokens} tokens · {}",
            super::far::id(id),
            stop.as_str(),
            crate::format::count(turns, "turn"),
            super::tools::duration(duration_ms)
        );
        if stop == StopReason::Completed {
            style.dim(&text)
        } else {
            style.yellow(&text)
        }
    }

    /// One live line per running subagent, each within `width` columns.
    pub fn lines(&self, style: Style, width: usize) -> Vec<String> {
        self.running
            .iter()
            .map(|c| {
                let line = format!(
                    "  ⧉ {} {} · {} · {:.0}s",
                    super::far::id(&c.id),
                    c.description,
                    c.activity,
                    c.started.elapsed().as_secs_f64()
                );
                style.dim(
                    &line
                        .chars()
                        .take(width.saturating_sub(1))
                        .collect::<String>(),
                )
            })
            .collect()
    }
}
