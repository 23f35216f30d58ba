//! What the deny rules cannot follow: code a command may have written, and changes to
//! what names run for later commands, in the same line or an earlier call. Where deny rules
//! exist these ask; without them nothing changes.

use std::time::{Duration, SystemTime};

use super::tests::path_var;
use super::*;
use serde_json::json;

/// A session directory in a scratch directory of its own, whose `bin` comes first on `PATH`.
struct Scratch {
    root: tempfile::TempDir,
    cwd: PathBuf,
    path: String,
    since: SystemTime,
}

impl Scratch {
    fn new() -> Scratch {
        // Taken before anything is written, with room for the coarse clock of file times.
        let since = SystemTime::now() - Duration::from_secs(2);
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("project");
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        std::fs::create_dir_all(root.path().join("bin")).unwrap();
        let path = format!("{}:{}", root.path().join("bin").display(), path_var());
        Scratch {
            root,
            cwd,
            path,
            since,
        }
    }

    fn bin(&self) -> PathBuf {
        self.root.path().join("bin")
    }

    /// The verdict on `command` with every command granted, under `deny = ["bash:rm*"]` or no
    /// rules.
    fn check(&self, command: &str, deny: bool, changed_before: bool) -> Verdict {
        let rules = PermissionRules {
            allow: Vec::new(),
            deny: if deny {
                vec!["bash:rm*".into()]
            } else {
                Vec::new()
            },
        };
        let args = json!({ "command": command });
        check(
            self.call(&args, changed_before),
            Mode::Default,
            &[PermissionClass::Command],
            &[],
            &rules,
        )
    }

    fn call<'a>(&'a self, args: &'a Value, changed_before: bool) -> Call<'a> {
        static PROTECTED: std::sync::LazyLock<ProtectedPaths> =
            std::sync::LazyLock::new(ProtectedPaths::default);
        Call {
            tool: Tool::Bash.into(),
            args,
            cwd: &self.cwd,
            plan_file: &self.cwd,
            sandbox: false,
            path_var: Some(&self.path),
            protected: &PROTECTED,
            since: self.since,
            lookup_changed_before: changed_before,
            target: None,
            search_host: None,
        }
    }

    /// Asserts `command` asks with a reason holding `says` where deny rules exist, and runs
    /// without them.
    fn asks(&self, command: &str, says: &str) {
        match self.check(command, true, false) {
            Verdict::Ask(Some(reason)) => assert!(reason.contains(says), "{command}: {reason}"),
            other => panic!("{command}: expected an ask, got {other:?}"),
        }
        assert_eq!(
            self.check(command, false, false),
            Verdict::Allow,
            "{command}"
        );
    }

    fn runs(&self, command: &str) {
        assert_eq!(
            self.check(command, true, false),
            Verdict::Allow,
            "{command}"
        );
    }
}

/// A copy of the system's `rm` at `path`.
fn copy_rm(path: &Path) {
    let rm = ["/usr/bin/rm", "/bin/rm"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("rm is installed");
    std::fs::copy(rm, path).unwrap();
}

#[test]
fn a_script_written_anywhere_asks() {
    let scratch = Scratch::new();
    // Not there yet: this line writes it.
    scratch.asks(
        "printf '\\x72m victim' > ../s; bash ../s",
        "`bash` runs `../s`",
    );
    std::fs::write(scratch.root.path().join("s"), "rm victim\n").unwrap();
    scratch.asks("bash ../s", "outside the system directories");
    // A script under the temporary directory, outside the session directory.
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("s.sh");
    std::fs::write(&script, "rm victim\n").unwrap();
    let script = script.display();
    for command in [
        format!("bash {script}"),
        format!("source {script}"),
        format!(". {script}"),
        format!("python3 {script}"),
        format!("nice bash {script}"),
    ] {
        scratch.asks(&command, "a command may have written it");
    }
    // Code read from a device, not a file.
    scratch.asks("bash /dev/stdin <<< 'rm victim'", "not a regular file");
    // In the session directory, as before.
    std::fs::write(scratch.cwd.join("local.sh"), "rm victim\n").unwrap();
    scratch.asks("bash local.sh", "session directory");
}

#[test]
fn a_program_written_first_on_path_asks() {
    let scratch = Scratch::new();
    copy_rm(&scratch.bin().join("ls"));
    scratch.asks("ls victim", "a command may have written it");
    let by_path = format!("{}/ls victim", scratch.bin().display());
    scratch.asks(&by_path, "a command may have written it");
    scratch.asks("timeout 5 ls victim", "a command may have written it");
}

#[test]
fn old_programs_and_scripts_still_run() {
    let mut scratch = Scratch::new();
    for command in [
        "ls",
        "ls -la sub",
        "/usr/bin/env",
        "env ls",
        "echo ok",
        "cd sub && ls",
    ] {
        scratch.runs(command);
    }
    let programs = Programs {
        cwd: &scratch.cwd,
        path: Some(&scratch.path),
        since: scratch.since,
    };
    if programs::find_in_path("cargo", programs).is_some() {
        scratch.runs("cargo test");
    }
    let system_script = std::fs::read_dir("/usr/lib")
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("os.py"))
        .find(|os| os.starts_with("/usr/lib/python3") && os.is_file());
    if let (Some(os), Some(_)) = (system_script, programs::find_in_path("python3", programs)) {
        scratch.runs(&format!("python3 {} --help", os.display()));
    }
    // The shell's code is looked into as commands, not taken for a script file.
    let line = shell::parse("bash -c 'ls'").unwrap();
    assert_eq!(written::written_code(&line, programs), None);
    // A user's own program or script, unchanged since the session began, runs.
    copy_rm(&scratch.bin().join("tool"));
    std::fs::write(scratch.root.path().join("old.sh"), "echo old\n").unwrap();
    scratch.since = SystemTime::now() + Duration::from_secs(3600);
    scratch.runs("tool --version");
    scratch.runs("bash ../old.sh");
    // A system program changed since then asks.
    scratch.since = SystemTime::UNIX_EPOCH;
    scratch.asks("ls", "a system file changed");
}

