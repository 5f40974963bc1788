//! The local model's answer as it is decoded, piece by piece, to whoever listens.
//!
//! HTTP providers stream over SSE from a server; the local engine produces the tokens itself,
//! so it hands their text to an observer set for the duration of one call (a task-local, like
//! [`crate::model::notice`]). Pieces are whole UTF-8 characters, and never the start of a stop
//! text that is later cut; joined, they are the answer's text. Nobody listening costs nothing.

use std::sync::Arc;

/// Receives the pieces of one call's answer, in order.
pub type PieceObserver = Arc<dyn Fn(&str) + Send + Sync>;

tokio::task_local! {
    static PIECES: PieceObserver;
}

/// Runs `call` (a local model's `complete` future) with `observer` receiving its pieces.
pub async fn observe<F: std::future::Future>(observer: PieceObserver, call: F) -> F::Output {
    PIECES.scope(observer, call).await
}

/// The observer of the current call, if one is set.
pub fn current() -> Option<PieceObserver> {
    PIECES.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn the_observer_is_seen_only_inside_its_call() {
        assert!(current().is_none());
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = seen.clone();
        let observer: PieceObserver = Arc::new(move |p| sink.lock().unwrap().push_str(p));
        observe(observer, async {
            let o = current().expect("set inside the call");
            o("ab");
            o("c");
        })
        .await;
        assert_eq!(*seen.lock().unwrap(), "abc");
        assert!(current().is_none());
    }
}
