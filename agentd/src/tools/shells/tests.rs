//! Background shells started through the tools as a run would, with a registry of their own.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::ShellEnd;
use serde_json::json;

use super::{ShellNews, Shells};
use crate::tools::{Tool, ToolContext, ToolOutput, execute};

/// A context in `dir` whose shells report to the returned list.
fn context(dir: &std::path::Path) -> (ToolContext, Arc<Mutex<Vec<ShellNews>>>) {
    let news = Arc::new(Mutex::new(Vec::new()));
    let told = news.clone();
    let mut ctx = ToolContext::standalone(dir);
    ctx.shells = Shells::new(Arc::new(move |n| told.lock().unwrap().push(n)));
    (ctx, news)
}

async fn call(tool: Tool, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
    let mut ctx = ctx.clone();
    ctx.gate = Arc::default();
    execute(tool, args, ctx).await
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.get(..1));
    state.is_some() && state != Some("Z")
}

#[tokio::test]
async fn a_shell_runs_on_after_the_call_and_is_read_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, news) = context(dir.path());
    let started = call(
        Tool::Bash,
        json!({"command": "echo $$ > pid; echo ready; sleep 600", "background": true}),
        &ctx,
    )
    .await;
    assert!(!started.is_error, "{}", started.output);
    assert!(
        started.output.starts_with("started shell 1"),
        "{}",
        started.output
    );
    let look = call(Tool::BashOutput, json!({"id": 1, "wait_ms": 10_000}), &ctx).await;
    assert!(look.output.starts_with("ready\n"), "{}", look.output);
    assert!(
        look.output.contains("[shell 1 is still running"),
        "{}",
        look.output
    );
    let again = call(Tool::BashOutput, json!({"id": "1"}), &ctx).await;
    assert!(
        again.output.starts_with("(no new output)"),
        "{}",
        again.output
    );
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    let killed = call(Tool::KillShell, json!({"id": 1}), &ctx).await;
    assert!(
        killed.output.starts_with("shell 1 ended (killed)"),
        "{}",
        killed.output
    );
    assert!(!alive(pid), "the shell's process is gone");
    let look = call(Tool::BashOutput, json!({"id": 1}), &ctx).await;
    assert!(
        look.output.ends_with("[shell 1 killed; 6 bytes printed]"),
        "{}",
        look.output
    );
    assert_eq!(
        *news.lock().unwrap(),
        [
            ShellNews::Started {
                shell: 1,
                command: "echo $$ > pid; echo ready; sleep 600".into()
            },
            ShellNews::Ended {
                shell: 1,
                end: ShellEnd::Killed
            }
        ]
    );
}

#[tokio::test]
async fn a_shell_that_exits_says_how() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, news) = context(dir.path());
    call(
        Tool::Bash,
        json!({"command": "echo bye; exit 3", "background": true}),
        &ctx,
    )
    .await;
    let look = call(Tool::BashOutput, json!({"id": 1, "wait_ms": 10_000}), &ctx).await;
    // The output may come before the end: look until it ended.
    let mut text = look.output;
    while !text.contains("exited") {
        text = call(Tool::BashOutput, json!({"id": 1, "wait_ms": 10_000}), &ctx)
            .await
            .output;
    }
    assert!(
        text.ends_with("[shell 1 exited with code 3; 4 bytes printed]"),
        "{text}"
    );
    assert_eq!(
        news.lock().unwrap().last(),
        Some(&ShellNews::Ended {
            shell: 1,
            end: ShellEnd::Exited { code: 3 }
        })
    );
}

#[tokio::test]
async fn the_limit_refuses_one_more_shell_and_names_the_running_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (mut ctx, _) = context(dir.path());
    ctx.shells = ctx.shells.with_limit(2);
    for _ in 0..2 {
        let started = call(
            Tool::Bash,
            json!({"command": "sleep 600", "background": true}),
            &ctx,
        )
        .await;
        assert!(!started.is_error, "{}", started.output);
    }
    let refused = call(
        Tool::Bash,
        json!({"command": "sleep 1", "background": true}),
        &ctx,
    )
    .await;
    assert!(refused.is_error);
    assert!(refused.output.contains("kill_shell"), "{}", refused.output);
    assert!(
        refused.output.contains("1 (sleep 600), 2 (sleep 600)"),
        "{}",
        refused.output
    );
    assert_eq!(ctx.shells.end_all().await, [1, 2]);
    assert_eq!(ctx.shells.running(), 0);
    let third = call(
        Tool::Bash,
        json!({"command": "sleep 600", "background": true}),
        &ctx,
    )
    .await;
    assert!(
        third.output.starts_with("started shell 3"),
        "{}",
        third.output
    );
    ctx.shells.end_all().await;
}

#[tokio::test]
async fn shells_ended_by_the_session_are_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, news) = context(dir.path());
    call(
        Tool::Bash,
        json!({"command": "sleep 600", "background": true}),
        &ctx,
    )
    .await;
    ctx.shells.end_all().await;
    assert_eq!(news.lock().unwrap().len(), 1, "only the start");
    assert_eq!(ctx.shells.list()[0].end, Some(ShellEnd::Lost));
}

#[tokio::test]
async fn an_unknown_shell_is_an_error_that_lists_the_shells() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = context(dir.path());
    let none = call(Tool::BashOutput, json!({"id": 4}), &ctx).await;
    assert!(none.is_error);
    assert!(
        none.output.contains("this session has none"),
        "{}",
        none.output
    );
    call(
        Tool::Bash,
        json!({"command": "sleep 600", "background": true}),
        &ctx,
    )
    .await;
    let unknown = call(Tool::KillShell, json!({"id": 4}), &ctx).await;
    assert!(unknown.is_error);
    assert!(
        unknown
            .output
            .contains("its shells are: 1 (running: sleep 600)"),
        "{}",
        unknown.output
    );
    ctx.shells.end_all().await;
}

#[tokio::test]
async fn a_wait_for_output_ends_when_the_run_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = context(dir.path());
    call(
        Tool::Bash,
        json!({"command": "sleep 600", "background": true}),
        &ctx,
    )
    .await;
    let cancel = ctx.cancel.clone();
    let look = tokio::spawn({
        let ctx = ctx.clone();
        async move { call(Tool::BashOutput, json!({"id": 1, "wait_ms": 30_000}), &ctx).await }
    });
    cancel.cancel();
    let look = tokio::time::timeout(Duration::from_secs(5), look)
        .await
        .expect("the wait ended with the cancel")
        .unwrap();
    assert!(look.output.contains("still running"), "{}", look.output);
    assert_eq!(ctx.shells.running(), 1, "a cancel does not end the shell");
    ctx.shells.end_all().await;
}

#[tokio::test]
async fn a_shell_times_out_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = context(dir.path());
    call(
        Tool::Bash,
        json!({"command": "sleep 600", "background": true, "timeout_ms": 100}),
        &ctx,
    )
    .await;
    let look = call(Tool::BashOutput, json!({"id": 1, "wait_ms": 10_000}), &ctx).await;
    assert!(
        look.output.contains("timed out after 100 ms"),
        "{}",
        look.output
    );
    let shell = ctx.shells.find(1).unwrap();
    shell.wait_over().await;
    assert_eq!(shell.end(), Some(ShellEnd::Killed));
}
