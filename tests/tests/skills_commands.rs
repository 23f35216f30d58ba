//! Skills and slash commands (docs/architecture.md#skills-and-commands): a skill is listed in the
//! system prompt by name, description and path, and its body is read only when the model uses it;
//! `/NAME ARGS` expands a command file in the daemon for every client; editors are told the
//! commands.

use agent_client_protocol::v1::schema::SessionUpdate;
use serde_json::{Value, json};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, run_options, session_in, start_run, until_finished};

/// A project with a skill and a command.
fn project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let skill = project.path().join(".agents/skills/deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: How to deploy this service to staging.\n---\nSKILL-BODY: run make deploy-staging\n",
    )
    .unwrap();
    let commands = project.path().join(".agents/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.md"),
        "---\ndescription: Greet someone by name.\nargument-hint: NAME\n---\nSay hello to $1, warmly ($ARGUMENTS).\n",
    )
    .unwrap();
    project
}

#[tokio::test]
async fn a_skill_is_listed_and_its_body_is_read_only_when_used() {
    let project = project();
    let skill_file = project
        .path()
        .canonicalize()
        .unwrap()
        .join(".agents/skills/deploy/SKILL.md");
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": skill_file.display().to_string()})),
        anthropic::text("Deploying as the skill says."),
    ])
    .await;
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project.path()).await;
    start_run(&client, &session, "deploy it", run_options(&server)).await;
    until_finished(&mut incoming).await;
    let received = server.received();
    let first = received[0].body.to_string();
    assert!(
        first.contains("deploy: How to deploy this service to staging."),
        "{first}"
    );
    assert!(first.contains("SKILL.md"));
    assert!(
        !first.contains("SKILL-BODY"),
        "the body waits until it is read"
    );
    assert!(received[1].body.to_string().contains("SKILL-BODY"));
    let out = daemon
        .home
        .agentctl(&["skills", "list", "--json"])
        .current_dir(project.path())
        .output()
        .unwrap();
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["name"], "deploy");
}

#[tokio::test]
async fn slash_greet_expands_its_command_file_from_run() {
    let project = project();
    let server = ModelServer::start(vec![anthropic::text("Hello!")]).await;
    let daemon = Daemon::start();
    let out = daemon
        .home
        .agentctl_with(&server, project.path(), &["run", "/greet world and all"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = server.received()[0].body["messages"][0].to_string();
    assert!(
        first.contains("Say hello to world, warmly (world and all)."),
        "{first}"
    );
    assert!(!first.contains("/greet"));
    let out = daemon
        .home
        .agentctl(&["commands", "list", "--json"])
        .current_dir(project.path())
        .output()
        .unwrap();
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["name"], "greet");
    assert_eq!(listed[0]["argument_hint"], "NAME");
}

#[tokio::test]
async fn an_editor_is_told_the_commands_when_a_session_opens() {
    let project = project();
    let model = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let cwd = project.path().to_path_buf();
    tests::acp::with_editor(
        &daemon.home,
        &model,
        project.path(),
        async move |cx, mut got, _| {
            tests::acp::new_session(&cx, &cwd).await;
            let updates = got
                .updates_until(|u| matches!(u, SessionUpdate::AvailableCommandsUpdate(_)))
                .await;
            let Some(SessionUpdate::AvailableCommandsUpdate(update)) = updates.last() else {
                unreachable!()
            };
            let greet = update
                .available_commands
                .iter()
                .find(|c| c.name == "greet")
                .expect("greet is offered");
            assert_eq!(greet.description, "Greet someone by name.");
            assert!(
                serde_json::to_string(&greet.input)
                    .unwrap()
                    .contains("NAME")
            );
        },
    )
    .await;
}
