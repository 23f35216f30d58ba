//! The options of the wrappers the rules see through, so that the word after them is known to
//! be the command they run. The tables are complete for the wrappers' documented options: an
//! option not listed makes the command opaque instead of letting a value pass for a program.

/// How one wrapper reads its options.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// Short options without a value.
    pub(crate) flags: &'static str,
    /// Short options whose value is attached or the next word.
    pub(crate) values: &'static str,
    /// Short options whose value, if any, is attached (`xargs -i{}`).
    pub(crate) optional: &'static str,
    /// Long options without a value (an attached `=value` is allowed).
    pub(crate) long_flags: &'static [&'static str],
    /// Long options with a value, attached (`--opt=V`) or the next word.
    pub(crate) long_values: &'static [&'static str],
    /// Short and long options whose value is a shell string the wrapper runs.
    pub(crate) script: (&'static str, &'static [&'static str]),
    /// Short and long options after which the wrapper runs no command.
    pub(crate) no_command: (&'static str, &'static [&'static str]),
    /// Operands before the command (`timeout 5 cmd`, `chroot DIR cmd`).
    pub(crate) operands: usize,
}

/// The options of wrapper `name`, if it is one the rules see through.
pub(crate) fn of(name: &str) -> Option<Options> {
    let options = match name {
        "env" => Options {
            flags: "i0v",
            values: "uC",
            long_flags: &[
                "--ignore-environment",
                "--null",
                "--debug",
                "--default-signal",
                "--ignore-signal",
                "--block-signal",
                "--list-signal-handling",
            ],
            long_values: &["--unset", "--chdir"],
            script: ("S", &["--split-string"]),
            ..Options::default()
        },
        "sudo" => Options {
            flags: "AbEHiKkLlnPSsVvB",
            values: "CDghpRrTtUu",
            long_flags: &[
                "--askpass",
                "--background",
                "--preserve-env",
                "--set-home",
                "--login",
                "--non-interactive",
                "--shell",
                "--stdin",
                "--remove-timestamp",
                "--reset-timestamp",
                "--validate",
                "--list",
                "--preserve-groups",
                "--bell",
                "--no-update",
            ],
            long_values: &[
                "--close-from",
                "--chdir",
                "--chroot",
                "--group",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            ],
            no_command: (
                "KkLlVv",
                &[
                    "--remove-timestamp",
                    "--reset-timestamp",
                    "--validate",
                    "--list",
                ],
            ),
            ..Options::default()
        },
        "doas" => Options {
            flags: "nLs",
            values: "uC",
            no_command: ("L", &[]),
            ..Options::default()
        },
        "nice" => Options {
            values: "n",
            long_values: &["--adjustment"],
            ..Options::default()
        },
        "ionice" => Options {
            flags: "t",
            values: "cnpPu",
            long_flags: &["--ignore"],
            long_values: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            no_command: ("pPu", &["--pid", "--pgid", "--uid"]),
            ..Options::default()
        },
        "timeout" => Options {
            flags: "v",
            values: "ks",
            long_flags: &["--preserve-status", "--foreground", "--verbose"],
            long_values: &["--kill-after", "--signal"],
            operands: 1,
            ..Options::default()
        },
        "xargs" => Options {
            flags: "0prtxo",
            values: "aEdILnPs",
            optional: "eil",
            long_flags: &[
                "--null",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--open-tty",
                "--show-limits",
                "--eof",
                "--replace",
                "--max-lines",
            ],
            long_values: &[
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            ..Options::default()
        },
        "exec" => Options {
            flags: "cl",
            values: "a",
            ..Options::default()
        },
        "stdbuf" => Options {
            values: "ioe",
            long_values: &["--input", "--output", "--error"],
            ..Options::default()
        },
        "taskset" => Options {
            flags: "acp",
            long_flags: &["--all-tasks", "--cpu-list", "--pid"],
            no_command: ("p", &["--pid"]),
            operands: 1,
            ..Options::default()
        },
        "chrt" => Options {
            flags: "abdfiormpRve",
            values: "TPD",
            long_flags: &[
                "--all-tasks",
                "--batch",
                "--deadline",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--max",
                "--pid",
                "--reset-on-fork",
                "--verbose",
                "--ext",
            ],
            long_values: &["--sched-runtime", "--sched-period", "--sched-deadline"],
            no_command: ("mp", &["--max", "--pid"]),
            operands: 1,
            ..Options::default()
        },
        "flock" => Options {
            flags: "sxuneoFv",
            values: "wE",
            long_flags: &[
                "--shared",
                "--exclusive",
                "--unlock",
                "--nonblock",
                "--nb",
                "--no-fork",
                "--close",
                "--verbose",
            ],
            long_values: &["--timeout", "--wait", "--conflict-exit-code"],
            script: ("c", &["--command"]),
            operands: 1,
            ..Options::default()
        },
        "setpriv" => Options {
            flags: "d",
            long_flags: &[
                "--dump",
                "--nnp",
                "--no-new-privs",
                "--clear-groups",
                "--keep-groups",
                "--init-groups",
                "--reset-env",
                "--list-caps",
            ],
            long_values: &[
                "--reuid",
                "--regid",
                "--ruid",
                "--rgid",
                "--euid",
                "--egid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
                "--landlock-access",
                "--landlock-rule",
                "--seccomp-filter",
            ],
            no_command: ("d", &["--dump", "--list-caps"]),
            ..Options::default()
        },
        "unshare" => Options {
            flags: "frcl",
            values: "RwSG",
            optional: "mpuinUCT",
            long_flags: &[
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--user",
                "--cgroup",
                "--time",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "--map-root-user",
                "--map-current-user",
                "--map-auto",
                "--keep-caps",
            ],
            long_values: &[
                "--root",
                "--wd",
                "--setuid",
                "--setgid",
                "--propagation",
                "--setgroups",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
                "--monotonic",
                "--boottime",
                "--load-interp",
            ],
            ..Options::default()
        },
        "strace" => Options {
            flags: "cCdDfFhiqrtTvVwxyYkzZn",
            values: "abeEIoOpPsSuUX",
            long_flags: &[
                "--summary-only",
                "--summary",
                "--debug",
                "--daemonize",
                "--follow-forks",
                "--output-separately",
                "--instruction-pointer",
                "--relative-timestamps",
                "--syscall-times",
                "--no-abbrev",
                "--summary-wall-clock",
                "--decode-fds",
                "--decode-pids",
                "--stack-trace",
                "--successful-only",
                "--failed-only",
                "--quiet",
                "--timestamps",
                "--absolute-timestamps",
                "--syscall-number",
                "--seccomp-bpf",
                "--always-show-pid",
                "--kill-on-exit",
            ],
            long_values: &[
                "--abbrev",
                "--attach",
                "--trace",
                "--trace-path",
                "--signal",
                "--status",
                "--output",
                "--string-limit",
                "--summary-sort",
                "--user",
                "--env",
                "--verbose",
                "--raw",
                "--read",
                "--write",
                "--fault",
                "--inject",
                "--columns",
                "--const-print-style",
                "--decode-fds",
                "--quiet",
                "--secontext",
                "--namespace",
                "--interruptible",
                "--tips",
            ],
            no_command: ("p", &["--attach"]),
            ..Options::default()
        },
        "ltrace" => Options {
            flags: "bcCfhiLrStTV",
            values: "aAeDEFlnopsuwx",
            long_flags: &["--demangle", "--library", "--no-signals"],
            long_values: &["--align", "--output", "--indent"],
            no_command: ("p", &[]),
            ..Options::default()
        },
        "watch" => Options {
            flags: "bcCeghprtwx",
            values: "nqs",
            optional: "d",
            long_flags: &[
                "--beep",
                "--color",
                "--no-color",
                "--errexit",
                "--chgexit",
                "--precise",
                "--no-rerun",
                "--no-title",
                "--no-wrap",
                "--exec",
                "--differences",
            ],
            long_values: &["--interval", "--equexit", "--shotsdir"],
            ..Options::default()
        },
        "script" => Options {
            flags: "aefqk",
            values: "EToIOBm",
            long_flags: &[
                "--append",
                "--return",
                "--flush",
                "--force",
                "--quiet",
                "--log-keys",
            ],
            long_values: &[
                "--echo",
                "--log-timing",
                "--output-limit",
                "--log-in",
                "--log-out",
                "--log-io",
                "--logging-format",
            ],
            script: ("c", &["--command"]),
            ..Options::default()
        },
        "command" => Options {
            flags: "pvV",
            no_command: ("vV", &[]),
            ..Options::default()
        },
        "time" => Options {
            flags: "pqva",
            values: "fo",
            long_flags: &["--portability", "--quiet", "--verbose", "--append"],
            long_values: &["--format", "--output"],
            ..Options::default()
        },
        "setsid" => Options {
            flags: "cfw",
            long_flags: &["--ctty", "--fork", "--wait"],
            ..Options::default()
        },
        "unbuffer" => Options {
            flags: "p",
            ..Options::default()
        },
        "caffeinate" => Options {
            flags: "dimsu",
            values: "tw",
            ..Options::default()
        },
        "chroot" => Options {
            long_flags: &["--skip-chdir"],
            long_values: &["--userspec", "--groups"],
            operands: 1,
            ..Options::default()
        },
        "builtin" | "nohup" | "busybox" => Options::default(),
        _ => return None,
    };
    Some(options)
}
