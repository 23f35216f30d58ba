//! What the daemon and its clients see of a session: its listing (title, mode, model, state,
//! turns), the board's summary folded from its events (docs/architecture.md#the-board), and
//! its token use. The listing is published to the daemon's registry whenever it changes.

use std::collections::BTreeMap;

use protocol::{
    Mode, PlanItem, RunSummary, SessionId, SessionInfo, SessionState, SessionSummary, UsageReport,
};

use crate::prices::Price;
use crate::session::listing::Listing;
use crate::session::summary::SummaryTracker;
use crate::session::usage::UsageTracker;

/// The session as it is shown.
pub(super) struct Shown {
    /// Its listing, without what the log and the queues add.
    info: SessionInfo,
    /// Where the listing is published.
    listing: Listing,
    /// What the board shows of the session, folded from its events.
    board: SummaryTracker,
    /// The tokens of its runs, by model, folded from its events.
    usage: UsageTracker,
    /// The model's plan as its last `PlanUpdated` set it (docs/architecture.md#the-plan).
    plan: Vec<PlanItem>,
}

/// What the log and the queues add to the listing: the last `seq`, the last event's time, and
/// how many messages wait to steer and to follow.
pub(super) struct Now {
    /// The last `seq` handed out.
    pub(super) last_seq: u64,
    /// When the last event happened; 0 before any.
    pub(super) last_time_ms: u64,
    /// Messages waiting to steer, and to follow.
    pub(super) queued: (u32, u32),
}

impl Shown {
    /// A session listed as `info`, published to `listing`; it counts its turns from its log.
    pub(super) fn new(mut info: SessionInfo, listing: Listing) -> Shown {
        info.turns = 0;
        Shown {
            info,
            listing,
            board: SummaryTracker::default(),
            usage: UsageTracker::default(),
            plan: Vec::new(),
        }
    }

    /// The session's id.
    pub(super) fn id(&self) -> &SessionId {
        &self.info.id
    }

    /// The permission mode.
    pub(super) fn mode(&self) -> Mode {
        self.info.mode
    }

    /// The session's model, when it names one.
    pub(super) fn model(&self) -> Option<&str> {
        self.info.model.as_deref()
    }

    /// The session's provider profile, when it names one.
    pub(super) fn provider(&self) -> Option<&str> {
        self.info.provider.as_deref()
    }

    /// When the session was created.
    pub(super) fn created_ms(&self) -> u64 {
        self.info.created_ms
    }

    /// The listing as of `now`.
    pub(super) fn listing(&self, now: Now) -> SessionInfo {
        let mut info = self.info.clone();
        info.last_seq = now.last_seq;
        if now.last_time_ms > 0 {
            info.last_activity_ms = now.last_time_ms;
        }
        (info.steer_queued, info.follow_up_queued) = now.queued;
        info
    }

    /// The board's summary of the session listed as `info`.
    pub(super) fn summary(&self, info: SessionInfo) -> SessionSummary {
        self.board.summary(info)
    }

    /// Publishes `summary` to the daemon's registry.
    pub(super) fn publish(&self, summary: SessionSummary) {
        self.listing.publish(summary);
    }

    /// Takes in an event that happened at `time_ms`.
    pub(super) fn fold(&mut self, event: &protocol::Event, time_ms: u64) {
        self.board.apply(event, time_ms);
        self.usage.apply(event);
        if let protocol::Event::PlanUpdated { items } = event {
            self.plan.clone_from(items);
        }
    }

    /// The model's plan as it stands.
    pub(super) fn plan(&self) -> &[PlanItem] {
        &self.plan
    }

    /// Sets the session's state; whether it changed.
    pub(super) fn set_state(&mut self, state: SessionState) -> bool {
        let changed = self.info.state != state;
        self.info.state = state;
        changed
    }

    /// Sets the permission mode.
    pub(super) fn set_mode(&mut self, mode: Mode) {
        self.info.mode = mode;
    }

    /// Sets the model of the session's next runs.
    pub(super) fn set_model(&mut self, model: String) {
        self.info.model = Some(model);
    }

    /// A session without a title takes one from its first message (its first line); whether
    /// it did.
    pub(super) fn take_title(&mut self, message: &str) -> bool {
        if self.info.title.is_some() {
            return false;
        }
        let title = protocol::title_of(message);
        if title.is_empty() {
            return false;
        }
        self.info.title = Some(title);
        true
    }

    /// A model reply joined the history.
    pub(super) fn count_turn(&mut self) {
        self.info.turns += 1;
    }

    /// The run that ended last, if the last run has ended.
    pub(super) fn finished_run(&self) -> Option<RunSummary> {
        self.board.finished_run()
    }

    /// The session's tokens and cost per model, priced with `prices`.
    pub(super) fn usage(&self, prices: &BTreeMap<String, Price>) -> UsageReport {
        self.usage.report(prices)
    }
}
