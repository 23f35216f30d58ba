//! `todo`: the model's plan for a task of several steps, replaced whole at each call
//! (docs/architecture.md#the-plan). The loop runs the call itself and the session keeps the
//! plan as a `PlanUpdated` event; this module checks a plan the model sent and says it back.

use protocol::{PlanItem, PlanStatus};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolContext, ToolOutput};
use crate::tool_spec::ToolSpec;

/// The most steps a plan holds.
pub(crate) const MAX_ITEMS: usize = 50;
/// The most characters of one step.
pub(crate) const MAX_TEXT_CHARS: usize = 500;

/// The model's description of `todo`.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "todo".into(),
        description: "Keep your plan for a task of three steps or more, which the user sees \
as it changes. Each call replaces the whole plan: send every step with its status, pending, \
in_progress or done, with exactly one step in_progress while you work. Update it as each step \
finishes; an empty list clears it."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "description": format!("The whole plan, in order (at most {MAX_ITEMS} steps)."),
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {
                                "type": "string",
                                "description": format!("The step, in a short sentence (at most {MAX_TEXT_CHARS} characters).")
                            },
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "done"]
                            }
                        },
                        "required": ["text", "status"]
                    }
                }
            },
            "required": ["items"]
        }),
    }
}

/// The arguments of `todo`.
#[derive(Debug, Deserialize)]
pub(crate) struct Args {
    /// The whole plan, in order.
    items: Vec<Step>,
}

/// One step as the model sent it; its status is checked by [`checked`], so that an unknown
/// one is refused with the names it may take.
#[derive(Debug, Deserialize)]
struct Step {
    /// What the step is (`content`, as other agents' plan tools call it, is taken too).
    #[serde(alias = "content")]
    text: String,
    /// Its status by name.
    status: String,
}

/// Runs the call outside a session: the plan is checked and said back, not kept (a session's
/// loop runs `todo` itself, with [`plan_of`], and keeps the plan).
pub(crate) async fn run(args: Args, _ctx: ToolContext) -> ToolOutput {
    match checked(args) {
        Ok(items) => ToolOutput::ok(said_back(&items)),
        Err(refused) => refused,
    }
}

/// The plan a `todo` call's `args` set, or the refusal the model gets.
pub(crate) fn plan_of(args: Value) -> Result<Vec<PlanItem>, ToolOutput> {
    let args: Args = serde_json::from_value(args).map_err(|err| {
        ToolOutput::error(format!(
            "invalid arguments for todo: {err}; send {{\"items\": [{{\"text\": \"...\", \"status\": \"pending\"}}, ...]}}"
        ))
    })?;
    checked(args)
}

/// The plan of `args`, checked: at most [`MAX_ITEMS`] steps, each with text of at most
/// [`MAX_TEXT_CHARS`] characters (on one line) and a known status, at most one in progress.
fn checked(args: Args) -> Result<Vec<PlanItem>, ToolOutput> {
    if args.items.len() > MAX_ITEMS {
        return Err(ToolOutput::error(format!(
            "the plan has {} steps; a plan holds at most {MAX_ITEMS}: merge small steps into larger ones",
            args.items.len()
        )));
    }
    let mut items = Vec::with_capacity(args.items.len());
    for (n, step) in args.items.into_iter().enumerate() {
        let n = n + 1;
        let text = step.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err(ToolOutput::error(format!(
                "step {n} has no text; say what the step is"
            )));
        }
        let chars = text.chars().count();
        if chars > MAX_TEXT_CHARS {
            return Err(ToolOutput::error(format!(
                "step {n} is {chars} characters long; keep each step under {MAX_TEXT_CHARS} characters"
            )));
        }
        let status = status_of(&step.status).ok_or_else(|| {
            ToolOutput::error(format!(
                "step {n} has the unknown status `{}`; the status is one of pending, in_progress, done",
                step.status.chars().take(40).collect::<String>()
            ))
        })?;
        items.push(PlanItem { text, status });
    }
    let going: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.status == PlanStatus::InProgress)
        .map(|(i, _)| i + 1)
        .collect();
    if let [first, second, ..] = going[..] {
        return Err(ToolOutput::error(format!(
            "steps {first} and {second} are both in_progress; keep one step in_progress at a time and mark the others pending or done"
        )));
    }
    Ok(items)
}

/// The status a name stands for: the three of the schema, and `completed`, which other
/// agents' plan tools use for `done`.
fn status_of(name: &str) -> Option<PlanStatus> {
    match name.trim() {
        "completed" => Some(PlanStatus::Done),
        name => name.parse().ok(),
    }
}

