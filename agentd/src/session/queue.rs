//! The steer and follow-up queues of a session (docs/architecture.md#the-agent-loop): steer
//! messages enter the running run at its next turn boundary; follow-ups only when it would
//! otherwise complete, one at a time.

use std::collections::VecDeque;

use protocol::{Delivery, Event, ImageRef, QueuedMessage};

/// A user message as it waits or enters the history: its text and its images.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Prompt {
    /// The text.
    pub(crate) text: String,
    /// The images it carries, stored already.
    pub(crate) images: Vec<ImageRef>,
}

impl Prompt {
    /// A message of text only.
    pub(crate) fn text(text: impl Into<String>) -> Prompt {
        Prompt {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// Both queues.
#[derive(Debug, Default)]
pub(crate) struct Queues {
    steer: VecDeque<Prompt>,
    follow_up: VecDeque<Prompt>,
}

impl Queues {
    /// Adds a message to the queue its delivery names.
    pub(crate) fn push(&mut self, prompt: Prompt, delivery: Delivery) {
        match delivery {
            Delivery::Steer => self.steer.push_back(prompt),
            Delivery::FollowUp => self.follow_up.push_back(prompt),
        }
    }

    /// Takes every steer message, in order.
    pub(crate) fn take_steer(&mut self) -> Vec<Prompt> {
        self.steer.drain(..).collect()
    }

    /// Takes the next follow-up.
    pub(crate) fn take_follow_up(&mut self) -> Option<Prompt> {
        self.follow_up.pop_front()
    }

    /// Takes the message that should start the next run: steering first, then follow-ups.
    pub(crate) fn take_next(&mut self) -> Option<(Prompt, Delivery)> {
        self.steer
            .pop_front()
            .map(|t| (t, Delivery::Steer))
            .or_else(|| self.follow_up.pop_front().map(|t| (t, Delivery::FollowUp)))
    }

    /// Empties both queues, steering first, for returning to the user.
    pub(crate) fn drain(&mut self) -> Vec<QueuedMessage> {
        let steer = self.steer.drain(..).map(|p| (p, Delivery::Steer));
        let follow = self.follow_up.drain(..).map(|p| (p, Delivery::FollowUp));
        steer
            .chain(follow)
            .map(|(prompt, delivery)| QueuedMessage {
                text: prompt.text,
                delivery,
                images: prompt.images,
            })
            .collect()
    }

    /// Whether both are empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.steer.is_empty() && self.follow_up.is_empty()
    }

    /// The event that tells the clients what waits: texts, and the images of each message
    /// (empty lists left out at the end).
    pub(crate) fn event(&self) -> Event {
        let texts = |queue: &VecDeque<Prompt>| queue.iter().map(|p| p.text.clone()).collect();
        let images = |queue: &VecDeque<Prompt>| {
            let mut lists: Vec<Vec<ImageRef>> = queue.iter().map(|p| p.images.clone()).collect();
            while lists.last().is_some_and(Vec::is_empty) {
                lists.pop();
            }
            lists
        };
        Event::QueueChanged {
            steer: texts(&self.steer),
            follow_up: texts(&self.follow_up),
            steer_images: images(&self.steer),
            follow_up_images: images(&self.follow_up),
        }
    }

    /// The queues as a `QueueChanged` event told them; `None` for any other event.
    pub(crate) fn from_event(event: &Event) -> Option<Queues> {
        let Event::QueueChanged {
            steer,
            follow_up,
            steer_images,
            follow_up_images,
        } = event
        else {
            return None;
        };
        let prompts = |texts: &[String], images: &[Vec<ImageRef>]| {
            let images = images.iter().cloned().chain(std::iter::repeat(Vec::new()));
            texts
                .iter()
                .zip(images)
                .map(|(text, images)| Prompt {
                    text: text.clone(),
                    images,
                })
                .collect()
        };
        Some(Queues {
            steer: prompts(steer, steer_images),
            follow_up: prompts(follow_up, follow_up_images),
        })
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
    fn the_queues_come_back_whole_from_their_event() {
        let image = ImageRef {
            hash: "a".repeat(64),
            media_type: "image/png".into(),
            size: 3,
            width: 1,
            height: 1,
            name: "shot.png".into(),
        };
        let mut queues = Queues::default();
        queues.push(Prompt::text("s1"), Delivery::Steer);
        queues.push(
            Prompt {
                text: "f1".into(),
                images: vec![image.clone()],
            },
            Delivery::FollowUp,
        );
        queues.push(Prompt::text("f2"), Delivery::FollowUp);
        let event = queues.event();
        let Event::QueueChanged {
            steer_images,
            follow_up_images,
            ..
        } = &event
        else {
            panic!("not a queue event")
        };
        assert!(steer_images.is_empty());
        assert_eq!(follow_up_images, &vec![vec![image.clone()]]);
        let mut back = Queues::from_event(&event).unwrap();
        assert_eq!(back.take_steer(), vec![Prompt::text("s1")]);
        let first = back.take_follow_up().unwrap();
        assert_eq!(first.images, vec![image]);
        assert_eq!(back.take_follow_up(), Some(Prompt::text("f2")));
    }

    #[test]
    fn steering_comes_before_follow_ups() {
        let mut queues = Queues::default();
        queues.push(Prompt::text("f1"), Delivery::FollowUp);
        queues.push(Prompt::text("s1"), Delivery::Steer);
        queues.push(Prompt::text("f2"), Delivery::FollowUp);
        assert_eq!(
            queues.take_next(),
            Some((Prompt::text("s1"), Delivery::Steer))
        );
        let rest: Vec<String> = queues.drain().into_iter().map(|m| m.text).collect();
        assert_eq!(rest, vec!["f1", "f2"]);
        assert!(queues.is_empty());
    }
}
