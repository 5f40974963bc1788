//! The seam between the agent loop and where its steps are kept.
//!
//! The hop loop (`hop.rs`) is the same code for every backend. It asks its [`Journal`] to run
//! each non-deterministic step (the hop's message id and start time, each model turn, each
//! tool call but `task` and `analyze_file`) and to start each child hop. The embedded runtime uses
//! [`Journal::Local`]: a step is just awaited and a child is a tokio task, so nothing is
//! serialized and the local path costs what it did before. A durable backend (Restate, feature
//! `restate`, `src/restate/`) implements [`Durable`]: a step's value is recorded once and
//! replayed on another worker after a crash, and a child is a durable call to the hop service.
//! Ids therefore stay the same on replay: they are allocated inside recorded steps.
//!
//! While a durable hop replays recorded steps its events were logged already, so
//! [`Journal::replaying`] tells `HopCtx::emit` to hold them back until a step runs for real.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;

use super::handoff::{HopRequest, HopResult};
use crate::model::{BoxFuture, ModelError, ModelResponse};

/// Why a recorded step could not be used; the hop fails with it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("durable journal: {0}")]
pub struct JournalError(pub String);

/// A durable backend's side of the seam (Restate's is in `src/restate/`).
pub trait Durable: Send + Sync {
    /// Runs `work` unless `name`'s value is recorded already; returns the (JSON) value either way.
    fn step(
        &self,
        name: String,
        work: BoxFuture<'static, String>,
    ) -> BoxFuture<'static, Result<String, JournalError>>;
    /// Starts `req` as a durable child call now (so siblings run in parallel) and returns the
    /// wait for its result.
    fn child(&self, req: HopRequest) -> BoxFuture<'static, Result<HopResult, JournalError>>;
    /// True while recorded steps are being replayed (their events were logged before).
    fn replaying(&self) -> bool;
}

/// Where a hop's steps are kept: nowhere (the embedded runtime) or a durable journal.
#[derive(Clone, Default)]
pub enum Journal {
    #[default]
    Local,
    Durable(Arc<dyn Durable>),
}

