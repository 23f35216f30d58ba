//! Real streams of a small local model (Qwen2.5-Coder-1.5B behind llama-server) replayed: what
//! the harness answers decides whether the model's next step can succeed.

use std::path::Path;

use protocol::{RunOptions, StopReason};
use serde_json::json;
use tests::model_server::{ModelServer, Scripted, openai, replay};
use tests::{TestEnv, run_options, stop_and_error, tool_results};

fn transcript(name: &str) -> Scripted {
    replay(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/qwen")
            .join(name),
    )
}

/// The local server as the model ran: one model, a 16k window.
fn local(server: &ModelServer) -> RunOptions {
    server.describe(
        "/v1/models",
        json!({"data": [{"id": "qwen2.5-coder-1.5b-instruct"}]}),
    );
    server.describe(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 16384}}),
    );
    RunOptions {
        provider: Some("openai".into()),
        model: None,
        env: vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))],
        ..run_options(server)
    }
}

const BELOW_ZERO: &str = "from typing import List\n\n\ndef below_zero(operations: List[int]) -> bool:\n    \"\"\" You're given a list of deposit and withdrawal operations on a bank account that starts with\n    zero balance. Your task is to detect if at any point the balance of account fallls below zero, and\n    at that point function should return True. Otherwise it should return False.\n    >>> below_zero([1, 2, 3])\n    False\n    >>> below_zero([1, 2, -4, 5])\n    True\n    \"\"\"\n    raise NotImplementedError(\"not written yet\")\n";

#[tokio::test]
async fn a_refused_write_shows_the_file_and_the_model_s_next_write_with_unescaped_quotes_lands() {
    let setup = TestEnv::builder();
    let file = setup.project().join("solution.py");
    std::fs::write(&file, BELOW_ZERO).unwrap();
    let mut env = setup
        .model(vec![
            // A structured `write` of the file it has not read.
            transcript("he003-turn1-write-unread.sse"),
            // The next call written as text, the docstring's quotes unescaped.
            transcript("he003-turn2-write-as-text.sse"),
            openai::text("Done."),
        ])
        .start()
        .await;
    // The prompt names no file: the model starts without it.
    let events = env
        .run_with("Implement below_zero.", local(&env.server))
        .await;
    let results = tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].1 && results[0].2.contains("    raise NotImplementedError"),
        "{results:?}"
    );
    assert!(!results[1].1, "the text call became a write: {results:?}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("    \"\"\" You're given a list"),
        "{written}"
    );
    assert!(written.contains("    balance = 0\n"), "{written}");
    assert_eq!(stop_and_error(&events).0, StopReason::Completed);
    // The second request carried the file's content with the refusal.
    let second = env.server.wait_for_requests(2).await[1].body.to_string();
    assert!(second.contains("it now counts as read"), "{second}");
}

#[tokio::test]
async fn a_question_about_a_named_file_is_answered_without_reading_it_twice() {
    let mut env = TestEnv::builder()
        .file("README.md", "Start with: npm run dev\n")
        .model(vec![
            // The model reads the file anyway.
            transcript("readme-turn1-read.sse"),
            transcript("readme-turn2-answer.sse"),
        ])
        .start()
        .await;
    let events = env
        .run_with(
            "Read README.md and tell me the start command.",
            local(&env.server),
        )
        .await;
    let results = tool_results(&events);
    // Read for it at the start, then its own read is answered as nothing new.
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].2.contains("     1\tStart with: npm run dev"),
        "{results:?}"
    );
    assert!(
        results[1]
            .2
            .contains("Nothing changed: this is the same read call made before your first reply"),
        "{results:?}"
    );
    let finished = events.iter().find_map(|e| match &e.event {
        protocol::Event::RunFinished {
            stop_reason,
            nothing_changed,
            ..
        } => Some((*stop_reason, *nothing_changed)),
        _ => None,
    });
    assert_eq!(finished, Some((StopReason::Completed, false)));
    assert_eq!(
        std::fs::read_to_string(env.project().join("README.md")).unwrap(),
        "Start with: npm run dev\n"
    );
}
