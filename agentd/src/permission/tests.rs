//! The permission matrix, modes, rules and always-rules, decided call by call.

use super::*;
use serde_json::json;

/// When the tests started: what they write afterwards counts as written by a command.
pub(super) fn test_start() -> std::time::SystemTime {
    static START: std::sync::LazyLock<std::time::SystemTime> =
        std::sync::LazyLock::new(std::time::SystemTime::now);
    *START
}

/// The test process's own `PATH`, for telling what program names run.
pub(super) fn path_var() -> &'static str {
    static PATH: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| std::env::var("PATH").unwrap_or_default());
    &PATH
}

fn verdict(
    tool: Tool,
    args: Value,
    mode: Mode,
    grants: &[PermissionClass],
    always: &[AlwaysRule],
) -> Verdict {
    let cwd = std::env::temp_dir();
    let plan = cwd.join("plan-test.md");
    check(
        Call {
            tool: tool.into(),
            args: &args,
            cwd: &cwd,
            plan_file: &plan,
            sandbox: false,
            path_var: Some(path_var()),
            protected: &ProtectedPaths::default(),
            since: test_start(),
            lookup_changed_before: false,
            target: None,
            search_host: None,
        },
        mode,
        grants,
        always,
        &PermissionRules::default(),
    )
}

#[test]
fn the_default_matrix_reads_freely_and_asks_for_the_rest() {
    assert_eq!(
        verdict(Tool::Read, json!({"path": "a"}), Mode::Default, &[], &[]),
        Verdict::Allow
    );
    assert_eq!(
        verdict(Tool::Write, json!({"path": "a"}), Mode::Default, &[], &[]),
        Verdict::Ask(None)
    );
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "ls"}),
            Mode::Default,
            &[],
            &[]
        ),
        Verdict::Ask(None)
    );
    assert_eq!(
        verdict(Tool::Bash, json!({"command": "ls"}), Mode::Bypass, &[], &[]),
        Verdict::Allow
    );
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "ls"}),
            Mode::Default,
            &[PermissionClass::Command],
            &[]
        ),
        Verdict::Allow
    );
}

#[test]
fn accept_edits_allows_writes_inside_the_directory_only() {
    assert_eq!(
        verdict(
            Tool::Edit,
            json!({"path": "src/a.rs"}),
            Mode::AcceptEdits,
            &[],
            &[]
        ),
        Verdict::Allow
    );
    assert_eq!(
        verdict(
            Tool::Write,
            json!({"path": "/etc/x"}),
            Mode::AcceptEdits,
            &[],
            &[]
        ),
        Verdict::Ask(None)
    );
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "ls"}),
            Mode::AcceptEdits,
            &[],
            &[]
        ),
        Verdict::Ask(None)
    );
}

#[test]
fn plan_mode_allows_only_the_plan_file() {
    let plan = std::env::temp_dir().join("plan-test.md");
    let args = json!({"path": plan.to_string_lossy()});
    assert_eq!(
        verdict(Tool::Write, args, Mode::Plan, &[], &[]),
        Verdict::Allow
    );
    assert_eq!(
        verdict(
            Tool::Write,
            json!({"path": "other.md"}),
            Mode::Plan,
            &[],
            &[]
        ),
        Verdict::Ask(None)
    );
}

#[test]
fn an_always_rule_for_a_command_prefix_does_not_cover_chained_commands() {
    let cwd = std::env::temp_dir();
    let args = json!({"command": "cargo test --all"});
    let call = Call {
        tool: Tool::Bash.into(),
        args: &args,
        cwd: &cwd,
        plan_file: &cwd,
        sandbox: false,
        path_var: Some(path_var()),
        protected: &ProtectedPaths::default(),
        since: test_start(),
        lookup_changed_before: false,
        target: None,
        search_host: None,
    };
    let rule = rule_for(call).unwrap();
    assert_eq!(rule, AlwaysRule::CommandPrefix("cargo test".into()));
    let always = [rule];
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "cargo test -q"}),
            Mode::Default,
            &[],
            &always
        ),
        Verdict::Allow
    );
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "cargo testx"}),
            Mode::Default,
            &[],
            &always
        ),
        Verdict::Ask(None)
    );
    assert_eq!(
        verdict(
            Tool::Bash,
            json!({"command": "cargo test; rm -rf /"}),
            Mode::Default,
            &[],
            &always
        ),
        Verdict::Ask(None)
    );
}

