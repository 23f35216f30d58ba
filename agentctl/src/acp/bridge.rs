//! The link between one editor and the daemon: the daemon sessions the editor opened, the
//! prompts waiting for their run to end, and the permission requests shown in the editor. It
//! holds nothing that outlives the connection: the sessions live in the daemon.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId as AcpSessionId, SessionNotification, SessionUpdate,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client as Editor, Error, RequestCancellationHandle, v1};
use agentctl::client::{Client as Daemon, Follower};
use protocol::{
    Decision, ErrorCode, Event, PermissionRequestId, Request, SessionEvent, SessionId, ToolCallInfo,
};
use tokio::sync::oneshot;

use super::updates;

mod pump;

/// What the adapter keeps for one daemon session the editor opened.
#[derive(Default)]
struct Watched {
    /// The session directory, for paths in tool calls.
    cwd: PathBuf,
    /// Told when the replay is over.
    replayed: Option<oneshot::Sender<()>>,
    /// Prompts of this editor waiting for the run they joined to end.
    prompts: VecDeque<Prompt>,
    /// Whether the reply being received was streamed (its whole text is then not sent again).
    streamed: bool,
    /// Calls announced and not answered yet.
    calls: HashMap<String, ToolCallInfo>,
    /// Permission requests shown in the editor (by the subagent that asks, if one does), to
    /// withdraw when answered elsewhere.
    asks: HashMap<(Option<SessionId>, PermissionRequestId), RequestCancellationHandle>,
    /// The `task` call of each subagent, whose updates carry the subagent's progress.
    children: HashMap<SessionId, String>,
    /// Permission requests met in the replay, shown once it is over unless answered in it.
    deferred: Vec<Ask>,
}

/// A prompt of this editor, waiting for the run it joins to end.
struct Prompt {
    /// Its text, to recognise it when the daemon echoes it.
    text: String,
    /// Whether it entered a run's history (only then does that run's end answer it).
    delivered: bool,
    responder: v1::Responder<PromptResponse>,
}

/// A permission request to show in the editor.
struct Ask {
    /// The subagent that asks, when it is not the session itself.
    session: Option<SessionId>,
    request: PermissionRequestId,
    tool: String,
    args: String,
    summary: String,
}

/// The editor's daemon sessions; shared by every handler.
pub struct Bridge {
    /// Follows the daemon sessions the editor opened.
    pub follower: Follower,
    sessions: Mutex<HashMap<SessionId, Watched>>,
}

impl Bridge {
    /// A bridge over the feed whose sessions `follower` follows.
    pub fn new(follower: Follower) -> Bridge {
        Bridge {
            follower,
            sessions: Mutex::default(),
        }
    }

    /// The daemon connection now (a new one after the daemon came back).
    pub fn daemon(&self) -> Arc<Daemon> {
        self.follower.client()
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Watched>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the editor opened `session`.
    pub fn watches(&self, session: &SessionId) -> bool {
        self.sessions().contains_key(session)
    }

    /// Starts following `session` (before subscribing, so that no event is missed); the
    /// receiver is told when its history has been replayed.
    pub fn watch(&self, session: &SessionId, cwd: PathBuf) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.sessions().insert(
            session.clone(),
            Watched {
                cwd,
                replayed: Some(tx),
                ..Watched::default()
            },
        );
        rx
    }

    /// The subscription says where the session works.
    pub fn set_cwd(&self, session: &SessionId, cwd: PathBuf) {
        if let Some(watched) = self.sessions().get_mut(session) {
            watched.cwd = cwd;
        }
    }

    /// Ends `session`'s replay: the daemon said so.
    pub fn end_replay_now(&self, cx: &v1::ConnectionTo<Editor>, session: &SessionId) {
        let mut sessions = self.sessions();
        if let Some(watched) = sessions.get_mut(session) {
            self.end_replay(cx, session, watched);
        }
    }

    /// Stops following `session`.
    pub fn forget(&self, session: &SessionId) {
        self.sessions().remove(session);
    }

    /// Queues `responder` to be answered when the run `text` joins ends; gives it back when
    /// the editor has not opened `session`.
    pub fn await_run(
        &self,
        session: &SessionId,
        text: &str,
        responder: v1::Responder<PromptResponse>,
    ) -> Option<v1::Responder<PromptResponse>> {
        match self.sessions().get_mut(session) {
            Some(watched) => {
                watched.prompts.push_back(Prompt {
                    text: text.to_string(),
                    delivered: false,
                    responder,
                });
                None
            }
            None => Some(responder),
        }
    }

