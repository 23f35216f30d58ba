//! `agentctl diff`, `agentctl rewind` and `agentctl fork`: what a session's runs changed in its
//! directory, undoing it, and a new session from its history. The chat view shows the same
//! lines for `/diff` and `/rewind`.

use std::io::{BufRead, IsTerminal, Write};

use agentctl::client::paths::Paths;
use protocol::{ChangeKind, Reply, Request, RewindReport, RunDiff, RunId, SessionId};

use super::{request, unexpected};
use crate::Failure;
use crate::connect;
use crate::view::Style;

/// The lines of a run's diff: the patch, colored, or with `stat` a line per file and a total.
pub fn diff_lines(diff: &RunDiff, style: Style, stat: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let open = if diff.open {
        " (no end checkpoint: compared with the directory now)"
    } else {
        ""
    };
    if diff.files.is_empty() {
        lines.push(style.dim(&format!("run {} changed no files{open}", diff.run)));
    } else if stat {
        let width = diff
            .files
            .iter()
            .map(|f| f.path.chars().count())
            .max()
            .unwrap_or(0);
        let (mut added, mut removed) = (0, 0);
        for file in &diff.files {
            added += file.added;
            removed += file.removed;
            let counts = if file.binary {
                "binary".to_string()
            } else {
                format!(
                    "{} {}",
                    style.green(&format!("+{}", file.added)),
                    style.red(&format!("-{}", file.removed))
                )
            };
            let kind = match file.kind {
                ChangeKind::Added => "new",
                ChangeKind::Modified => "",
                ChangeKind::Deleted => "deleted",
            };
            let path = crate::style::one_line(&file.path);
            lines.push(
                format!(" {path:<width$} | {counts} {kind}")
                    .trim_end()
                    .to_string(),
            );
        }
        lines.push(format!(
            " {} files changed, {added} insertions(+), {removed} deletions(-) in run {}{open}",
            diff.files.len(),
            diff.run
        ));
    } else {
        lines.push(style.dim(&format!("run {}{open}", diff.run)));
        for line in diff.patch.lines() {
            lines.push(crate::colored_diff::colored(line, style));
        }
        if diff.truncated {
            lines.push(style.yellow("(the diff is cut here; --stat lists every file)"));
        }
    }
    for path in &diff.not_stored {
        let path = crate::style::one_line(path);
        lines.push(style.yellow(&format!(
            "{path}: not recorded (over the checkpoint size limit, or a repository of its own)"
        )));
    }
    lines
}

/// The lines of a rewind's report (or plan, for a dry run).
pub fn rewind_lines(report: &RewindReport, style: Style) -> Vec<String> {
    let (restore, remove) = if report.dry_run {
        ("would restore", "would remove")
    } else {
        ("restored", "removed")
    };
    let mut lines = Vec::new();
    let shown = |path: &String| crate::style::one_line(path).into_owned();
    for path in report.restored.iter().map(shown) {
        lines.push(format!("{} {path}", style.green(restore)));
    }
    for path in report.removed.iter().map(shown) {
        lines.push(format!("{} {path}", style.red(remove)));
    }
    for path in report.kept.iter().map(shown) {
        lines.push(style.yellow(&format!(
            "kept {path}: changed outside the agent since the run, or the run's end was not recorded (--force restores it too)"
        )));
    }
    for problem in report.failed.iter().map(shown) {
        lines.push(style.yellow(&format!("not restored: {problem}")));
    }
    let undone = !report.restored.is_empty() || !report.removed.is_empty();
    if !undone && report.kept.is_empty() && report.failed.is_empty() {
        lines.push(format!(
            "nothing to undo: the files run {} changed are as they were before it",
            report.run
        ));
    } else if !undone {
        // Files do differ from before the run: the lines above say which and why.
        let (what, left) = if report.dry_run {
            ("nothing would be undone", "would be left")
        } else {
            ("nothing was undone", "were left")
        };
        lines.push(format!(
            "{what}: the files above differ from before run {} but {left} as they are",
            report.run
        ));
    } else if !report.dry_run {
        lines.push(style.dim(&format!(
            "the directory is as before run {}; the conversation is kept (the model is told)",
            report.run
        )));
    }
    lines
}

/// Prints what run `run` (default: the last that changed files) of session `id` changed.
pub async fn diff(paths: &Paths, id: String, run: Option<u64>, stat: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "diff").await?;
    let reply = request(
        &client,
        Request::Diff {
            session: SessionId(id),
            run: run.map(RunId),
        },
    )
    .await?;
    let Reply::Diff(diff) = reply else {
        return Err(unexpected(reply));
    };
    let mut out = std::io::stdout().lock();
    for line in diff_lines(&diff, Style::detect(), stat) {
        writeln!(out, "{line}")?;
    }
    Ok(0)
}

/// Puts session `id`'s directory back as it was before run `run`, after showing what would
/// change and asking, unless `yes`.
pub async fn rewind(
    paths: &Paths,
    id: String,
    run: Option<u64>,
    force: bool,
    yes: bool,
) -> Result<u8, Failure> {
    let client = connect::connect(paths, "rewind").await?;
    let ask = |run: Option<RunId>, dry_run| Request::Rewind {
        session: SessionId(id.clone()),
        run,
        force,
        dry_run,
    };
    // What is done is what was confirmed: the run the plan named.
    let mut run = run.map(RunId);
    let style = Style::detect();
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(Failure {
                message: "rewind changes files: confirm with --yes (stdin is not a terminal)"
                    .to_string(),
                code: 2,
            });
        }
        let reply = request(&client, ask(run, true)).await?;
        let Reply::Rewound(plan) = reply else {
            return Err(unexpected(reply));
        };
        for line in rewind_lines(&plan, style) {
            outln!("{line}");
        }
        if plan.restored.is_empty() && plan.removed.is_empty() {
            return Ok(0);
        }
        out!("rewind the directory to before run {}? [y/N] ", plan.run);
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            outln!("nothing changed");
            return Ok(1);
        }
        run = Some(plan.run);
    }
    let reply = request(&client, ask(run, false)).await?;
    let Reply::Rewound(report) = reply else {
        return Err(unexpected(reply));
    };
    for line in rewind_lines(&report, style) {
        outln!("{line}");
    }
    Ok(if report.failed.is_empty() { 0 } else { 1 })
}

/// Creates a session with session `id`'s history up to turn `turn` and prints its id.
pub async fn fork(paths: &Paths, id: String, turn: Option<u64>) -> Result<u8, Failure> {
    let client = connect::connect(paths, "fork").await?;
    let reply = request(
        &client,
        Request::Fork {
            session: SessionId(id.clone()),
            turn,
        },
    )
    .await?;
    let Reply::SessionCreated(info) = reply else {
        return Err(unexpected(reply));
    };
    outln!("{}", info.id);
    eprintln!(
        "forked {id} with {}; `agentctl chat --session {}` goes on from there",
        crate::format::count(info.turns, "turn"),
        info.id
    );
    Ok(0)
}
