//! What the harness answers a model that goes wrong, so that its next call can go right: a
//! refused change shows the file, a missed edit shows the closest lines, a repeated call says
//! nothing changed, a health warning reaches the model and a run going round in circles stops.

use protocol::{Event, HealthKind, RunOptions, SessionEvent, StopReason};
use serde_json::json;
use tests::model_server::{ModelServer, Scripted, anthropic, openai};
use tests::{
    Daemon, run_options, session_in, start_run, stop_and_error, tool_results, until_finished,
};

/// Options for the OpenAI wire format against `server`.
fn openai_options(server: &ModelServer) -> RunOptions {
    RunOptions {
        provider: Some("openai".into()),
        model: Some("gpt-4o".into()),
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

async fn run(
    _server: &ModelServer,
    project: &std::path::Path,
    options: RunOptions,
) -> Vec<SessionEvent> {
    let daemon = Daemon::start();
    let (client, session, mut incoming) = session_in(&daemon, project).await;
    start_run(&client, &session, "implement area", options).await;
    until_finished(&mut incoming).await
}

const SOLUTION: &str = "import math\n\ndef area(r):\n    \"\"\"The area of a circle.\"\"\"\n    raise NotImplementedError(\"not written yet\")\n";

fn solution_project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("solution.py"), SOLUTION).unwrap();
    project
}

fn done(project: &tempfile::TempDir) -> String {
    std::fs::read_to_string(project.path().join("solution.py")).unwrap()
}

const IMPLEMENTED: &str = "import math\n\ndef area(r):\n    \"\"\"The area of a circle.\"\"\"\n    return math.pi * r * r\n";

#[tokio::test]
async fn an_edit_of_an_unread_file_shows_the_file_and_the_next_edit_succeeds() {
    for wire in ["anthropic", "openai"] {
        let project = solution_project();
        let edit = json!({"path": "solution.py", "old_string": "    raise NotImplementedError(\"not written yet\")", "new_string": "    return math.pi * r * r"});
        let script: Vec<Scripted> = if wire == "openai" {
            vec![
                openai::tool("edit", edit.clone()),
                openai::tool("edit", edit),
                openai::text("Done."),
            ]
        } else {
            vec![
                anthropic::tool("edit", edit.clone()),
                anthropic::tool("edit", edit),
                anthropic::text("Done."),
            ]
        };
        let server = ModelServer::start(script).await;
        let options = if wire == "openai" {
            openai_options(&server)
        } else {
            run_options(&server)
        };
        let events = run(&server, project.path(), options).await;
        let results = tool_results(&events);
        assert!(results[0].1, "{wire}: refused: {results:?}");
        let refusal = &results[0].2;
        assert!(
            refusal.contains("solution.py was not read in this session"),
            "{wire}: {refusal}"
        );
        assert!(refusal.contains("Nothing was changed"), "{wire}: {refusal}");
        assert!(
            refusal.contains("it now counts as read"),
            "{wire}: {refusal}"
        );
        assert!(
            refusal.contains("     3\tdef area(r):"),
            "{wire}: {refusal}"
        );
        assert!(
            refusal.contains("     5\t    raise NotImplementedError"),
            "{wire}: {refusal}"
        );
        // The same edit now succeeds: the refusal counted as reading the file.
        assert!(!results[1].1, "{wire}: {results:?}");
        assert_eq!(done(&project), IMPLEMENTED, "{wire}");
        assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    }
}

#[tokio::test]
async fn an_overwrite_of_an_unread_file_shows_the_file_and_counts_as_read() {
    let project = solution_project();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "write",
            json!({"path": "solution.py", "content": IMPLEMENTED}),
        ),
        anthropic::tool(
            "write",
            json!({"path": "solution.py", "content": IMPLEMENTED}),
        ),
        anthropic::text("Done."),
    ])
    .await;
    let results = tool_results(&run(&server, project.path(), run_options(&server)).await);
    assert!(
        results[0].1
            && results[0]
                .2
                .contains("call write again with the whole new content"),
        "{results:?}"
    );
    assert!(results[0].2.contains("     1\timport math"), "{results:?}");
    assert!(!results[1].1, "{results:?}");
    assert_eq!(done(&project), IMPLEMENTED);
}

