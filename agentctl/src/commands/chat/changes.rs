//! `/diff` and `/rewind` in the chat view: the same lines as `agentctl diff` and
//! `agentctl rewind`, above the input line.

use protocol::{Reply, Request, RunId};

use super::Chat;
use crate::Failure;
use crate::commands::changes::{diff_lines, rewind_lines};
use crate::commands::{request, unexpected};

/// `N`, `--stat`/`yes`-style words of a slash command: the run number, if one is given, and
/// whether `flag` is among them.
fn parse(rest: &str, flag: &str) -> Result<(Option<RunId>, bool), String> {
    let mut run = None;
    let mut set = false;
    for word in rest.split_whitespace() {
        if word == flag {
            set = true;
        } else {
            let n = word
                .parse()
                .map_err(|_| format!("`{word}` is not a run number"))?;
            run = Some(RunId(n));
        }
    }
    Ok((run, set))
}

impl Chat {
    /// `/diff [N] [--stat]`.
    pub(super) async fn diff(&mut self, rest: &str) -> Result<(), Failure> {
        let (run, stat) = match parse(rest, "--stat") {
            Ok(parsed) => parsed,
            Err(err) => {
                self.say(&err);
                return Ok(());
            }
        };
        let ask = Request::Diff {
            session: self.session.clone(),
            run,
        };
        match self.follower.client().request(ask).await {
            Ok(Reply::Diff(diff)) => {
                let lines = diff_lines(&diff, self.view.style(), stat);
                self.view.lines(&lines);
            }
            Ok(other) => return Err(unexpected(other)),
            Err(err) => self.say(&err.to_string()),
        }
        Ok(())
    }

    /// `/rewind [N]` shows what would change; `/rewind [N] yes` does it.
    pub(super) async fn rewind(&mut self, rest: &str) -> Result<(), Failure> {
        let (run, yes) = match parse(rest, "yes") {
            Ok(parsed) => parsed,
            Err(err) => {
                self.say(&err);
                return Ok(());
            }
        };
        let ask = Request::Rewind {
            session: self.session.clone(),
            run,
            force: false,
            dry_run: !yes,
        };
        let report = match request(&self.follower.client(), ask).await {
            Ok(Reply::Rewound(report)) => report,
            Ok(other) => return Err(unexpected(other)),
            Err(err) => {
                self.say(&err.message);
                return Ok(());
            }
        };
        let lines = rewind_lines(&report, self.view.style());
        self.view.lines(&lines);
        if report.dry_run && !(report.restored.is_empty() && report.removed.is_empty()) {
            self.say(&format!("to do it: /rewind {} yes", report.run));
        }
        Ok(())
    }
}