/// What the model is told of the plan it set: the plan as it stands and the next step.
pub(crate) fn said_back(items: &[PlanItem]) -> String {
    let Some(count) = protocol::PlanCount::of(items) else {
        return "The plan is cleared.".to_string();
    };
    let mut text = format!("Plan updated ({}/{} done):\n", count.done, count.total);
    text.push_str(&lines(items));
    text.push('\n');
    match next_step(items) {
        Some(item) if item.status == PlanStatus::InProgress => {
            text.push_str(&format!("Now: {}", item.text));
        }
        Some(item) => text.push_str(&format!(
            "Next: {} (mark it in_progress when you start it)",
            item.text
        )),
        None => text.push_str("Every step is done."),
    }
    text
}

/// The plan one step a line: `[x]` done, `[>]` in progress, `[ ]` pending.
pub(crate) fn lines(items: &[PlanItem]) -> String {
    items
        .iter()
        .map(|item| {
            let mark = match item.status {
                PlanStatus::Done => "[x]",
                PlanStatus::InProgress => "[>]",
                PlanStatus::Pending => "[ ]",
            };
            format!("{mark} {}", item.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The step in progress, or else the first one pending.
fn next_step(items: &[PlanItem]) -> Option<&PlanItem> {
    items
        .iter()
        .find(|i| i.status == PlanStatus::InProgress)
        .or_else(|| items.iter().find(|i| i.status == PlanStatus::Pending))
}

/// What a compacted history says of the plan, so that the model still knows it: `summary`
/// with the plan as it stands after it (nothing added without a plan).
pub(crate) fn with_plan(summary: String, items: &[PlanItem]) -> String {
    if items.is_empty() {
        return summary;
    }
    format!(
        "{summary}\n\nYour plan as it stands (the todo tool; send it whole again to change it):\n{}",
        lines(items)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(items: Value) -> Result<Vec<PlanItem>, String> {
        plan_of(json!({ "items": items })).map_err(|refused| {
            assert!(refused.is_error);
            refused.output
        })
    }

    #[test]
    fn a_plan_is_said_back_with_its_next_step() {
        let items = plan(json!([
            {"text": "read the code", "status": "done"},
            {"text": "  fix\nthe bug ", "status": "in_progress"},
            {"content": "run the tests", "status": "pending"},
        ]))
        .unwrap();
        assert_eq!(items[1].text, "fix the bug");
        assert_eq!(
            said_back(&items),
            "Plan updated (1/3 done):\n[x] read the code\n[>] fix the bug\n[ ] run the tests\nNow: fix the bug"
        );
        let waiting =
            plan(json!([{"text": "a", "status": "completed"}, {"text": "b", "status": "pending"}]))
                .unwrap();
        assert_eq!(waiting[0].status, PlanStatus::Done);
        assert!(said_back(&waiting).ends_with("Next: b (mark it in_progress when you start it)"));
        assert_eq!(said_back(&plan(json!([])).unwrap()), "The plan is cleared.");
    }

    #[test]
    fn a_plan_that_breaks_a_rule_is_refused_with_what_to_do() {
        let two = plan(json!([
            {"text": "a", "status": "in_progress"},
            {"text": "b", "status": "pending"},
            {"text": "c", "status": "in_progress"},
        ]))
        .unwrap_err();
        assert!(two.contains("steps 1 and 3 are both in_progress"), "{two}");
        let status = plan(json!([{"text": "a", "status": "blocked"}])).unwrap_err();
        assert!(
            status.contains("unknown status `blocked`")
                && status.contains("pending, in_progress, done"),
            "{status}"
        );
        let empty = plan(json!([{"text": " \n", "status": "pending"}])).unwrap_err();
        assert!(empty.contains("step 1 has no text"), "{empty}");
        let long = plan(json!([{"text": "é".repeat(MAX_TEXT_CHARS + 1), "status": "pending"}]))
            .unwrap_err();
        assert!(long.contains("501 characters"), "{long}");
        let many: Vec<Value> = (0..=MAX_ITEMS)
            .map(|i| json!({"text": format!("step {i}"), "status": "pending"}))
            .collect();
        assert!(plan(json!(many)).unwrap_err().contains("at most 50"));
        let missing = plan_of(json!({"steps": []})).unwrap_err().output;
        assert!(missing.contains("missing field `items`"), "{missing}");
    }

    #[test]
    fn a_compacted_history_keeps_the_plan() {
        let items = vec![PlanItem {
            text: "fix it".into(),
            status: PlanStatus::InProgress,
        }];
        assert_eq!(with_plan("sum".into(), &[]), "sum");
        let text = with_plan("sum".into(), &items);
        assert!(text.starts_with("sum\n\nYour plan"), "{text}");
        assert!(text.ends_with("[>] fix it"), "{text}");
    }
}
