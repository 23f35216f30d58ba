//! Checkpoints, diff and rewind (docs/architecture.md#checkpoints-fork-and-worktrees) end to end:
//! runs of the real daemon change files through `edit`, `write` and `bash`; `agentctl diff` shows
//! it and `agentctl rewind` undoes it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use tests::model_server::{Gate, ModelServer, anthropic};
use tests::{CmdOutput, Daemon, Home, agentctl_output};

/// `agentctl new` in `cwd`: the new session's id.
async fn new_session(daemon: &Daemon, server: &ModelServer, cwd: &Path, extra: &[&str]) -> String {
    let mut args = vec!["new"];
    args.extend_from_slice(extra);
    let out = agentctl_output(daemon, server, cwd, &args).await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    out.stdout.trim().to_string()
}

/// `agentctl run --session ID --yes PROMPT`, which must complete.
async fn run_in(daemon: &Daemon, server: &ModelServer, cwd: &Path, id: &str, prompt: &str) {
    let out = agentctl_output(
        daemon,
        server,
        cwd,
        &["run", "--session", id, "--yes", prompt],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
}

fn ok(out: CmdOutput) -> String {
    assert_eq!(
        out.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    out.stdout
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn a_run_that_edits_writes_and_runs_commands_is_diffed_and_rewound_exactly() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(p.join("build.log"), "old log\n").unwrap();
    std::fs::write(p.join("edit.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(p.join("sed.txt"), "hello world\n").unwrap();
    std::fs::write(p.join("gone.txt"), "delete me\n").unwrap();
    std::fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    set_mode(&p.join("run.sh"), 0o755);
    std::fs::write(p.join("private.txt"), "token\n").unwrap();
    set_mode(&p.join("private.txt"), 0o600);
    let binary: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    std::fs::write(p.join("blob.bin"), &binary).unwrap();

    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "edit.txt"}))
            .tool("edit", json!({"path": "edit.txt", "old_string": "two", "new_string": "TWO"}))
            .tool("write", json!({"path": "new.txt", "content": "brand new\n"}))
            .build(),
        anthropic::tool(
            "bash",
            json!({"command": "sed -i 's/world/there/' sed.txt && rm gone.txt private.txt && mkdir -p a/b && touch a/b/c && head -c 100 /dev/zero > blob.bin && chmod 644 run.sh && echo more >> build.log"}),
        ),
        anthropic::text("done"),
        anthropic::text("noted"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let id = new_session(&daemon, &server, p, &[]).await;
    run_in(&daemon, &server, p, &id, "change things").await;
    assert_eq!(
        std::fs::read_to_string(p.join("sed.txt")).unwrap(),
        "hello there\n"
    );

    let stat = ok(agentctl_output(&daemon, &server, p, &["diff", &id, "--stat"]).await);
    // The run's end was recorded: the diff is not against the directory as it is now.
    assert!(!stat.contains("no end checkpoint"), "{stat}");
    for (path, what) in [
        ("a/b/c", "new"),
        ("blob.bin", "binary"),
        ("edit.txt", "+1 -1"),
        ("gone.txt", "deleted"),
        ("new.txt", "+1 -0 new"),
        ("private.txt", "deleted"),
        ("run.sh", "+0 -0"),
        ("sed.txt", "+1 -1"),
    ] {
        let line = stat
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{path} ")))
            .unwrap_or_else(|| panic!("{path} missing from\n{stat}"));
        assert!(line.contains(what), "{path}: {line}");
    }
    assert!(
        !stat.contains("build.log"),
        "ignored files are not recorded:\n{stat}"
    );
    let patch = ok(agentctl_output(&daemon, &server, p, &["diff", &id]).await);
    assert!(patch.contains("-two\n+TWO\n"), "{patch}");
    assert!(patch.contains("-hello world\n+hello there\n"), "{patch}");
    assert!(patch.contains("+brand new\n"), "{patch}");
    assert!(
        patch.contains("old mode 100755\nnew mode 100644"),
        "{patch}"
    );
    assert!(
        !patch.contains('\u{1b}'),
        "no color off a terminal:\n{patch}"
    );

    // Without a terminal, a rewind must be confirmed on the command line.
    let refused = agentctl_output(&daemon, &server, p, &["rewind", &id]).await;
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(p.join("edit.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );

    let report = ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert!(report.contains("removed new.txt"), "{report}");
    assert!(report.contains("restored gone.txt"), "{report}");
    assert_eq!(
        std::fs::read_to_string(p.join("edit.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("sed.txt")).unwrap(),
        "hello world\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("gone.txt")).unwrap(),
        "delete me\n"
    );
    assert_eq!(std::fs::read(p.join("blob.bin")).unwrap(), binary);
    assert_eq!(mode(&p.join("run.sh")), 0o755);
    assert_eq!(
        std::fs::read_to_string(p.join("private.txt")).unwrap(),
        "token\n"
    );
    assert_eq!(mode(&p.join("private.txt")), 0o600);
    assert!(!p.join("new.txt").exists());
    assert!(!p.join("a").exists(), "the directories the run made go too");
    assert_eq!(
        std::fs::read_to_string(p.join("build.log")).unwrap(),
        "old log\nmore\n",
        "ignored files are left alone"
    );

    // The model hears of it on its next turn; attached views saw the event.
    run_in(&daemon, &server, p, &id, "what now?").await;
    let requests = server.received();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("rewound the working directory to its state before run 1"),
        "{last}"
    );
    assert!(last.contains("Removed: a/b/c, new.txt."), "{last}");
    let shown = ok(agentctl_output(&daemon, &server, p, &["show", &id]).await);
    assert!(shown.contains("rewound to before run 1"), "{shown}");
}

#[tokio::test]
async fn an_older_run_is_rewound_with_the_later_ones_and_outside_changes_are_kept_across_a_restart()
{
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "a0\n").unwrap();
    std::fs::write(p.join("b.txt"), "b0\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "a.txt"}))
            .tool("write", json!({"path": "a.txt", "content": "a1\n"}))
            .build(),
        anthropic::text("first"),
        anthropic::reply()
            .tool("read", json!({"path": "b.txt"}))
            .tool("write", json!({"path": "b.txt", "content": "b2\n"}))
            .build(),
        anthropic::text("second"),
    ])
    .await;
    let mut daemon = Daemon::start_in(Home::new());
    let id = new_session(&daemon, &server, p, &[]).await;
    run_in(&daemon, &server, p, &id, "one").await;
    run_in(&daemon, &server, p, &id, "two").await;
    std::fs::write(p.join("a.txt"), "mine\n").unwrap();

    let first =
        ok(agentctl_output(&daemon, &server, p, &["diff", &id, "--run", "1", "--stat"]).await);
    assert!(
        first.contains("a.txt") && !first.contains("b.txt"),
        "{first}"
    );
    let last = ok(agentctl_output(&daemon, &server, p, &["diff", &id, "--stat"]).await);
    assert!(last.contains("b.txt") && !last.contains("a.txt"), "{last}");

    daemon.kill();
    daemon.restart();

    let report =
        ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--run", "1", "--yes"]).await);
    assert!(report.contains("kept a.txt"), "{report}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "mine\n");
    assert_eq!(
        std::fs::read_to_string(p.join("b.txt")).unwrap(),
        "b0\n",
        "run 2 is undone too"
    );

    let forced = ok(agentctl_output(
        &daemon,
        &server,
        p,
        &["rewind", &id, "--run", "1", "--yes", "--force"],
    )
    .await);
    assert!(forced.contains("restored a.txt"), "{forced}");
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "a0\n");

    let none = agentctl_output(&daemon, &server, p, &["diff", &id, "--run", "7"]).await;
    assert_eq!(none.code, Some(1));
    assert!(
        none.stderr.contains("run 7 has no checkpoint"),
        "{}",
        none.stderr
    );
}

#[tokio::test]
async fn a_rewind_is_refused_while_a_run_is_going() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let gate = Gate::new();
    let server = ModelServer::start(vec![
        anthropic::tool("write", json!({"path": "x.txt", "content": "x\n"})),
        anthropic::text("still going").hold_after(2, &gate),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let id = new_session(&daemon, &server, p, &[]).await;
    let run = tokio::spawn({
        let mut command =
            daemon
                .home
                .agentctl_with(&server, p, &["run", "--session", &id, "--yes", "go"]);
        async move { command.output().await.unwrap() }
    });
    server.wait_for_requests(2).await;
    let refused = agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await;
    assert_eq!(refused.code, Some(1));
    assert!(refused.stderr.contains("is running"), "{}", refused.stderr);
    assert!(p.join("x.txt").exists());
    gate.release();
    assert!(run.await.unwrap().status.success());
    ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert!(!p.join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_shows_the_diff_and_rewinds_after_confirmation() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let server = ModelServer::start(vec![
        anthropic::tool("write", json!({"path": "notes.md", "content": "# plan\n"})),
        anthropic::text("written"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let args = ["chat", "--mode", "accept-edits"];
    let pty = tests::pty::Pty::agentctl(&daemon.home, &server, p, &args, (30, 120));
    pty.expect("[idle");
    pty.send("write the plan\r");
    pty.expect("written");
    pty.expect("completed");
    pty.send("/diff\r");
    pty.expect("+# plan");
    pty.send("/rewind\r");
    pty.expect("would remove notes.md");
    pty.expect("to do it: /rewind 1 yes");
    assert!(p.join("notes.md").exists(), "a dry run changes nothing");
    pty.send("/rewind 1 yes\r");
    pty.expect("rewound to before run 1: 0 restored, 1 removed");
    assert!(!p.join("notes.md").exists());
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}

#[tokio::test]
async fn a_run_that_only_reads_leaves_no_checkpoint_and_outside_edits_are_left_alone() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "a0\n").unwrap();
    std::fs::write(p.join("b.txt"), "b0\n").unwrap();
    let server = ModelServer::start(vec![
        anthropic::reply()
            .tool("read", json!({"path": "a.txt"}))
            .tool("write", json!({"path": "a.txt", "content": "a1\n"}))
            .build(),
        anthropic::text("wrote"),
        anthropic::tool("read", json!({"path": "b.txt"})),
        anthropic::text("read"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::new());
    let id = new_session(&daemon, &server, p, &[]).await;
    run_in(&daemon, &server, p, &id, "write").await;
    std::fs::write(p.join("b.txt"), "mine\n").unwrap();
    run_in(&daemon, &server, p, &id, "read").await;
    let stat = ok(agentctl_output(&daemon, &server, p, &["diff", &id, "--stat"]).await);
    assert!(
        stat.contains("in run 1"),
        "the reading run is not the last that changed files:\n{stat}"
    );
    let none = agentctl_output(&daemon, &server, p, &["diff", &id, "--run", "2"]).await;
    assert!(
        none.stderr.contains("run 2 has no checkpoint"),
        "{}",
        none.stderr
    );
    ok(agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await);
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "a0\n");
    assert_eq!(std::fs::read_to_string(p.join("b.txt")).unwrap(), "mine\n");
}
