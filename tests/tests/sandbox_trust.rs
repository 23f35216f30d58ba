//! Auto mode's sandbox against what still got out: code planted through hard links, PATH
//! directories and tools' configuration in writable places, secrets readable from a command or
//! a tool, and calls without bounds. Each test says why it skips where the kernel lacks what
//! the sandbox needs.

use std::path::PathBuf;

use protocol::{Mode, Reply, Request};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::sandboxed::{auto_session, bash, git, run_calls};
use tests::{Daemon, Home, start_run, tool_results, until_finished};

/// A base directory with a project, a home directory and a place nothing may write to.
struct Dirs {
    _base: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().canonicalize().unwrap();
    let dirs = Dirs {
        project: root.join("project"),
        home: root.join("home"),
        outside: root.join("outside"),
        _base: base,
    };
    for dir in [&dirs.project, &dirs.home, &dirs.outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    dirs
}

fn left_outside(d: &Dirs) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(&d.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect()
}

fn path_env(d: &Dirs, path: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", path.to_string()),
        ("HOME", d.home.display().to_string()),
    ]
}

fn system_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
}

#[tokio::test]
async fn a_hard_link_into_a_git_directory_cannot_carry_a_command_out() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let out = d.outside.display();
    let plant = format!("printf '[core]\\n\\tfsmonitor = \"touch {out}/pwned; false\"\\n' >> cfg");
    let env = path_env(&d, &system_path());
    // A nested repository made by the agent, linked in one call and written in the next.
    let nested = d.project.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    let results = run_calls(
        &daemon,
        auto_session(&nested, &env),
        &[
            bash("git init -q sub && ln sub/.git/config cfg && echo linked"),
            bash(&plant),
        ],
    )
    .await;
    assert!(results[0].2.contains("hard link"), "{}", results[0].2);
    // A top-level repository in a directory that was not one.
    let top = d.project.join("top");
    std::fs::create_dir_all(&top).unwrap();
    let results = run_calls(
        &daemon,
        auto_session(&top, &env),
        &[bash("git init -q . && ln .git/config cfg"), bash(&plant)],
    )
    .await;
    assert!(results[0].2.contains("hard link"), "{}", results[0].2);
    // A link the user made before the session started.
    let before = d.project.join("before");
    std::fs::create_dir_all(&before).unwrap();
    git(&before, &["init", "-q"]);
    std::fs::hard_link(before.join(".git/config"), before.join("cfg")).unwrap();
    let results = run_calls(&daemon, auto_session(&before, &env), &[bash(&plant)]).await;
    assert!(results[0].2.contains("hard link"), "{}", results[0].2);
    // The user's git, outside the sandbox, runs nothing that was planted.
    for dir in [
        nested.join("sub"),
        nested.clone(),
        top.clone(),
        before.clone(),
    ] {
        if dir.exists() {
            let _ = git(&dir, &["status", "--short"]);
        }
    }
    assert!(left_outside(&d).is_empty(), "{:?}", left_outside(&d));
}

