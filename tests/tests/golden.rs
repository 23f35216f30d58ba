//! Golden bytes: one encoded frame of every request, reply and event kind. An accidental change
//! of the wire format fails here; an intended one bumps `PROTOCOL_VERSION` and regenerates the
//! file with `UPDATE_GOLDEN=1 cargo test -p tests --test main golden::`.

use std::collections::BTreeSet;
use std::fmt::Write;

use protocol::*;

fn session() -> SessionId {
    SessionId("0a1b2c3d".into())
}

fn info() -> SessionInfo {
    SessionInfo {
        id: session(),
        cwd: "/work/app".into(),
        title: Some("fix tests".into()),
        model: None,
        provider: Some("local".into()),
        mode: Mode::AcceptEdits,
        state: SessionState::Running,
        turns: 3,
        steer_queued: 1,
        follow_up_queued: 2,
        created_ms: 1_700_000_000_000,
        last_activity_ms: 1_700_000_001_000,
        last_seq: 42,
        branch: Some("agentd/0a1b2c3d".into()),
        parent: Some(SessionId("9f8e7d6c".into())),
    }
}

fn usage() -> TokenUsage {
    TokenUsage {
        input: 120,
        output: 45,
        cache_read: 1000,
        cache_write: 300,
    }
}

fn call() -> ToolCallInfo {
    ToolCallInfo {
        id: "toolu_01".into(),
        name: "read".into(),
        args: r#"{"path":"README.md"}"#.into(),
    }
}

fn requests() -> Vec<Request> {
    vec![
        Request::CreateSession(CreateSession {
            cwd: "/work/app".into(),
            model: Some("claude-sonnet-4-5".into()),
            provider: None,
            mode: Some(Mode::Plan),
            max_turns: Some(100),
            title: None,
            env: vec![("PATH".into(), "/usr/bin".into())],
            worktree: false,
        }),
        Request::ListSessions {
            after: Some(ListCursor {
                created_ms: 1_700_000_000_000,
                id: session(),
            }),
        },
        Request::GetHistory {
            session: session(),
            from_seq: 12,
        },
        Request::Subscribe {
            session: session(),
            from_seq: 7,
        },
        Request::Unsubscribe { session: session() },
        Request::Send {
            session: session(),
            text: "fix the failing test".into(),
            images: vec![ImageUpload {
                name: "shot.png".into(),
                data: vec![0x89, b'P', b'N', b'G'],
            }],
            delivery: Delivery::FollowUp,
            options: RunOptions {
                max_turns: Some(0),
                grants: vec![PermissionClass::Write],
                deny_unanswered: true,
                model: None,
                provider: Some("local".into()),
                env: vec![("OPENAI_BASE_URL".into(), "http://127.0.0.1:8080/v1".into())],
                ignore_config: true,
            },
        },
        Request::Cancel { session: session() },
        Request::Answer {
            session: session(),
            request: PermissionRequestId(2),
            decision: Decision::AllowAlways,
        },
        Request::SetMode {
            session: session(),
            mode: Mode::Bypass,
        },
        Request::Compact { session: session() },
        Request::DeleteSession {
            session: session(),
            force: true,
        },
        Request::Status,
        Request::McpList,
        Request::LspList,
        Request::Extensions {
            cwd: "/work/app".into(),
        },
        Request::SetSessionMcpServers {
            session: session(),
            servers: vec![McpServerSpec {
                name: "files".into(),
                command: Some("mcp-files".into()),
                args: vec!["--root".into(), ".".into()],
                env: vec![("LOG".into(), "warn".into())],
                url: None,
                headers: vec![],
            }],
        },
        Request::Diff {
            session: session(),
            run: Some(RunId(2)),
        },
        Request::Rewind {
            session: session(),
            run: None,
            force: true,
            dry_run: false,
        },
        Request::Fork {
            session: session(),
            turn: Some(4),
        },
        Request::Shutdown { now: false },
        Request::SendSubscribed {
            session: session(),
            text: "go on".into(),
            images: Vec::new(),
            delivery: Delivery::Steer,
            options: RunOptions::default(),
        },
        Request::SetResume {
            session: session(),
            resume: false,
        },
        Request::SubscribeSummaries,
        Request::UnsubscribeSummaries,
        Request::ListModels {
            session: session(),
            env: vec![("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:8080".into())],
        },
        Request::SetModel {
            session: session(),
            model: "claude-haiku-4-5".into(),
        },
        Request::Usage { session: session() },
        Request::Shells { session: session() },
        Request::KillShell {
            session: session(),
            shell: 2,
        },
        Request::GetImage {
            session: session(),
            hash: "5f".repeat(32),
        },
    ]
}

