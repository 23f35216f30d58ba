//! What a session's model calls used, per model, for its last run and the whole session: the
//! request, the lines chat's `/cost` can print, and `agentctl cost`.

use agentctl::client::Client;
use agentctl::client::paths::Paths;
use protocol::{Reply, Request, SessionId, TokenUsage, UsageReport, UsageTotals};

use super::{request, unexpected};
use crate::{Failure, connect, format};

/// The tokens and cost of `session`, per model.
pub async fn usage(client: &Client, session: &SessionId) -> Result<UsageReport, Failure> {
    let ask = Request::Usage {
        session: session.clone(),
    };
    match request(client, ask).await? {
        Reply::Usage(report) => Ok(report),
        other => Err(unexpected(other)),
    }
}

/// `agentctl cost`: the session's tokens and cost per model, as lines or JSON.
pub async fn cost(paths: &Paths, id: String, json: bool) -> Result<u8, Failure> {
    let client = connect::connect(paths, "cost").await?;
    let report = usage(&client, &SessionId(id)).await?;
    if json {
        outln!("{}", report_json(&report));
    } else {
        for line in lines(&report) {
            outln!("{line}");
        }
    }
    Ok(0)
}

/// The report with stable field names.
fn report_json(report: &UsageReport) -> serde_json::Value {
    let totals = |totals: &UsageTotals| {
        let models: Vec<serde_json::Value> = totals
            .models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "model": m.model,
                    "provider": m.provider,
                    "usage": crate::json::Tokens(&m.usage),
                    "cost_micros": m.cost_micros,
                })
            })
            .collect();
        serde_json::json!({
            "models": models,
            "subagents": crate::json::Tokens(&totals.subagents),
            "usage": crate::json::Tokens(&totals.tokens()),
            "cost_micros": totals.cost_micros(),
        })
    };
    serde_json::json!({
        "last_run": report.last_run.map(|r| r.0),
        "run": totals(&report.run),
        "session": totals(&report.session),
    })
}

/// The report as lines: a heading for the last run and one for the session, each followed by a
/// line per model (and one for subagents, when they used any).
pub fn lines(report: &UsageReport) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(run) = report.last_run {
        lines.push(format!("last run ({run}):{}", total(&report.run)));
        lines.extend(model_lines(&report.run));
    }
    lines.push(format!("session:{}", total(&report.session)));
    lines.extend(model_lines(&report.session));
    lines
}

/// " 12,345 in · 678 out · $0.0400" of every model together.
fn total(totals: &UsageTotals) -> String {
    if totals.models.is_empty() {
        return " nothing used".to_string();
    }
    format!(" {}", tokens(&totals.tokens(), totals.cost_micros()))
}

fn model_lines(totals: &UsageTotals) -> Vec<String> {
    let mut lines: Vec<String> = totals
        .models
        .iter()
        .map(|m| {
            let name = match m.model.as_str() {
                "" => "(the server's model)".to_string(),
                model => crate::style::one_line(model).into_owned(),
            };
            format!("  {name}: {}", tokens(&m.usage, m.cost_micros))
        })
        .collect();
    if totals.subagents != TokenUsage::default() {
        lines.push(format!("  subagents: {}", tokens(&totals.subagents, None)));
    }
    lines
}

/// "12,345 in (1,000 cache read, 200 cache write) · 678 out · $0.0400".
fn tokens(usage: &TokenUsage, cost_micros: Option<u64>) -> String {
    let mut text = format::usage_line(usage);
    if let Some(cost) = cost_micros {
        text.push_str(&format!(" · {}", format::dollars(cost)));
    }
    text
}

#[cfg(test)]
mod tests {
    use protocol::{ModelUsage, RunId, TokenUsage, UsageReport, UsageTotals};

    use super::lines;

    #[test]
    fn each_model_gets_a_line_under_its_run_and_the_session() {
        let sonnet = ModelUsage {
            model: "claude-sonnet-4-5".into(),
            provider: "anthropic".into(),
            usage: TokenUsage {
                input: 1000,
                output: 200,
                cache_read: 0,
                cache_write: 0,
            },
            cost_micros: Some(6000),
        };
        let totals = UsageTotals {
            models: vec![sonnet],
            subagents: TokenUsage::default(),
        };
        let report = UsageReport {
            last_run: Some(RunId(2)),
            run: totals.clone(),
            session: totals,
        };
        let lines = lines(&report);
        assert_eq!(lines[0], "last run (2): 1,000 in · 200 out · $0.0060");
        assert_eq!(
            lines[1],
            "  claude-sonnet-4-5: 1,000 in · 200 out · $0.0060"
        );
        assert_eq!(lines[2], "session: 1,000 in · 200 out · $0.0060");
    }
}
