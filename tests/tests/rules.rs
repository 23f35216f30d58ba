//! Permission rules mean what they say (docs/architecture.md#permissions-and-modes): an allow rule
//! never carries a second command, a redirection outside the session or anything unparsable; a deny
//! rule catches its program however it is spelled, wrapped, chained or nested. Every row is a real
//! `bash` call through the daemon, and what a row must not do would leave a file behind.

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
allow = ["bash:cargo test*", "bash:echo *", "bash:ls*", "bash:git status*"]
deny = ["bash:rm -rf*", "bash:git push --force*"]
"#;

/// Deny rules for the table of attempts to reach a denied program with every command granted.
const DENY_CONFIG: &str = r#"
[permissions]
deny = ["bash:rm*", "bash:curl*"]
"#;

/// With allow rules, in the default mode: only what every rule covers runs.
const ALLOW_TABLE: &[(&str, Expect)] = &[
    ("cargo test", Runs),
    ("cargo test --all -q", Runs),
    ("cargo  test", Runs),
    ("cargo 'test'", Runs),
    // A redirection is a write: in the default mode a write asks.
    ("cargo test > out.txt", Asks),
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
    // The plain cases still run without asking.
    ("ls", Runs),
    ("ls -la src", Runs),
    ("git status -s", Runs),
    ("echo $((1 + 2))", Runs),
    // Arithmetic and subscripts that bash evaluates as code.
    ("ls; [[ 'a[$(touch pwned17)]' -eq 0 ]]", Asks),
    ("ls; [[ -v 'a[$(touch pwned18)]' ]]", Asks),
    ("ls; for f in *; do [[ $f -eq 1 ]]; done", Asks),
    ("ls; (( a[$(touch pwned19)] ))", Asks),
    ("ls; test -v 'a[$(touch pwned20)]'", Asks),
    ("ls; read 'a[$(touch pwned21)]' <<< 1", Asks),
    ("ls; printf -v 'a[$(touch pwned22)]' x", Asks),
    ("ls; declare -i x='a[$(touch pwned23)]'", Asks),
    ("echo $((x))", Asks),
    ("ls; f() { touch pwned24; }; f", Asks),
    ("ls; let 'a[$(touch pwned25)]=1'", Asks),
    // Redirections resolve like write paths, and never go into a protected path.
    ("ls > dangling", Asks),
    ("ls > '[core]'", Asks),
    ("ls -d [[]* > .git/config; git status", Asks),
    ("ls > .git/hooks/pre-commit", Asks),
    ("ls >> ~/pwned26", Asks),
    ("ls > link/../pwned27", Asks),
    ("LD_PRELOAD=/x ls", Asks),
    (
        "git status; git -c core.fsmonitor='touch pwned28' status",
        Asks,
    ),
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

/// Every way found to reach a denied program with all commands granted (`--allow bash`): each
/// is refused by a rule or asks (and, with nobody to ask, is refused); `dN` must survive.
const DENIED_PROGRAM_TABLE: &[(&str, Expect)] = &[
    ("bash --norc -c 'rm d1'", Denied),
    ("env -S 'rm d2'", Denied),
    ("bash <<< 'rm d3'", Asks),
    ("echo 'rm d4' | sh", Asks),
    ("source <(echo rm d5)", Asks),
    ("alias x=rm; x d6", Asks),
    ("ln -s /bin/rm del && ./del d7", Asks),
    ("git -c alias.x='!rm d8' x", Asks),
    ("taskset -c 0 rm d9", Denied),
    ("flock lockfile rm d10", Denied),
    ("unshare -r rm d11", Denied),
    ("script -qc 'rm d12' /dev/null", Denied),
    ("chrt -o 0 rm d13", Denied),
    ("setpriv --nnp rm d14", Denied),
    ("strace -f -o /dev/null rm d15", Denied),
    ("python3 -c 'import os; os.remove(\"d16\")'", Asks),
    ("perl -e 'unlink \"d17\"'", Asks),
    ("awk 'BEGIN{system(\"rm d18\")}'", Asks),
    ("find . -name d19 -delete", Asks),
    ("nice -n 1 rm d20", Denied),
    ("timeout 5 rm d21", Denied),
    ("xargs rm <<< d22", Denied),
    ("find . -name d23 -exec rm {} +", Denied),
    ("command rm d24", Denied),
    ("exec rm d25", Denied),
    ("eval rm d26", Denied),
    ("sh -c \"rm d27\"", Denied),
    ("/bin/rm d28", Denied),
    ("\\rm d29", Denied),
    ("\"r\"m d30", Denied),
    ("busybox rm d31", Denied),
    ("sudo rm d32", Denied),
    ("nohup rm d33", Denied),
    ("stdbuf -o0 rm d34", Denied),
    ("ionice -c 3 rm d35", Denied),
    ("watch -n 1 rm d36", Denied),
    ("time rm d37", Denied),
    ("builtin eval rm d38", Denied),
    ("env rm d39", Denied),
    ("env -i PATH=/bin rm d40", Denied),
    ("bash -c 'eval \"rm d41\"'", Denied),
    ("git -c core.pager='rm d42' log", Asks),
    ("echo x | sed 'e rm d43'", Asks),
    ("ruby -e 'File.delete(\"d44\")'", Asks),
    ("node -e 'require(\"fs\").unlinkSync(\"d45\")'", Asks),
    ("cp /bin/rm ./cp_rm && ./cp_rm d47", Asks),
    ("$(printf rm) d49", Asks),
    ("r\\m d50", Denied),
    ("curl -o x http://127.0.0.1:1", Denied),
    ("trap 'rm d52' EXIT", Asks),
    ("bash -c \"$(echo rm) d53\"", Asks),
    ("declare -i x='a[$(rm d54)]'", Asks),
    ("[[ 'a[$(rm d55)]' -eq 0 ]]", Asks),
    ("vim -c '!rm d56' -c q", Asks),
    ("ssh -o ProxyCommand='rm d58' x", Asks),
    ("flock lockfile -c 'rm d59'", Denied),
    ("setsid rm d60", Denied),
    ("unshare --map-root-user rm d61", Denied),
    ("env --split-string='rm d62'", Denied),
    ("xargs -I{} rm {} <<< d63", Denied),
    ("find . -name d64 -execdir rm {} \\;", Denied),
    ("parallel rm ::: d65", Asks),
    ("hyperfine 'rm d66'", Asks),
    (". <(echo rm d67)", Asks),
    ("python3 - <<< 'import os; os.remove(\"d68\")'", Asks),
    ("perl -ne 'unlink \"d69\"' /dev/null", Asks),
    ("gawk 'BEGIN{system(\"rm d70\")}'", Asks),
    ("bash -c 'bash -c \"rm d71\"'", Denied),
    ("git -c core.sshCommand='rm d72' fetch", Asks),
    ("GIT_EXTERNAL_DIFF='rm d73' git diff", Asks),
    ("echo rm d74 | xargs -I{} sh -c '{}'", Asks),
    ("ln -s \"$(command -v rm)\" bin/lsx; lsx d75", Asks),
    ("exec -a ls rm d76", Denied),
    ("env -iS'rm d77'", Denied),
    ("echo d78 | xargs -l rm", Denied),
    ("xargs -e rm d79 < /dev/null", Denied),
    ("strace -f --output /dev/null rm d80", Denied),
    ("chroot --userspec root:root / rm \"$PWD/d81\"", Denied),
    ("prlimit --nofile=1000 rm d82", Asks),
    ("choom -n 0 -- rm d83", Asks),
    ("/lib64/ld-linux-x86-64.so.2 /bin/rm d84", Asks),
    ("make --eval='x:;rm d85' x", Asks),
    ("printf '!rm d86\\n' | ed", Asks),
    ("git ls-remote --upload-pack='rm d87; false' .", Asks),
    ("git grep -O'rm d88; true' x -- f", Asks),
    ("for x in 'a[$(rm d89)]'; do echo ${!x}; done", Asks),
    ("printf 'rm d90\\n' > s; bash s", Asks),
    ("printf 'r\\x6d d91\\n' > s0; bash s0", Asks),
    ("echo 'qm d92' | tr q r > s2; bash s2", Asks),
    (
        "printf 'import os;os.system(\"r\"+\"m d93\")' > p.py; python3 p.py",
        Asks,
    ),
    ("cp {outside}/programs/r? del2; ./del2 d94", Asks),
    ("cp {outside}/programs/r? del3", Runs),
    ("./del3 d95", Asks),
    // A script or program a command may have written, anywhere: outside the session directory,
    // under the temporary directory, first on `PATH` (by an earlier call too).
    ("printf 'r\\x6d d96\\n' > ../s96; bash ../s96", Asks),
    (
        "printf 'r\\x6d d97\\n' > {outside}/s97.sh; bash {outside}/s97.sh",
        Asks,
    ),
    ("printf 'r\\x6d d104\\n' > {outside}/s104.sh", Runs),
    ("bash {outside}/s104.sh", Asks),
    ("bash /dev/stdin <<< 'rm d98'", Asks),
    ("cp {outside}/programs/r? {outside}/bin/lsq", Runs),
    ("lsq d99", Asks),
    // A module Python finds in the session directory, written in an earlier call or this one.
    (
        "printf 'import os\\nos.remove(\"d105\")\\n' > zapmod.py",
        Runs,
    ),
    ("python3 -m zapmod", Asks),
    (
        "printf 'import os\\nos.remove(\"d106\")\\n' > zap2.py; python3 -m zap2",
        Asks,
    ),
    // Code other programs load from files by convention.
    ("printf 'all:\\n\\t\\x72m -f d107\\n' > Makefile", Runs),
    ("make", Asks),
    (
        "printf 'x:\\n\\t\\x72m -f d108\\n' > inc.mk; make -f inc.mk x",
        Asks,
    ),
    (
        "mkdir -p lib && printf 'import os\\nos.remove(\"../d109\")\\n' > lib/calendar.py",
        Runs,
    ),
    ("cd lib && python3 -m calendar", Asks),
    ("PYENV_HOOK_PATH=hk ls d110", Asks),
    (
        "printf 'import os\\nos.remove(\"d111\")\\n' > c111.py && python3 -m py_compile c111.py && mv __pycache__/c111.*.pyc calendar.pyc",
        Runs,
    ),
    ("python3 -m calendar", Asks),
    ("printf 'unlink \"d112\"; 1;\\n' > zap.pm", Runs),
    ("perl -I. -Mzap /usr/bin/pod2text /dev/null", Asks),
    // `PATH` changed for the commands after it.
    (
        "mkdir -p {outside}/pp && cp {outside}/programs/r? {outside}/pp/ls && export PATH={outside}/pp:$PATH; ls d100",
        Asks,
    ),
    (
        "mkdir -p {outside}/pq && cp {outside}/programs/r? {outside}/pq/ls; PATH={outside}/pq:$PATH; ls d101",
        Asks,
    ),
    (
        "mkdir -p {outside}/pe && cp {outside}/programs/r? {outside}/pe/ls; env PATH={outside}/pe ls d102",
        Asks,
    ),
    (
        "mkdir -p {outside}/pf && cp {outside}/programs/r? {outside}/pf/ls; for PATH in {outside}/pf; do ls d103; done",
        Asks,
    ),
    // The plain cases still run.
    ("ls d1", Runs),
    ("echo ok", Runs),
    ("git status -s", Runs),
];

/// A copy of the real `rm` as the only file of `{outside}/programs`, for the rows that reach it
/// through the glob `r?` without naming it: made by the test, so that the glob matches `rm`
/// alone whatever else the machine has installed (`/bin/rg`, say).
fn install_glob_target(outside: &Path) -> std::path::PathBuf {
    let programs = outside.join("programs");
    std::fs::create_dir_all(&programs).unwrap();
    std::fs::copy("/bin/rm", programs.join("rm")).unwrap();
    programs
}

/// The victims of [`DENIED_PROGRAM_TABLE`].
const VICTIMS: usize = 112;

/// The user's own programs on `PATH`, made before the session: older than it by more than the
/// daemon's allowance for coarse file times, so that they count as unchanged.
fn install_fakes(bin: &Path) {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(bin).unwrap();
    let mut newest = 0;
    for name in ["cargo", "git"] {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho fake {name} \"$@\"\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        newest = newest.max(meta.ctime() as u128 * 1_000_000_000 + meta.ctime_nsec() as u128);
    }
    // The condition is the clock itself: it must pass the files' change time by the margin.
    let ready = newest + 200_000_000;
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    };
    if now() < ready {
        std::thread::sleep(std::time::Duration::from_nanos(
            ready.saturating_sub(now()) as u64
        ));
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
        outside.join("bin").display(),
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
async fn a_denied_program_stays_denied_however_it_is_reached() {
    let root = tempfile::tempdir().unwrap();
    let outside = root.path();
    let dir = &outside.join("project");
    install_fakes(&outside.join("bin"));
    install_glob_target(outside);
    std::fs::create_dir_all(dir).unwrap();
    for i in 1..=VICTIMS {
        std::fs::write(dir.join(format!("d{i}")), "keep").unwrap();
    }
    let server = ModelServer::start(vec![
        reply_with(DENIED_PROGRAM_TABLE, outside),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::with_config(DENY_CONFIG));
    // `--allow bash`: every command is granted, so only the deny rules stand in the way.
    let mut options = run_options(&server);
    options.grants = vec![protocol::PermissionClass::Command];
    run_table(
        &daemon,
        dir,
        outside,
        Mode::Default,
        DENIED_PROGRAM_TABLE,
        options,
    )
    .await;
    let gone: Vec<String> = (1..=VICTIMS)
        .map(|i| format!("d{i}"))
        .filter(|name| !dir.join(name).exists())
        .collect();
    assert!(gone.is_empty(), "denied programs ran and removed {gone:?}");
    let asks = DENIED_PROGRAM_TABLE
        .iter()
        .filter(|(_, e)| *e == Asks)
        .count();
    let denied = DENIED_PROGRAM_TABLE
        .iter()
        .filter(|(_, e)| *e == Denied)
        .count();
    eprintln!(
        "{} attempts: {denied} refused by a rule, {asks} ask, {} plain commands run",
        DENIED_PROGRAM_TABLE.len(),
        DENIED_PROGRAM_TABLE.len() - asks - denied
    );
}

#[tokio::test]
async fn rules_hold_against_chains_substitutions_redirections_and_spellings() {
    assert!(ALLOW_TABLE.len() + DENY_TABLE.len() >= 40);
    // The project sits in a directory of its own, so that writes outside it stay in the test.
    let root = tempfile::tempdir().unwrap();
    let outside = root.path();
    let dir = &outside.join("project");
    install_fakes(&outside.join("bin"));
    for i in 1..=31 {
        std::fs::create_dir_all(dir.join(format!("victim{i}"))).unwrap();
        std::fs::write(dir.join(format!("victim{i}/keep")), "").unwrap();
    }
    std::fs::write(dir.join("single.txt"), "").unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::fs::write(dir.join(".git/config"), "").unwrap();
    // A dangling link to a file outside the project.
    std::os::unix::fs::symlink(outside.join("pwned-dangling"), dir.join("dangling")).unwrap();
    std::os::unix::fs::symlink(outside, dir.join("link")).unwrap();
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

    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default());
    assert!(
        !home.join("pwned26").exists(),
        "a redirection wrote into the home directory"
    );
    assert_eq!(
        std::fs::read(dir.join(".git/config")).unwrap(),
        b"",
        "the git config was written"
    );
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

/// Waits for the next permission request, checks that its question holds `says`, answers it
/// with `decision`, and returns the events seen meanwhile.
async fn answer(
    client: &agentctl::client::Client,
    session: &protocol::SessionId,
    incoming: &mut tokio::sync::mpsc::UnboundedReceiver<agentctl::client::Incoming>,
    says: &str,
    decision: protocol::Decision,
) -> Vec<protocol::SessionEvent> {
    let events = tests::events_until(incoming, |e| {
        matches!(e, protocol::Event::PermissionRequested { .. })
    })
    .await;
    let Some(protocol::Event::PermissionRequested {
        request, summary, ..
    }) = events.last().map(|e| e.event.clone())
    else {
        unreachable!("events_until ends with the request")
    };
    assert!(summary.contains(says), "{summary}");
    tests::answer(client, session, request, decision)
        .await
        .unwrap();
    events
}

#[tokio::test]
async fn once_a_change_of_path_was_allowed_every_program_on_path_asks() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("victim"), "keep").unwrap();
    let shadow = root.path().join("pp");
    let change = format!(
        "mkdir -p {0} && cp {1}/r? {0}/ls && export PATH={0}:$PATH",
        shadow.display(),
        install_glob_target(root.path()).display()
    );
    let server = ModelServer::start(vec![
        anthropic::tool("bash", json!({ "command": change })),
        anthropic::tool("bash", json!({ "command": "ls victim" })),
        anthropic::text("done"),
    ])
    .await;
    let daemon = Daemon::start_in(Home::with_config(DENY_CONFIG));
    let (client, id, mut incoming) = tests::session_with_mode(&daemon, &dir, Mode::Default).await;
    // Every command granted, and someone there to answer what the deny rules cannot check.
    let mut options = tests::asking_options(&server);
    options.grants = vec![protocol::PermissionClass::Command];
    start_run(&client, &id, "change PATH, then list", options).await;
    // The line that changes `PATH` asks; the user lets it run.
    let allow = protocol::Decision::Allow;
    let mut events = answer(&client, &id, &mut incoming, "changes `PATH`", allow).await;
    // From then on a name found through `PATH` asks, though each call's shell starts afresh.
    let deny = protocol::Decision::Deny;
    events.extend(answer(&client, &id, &mut incoming, "an earlier command", deny).await);
    events.extend(until_finished(&mut incoming).await);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(!results[0].1, "the change of PATH ran: {results:?}");
    assert!(results[1].1, "the later `ls` was refused: {results:?}");
    assert!(shadow.join("ls").exists());
    assert!(dir.join("victim").exists(), "the victim survives");
}
