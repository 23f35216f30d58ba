//! The command line: every command, flag and argument `agentctl` takes.

use clap::{Args, Parser, Subcommand};
use protocol::Mode;

use crate::style::ColorChoice;

mod actions;

pub use actions::{ConfigAction, DaemonAction, ListAction, LspAction, McpAction};

/// Drive the agentd coding agent from any terminal: give it a task, watch it work, answer its
/// questions, and come back to it later.
///
/// Without a command on a terminal, `agentctl` opens `chat` in the current directory; `agentctl
/// resume` (or `attach -`) gets back to a session started here before. Sessions and their runs
/// live in the agentd daemon, which starts on demand and keeps working when you leave.
#[derive(Parser)]
#[command(version, propagate_version = true)]
pub struct Cli {
    /// Colors: auto (on a terminal without NO_COLOR), always or never.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Talk to the daemon on another machine, over your own ssh (it runs `agentctl bridge`
    /// there; agentctl and agentd must be installed on it): a name from client.toml's
    /// `[hosts.NAME]`, or [USER@]HOST[:PORT]. `board` and `sessions --watch` take several.
    #[arg(long, global = true, env = "AGENTCTL_HOST", value_name = "HOST")]
    pub host: Vec<String>,
    /// The directory sessions are created in and looked up by (`-`, `--continue`, `resume`)
    /// instead of the current one; with --host, a directory on that machine.
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
    /// With --host: send this shell's provider keys and base URLs (`*_API_KEY`, `*_BASE_URL`) to
    /// the other machine's runs; without it they use that daemon's own.
    #[arg(long, global = true, env = "AGENTCTL_FORWARD_KEYS")]
    pub forward_keys: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The flags `run` and `chat` share: which session, and what a new session or its runs use.
#[derive(Args)]
pub struct SessionFlags {
    /// Use this existing session instead of a new one (`-`: the latest one of this directory).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Use the latest session of this directory (as `--session -`).
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub continue_latest: bool,
    /// The model. Its help differs by command, as what it applies to does (`mut_arg`).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider: anthropic, openai, or a profile from config.toml.
    #[arg(long)]
    pub provider: Option<String>,
    /// Permission mode of a new session: default, accept-edits, auto (commands in a sandbox), plan, bypass.
    #[arg(long)]
    pub mode: Option<Mode>,
    /// The turn limit of runs. Its help differs by command, as the default does (`mut_arg`).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Give the session its own git worktree of this repository, on a new branch
    /// `agentd/<id>` from HEAD, so that its changes stay apart from yours.
    #[arg(long, conflicts_with_all = ["session", "continue_latest"])]
    pub worktree: bool,
    /// Run even though the daemon has no usable configuration (it started with a broken
    /// config.toml, so runs are refused): with the defaults, none of the file's rules.
    #[arg(long)]
    pub ignore_config: bool,
}

/// The commands.
#[derive(Subcommand)]
pub enum Command {
    /// Manage the daemon (it also starts on demand).
    ///
    /// Example: `agentctl daemon status`
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Run a prompt in a new session here (or --session ID) and stream it; the exit code says
    /// how it ended: 0 completed, 1 error, 2 usage, 3 turn limit, 4 health guard, 130 cancelled.
    ///
    /// Example: `agentctl run --allow write "fix the failing test"`
    #[command(
        mut_arg("model", |a| a.help("The model of this run (`agentctl model` lists those the provider serves)")),
        mut_arg("max_turns", |a| a.help("Stop after this many model replies that ask for tools (0: no limit; default 100)")),
    )]
    Run {
        /// The prompt; read from stdin when absent or `-`.
        prompt: Option<String>,
        /// Send an image file with the prompt (PNG, JPEG, GIF or WebP; `@shot.png` in the
        /// prompt does the same). Repeatable.
        #[arg(long = "image", short = 'i', value_name = "PATH")]
        images: Vec<String>,
        #[command(flatten)]
        flags: SessionFlags,
        /// Allow without asking: `write` (file changes), `bash` (commands), `mcp` (tools of
        /// MCP servers) or `network` (`fetch` and `web_search` from the daemon). Repeatable.
        #[arg(long, value_name = "write|bash|mcp|network")]
        allow: Vec<AllowKind>,
        /// Allow everything without asking.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Print each event as one JSON line.
        #[arg(long)]
        json: bool,
        /// Start the run, print the session id and return at once.
        #[arg(long)]
        detach: bool,
        /// If the daemon stops during a run of this session, do not resume the run in the next
        /// daemon (the config's `resume_interrupted` otherwise).
        #[arg(long)]
        no_resume: bool,
    },
    /// Talk to the agent interactively in a new session here (or --session ID).
    ///
    /// Example: `agentctl chat --mode accept-edits`
    #[command(
        mut_arg("model", |a| a.help("The model of a new session")),
        mut_arg("max_turns", |a| a.help("Turn limit of runs started here (default: none)")),
    )]
    Chat {
        #[command(flatten)]
        flags: SessionFlags,
    },
    /// Join a session from this terminal: its history so far, then live.
    ///
    /// Example: `agentctl attach 3f2a` (or `agentctl attach -` for the latest one here)
    Attach {
        #[command(flatten)]
        session: SessionArg,
    },
    /// Pick a session of this directory and join it: on a terminal, a list to choose from
    /// (newest first; ↑↓ and Enter, Esc leaves); otherwise the list is printed.
    ///
    /// Example: `agentctl resume`
    Resume {
        /// Offer the sessions of every directory, not only this one's.
        #[arg(long)]
        all: bool,
    },
    /// Steer the session's running run at its next turn (starts a run when idle).
    ///
    /// Example: `agentctl steer 3f2a "use the existing helper instead"`
    #[command(allow_missing_positional = true)]
    Steer {
        #[command(flatten)]
        session: SessionArg,
        /// The message.
        text: String,
        /// Run even though the daemon has no usable configuration (it started with a broken
        /// config.toml, so runs are refused): with the defaults, none of the file's rules.
        #[arg(long)]
        ignore_config: bool,
    },
    /// Queue a follow-up for when the session's run would complete (starts a run when idle).
    ///
    /// Example: `agentctl queue --last "then update the changelog"`
    #[command(allow_missing_positional = true)]
    Queue {
        #[command(flatten)]
        session: SessionArg,
        /// The message.
        text: String,
        /// Run even though the daemon has no usable configuration (it started with a broken
        /// config.toml, so runs are refused): with the defaults, none of the file's rules.
        #[arg(long)]
        ignore_config: bool,
    },
    /// Summarise the session's older history now, keeping the recent part verbatim.
    ///
    /// Example: `agentctl compact 3f2a`
    Compact {
        #[command(flatten)]
        session: SessionArg,
    },
    /// Cancel the session's run.
    ///
    /// Example: `agentctl cancel 3f2a`
    Cancel {
        #[command(flatten)]
        session: SessionArg,
    },
    /// Allow a pending permission request.
    ///
    /// Example: `agentctl approve 3f2a 2 --always` (`agentctl sessions` shows the numbers)
    #[command(allow_missing_positional = true)]
    Approve {
        #[command(flatten)]
        session: SessionArg,
        /// The request number.
        request: u64,
        /// Also allow the same tool on the same file or command prefix for the session.
        #[arg(long)]
        always: bool,
    },
    /// Deny a pending permission request.
    ///
    /// Example: `agentctl deny 3f2a 2`
    #[command(allow_missing_positional = true)]
    Deny {
        #[command(flatten)]
        session: SessionArg,
        /// The request number.
        request: u64,
    },
    /// Show a session's history.
    ///
    /// Example: `agentctl show 3f2a --json | jq .type`
    Show {
        #[command(flatten)]
        session: SessionArg,
        /// Print one JSON event per line.
        #[arg(long, conflicts_with = "images")]
        json: bool,
        /// Export the session's images instead: write each to DIR (made if missing) as
        /// HASH.EXT and print one line per file.
        #[arg(long, value_name = "DIR")]
        images: Option<std::path::PathBuf>,
    },
    /// The configuration file: `path`, `show` (in force, defaults included) or `check`.
    ///
    /// Example: `agentctl config check`
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// List sessions, newest first.
    ///
    /// Example: `agentctl sessions --json`
    Sessions {
        /// Print a JSON array instead of a table (with --watch: one JSON object per line).
        #[arg(long)]
        json: bool,
        /// Show subagents that finished too (they are hidden by default).
        #[arg(long)]
        all: bool,
        /// Keep going: print every session once, then a line whenever one changes (what the
        /// board shows, for scripts).
        #[arg(long)]
        watch: bool,
        /// With --watch: every named host of client.toml, and this machine.
        #[arg(long, requires = "watch")]
        all_hosts: bool,
    },
    /// Every session of the daemon on one live screen: who needs you, who works, who is done.
    ///
    /// Keys: ↑↓ or j/k select, Enter attaches (Ctrl+D comes back), y/n/a answer the selected
    /// session's oldest request, c cancels its run, s steers it, d deletes it, / filters, q quits.
    ///
    /// Example: `agentctl board`
    Board {
        /// No bell and no desktop notification when a session starts needing you.
        #[arg(long)]
        quiet: bool,
        /// Every named host of client.toml, and this machine, on one board.
        #[arg(long)]
        all_hosts: bool,
    },
    /// Create a session in the current directory and print its id.
    ///
    /// Example: `id=$(agentctl new --worktree) && agentctl run --session "$id" "add tests"`
    New {
        /// Permission mode: default, accept-edits, auto (commands in a sandbox), plan, bypass.
        #[arg(long)]
        mode: Option<Mode>,
        /// Model to use instead of the configured default.
        #[arg(long)]
        model: Option<String>,
        /// A short title.
        #[arg(long)]
        title: Option<String>,
        /// Give the session its own git worktree of this repository, on a new branch
        /// `agentd/<id>` from HEAD, so that its changes stay apart from yours.
        #[arg(long)]
        worktree: bool,
    },
    /// Show what a run changed in the session's directory (bash commands included).
    ///
    /// Example: `agentctl diff 3f2a --stat`
    Diff {
        #[command(flatten)]
        session: SessionArg,
        /// The run (default: the last run that changed files).
        #[arg(long)]
        run: Option<u64>,
        /// A line per file with its added and removed lines, instead of the patch.
        #[arg(long)]
        stat: bool,
    },
    /// Put the session's directory back as it was before a run, undoing it and every later
    /// run; the conversation is kept. Asks first on a terminal.
    ///
    /// Example: `agentctl rewind 3f2a --run 2`
    Rewind {
        #[command(flatten)]
        session: SessionArg,
        /// The run (default: the last run that changed files).
        #[arg(long)]
        run: Option<u64>,
        /// Do not ask.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Also restore files changed outside the agent since the run.
        #[arg(long)]
        force: bool,
    },
    /// Start a new session with this one's history (up to turn N); the two go on
    /// independently. Prints the new id.
    ///
    /// Example: `agentctl fork 3f2a --turn 4`
    Fork {
        #[command(flatten)]
        session: SessionArg,
        /// The last turn (model reply, counted from 1 over the session) to keep.
        #[arg(long)]
        turn: Option<u64>,
    },
    /// Show a session's model and the models its provider serves, or choose the model of its
    /// next runs.
    ///
    /// Example: `agentctl model claude-haiku-4-5` (the latest session here), `agentctl model --session 3f2a`
    Model {
        /// The model for the session's next runs; without it, the models are listed.
        name: Option<String>,
        /// The session: an id, an unambiguous prefix, or `-`; the latest one of this directory
        /// when absent.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Show the tokens a session used and what they cost, per model: its last run and all
    /// its runs.
    ///
    /// Example: `agentctl cost -`
    Cost {
        #[command(flatten)]
        session: SessionArg,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Use agentd from an editor (Zed, JetBrains, Neovim, Emacs): the editor starts this command
    /// and talks to it on stdin and stdout (the Agent Client Protocol); sessions started in a
    /// terminal can be opened there too.
    ///
    /// Example (Zed's settings.json): "agent_servers": { "agentd": { "command": "agentctl", "args": ["acp"] } }
    Acp,
    /// The MCP servers of config.toml and their state.
    ///
    /// Example: `agentctl mcp list`
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// The language servers the daemon runs (one per project root and server) and their state.
    ///
    /// Example: `agentctl lsp list`
    Lsp {
        #[command(subcommand)]
        action: LspAction,
    },
    /// The hooks of config.toml, in the order each event runs them.
    ///
    /// Example: `agentctl hooks list`
    Hooks {
        #[command(subcommand)]
        action: ListAction,
    },
    /// The skills of this directory's project and of the user.
    ///
    /// Example: `agentctl skills list --json`
    Skills {
        #[command(subcommand)]
        action: ListAction,
    },
    /// The slash commands of this directory's project and of the user (`/NAME ARGS`).
    ///
    /// Example: `agentctl commands list`
    Commands {
        #[command(subcommand)]
        action: ListAction,
    },
    /// List a session's background shells (commands its agent started with `bash` and
    /// `"background": true`): number, state, command and last lines; `--kill N` ends one and
    /// its processes.
    ///
    /// Example: `agentctl shells 3f2a --kill 2`
    Shells {
        #[command(flatten)]
        session: SessionArg,
        /// End shell N (its whole process group) first.
        #[arg(long, value_name = "N")]
        kill: Option<u32>,
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and its history.
    ///
    /// Example: `agentctl rm 3f2a --force`
    Rm {
        #[command(flatten)]
        session: SessionArg,
        /// Cancel a running run first instead of refusing.
        #[arg(long)]
        force: bool,
    },
    /// Connect stdin/stdout to this machine's daemon, bytes untouched: what `--host` runs on
    /// the other machine over ssh.
    #[command(hide = true)]
    Bridge,
    /// Print a completion script for a shell.
    ///
    /// Example: `agentctl completions bash > ~/.local/share/bash-completion/completions/agentctl`
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// A session named on the command line: its id, or the latest session of this directory.
#[derive(clap::Args, Clone)]
pub struct SessionArg {
    /// The session: its id or an unambiguous prefix; `-` for the latest session of this
    /// directory.
    #[arg(value_name = "ID", required_unless_present = "last")]
    pub id: Option<String>,
    /// Use the latest session of this directory (by last activity), as `-` does.
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
}

/// What `--allow` grants.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum AllowKind {
    /// File changes (write, edit).
    Write,
    /// Commands (bash).
    Bash,
    /// Tools of MCP servers.
    Mcp,
    /// Web access from the daemon (fetch, web_search).
    Network,
}
