//! The command line itself: examples in every `--help`, shell completions, and `agentctl` alone
//! opening the chat on a terminal.

use tests::model_server::ModelServer;
use tests::{Daemon, Home};

/// The subcommands a `--help` lists.
fn commands_of(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

fn help(home: &Home, path: &[&str]) -> String {
    let mut args = path.to_vec();
    args.push("--help");
    let out = home.run_agentctl(&args);
    assert!(out.status.success(), "{path:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_command_has_an_example_in_its_help() {
    let home = Home::new();
    let top = commands_of(&help(&home, &[]));
    assert!(top.len() > 20, "{top:?}");
    let mut checked = 0;
    for command in &top {
        let text = help(&home, &[command]);
        assert!(
            text.contains("Example"),
            "`agentctl {command} --help` has no example:\n{text}"
        );
        checked += 1;
        for sub in commands_of(&text) {
            let text = help(&home, &[command, &sub]);
            assert!(
                text.contains("Example"),
                "`agentctl {command} {sub} --help`:\n{text}"
            );
            checked += 1;
        }
    }
    assert!(checked > 28, "{checked}");
}

#[test]
fn bash_completions_name_the_subcommands() {
    let home = Home::new();
    let out = home.run_agentctl(&["completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for command in [
        "run",
        "chat",
        "attach",
        "rewind",
        "fork",
        "completions",
        "--worktree",
    ] {
        assert!(script.contains(command), "{command} missing");
    }
    assert!(home.run_agentctl(&["completions", "fish"]).status.success());
    assert!(home.run_agentctl(&["completions", "zsh"]).status.success());
}

#[test]
fn agentctl_alone_without_a_terminal_prints_the_help() {
    let home = Home::new();
    let out = home.run_agentctl(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Commands:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentctl_alone_on_a_terminal_opens_chat() {
    let project = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![]).await;
    let daemon = Daemon::start_in(Home::new());
    let pty = tests::pty::Pty::agentctl(&daemon.home, &server, project.path(), &[], (30, 120));
    pty.expect("Ctrl+D detaches");
    pty.expect("[idle");
    pty.send("\x04");
    assert_eq!(pty.wait(), Some(0));
}
