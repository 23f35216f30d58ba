//! Frames from the far end made fit to keep and show before anything else sees them: every
//! session id must be one (letters, digits and `-`, at most 64), or the connection ends; the
//! texts that describe a session (its directory, title, model, the request it waits on, the
//! tool it runs) are put on one line, with nothing a terminal would obey, and capped. A daemon
//! keeps its own texts within these bounds; one on another machine that does not is not
//! trusted to (docs/architecture.md#another-machine-over-ssh).

use protocol::{Activity, Reply, ServerFrame, SessionId, SessionInfo, SessionSummary};

use super::far_text::{self, PATH_CHARS, one_line};

/// The most characters of a title kept (a daemon takes at most 500).
const TITLE_CHARS: usize = 500;

/// The most characters of a model's or provider's name, a branch, a tool's name (a daemon
/// takes names of at most 200).
const NAME_CHARS: usize = 200;

/// The most characters of what a request or a tool works on.
const DETAIL_CHARS: usize = 1000;

/// Checks and tames `frame` in place; `Err` says why the connection cannot go on.
pub fn frame(frame: &mut ServerFrame) -> Result<(), String> {
    match frame {
        ServerFrame::Event(event) => id(&event.session),
        ServerFrame::Lagged { session, .. }
        | ServerFrame::ReplayDone { session, .. }
        | ServerFrame::SummaryRemoved { session } => id(session),
        ServerFrame::Summary(summary) => self::summary(summary),
        ServerFrame::Reply {
            result: Ok(reply), ..
        } => self::reply(reply),
        ServerFrame::Reply { .. }
        | ServerFrame::SummariesReady { .. }
        | ServerFrame::Error(_)
        | ServerFrame::Welcome(_) => Ok(()),
    }
}

/// The session infos a reply carries.
fn reply(reply: &mut Reply) -> Result<(), String> {
    match reply {
        Reply::SessionCreated(info)
        | Reply::Subscribed(info)
        | Reply::SentSubscribed { info, .. }
        | Reply::History { session: info, .. } => self::info(info),
        Reply::Sessions { sessions, .. } => sessions.iter_mut().try_for_each(self::info),
        _ => Ok(()),
    }
}

/// A summary: its session, what it runs, what it waits on.
fn summary(summary: &mut SessionSummary) -> Result<(), String> {
    info(&mut summary.info)?;
    if let Activity::Tool { name, detail } = &mut summary.activity {
        *name = one_line(name, NAME_CHARS);
        *detail = one_line(detail, DETAIL_CHARS);
    }
    if let Some(end) = summary.run.as_mut().and_then(|run| run.end.as_mut())
        && let Some(error) = &mut end.error
    {
        *error = one_line(error, far_text::MESSAGE_CHARS);
    }
    for pending in &mut summary.pending {
        if let Some(session) = &pending.session {
            id(session)?;
        }
        pending.tool = one_line(&pending.tool, NAME_CHARS);
        pending.summary = one_line(&pending.summary, DETAIL_CHARS);
    }
    Ok(())
}

/// One session's listing.
fn info(info: &mut SessionInfo) -> Result<(), String> {
    id(&info.id)?;
    if let Some(parent) = &info.parent {
        id(parent)?;
    }
    info.cwd = one_line(&info.cwd, PATH_CHARS);
    if let Some(title) = &mut info.title {
        *title = one_line(title, TITLE_CHARS);
    }
    for name in [&mut info.model, &mut info.provider, &mut info.branch]
        .into_iter()
        .flatten()
    {
        *name = one_line(name, NAME_CHARS);
    }
    Ok(())
}

/// `Ok` when `session` is a session id.
fn id(session: &SessionId) -> Result<(), String> {
    match SessionId::is_well_formed(session.as_str()) {
        true => Ok(()),
        false => Err(format!(
            "the daemon sent `{}` as a session id, which is not one; it cannot be trusted",
            one_line(session.as_str(), 80)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(id: &str, cwd: &str) -> SessionInfo {
        SessionInfo {
            title: Some("t\x1b]0;x\x07".repeat(100)),
            ..SessionInfo::idle(SessionId(id.to_string()), cwd)
        }
    }

    #[test]
    fn a_session_id_that_is_not_one_ends_the_connection() {
        for bad in [
            "",
            "s1\x1b]0;x\x07",
            "a b",
            "s1\n[other] x",
            &"a".repeat(65),
        ] {
            let mut frame = ServerFrame::SummaryRemoved {
                session: SessionId(bad.to_string()),
            };
            let err = super::frame(&mut frame).unwrap_err();
            assert!(!err.contains('\x1b') && !err.contains('\n'), "{err}");
        }
        let mut ok = ServerFrame::SummaryRemoved {
            session: SessionId("3f2a1b2c-0d".into()),
        };
        assert!(super::frame(&mut ok).is_ok());
    }

    #[test]
    fn a_sessions_texts_are_one_line_and_capped() {
        let mut reply = ServerFrame::Reply {
            id: protocol::RequestId(1),
            result: Ok(Reply::SessionCreated(listing(
                "abc",
                &format!("/x\x1b[2J\n{}", "y".repeat(10_000)),
            ))),
        };
        super::frame(&mut reply).unwrap();
        let ServerFrame::Reply {
            result: Ok(Reply::SessionCreated(info)),
            ..
        } = reply
        else {
            panic!()
        };
        assert!(!info.cwd.contains('\x1b') && !info.cwd.contains('\n'));
        assert_eq!(info.cwd.chars().count(), PATH_CHARS + 1);
        let title = info.title.unwrap();
        assert!(!title.contains('\x1b') && title.chars().count() == TITLE_CHARS + 1);
    }
}
