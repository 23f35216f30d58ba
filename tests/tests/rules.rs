//! Permission rules mean what they say (SPEC §6): an allow rule never carries a second command,
//! a redirection outside the session or anything unparsable; a deny rule catches its program
//! however it is spelled, wrapped, chained or nested. Every row is a real `bash` call through
//! the daemon, and what a row must not do would leave a file behind.

use std::path::Path;

use protocol::{CreateSession, Mode, Reply, Request, RunOptions};
use serde_json::json;
use tests::model_server::{ModelServer, anthropic};
use tests::{Daemon, Home, WAIT, run_options, start_run, subscribe, tool_results, until_finished};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Allowed: it runs.
    Runs,
    /// Neither allowed nor denied by a rule: it asks (and, with nobody to ask, is refused).
    Asks,
    /// Refused by a deny rule.
    Denied,
}
use Expect::*;

const CONFIG: &str = r#"
[permissions]
allow = ["bash:cargo test*", "bash:echo *", "bash:ls*"]
deny = ["bash:rm -rf*", "bash:git push --force*"]
"#;

/// With allow rules, in the default mode: only what every rule covers runs.
const ALLOW_TABLE: &[(&str, Expect)] = &[
    ("cargo test", Runs),
    ("cargo test --all -q", Runs),
    ("cargo  test", Runs),
    ("cargo 'test'", Runs),
    ("cargo test > out.txt", Runs),
    ("cargo test 2>&1 | echo piped", Runs),
    ("cargo test 2>/dev/null", Runs),
    ("cargo test # ; touch pwned0", Runs),
    ("ls -la", Runs),
    ("cargo test; touch pwned1", Asks),
    ("cargo test && true || touch pwned2", Asks),
    ("cargo test $(touch pwned3)", Asks),
    ("cargo test `touch pwned4`", Asks),
    ("cargo test\ntouch pwned5", Asks),
    ("cargo test | sh -c 'touch pwned6'", Asks),
    ("cargo test & touch pwned7", Asks),
    ("(touch pwned8)", Asks),
    ("cargo test > ../pwned9", Asks),
    ("cargo test > {outside}/pwned10", Asks),
    ("echo hi > ../pwned11", Asks),
    ("cargo test <(touch pwned12)", Asks),
    ("RUSTFLAGS=x cargo test", Asks),
    ("PATH=.:$PATH; cargo test", Asks),
    ("sudo cargo test", Asks),
    ("./cargo test", Asks),
    ("cargo test \"unterminated", Asks),
    ("echo $(touch pwned13)", Asks),
    ("eval 'touch pwned14'", Asks),
    ("cargo test > $HOME/pwned15", Asks),
    ("cargo test\n(touch pwned16)", Asks),
];

/// With deny rules, in `bypass` mode: every spelling of a denied command is refused.
const DENY_TABLE: &[(&str, Expect)] = &[
    ("rm -rf victim1", Denied),
    ("rm -fr victim2", Denied),
    ("rm -r -f victim3", Denied),
    ("rm  -rf victim4", Denied),
    ("/bin/rm -rf victim5", Denied),
    ("\\rm -rf victim6", Denied),
    ("\"rm\" -rf victim7", Denied),
    ("r'm' -rf victim8", Denied),
    ("true; rm -rf victim9", Denied),
    ("true && rm -rf victim10", Denied),
    ("echo $(rm -rf victim11)", Denied),
    ("echo `rm -rf victim12`", Denied),
    ("(rm -rf victim13)", Denied),
    ("env X=1 rm -rf victim14", Denied),
    ("command rm -rf victim15", Denied),
    ("sudo rm -rf victim16", Denied),
    ("nohup rm -rf victim17", Denied),
    ("timeout 5 rm -rf victim18", Denied),
    ("bash -c 'rm -rf victim19'", Denied),
    ("sh -c \"rm -rf victim20\"", Denied),
    ("eval \"rm -rf victim21\"", Denied),
    ("echo victim22 | xargs rm -rf", Denied),
    ("find . -name victim23 -exec rm -rf {} +", Denied),
    ("rm --recursive --force victim24", Denied),
    ("rm -Rf victim25", Denied),
    ("if true; then rm -rf victim26; fi", Denied),
    ("true\nrm -rf victim27", Denied),
    ("f() { rm -rf victim31; }; f", Denied),
    ("git push --force origin", Denied),
    ("git push -f origin", Denied),
    ("$(echo rm) -rf victim28", Asks),
    ("R=rm; $R -rf victim29", Asks),
    ("rm $'-rf' victim30", Asks),
    ("rm -f single.txt", Runs),
    ("git push origin", Runs),
    ("ls victim1", Runs),
];

