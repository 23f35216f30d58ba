//! What a daemon killed without warning leaves behind is cleaned up by the next one: the
//! commands it was running are killed, and clients reach the new daemon at once.

use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, run_options, session_in, start_run};

#[tokio::test]
async fn commands_left_running_by_a_killed_daemon_are_killed_on_restart() {
    let project = tempfile::tempdir().unwrap();
    let started = project.path().join("started");
    tests::make_fifo(&started);
    let server = ModelServer::start(vec![anthropic::tool(
        "bash",
        json!({"command": "sleep 600 & echo $$ > started; wait"}),
    )])
    .await;
    let mut daemon = Daemon::start();
    let (client, session, _incoming) = session_in(&daemon, project.path()).await;
    start_run(
        &client,
        &session,
        "run something long",
        run_options(&server),
    )
    .await;
    let pgid = tests::read_fifo(&started).await;
    daemon.kill();
    assert!(
        tests::live_members(pgid),
        "the command outlives the killed daemon"
    );
    // The new daemon kills them before it says it is ready.
    daemon.restart();
    assert!(tests::group_is_gone(pgid).await, "group {pgid} still runs");
}
