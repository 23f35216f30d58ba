//! The lightest agent: a run off a terminal starts no program (crossterm would run `tput` to
//! ask a terminal's size it does not have), and a run that only reads creates no checkpoint
//! store. Checkpoint stores are shared by the sessions of a work tree and go with the last.

use std::path::Path;

use serde_json::json;
use tests::model_server::{ModelServer, Scripted, anthropic};
use tests::{Daemon, agentctl_output};

fn two_turns() -> Vec<Scripted> {
    vec![
        anthropic::tool("read", json!({"path": "README.md"})),
        anthropic::text("Start it with `npm run dev`."),
    ]
}

/// A directory of programs that each leave a mark when run, put first on `PATH`.
fn tattletales(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["tput", "stty", "git", "sh", "bash", "less", "infocmp"] {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho {name} >> {}\n", dir.join("ran").display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The programs `command` started, as `strace` saw them; `None` where there is no strace.
fn programs_started(command: std::process::Command) -> Option<Vec<String>> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let mut traced = std::process::Command::new("strace");
    traced
        .args(["-f", "-qq", "-e", "trace=execve,execveat", "-o"])
        .arg(log.path())
        .arg(&program)
        .args(&args)
        .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(command.get_current_dir().unwrap_or(Path::new(".")));
    let status = traced.status().ok()?;
    assert!(status.success(), "{program:?} {args:?} failed under strace");
    let text = std::fs::read_to_string(log.path()).unwrap();
    Some(
        text.lines()
            .filter(|l| l.contains("execve") && !l.contains("ENOENT"))
            .map(str::to_string)
            .collect(),
    )
}

// The model server runs on the test's runtime while agentctl is waited for without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_off_a_terminal_start_no_program() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("README.md"), "# App\n").unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    let bin = tempfile::tempdir().unwrap();
    let path = tattletales(bin.path());
    // A first run starts the session (and the daemon is already up).
    server.push(two_turns());
    let first = agentctl_output(&daemon, &server, p, &["run", "go"]).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let list = agentctl_output(&daemon, &server, p, &["sessions", "--json"]).await;
    let id = serde_json::from_str::<serde_json::Value>(list.stdout.trim()).unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cases: [&[&str]; 5] = [
        &["run", "go"],
        &["run", "--json", "go"],
        &["sessions"],
        &["show", &id],
        &["show", &id, "--json"],
    ];
    let mut traced_any = false;
    for args in cases {
        if args[0] == "run" {
            server.push(two_turns());
        }
        let mut command = daemon.home.agentctl_against(&server, p, args);
        command
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        if args[0] == "run" {
            server.push(two_turns());
        }
        let mut command = daemon.home.agentctl_against(&server, p, args);
        command
            .env("PATH", &path)
            .stdin(std::process::Stdio::null());
        if let Some(started) = programs_started(command) {
            traced_any = true;
            // The first line is agentctl itself.
            assert_eq!(started.len(), 1, "{args:?} started programs: {started:#?}");
        }
    }
    let ran = std::fs::read_to_string(bin.path().join("ran")).unwrap_or_default();
    assert!(ran.is_empty(), "agentctl ran: {ran}");
    if !traced_any {
        eprintln!("SKIPPED the strace half: strace is not installed here");
    }
}

#[tokio::test]
async fn a_run_that_only_reads_creates_no_checkpoint_store() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "# App\n").unwrap();
    let server = ModelServer::start(two_turns()).await;
    let daemon = Daemon::start();
    let out = agentctl_output(&daemon, &server, project.path(), &["run", "--yes", "go"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let stores = daemon.paths().data_dir.join("checkpoints");
    let made = std::fs::read_dir(&stores).map_or(0, |d| d.count());
    assert_eq!(made, 0, "a read-only run made a checkpoint store");
}

fn store_dirs(daemon: &Daemon) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(daemon.paths().data_dir.join("checkpoints"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn sessions_of_one_directory_share_a_store_that_goes_with_the_last() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    std::fs::write(p.join("a.txt"), "a\n").unwrap();
    let change = |text: &str| {
        vec![
            anthropic::tool("bash", json!({"command": format!("echo {text} > a.txt")})),
            anthropic::text("done"),
        ]
    };
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start();
    for text in ["one", "two"] {
        server.push(change(text));
        let out = agentctl_output(&daemon, &server, p, &["run", "--yes", "go"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let list = agentctl_output(&daemon, &server, p, &["sessions", "--json"]).await;
    let ids: Vec<String> = serde_json::from_str::<serde_json::Value>(list.stdout.trim())
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    for id in &ids {
        let diff = agentctl_output(&daemon, &server, p, &["diff", id, "--stat"]).await;
        assert!(diff.stdout.contains("a.txt"), "{}", diff.stdout);
    }
    assert_eq!(store_dirs(&daemon).len(), 1, "one store for the directory");
    let rm = agentctl_output(&daemon, &server, p, &["rm", &ids[0]]).await;
    assert_eq!(rm.code, Some(0), "{}", rm.stderr);
    assert_eq!(
        store_dirs(&daemon).len(),
        1,
        "the other session still uses it"
    );
    let diff = agentctl_output(&daemon, &server, p, &["diff", &ids[1], "--stat"]).await;
    assert!(diff.stdout.contains("a.txt"), "{}", diff.stdout);
    let rm = agentctl_output(&daemon, &server, p, &["rm", &ids[1]]).await;
    assert_eq!(rm.code, Some(0), "{}", rm.stderr);
    assert!(
        store_dirs(&daemon).is_empty(),
        "the store outlived its sessions"
    );
}

#[tokio::test]
async fn a_first_run_in_a_fresh_repository_is_rewound_exactly_every_time() {
    for round in 0..15 {
        let project = tempfile::tempdir().unwrap();
        let p = project.path();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(p)
                .output()
                .unwrap()
        };
        git(&["init", "-q"]);
        std::fs::write(p.join("README.md"), "# readme\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "first"]);
        let server = ModelServer::start(vec![
            anthropic::tool(
                "bash",
                json!({"command": "echo changed > README.md; echo new > new.txt; mkdir -p d && echo deep > d/f.txt"}),
            ),
            anthropic::text("done"),
        ])
        .await;
        let daemon = Daemon::start();
        let out = agentctl_output(&daemon, &server, p, &["run", "--yes", "change it"]).await;
        assert_eq!(out.code, Some(0), "round {round}: {}", out.stderr);
        let list = agentctl_output(&daemon, &server, p, &["sessions", "--json"]).await;
        let id = serde_json::from_str::<serde_json::Value>(list.stdout.trim()).unwrap()[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let diff = agentctl_output(&daemon, &server, p, &["diff", &id, "--stat"]).await;
        assert!(
            diff.stdout.contains("README.md"),
            "round {round}: {}",
            diff.stdout
        );
        let rewind = agentctl_output(&daemon, &server, p, &["rewind", &id, "--yes"]).await;
        assert_eq!(rewind.code, Some(0), "round {round}: {}", rewind.stderr);
        assert_eq!(
            std::fs::read_to_string(p.join("README.md")).unwrap(),
            "# readme\n",
            "round {round}: {}",
            rewind.stdout
        );
        assert!(
            !p.join("new.txt").exists() && !p.join("d").exists(),
            "round {round}"
        );
    }
}
