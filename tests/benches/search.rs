//! Search figures: the `grep` tool's count search over a large source tree against ripgrep on
//! the same files (`rg -c`, and `rg -c -j1` on one thread), and `glob` over the same tree.
//!
//! Run with `cargo build --release && cargo bench -p tests --bench search`. The tree (about
//! 220 MB in 12,000 files) is generated once under the system's temp directory, or taken from
//! `AGENTD_BENCH_TREE`. ripgrep is used when `rg` is on PATH (`cargo install ripgrep`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentd::tools::{self, Tool, ToolContext};
use serde_json::json;

const FILES: usize = 12_000;
const FILE_BYTES: usize = 18_500;
const PATTERN: &str = "TODO";
const RUNS: usize = 15;

/// A deterministic tree of source-like files, some lines holding the pattern.
fn make_tree(root: &Path) {
    let marker = root.join(".complete");
    if marker.exists() {
        return;
    }
    let words = [
        "fn", "let", "mut", "struct", "impl", "self", "return", "match", "value", "index",
        "buffer", "config", "session", "result", "error", "parse", "render", "event",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..FILES {
        let dir = root.join(format!("m{:03}/s{:02}", i / 100, i % 10));
        std::fs::create_dir_all(&dir).expect("bench dir");
        let mut text = String::with_capacity(FILE_BYTES + 100);
        while text.len() < FILE_BYTES {
            let n = 4 + (next() % 10) as usize;
            text.push_str("    ");
            for _ in 0..n {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            if next() % 50 == 0 {
                text.push_str("// TODO: revisit");
            }
            text.push('\n');
        }
        std::fs::write(dir.join(format!("f{i}.rs")), text).expect("bench file");
    }
    std::fs::write(marker, "").expect("marker");
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time_tool(
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    tool: Tool,
    args: serde_json::Value,
) -> (Duration, String) {
    let mut times = Vec::new();
    let mut last = String::new();
    for _ in 0..RUNS {
        let ctx = ToolContext::standalone(root);
        let start = Instant::now();
        let output = runtime.block_on(tools::execute(tool, args.clone(), ctx));
        times.push(start.elapsed());
        assert!(!output.is_error, "{}", output.output);
        last = output.output;
    }
    (median(times), last)
}

fn time_rg(root: &Path, extra: &[&str]) -> Option<Duration> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let output = Command::new("rg")
            .args(["-c", "--hidden", PATTERN])
            .args(extra)
            .arg(root)
            .output()
            .ok()?;
        times.push(start.elapsed());
        if !output.status.success() {
            return None;
        }
    }
    Some(median(times))
}

fn main() {
    let root = std::env::var_os("AGENTD_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agentd-bench-tree"));
    let start = Instant::now();
    make_tree(&root);
    println!("tree {} ready in {:?}", root.display(), start.elapsed());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Warm the page cache.
    let _ = time_tool(
        &runtime,
        &root,
        Tool::Grep,
        json!({"pattern": PATTERN, "output": "count"}),
    );
    let (grep, output) = time_tool(
        &runtime,
        &root,
        Tool::Grep,
        json!({"pattern": PATTERN, "output": "count"}),
    );
    println!(
        "grep tool, count:  median {grep:?} ({})",
        output.lines().last().unwrap_or_default()
    );
    let (glob, _) = time_tool(&runtime, &root, Tool::Glob, json!({"pattern": "**/*.rs"}));
    println!("glob tool, **/*.rs: median {glob:?}");
    match (time_rg(&root, &[]), time_rg(&root, &["-j1"])) {
        (Some(rg), Some(rg1)) => {
            println!("rg -c:             median {rg:?}");
            println!("rg -c -j1:         median {rg1:?}");
            println!(
                "grep tool / rg:    {:.2}x",
                grep.as_secs_f64() / rg.as_secs_f64()
            );
        }
        _ => println!("rg is not on PATH: install ripgrep (`cargo install ripgrep`) to compare"),
    }
}
