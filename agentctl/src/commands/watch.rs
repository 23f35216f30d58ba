//! `agentctl sessions --watch`: what the board shows, as lines for scripts. Every session
//! once, then a line whenever one changes (`--json`: one JSON object per line, each naming its
//! `host`: the host's name, or null for this machine's daemon).
//!
//! When the daemon goes away (a restart, an upgrade, a crash) the watch waits for it to come
//! back (see `agentctl::client::reconnect`), says so in one line on stderr, and goes on: what
//! changed meanwhile is printed, deleted sessions as removed, and with `--json` a line
//! `{"reconnected": true, "sessions": N}` marks the moment every session is known again.
//!
//! Across several hosts (docs/architecture.md#another-machine-over-ssh) each host is followed
//! on its own: `{"ready": true}` comes once every host that could be reached summarised its
//! sessions; a host that cannot be reached is a line `{"host": …, "unreachable": reason}`
//! (text: `HOST unreachable · reason; retrying`) and is tried again, for as long as the watch
//! runs; once back, its sessions are printed as they are now, the ones deleted meanwhile as
//! removed, and `{"host": …, "reconnected": true, "sessions": N}` follows.

use std::collections::{HashMap, HashSet};

use agentctl::client::paths::Paths;
use agentctl::client::{Changes, Summaries};
use protocol::{Activity, SessionId, SessionSummary};
use serde_json::{Value, json};

use super::board::describe;
use super::board::feeds::{Feeds, Update};
use crate::{Failure, connect, format};

/// The command's name, for the connections and the messages.
const NAME: &str = "sessions --watch";

/// Prints changes until the daemon goes away for good (exit code 1; with several hosts, never)
/// or the user interrupts.
pub async fn watch(
    paths: &Paths,
    json: bool,
    targets: Vec<Option<crate::hosts::Remote>>,
) -> Result<u8, Failure> {
    let single = targets.len() == 1;
    // Each host's name as the lines give it: null (None) for this machine's daemon.
    let names: Vec<Option<String>> = targets
        .iter()
        .map(|t| t.as_ref().map(|r| r.label.clone()))
        .collect();
    let mut feeds = match targets.as_slice() {
        [target] => {
            let client = connect::connect_to(target.as_ref(), paths, NAME).await?;
            let reconnect = connect::reconnect_to(target.clone(), paths, NAME);
            let feed = Summaries::follow_reconnecting(client, reconnect)
                .await
                .map_err(Failure::new)?;
            Feeds::reached(paths, target.clone(), feed, NAME)
        }
        _ => Feeds::open(paths, targets, NAME),
    };
    let mut out = Printer {
        json,
        names,
        single,
        width: (0..feeds.len())
            .map(|i| feeds.label(i).chars().count())
            .max()
            .unwrap_or(0),
        labels: (0..feeds.len()).map(|i| feeds.label(i)).collect(),
        last: HashMap::new(),
        hosts: vec![HostWatch::default(); feeds.len()],
        told_ready: false,
    };
    loop {
        for (host, update) in feeds.next().await {
            match update {
                Update::Up => {}
                Update::Unreachable(reason) => out.unreachable(host, reason),
                Update::Changes(changes) => out.changes(host, changes)?,
            }
        }
        out.ready_once();
    }
}

/// What the watch knows of one host.
#[derive(Debug, Default, Clone)]
struct HostWatch {
    /// It summarised every session, or could not be reached: the first `ready` may come.
    heard: bool,
    /// Why it cannot be reached, as last printed.
    down: Option<String>,
    /// After it was lost: the sessions summarised since it is back, until it is ready.
    resyncing: Option<HashSet<SessionId>>,
}

/// Prints the lines of the watch.
struct Printer {
    /// One JSON object per line, not text.
    json: bool,
    /// Each host's name in the JSON (null for this machine's daemon).
    names: Vec<Option<String>>,
    /// Each host's name in the text lines.
    labels: Vec<String>,
    /// The widest name, for the text lines' host column.
    width: usize,
    /// One host, as without hosts: text lines name none, and losing it ends the watch.
    single: bool,
    /// What was last printed of each session: a change of nothing shown prints nothing.
    last: HashMap<(usize, SessionId), Value>,
    /// What is known of each host.
    hosts: Vec<HostWatch>,
    /// The `ready` line was printed.
    told_ready: bool,
}