#[test]
fn mcp_calls_ask_unless_allowed_by_list_rule_grant_or_bypass() {
    let cwd = std::env::temp_dir();
    let rules = PermissionRules {
        allow: vec!["mcp:git/log*".into()],
        deny: vec!["mcp:git/push".into()],
    };
    let args = json!({"remote": "origin"});
    let run = |tool: &str, allowed: bool, mode, grants: &[PermissionClass]| {
        check(
            Call {
                tool: CallTool::Mcp {
                    server: "git",
                    tool,
                    allowed,
                },
                args: &args,
                cwd: &cwd,
                plan_file: &cwd,
                sandbox: false,
                path_var: Some(path_var()),
                protected: &ProtectedPaths::default(),
                since: test_start(),
                lookup_changed_before: false,
                target: None,
                search_host: None,
            },
            mode,
            grants,
            &[],
            &rules,
        )
    };
    assert_eq!(run("status", false, Mode::Default, &[]), Verdict::Ask(None));
    assert_eq!(
        run("status", false, Mode::AcceptEdits, &[]),
        Verdict::Ask(None)
    );
    assert_eq!(run("status", true, Mode::Default, &[]), Verdict::Allow);
    assert_eq!(
        run("log_oneline", false, Mode::Default, &[]),
        Verdict::Allow
    );
    assert_eq!(
        run("status", false, Mode::Default, &[PermissionClass::Mcp]),
        Verdict::Allow
    );
    assert_eq!(run("status", false, Mode::Bypass, &[]), Verdict::Allow);
    assert!(matches!(
        run("push", true, Mode::Bypass, &[]),
        Verdict::Deny(_)
    ));
    let call = Call {
        tool: CallTool::Mcp {
            server: "git",
            tool: "status",
            allowed: false,
        },
        args: &args,
        cwd: &cwd,
        plan_file: &cwd,
        sandbox: false,
        path_var: Some(path_var()),
        protected: &ProtectedPaths::default(),
        since: test_start(),
        lookup_changed_before: false,
        target: None,
        search_host: None,
    };
    assert_eq!(
        rule_for(call),
        Some(AlwaysRule::McpTool("git/status".to_string()))
    );
    assert!(summary(call).contains("git/status"));
}

#[test]
fn config_rules_deny_before_anything_and_allow_without_asking() {
    let cwd = std::env::temp_dir();
    let rules = PermissionRules {
        allow: vec!["bash:cargo test*".into(), "write:docs/*".into()],
        deny: vec!["bash:rm *".into()],
    };
    let run = |tool: Tool, args: Value, mode| {
        check(
            Call {
                tool: tool.into(),
                args: &args,
                cwd: &cwd,
                plan_file: &cwd,
                sandbox: false,
                path_var: Some(path_var()),
                protected: &ProtectedPaths::default(),
                since: test_start(),
                lookup_changed_before: false,
                target: None,
                search_host: None,
            },
            mode,
            &[],
            &[],
            &rules,
        )
    };
    assert_eq!(
        run(
            Tool::Bash,
            json!({"command": "cargo test -q"}),
            Mode::Default
        ),
        Verdict::Allow
    );
    assert_eq!(
        run(Tool::Write, json!({"path": "docs/a.md"}), Mode::Default),
        Verdict::Allow
    );
    assert_eq!(
        run(Tool::Write, json!({"path": "src/a.rs"}), Mode::Default),
        Verdict::Ask(None)
    );
    assert!(matches!(
        run(Tool::Bash, json!({"command": "rm -rf x"}), Mode::Bypass),
        Verdict::Deny(_)
    ));
    assert!(
        PermissionRules {
            allow: vec!["nope".into()],
            deny: vec![]
        }
        .validate()
        .is_err()
    );
    assert!(
        PermissionRules {
            allow: vec!["fly:x".into()],
            deny: vec![]
        }
        .validate()
        .is_err()
    );
}

#[test]
fn path_rules_match_the_resolved_path() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("project");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, cwd.join("src/link")).unwrap();
    let rules = PermissionRules {
        allow: vec!["write:src/**".into()],
        deny: vec![format!(
            "write:{}/**",
            outside.canonicalize().unwrap().display()
        )],
    };
    let run = |path: &str| {
        let args = serde_json::json!({"path": path, "content": ""});
        check(
            Call {
                tool: Tool::Write.into(),
                args: &args,
                cwd: &cwd,
                plan_file: &cwd,
                sandbox: false,
                path_var: Some(path_var()),
                protected: &ProtectedPaths::default(),
                since: test_start(),
                lookup_changed_before: false,
                target: None,
                search_host: None,
            },
            Mode::Default,
            &[],
            &[],
            &rules,
        )
    };
    assert_eq!(run("src/a.rs"), Verdict::Allow);
    // Through the link, the file is outside: the deny rule sees where it really is.
    assert!(matches!(run("src/link/a.rs"), Verdict::Deny(_)));
    assert_eq!(run("src/../other.rs"), Verdict::Ask(None));
}

#[test]
fn auto_mode_runs_sandboxed_commands_and_inside_edits_and_asks_for_the_rest() {
    let cwd = std::env::temp_dir();
    let decide = |tool: CallTool<'_>, args: Value, sandbox: bool| {
        check(
            Call {
                tool,
                args: &args,
                cwd: &cwd,
                plan_file: &cwd,
                sandbox,
                path_var: Some(path_var()),
                protected: &ProtectedPaths::default(),
                since: test_start(),
                lookup_changed_before: false,
                target: None,
                search_host: None,
            },
            Mode::Auto,
            &[],
            &[],
            &PermissionRules::default(),
        )
    };
    let bash = CallTool::Builtin(Tool::Bash);
    assert_eq!(
        decide(bash, json!({"command": "make"}), true),
        Verdict::Allow
    );
    // Leaving the sandbox asks; so does auto mode where there is no sandbox.
    assert_eq!(
        decide(bash, json!({"command": "make", "sandbox": false}), true),
        Verdict::Ask(None)
    );
    assert_eq!(
        decide(bash, json!({"command": "make"}), false),
        Verdict::Ask(None)
    );
    let write = CallTool::Builtin(Tool::Write);
    assert_eq!(
        decide(write, json!({"path": "a.txt"}), true),
        Verdict::Allow
    );
    assert_eq!(
        decide(write, json!({"path": "/etc/x"}), true),
        Verdict::Ask(None)
    );
    let mcp = CallTool::Mcp {
        server: "s",
        tool: "t",
        allowed: false,
    };
    assert_eq!(decide(mcp, json!({}), true), Verdict::Ask(None));
}
