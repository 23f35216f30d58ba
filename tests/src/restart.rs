//! Runs that go on in the next daemon: the daemon's own provider environment (a resumed run
//! has no client to give it one), a session's events once its run ended again, and how it
//! was resumed.

use protocol::{Event, ResumeReason, SessionEvent, SessionId};

use crate::model_server::ModelServer;
use crate::{Daemon, subscribe, until_finished};

/// The daemon's own environment pointing at `server`: a resumed run has no client to give it.
pub fn provider_env(server: &ModelServer) -> [(&str, &str); 2] {
    [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "test-key"),
    ]
}

/// Every event of `session` from the start until its run finishes in the daemon now running.
pub async fn after_restart(daemon: &Daemon, session: &SessionId) -> Vec<SessionEvent> {
    let mut client = daemon.client().await;
    subscribe(&client, session, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    until_finished(&mut incoming).await
}

/// Why each resumed run of `events` was resumed, in order.
pub fn resumed(events: &[SessionEvent]) -> Vec<ResumeReason> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::RunResumed { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}
