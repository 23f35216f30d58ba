//! Background shells as the tests watch them: a `bash` call that starts one, the pid its
//! command wrote, whether a process still runs, a session's shells and the shell events of a
//! run.

use std::path::Path;
use std::time::Duration;

use agentctl::client::Client;
use protocol::{Event, Reply, Request, SessionEvent, SessionId, ShellEnd, ShellInfo};
use serde_json::json;

use crate::WAIT;

/// The arguments of a `bash` call that starts `command` in the background.
pub fn background(command: &str) -> serde_json::Value {
    json!({"command": command, "background": true})
}

/// The number a command wrote into `file` in `project`, once it is there (at most [`WAIT`]).
pub async fn read_pid(project: &Path, file: &str) -> i32 {
    let path = project.join(file);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Some(pid) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(std::time::Instant::now() < deadline, "nothing in {file}");
        // A file written by a command: there is no event to wait on.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether process `pid` runs (a zombie does not).
pub fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.get(..1));
    state.is_some_and(|s| s != "Z")
}

/// The shells of `session`, as `agentctl shells` gets them.
pub async fn shells(client: &Client, session: &SessionId) -> Vec<ShellInfo> {
    let reply = client
        .request(Request::Shells {
            session: session.clone(),
        })
        .await
        .expect("the shells are listed");
    match reply {
        Reply::Shells(list) => list,
        other => panic!("Shells answered {other:?}"),
    }
}

/// The shell events among `events`, as (number, end) with `None` for a start.
pub fn shell_events(events: &[SessionEvent]) -> Vec<(u32, Option<ShellEnd>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ShellStarted { shell, .. } => Some((*shell, None)),
            Event::ShellEnded { shell, end } => Some((*shell, Some(end.clone()))),
            _ => None,
        })
        .collect()
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

/// Waits for the model's third request and asserts that it tells the model shell 1 no longer
/// runs (it was lost with the daemon, or stayed with the original of a fork).
pub async fn assert_third_request_says_shell_1_is_lost(server: &crate::model_server::ModelServer) {
    let asked = server.wait_for_requests(3).await;
    let told = asked[2].body["messages"].to_string();
    assert!(
        told.contains("these background shells no longer run: shell 1"),
        "{told}"
    );
}
