//! Sessions in memory follow what is live (docs/architecture.md#state-on-disk): a session loads in
//! its own actor when a client asks for it (the supervisor does not wait: the caller waits for the
//! load), and an idle one (no run, no subscriber, no request for `session_idle_unload_secs`) is
//! unloaded; at most `max_loaded_sessions` idle sessions stay loaded, the least recently used go
//! first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kameo::prelude::*;
use kameo::supervision::RestartPolicy;
use protocol::{ErrorCode, ErrorInfo, SessionId};

use super::{Supervisor, unknown_session};
use crate::session::actor::TryUnload;
use crate::session::{SessionActor, SessionArgs};

/// How often idle sessions are looked for, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// How often idle sessions are looked for, at least.
const MIN_SWEEP: Duration = Duration::from_millis(100);
/// How long an idle check may take before the session counts as busy.
const UNLOAD_TIMEOUT: Duration = Duration::from_secs(1);

/// Starts the task that asks the supervisor to look for idle sessions now and then: every
/// 30 s, or twice per `session_idle_unload_secs` when that is shorter.
pub(super) fn start_sweeping(
    supervisor: &ActorRef<Supervisor>,
    config: tokio::sync::watch::Receiver<crate::config::ConfigState>,
) {
    let supervisor = supervisor.downgrade();
    tokio::spawn(async move {
        loop {
            let idle = config.borrow().config.session_idle_unload_secs;
            let every =
                SWEEP_EVERY.min(Duration::from_millis(idle.saturating_mul(500)).max(MIN_SWEEP));
            tokio::time::sleep(every).await;
            let Some(supervisor) = supervisor.upgrade() else {
                return;
            };
            if supervisor.tell(Sweep).await.is_err() {
                return;
            }
        }
    });
}

impl Supervisor {
    /// The actor of session `id`, started (loading the session in its own task) if the
    /// session is not loaded. The caller waits for the load, not the supervisor.
    async fn actor_of(&mut self, id: &SessionId) -> Result<ActorRef<SessionActor>, ErrorInfo> {
        let entry = self
            .sessions
            .get_mut(id)
            .ok_or_else(|| unknown_session(id))?;
        entry.last_used = Instant::now();
        if let Some(actor) = &entry.actor
            && actor.is_alive()
        {
            return Ok(actor.clone());
        }
        if self.stopping {
            return Err(ErrorInfo::new(
                ErrorCode::Internal,
                "the daemon is stopping; try again once it has restarted",
            ));
        }
        let args = SessionArgs {
            meta: entry.meta.clone(),
            listing: entry.info.clone(),
            env: self.env.clone(),
            restarted: false,
        };
        // The first start loads the session; a restart after a failure reloads it and says so.
        let starts = AtomicU64::new(0);
        let actor = SessionActor::supervise_with(&self.me, move || SessionArgs {
            restarted: starts.fetch_add(1, Ordering::Relaxed) > 0,
            ..args.clone()
        })
        .restart_policy(RestartPolicy::Transient)
        .restart_limit(5, Duration::from_secs(60))
        // Unbounded, so that the run task and the supervisor never wait on a busy session.
        .spawn_with_mailbox(kameo::mailbox::unbounded())
        .await;
        if let Some(entry) = self.sessions.get_mut(id) {
            entry.actor = Some(actor.clone());
        }
        // One more loaded session may be one too many.
        let loaded = self.sessions.values().filter(|e| e.actor.is_some()).count();
        if loaded > self.env.config().max_loaded_sessions {
            let _ = self.me.tell(Sweep).try_send();
        }
        Ok(actor)
    }
}

/// Find the actor of a session (by id or unambiguous prefix), loaded.
pub(crate) struct Lookup(pub SessionId);

impl Message<Lookup> for Supervisor {
    type Reply = DelegatedReply<Result<ActorRef<SessionActor>, ErrorInfo>>;

    async fn handle(&mut self, msg: Lookup, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let actor = match self
            .resolve(&msg.0)
            .map(|entry| entry.info.with(|i| i.id.clone()))
        {
            Ok(id) => self.actor_of(&id).await,
            Err(err) => Err(err),
        };
        let actor = match actor {
            Ok(actor) => actor,
            Err(err) => return ctx.reply(Err(err)),
        };
        let id = msg.0;
        ctx.spawn(async move {
            match actor.wait_for_startup_result().await {
                Ok(()) => Ok(actor),
                Err(err) => Err(ErrorInfo::new(
                    ErrorCode::Internal,
                    format!("session {id} cannot be loaded: {err}"),
                )),
            }
        })
    }
}

/// The actor of session `id` if it is loaded; never loads it (for clean-up that has nothing
/// to do in a session that is not in memory).
pub(crate) struct IfLoaded(pub SessionId);

impl Message<IfLoaded> for Supervisor {
    type Reply = Option<ActorRef<SessionActor>>;

    async fn handle(&mut self, msg: IfLoaded, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.sessions
            .get(&msg.0)
            .and_then(|entry| entry.actor.clone())
            .filter(|actor| actor.is_alive())
    }
}

/// Unload idle sessions: those unused for `session_idle_unload_secs`, and beyond the
/// `max_loaded_sessions` most recently used.
pub(crate) struct Sweep;

impl Message<Sweep> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, _: Sweep, _: &mut Context<Self, Self::Reply>) {
        let config = self.env.config();
        let idle_limit = Duration::from_secs(config.session_idle_unload_secs);
        let keep = config.max_loaded_sessions;
        let mut loaded: Vec<(Instant, ActorRef<SessionActor>)> = self
            .sessions
            .values()
            .filter_map(|e| e.actor.clone().map(|a| (e.last_used, a)))
            .filter(|(_, a)| a.is_alive())
            .collect();
        // Newest first: the first `keep` may stay unless they have been idle too long.
        loaded.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
        let candidates: Vec<ActorRef<SessionActor>> = loaded
            .into_iter()
            .enumerate()
            .filter(|(i, (used, _))| *i >= keep || used.elapsed() >= idle_limit)
            .map(|(_, (_, actor))| actor)
            .collect();
        if candidates.is_empty() {
            return;
        }
        // Each session decides for itself whether it is idle; the supervisor does not wait.
        tokio::spawn(async move {
            let mut unloaded = 0;
            for actor in candidates {
                if let Ok(Ok(true)) =
                    tokio::time::timeout(UNLOAD_TIMEOUT, actor.ask(TryUnload)).await
                {
                    unloaded += 1;
                }
            }
            if unloaded > 0 {
                tracing::debug!(sessions = unloaded, "unloaded idle sessions");
            }
        });
    }
}

/// Load these sessions now: their runs were going when the last daemon stopped.
pub(crate) struct LoadInterrupted(pub Vec<SessionId>);

impl Message<LoadInterrupted> for Supervisor {
    type Reply = ();

    async fn handle(&mut self, msg: LoadInterrupted, _: &mut Context<Self, Self::Reply>) {
        for id in msg.0 {
            if let Err(err) = self.actor_of(&id).await {
                tracing::error!(session = %id, "cannot load a session whose run was interrupted: {}", err.message);
            }
        }
    }
}
