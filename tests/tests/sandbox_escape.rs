//! Auto mode's sandbox against a hostile model (docs/architecture.md#sandbox): every way out that
//! was found is tried by a real sandboxed `bash` call, and what it would have left behind is looked
//! for outside. Each test says why it skips on a machine without the kernel features.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use protocol::{CreateSession, Mode, Reply, Request};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::sandboxed::{auto_session, bash, git, run_calls};
use tests::{Daemon, Home, start_run, tool_results, until_finished};

/// A project (a git repository) and, beside it, a directory nothing may write to.
struct Dirs {
    _base: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir().unwrap();
    let dirs = Dirs {
        project: base.path().join("project"),
        outside: base.path().join("outside"),
        _base: base,
    };
    std::fs::create_dir(&dirs.project).unwrap();
    std::fs::create_dir(&dirs.outside).unwrap();
    git(&dirs.project, &["init", "-q"]);
    dirs
}

/// Whether some process holds a lock on `path` (the survivors below take one).
fn locked(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

fn unattended(model: &ModelServer) -> protocol::RunOptions {
    protocol::RunOptions {
        grants: Vec::new(),
        ..tests::run_options(model)
    }
}

/// Runs `commands` as sandboxed `bash` calls of one reply each in an auto-mode session in
/// `cwd`; the results, in order.
async fn run_sandboxed(
    daemon: &Daemon,
    cwd: &Path,
    worktree: bool,
    commands: &[String],
) -> Vec<(String, bool, String)> {
    let calls: Vec<_> = commands.iter().map(|c| bash(c)).collect();
    let env = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", std::env::var("HOME").unwrap_or_default()),
    ];
    let session = CreateSession {
        worktree,
        ..auto_session(cwd, &env)
    };
    run_calls(daemon, session, &calls).await
}

/// `prefix` running a shell that says it is ready, then waits for ever.
fn hold(prefix: &str, name: &str) -> String {
    format!("{prefix} sh -c 'echo ready > {name}.ready; exec sleep 300' > /dev/null 2>&1")
}

fn wait_ready(name: &str) -> String {
    format!("until [ -s {name}.ready ]; do :; done")
}

/// A command that leaves `prefix …` running in the background once it holds its lock.
fn survivor(prefix: &str, name: &str) -> String {
    format!("{} & {}", hold(prefix, name), wait_ready(name))
}

