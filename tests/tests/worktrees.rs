//! `--worktree` (docs/architecture.md#checkpoints-fork-and-worktrees): sessions of one repository
//! in worktrees of their own, on branches `agentd/<id>`, editing the same file in parallel without
//! clobbering each other; `rm` removes a clean worktree and keeps a dirty one.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, agentctl_output};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join("f.txt"), "original\n").unwrap();
    std::fs::create_dir(repo.path().join("sub")).unwrap();
    std::fs::write(repo.path().join("sub/s.txt"), "s\n").unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "init"]);
    repo
}

async fn session(daemon: &Daemon, server: &ModelServer, cwd: &Path) -> (String, Value) {
    let out = agentctl_output(daemon, server, cwd, &["new", "--worktree"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let id = out.stdout.trim().to_string();
    let listing = agentctl_output(daemon, server, cwd, &["sessions", "--json"]).await;
    let sessions: Value = serde_json::from_str(&listing.stdout).unwrap();
    let info = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .cloned()
        .unwrap();
    (id, info)
}

#[tokio::test]
async fn parallel_sessions_edit_one_file_in_their_own_worktrees() {
    let repo = repository();
    let top = repo.path().canonicalize().unwrap();
    let daemon = Daemon::start_in(Home::new());
    let worktrees: PathBuf = daemon.home.paths().worktrees_dir();
    let servers = [
        ModelServer::start(vec![
            anthropic::reply()
                .tool("read", json!({"path": "f.txt"}))
                .tool("write", json!({"path": "f.txt", "content": "from one\n"}))
                .build(),
            anthropic::text("one done"),
        ])
        .await,
        ModelServer::start(vec![
            anthropic::reply()
                .tool("read", json!({"path": "f.txt"}))
                .tool("write", json!({"path": "f.txt", "content": "from two\n"}))
                .build(),
            anthropic::text("two done"),
        ])
        .await,
    ];
    let (one, info) = session(&daemon, &servers[0], &top).await;
    assert_eq!(info["branch"], format!("agentd/{one}"));
    assert_eq!(info["cwd"], worktrees.join(&one).to_string_lossy().as_ref());
    let (two, _) = session(&daemon, &servers[1], &top).await;
    let table = agentctl_output(&daemon, &servers[0], &top, &["sessions"]).await;
    assert!(
        table.stdout.contains(&format!("agentd/{two}")),
        "{}",
        table.stdout
    );

    let args_one = ["run", "--session", one.as_str(), "--yes", "edit"];
    let args_two = ["run", "--session", two.as_str(), "--yes", "edit"];
    let (a, b) = tokio::join!(
        agentctl_output(&daemon, &servers[0], &top, &args_one),
        agentctl_output(&daemon, &servers[1], &top, &args_two),
    );
    assert_eq!(
        (a.code, b.code),
        (Some(0), Some(0)),
        "{}{}",
        a.stderr,
        b.stderr
    );
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(worktrees.join(&one).join("f.txt")), "from one\n");
    assert_eq!(read(worktrees.join(&two).join("f.txt")), "from two\n");
    assert_eq!(
        read(top.join("f.txt")),
        "original\n",
        "the main work tree is untouched"
    );
    let branches = git(&top, &["branch", "--list", "agentd/*"]);
    assert!(
        branches.contains(&one) && branches.contains(&two),
        "{branches}"
    );

    // Dirty: kept, and the user is told where.
    let rm = agentctl_output(&daemon, &servers[0], &top, &["rm", &one]).await;
    assert_eq!(rm.code, Some(0), "{}", rm.stderr);
    let kept = worktrees.join(&one);
    assert!(
        rm.stdout
            .contains(&format!("worktree kept at {}", kept.display())),
        "{}",
        rm.stdout
    );
    assert!(kept.join("f.txt").exists());

    // Committed on its branch: the worktree goes, the branch with its commit stays.
    git(&worktrees.join(&two), &["commit", "-qam", "two's work"]);
    let rm = agentctl_output(&daemon, &servers[1], &top, &["rm", &two]).await;
    assert!(!worktrees.join(&two).exists());
    assert!(
        rm.stdout.contains(&format!("branch agentd/{two} kept")),
        "{}",
        rm.stdout
    );
    assert!(git(&top, &["branch", "--list", &format!("agentd/{two}")]).contains(&two));
}

#[tokio::test]
async fn a_clean_worktree_and_its_branch_are_removed_with_the_session() {
    let repo = repository();
    let sub = repo.path().canonicalize().unwrap().join("sub");
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(Home::new());
    let (id, info) = session(&daemon, &server, &sub).await;
    let dir = daemon.home.paths().worktrees_dir().join(&id);
    assert_eq!(
        info["cwd"],
        dir.join("sub").to_string_lossy().as_ref(),
        "same place in the tree"
    );
    assert!(dir.join("sub/s.txt").exists());
    let rm = agentctl_output(&daemon, &server, &sub, &["rm", &id]).await;
    assert_eq!(rm.stdout.trim(), format!("deleted {id}"));
    assert!(!dir.exists());
    assert_eq!(git(&sub, &["branch", "--list", "agentd/*"]), "");
    assert_eq!(git(&sub, &["worktree", "list"]).lines().count(), 1);

    let outside = tempfile::tempdir().unwrap();
    let out = agentctl_output(&daemon, &server, outside.path(), &["new", "--worktree"]).await;
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("not in a git repository"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_sandboxed_worktree_session_commits_on_its_branch_but_cannot_touch_hooks() {
    let repo = repository();
    let top = repo.path().canonicalize().unwrap();
    let server = ModelServer::start(vec![
        anthropic::tool(
            "bash",
            json!({"command": "echo work > w.txt && git add w.txt && git -c user.name=a -c user.email=a@example.com commit -qm agent-work && echo committed"}),
        ),
        // The worktree's `.git` file is the session's to write: pointing it at the repository's
        // own git directory must not widen what later commands may write.
        anthropic::tool(
            "bash",
            json!({"command": "common=$(git rev-parse --path-format=absolute --git-common-dir) && printf 'gitdir: %s\\n' \"$common\" > .git && echo \"$common\" > /dev/null"}),
        ),
        anthropic::tool(
            "bash",
            json!({"command": "echo evil > \"$(git rev-parse --path-format=absolute --git-common-dir)/hooks/pre-commit\""}),
        ),
        anthropic::text("done"),
    ])
    .await;
    // The daemon's temporary directory (writable in the sandbox) is apart from the repository.
    let tmp = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(Home::new(), &[("TMPDIR", tmp.path().to_str().unwrap())]);
    if !daemon.sandbox_or_skip() {
        return;
    }
    let out = agentctl_output(
        &daemon,
        &server,
        &top,
        &["new", "--worktree", "--mode", "auto"],
    )
    .await;
    let id = out.stdout.trim().to_string();
    let run = agentctl_output(
        &daemon,
        &server,
        &top,
        &["run", "--session", &id, "--json", "commit"],
    )
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let results: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert!(
        results[0]["output"].as_str().unwrap().contains("committed"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    assert_eq!(results[2]["is_error"], true, "{}", results[2]);
    let log = git(&top, &["log", "--oneline", &format!("agentd/{id}")]);
    assert!(log.contains("agent-work"), "{log}");
    assert!(!top.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn a_worktree_a_fork_works_in_stays_when_its_session_is_removed() {
    let repo = repository();
    let top = repo.path().canonicalize().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(Home::new());
    let (id, _) = session(&daemon, &server, &top).await;
    let fork = agentctl_output(&daemon, &server, &top, &["fork", &id]).await;
    assert_eq!(fork.code, Some(0), "{}", fork.stderr);
    let forked = fork.stdout.trim().to_string();
    let rm = agentctl_output(&daemon, &server, &top, &["rm", &id]).await;
    assert!(
        rm.stdout.contains(&format!("session {forked} works in it")),
        "{}",
        rm.stdout
    );
    assert!(
        daemon
            .home
            .paths()
            .worktrees_dir()
            .join(&id)
            .join("f.txt")
            .exists()
    );
}
