use std::time::Duration;

use protocol::{ServerFrame, SessionId, SessionInfo, SessionSummary};
use tokio::sync::mpsc;

use super::{SummaryHub, forward};

fn summary(id: &str, turns: u64) -> SessionSummary {
    let info = SessionInfo {
        turns,
        ..SessionInfo::idle(SessionId(id.to_string()), "/")
    };
    SessionSummary::idle(info, None)
}

fn turns_of(frame: &ServerFrame) -> Option<(String, u64)> {
    match frame {
        ServerFrame::Summary(s) => Some((s.info.id.0.clone(), s.info.turns)),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_busy_session_is_sent_at_most_ten_times_a_second_and_its_last_state_always() {
    let hub = SummaryHub::default();
    let watcher = hub.watch();
    let (out, mut frames) = mpsc::channel(1024);
    let task = tokio::spawn(forward(
        vec![summary("a", 0), summary("b", 0)],
        watcher,
        out,
        |_| {},
    ));
    assert_eq!(
        turns_of(&frames.recv().await.unwrap()),
        Some(("a".into(), 0))
    );
    assert_eq!(
        turns_of(&frames.recv().await.unwrap()),
        Some(("b".into(), 0))
    );
    assert!(matches!(
        frames.recv().await.unwrap(),
        ServerFrame::SummariesReady { sessions: 2 }
    ));

    // A hundred changes in one second.
    for turn in 1..=100 {
        hub.changed(&summary("a", turn));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    hub.changed(&summary("b", 7));
    hub.removed(&SessionId("b".to_string()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut a = Vec::new();
    let mut removed = false;
    while let Ok(frame) = frames.try_recv() {
        match frame {
            ServerFrame::SummaryRemoved { session } => removed = session.0 == "b",
            frame => {
                let (id, turns) = turns_of(&frame).unwrap();
                assert_eq!(id, "a", "b was removed before it was due");
                a.push(turns);
            }
        }
    }
    assert!(a.len() <= 11, "{a:?}");
    assert_eq!(a.last(), Some(&100), "{a:?}");
    assert!(removed);
    task.abort();
}

#[tokio::test]
async fn nobody_watching_costs_nothing_and_a_gone_watcher_is_dropped() {
    let hub = SummaryHub::default();
    hub.changed(&summary("a", 1));
    let watcher = hub.watch();
    hub.changed(&summary("a", 2));
    assert_eq!(watcher.take().len(), 1);
    drop(watcher);
    hub.changed(&summary("a", 3));
    assert!(super::lock(&hub.0).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_new_request_is_sent_at_once_but_never_more_than_ten_a_second() {
    let hub = SummaryHub::default();
    let watcher = hub.watch();
    let (out, mut frames) = mpsc::channel(1024);
    let task = tokio::spawn(forward(vec![summary("a", 0)], watcher, out, |_| {}));
    frames.recv().await.unwrap();
    frames.recv().await.unwrap();
    // Each change brings a new request: sent without waiting, up to ten within the second.
    let start = tokio::time::Instant::now();
    let mut times = Vec::new();
    for n in 1..=15u64 {
        let mut s = summary("a", n);
        s.pending.push(protocol::PendingSummary {
            session: None,
            request: protocol::PermissionRequestId(n),
            tool: "bash".into(),
            summary: "x".into(),
            since_ms: 0,
        });
        hub.changed(&s);
        let frame = frames.recv().await.unwrap();
        assert_eq!(turns_of(&frame), Some(("a".into(), n)));
        times.push(start.elapsed());
    }
    // The snapshot counts as one: nine more at once, the rest a second after the first ones.
    assert!(times[..9].iter().all(|t| *t == Duration::ZERO), "{times:?}");
    assert!(times[9] >= Duration::from_secs(1), "{times:?}");
    task.abort();
}
