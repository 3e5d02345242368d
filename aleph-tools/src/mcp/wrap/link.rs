//! The live side of a connection: the current link to the server, the client handler that
//! hears its notifications, and where each call's progress goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::sync::{self, lock};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, Peer, RoleClient};
use tokio_util::sync::CancellationToken;

use super::connection::Inner;
use crate::Progress;

/// What the wrapped tools share: the current link to the server and the calls waiting for
/// progress.
pub(super) struct Remote {
    pub(super) label: String,
    pub(super) link: RwLock<Option<Arc<Link>>>,
    /// Progress token → where the call's progress goes.
    pub(super) calls: Arc<Mutex<HashMap<String, Progress>>>,
}

impl Remote {
    pub(super) fn current(&self) -> Option<Arc<Link>> {
        sync::read(&self.link).clone()
    }

    pub(super) fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Progress>> {
        lock(&self.calls)
    }
}

/// One connection to the server (a new one after each reconnect).
pub(super) struct Link {
    pub(super) peer: Peer<RoleClient>,
    /// Cancel to close the connection.
    pub(super) stop: CancellationToken,
    /// Cancelled once the connection has ended, for whatever reason.
    pub(super) ended: CancellationToken,
    pub(super) why_ended: OnceLock<String>,
    pub(super) pid: Option<u32>,
}

impl Link {
    pub(super) fn why_ended(&self) -> String {
        self.why_ended
            .get()
            .cloned()
            .unwrap_or_else(|| "the connection ended".into())
    }
}

/// The client side of the connection: follows `list_changed`, routes progress.
pub(super) struct Client {
    pub(super) connection: Weak<Inner>,
    pub(super) remote: Weak<Remote>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("aleph-tools", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(connection) = self.connection.upgrade() {
            connection.refresh_after_change();
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(remote) = self.remote.upgrade() else {
            return;
        };
        let key = token_key(&params.progress_token);
        let progress = remote.calls().get(&key).cloned();
        if let Some(progress) = progress {
            progress.report(params.progress, params.total, params.message.as_deref());
        }
    }
}

pub(super) fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}