#[test]
fn changing_what_names_run_for_later_commands_asks() {
    let scratch = Scratch::new();
    for command in [
        "export PATH=/tmp/x:$PATH; ls victim",
        "PATH=/tmp/x:$PATH; ls victim",
        "PATH+=:/tmp/x; ls victim",
        "declare -x PATH=/tmp/x; ls victim",
        "export \"PATH=/tmp/x\"; ls victim",
        "read PATH <<< /tmp/x; ls victim",
        "printf -v PATH /tmp/x; ls victim",
        "wait -p PATH; ls victim",
        "for PATH in /tmp/x; do ls victim; done",
        "unset PATH; ls victim",
        "export BASH_ENV=/tmp/x/env; ls victim",
    ] {
        scratch.asks(command, "`");
    }
    for (command, says) in [
        ("hash -p /tmp/x/ls ls; ls victim", "hash -p"),
        ("alias ls=cat; ls victim", "alias"),
        ("enable -n echo; echo victim", "enable"),
        ("declare -n p=PATH; p=/tmp/x; ls victim", "declare -n"),
        ("V=PATH=/tmp/x; export \"$V\"; ls victim", "computed"),
        ("env PATH=/tmp/x ls victim", "PATH=/tmp/x"),
        ("watch -n 1 'PATH=/tmp/x; ls victim'", "PATH=/tmp/x"),
        ("export LD_PRELOAD=/tmp/x.so; ls victim", "LD_PRELOAD"),
    ] {
        scratch.asks(command, says);
    }
    for command in [
        "export FOO=1; ls",
        "X=1; ls",
        "for f in a b; do echo $f; done",
        "read -r line < /dev/null",
        "printf '%s' PATH",
        "hash ls",
        "sleep 0 & wait $!",
    ] {
        scratch.runs(command);
    }
}

#[test]
fn changing_directory_with_a_relative_path_entry_asks() {
    let mut scratch = Scratch::new();
    scratch.runs("cd sub && ls");
    scratch.path = format!("bin:{}", path_var());
    scratch.asks("cd sub && ls", "relative entry `bin`");
    scratch.path = format!("{}:", path_var());
    scratch.asks("cd sub && ls", "an empty entry");
}

#[test]
fn after_an_earlier_change_of_lookup_every_program_on_path_asks() {
    let scratch = Scratch::new();
    match scratch.check("ls victim", true, true) {
        Verdict::Ask(Some(reason)) => assert!(reason.contains("an earlier command"), "{reason}"),
        other => panic!("expected an ask, got {other:?}"),
    }
    // Builtins and programs named by their path are not looked up.
    assert_eq!(scratch.check("echo ok", true, true), Verdict::Allow);
    assert_eq!(scratch.check("/usr/bin/env", true, true), Verdict::Allow);
    assert_eq!(scratch.check("ls victim", false, true), Verdict::Allow);
    let changes =
        |command: &str| changes_lookup(scratch.call(&json!({ "command": command }), false));
    for command in [
        "export PATH=/tmp/x:$PATH",
        "PATH=/tmp/x",
        "hash -p /tmp/x/ls ls",
        "alias ls=rm",
        "cd /tmp; export PATH=/tmp/x",
    ] {
        assert!(changes(command), "{command}");
    }
    for command in [
        "ls",
        "export FOO=1",
        "export LD_PRELOAD=/x.so",
        "PATH=/x ls",
    ] {
        assert!(!changes(command), "{command}");
    }
}

#[test]
fn a_file_is_old_only_from_before_the_session_and_the_daemons_first_check() {
    let now = SystemTime::now();
    let ms = |at: SystemTime| {
        u64::try_from(
            at.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap()
    };
    let hour_ago = now - Duration::from_secs(3600);
    assert!(unchanged_since(ms(hour_ago)) <= hour_ago);
    // A session created after the daemon's first check: a command of another session may have
    // written a file since that check.
    assert!(unchanged_since(ms(now + Duration::from_secs(3600))) <= now);
    assert!(unchanged_since(0) <= now);
}