#[tokio::test]
async fn path_directories_and_tool_configs_in_writable_places_stay_read_only() {
    let d = dirs();
    let cargo = d.home.join(".cargo");
    std::fs::create_dir_all(cargo.join("bin")).unwrap();
    let config = format!("[sandbox]\nwritable = [\"{}\"]\n", cargo.display());
    let daemon = Daemon::start_in(Home::with_config(&config));
    if !daemon.sandbox_or_skip() {
        return;
    }
    std::fs::create_dir_all(d.project.join(".venv/bin")).unwrap();
    let site = d.project.join(".venv/lib/python3/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(d.project.join(".venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let path = format!(
        "{}:{}:{}",
        d.project.join(".venv/bin").display(),
        cargo.join("bin").display(),
        system_path()
    );
    let out = d.outside.display();
    let program =
        |file: &str| format!("printf '#!/bin/sh\\ntouch {out}/ran\\n' > {file} && chmod +x {file}");
    let results = run_calls(
        &daemon,
        auto_session(&d.project, &path_env(&d, &path)),
        &[
            bash(&program(".venv/bin/git")),
            bash(&program("$HOME/.cargo/bin/ls")),
            bash(&format!(
                "printf '[alias]\\nb = \"!touch {out}/cargo\"\\n' > $HOME/.cargo/config.toml"
            )),
            bash("mkdir -p $HOME/.cargo/registry && echo cached > $HOME/.cargo/registry/x"),
            // The environment's libraries run outside too (a `.pth` file at every start).
            bash(&format!(
                "echo 'import os; open(\"{out}/pth\", \"w\")' > .venv/lib/python3/site-packages/zz.pth"
            )),
            (
                "write",
                json!({"path": ".venv/lib/python3/site-packages/yy.pth", "content": "import os\n"}),
            ),
        ],
    )
    .await;
    assert!(
        !d.project.join(".venv/bin/git").exists(),
        "{}",
        results[0].2
    );
    assert!(!cargo.join("bin/ls").exists(), "{}", results[1].2);
    assert!(!cargo.join("config.toml").exists(), "{}", results[2].2);
    assert!(!site.join("zz.pth").exists(), "{}", results[4].2);
    assert!(!site.join("yy.pth").exists(), "{}", results[5].2);
    assert!(
        cargo.join("registry/x").exists(),
        "the rest of ~/.cargo stays writable: {}",
        results[3].2
    );
}

#[tokio::test]
async fn keys_credentials_and_other_sessions_are_hidden_from_commands_and_tools() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let paths = daemon.paths();
    let env_file = paths.config_dir.join("env");
    std::fs::write(&env_file, "ANTHROPIC_API_KEY=sk-SECRET-ONE\n").unwrap();
    let ssh = d.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "SECRET-TWO private key\n").unwrap();
    // Another session's conversation.
    let other = d.project.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let model = ModelServer::start(vec![anthropic::text("SECRET-THREE reply")]).await;
    let (client, id, mut incoming) = tests::session_with_mode(&daemon, &other, Mode::Auto).await;
    start_run(
        &client,
        &id,
        "SECRET-THREE prompt",
        tests::run_options(&model),
    )
    .await;
    until_finished(&mut incoming).await;

    let data = paths.data_dir.display().to_string();
    let config = paths.config_dir.display().to_string();
    let key = ssh.join("id_ed25519").display().to_string();
    let results = run_calls(
        &daemon,
        auto_session(&d.project, &path_env(&d, &system_path())),
        &[
            bash(&format!("cat {}", env_file.display())),
            bash(&format!("grep -r 'SECRET-''THREE' {data} {config}")),
            bash("cat ~/.ssh/id_ed25519"),
            ("read", json!({ "path": env_file.display().to_string() })),
            ("read", json!({ "path": key })),
            ("grep", json!({ "pattern": "SECRET", "path": d.home.display().to_string() })),
            ("grep", json!({ "pattern": "SECRET", "path": data })),
            ("glob", json!({ "pattern": "**/*", "path": ssh.display().to_string() })),
            ("grep", json!({ "pattern": "SECRET-T[W]O", "path": d.project.parent().unwrap().display().to_string() })),
        ],
    )
    .await;
    for (i, (name, _, output)) in results.iter().enumerate() {
        assert!(
            !output.contains("SECRET-ONE")
                && !output.contains("SECRET-TWO")
                && !output.contains("SECRET-THREE"),
            "call {i} ({name}) leaked: {output}"
        );
    }
    assert!(
        results[2].1 && results[2].2.contains(".ssh") && results[2].2.contains("hidden"),
        "a command stopped by a hidden path says so: {}",
        results[2].2
    );
    for i in [3, 4, 6, 7] {
        assert!(
            results[i].1 && results[i].2.contains("hidden from the agent"),
            "{}",
            results[i].2
        );
    }
}