fn events() -> Vec<Event> {
    vec![
        Event::RunStarted {
            run: RunId(1),
            trigger: Delivery::Steer,
            max_turns: 100,
            model: "claude-sonnet-4-5".into(),
            provider: "anthropic".into(),
        },
        Event::UserMessage {
            text: "hi".into(),
            delivery: Delivery::FollowUp,
            images: vec![image()],
        },
        Event::TurnStarted { turn: 1 },
        Event::TextDelta { text: "Hel".into() },
        Event::ThinkingDelta { text: "hmm".into() },
        Event::AssistantMessage {
            turn: 1,
            text: "Hello".into(),
            thinking: "hmm".into(),
            tool_calls: vec![call()],
            stop_reason: ModelStopReason::ToolUse,
            folds: Some((4, 5)),
        },
        Event::ToolCall(call()),
        Event::ToolResult {
            id: "toolu_01".into(),
            name: "read".into(),
            is_error: false,
            output: "1\t# app".into(),
            duration_ms: 3,
            images: vec![image()],
        },
        Event::PermissionRequested {
            session: None,
            request: PermissionRequestId(1),
            tool: "bash".into(),
            args: r#"{"command":"cargo test"}"#.into(),
            summary: "run `cargo test`".into(),
        },
        Event::PermissionResolved {
            session: Some(SessionId("c0ffee00".into())),
            request: PermissionRequestId(1),
            decision: Decision::Deny,
            by_client: "agentctl #3".into(),
        },
        Event::QueueChanged {
            steer: vec!["a".into()],
            follow_up: vec!["b".into(), "c".into()],
            steer_images: vec![vec![image()]],
            follow_up_images: Vec::new(),
        },
        Event::Usage {
            turn: usage(),
            cumulative: usage(),
            cost_micros: Some(12_345),
        },
        Event::Retrying {
            attempt: 2,
            wait_ms: 1500,
            reason: "HTTP 529 overloaded_error".into(),
        },
        Event::Compacted {
            before_tokens: 150_000,
            after_tokens: 20_000,
        },
        Event::Health {
            kind: HealthKind::RepeatedCalls,
            detail: "5 identical replies".into(),
        },
        Event::Health {
            kind: HealthKind::RepeatedText,
            detail: "cut".into(),
        },
        Event::Notice {
            text: "tool calls written as text were read as calls".into(),
        },
        Event::FileChanged {
            path: "src/lib.rs".into(),
        },
        Event::ModeChanged { mode: Mode::Plan },
        Event::ModelChanged {
            model: "claude-haiku-4-5".into(),
        },
        Event::ToolOutput {
            id: "toolu_1".into(),
            text: "Compiling agentd\n".into(),
            omitted: 120,
        },
        Event::Rewound {
            run: RunId(2),
            restored: vec!["src/lib.rs".into()],
            removed: vec!["a/b/c".into()],
            kept: vec!["notes.md".into()],
        },
        Event::RunFinished {
            run: RunId(1),
            stop_reason: StopReason::Aborted,
            turns: 4,
            truncated: false,
            usage: usage(),
            returned_messages: vec![QueuedMessage {
                text: "later".into(),
                delivery: Delivery::FollowUp,
                images: Vec::new(),
            }],
            error: None,
            nothing_changed: true,
        },
        Event::Error {
            message: "provider failed".into(),
        },
        Event::SessionDeleted,
        Event::RunResumed {
            run: RunId(3),
            reason: protocol::ResumeReason::Crash,
        },
        Event::SubagentStarted {
            call: "toolu_7".into(),
            child: SessionId("c0ffee00".into()),
            description: "find the config".into(),
            agent: "general".into(),
            background: false,
        },
        Event::SubagentActivity {
            child: SessionId("c0ffee00".into()),
            activity: "bash: cargo test".into(),
        },
        Event::SubagentFinished {
            child: SessionId("c0ffee00".into()),
            stop_reason: StopReason::Completed,
            turns: 2,
            usage: usage(),
            cost_micros: Some(2_500),
            duration_ms: 1234,
        },
        Event::HookRan {
            event: "PreToolUse".into(),
            command: "./check.sh".into(),
            exit: Some(2),
            duration_ms: 12,
            decision: Some("block".into()),
        },
        Event::PlanUpdated {
            items: vec![
                protocol::PlanItem {
                    text: "read the failing test".into(),
                    status: protocol::PlanStatus::Done,
                },
                protocol::PlanItem {
                    text: "fix the parser".into(),
                    status: protocol::PlanStatus::InProgress,
                },
                protocol::PlanItem {
                    text: "run the suite".into(),
                    status: protocol::PlanStatus::Pending,
                },
            ],
        },
        Event::ShellStarted {
            shell: 1,
            command: "npm run dev".into(),
        },
        Event::ShellEnded {
            shell: 1,
            end: protocol::ShellEnd::Exited { code: 0 },
        },
        Event::ShellEnded {
            shell: 2,
            end: protocol::ShellEnd::Signalled { signal: 9 },
        },
        Event::ShellEnded {
            shell: 3,
            end: protocol::ShellEnd::Killed,
        },
        Event::ShellEnded {
            shell: 4,
            end: protocol::ShellEnd::Lost,
        },
    ]
}

