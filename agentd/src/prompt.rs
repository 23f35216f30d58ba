//! The system prompt: the agent's role, its environment, the mode's instructions, and the
//! project's own instructions (`AGENTS.md`, `CLAUDE.md`) from the repository root down to the
//! session directory (docs/architecture.md#providers).

use std::path::{Path, PathBuf};

use protocol::Mode;

use crate::regular_file::read_text;

/// Characters of one instructions file included before it is cut.
const MAX_INSTRUCTIONS: usize = 20_000;
/// Bytes read of `.git` and `HEAD`: a real one is a line.
const MAX_GIT_FILE: usize = 4096;

const ROLE: &str = "You are agentd, a coding agent working in the user's terminal. You read, \
search, edit and run code in the working directory to complete the user's task.

How to work:
- Look before you change: use glob and grep to find things and read to see them; do not guess \
file contents.
- Make focused changes with edit (exact, unique old_string) or write for new files. Keep the \
project's style.
- Check your work by running the project's build or tests with bash when it makes sense.
- Start servers, watchers and other long commands with bash's background option, then read \
their output with bash_output and end them with kill_shell when done.
- Read web pages and documentation with fetch, not curl.
- Tool calls that do not depend on each other may be made together in one reply; reads, greps \
and globs then run in parallel.
- If a tool fails, read the error and adjust instead of repeating the same call.
- For a task of three steps or more, keep a plan with todo: set it before you start, update \
it as each step finishes, and keep exactly one step in progress. The user watches it.
- Finish with a short plain answer to the user's request, in a few sentences.";

/// The role for small models: few rules, each a step to take, and one task done right.
const SMALL_ROLE: &str = "You are agentd, a coding agent. You do the user's task yourself by \
calling tools; only a tool call changes a file or runs a command.

How to work:
- To change a file: read it, then call write with the complete new content of the whole file.
- To answer a question: read what you need, then answer in plain text. Never write a file to \
answer.
- One tool call at a time; use each result for the next step.
- When the work is done, say in one or two sentences what you did. Do not show the user code \
instead of writing it.

Example: the user asks you to make `area` in shapes.py return the area of a circle.
1. You call read with {\"path\": \"shapes.py\"} and see its numbered lines:
     1\timport math
     2\t
     3\tdef area(r):
     4\t    return 0
2. You call write with {\"path\": \"shapes.py\", \"content\": \"import math\\n\\ndef area(r):\\n    \
return math.pi * r * r\\n\"}: the whole file with the change made, the rest kept as it was, \
without line numbers.
3. You answer: area in shapes.py now returns the area of a circle.";

const PLAN_MODE: &str = "# Plan mode

Plan mode is active. You may explore (read, grep, glob, and bash for read-only commands) but \
must not change the project: no edits, no writes, no commits, no configuration changes. The \
only file you may write is the plan file:

{plan_file}

Workflow: explore the code, work out the approach, write the plan (steps, files to change, \
risks, how to verify) to the plan file, then summarise it and wait for the user to approve \
before anything is changed.";

/// Builds the system prompt for a session in `cwd`; `small` for a model given the small
/// profile.
pub(crate) fn system_prompt(cwd: &Path, mode: Mode, plan_file: &Path, small: bool) -> String {
    let role = if small { SMALL_ROLE } else { ROLE };
    let mut parts = vec![role.to_string(), environment(cwd)];
    if mode == Mode::Plan {
        parts.push(PLAN_MODE.replace("{plan_file}", &plan_file.display().to_string()));
    }
    for (path, text) in project_instructions(cwd) {
        parts.push(format!(
            "# Project instructions from {}\n\n{text}",
            path.display()
        ));
    }
    parts.join("\n\n")
}

fn environment(cwd: &Path) -> String {
    let git = match git_root(cwd) {
        Some(root) => match branch(&root) {
            Some(branch) => format!("yes (root {}, branch {branch})", root.display()),
            None => format!("yes (root {})", root.display()),
        },
        None => "no".to_string(),
    };
    format!(
        "# Environment\n\nWorking directory: {}\nOperating system: {} ({})\nToday's date: {}\nGit repository: {git}",
        cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        today(),
    )
}

/// The nearest directory at or above `dir` holding `.git`.
pub(crate) fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The checked-out branch of the repository at `root`, or the short commit when detached.
fn branch(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    // A worktree or submodule has a `.git` file pointing at the real git directory.
    let git_dir = if dot_git.is_file() {
        let text = read_text(&dot_git, MAX_GIT_FILE)?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    } else {
        dot_git
    };
    let head = read_text(&git_dir.join("HEAD"), MAX_GIT_FILE)?;
    let head = head.trim();
    // Only what a HEAD holds (a link in a repository may lead elsewhere): a ref, or a commit.
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+".contains(c);
    let is_ref = head
        .strip_prefix("ref: ")
        .is_some_and(|r| r.chars().all(plain));
    if !is_ref && !head.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    match head.strip_prefix("ref: ") {
        Some(reference) => Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_string(),
        ),
        None => Some(format!(
            "detached at {}",
            head.chars().take(12).collect::<String>()
        )),
    }
}

/// `AGENTS.md` and `CLAUDE.md` files from the repository root (or `cwd` outside a repository)
/// down to `cwd`, outermost first.
pub(crate) fn project_instructions(cwd: &Path) -> Vec<(PathBuf, String)> {
    let top = git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .collect();
    dirs.reverse();
    // The project's own files only: a link that leads out of it (to a key file, say) is not
    // read into every request.
    let Ok(real_top) = top.canonicalize() else {
        return Vec::new();
    };
    let own = |path: &Path| {
        path.canonicalize()
            .is_ok_and(|real| real.starts_with(&real_top))
    };
    let mut found = Vec::new();
    for dir in dirs {
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let path = dir.join(name);
            if !own(&path) {
                continue;
            }
            // A character is at most 4 bytes: this is enough for the characters kept.
            if let Some(text) = read_text(&path, MAX_INSTRUCTIONS * 4 + 4) {
                let text = text.trim();
                if text.is_empty() {
                    continue;
                }
                let text = if text.chars().count() > MAX_INSTRUCTIONS {
                    text.chars().take(MAX_INSTRUCTIONS).collect::<String>() + "\n[... cut ...]"
                } else {
                    text.to_string()
                };
                found.push((path, text));
            }
        }
    }
    found
}