    /// Takes back the newest queued prompt of `session` (its message did not reach the daemon).
    pub fn take_last_prompt(&self, session: &SessionId) -> Option<v1::Responder<PromptResponse>> {
        let mut sessions = self.sessions();
        let watched = sessions.get_mut(session)?;
        watched.prompts.pop_back().map(|p| p.responder)
    }

    /// Passes on one event of a session the editor opened; `images` are the image blocks of a
    /// user message, shown after its text when it is not the editor's own prompt.
    fn event(
        &self,
        cx: &v1::ConnectionTo<Editor>,
        event: SessionEvent,
        replay: bool,
        images: Vec<SessionUpdate>,
    ) {
        let SessionEvent { session, event, .. } = event;
        let acp_session = AcpSessionId::new(session.as_str().to_string());
        let mut sessions = self.sessions();
        let Some(watched) = sessions.get_mut(&session) else {
            return;
        };
        let mut out: Vec<SessionUpdate> = Vec::new();
        let mut asks: Vec<Ask> = Vec::new();
        let mut deleted = false;
        match event {
            Event::UserMessage { text, .. } => {
                // The editor's own prompt is not echoed back; it is now part of a run.
                let own = watched
                    .prompts
                    .iter_mut()
                    .find(|p| !p.delivered && p.text == text);
                if let (false, Some(prompt)) = (replay, own) {
                    prompt.delivered = true;
                } else {
                    out.push(updates::text_chunk(SessionUpdate::UserMessageChunk, &text));
                    out.extend(images);
                }
            }
            Event::TextDelta { text } => {
                watched.streamed = true;
                out.push(updates::text_chunk(SessionUpdate::AgentMessageChunk, &text));
            }
            Event::ThinkingDelta { text } => {
                watched.streamed = true;
                out.push(updates::text_chunk(SessionUpdate::AgentThoughtChunk, &text));
            }
            Event::AssistantMessage { text, thinking, .. } => {
                if !watched.streamed {
                    if !thinking.is_empty() {
                        out.push(updates::text_chunk(
                            SessionUpdate::AgentThoughtChunk,
                            &thinking,
                        ));
                    }
                    if !text.is_empty() {
                        out.push(updates::text_chunk(SessionUpdate::AgentMessageChunk, &text));
                    }
                }
                watched.streamed = false;
            }
            Event::ToolCall(call) => {
                out.push(updates::tool_call(&call, &watched.cwd));
                watched.calls.insert(call.id.clone(), call);
            }
            Event::ToolResult {
                id,
                is_error,
                output,
                ..
            } => {
                let call = watched.calls.remove(&id);
                out.push(updates::tool_result(
                    &id,
                    is_error,
                    &output,
                    call.as_ref(),
                    &watched.cwd,
                ));
            }
            Event::PermissionRequested {
                session: asker,
                request,
                tool,
                args,
                summary,
            } => {
                let ask = Ask {
                    session: asker,
                    request,
                    tool,
                    args,
                    summary,
                };
                if replay {
                    watched.deferred.push(ask);
                } else {
                    asks.push(ask);
                }
            }
            Event::PermissionResolved {
                session: asker,
                request,
                ..
            } => {
                watched
                    .deferred
                    .retain(|a| a.request != request || a.session != asker);
                // Answered elsewhere (or here): the editor's request is withdrawn.
                if let Some(handle) = watched.asks.remove(&(asker, request)) {
                    let _ = handle.cancel();
                }
            }
            Event::SubagentStarted {
                call,
                child,
                description,
                agent,
                ..
            } => {
                let text = format!("subagent {child} ({agent}) started: {description}");
                out.push(updates::progress(&call, &text));
                watched.children.insert(child, call);
            }
            Event::SubagentActivity { child, activity } => {
                if let Some(call) = watched.children.get(&child) {
                    let text = format!("subagent {child}: {activity}");
                    out.push(updates::progress(call, &text));
                }
            }
            Event::SubagentFinished {
                child, stop_reason, ..
            } => {
                if let Some(call) = watched.children.remove(&child) {
                    let text = format!("subagent {child}: {}", stop_reason.as_str());
                    out.push(updates::progress(&call, &text));
                }
            }
            Event::PlanUpdated { items } => out.push(updates::plan(&items)),
            Event::ModeChanged { mode } => {
                let current = updates::modes(mode).current_mode_id;
                out.push(SessionUpdate::CurrentModeUpdate(
                    agent_client_protocol::v1::schema::CurrentModeUpdate::new(current),
                ));
            }
            Event::RunFinished {
                stop_reason,
                truncated,
                error,
                returned_messages,
                nothing_changed,
                ..
            } if !replay => {
                out.extend(nothing_changed.then(updates::nothing_changed));
                let answer = updates::stop_reason(stop_reason, truncated, error.as_deref());
                // The prompts this run took, or gave back unread; one still on its way to the
                // daemon belongs to the next run.
                let mut returned: Vec<String> =
                    returned_messages.into_iter().map(|m| m.text).collect();
                let (done, waiting): (Vec<Prompt>, Vec<Prompt>) =
                    watched.prompts.drain(..).partition(|p| {
                        p.delivered
                            || returned
                                .iter()
                                .position(|t| *t == p.text)
                                .map(|i| returned.remove(i))
                                .is_some()
                    });
                watched.prompts = waiting.into();
                for prompt in done {
                    let prompt = prompt.responder;
                    let _ = match &answer {
                        Ok(stop) => prompt.respond(PromptResponse::new(*stop)),
                        // The run's own message, where editors show it.
                        Err(message) => prompt.respond_with_error(Error::new(
                            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                            message.clone(),
                        )),
                    };
                }
            }
            Event::RunResumed { run, reason } => {
                let text = format!("(run {run} goes on after a daemon {reason})\n");
                out.push(updates::text_chunk(SessionUpdate::AgentThoughtChunk, &text));
            }
            Event::SessionDeleted => {
                deleted = true;
                for prompt in watched.prompts.drain(..) {
                    let _ = prompt.responder.respond_with_error(
                        Error::invalid_params().data("the session was deleted"),
                    );
                }
            }
            _ => {}
        }
        for update in out {
            if cx
                .send_notification(SessionNotification::new(acp_session.clone(), update))
                .is_err()
            {
                return;
            }
        }
        for ask in asks {
            self.show(cx, &session, watched, ask);
        }
        if deleted {
            sessions.remove(&session);
        }
    }

