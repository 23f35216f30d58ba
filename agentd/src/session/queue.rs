//! The steer and follow-up queues of a session (docs/architecture.md#the-agent-loop): steer
//! messages enter the running run at its next turn boundary; follow-ups only when it would
//! otherwise complete, one at a time.

use std::collections::VecDeque;

use protocol::{Delivery, QueuedMessage};

/// Both queues.
#[derive(Debug, Default)]
pub(crate) struct Queues {
    steer: VecDeque<String>,
    follow_up: VecDeque<String>,
}

impl Queues {
    /// Adds a message to the queue its delivery names.
    pub(crate) fn push(&mut self, text: String, delivery: Delivery) {
        match delivery {
            Delivery::Steer => self.steer.push_back(text),
            Delivery::FollowUp => self.follow_up.push_back(text),
        }
    }

    /// Takes every steer message, in order.
    pub(crate) fn take_steer(&mut self) -> Vec<String> {
        self.steer.drain(..).collect()
    }

    /// Takes the next follow-up.
    pub(crate) fn take_follow_up(&mut self) -> Option<String> {
        self.follow_up.pop_front()
    }

    /// Takes the message that should start the next run: steering first, then follow-ups.
    pub(crate) fn take_next(&mut self) -> Option<(String, Delivery)> {
        self.steer
            .pop_front()
            .map(|t| (t, Delivery::Steer))
            .or_else(|| self.follow_up.pop_front().map(|t| (t, Delivery::FollowUp)))
    }

    /// Empties both queues, steering first, for returning to the user.
    pub(crate) fn drain(&mut self) -> Vec<QueuedMessage> {
        let steer = self.steer.drain(..).map(|text| QueuedMessage {
            text,
            delivery: Delivery::Steer,
        });
        let follow = self.follow_up.drain(..).map(|text| QueuedMessage {
            text,
            delivery: Delivery::FollowUp,
        });
        steer.chain(follow).collect()
    }

    /// Whether both are empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.steer.is_empty() && self.follow_up.is_empty()
    }

    /// The messages waiting to steer.
    pub(crate) fn steer(&self) -> Vec<String> {
        self.steer.iter().cloned().collect()
    }

    /// The messages waiting to follow.
    pub(crate) fn follow_up(&self) -> Vec<String> {
        self.follow_up.iter().cloned().collect()
    }

    /// How many wait in each queue.
    pub(crate) fn lens(&self) -> (u32, u32) {
        (self.steer.len() as u32, self.follow_up.len() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steering_comes_before_follow_ups() {
        let mut queues = Queues::default();
        queues.push("f1".into(), Delivery::FollowUp);
        queues.push("s1".into(), Delivery::Steer);
        queues.push("f2".into(), Delivery::FollowUp);
        assert_eq!(queues.take_next(), Some(("s1".into(), Delivery::Steer)));
        let rest: Vec<String> = queues.drain().into_iter().map(|m| m.text).collect();
        assert_eq!(rest, vec!["f1", "f2"]);
        assert!(queues.is_empty());
    }
}
