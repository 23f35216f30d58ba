//! Requests about the registry of sessions: create, list, fork, delete, the daemon's status, MCP
//! servers, shutdown.

use protocol::{CreateSession, ErrorCode, ErrorInfo, ListCursor, McpServerSpec, Reply, SessionId};

use super::super::Connection;
use super::ask;
use crate::supervisor::{Create, Delete, Fork, List, Status};

/// The most MCP servers a client may bring for one session.
const MAX_SESSION_MCP_SERVERS: usize = 20;

impl Connection {
    pub(super) async fn create(&self, create: CreateSession) -> Result<Reply, ErrorInfo> {
        let info = ask(&self.shared.supervisor, Create(create, None)).await?;
        Ok(Reply::SessionCreated(self.named(info)))
    }

    pub(super) async fn list(&self, after: Option<ListCursor>) -> Result<Reply, ErrorInfo> {
        let page = ask(&self.shared.supervisor, List { after }).await?;
        Ok(Reply::Sessions {
            sessions: page.sessions.into_iter().map(|s| self.named(s)).collect(),
            next: page.next,
            unreadable: page.unreadable,
        })
    }

    pub(super) async fn fork(&self, id: SessionId, turn: Option<u64>) -> Result<Reply, ErrorInfo> {
        let info = ask(&self.shared.supervisor, Fork { id, turn }).await?;
        Ok(Reply::SessionCreated(self.named(info)))
    }

    pub(super) async fn delete(&self, id: SessionId, force: bool) -> Result<Reply, ErrorInfo> {
        let notes = ask(&self.shared.supervisor, Delete { id, force }).await?;
        Ok(Reply::Deleted { notes })
    }

    pub(super) async fn status(&self) -> Result<Reply, ErrorInfo> {
        let socket = self.shared.socket.clone();
        let mut status = ask(&self.shared.supervisor, Status { socket }).await?;
        status.clients = self.shared.connections.count() as u64;
        Ok(Reply::Status(status))
    }

    pub(super) async fn set_mcp_servers(
        &self,
        session: SessionId,
        servers: Vec<McpServerSpec>,
    ) -> Result<Reply, ErrorInfo> {
        self.session(&session).await?;
        if servers.len() > MAX_SESSION_MCP_SERVERS {
            return Err(ErrorInfo::new(
                ErrorCode::InvalidRequest,
                format!("at most {MAX_SESSION_MCP_SERVERS} MCP servers per session"),
            ));
        }
        let configs = servers
            .iter()
            .map(crate::mcp::config::from_spec)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ErrorInfo::new(ErrorCode::InvalidRequest, e))?;
        self.shared.mcp.set_session_servers(&session, configs).await;
        Ok(Reply::Done)
    }

    pub(super) fn shutdown(&self, now: bool) -> Result<Reply, ErrorInfo> {
        tracing::info!(client = %self.client, now, "shutdown requested");
        let grace = if now {
            std::time::Duration::ZERO
        } else {
            self.shared.config.borrow().config.daemon.stop_grace()
        };
        self.shared.stop.ask(now);
        Ok(Reply::Stopping {
            calls: self.shared.stop.calls() as u64,
            grace_ms: grace.as_millis() as u64,
        })
    }
}