#[tokio::test]
async fn an_edit_that_matches_nothing_shows_the_closest_lines_and_how_they_differ() {
    let project = solution_project();
    let server = ModelServer::start(vec![
        openai::tool("read", json!({"path": "solution.py"})),
        // Not in the file: the model dropped the exception's message.
        openai::tool(
            "edit",
            json!({"path": "solution.py", "old_string": "    raise NotImplementedError()", "new_string": "    return 0"}),
        ),
        openai::text("Done."),
    ])
    .await;
    let results = tool_results(&run(&server, project.path(), openai_options(&server)).await);
    let miss = &results[1].2;
    assert!(results[1].1, "{results:?}");
    assert!(
        miss.contains("old_string was not found in the file"),
        "{miss}"
    );
    assert!(
        miss.contains("The closest text in the file is at line 5:"),
        "{miss}"
    );
    assert!(
        miss.contains("     5\t    raise NotImplementedError(\"not written yet\")"),
        "{miss}"
    );
    assert!(
        miss.contains("-     raise NotImplementedError()\n"),
        "{miss}"
    );
    assert!(
        miss.contains("+     raise NotImplementedError(\"not written yet\")\n"),
        "{miss}"
    );
    assert_eq!(done(&project), SOLUTION);
}

#[tokio::test]
async fn an_edit_whose_strings_are_the_same_says_so_and_shows_where_the_text_is() {
    let project = solution_project();
    let same = "    raise NotImplementedError(\"not written yet\")";
    let server = ModelServer::start(vec![
        anthropic::tool("read", json!({"path": "solution.py"})),
        anthropic::tool(
            "edit",
            json!({"path": "solution.py", "old_string": same, "new_string": same}),
        ),
        anthropic::text("Done."),
    ])
    .await;
    let results = tool_results(&run(&server, project.path(), run_options(&server)).await);
    let refusal = &results[1].2;
    assert!(results[1].1, "{results:?}");
    assert!(
        refusal.contains("old_string and new_string are the same, so nothing would change"),
        "{refusal}"
    );
    assert!(refusal.contains("old_string is at line 5:"), "{refusal}");
    assert!(
        refusal.contains("     4\t    \"\"\"The area of a circle.\"\"\""),
        "{refusal}"
    );
}

/// The file read again and again, as a small model did 80 times.
fn rereads(n: usize) -> Vec<Scripted> {
    let mut script: Vec<Scripted> = (0..n)
        .map(|_| openai::tool("read", json!({"path": "README.md"})))
        .collect();
    script.push(openai::text("Start with: npm run dev"));
    script
}

#[tokio::test]
async fn a_repeated_call_with_the_same_result_says_nothing_changed() {
    let project = tempfile::tempdir().unwrap();
    let readme = format!(
        "# App\n\n{}\nStart with: npm run dev\n",
        "Some words about the app.\n".repeat(40)
    );
    std::fs::write(project.path().join("README.md"), &readme).unwrap();
    let server = ModelServer::start(rereads(2)).await;
    let events = run(&server, project.path(), openai_options(&server)).await;
    let results = tool_results(&events);
    assert!(
        results[0].2.contains("Start with: npm run dev"),
        "{results:?}"
    );
    let again = &results[1].2;
    assert!(
        again.contains("Nothing changed: this is the same read call made in turn 1"),
        "{again}"
    );
    assert!(again.contains("Do not read it again"), "{again}");
    // The content is not sent a second time.
    assert!(!again.contains("npm run dev"), "{again}");
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
}

#[tokio::test]
async fn a_run_that_keeps_repeating_after_the_warning_stops_as_a_health_stop() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("README.md"),
        "Start with: npm run dev\n",
    )
    .unwrap();
    let server = ModelServer::start(rereads(80)).await;
    let events = run(&server, project.path(), openai_options(&server)).await;
    let health: Vec<HealthKind> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Health { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(health, [HealthKind::RepeatedCalls]);
    let (stop, error) = stop_and_error(&events);
    assert_eq!(stop, StopReason::Health);
    assert!(error.unwrap().contains("same results"));
    // The model was told with the third result, and the run ended at the fourth reply.
    let requests = server.received();
    assert_eq!(requests.len(), 4, "the run went on");
    let told = requests[3].body.to_string();
    assert!(
        told.contains("[health warning: the last 3 replies made the same tool calls"),
        "{told}"
    );
    assert!(
        told.contains("one more identical reply ends the run"),
        "{told}"
    );
}

#[tokio::test]
async fn failing_edits_tell_the_model_to_write_the_whole_file() {
    let project = solution_project();
    let miss = json!({"path": "solution.py", "old_string": "nothing like it", "new_string": "x"});
    let mut script = vec![anthropic::tool("read", json!({"path": "solution.py"}))];
    script.extend((0..3).map(|i| {
        let mut miss = miss.clone();
        miss["new_string"] = json!(format!("x{i}"));
        anthropic::tool("edit", miss)
    }));
    script.push(anthropic::text("Giving up."));
    let server = ModelServer::start(script).await;
    let events = run(&server, project.path(), run_options(&server)).await;
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    // The last request carries the warning with the third failure's result.
    let requests = server.received();
    let told = requests[4].body.to_string();
    assert!(
        told.contains("[health warning: 3 edits or writes failed in a row"),
        "{told}"
    );
    assert!(
        told.contains("write the whole corrected file with write"),
        "{told}"
    );
    assert!(!requests[3].body.to_string().contains("[health warning"));
}
