//! The `agentd` binary: usually started by `agentctl`; runs in the foreground until stopped.

use std::process::ExitCode;

use clap::Parser;
use protocol::local::paths::Paths;

/// The agentd daemon. Started on demand by `agentctl`; it listens on a local socket until
/// `agentctl daemon stop`, SIGTERM or SIGINT.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Check the configuration file and exit: 0 when it is good, 1 with the problem otherwise.
    #[arg(long)]
    check_config: bool,
    /// Print the configuration in force (the file with defaults filled in) and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> ExitCode {
    // The sandbox helper becomes the command it confines; it never reaches the daemon's code.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__sandbox") {
        agentd::sandbox::exec::run(argv.get(2..).unwrap_or_default());
    }
    // Nothing the daemon inherited (a pipe of the shell that started `agentctl`) reaches the
    // commands it runs.
    agentd::sandbox::exec::close_inherited();
    let args = Args::parse();
    let paths = match Paths::from_env() {
        Ok(paths) => paths,
        Err(err) => {
            eprintln!("agentd: {err}");
            return ExitCode::FAILURE;
        }
    };
    if args.check_config || args.print_config {
        return config_command(&paths, args.print_config);
    }
    if let Err(err) = init_logging(&paths) {
        eprintln!("agentd: {err}");
        return ExitCode::FAILURE;
    }
    raise_open_file_limit();
    return_large_buffers();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("agentd: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(agentd::daemon::run(paths)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err}");
            eprintln!("agentd: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Large buffers (a client's frame, a file read whole) are given back to the system when freed,
/// so that memory follows what is live: glibc would otherwise raise its mmap threshold after
/// the first large free and keep later ones in its heap.
fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Every loaded session keeps its log open, and every client and tool process needs descriptors:
/// raise the soft limit on open files to the hard one (many systems start at 1,024).
fn raise_open_file_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct we pass.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
                && limit.rlim_cur < limit.rlim_max
            {
                limit.rlim_cur = limit.rlim_max.min(1 << 20);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

/// `--check-config` and `--print-config`.
fn config_command(paths: &Paths, print: bool) -> ExitCode {
    let file = paths.config_file();
    let config = match agentd::config::Config::load(&file) {
        Ok(config) => config,
        Err(err) => {
            // The same file, line and reason a refused run is told.
            eprintln!("agentd: {err}");
            eprintln!("agentd: {}", agentd::config::BROKEN_FILE_NOTE);
            return ExitCode::FAILURE;
        }
    };
    if print {
        print!("{}", config.to_toml());
        return ExitCode::SUCCESS;
    }
    // Warnings, not errors: the file is usable, but a setting weakens the sandbox.
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let path = std::env::var_os("PATH");
    for warning in
        agentd::config::writable_path_warnings(&text, &file, home.as_deref(), path.as_deref())
    {
        eprintln!("agentd: warning: {warning}");
    }
    // A broken MCP server entry does not stop the rest from being used, but it is wrong.
    if !config.mcp.broken.is_empty() {
        for (_, error) in &config.mcp.broken {
            eprintln!("agentd: {error}");
        }
        return ExitCode::FAILURE;
    }
    if file.exists() {
        println!("{} is valid", file.display());
    } else {
        println!(
            "{} does not exist; the defaults are in force",
            file.display()
        );
    }
    ExitCode::SUCCESS
}

/// Logs to `<data>/logs/agentd.log`; `AGENTD_LOG` sets the filter (default `info`).
fn init_logging(paths: &Paths) -> Result<(), String> {
    let dir = paths.logs_dir();
    agentd::daemon::private_dir(&dir).map_err(|e| e.to_string())?;
    let file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(paths.log_file())
        .map_err(|e| format!("cannot open {}: {e}", paths.log_file().display()))?;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .init();
    Ok(())
}
