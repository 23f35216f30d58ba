//! The model's plan as a person sees it (docs/architecture.md#the-plan): a short block, a
//! heading with how far it got (`Plan 2/5`) and the steps around the current one, each with
//! its mark (`✓` done, `▶` in progress, `☐` pending). On a terminal the block lives in the
//! bottom region and changes in place; a plain stream gets it once per change, in one line
//! when only the steps' statuses changed.

use protocol::{PlanCount, PlanItem, PlanStatus};

use crate::screen::wrap::truncate;
use crate::style::{Style, one_line};

/// Steps shown at most; the others are counted.
const SHOWN_STEPS: usize = 5;

/// The plan as the view knows it.
#[derive(Default)]
pub struct Plan {
    /// The steps as the last `PlanUpdated` set them.
    items: Vec<PlanItem>,
    /// Whether the block is drawn in the bottom region (a terminal, steps left to do).
    live: bool,
    /// The steps' texts as a stream last printed them whole.
    printed: Vec<String>,
}

impl Plan {
    /// Takes in a new plan. On a terminal (`screen`) the answer is the lines that go up for
    /// good: the block once every step is done, a note when the plan is cleared; the block
    /// is drawn in the region while steps are left. On a stream it is what to print now.
    pub fn update(&mut self, items: &[PlanItem], screen: bool, style: Style) -> Vec<String> {
        self.items = items.to_vec();
        let finished = PlanCount::of(items).is_some_and(|c| c.done == c.total);
        if items.is_empty() {
            self.live = false;
            self.printed.clear();
            return vec![style.dim("• plan cleared")];
        }
        if screen {
            self.live = !finished;
            return if finished {
                self.block(style, usize::MAX)
            } else {
                Vec::new()
            };
        }
        let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
        if texts == self.printed {
            return vec![self.one_line(style)];
        }
        self.printed = texts;
        self.block(style, usize::MAX)
    }

    /// The rows the bottom region draws for the plan now (none when nothing is left to do).
    pub fn rows(&self, style: Style, width: usize) -> Vec<String> {
        if self.live {
            self.block(style, width)
        } else {
            Vec::new()
        }
    }

    /// The lines that keep the plan on screen once the region is taken away (the view ends
    /// while steps are left); none when the block was not in the region.
    pub fn close(&mut self, style: Style) -> Vec<String> {
        if !std::mem::take(&mut self.live) {
            return Vec::new();
        }
        self.block(style, usize::MAX)
    }

    /// `Plan 2/5` and the steps around the current one, each row at most `width` wide.
    fn block(&self, style: Style, width: usize) -> Vec<String> {
        let Some(count) = PlanCount::of(&self.items) else {
            return Vec::new();
        };
        let mut rows = vec![style.bold(&format!("Plan {}/{}", count.done, count.total))];
        let (from, to) = window(&self.items);
        if from > 0 {
            rows.push(style.dim(&format!("  … {from} above")));
        }
        for item in &self.items[from..to] {
            let text = one_line(&item.text);
            let row = match item.status {
                PlanStatus::Done => format!("  {} {}", style.green("✓"), style.dim(&text)),
                PlanStatus::InProgress => format!("  {} {}", style.cyan("▶"), style.bold(&text)),
                PlanStatus::Pending => format!("  ☐ {text}"),
            };
            rows.push(row);
        }
        let below = self.items.len() - to;
        if below > 0 {
            rows.push(style.dim(&format!("  … {below} more")));
        }
        rows.into_iter().map(|row| truncate(&row, width)).collect()
    }

    /// `Plan 3/5 · ▶ the current step`, for a stream that printed these steps already.
    fn one_line(&self, style: Style) -> String {
        let count = PlanCount::of(&self.items).unwrap_or(PlanCount { done: 0, total: 0 });
        let heading = style.bold(&format!("Plan {}/{}", count.done, count.total));
        let now = match current(&self.items) {
            Some(i) if self.items[i].status == PlanStatus::InProgress => {
                format!("{} {}", style.cyan("▶"), one_line(&self.items[i].text))
            }
            Some(i) => format!("☐ next: {}", one_line(&self.items[i].text)),
            None => style.green("✓ every step done"),
        };
        format!("{heading} · {now}")
    }
}

/// The step in progress, or else the first one pending.
fn current(items: &[PlanItem]) -> Option<usize> {
    items
        .iter()
        .position(|i| i.status == PlanStatus::InProgress)
        .or_else(|| items.iter().position(|i| i.status == PlanStatus::Pending))
}

/// The steps shown, `from..to`: at most [`SHOWN_STEPS`], the current one second (the one
/// before it shows what was just done), the last ones when every step is done.
fn window(items: &[PlanItem]) -> (usize, usize) {
    let len = items.len();
    if len <= SHOWN_STEPS {
        return (0, len);
    }
    let at = current(items).unwrap_or(len - 1);
    let from = at.saturating_sub(1).min(len - SHOWN_STEPS);
    (from, from + SHOWN_STEPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(statuses: &[PlanStatus]) -> Vec<PlanItem> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, status)| PlanItem {
                text: format!("step {}", i + 1),
                status: *status,
            })
            .collect()
    }

    use PlanStatus::{Done, InProgress, Pending};

    #[test]
    fn a_terminal_shows_the_block_in_place_until_every_step_is_done() {
        let mut view = Plan::default();
        let style = Style::plain();
        assert!(
            view.update(&plan(&[Done, InProgress, Pending]), true, style)
                .is_empty()
        );
        assert_eq!(
            view.rows(style, 80),
            ["Plan 1/3", "  ✓ step 1", "  ▶ step 2", "  ☐ step 3"]
        );
        let up = view.update(&plan(&[Done, Done, Done]), true, style);
        assert_eq!(up, ["Plan 3/3", "  ✓ step 1", "  ✓ step 2", "  ✓ step 3"]);
        assert!(view.rows(style, 80).is_empty());
        assert!(view.close(style).is_empty());
    }

    #[test]
    fn a_long_plan_shows_the_steps_around_the_current_one() {
        let mut view = Plan::default();
        let style = Style::plain();
        let mut statuses = vec![Done; 4];
        statuses.push(InProgress);
        statuses.extend([Pending; 5]);
        view.update(&plan(&statuses), true, style);
        assert_eq!(
            view.rows(style, 80),
            [
                "Plan 4/10",
                "  … 3 above",
                "  ✓ step 4",
                "  ▶ step 5",
                "  ☐ step 6",
                "  ☐ step 7",
                "  ☐ step 8",
                "  … 2 more"
            ]
        );
        assert!(
            view.rows(style, 8)
                .iter()
                .all(|r| crate::screen::wrap::width(r) <= 8)
        );
        assert_eq!(view.close(style).len(), 8);
    }

    #[test]
    fn a_stream_prints_the_block_once_then_one_line_per_change() {
        let mut view = Plan::default();
        let style = Style::plain();
        assert_eq!(
            view.update(&plan(&[InProgress, Pending]), false, style)
                .len(),
            3
        );
        assert_eq!(
            view.update(&plan(&[Done, InProgress]), false, style),
            ["Plan 1/2 · ▶ step 2"]
        );
        assert_eq!(
            view.update(&plan(&[Done, Done]), false, style),
            ["Plan 2/2 · ✓ every step done"]
        );
        assert_eq!(view.update(&[], false, style), ["• plan cleared"]);
    }
}
