//! Things a model wants the session log to show that are neither an answer nor an error, such
//! as "this server drops tools; switching to textual task() calls".
//!
//! Providers see requests and responses only, never the event log; the runtime sets an
//! observer for the duration of one call (a task-local, like the attempt observer of
//! [`super::retry`]) and turns each notice into an event of the hop that made the call.

use std::sync::Arc;

/// One notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// From now on this model gets the textual `task(...)` protocol instead of native tools.
    ToolsFallback {
        provider: String,
        model: String,
        reason: String,
    },
}

/// Receives the notices of one call.
pub type NoticeObserver = Arc<dyn Fn(&Notice) + Send + Sync>;

tokio::task_local! {
    static NOTICES: NoticeObserver;
}

/// Runs `call` with `observer` receiving the notices it sends.
pub async fn observe<F: std::future::Future>(observer: NoticeObserver, call: F) -> F::Output {
    NOTICES.scope(observer, call).await
}

/// Sends `notice` to the current call's observer; dropped when no one listens (tests, benches).
pub fn send(notice: Notice) {
    let _ = NOTICES.try_with(|observer| observer(&notice));
}