#[tokio::test]
async fn a_peer_gone_before_the_check_is_refused() {
    let daemon = Daemon::start();
    // The daemon is stopped while a child connects and exits, so that it looks only after.
    tests::signal(daemon.pid(), libc::SIGSTOP);
    let mut launder = Command::new(tests::binary("launder"))
        .arg(daemon.paths().socket)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(launder.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    tests::signal(daemon.pid(), libc::SIGCONT);
    assert_eq!(first, "sent");
    let answer = lines.next().unwrap().unwrap();
    launder.wait().unwrap();
    assert!(
        answer.starts_with("refused:") && answer.contains("cannot tell"),
        "{answer}"
    );
    // An honest client is still served.
    let client = daemon.client().await;
    assert!(matches!(
        client.request(Request::Status).await.unwrap(),
        Reply::Status(_)
    ));
}

#[tokio::test]
async fn nothing_written_in_the_sandbox_runs_later_outside_it() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let out = d.outside.display();
    let home = daemon.paths().config_dir.parent().unwrap().to_path_buf();
    let socket = daemon.paths().socket;
    let launder = tests::binary_in(&d.project, "launder");
    let agentctl = tests::binary_in(&d.project, "agentctl");
    let commands = [
        // The daemon cannot be reached: not by a laundered connection, not by agentctl.
        format!("{} {}", launder.display(), socket.display()),
        format!(
            "{} run --mode bypass --yes 'touch {out}/bypassed'",
            agentctl.display()
        ),
        // Git's config and hooks stay as they are.
        format!("git config core.fsmonitor 'touch {out}/fsmonitor'"),
        format!(
            "printf '#!/bin/sh\\ntouch {out}/hook\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"
        ),
        "git config core.hooksPath hooks2".to_string(),
        // A new repository that configures a command is removed once the call is over.
        format!(
            "mkdir -p sub && cd sub && git init -q && git config core.fsmonitor 'touch {out}/nested'"
        ),
        // A plain new repository is kept.
        "mkdir -p plain && cd plain && git init -q".to_string(),
        // The daemon's own files are out of sight.
        format!("ls {}", home.display()),
        format!("echo x > {}/planted", daemon.paths().data_dir.display()),
        // A private /tmp, which TMPDIR names.
        "echo private > /tmp/agentd-hostmark && cat /tmp/agentd-hostmark && echo \"$TMPDIR\""
            .to_string(),
        // Nothing outlives the call, however it detaches: each survivor holds a lock, and the
        // command ends once it has it.
        survivor("setsid env -i flock -x s1.lock", "s1"),
        format!(
            "(setsid sh -c \"{} &\" &); {}",
            hold("flock s2.lock", "s2"),
            wait_ready("s2")
        ),
        survivor("flock s3.lock", "s3"),
        format!(
            "(exec -c setsid {} &); {}",
            hold("flock s4.lock", "s4"),
            wait_ready("s4")
        ),
    ];
    let results = run_sandboxed(&daemon, &d.project, false, &commands).await;
    let output = |i: usize| &results[i].2;
    assert!(output(0).contains("cannot connect"), "{}", output(0));
    assert!(results[1].1, "agentctl in the sandbox: {}", output(1));
    for i in 2..=4 {
        assert!(results[i].1, "{}: {}", commands[i], output(i));
    }
    assert!(
        output(5).contains("[sandbox: the command created"),
        "{}",
        output(5)
    );
    assert!(!d.project.join("sub/.git").exists());
    assert!(
        d.project.join("plain/.git/config").exists(),
        "{}",
        output(6)
    );
    assert!(results[7].1, "{}", output(7));
    assert!(results[8].1, "{}", output(8));
    assert!(!daemon.paths().data_dir.join("planted").exists());
    assert!(output(9).contains("private\n/tmp\n"), "{}", output(9));
    assert!(
        !Path::new("/tmp/agentd-hostmark").exists(),
        "the host's /tmp was written"
    );
    for lock in ["s1.lock", "s2.lock", "s3.lock", "s4.lock"] {
        assert!(d.project.join(lock).exists(), "{lock} was not made");
        assert!(
            !locked(&d.project.join(lock)),
            "a process of the call outlived it ({lock})"
        );
    }
    // The user's git, outside the sandbox, runs nothing the sandbox planted.
    for dir in [
        d.project.clone(),
        d.project.join("sub"),
        d.project.join("plain"),
    ] {
        let status = git(&dir, &["status", "--short"]);
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    git(&d.project, &["checkout", "-q", "-b", "other"]);
    let left: Vec<_> = std::fs::read_dir(&d.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "planted commands ran outside the sandbox: {left:?}"
    );
    let sessions = daemon.client().await;
    let Reply::Sessions { sessions, .. } = sessions
        .request(Request::ListSessions { after: None })
        .await
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(sessions.len(), 1, "the sandbox drove the daemon");
}

#[tokio::test]
async fn the_daemon_home_inside_the_project_is_hidden_and_read_only() {
    let d = dirs();
    // AGENTD_HOME (config, data and socket) inside the session's own directory.
    let daemon = Daemon::start_in(Home::with_config_in(&d.project, ""));
    if !daemon.sandbox_or_skip() {
        return;
    }
    let paths = daemon.paths();
    let commands = [
        format!("ls -A {}", paths.config_dir.parent().unwrap().display()),
        format!("echo x > {}/config.toml", paths.config_dir.display()),
        format!(
            "mv {} {}.moved",
            paths.socket.display(),
            paths.socket.display()
        ),
        "echo fine > inside.txt".to_string(),
    ];
    let results = run_sandboxed(&daemon, &d.project, false, &commands).await;
    assert!(
        results[0].2.contains("(no output)"),
        "the home is visible: {}",
        results[0].2
    );
    assert!(results[1].1 && results[2].1, "{results:?}");
    assert!(paths.socket.exists(), "the socket was moved");
    assert_eq!(std::fs::read_to_string(paths.config_file()).unwrap(), "");
    assert!(!results[3].1, "{}", results[3].2);
}

#[tokio::test]
async fn the_parent_of_a_hidden_daemon_home_cannot_be_moved_to_plant_another() {
    let d = dirs();
    // AGENTD_HOME (config, data and socket) two levels down in the session's own directory.
    let nest = d.project.join("nest");
    std::fs::create_dir_all(&nest).unwrap();
    let daemon = Daemon::start_in(Home::with_config_in(&nest, ""));
    if !daemon.sandbox_or_skip() {
        return;
    }
    let paths = daemon.paths();
    let home = paths.config_dir.parent().unwrap().to_path_buf();
    // Move the parent away (the hidden mount would go with it), then plant a configuration
    // whose hook would run outside the sandbox at the daemon's next start.
    let plant = format!(
        "mv {nest} {nest}.old && mkdir -p {config} && echo planted > {file}",
        nest = nest.display(),
        config = paths.config_dir.display(),
        file = paths.config_file().display(),
    );
    let results = run_sandboxed(&daemon, &d.project, false, &[plant]).await;
    assert!(results[0].1, "the parent was moved: {results:?}");
    assert!(nest.is_dir() && !d.project.join("nest.old").exists());
    assert!(home.is_dir());
    assert_eq!(std::fs::read_to_string(paths.config_file()).unwrap(), "");
}

#[tokio::test]
async fn a_worktree_session_cannot_repoint_its_repository() {
    let d = dirs();
    std::fs::write(d.project.join("README.md"), "hi\n").unwrap();
    git(&d.project, &["add", "."]);
    git(&d.project, &["commit", "-qm", "first"]);
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let evil = d.outside.join("evil");
    std::fs::create_dir_all(evil.join("hooks")).unwrap();
    std::fs::write(
        evil.join("config"),
        format!(
            "[core]\n\tfsmonitor = touch {}/commondir-ran\n",
            d.outside.display()
        ),
    )
    .unwrap();
    let commands = [
        format!("echo {} > \"$(git rev-parse --git-dir)/commondir\"", evil.display()),
        "echo '[core]' > \"$(git rev-parse --git-dir)/config.worktree\"".to_string(),
        "echo changed > README.md && git -c user.name=t -c user.email=t@t commit -qam change && echo committed".to_string(),
    ];
    let results = run_sandboxed(&daemon, &d.project, true, &commands).await;
    assert!(results[0].1, "{}", results[0].2);
    assert!(results[1].1, "{}", results[1].2);
    assert!(
        results[2].2.contains("committed"),
        "the branch can still be committed to: {}",
        results[2].2
    );
    let worktrees = daemon.paths().data_dir.join("worktrees");
    let worktree = std::fs::read_dir(&worktrees)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let status = git(&worktree, &["status", "--short"]);
    assert!(status.status.success());
    assert!(!d.outside.join("commondir-ran").exists());
}

#[tokio::test]
async fn the_write_and_edit_tools_ask_before_touching_a_protected_path() {
    let d = dirs();
    let daemon = Daemon::start();
    let config = d.project.join(".git/config");
    let before = std::fs::read(&config).unwrap();
    let home = daemon.paths().config_file();
    let calls = [
        (
            "write",
            json!({"path": ".git/config", "content": "[core]\n\tfsmonitor = touch x\n"}),
        ),
        (
            "edit",
            json!({"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\thooksPath = h"}),
        ),
        (
            "write",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ),
        (
            "write",
            json!({"path": home.display().to_string(), "content": "x = 1\n"}),
        ),
        ("write", json!({"path": "ok.txt", "content": "fine\n"})),
    ];
    let mut script: Vec<_> = calls
        .iter()
        .map(|(t, a)| anthropic::tool(t, a.clone()))
        .collect();
    script.push(anthropic::text("done"));
    let model = ModelServer::start(script).await;
    let (client, id, mut incoming) =
        tests::session_with_mode(&daemon, &d.project, Mode::Auto).await;
    start_run(&client, &id, "plant", unattended(&model)).await;
    let results = tool_results(&until_finished(&mut incoming).await);
    for (i, (_, is_error, output)) in results.iter().take(4).enumerate() {
        assert!(
            *is_error && output.starts_with("denied: nobody is there to ask"),
            "{:?}: {output}",
            calls[i]
        );
    }
    assert!(!results[4].1, "{}", results[4].2);
    assert_eq!(std::fs::read(&config).unwrap(), before);
    assert!(!d.project.join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn git_directories_made_in_the_sandbox_cannot_carry_commands_out() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let out = d.outside.display();
    let commands = [
        // A command after 70 kB of padding in a new repository's config.
        format!(
            "mkdir -p padded && cd padded && git init -q && {{ cat .git/config; head -c 70000 /dev/zero | tr '\\0' x | sed 's/^/#/'; echo; printf '[core]\\n\\tfsmonitor = \"touch {out}/padded; false\"\\n'; }} > ../c && cat ../c > .git/config"
        ),
        // Hooks that link to a directory that stays writable.
        "mkdir -p linked && cd linked && git init -q && rm -rf .git/hooks && mkdir myhooks && ln -s ../myhooks .git/hooks".to_string(),
        format!("printf '#!/bin/sh\\ntouch {out}/linked-hook\\n' > linked/myhooks/pre-commit; chmod +x linked/myhooks/pre-commit"),
        // A directory git takes for a bare repository, with a pager.
        format!("mkdir -p bare/objects bare/refs && echo 'ref: refs/heads/main' > bare/HEAD && printf '[core]\\n\\tpager = \"touch {out}/pager; cat\"\\n' > bare/config"),
        // A key on the line of its section's header.
        format!("git init -q hdr && printf '[core]\\tfsmonitor\\t= \"touch {out}/hdr;:\"]\\n' >> hdr/.git/config"),
        // Repositories git finds through a linked HEAD, or a commondir.
        format!("mkdir -p b1/objects b1/refs && ln -s refs/heads/main b1/HEAD && printf '[core]\\n\\tpager = \"touch {out}/b1; cat\"\\n' > b1/config"),
        format!("mkdir -p b3 store3/objects store3/refs && echo 'ref: refs/heads/main' > b3/HEAD && echo ../store3 > b3/commondir && printf '[core]\\n\\tpager = \"touch {out}/b3; cat\"\\n' > store3/config"),
    ];
    let results = run_sandboxed(&daemon, &d.project, false, &commands).await;
    for (i, dir) in [
        "padded/.git",
        "linked/.git",
        "",
        "bare/HEAD",
        "hdr/.git",
        "b1/HEAD",
        "b3/HEAD",
    ]
    .iter()
    .enumerate()
    {
        if dir.is_empty() {
            continue;
        }
        assert!(
            results[i].2.contains("[sandbox: the command created"),
            "{}: {}",
            commands[i],
            results[i].2
        );
        assert!(!d.project.join(dir).exists(), "{dir} was kept");
    }
    // A repository moved aside and a copy with a command put in its place.
    git(&d.project, &["init", "-q", "hdr2"]);
    let swap = [format!(
        "mv hdr2 hdr2_old && mkdir hdr2 && cp -a hdr2_old/.git hdr2/.git && printf '[core]\\n\\tfsmonitor = \"touch {out}/swap; false\"\\n' >> hdr2/.git/config"
    )];
    let results = run_sandboxed(&daemon, &d.project, false, &swap).await;
    // The directory holding a protected one is a mount point inside the sandbox: it cannot be
    // moved aside at all.
    assert!(results[0].1, "{}", results[0].2);
    assert!(results[0].2.contains("busy"), "{}", results[0].2);
    assert!(!d.project.join("hdr2_old").exists());
    let config = std::fs::read_to_string(d.project.join("hdr2/.git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    // The user's git, outside the sandbox, runs nothing the sandbox planted.
    for dir in [
        "hdr", "b1", "b3", "bare", "hdr2", "hdr2_old", "padded", "linked",
    ] {
        if d.project.join(dir).exists() {
            let _ = git(&d.project.join(dir), &["status", "--short"]);
            let _ = git(&d.project.join(dir), &["-p", "log"]);
        }
    }
    let left: Vec<_> = std::fs::read_dir(&d.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn links_left_in_the_private_tmp_cannot_send_mounts_to_the_host() {
    // The project lives under the host's /tmp: each call brings it back into the private one.
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    let first = d
        .project
        .iter()
        .nth(2)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let commands = [
        format!(
            "mv /tmp/{first} /tmp/moved && ln -s {} /tmp/{first} && echo planted",
            d.outside.display()
        ),
        "echo again > again.txt && echo fine".to_string(),
    ];
    let results = run_sandboxed(&daemon, &d.project, false, &commands).await;
    assert!(results[0].2.contains("planted"), "{}", results[0].2);
    assert!(results[1].2.contains("fine"), "{}", results[1].2);
    assert!(d.project.join("again.txt").exists());
    let left: Vec<_> = std::fs::read_dir(&d.outside)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        left.is_empty(),
        "a mount point was made on the host: {left:?}"
    );
}

#[tokio::test]
async fn a_session_in_the_home_directory_cannot_add_dot_files() {
    let d = dirs();
    let daemon = Daemon::start();
    if !daemon.sandbox_or_skip() {
        return;
    }
    // The project is the home directory of the commands.
    std::fs::write(d.project.join(".bashrc"), "# mine\n").unwrap();
    let script = vec![
        anthropic::tool(
            "bash",
            json!({"command": "echo 'touch x' >> .bashrc; echo 'alias ls=x' > .bash_aliases; mkdir -p .local/bin && printf '#!/bin/sh\\n' > .local/bin/git; mkdir -p bin && printf '#!/bin/sh\\n' > bin/ls; echo ok > notes.txt"}),
        ),
        anthropic::text("done"),
    ];
    let model = ModelServer::start(script).await;
    let mut client = daemon.client().await;
    let Reply::SessionCreated(info) = client
        .request(Request::CreateSession(CreateSession {
            cwd: d.project.to_string_lossy().into_owned(),
            model: None,
            provider: None,
            mode: Some(Mode::Auto),
            max_turns: None,
            title: None,
            env: vec![
                ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
                ("HOME".into(), d.project.to_string_lossy().into_owned()),
            ],
            worktree: false,
        }))
        .await
        .unwrap()
    else {
        panic!()
    };
    tests::subscribe(&client, &info.id, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &info.id, "settle in", unattended(&model)).await;
    let results = tool_results(&until_finished(&mut incoming).await);
    assert_eq!(
        std::fs::read_to_string(d.project.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(
        !d.project.join(".bash_aliases").exists(),
        "{}",
        results[0].2
    );
    assert!(!d.project.join(".local").exists(), "{}", results[0].2);
    assert!(!d.project.join("bin").exists(), "{}", results[0].2);
    assert!(d.project.join("notes.txt").exists(), "{}", results[0].2);
}
