//! What the board's keys do to a session, on the host the session lives on: answer its
//! request, cancel its run, steer it, delete it, attach the chat view to it.

use agentctl::client::paths::Paths;
use protocol::{Decision, Delivery, Group, Reply, Request, RunOptions};

use super::arrange::Key;
use super::feeds::Feeds;
use super::model::Board;
use super::ui::Action;
use crate::Failure;
use crate::hosts::Remote;

/// Does what a key asked for; returns what to tell the user.
pub async fn act(feeds: &Feeds, board: &mut Board, action: Action) -> Option<String> {
    let selected = board.selected().cloned();
    let (host, request, done) = match action {
        Action::None | Action::Quit | Action::Attach => return None,
        Action::Move(by) => {
            board.move_selection(by);
            return None;
        }
        Action::Filter(text) => {
            board.filter = text;
            board.arrange();
            return None;
        }
        Action::Answer(decision) => match board.answerable() {
            None => return Some("nothing to answer in this session".to_string()),
            // A key typed before the question showed is not its answer.
            Some(Err(_)) => return Some("a new request just came: look, then answer".to_string()),
            Some(Ok((asker, ask))) => (
                asker.host,
                Request::Answer {
                    session: asker.id,
                    request: ask.request,
                    decision,
                },
                format!("{}: {} {}", answered(decision), ask.tool, ask.summary),
            ),
        },
        Action::Cancel => {
            let key = selected?;
            let going = board
                .summary(&key)
                .is_some_and(|s| matches!(s.group(), Group::Working | Group::NeedsYou));
            if !going {
                return Some(format!("nothing is running in {}", key.id));
            }
            let done = format!("cancelled the run of {}", key.id);
            (key.host, Request::Cancel { session: key.id }, done)
        }
        Action::Steer(key, text) => {
            let done = format!("steered {}", key.id);
            let options = RunOptions {
                env: steer_env(feeds.target(key.host)),
                ..RunOptions::default()
            };
            let request = Request::Send {
                session: key.id,
                text,
                images: Vec::new(),
                delivery: Delivery::Steer,
                options,
            };
            (key.host, request, done)
        }
        Action::Delete(key) => {
            let done = format!("deleted {}", key.id);
            let request = Request::DeleteSession {
                session: key.id,
                force: false,
            };
            (key.host, request, done)
        }
    };
    let Some(client) = feeds.client(host) else {
        return Some(format!(
            "{} cannot be reached now; try again once it is back",
            board.label(host)
        ));
    };
    let done = match board.several_hosts() {
        true => format!("{}: {done}", board.label(host)),
        false => done,
    };
    Some(match client.request(request).await {
        Ok(Reply::Done | Reply::Sent { .. } | Reply::Deleted { .. }) => done,
        Ok(other) => format!("unexpected answer: {other:?}"),
        Err(err) => err.to_string(),
    })
}

/// The provider keys a steering message carries: to this machine's daemon (or the one host
/// this process talks to) what a run sends; to another host of the board only with
/// `--forward-keys` or the host's `forward_keys`, else none (its own keys apply).
fn steer_env(target: Option<&Remote>) -> Vec<(String, String)> {
    if is_this_process_host(target) {
        return super::super::run::provider_env();
    }
    match target {
        Some(remote) if remote.forward_keys => std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| crate::connect::is_provider_var(k))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `target` is the daemon every connection of this process reaches by itself (this
/// machine's, or the one `--host`).
fn is_this_process_host(target: Option<&Remote>) -> bool {
    crate::connect::remote_host().map(|r| &r.label) == target.map(|r| &r.label)
}

/// The chat view on session `key`, in this process, until the user leaves it (the board of
/// one host: this process talks to it).
pub async fn attach_here(paths: &Paths, key: &Key) -> Result<(), Failure> {
    let args = super::super::chat::ChatArgs::attach(key.id.0.clone());
    super::super::chat::chat(paths, args).await.map(|_| ())
}

/// The chat view on session `key` of the host at `target` (`None`: this machine's daemon), in
/// a child `agentctl [--host LABEL] attach ID` that has the terminal and the real stderr
/// until the user leaves it; the board's other hosts go on meanwhile.
pub async fn attach_child(target: Option<&Remote>, key: &Key, color: bool) -> Result<(), Failure> {
    let me = std::env::current_exe()
        .map_err(|err| Failure::new(format!("cannot find this agentctl to attach: {err}")))?;
    let mut child = tokio::process::Command::new(me);
    child
        .env_remove("AGENTCTL_HOST")
        .args(["--color", if color { "always" } else { "never" }]);
    if let Some(remote) = target {
        if remote.forward_keys {
            child.arg("--forward-keys");
        }
        child.args(["--host", &remote.label]);
    }
    child.args(["attach", key.id.as_str()]).kill_on_drop(true);
    if let Some(stderr) = super::stderr::real() {
        child.stderr(stderr);
    }
    let status = child
        .status()
        .await
        .map_err(|err| Failure::new(format!("cannot start agentctl to attach: {err}")))?;
    match status.code() {
        Some(0) => Ok(()),
        code => Err(Failure::new(format!(
            "the chat with {} on {} ended with {}",
            key.id,
            target.map_or(super::feeds::LOCAL, |r| r.label.as_str()),
            code.map_or("a signal".to_string(), |c| format!("exit code {c}"))
        ))),
    }
}

/// How an answer is told on the bottom line.
fn answered(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allowed",
        Decision::AllowAlways => "always allowed",
        Decision::Deny => "denied",
    }
}