fn replies() -> Vec<Reply> {
    let event = SessionEvent {
        session: session(),
        seq: 1,
        time_ms: 1_700_000_000_500,
        event: Event::TurnStarted { turn: 1 },
    };
    vec![
        Reply::Done,
        Reply::SessionCreated(info()),
        Reply::Sessions {
            sessions: vec![info()],
            next: None,
            unreadable: vec!["/data/sessions/x: meta.json is empty".into()],
        },
        Reply::History {
            session: info(),
            events: vec![event],
            next_seq: Some(9),
        },
        Reply::Subscribed(info()),
        Reply::Sent {
            started: Some(RunId(2)),
        },
        Reply::Status(DaemonStatus {
            loaded: 3,
            daemon_version: "0.1.0".into(),
            protocol_version: 1,
            pid: 4242,
            uptime_ms: 60_000,
            socket: "/run/user/1000/agentd/agentd.sock".into(),
            sessions: 3,
            running: 1,
            clients: 2,
            rss_bytes: Some(10 << 20),
            data_dir: "/home/u/.local/share/agentd".into(),
            config_error: Some("/home/u/.config/agentd/config.toml:2: invalid type".into()),
            config_fail_closed: true,
            config_generation: 1,
            mcp_servers: vec![mcp_server()],
            lsp_servers: 1,
            sandbox: "Landlock ABI 7 (writes confined), no network (a user and network namespace)"
                .into(),
        }),
        Reply::McpServers(vec![mcp_server()]),
        Reply::LspServers(vec![lsp_server()]),
        Reply::Extensions(Extensions {
            hooks: vec![HookInfo {
                event: "PreToolUse".into(),
                matcher: Some("bash".into()),
                command: "./check.sh".into(),
                timeout_secs: 60,
                on_error: "block".into(),
            }],
            skills: vec![SkillInfo {
                name: "deploy".into(),
                description: "How to deploy".into(),
                path: "/work/app/.agents/skills/deploy/SKILL.md".into(),
            }],
            commands: vec![CommandInfo {
                name: "greet".into(),
                description: "Greet someone".into(),
                argument_hint: Some("NAME".into()),
            }],
        }),
        Reply::Diff(RunDiff {
            run: RunId(2),
            files: vec![FileChange {
                path: "src/lib.rs".into(),
                kind: ChangeKind::Modified,
                added: 1,
                removed: 1,
                binary: false,
            }],
            patch: "@@ -1 +1 @@\n-a\n+b\n".into(),
            truncated: false,
            not_stored: vec!["big.bin".into()],
            open: false,
        }),
        Reply::Rewound(RewindReport {
            run: RunId(2),
            restored: vec!["src/lib.rs".into()],
            removed: vec!["a/b/c".into()],
            kept: vec![],
            failed: vec!["big.bin: not stored".into()],
            dry_run: true,
        }),
        Reply::Deleted {
            notes: vec!["worktree kept".into()],
        },
        Reply::SentSubscribed {
            info: info(),
            started: None,
        },
        Reply::Stopping {
            calls: 2,
            grace_ms: 30_000,
        },
        Reply::Models {
            provider: "anthropic".into(),
            current: Some("claude-sonnet-4-5".into()),
            models: vec!["claude-sonnet-4-5".into(), "claude-haiku-4-5".into()],
        },
        Reply::Usage(UsageReport {
            last_run: Some(RunId(2)),
            run: UsageTotals {
                models: vec![ModelUsage {
                    model: "claude-haiku-4-5".into(),
                    provider: "anthropic".into(),
                    usage: usage(),
                    cost_micros: Some(900),
                }],
                subagents: TokenUsage::default(),
            },
            session: UsageTotals {
                models: vec![ModelUsage {
                    model: "claude-sonnet-4-5".into(),
                    provider: "anthropic".into(),
                    usage: usage(),
                    cost_micros: None,
                }],
                subagents: usage(),
            },
        }),
        Reply::Shells(vec![protocol::ShellInfo {
            shell: 1,
            command: "python3 -m http.server 8000".into(),
            started_ms: 1_700_000_000_100,
            end: None,
            tail: "Serving HTTP on 0.0.0.0 port 8000".into(),
            bytes: 34,
        }]),
        Reply::Image(ImageBytes {
            image: image(),
            data: vec![0x89, b'P', b'N', b'G'],
        }),
    ]
}

