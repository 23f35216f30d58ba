//! The pool as `agentctl lsp list` and `daemon status` show it.

use protocol::{LspServerInfo, SessionId};

use super::LspHub;

impl LspHub {
    /// Every instance of the pool, by root and name.
    pub fn list(&self) -> Vec<LspServerInfo> {
        let mut all: Vec<LspServerInfo> = self.instances().values().map(|i| i.info()).collect();
        all.sort_by(|a, b| (&a.root, &a.name).cmp(&(&b.root, &b.name)));
        all
    }

    /// Forgets `session` in every instance's list of sessions (its actor stopped).
    pub(crate) fn end_session(&self, session: &SessionId) {
        for instance in self.instances().values() {
            instance.not_used_by(session);
        }
    }

    /// How many servers run now (ready to answer).
    pub fn running(&self) -> u32 {
        let ready = self
            .instances()
            .values()
            .filter(|i| i.info().state == "ready")
            .count();
        u32::try_from(ready).unwrap_or(u32::MAX)
    }
}
