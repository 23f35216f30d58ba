//! The supervisor on its own: a daemon that is stopping never loads a session again.

use kameo::prelude::*;
use protocol::{CreateSession, SessionId};

use super::{Create, IfLoaded, Lookup, StopAll, Supervisor, SupervisorArgs};
use crate::config::ConfigState;

async fn supervisor(home: &std::path::Path) -> ActorRef<Supervisor> {
    let paths = protocol::local::paths::Paths {
        config_dir: home.join("config"),
        data_dir: home.join("data"),
        socket: home.join("agentd.sock"),
    };
    let (_, config) = tokio::sync::watch::channel(ConfigState::load(&paths.config_file()));
    let http = reqwest::Client::new();
    let mcp = crate::mcp::McpHub::new(
        http.clone(),
        crate::tools::processes::ProcessRecords::in_dir(paths.commands_dir()),
        config.clone(),
    );
    let lsp = {
        let config = config.clone();
        crate::lsp::LspHub::new(
            crate::tools::processes::ProcessRecords::default(),
            std::sync::Arc::new(move || config.borrow().config.lsp.clone()),
            crate::lsp::confine::ServerSandbox::new(
                &paths,
                std::sync::Arc::new(crate::sandbox::config::SandboxConfig::default),
            ),
        )
    };
    Supervisor::spawn(SupervisorArgs {
        paths,
        config,
        http,
        mcp,
        lsp,
        stop: crate::stop::PlannedStop::new(),
    })
}

#[tokio::test]
async fn a_stopping_daemon_does_not_load_a_session_it_stopped() {
    let home = tempfile::tempdir().unwrap();
    let supervisor = supervisor(home.path()).await;
    let info = supervisor
        .ask(Create(
            CreateSession::in_dir(home.path().to_string_lossy().into_owned()),
            None,
        ))
        .await
        .unwrap();
    let id: SessionId = info.id;
    let loaded = supervisor.ask(Lookup(id.clone())).await.unwrap();
    assert!(
        supervisor
            .ask(IfLoaded(id.clone()))
            .await
            .unwrap()
            .is_some()
    );

    let (actors, _) = supervisor.ask(StopAll).await.unwrap();
    assert_eq!(actors.len(), 1);
    loaded.stop_gracefully().await.unwrap();
    loaded.wait_for_shutdown().await;

    // A client that leaves now finds nothing to unsubscribe from, and nothing loads it again.
    assert!(
        supervisor
            .ask(IfLoaded(id.clone()))
            .await
            .unwrap()
            .is_none()
    );
    let again = supervisor.ask(Lookup(id)).await;
    let Err(SendError::HandlerError(err)) = again else {
        panic!("a stopping daemon loaded a session again");
    };
    assert!(err.message.contains("stopping"), "{}", err.message);
}