fn image() -> ImageRef {
    ImageRef {
        hash: "5f".repeat(32),
        media_type: "image/png".into(),
        size: 48_213,
        width: 1280,
        height: 720,
        name: "shot.png".into(),
    }
}

fn mcp_server() -> McpServerInfo {
    McpServerInfo {
        name: "github".into(),
        transport: "stdio".into(),
        scope: "session".into(),
        session: Some(session()),
        state: "ready".into(),
        pid: Some(4343),
        tools: 12,
        last_error: None,
    }
}

fn lsp_server() -> LspServerInfo {
    LspServerInfo {
        name: "pyright".into(),
        root: "/work/app".into(),
        state: "ready".into(),
        pid: Some(4444),
        sessions: vec![session()],
        languages: vec!["py".into(), "pyi".into()],
        restarts: 1,
        last_error: Some("exited: killed".into()),
    }
}

fn request_name(request: &Request) -> &'static str {
    match request {
        Request::CreateSession(_) => "CreateSession",
        Request::ListSessions { .. } => "ListSessions",
        Request::GetHistory { .. } => "GetHistory",
        Request::Subscribe { .. } => "Subscribe",
        Request::Unsubscribe { .. } => "Unsubscribe",
        Request::Send { .. } => "Send",
        Request::Cancel { .. } => "Cancel",
        Request::Answer { .. } => "Answer",
        Request::SetMode { .. } => "SetMode",
        Request::Compact { .. } => "Compact",
        Request::DeleteSession { .. } => "DeleteSession",
        Request::Status => "Status",
        Request::McpList => "McpList",
        Request::LspList => "LspList",
        Request::Extensions { .. } => "Extensions",
        Request::SetSessionMcpServers { .. } => "SetSessionMcpServers",
        Request::Diff { .. } => "Diff",
        Request::Rewind { .. } => "Rewind",
        Request::Fork { .. } => "Fork",
        Request::Shutdown { .. } => "Shutdown",
        Request::SendSubscribed { .. } => "SendSubscribed",
        Request::SetResume { .. } => "SetResume",
        Request::SubscribeSummaries => "SubscribeSummaries",
        Request::UnsubscribeSummaries => "UnsubscribeSummaries",
        Request::ListModels { .. } => "ListModels",
        Request::SetModel { .. } => "SetModel",
        Request::Usage { .. } => "Usage",
        Request::Shells { .. } => "Shells",
        Request::KillShell { .. } => "KillShell",
        Request::GetImage { .. } => "GetImage",
    }
}

