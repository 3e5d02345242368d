//! The ledger as rmcp's session store: what rmcp reads to wake a session it does not serve.

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

use super::Ledger;
use crate::tool::BoxFuture;

/// rmcp's session store, kept in the ledger: rmcp asks it for the `initialize` params of a
/// session it does not serve, and wakes the session with them.
impl SessionStore for Ledger {
    fn load<'a, 'b, 'f>(
        &'a self,
        session_id: &'b str,
    ) -> BoxFuture<'f, Result<Option<SessionState>, SessionStoreError>>
    where
        'a: 'f,
        'b: 'f,
        Self: 'f,
    {
        Box::pin(async move { Ok(self.to_wake(session_id).await.map(SessionState::new)) })
    }

    fn store<'a, 'b, 'c, 'f>(
        &'a self,
        _session_id: &'b str,
        _state: &'c SessionState,
    ) -> BoxFuture<'f, Result<(), SessionStoreError>>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        // The params were kept when the session was initialized.
        Box::pin(std::future::ready(Ok(())))
    }

    fn delete<'a, 'b, 'f>(
        &'a self,
        session_id: &'b str,
    ) -> BoxFuture<'f, Result<(), SessionStoreError>>
    where
        'a: 'f,
        'b: 'f,
        Self: 'f,
    {
        self.forget(session_id);
        Box::pin(std::future::ready(Ok(())))
    }
}
