//! The summaries of several daemons at once, for the board and `sessions --watch` across
//! hosts (docs/architecture.md#another-machine-over-ssh): one [`Summaries`] feed per host, each
//! reached on its own. A host that cannot be reached, or whose feed gave up reconnecting, is
//! tried again with growing pauses, for as long as the front end runs; the others go on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use agentctl::client::paths::Paths;
use agentctl::client::{Changes, Client, Summaries};
use tokio::sync::mpsc;

use crate::connect::{self, ConnectError};
use crate::hosts::Remote;
use crate::ssh_link::LinkError;

/// The name the board shows for this machine's daemon.
pub const LOCAL: &str = "local";

/// The first pause before a host that could not be reached is tried again.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// The longest pause between two attempts to reach a host.
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// What happened to one host.
#[derive(Debug)]
pub enum Update {
    /// Its feed is up: its summaries follow (with `ready` once every session came).
    Up,
    /// It could not be reached (why, in a few words): it is tried again.
    Unreachable(String),
    /// What changed on it. A `closed` feed is dropped (its sessions are gone from view) and
    /// the host tried again.
    Changes(Changes),
}

/// A wait for one feed's next change.
type Wait<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What an attempt to reach a host reports: the host's place, and its feed or why not.
type Report = (usize, Result<Summaries, String>);

/// One host: where it is, and its feed while it is up.
struct Host {
    /// Where its daemon is (`None`: this machine's).
    target: Option<Remote>,
    /// Its feed, while up.
    feed: Option<Summaries>,
    /// Attempts that failed since it was last up.
    failures: u32,
}

/// The feeds of every host the front end shows.
pub struct Feeds {
    /// The hosts, in the order they were given.
    hosts: Vec<Host>,
    /// Where attempts to reach a host report.
    done: mpsc::UnboundedSender<Report>,
    /// What attempts reported.
    reports: mpsc::UnboundedReceiver<Report>,
    /// How to reach this machine's daemon.
    paths: Paths,
    /// The command the connections are named after.
    command: &'static str,
}

impl Feeds {
    /// Starts reaching every host of `targets` (`None`: this machine's daemon); what comes of
    /// it arrives through [`Feeds::next`].
    pub fn open(paths: &Paths, targets: Vec<Option<Remote>>, command: &'static str) -> Feeds {
        let (done, reports) = mpsc::unbounded_channel();
        let feeds = Feeds {
            hosts: targets
                .into_iter()
                .map(|target| Host {
                    target,
                    feed: None,
                    failures: 0,
                })
                .collect(),
            done,
            reports,
            paths: paths.clone(),
            command,
        };
        for host in 0..feeds.hosts.len() {
            feeds.attempt(host, Duration::ZERO);
        }
        feeds
    }

    /// The feed of one host, `target`, reached already.
    pub fn reached(
        paths: &Paths,
        target: Option<Remote>,
        feed: Summaries,
        command: &'static str,
    ) -> Feeds {
        let (done, reports) = mpsc::unbounded_channel();
        Feeds {
            hosts: vec![Host {
                target,
                feed: Some(feed),
                failures: 0,
            }],
            done,
            reports,
            paths: paths.clone(),
            command,
        }
    }

    /// How many hosts there are.
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// The name a view gives host number `host`: [`LOCAL`] for this machine's daemon.
    pub fn label(&self, host: usize) -> String {
        match self.hosts.get(host).and_then(|h| h.target.as_ref()) {
            Some(remote) => remote.label.clone(),
            None => LOCAL.to_string(),
        }
    }

    /// Where host number `host` is (`None`: this machine).
    pub fn target(&self, host: usize) -> Option<&Remote> {
        self.hosts.get(host).and_then(|h| h.target.as_ref())
    }

    /// The connection to host number `host` now, for requests; `None` while it is down.
    pub fn client(&self, host: usize) -> Option<Arc<Client>> {
        self.hosts.get(host)?.feed.as_ref().map(Summaries::client)
    }