fn reply_name(reply: &Reply) -> &'static str {
    match reply {
        Reply::Done => "Done",
        Reply::SessionCreated(_) => "SessionCreated",
        Reply::Sessions { .. } => "Sessions",
        Reply::History { .. } => "History",
        Reply::Subscribed(_) => "Subscribed",
        Reply::Sent { .. } => "Sent",
        Reply::Status(_) => "Status",
        Reply::McpServers(_) => "McpServers",
        Reply::LspServers(_) => "LspServers",
        Reply::Extensions(_) => "Extensions",
        Reply::Diff(_) => "Diff",
        Reply::Rewound(_) => "Rewound",
        Reply::Deleted { .. } => "Deleted",
        Reply::SentSubscribed { .. } => "SentSubscribed",
        Reply::Stopping { .. } => "Stopping",
        Reply::Models { .. } => "Models",
        Reply::Usage(_) => "Usage",
        Reply::Shells(_) => "Shells",
        Reply::Image(_) => "Image",
    }
}

/// Every frame, named, in a fixed order.
fn frames() -> Vec<(String, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut push = |name: String, bytes: Vec<u8>| frames.push((name, bytes));
    push(
        "client Hello".into(),
        frame::encode(&ClientFrame::Hello(Hello {
            protocol_version: PROTOCOL_VERSION,
            client: "agentctl 0.1.0 (run)".into(),
        }))
        .unwrap(),
    );
    for request in requests() {
        let name = format!("request {}", request_name(&request));
        push(
            name,
            frame::encode(&ClientFrame::Request {
                id: RequestId(9),
                request,
            })
            .unwrap(),
        );
    }
    push(
        "server Welcome".into(),
        frame::encode(&ServerFrame::Welcome(Welcome {
            protocol_version: 1,
            daemon_version: "0.1.0".into(),
            pid: 4242,
        }))
        .unwrap(),
    );
    for reply in replies() {
        let name = format!("reply {}", reply_name(&reply));
        push(
            name,
            frame::encode(&ServerFrame::Reply {
                id: RequestId(9),
                result: Ok(reply),
            })
            .unwrap(),
        );
    }
    push(
        "reply error".into(),
        frame::encode(&ServerFrame::Reply {
            id: RequestId(9),
            result: Err(ErrorInfo::new(ErrorCode::UnknownSession, "no session `x`")),
        })
        .unwrap(),
    );
    push(
        "reply error ProviderFailed".into(),
        frame::encode(&ServerFrame::Reply {
            id: RequestId(9),
            result: Err(ErrorInfo::new(
                ErrorCode::ProviderFailed,
                "cannot list the models of provider `anthropic`",
            )),
        })
        .unwrap(),
    );
    push(
        "reply error ConfigBroken".into(),
        frame::encode(&ServerFrame::Reply {
            id: RequestId(9),
            result: Err(ErrorInfo::new(
                ErrorCode::ConfigBroken,
                "config.toml:2: invalid type — runs are refused",
            )),
        })
        .unwrap(),
    );
    for event in events() {
        let name = format!("event {}", event.kind());
        let frame = ServerFrame::Event(SessionEvent {
            session: session(),
            seq: 5,
            time_ms: 1_700_000_000_500,
            event,
        });
        push(name, frame::encode(&frame).unwrap());
    }
    push(
        "server Lagged".into(),
        frame::encode(&ServerFrame::Lagged {
            session: session(),
            last_seq: 77,
        })
        .unwrap(),
    );
    push(
        "server ReplayDone".into(),
        frame::encode(&ServerFrame::ReplayDone {
            session: session(),
            last_seq: 78,
        })
        .unwrap(),
    );
    push(
        "server Summary".into(),
        frame::encode(&ServerFrame::Summary(Box::new(summary()))).unwrap(),
    );
    push(
        "server SummariesReady".into(),
        frame::encode(&ServerFrame::SummariesReady { sessions: 1000 }).unwrap(),
    );
    push(
        "server SummaryRemoved".into(),
        frame::encode(&ServerFrame::SummaryRemoved { session: session() }).unwrap(),
    );
    push(
        "server Error".into(),
        frame::encode(&ServerFrame::Error(ErrorInfo::new(
            ErrorCode::VersionMismatch,
            "versions differ",
        )))
        .unwrap(),
    );
    frames
}

