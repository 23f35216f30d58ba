//! The actions of the commands that take one (`daemon start`, `config check`, `mcp list`, …).

use clap::Subcommand;

/// What `mcp` does.
#[derive(Subcommand)]
pub enum McpAction {
    /// List the configured servers: transport, scope, state, pid, tools and last error.
    ///
    /// Example: `agentctl mcp list --json`
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// What `lsp` does.
#[derive(Subcommand)]
pub enum LspAction {
    /// List the language servers: root, state, pid, sessions using each, restarts and last
    /// error.
    ///
    /// Example: `agentctl lsp list --json`
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// What `hooks`, `skills` and `commands` do.
#[derive(Subcommand)]
pub enum ListAction {
    /// List them (a table, or JSON with --json).
    ///
    /// Example: `agentctl hooks list --json`
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// What `config` does.
#[derive(Subcommand)]
pub enum ConfigAction {
    /// Print where the configuration file is.
    ///
    /// Example: `$EDITOR "$(agentctl config path)"`
    Path,
    /// Print the configuration with its defaults.
    ///
    /// Example: `agentctl config show | grep max_turns`
    Show,
    /// Check the configuration file; exit code 1 with the problem when it is broken.
    ///
    /// Example: `agentctl config check && echo ok`
    Check,
}

/// What `daemon` does.
#[derive(Subcommand)]
pub enum DaemonAction {
    /// Start the daemon if it is not running.
    ///
    /// Example: `agentctl daemon start`
    Start,
    /// Stop the daemon; tool calls already running finish first (up to `[daemon]
    /// stop_grace_secs`, 30 s by default), and the next daemon resumes the runs.
    ///
    /// Example: `agentctl daemon stop`
    Stop {
        /// Do not wait for running tool calls: they are interrupted.
        #[arg(long)]
        now: bool,
    },
    /// Stop the daemon and start it again (after an upgrade); sessions are kept, tool calls
    /// already running finish first, and runs in progress go on in the new daemon.
    ///
    /// Example: `agentctl daemon restart`
    Restart {
        /// Stop a daemon of another protocol version by its pid file (it cannot be asked).
        #[arg(long)]
        force: bool,
        /// Do not wait for running tool calls: they are interrupted.
        #[arg(long)]
        now: bool,
    },
    /// Run the daemon as a user service (systemd, or launchd on macOS), so that it comes back
    /// after a reboot and resumes what was going; starting on demand stays the default.
    ///
    /// Example: `agentctl daemon install`
    Install,
    /// Remove the user service `install` wrote.
    ///
    /// Example: `agentctl daemon uninstall`
    Uninstall,
    /// Show version, pid, uptime, socket, sessions and memory.
    ///
    /// Example: `agentctl daemon status`
    Status,
}
