//! A session's summary in words, the same for the board and `sessions --watch`: its name,
//! what it does or asks, and how far its run got.

use protocol::{Activity, Group, SessionSummary, TokenUsage};

use crate::format;
use crate::style::one_line;

/// The session's title, or the last part of its directory when it has none.
pub fn name(summary: &SessionSummary) -> String {
    match &summary.info.title {
        Some(title) if !title.trim().is_empty() => one_line(title).into_owned(),
        _ => {
            let cwd = &summary.info.cwd;
            let last = std::path::Path::new(cwd)
                .file_name()
                .map_or(cwd.clone(), |n| n.to_string_lossy().into_owned());
            one_line(&last).into_owned()
        }
    }
}

/// What the session asks, does, or how it ended.
pub fn what(summary: &SessionSummary, now_ms: u64) -> String {
    if let Some(ask) = summary.pending.iter().min_by_key(|p| p.since_ms) {
        let more = match summary.pending.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        let who = ask
            .session
            .as_ref()
            .map(|s| format!("subagent {s} "))
            .unwrap_or_default();
        return format!(
            "{who}asks: {} {}{more}",
            one_line(&ask.tool),
            one_line(&ask.summary)
        );
    }
    match summary.group() {
        Group::Working => {
            let doing = match &summary.activity {
                Activity::Tool { name, detail } if detail.is_empty() => one_line(name).into(),
                Activity::Tool { name, detail } => {
                    format!("{} {}", one_line(name), one_line(detail))
                }
                Activity::Retrying { attempt } => format!("retrying (attempt {attempt})"),
                Activity::Thinking | Activity::Idle => "thinking".to_string(),
            };
            let since = now_ms.saturating_sub(summary.activity_since_ms);
            format!("{doing} · {}", format::duration(since))
        }
        Group::Done | Group::Failed | Group::NeedsYou => {
            match summary.run.as_ref().and_then(|r| r.end.as_ref()) {
                Some(end) => {
                    let why = match &end.error {
                        Some(error) => format!("{}: {}", end.stop_reason, one_line(error)),
                        None => end.stop_reason.to_string(),
                    };
                    format!("{why} · {}", format::ago(end.finished_ms, now_ms))
                }
                None => format!(
                    "no run · {}",
                    format::ago(summary.info.last_activity_ms, now_ms)
                ),
            }
        }
    }
}

/// How far the model's plan got ("plan 3/7"), when it keeps one.
pub fn plan(summary: &SessionSummary) -> Option<String> {
    summary
        .plan
        .map(|plan| format!("plan {}/{}", plan.done, plan.total))
}

/// Its background shells running ("2 shells"), when it has any.
pub fn shells(summary: &SessionSummary) -> Option<String> {
    (summary.shells > 0).then(|| format::count(summary.shells, "shell"))
}

/// The session's model, compactly ("sonnet-4-5" for `claude-sonnet-4-5-20250929`), if known.
pub fn model(summary: &SessionSummary) -> Option<String> {
    summary.info.model.as_deref().map(short_model)
}

/// A model's name without what every name of its family repeats: the path of a local model,
/// the `claude-` prefix and a date suffix.
pub fn short_model(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model);
    let name = name.strip_prefix("claude-").unwrap_or(name);
    let name = match name.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => name,
    };
    one_line(name).into_owned()
}

/// How far the run got: "turn 3 · 12.3k tok · $0.0400 · 2m 10s" (the time for a run going).
pub fn progress(summary: &SessionSummary, now_ms: u64) -> String {
    let Some(run) = &summary.run else {
        return String::new();
    };
    let mut parts = vec![format!("turn {}", run.turn)];
    let tokens = total(&run.usage);
    if tokens > 0 {
        parts.push(format!("{} tok", short(tokens)));
    }
    if let Some(cost) = run.cost_micros {
        parts.push(format::dollars(cost));
    }
    if run.end.is_none() {
        parts.push(format::duration(now_ms.saturating_sub(run.started_ms)));
    }
    parts.join(" · ")
}

/// The heading of a group.
pub fn heading(group: Group) -> &'static str {
    match group {
        Group::NeedsYou => "NEEDS YOU",
        Group::Working => "WORKING",
        Group::Done => "DONE",
        Group::Failed => "FAILED",
    }
}

fn total(usage: &TokenUsage) -> u64 {
    usage.total_input() + usage.output
}

/// "950", "12.3k", "4.1M".
fn short(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}
