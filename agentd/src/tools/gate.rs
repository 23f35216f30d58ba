//! The moment a tool call's effect becomes real. A call that changes something (a file
//! renamed into place, a command started) first commits; a cancel first claims the call.
//! Whichever comes first wins, once, so a call's result never says "interrupted" for a change
//! that landed, nor reports a change that a cancel stopped.

use std::sync::atomic::{AtomicU8, Ordering};

const OPEN: u8 = 0;
const COMMITTED: u8 = 1;
const CANCELLED: u8 = 2;

/// One call's choice between its effect and a cancel.
#[derive(Debug, Default)]
pub(crate) struct EffectGate(AtomicU8);

impl EffectGate {
    /// A gate neither committed nor cancelled.
    pub(crate) fn new() -> EffectGate {
        EffectGate::default()
    }

    /// Claims the call for its effect: `true` unless a cancel claimed it first.
    pub(crate) fn commit(&self) -> bool {
        match self
            .0
            .compare_exchange(OPEN, COMMITTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == COMMITTED,
        }
    }

    /// Claims the call for a cancel: `true` unless its effect was committed first.
    pub(crate) fn cancel(&self) -> bool {
        match self
            .0
            .compare_exchange(OPEN, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == CANCELLED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_claim_wins_for_good() {
        let gate = EffectGate::new();
        assert!(gate.commit());
        assert!(!gate.cancel());
        assert!(gate.commit());
        let gate = EffectGate::new();
        assert!(gate.cancel());
        assert!(!gate.commit());
        assert!(gate.cancel());
    }
}