    /// Waits for the next things that happened, host by host. Cancel-safe: nothing is lost
    /// when the wait is dropped.
    pub async fn next(&mut self) -> Vec<(usize, Update)> {
        let report = {
            let hosts = &self.hosts;
            let reports = &mut self.reports;
            let mut waits: Vec<Wait> = hosts
                .iter()
                .filter_map(|h| Some(Box::pin(h.feed.as_ref()?.changed()) as Wait))
                .collect();
            let mut report = Box::pin(reports.recv());
            std::future::poll_fn(|cx| {
                if let Poll::Ready(report) = report.as_mut().poll(cx) {
                    return Poll::Ready(report);
                }
                for wait in &mut waits {
                    if wait.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending
            })
            .await
        };
        let mut updates = Vec::new();
        if let Some((host, result)) = report {
            match result {
                Ok(feed) => {
                    if let Some(h) = self.hosts.get_mut(host) {
                        h.feed = Some(feed);
                        h.failures = 0;
                    }
                    updates.push((host, Update::Up));
                }
                Err(reason) => {
                    let failures = self.hosts.get(host).map_or(0, |h| h.failures);
                    self.attempt(host, pause_after(failures));
                    if let Some(h) = self.hosts.get_mut(host) {
                        h.failures = h.failures.saturating_add(1);
                    }
                    updates.push((host, Update::Unreachable(reason)));
                }
            }
        }
        // Every feed is looked at: a wake-up may stand for several.
        for host in 0..self.hosts.len() {
            let Some(feed) = &self.hosts[host].feed else {
                continue;
            };
            let changes = feed.take();
            if changes.closed.is_some() {
                self.hosts[host].feed = None;
                self.attempt(host, FIRST_PAUSE);
            }
            if has_news(&changes) {
                updates.push((host, Update::Changes(changes)));
            }
        }
        updates
    }

    /// Tries to reach host number `host` after `pause`, in the background.
    fn attempt(&self, host: usize, pause: Duration) {
        let Some(h) = self.hosts.get(host) else {
            return;
        };
        let (target, paths, command) = (h.target.clone(), self.paths.clone(), self.command);
        let done = self.done.clone();
        tokio::spawn(async move {
            tokio::time::sleep(pause).await;
            let _ = done.send((host, reach(target, &paths, command).await));
        });
    }
}

/// The feed of `target`'s daemon, or why it cannot be had (in a few words, for one line). An
/// ssh that neither answers nor fails (a machine that drops packets) is given up after
/// [`REACH_TIMEOUT`], so that the host shows as unreachable rather than as loading.
pub async fn reach(
    target: Option<Remote>,
    paths: &Paths,
    command: &str,
) -> Result<Summaries, String> {
    let attempt = async {
        let client = connect::connect_to(target.as_ref(), paths, command)
            .await
            .map_err(|err| short_reason(&err))?;
        let reconnect = connect::reconnect_to(target.clone(), paths, command);
        Summaries::follow_reconnecting(client, reconnect)
            .await
            .map_err(|err| one_line(&err.to_string()))
    };
    match tokio::time::timeout(REACH_TIMEOUT, attempt).await {
        Ok(reached) => reached,
        Err(_) => Err(format!("no answer within {} s", REACH_TIMEOUT.as_secs())),
    }
}

/// How long reaching a host may take before it counts as unreachable (and is tried again).
const REACH_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a host could not be reached, short enough for one line of the board, and printable
/// (it may hold what the far end said).
pub fn short_reason(err: &ConnectError) -> String {
    match err {
        ConnectError::Link(LinkError::NoBridge { reason, .. }) => one_line(reason),
        err => one_line(err.to_string().lines().next().unwrap_or_default()),
    }
}

/// `text` on one line, with nothing a terminal would obey, at most 300 characters.
fn one_line(text: &str) -> String {
    agentctl::client::one_line(text, 300)
}

/// Whether `changes` holds anything to show.
fn has_news(changes: &Changes) -> bool {
    !changes.updated.is_empty()
        || !changes.removed.is_empty()
        || changes.ready
        || changes.reconnecting.is_some()
        || changes.reconnected
        || changes.closed.is_some()
}

/// The pause before the next attempt after `failures` failed ones: half a second, doubling,
/// at most [`MAX_PAUSE`].
fn pause_after(failures: u32) -> Duration {
    (FIRST_PAUSE * (1u32 << failures.min(5))).min(MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_host_is_tried_with_growing_pauses() {
        let pauses: Vec<u64> = (0..7).map(|n| pause_after(n).as_millis() as u64).collect();
        assert_eq!(pauses, [500, 1000, 2000, 4000, 8000, 10000, 10000]);
    }
}
