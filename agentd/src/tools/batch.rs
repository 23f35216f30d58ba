//! Splitting one reply's tool calls into batches: consecutive concurrency-safe calls run
//! together, every other call runs alone, and the order of calls is kept
//! (docs/architecture.md#tools).

use super::Tool;

/// A run of calls executed together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Batch {
    /// Whether the calls may run in parallel.
    pub(crate) parallel: bool,
    /// Indexes into the reply's calls, in order.
    pub(crate) calls: Vec<usize>,
}

/// Partitions calls, given by tool name, into batches; `safe` says which tools may run in
/// parallel (unknown tools must not, so they run and fail alone).
pub(crate) fn partition<'a>(
    names: impl IntoIterator<Item = &'a str>,
    safe: impl Fn(&str) -> bool,
) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    for (index, name) in names.into_iter().enumerate() {
        let safe = safe(name);
        match batches.last_mut() {
            Some(last) if safe && last.parallel => last.calls.push(index),
            _ => batches.push(Batch {
                parallel: safe,
                calls: vec![index],
            }),
        }
    }
    batches
}

/// Whether `name` is a built-in tool that may run in parallel.
pub(crate) fn builtin_safe(name: &str) -> bool {
    Tool::from_name(name).is_some_and(Tool::concurrency_safe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_calls_group_and_unsafe_calls_stand_alone() {
        let batches = partition(["read", "read", "edit", "read", "read"], builtin_safe);
        assert_eq!(
            batches,
            vec![
                Batch {
                    parallel: true,
                    calls: vec![0, 1]
                },
                Batch {
                    parallel: false,
                    calls: vec![2]
                },
                Batch {
                    parallel: true,
                    calls: vec![3, 4]
                },
            ]
        );
    }

    #[test]
    fn unknown_tools_and_commands_run_alone() {
        let batches = partition(["bash", "bash", "nope", "grep", "glob"], builtin_safe);
        let shape: Vec<(bool, usize)> = batches
            .iter()
            .map(|b| (b.parallel, b.calls.len()))
            .collect();
        assert_eq!(shape, vec![(false, 1), (false, 1), (false, 1), (true, 2)]);
    }
}