impl Printer {
    /// Host number `host` could not be reached: said once for each new reason.
    fn unreachable(&mut self, host: usize, reason: String) {
        // What the far end said is shown, not obeyed.
        let reason = agentctl::client::one_line(&reason, 300);
        let state = &mut self.hosts[host];
        state.heard = true;
        if state.down.as_ref() == Some(&reason) {
            return;
        }
        if self.last.keys().any(|(h, _)| *h == host) && state.resyncing.is_none() {
            state.resyncing = Some(HashSet::new());
        }
        if self.json {
            outln!(
                "{}",
                json!({"host": self.names[host], "unreachable": reason.as_str()})
            );
        } else {
            outln!("{}unreachable · {reason}; retrying", self.host_column(host));
        }
        self.hosts[host].down = Some(reason);
    }

    /// What changed on host number `host`; `Err` when the only host is lost for good.
    fn changes(&mut self, host: usize, changes: Changes) -> Result<(), Failure> {
        for summary in &changes.updated {
            if let Some(seen) = &mut self.hosts[host].resyncing {
                seen.insert(summary.info.id.clone());
            }
            let mut value = summary_json(summary);
            value["host"] = json!(self.names[host]);
            let key = (host, summary.info.id.clone());
            if self.last.get(&key) == Some(&value) {
                continue;
            }
            if self.json {
                outln!("{value}");
            } else {
                outln!("{}{}", self.host_column(host), line(summary));
            }
            self.last.insert(key, value);
        }
        for id in &changes.removed {
            self.removed(host, id);
        }
        if changes.ready {
            self.hosts[host].heard = true;
            self.back(host);
        }
        if changes.reconnected {
            match self.single {
                true => eprintln!("agentctl: the daemon is back; watching every session again"),
                false => eprintln!(
                    "agentctl: {} is back; watching its sessions again",
                    self.labels[host]
                ),
            }
            self.say_reconnected(host);
        }
        if let Some(reason) = changes.closed {
            if self.single {
                return Err(Failure::new(format!(
                    "lost the daemon{}; run `agentctl sessions --watch` again once it is back",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                )));
            }
            let reason = reason.unwrap_or_else(|| "the link closed".to_string());
            self.unreachable(host, reason);
        }
        Ok(())
    }

    /// Host number `host` summarised every session: when it was lost before, the sessions
    /// not seen since are printed as removed, and that it is back.
    fn back(&mut self, host: usize) {
        let Some(seen) = self.hosts[host].resyncing.take() else {
            self.hosts[host].down = None;
            return;
        };
        let gone: Vec<SessionId> = self
            .last
            .keys()
            .filter(|(h, id)| *h == host && !seen.contains(id))
            .map(|(_, id)| id.clone())
            .collect();
        for id in &gone {
            self.removed(host, id);
        }
        self.hosts[host].down = None;
        if !self.single {
            eprintln!("agentctl: {} is back", self.labels[host]);
        }
        self.say_reconnected(host);
    }

    /// With `--json`, the line that says host number `host` is known again.
    fn say_reconnected(&self, host: usize) {
        if self.json {
            let sessions = self.last.keys().filter(|(h, _)| *h == host).count();
            outln!(
                "{}",
                json!({"host": self.names[host], "reconnected": true, "sessions": sessions})
            );
        }
    }

    /// Session `id` of host number `host` was deleted.
    fn removed(&mut self, host: usize, id: &SessionId) {
        self.last.remove(&(host, id.clone()));
        if self.json {
            outln!(
                "{}",
                json!({"session": id.as_str(), "removed": true, "host": self.names[host]})
            );
        } else {
            outln!("{}{id} deleted", self.host_column(host));
        }
    }

    /// Prints the `ready` line once every host was heard from.
    fn ready_once(&mut self) {
        if self.told_ready || !self.hosts.iter().all(|h| h.heard) {
            return;
        }
        self.told_ready = true;
        if self.json {
            outln!("{}", json!({"ready": true, "sessions": self.last.len()}));
        }
    }

    /// The host's name and a space, padded to the widest, in text lines of several hosts.
    fn host_column(&self, host: usize) -> String {
        match self.single {
            true => String::new(),
            false => format!("{:<width$} ", self.labels[host], width = self.width),
        }
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