/// Why a child hop gave no result: its task panicked or was cancelled (local), or its durable
/// call failed (a durable backend).
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("{0}")]
    Task(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// A spawned child hop, aborted if the waiting caller is dropped (timeout, Ctrl-C).
struct AbortOnDrop(tokio::task::JoinHandle<HopResult>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A child hop under way, whichever backend runs it.
pub(crate) struct Child(ChildInner);

enum ChildInner {
    Local(AbortOnDrop),
    Durable(BoxFuture<'static, Result<HopResult, JournalError>>),
}

impl Child {
    /// The child's result, or why it ended abnormally (for the caller's tool error).
    pub async fn wait(self) -> Result<HopResult, ChildError> {
        match self.0 {
            ChildInner::Local(mut handle) => (&mut handle.0).await.map_err(ChildError::Task),
            ChildInner::Durable(f) => f.await.map_err(ChildError::Journal),
        }
    }
}

/// How a model turn is recorded: the response or the error's tier and text.
#[derive(Serialize, Deserialize)]
enum Turn {
    Ok(ModelResponse),
    Transient(String),
    Fatal(String),
    Overflow(String),
}

impl Journal {
    pub fn is_local(&self) -> bool {
        matches!(self, Journal::Local)
    }

    /// True while a durable hop replays steps whose events are in the log already.
    pub fn replaying(&self) -> bool {
        match self {
            Journal::Local => false,
            Journal::Durable(d) => d.replaying(),
        }
    }

    /// Runs `work` once: locally it is simply awaited; durably its value is recorded under
    /// `name` and a replay returns the record without running `work` again.
    pub async fn step<T, F>(&self, name: &str, work: F) -> Result<T, JournalError>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        match self {
            Journal::Local => Ok(work.await),
            Journal::Durable(d) => {
                let work = Box::pin(async move {
                    // A value that cannot be written is recorded as `null` and fails below,
                    // on every replay alike.
                    serde_json::to_string(&work.await).unwrap_or_else(|_| "null".into())
                });
                let text = d.step(name.to_string(), work).await?;
                serde_json::from_str(&text)
                    .map_err(|e| JournalError(format!("step `{name}` recorded {text:.80}: {e}")))
            }
        }
    }

    /// One model turn as a step: a recorded response is never sent to the model again.
    pub async fn model_turn<F>(&self, step: u32, work: F) -> Result<ModelResponse, ModelError>
    where
        F: Future<Output = Result<ModelResponse, ModelError>> + Send + 'static,
    {
        if self.is_local() {
            return work.await;
        }
        let recorded = self
            .step(&format!("model:{step}"), async move {
                match work.await {
                    Ok(r) => Turn::Ok(r),
                    Err(ModelError::Transient { message, .. }) => Turn::Transient(message),
                    Err(ModelError::Fatal(m)) => Turn::Fatal(m),
                    Err(ModelError::ContextOverflow { message }) => Turn::Overflow(message),
                }
            })
            .await
            .map_err(|e| ModelError::Fatal(e.to_string()))?;
        match recorded {
            Turn::Ok(r) => Ok(r),
            Turn::Transient(message) => Err(ModelError::Transient {
                message,
                retry_after: None,
            }),
            Turn::Fatal(m) => Err(ModelError::Fatal(m)),
            Turn::Overflow(message) => Err(ModelError::ContextOverflow { message }),
        }
    }

    /// Starts a child hop: a tokio task running `local(req)` in the embedded runtime, a durable
    /// call otherwise.
    pub(crate) fn spawn_child(
        &self,
        req: HopRequest,
        local: impl FnOnce(HopRequest) -> BoxFuture<'static, HopResult>,
    ) -> Child {
        match self {
            Journal::Local => Child(ChildInner::Local(AbortOnDrop(tokio::spawn(local(req))))),
            Journal::Durable(d) => Child(ChildInner::Durable(d.child(req))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A journal that records values in memory, as a durable backend would.
    #[derive(Default)]
    struct Memory {
        values: Arc<Mutex<std::collections::HashMap<String, String>>>,
        ran: Arc<AtomicUsize>,
    }

    impl Durable for Memory {
        fn step(
            &self,
            name: String,
            work: BoxFuture<'static, String>,
        ) -> BoxFuture<'static, Result<String, JournalError>> {
            let (values, ran) = (self.values.clone(), self.ran.clone());
            Box::pin(async move {
                let known = values.lock().unwrap().get(&name).cloned();
                if let Some(v) = known {
                    return Ok(v);
                }
                ran.fetch_add(1, Ordering::SeqCst);
                let v = work.await;
                values.lock().unwrap().insert(name, v.clone());
                Ok(v)
            })
        }
        fn child(&self, _req: HopRequest) -> BoxFuture<'static, Result<HopResult, JournalError>> {
            Box::pin(async { Err(JournalError("no children here".into())) })
        }
        fn replaying(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_recorded_model_turn_is_not_sent_again_and_keeps_its_error_tier() {
        let memory = Arc::new(Memory::default());
        let journal = Journal::Durable(memory.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let sent = Arc::new(AtomicUsize::new(0));
        let turn = |sent: Arc<AtomicUsize>| async move {
            sent.fetch_add(1, Ordering::SeqCst);
            Err::<ModelResponse, _>(ModelError::ContextOverflow {
                message: "too long".into(),
            })
        };
        for _ in 0..3 {
            let r = rt.block_on(journal.model_turn(1, turn(sent.clone())));
            assert!(
                matches!(r, Err(ModelError::ContextOverflow { ref message }) if message == "too long")
            );
        }
        assert_eq!(
            sent.load(Ordering::SeqCst),
            1,
            "replays answer from the record"
        );
        assert_eq!(memory.ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_local_journal_runs_every_step() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let journal = Journal::Local;
        let v: u32 = rt.block_on(journal.step("x", async { 7 })).unwrap();
        let w: u32 = rt.block_on(journal.step("x", async { 8 })).unwrap();
        assert_eq!((v, w), (7, 8));
        assert!(!journal.replaying());
    }
}
