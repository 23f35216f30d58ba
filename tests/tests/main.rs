//! The end-to-end tests, one module per feature, in one test binary: each runs the real
//! `agentd` and `agentctl` (built into target/debug first) in a private home, so one binary
//! links the workspace once instead of once per feature.
//!
//! Every test shares this process with the others: a test passes what it changes (environment,
//! working directory) to the processes it starts, never to this one.

mod acp;
mod after_crash;
mod agent_loop;
mod answer_on_stdout;
mod background_shells;
mod board;
mod cancel;
mod chat;
mod chat_commands;
mod chat_reconnect;
mod chat_view;
mod checkpoints;
mod cli;
mod closed_pipes;
mod commands;
mod compaction;
mod config_fail_closed;
mod daemon;
mod durable;
mod escapes;
mod feed;
mod first_hour_daemon;
mod fork;
mod fuzz;
mod getting_back;
mod golden;
mod hooks;
mod hostile_chat;
mod hostile_far_end;
mod hostile_files;
mod hostile_input;
mod images_acp;
mod images_cli;
mod images_history;
mod images_queued;
mod images_store;
mod images_wire;
mod layout;
mod lightness;
mod live;
mod local_models;
mod lsp;
mod lsp_code;
mod lsp_hostile;
mod lsp_sandbox;
mod mcp_servers;
mod mcp_tools;
mod memory;
mod mentions;
mod model_guidance;
mod models;
mod oversize;
mod permission_answers;
mod plan;
mod plan_view;
mod planned_stop;
mod providers;
mod qwen_replay;
mod reconnect;
mod remote_board;
mod remote_bridge;
mod remote_sshd;
mod responses;
mod resume;
mod rules;
mod run;
mod sandbox;
mod sandbox_escape;
mod sandbox_trust;
mod service;
mod sessions;
mod shell_lifetime;
mod sizes;
mod skills_commands;
mod small_profile;
mod stalled_clients;
mod subagent_limits;
mod subagents;
mod summaries;
mod terminal_view;
mod text_calls;
mod tool_env;
mod trust;
mod versions;
mod web_fetch;
mod web_search;
mod worktrees;

/// A file in tests/ that is not a module here would never run (the package lists this one test
/// target only), so a new feature's file fails this test until it is declared above.
#[test]
fn every_file_in_tests_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let declared = main.lines().any(|l| l == format!("mod {name};"));
        if path.extension().is_some_and(|e| e == "rs") && name != "main" && !declared {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "add `mod NAME;` to tests/tests/main.rs for {missing:?}"
    );
}
