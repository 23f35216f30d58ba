//! What a session's model calls used, model by model, folded from its events as they are
//! emitted or replayed: each reply's tokens count for the model its run started with, in the
//! run and in the session. Cost is worked out when asked, from the prices then in force.

use std::collections::BTreeMap;

use protocol::{Event, ModelUsage, RunId, TokenUsage, UsageReport, UsageTotals};

use crate::prices::{Price, price_of};

/// A provider profile and a model.
type Key = (String, String);

/// The tokens of a run or of the session, by model in the order first used.
#[derive(Debug, Default, Clone)]
struct Totals {
    models: Vec<(Key, TokenUsage)>,
    subagents: TokenUsage,
}

impl Totals {
    fn add(&mut self, key: &Key, usage: &TokenUsage) {
        match self.models.iter_mut().find(|(k, _)| k == key) {
            Some((_, total)) => total.add(usage),
            None => self.models.push((key.clone(), *usage)),
        }
    }

    fn report(&self, prices: &BTreeMap<String, Price>) -> UsageTotals {
        let models = self
            .models
            .iter()
            .map(|((provider, model), usage)| ModelUsage {
                model: model.clone(),
                provider: provider.clone(),
                usage: *usage,
                cost_micros: price_of(prices, model).map(|p| p.cost_micros(usage)),
            })
            .collect();
        UsageTotals {
            models,
            subagents: self.subagents,
        }
    }
}

/// What the events so far say about the session's token use.
#[derive(Debug, Default)]
pub(crate) struct UsageTracker {
    /// The provider and model of the run going (or the last one).
    current: Key,
    last_run: Option<RunId>,
    run: Totals,
    session: Totals,
}

impl UsageTracker {
    /// Takes in one event.
    pub(crate) fn apply(&mut self, event: &Event) {
        match event {
            Event::RunStarted {
                run,
                model,
                provider,
                ..
            } => {
                self.current = (provider.clone(), model.clone());
                self.last_run = Some(*run);
                self.run = Totals::default();
            }
            Event::Usage { turn, .. } => {
                self.run.add(&self.current, turn);
                self.session.add(&self.current, turn);
            }
            Event::SubagentFinished { usage, .. } => {
                self.run.subagents.add(usage);
                self.session.subagents.add(usage);
            }
            _ => {}
        }
    }

    /// The tokens so far, priced with `prices` where a model's price is known.
    pub(crate) fn report(&self, prices: &BTreeMap<String, Price>) -> UsageReport {
        UsageReport {
            last_run: self.last_run,
            run: self.run.report(prices),
            session: self.session.report(prices),
        }
    }
}

#[cfg(test)]
mod tests {
    use protocol::{Delivery, Event, RunId, TokenUsage};

    use super::UsageTracker;

    fn started(run: u64, model: &str) -> Event {
        Event::RunStarted {
            run: RunId(run),
            trigger: Delivery::FollowUp,
            max_turns: 0,
            model: model.to_string(),
            provider: "anthropic".to_string(),
        }
    }

    fn usage(input: u64, output: u64) -> Event {
        let turn = TokenUsage {
            input,
            output,
            ..TokenUsage::default()
        };
        Event::Usage {
            turn,
            cumulative: turn,
            cost_micros: None,
        }
    }

    #[test]
    fn replies_count_for_the_model_of_their_run() {
        let mut tracker = UsageTracker::default();
        for event in [
            started(1, "claude-sonnet-4-5"),
            usage(100, 10),
            usage(200, 20),
            started(2, "claude-haiku-4-5"),
            usage(50, 5),
        ] {
            tracker.apply(&event);
        }
        let report = tracker.report(&Default::default());
        assert_eq!(report.last_run, Some(RunId(2)));
        assert_eq!(report.run.models.len(), 1);
        assert_eq!(report.run.models[0].model, "claude-haiku-4-5");
        assert_eq!(report.run.models[0].usage.input, 50);
        let session: Vec<(&str, u64)> = report
            .session
            .models
            .iter()
            .map(|m| (m.model.as_str(), m.usage.input))
            .collect();
        assert_eq!(
            session,
            [("claude-sonnet-4-5", 300), ("claude-haiku-4-5", 50)]
        );
        // $3 per million input tokens and $15 per million output tokens.
        assert_eq!(
            report.session.models[0].cost_micros,
            Some(300 * 3 + 30 * 15)
        );
    }
}