fn install_fakes(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    for name in ["cargo", "git"] {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho fake {name} \"$@\"\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}

/// Runs every row of `table` as one `bash` call of one reply and checks each result.
async fn run_table(
    daemon: &Daemon,
    project: &Path,
    outside: &Path,
    mode: Mode,
    table: &[(&str, Expect)],
    options: RunOptions,
) {
    let mut client = daemon.client().await;
    let path = format!(
        "{}:{}",
        project.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let reply = client
        .request(Request::CreateSession(CreateSession {
            cwd: project.to_string_lossy().into_owned(),
            model: None,
            provider: None,
            mode: Some(mode),
            max_turns: None,
            title: None,
            env: vec![("PATH".into(), path)],
            worktree: false,
        }))
        .await
        .unwrap();
    let Reply::SessionCreated(info) = reply else {
        panic!("{reply:?}")
    };
    subscribe(&client, &info.id, 0).await;
    let mut incoming = client.take_incoming().unwrap();
    start_run(&client, &info.id, "try everything", options).await;
    let events = tokio::time::timeout(WAIT * 3, until_finished(&mut incoming))
        .await
        .expect("the run finishes");
    let results = tool_results(&events);
    assert_eq!(results.len(), table.len());
    let mut wrong = Vec::new();
    for ((command, expect), (_, is_error, output)) in table.iter().zip(&results) {
        let command = command.replace("{outside}", &outside.display().to_string());
        let got = if output.starts_with("denied by the permission rule `bash:") {
            Denied
        } else if output.starts_with("denied: ") {
            Asks
        } else if !is_error && output.ends_with("[exit code: 0]") {
            Runs
        } else {
            wrong.push(format!("{command:?}: unexpected result {output:?}"));
            continue;
        };
        if got != *expect {
            wrong.push(format!(
                "{command:?}: expected {expect:?}, got {got:?}: {output}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn reply_with(table: &[(&str, Expect)], outside: &Path) -> tests::model_server::Scripted {
    let mut reply = anthropic::reply();
    for (i, (command, _)) in table.iter().enumerate() {
        let command = command.replace("{outside}", &outside.display().to_string());
        reply = reply.tool_with_id(&format!("toolu_{i}"), "bash", json!({"command": command}));
    }
    reply.build()
}

#[tokio::test]
async fn rules_hold_against_chains_substitutions_redirections_and_spellings() {
    assert!(ALLOW_TABLE.len() + DENY_TABLE.len() >= 40);
    // The project sits in a directory of its own, so that writes outside it stay in the test.
    let root = tempfile::tempdir().unwrap();
    let outside = root.path();
    let dir = &outside.join("project");
    install_fakes(&dir.join("bin"));
    for i in 1..=31 {
        std::fs::create_dir_all(dir.join(format!("victim{i}"))).unwrap();
        std::fs::write(dir.join(format!("victim{i}/keep")), "").unwrap();
    }
    std::fs::write(dir.join("single.txt"), "").unwrap();
    let server = ModelServer::start(vec![
        reply_with(ALLOW_TABLE, outside),
        anthropic::text("done"),
        reply_with(DENY_TABLE, outside),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::with_config(CONFIG));
    let mut unattended = run_options(&server);
    unattended.grants.clear();
    run_table(
        &daemon,
        dir,
        outside,
        Mode::Default,
        ALLOW_TABLE,
        unattended.clone(),
    )
    .await;
    run_table(&daemon, dir, outside, Mode::Bypass, DENY_TABLE, unattended).await;

    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .chain(std::fs::read_dir(outside).unwrap())
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("pwned"))
        .collect();
    assert!(
        left.is_empty(),
        "commands that should have asked ran: {left:?}"
    );
    for i in 1..=31 {
        assert!(
            dir.join(format!("victim{i}/keep")).exists(),
            "victim{i} was removed"
        );
    }
    assert!(
        !dir.join("single.txt").exists(),
        "an allowed command did not run"
    );
}
