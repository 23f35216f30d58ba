//! `agentctl daemon install|uninstall`: the daemon as a user service, so that it comes back
//! after a reboot (and resumes the runs that were going). A systemd user unit on Linux, a
//! launchd agent on macOS. The service reads provider keys from `<config>/env` (one
//! `NAME=value` per line), since it does not start from a shell.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentctl::client::paths::Paths;

use crate::Failure;
use crate::connect::daemon_binary;

/// The service's name.
const NAME: &str = "agentd";
/// launchd's label.
const LABEL: &str = "dev.agentd.daemon";

/// Writes the service and enables it.
pub fn install(paths: &Paths) -> Result<u8, Failure> {
    let binary = daemon_binary();
    let binary = binary.canonicalize().unwrap_or(binary);
    let (file, text, enable) = if cfg!(target_os = "macos") {
        let file = home()?
            .join("Library/LaunchAgents")
            .join(format!("{LABEL}.plist"));
        let text = launchd_agent(&binary, paths);
        let load: Vec<String> = vec![
            "launchctl".into(),
            "load".into(),
            "-w".into(),
            file.display().to_string(),
        ];
        (file, text, vec![load])
    } else {
        let file = systemd_dir()?.join(format!("{NAME}.service"));
        let text = systemd_unit(&binary, paths);
        let reload = ["systemctl", "--user", "daemon-reload"]
            .map(String::from)
            .to_vec();
        let enable = ["systemctl", "--user", "enable", "--now", "agentd.service"]
            .map(String::from)
            .to_vec();
        (file, text, vec![reload, enable])
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(&file, text)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", file.display())))?;
    outln!("wrote {}", file.display());
    outln!(
        "provider keys for the service go in {} (one NAME=value per line)",
        paths.config_dir.join("env").display()
    );
    run_all(&enable)?;
    outln!("the daemon now starts with your session and resumes what was going");
    if !cfg!(target_os = "macos") && !lingering() {
        outln!(
            "systemd stops it when your last login ends, and starts it only when you log in: \
             on a machine you reach over ssh, `loginctl enable-linger` keeps it running and \
             starts it at boot"
        );
    }
    Ok(0)
}

/// Whether systemd keeps this user's services running without a login (`loginctl
/// enable-linger`): its flag file exists.
fn lingering() -> bool {
    let Some(user) = std::env::var_os("USER").filter(|u| !u.is_empty()) else {
        return false;
    };
    Path::new("/var/lib/systemd/linger").join(user).exists()
}

/// Disables the service and removes its file.
pub fn uninstall() -> Result<u8, Failure> {
    let (file, disable) = if cfg!(target_os = "macos") {
        let file = home()?
            .join("Library/LaunchAgents")
            .join(format!("{LABEL}.plist"));
        let unload = vec![
            "launchctl".into(),
            "unload".into(),
            "-w".into(),
            file.display().to_string(),
        ];
        (file, vec![unload])
    } else {
        let file = systemd_dir()?.join(format!("{NAME}.service"));
        let disable = ["systemctl", "--user", "disable", "--now", "agentd.service"]
            .map(String::from)
            .to_vec();
        (file, vec![disable])
    };
    if !file.exists() {
        outln!(
            "no user service is installed ({} does not exist)",
            file.display()
        );
        return Ok(0);
    }
    run_all(&disable)?;
    std::fs::remove_file(&file)
        .map_err(|e| Failure::new(format!("cannot remove {}: {e}", file.display())))?;
    if !cfg!(target_os = "macos") {
        run_all(&[["systemctl", "--user", "daemon-reload"]
            .map(String::from)
            .to_vec()])?;
    }
    outln!(
        "removed {}; the daemon starts on demand again",
        file.display()
    );
    Ok(0)
}

/// Runs each command in turn; a failure says what to run by hand.
fn run_all(commands: &[Vec<String>]) -> Result<(), Failure> {
    for command in commands {
        let shown = command.join(" ");
        let status = Command::new(&command[0]).args(&command[1..]).status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => {
                return Err(Failure::new(format!(
                    "`{shown}` failed ({status}); run it by hand once the user service manager is there"
                )));
            }
            Err(e) => {
                return Err(Failure::new(format!(
                    "cannot run `{shown}`: {e}; run it by hand where the service manager is"
                )));
            }
        }
    }
    Ok(())
}

fn home() -> Result<PathBuf, Failure> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Failure::new("HOME is not set: cannot tell where user services go"))
}

/// `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
fn systemd_dir() -> Result<PathBuf, Failure> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|c| !c.is_empty()) {
        Some(config) => PathBuf::from(config),
        None => home()?.join(".config"),
    };
    Ok(config.join("systemd/user"))
}

/// The environment the service needs to find the same files as this client.
fn service_env() -> Vec<(&'static str, String)> {
    ["AGENTD_HOME", "AGENTD_SOCKET"]
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok().filter(|v| !v.is_empty())?;
            Some((name, value))
        })
        .collect()
}

/// The systemd user unit. `KillMode=mixed`: a stop signals the daemon alone, which lets the
/// tool calls running finish before it exits (systemd's own wait, 90 s by default, is longer
/// than the daemon's); whatever is left after it is killed.
fn systemd_unit(binary: &Path, paths: &Paths) -> String {
    let env: String = service_env()
        .iter()
        .map(|(name, value)| format!("Environment={name}={value}\n"))
        .collect();
    format!(
        "[Unit]\n\
         Description=agentd, the coding agent daemon\n\
         \n\
         [Service]\n\
         ExecStart={}\n\
         {env}EnvironmentFile=-{}\n\
         Restart=on-failure\n\
         KillMode=mixed\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        binary.display(),
        paths.config_dir.join("env").display()
    )
}

fn launchd_agent(binary: &Path, paths: &Paths) -> String {
    let env: String = service_env()
        .iter()
        .map(|(name, value)| format!("    <key>{name}</key><string>{value}</string>\n"))
        .collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n\
         <key>Label</key><string>{LABEL}</string>\n\
         <key>ProgramArguments</key><array><string>{}</string></array>\n\
         <key>EnvironmentVariables</key><dict>\n{env}</dict>\n\
         <key>RunAtLoad</key><true/>\n\
         <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n\
         <key>StandardErrorPath</key><string>{}</string>\n\
         </dict>\n</plist>\n",
        binary.display(),
        paths.log_file().display()
    )
}