#[tokio::test]
async fn a_call_is_bounded_in_processes_and_tmp_and_the_limit_is_named() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    // Another session's run goes on meanwhile.
    let other = d.project.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let calm_model = ModelServer::start(vec![
        anthropic::tool("bash", json!({"command": "echo calm"})),
        anthropic::text("done"),
    ])
    .await;
    let env = path_env(&d, &system_path());
    let mut calm_client = daemon.client().await;
    let reply = calm_client
        .request(Request::CreateSession(auto_session(&other, &env)))
        .await
        .unwrap();
    let Reply::SessionCreated(calm) = reply else {
        panic!("{reply:?}")
    };
    let calm_id = calm.id;
    tests::subscribe(&calm_client, &calm_id, 0).await;
    let mut calm_events = calm_client.take_incoming().unwrap();
    let calm_run = async {
        start_run(
            &calm_client,
            &calm_id,
            "calm",
            tests::run_options(&calm_model),
        )
        .await;
        until_finished(&mut calm_events).await
    };
    let calls = [
        bash("for i in $(seq 1000); do sleep 100 & done; wait; echo all-started"),
        bash("fallocate -l 2G /tmp/big"),
    ];
    let heavy = run_calls(&daemon, auto_session(&d.project, &env), &calls);
    let (results, calm_run) = tokio::join!(heavy, calm_run);
    assert!(
        results[0].1 && results[0].2.contains("limit of 512 processes"),
        "{}",
        results[0].2
    );
    assert!(!results[0].2.contains("all-started"), "{}", results[0].2);
    assert!(
        results[1].1 && results[1].2.contains("tmp_size_mb"),
        "{}",
        results[1].2
    );
    let calm_results = tool_results(&calm_run);
    assert!(calm_results[0].2.starts_with("calm\n"), "{calm_results:?}");
}

#[tokio::test]
async fn a_fork_bomb_stays_within_the_call_whoever_runs_the_daemon() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let env = path_env(&d, &system_path());
    // Bounded by `timeout` too, so that a broken limit cannot take the machine down.
    let bomb = bash("timeout -s KILL 20 bash -c 'b() { b | b & }; b; sleep 30'; echo after");
    let watch = std::thread::spawn(|| {
        let mut most = 0;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(3) {
            let now = std::fs::read_dir("/proc")
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                        .count()
                })
                .unwrap_or(0);
            most = most.max(now);
        }
        most
    });
    let before = std::fs::read_dir("/proc").unwrap().count();
    let results = run_calls(&daemon, auto_session(&d.project, &env), &[bomb]).await;
    let most = watch.join().unwrap();
    assert!(
        results[0].2.contains("limit of 512 processes"),
        "{}",
        results[0].2
    );
    assert!(
        most < before + 2_000,
        "the machine's processes rose from about {before} to {most}"
    );
}

#[tokio::test]
async fn memory_and_free_space_limits_are_named() {
    let d = dirs();
    let daemon = Daemon::start_in(Home::with_config(
        "[sandbox]\nmax_memory_mb = 256\nmin_free_mb = 0\n",
    ));
    if !daemon.sandbox_or_skip() {
        return;
    }
    let env = path_env(&d, &system_path());
    let results = run_calls(&daemon, auto_session(&d.project, &env), &[bash(
            "python3 -c 'x = bytearray(2 * 1024 ** 3); print(len(x))' 2>&1 || perl -e '$x = \"a\" x (2 * 1024 ** 3); print length $x'",
        )],
    )
    .await;
    assert!(
        results[0].1 && results[0].2.contains("max_memory_mb"),
        "{}",
        results[0].2
    );
    drop(daemon);
    let full = Daemon::start_in(Home::with_config("[sandbox]\nmin_free_mb = 999999999\n"));
    let results = run_calls(&full, auto_session(&d.project, &env), &[bash("echo ran")]).await;
    assert!(
        results[0].1 && results[0].2.contains("min_free_mb") && !results[0].2.contains("ran\n"),
        "{}",
        results[0].2
    );
}
