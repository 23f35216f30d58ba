//! Programs whose arguments hold code (docs/architecture.md#permissions-and-modes): a `sed` script
//! that runs commands or writes files, and `git` options and config keys that name commands git
//! runs.

use super::shell::Word;

/// `sed` scripts that run commands (`e`, the `e` flag of `s`) or write files (`w`, `W`, the
/// `w` flag), or a script read from a file.
pub(super) fn sed_runs_or_writes(args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    if texts.iter().any(|t| {
        *t == "-f"
            || t.starts_with("--file")
            || (t.starts_with('-') && !t.starts_with("--") && t.contains('f'))
    }) {
        return Some("`sed -f` runs a script from a file".into());
    }
    let mut scripts = Vec::new();
    let mut i = 0;
    let mut explicit = false;
    while i < texts.len() {
        let t = texts[i];
        if t == "-e" || t == "--expression" {
            explicit = true;
            if let Some(s) = texts.get(i + 1) {
                scripts.push(*s);
            }
            i += 2;
            continue;
        }
        if let Some(s) = t.strip_prefix("--expression=") {
            explicit = true;
            scripts.push(s);
        }
        i += 1;
    }
    if !explicit && let Some(first) = operands(args).first() {
        scripts.push(first);
    }
    scripts
        .iter()
        .any(|s| sed_script_runs_or_writes(s))
        .then(|| "the `sed` script runs commands or writes files (`e`, `w`)".into())
}

/// Whether a sed script holds an `e`, `w` or `W` command, or an `s` command with the `e` or
/// `w` flag. Unsure readings count as yes.
fn sed_script_runs_or_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Skip separators and an address (numbers, `$`, `/regex/`, `,`, `!`).
        while i < chars.len() && (chars[i].is_whitespace() || matches!(chars[i], ';' | '{' | '}')) {
            i += 1;
        }
        loop {
            match chars.get(i) {
                Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '!' | '~' | '+') => i += 1,
                Some('/') => {
                    i = skip_delimited(&chars, i + 1, '/');
                }
                Some('\\') => match chars.get(i + 1) {
                    Some(&d) => i = skip_delimited(&chars, i + 2, d),
                    None => return true,
                },
                _ => break,
            }
        }
        let Some(&command) = chars.get(i) else {
            return false;
        };
        match command {
            'e' | 'w' | 'W' => return true,
            's' | 'y' => {
                let Some(&delim) = chars.get(i + 1) else {
                    return true;
                };
                i = skip_delimited(&chars, i + 2, delim);
                i = skip_delimited(&chars, i, delim);
                while let Some(&flag) = chars.get(i) {
                    if flag == ';' || flag == '}' || flag == '\n' {
                        break;
                    }
                    if command == 's' && (flag == 'e' || flag == 'w' || flag == 'W') {
                        return true;
                    }
                    i += 1;
                }
            }
            // Commands whose argument runs to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' => {
                while i < chars.len() && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// The index after the next unescaped `delim` from `from`.
fn skip_delimited(chars: &[char], mut from: usize, delim: char) -> usize {
    while let Some(&c) = chars.get(from) {
        from += 1;
        if c == '\\' {
            from += 1;
        } else if c == delim {
            break;
        }
    }
    from
}

/// `git -c` (or `--config-env`) overrides of commands and aliases, and `git config` setting
/// them: they run programs outside what the rules see.
pub(super) fn git_overrides(args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(Word::text).collect();
    let dangerous = |key: &str| {
        let key = key.trim_start().to_ascii_lowercase();
        key.starts_with("core.")
            || key.starts_with("alias.")
            || key.starts_with("include")
            || key.starts_with("filter.")
            || key.starts_with("diff.")
            || key.starts_with("merge.")
            || key.starts_with("credential.")
            || key.starts_with("gpg.")
            || key.starts_with("sequence.")
            || key.starts_with("uploadpack.")
            || key.starts_with("receive.")
            || key.starts_with("remote.")
            || key.starts_with("protocol.")
            || key.starts_with("url.")
    };
    let mut i = 0;
    while i < texts.len() {
        let t = texts[i];
        let value = if t == "-c" || t == "--config-env" {
            i += 1;
            texts.get(i).copied()
        } else if let Some(v) = t.strip_prefix("--config-env=") {
            Some(v)
        } else if let Some(v) = t.strip_prefix("-c") {
            Some(v)
        } else if t == "config" {
            // `git config KEY VALUE` and its options.
            return texts[i + 1..]
                .iter()
                .find(|k| !k.starts_with('-'))
                .filter(|k| dangerous(k))
                .map(|k| format!("`git config {k}` sets a command git runs later"));
        } else if !t.starts_with('-') {
            return git_subcommand_runs(t, &texts[i + 1..]);
        } else if matches!(t, "-C" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 2;
            continue;
        } else if t.starts_with("--exec-path=") || t.starts_with("--git-dir=") {
            if t.starts_with("--exec-path=") {
                return Some("`git --exec-path` changes which programs git runs".into());
            }
            None
        } else {
            None
        };
        if let Some(value) = value
            && dangerous(value.split('=').next().unwrap_or_default())
        {
            return Some(format!("`git -c {value}` overrides a command git runs"));
        }
        i += 1;
    }
    None
}

/// Why `git SUBCOMMAND ARGS` runs a program its arguments name, if it does.
fn git_subcommand_runs(subcommand: &str, args: &[&str]) -> Option<String> {
    const RUNNING: [&str; 11] = [
        "--exec",
        "--extcmd",
        "--tool",
        "--upload-pack",
        "--receive-pack",
        "--open-files-in-pager",
        "--config",
        "--template",
        "--command",
        "--shell",
        "--strategy",
    ];
    let t = subcommand;
    let runs = |a: &&str| {
        RUNNING.iter().any(|o| a.starts_with(o))
            || (a.starts_with("-O") && t == "grep")
            || (matches!(*a, "-x" | "-t") && matches!(t, "rebase" | "difftool" | "mergetool"))
            || (a.starts_with("-u")
                && matches!(t, "clone" | "fetch" | "ls-remote" | "pull" | "archive"))
            || (a.starts_with("-c") && t == "clone")
            || (matches!(*a, "run" | "foreach") && matches!(t, "bisect" | "submodule"))
    };
    (matches!(t, "filter-branch" | "daemon" | "instaweb" | "web--browse") || args.iter().any(runs))
        .then(|| format!("`git {t}` runs a command from its arguments"))
}

/// The operands of `args`: what does not start with `-`, after the options.
pub(super) fn operands(args: &[Word]) -> Vec<&str> {
    let mut past = false;
    args.iter()
        .map(Word::text)
        .filter(|t| {
            if past {
                return true;
            }
            if *t == "--" {
                past = true;
                return false;
            }
            !t.starts_with('-') || *t == "-"
        })
        .collect()
}
