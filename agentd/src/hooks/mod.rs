//! Hooks (docs/architecture.md#hooks): commands from the user's configuration that run at points of
//! a session's life (a tool call, a prompt, the end of a run) with a JSON description on stdin, in
//! Claude Code's field names so existing scripts work, and whose exit code and JSON output can
//! refuse, allow, change or add to what happens.

pub(crate) mod chain;
pub(crate) mod config;
pub(crate) mod output;
pub(crate) mod process;

pub(crate) use config::{Hook, HookEvent, HookTable, OnError, hooks_for};

/// Runs the SessionEnd hooks of deleted session `session` in the background (nobody is left to
/// show them to), in `cwd`, with `env` (the daemon's, filtered) and `AGENTD_SESSION_ID`.
pub(crate) fn session_end(
    table: &HookTable,
    session: &str,
    cwd: &std::path::Path,
    mode: protocol::Mode,
    mut env: Vec<(String, String)>,
) {
    let hooks: Vec<Hook> = hooks_for(table, HookEvent::SessionEnd, None)
        .cloned()
        .collect();
    if hooks.is_empty() {
        return;
    }
    env.push(("AGENTD_SESSION_ID".to_string(), session.to_string()));
    let (session, cwd) = (session.to_string(), cwd.to_path_buf());
    tokio::spawn(async move {
        let chain = chain::Chain {
            hooks,
            event: HookEvent::SessionEnd,
            session: &session,
            transcript: None,
            mode: Some(mode),
            cwd: &cwd,
            env: &env,
            cancel: &tokio_util::sync::CancellationToken::new(),
        };
        let mut fields = serde_json::Map::new();
        fields.insert("reason".to_string(), serde_json::json!("delete"));
        chain::run_chain(chain, fields, |_| {}).await;
    });
}
