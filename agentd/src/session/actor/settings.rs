//! Settings of a session a client changes: its permission mode, and whether interrupted runs
//! are resumed.

use kameo::prelude::*;
use protocol::{ErrorInfo, Event, Mode};

use super::SessionActor;

/// Change the permission mode.
pub(crate) struct SetMode(pub(crate) Mode);

impl Message<SetMode> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetMode, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.shown.set_mode(msg.0);
        self.emit(Event::ModeChanged { mode: msg.0 });
        self.save_meta();
        Ok(())
    }
}

/// Whether a run the daemon did not live to finish goes on in the next daemon.
pub(crate) struct SetResume(pub(crate) bool);

impl Message<SetResume> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetResume, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.save_meta_with(|meta| meta.resume_interrupted = Some(msg.0));
        Ok(())
    }
}