    /// The replay is over: whoever waits for it is told, and the requests still pending in it
    /// are shown.
    fn end_replay(
        &self,
        cx: &v1::ConnectionTo<Editor>,
        session: &SessionId,
        watched: &mut Watched,
    ) {
        if let Some(done) = watched.replayed.take() {
            let _ = done.send(());
        }
        for ask in std::mem::take(&mut watched.deferred) {
            self.show(cx, session, watched, ask);
        }
    }

    /// Shows a permission request in the editor; its answer goes to the daemon.
    fn show(
        &self,
        cx: &v1::ConnectionTo<Editor>,
        session: &SessionId,
        watched: &mut Watched,
        ask: Ask,
    ) {
        // The request is for a call already announced: the one with this tool and arguments
        // (a subagent's calls are not announced here: its request stands alone).
        let call_id = watched
            .calls
            .values()
            .find(|c| ask.session.is_none() && c.name == ask.tool && c.args == ask.args)
            .map_or_else(
                || match &ask.session {
                    Some(child) => format!("{child}-permission-{}", ask.request.0),
                    None => format!("permission-{}", ask.request.0),
                },
                |c| c.id.clone(),
            );
        let fields = ToolCallUpdateFields::new()
            .title(ask.summary.clone())
            .raw_input(serde_json::from_str::<serde_json::Value>(&ask.args).ok());
        let options = vec![
            PermissionOption::new("allow", "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new("always", "Allow always", PermissionOptionKind::AllowAlways),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(
            AcpSessionId::new(session.as_str().to_string()),
            ToolCallUpdate::new(call_id, fields),
            options,
        );
        let sent = cx.send_request(request);
        watched.asks.insert(
            (ask.session.clone(), ask.request),
            sent.cancellation_handle(),
        );
        // A subagent's request is answered in the subagent's session.
        let asker = ask.session.clone().unwrap_or_else(|| session.clone());
        let (daemon, session, request) = (self.follower.clone(), asker, ask.request);
        let task = async move {
            let decision = match sent.block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                        "allow" => Decision::Allow,
                        "always" => Decision::AllowAlways,
                        _ => Decision::Deny,
                    },
                    // Withdrawn, or the editor gave up: another client may still answer.
                    _ => return Ok(()),
                },
                Err(_) => return Ok(()),
            };
            let answer = Request::Answer {
                session,
                request,
                decision,
            };
            match daemon.client().request(answer).await {
                Ok(_) => {}
                Err(err) if err.code() == Some(ErrorCode::AlreadyDecided) => {}
                Err(err) => eprintln!("agentctl acp: cannot answer a permission request: {err}"),
            }
            Ok(())
        };
        if let Err(err) = cx.spawn(task) {
            eprintln!("agentctl acp: {err}");
        }
    }
}
