//! The signals that end a session the way Ctrl-C does.
//!
//! Ctrl-C (SIGINT) at a terminal, and SIGTERM, which is what `kill`, `timeout`, a CI runner's
//! time limit and a container's stop send. Unhandled, SIGTERM ended the process at once: the
//! hops in flight were never logged as ended, the session never ended in its log, and the events
//! buffered since the last model turn were lost (an `eval` of a 1.5B researcher stopped with
//! `kill` kept no record of its analyzer's last calls).

/// Completes when the process is asked to stop: SIGINT or, on Unix, SIGTERM. Poll it before
/// the work it guards (`tokio::select!` with `biased;`), so the handlers are installed first.
pub async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        // A handler that cannot be installed leaves that signal's default behaviour; Ctrl-C is
        // still heard.
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