/// A summary with every part filled in.
fn summary() -> protocol::SessionSummary {
    protocol::SessionSummary {
        info: info(),
        activity: protocol::Activity::Tool {
            name: "bash".into(),
            detail: "cargo test".into(),
        },
        activity_since_ms: 1_700_000_000_700,
        run: Some(protocol::RunSummary {
            run: RunId(3),
            started_ms: 1_700_000_000_600,
            turn: 2,
            usage: TokenUsage {
                input: 10,
                output: 20,
                cache_read: 30,
                cache_write: 40,
            },
            cost_micros: Some(1234),
            end: Some(protocol::RunEnd {
                stop_reason: StopReason::Error,
                error: Some("boom".into()),
                finished_ms: 1_700_000_000_900,
            }),
        }),
        pending: vec![protocol::PendingSummary {
            session: Some(session()),
            request: PermissionRequestId(4),
            tool: "write".into(),
            summary: "write src/lib.rs".into(),
            since_ms: 1_700_000_000_800,
        }],
        plan: Some(protocol::PlanCount { done: 3, total: 7 }),
        shells: 2,
    }
}

fn render(frames: &[(String, Vec<u8>)]) -> String {
    let mut out = String::new();
    for (name, bytes) in frames {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{name}: {hex}").unwrap();
    }
    out
}

#[test]
fn every_kind_of_frame_has_a_sample() {
    let requests: BTreeSet<_> = requests().iter().map(request_name).collect();
    let replies: BTreeSet<_> = replies().iter().map(reply_name).collect();
    let events: BTreeSet<_> = events().iter().map(Event::kind).collect();
    // The name functions match exhaustively, so a new variant fails to compile until it is
    // named there; these counts then fail until it has a sample.
    assert_eq!(requests.len(), 30);
    assert_eq!(replies.len(), 19);
    assert_eq!(events.len(), 32);
}

#[test]
fn frames_match_the_golden_bytes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/frames.txt");
    let actual = render(&frames());
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with UPDATE_GOLDEN=1", path.display()));
    for (want, got) in expected.lines().zip(actual.lines()) {
        assert_eq!(
            got, want,
            "the wire encoding changed; bump PROTOCOL_VERSION if intended"
        );
    }
    assert_eq!(expected.lines().count(), actual.lines().count());
}

#[test]
fn golden_frames_decode_back_to_their_values() {
    for (name, bytes) in frames() {
        let payload = &bytes[frame::PREFIX_LEN..];
        if name.starts_with("client") || name.starts_with("request") {
            let value: ClientFrame = frame::decode(payload).unwrap();
            assert_eq!(frame::encode(&value).unwrap(), bytes, "{name}");
        } else {
            let value: ServerFrame = frame::decode(payload).unwrap();
            assert_eq!(frame::encode(&value).unwrap(), bytes, "{name}");
        }
    }
}
