//! `agentctl daemon install|uninstall`: a systemd user unit that starts the daemon with the
//! user's session, so that it comes back after a reboot and resumes what was going. The
//! service manager here is a stand-in that notes how it was called.
#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tests::Home;

/// A `systemctl` that notes its arguments in `calls` and exits with `code`.
fn fake_systemctl(dir: &Path, code: i32) {
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> {}\nexit {code}\n",
        dir.join("calls").display()
    );
    let path = dir.join("systemctl");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn agentctl(home: &Home, bin: &Path, config: &Path, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    home.agentctl(args)
        .env("PATH", path)
        .env("XDG_CONFIG_HOME", config)
        // A user systemd keeps no lingering flag for.
        .env("USER", "agentd-test-user-without-linger")
        .output()
        .unwrap()
}

#[test]
fn install_writes_and_enables_a_user_unit_and_uninstall_removes_it() {
    let home = Home::new();
    let (bin, config) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fake_systemctl(bin.path(), 0);
    let out = agentctl(&home, bin.path(), config.path(), &["daemon", "install"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let unit_path = config.path().join("systemd/user/agentd.service");
    let unit = std::fs::read_to_string(&unit_path).unwrap();
    let agentd = tests::binary("agentd").canonicalize().unwrap();
    assert!(
        unit.contains(&format!("ExecStart={}\n", agentd.display())),
        "{unit}"
    );
    assert!(
        unit.contains(&format!(
            "Environment=AGENTD_HOME={}\n",
            home.path().display()
        )),
        "{unit}"
    );
    assert!(unit.contains("Restart=on-failure") && unit.contains("WantedBy=default.target"));
    // On a machine reached over ssh the service would stop with the last login.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("`loginctl enable-linger`"), "{said}");
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    assert_eq!(
        calls,
        "--user daemon-reload\n--user enable --now agentd.service\n"
    );

    let out = agentctl(&home, bin.path(), config.path(), &["daemon", "uninstall"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!unit_path.exists());
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    assert!(
        calls.ends_with("--user disable --now agentd.service\n--user daemon-reload\n"),
        "{calls}"
    );
}

#[test]
fn a_service_manager_that_fails_is_one_clear_line() {
    let home = Home::new();
    let (bin, config) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fake_systemctl(bin.path(), 1);
    let out = agentctl(&home, bin.path(), config.path(), &["daemon", "install"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`systemctl --user daemon-reload` failed") && stderr.contains("by hand"),
        "{stderr}"
    );
}