/// Today's date as `YYYY-MM-DD` (UTC).
fn today() -> String {
    let days = (crate::now_ms() / 86_400_000) as i64;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_computed_from_day_counts() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn only_a_ref_or_a_commit_is_shown_from_head() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let head = dir.path().join(".git/HEAD");
        std::fs::write(&head, "0123456789abcdef0123\n").unwrap();
        assert_eq!(
            branch(dir.path()).as_deref(),
            Some("detached at 0123456789ab")
        );
        // A HEAD that is a link to something else (a key file) shows nothing of it.
        std::fs::write(&head, "ééééééééé\n").unwrap();
        assert_eq!(branch(dir.path()), None);
        std::fs::write(&head, "ANTHROPIC_API_KEY=sk-x\n").unwrap();
        assert_eq!(branch(dir.path()), None);
    }

    #[test]
    fn instructions_that_lead_out_of_the_project_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("repo"), dir.path().join("key"));
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(&outside, "ANTHROPIC_API_KEY=sk-secret").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("AGENTS.md")).unwrap();
        std::fs::write(root.join("rules.md"), "own rules").unwrap();
        std::os::unix::fs::symlink("rules.md", root.join("CLAUDE.md")).unwrap();
        let found = project_instructions(&root);
        let texts: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, vec!["own rules"]);
    }

    #[test]
    fn instructions_come_from_the_repository_root_down() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.join("app/CLAUDE.md"), "app rules").unwrap();
        let found = project_instructions(&root.join("app"));
        let texts: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, vec!["root rules", "app rules"]);
        let prompt = system_prompt(
            &root.join("app"),
            Mode::Plan,
            Path::new("/p/plan.md"),
            false,
        );
        assert!(prompt.contains("branch feature/x"), "{prompt}");
        assert!(prompt.contains("Plan mode is active") && prompt.contains("/p/plan.md"));
        assert!(prompt.find("root rules").unwrap() < prompt.find("app rules").unwrap());
    }

    #[test]
    fn the_prompt_asks_for_a_plan_with_todo_where_todo_is_offered() {
        let dir = tempfile::tempdir().unwrap();
        let full = system_prompt(dir.path(), Mode::Default, Path::new("/p.md"), false);
        assert!(
            full.contains("three steps or more, keep a plan with todo")
                && full.contains("exactly one step in progress"),
            "{full}"
        );
        // The small profile is not offered `todo`.
        let small = system_prompt(dir.path(), Mode::Default, Path::new("/p.md"), true);
        assert!(!small.contains("todo"), "{small}");
    }
}
