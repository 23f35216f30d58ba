//! Settings of a session a client changes: whether interrupted runs are resumed.

use kameo::prelude::*;
use protocol::ErrorInfo;

use super::SessionActor;

/// Whether a run the daemon did not live to finish goes on in the next daemon.
pub struct SetResume(pub bool);

impl Message<SetResume> for SessionActor {
    type Reply = Result<(), ErrorInfo>;

    async fn handle(&mut self, msg: SetResume, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.meta.resume_interrupted = Some(msg.0);
        self.save_meta();
        Ok(())
    }
}
