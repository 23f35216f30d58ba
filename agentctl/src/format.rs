//! Small formatting helpers for the human view.

use protocol::TokenUsage;

/// "1 turn", "3 turns".
pub fn count(n: impl Into<u64>, word: &str) -> String {
    match n.into() {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// "5s ago", "3m ago", "2h ago", "4d ago" for a time `then_ms` before `now_ms`.
pub fn ago(then_ms: u64, now_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// "512 B", "3.4 KiB", "12.0 MiB", "1.2 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// "42s", "3m 12s", "5h 02m", "2d 03h" for a duration in milliseconds.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A table: columns padded to their widest cell, the last one left as it is.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    // Cells come from the daemon, which may be another machine's: shown, never obeyed.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| crate::style::one_line(c).into_owned())
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths.get(i).copied().unwrap_or(0);
                line.push_str(&format!("{cell:<pad$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// "1,234".
pub fn thousands(n: u64) -> String {
    protocol::text::thousands(n)
}

/// Millionths of a dollar as dollars: `$0.0123`, `$1.25`.
pub fn dollars(micros: u64) -> String {
    let dollars = micros as f64 / 1e6;
    if dollars < 1.0 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
}

/// A usage line: "1,234 in (900 cache read, 0 cache write) · 56 out".
pub fn usage_line(usage: &TokenUsage) -> String {
    let mut line = format!("{} in", thousands(usage.total_input()));
    if usage.cache_read > 0 || usage.cache_write > 0 {
        line.push_str(&format!(
            " ({} cache read, {} cache write)",
            thousands(usage.cache_read),
            thousands(usage.cache_write)
        ));
    }
    line.push_str(&format!(" · {} out", thousands(usage.output)));
    line
}

/// A run's cost with its subagents' (`children`, in micro-dollars) added; `None` when neither
/// is known.
pub fn with_children_cost(cost: Option<u64>, children: u64) -> Option<u64> {
    match (cost, children) {
        (cost, 0) => cost,
        (cost, children) => Some(cost.unwrap_or(0) + children),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_a_thing_is_singular() {
        assert_eq!(count(1u32, "turn"), "1 turn");
        assert_eq!(count(0u32, "turn"), "0 turns");
        assert_eq!(count(3u64, "turn"), "3 turns");
    }

    #[test]
    fn ages_and_sizes_read_naturally() {
        assert_eq!(ago(0, 59_000), "59s ago");
        assert_eq!(ago(0, 61_000), "1m ago");
        assert_eq!(ago(0, 7_200_000), "2h ago");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(duration(192_000), "3m 12s");
    }

    #[test]
    fn tables_pad_all_but_the_last_column() {
        let rows = vec![vec![
            "a".to_string(),
            "long cell".to_string(),
            "x".to_string(),
        ]];
        assert_eq!(
            super::table(&["NAME", "B", "LAST"], &rows),
            "NAME  B          LAST\na     long cell  x\n"
        );
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
