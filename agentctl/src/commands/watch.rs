//! `agentctl sessions --watch`: what the board shows, as lines for scripts. Every session
//! once, then a line whenever one changes (`--json`: one JSON object per line).
//!
//! When the daemon goes away (a restart, an upgrade, a crash) the watch waits for it to come
//! back (see `agentctl::client::reconnect`), says so in one line on stderr, and goes on: what
//! changed meanwhile is printed, deleted sessions as removed, and with `--json` a line
//! `{"reconnected": true, "sessions": N}` marks the moment every session is known again.

use std::collections::HashMap;

use agentctl::client::Summaries;
use agentctl::client::paths::Paths;
use protocol::{Activity, SessionId, SessionSummary};
use serde_json::{Value, json};

use super::board::describe;
use crate::{Failure, connect, format};

/// Prints changes until the daemon goes away for good (exit code 1) or the user interrupts.
pub async fn watch(
    paths: &Paths,
    json: bool,
    targets: Vec<Option<crate::hosts::Remote>>,
) -> Result<u8, Failure> {
    const NAME: &str = "sessions --watch";
    let target = targets.into_iter().next().flatten();
    let client = connect::connect_to(target.as_ref(), paths, NAME).await?;
    let feed = Summaries::follow_reconnecting(client, connect::reconnect_to(target, paths, NAME))
        .await
        .map_err(Failure::new)?;
    // What was last printed of each session: a change of nothing shown prints nothing.
    let mut last: HashMap<SessionId, Value> = HashMap::new();
    loop {
        let changes = feed.take();
        for summary in &changes.updated {
            let value = summary_json(summary);
            if last.get(&summary.info.id) == Some(&value) {
                continue;
            }
            if json {
                outln!("{value}");
            } else {
                outln!("{}", line(summary));
            }
            last.insert(summary.info.id.clone(), value);
        }
        for id in &changes.removed {
            last.remove(id);
            if json {
                outln!("{}", json!({"session": id.as_str(), "removed": true}));
            } else {
                outln!("{id} deleted");
            }
        }
        if changes.ready && json {
            outln!("{}", json!({"ready": true, "sessions": last.len()}));
        }
        if changes.reconnected {
            eprintln!("agentctl: the daemon is back; watching every session again");
            if json {
                outln!("{}", json!({"reconnected": true, "sessions": last.len()}));
            }
        }
        if let Some(reason) = changes.closed {
            return Err(Failure::new(format!(
                "lost the daemon{}; run `agentctl sessions --watch` again once it is back",
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )));
        }
        feed.changed().await;
    }
}

/// One line: id, group, name, what it does or asks, how far its run got.
fn line(summary: &SessionSummary) -> String {
    let now = format::now_ms();
    let progress = describe::progress(summary, now);
    let mut line = format!(
        "{} {:<9} {} · {}",
        summary.info.id,
        summary.group().as_str(),
        describe::name(summary),
        describe::what(summary, now)
    );
    if let Some(plan) = describe::plan(summary) {
        line.push_str(&format!(" · {plan}"));
    }
    if !progress.is_empty() {
        line.push_str(&format!(" · {progress}"));
    }
    line
}

/// A session's summary with stable field names; nothing in it changes with the clock.
pub fn summary_json(s: &SessionSummary) -> Value {
    let activity = match &s.activity {
        Activity::Idle => json!({"kind": "idle"}),
        Activity::Thinking => json!({"kind": "thinking"}),
        Activity::Tool { name, detail } => json!({"kind": "tool", "name": name, "detail": detail}),
        Activity::Retrying { attempt } => json!({"kind": "retrying", "attempt": attempt}),
    };
    let run = s.run.as_ref().map(|r| {
        let end = r.end.as_ref();
        json!({
            "run": r.run.0,
            "started_ms": r.started_ms,
            "turn": r.turn,
            "usage": crate::json::Tokens(&r.usage),
            "cost_micros": r.cost_micros,
            "stop_reason": end.map(|e| e.stop_reason.as_str()),
            "error": end.and_then(|e| e.error.clone()),
            "finished_ms": end.map(|e| e.finished_ms),
        })
    });
    let pending: Vec<Value> = s
        .pending
        .iter()
        .map(|p| {
            json!({
                "session": p.session.as_ref().map(|s| s.as_str()),
                "request": p.request.0,
                "tool": p.tool,
                "summary": p.summary,
                "since_ms": p.since_ms,
            })
        })
        .collect();
    json!({
        "session": s.info.id.as_str(),
        "parent": s.info.parent.as_ref().map(|p| p.as_str()),
        "title": s.info.title,
        "cwd": s.info.cwd,
        "model": s.info.model,
        "provider": s.info.provider,
        "state": s.info.state.as_str(),
        "group": s.group().as_str(),
        "activity": activity,
        "activity_since_ms": s.activity_since_ms,
        "run": run,
        "pending": pending,
        "plan": s.plan.map(|p| json!({"done": p.done, "total": p.total})),
    })
}
