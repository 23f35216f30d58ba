//! Our side of an MCP connection: who we say we are in `initialize`, and what we do with the
//! server's notifications (a changed tool list marks the cached one stale).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};

/// The handler rmcp calls for what the server sends us.
#[derive(Clone, Default)]
pub(crate) struct Handler {
    /// Set when the server says its tools changed; the next listing fetches them again.
    pub(crate) stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The newest version with an `initialize` handshake: servers of 2025-06-18 and later
        // answer it with the version they speak.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
    }
}
