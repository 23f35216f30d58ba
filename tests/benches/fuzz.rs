//! The long fuzz run: millions of inputs per target (frames, both providers' streams and
//! reply assembly), counting inputs per second and panics. `AGENTD_FUZZ_INPUTS` sets the
//! inputs per target (default 4,000,000, so 12 million in all); a panic prints the seed that
//! makes it again (`AGENTD_FUZZ_SEED`).
//!
//! Run with `cargo bench -p tests --bench fuzz`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use arbitrary::Unstructured;
use tests::fuzz::TARGETS;

/// A small, fast generator of raw bytes.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn fill(&mut self, buf: &mut Vec<u8>) {
        let len = (self.next() % 4096) as usize;
        buf.clear();
        while buf.len() < len {
            buf.extend_from_slice(&self.next().to_le_bytes());
        }
        buf.truncate(len);
    }
}

fn main() {
    let per_target: u64 = std::env::var("AGENTD_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000_000);
    let seed: u64 = std::env::var("AGENTD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_F00D_CAFE_F00D);
    // Panics are counted, not printed one by one.
    std::panic::set_hook(Box::new(|_| {}));
    let mut total = 0u64;
    let mut panics_total = 0u64;
    for target in &TARGETS {
        let mut rng = XorShift(seed);
        let mut raw = Vec::new();
        let mut panics = 0u64;
        let mut first_panic = None;
        let start = Instant::now();
        for i in 0..per_target {
            rng.fill(&mut raw);
            let mut u = Unstructured::new(&raw);
            let Ok(input) = (target.input)(&mut u) else {
                continue;
            };
            if catch_unwind(AssertUnwindSafe(|| (target.run)(&input))).is_err() {
                panics += 1;
                first_panic.get_or_insert(i);
            }
        }
        let elapsed = start.elapsed();
        println!(
            "{:<28} {per_target} inputs in {elapsed:.1?} ({:.0} inputs/s), {panics} panics{}",
            target.name,
            per_target as f64 / elapsed.as_secs_f64(),
            first_panic.map_or_else(String::new, |i| format!(" (first at input {i})")),
        );
        total += per_target;
        panics_total += panics;
    }
    println!("total: {total} inputs, {panics_total} panics");
    if panics_total > 0 {
        std::process::exit(1);
    }
}
