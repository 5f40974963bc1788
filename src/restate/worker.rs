//! The worker: the session workflow and the hop service, and the bridge that lets the hop loop
//! (a tokio task, like every local hop) journal its steps in the handler's Restate context.
//!
//! The bridge is a channel. The hop loop sends each step (and each child call) to the handler,
//! which runs it with `ctx.run` (or starts a durable call) in the order it arrives; the loop
//! sends one step at a time, so the journal's order is the loop's own and a replay meets its
//! entries in the same order. A step whose closure does not run was replayed: until one runs,
//! the hop's events are held back, since the worker that ran those steps logged them already.

use restate_sdk::prelude::*;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

use super::{HopCall, RestateError, SessionSpec};
use crate::agent::AgentSet;
use crate::config::Config;
use crate::model::{BoxFuture, Registry, Usage};
use crate::project::Project;
use crate::runtime::events::{read_log, EventKind, EventLog, FsyncPolicy};
use crate::runtime::handoff::{HopRequest, HopResult};
use crate::runtime::hop::run_hop_on;
use crate::runtime::journal::{Durable, Journal, JournalError};
use crate::runtime::shared::Shared;
use crate::runtime::{RunOptions, RuntimeError, Session, SessionOutcome};

/// Sessions a worker keeps open at most (their logs stay open); beyond it the cache restarts.
const OPEN_SESSIONS: usize = 256;

/// What a worker serves sessions of: one project, loaded once.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

struct Inner {
    project: Project,
    agents: Arc<AgentSet>,
    config: Config,
    models: Arc<Registry>,
    /// Session id → its shared state on this worker (the log open for appending).
    sessions: Mutex<HashMap<String, Arc<Shared>>>,
}

impl Worker {
    pub fn new(
        project: Project,
        agents: Arc<AgentSet>,
        config: Config,
        models: Arc<Registry>,
    ) -> Self {
        Worker {
            inner: Arc::new(Inner {
                project,
                agents,
                config,
                models,
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }
}

impl Inner {
    /// The session's shared state on this worker, opening its log on first use.
    fn shared_for(&self, spec: &SessionSpec) -> Result<Arc<Shared>, RuntimeError> {
        let mut open = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = open.get(&spec.session_id) {
            return Ok(s.clone());
        }
        let options = RunOptions {
            model: spec.model.clone(),
            correlation_id: Some(spec.correlation_id.clone()),
            max_parallel: spec.max_parallel.max(1),
            max_depth: spec.max_depth,
            hop_timeout: Duration::from_secs(spec.hop_timeout_secs.max(1)),
            fsync: FsyncPolicy::Background,
            ..RunOptions::default()
        };
        let dir = self
            .project
            .root()
            .join(crate::runtime::session::SESSIONS_DIR)
            .join(&spec.session_id);
        let log = EventLog::open(&dir, options.fsync, None).map_err(|error| RuntimeError::Log {
            dir: dir.clone(),
            error,
        })?;
        let shared = Arc::new(Shared::new(
            self.project.clone(),
            self.agents.clone(),
            self.config.clone(),
            self.models.clone(),
            options,
            spec.session_id.clone(),
            spec.correlation_id.clone(),
            dir,
            log,
            None,
        ));
        if open.len() >= OPEN_SESSIONS {
            open.clear();
        }
        open.insert(spec.session_id.clone(), shared.clone());
        Ok(shared)
    }

    fn forget(&self, session_id: &str) {
        if let Ok(mut open) = self.sessions.lock() {
            open.remove(session_id);
        }
    }
}

fn terminal(e: impl std::fmt::Display) -> HandlerError {
    TerminalError::new(e.to_string()).into()
}

/// The session workflow, keyed by session id.
pub struct SwitchboardSession(Arc<Inner>);

#[restate_sdk::workflow]
impl SwitchboardSession {
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        spec: Json<SessionSpec>,
    ) -> HandlerResult<Json<SessionOutcome>> {
        let spec = spec.into_inner();
        let shared = self.0.shared_for(&spec).map_err(terminal)?;
        let session = Session::attach(shared.clone(), &spec.agent, &spec.prompt, &spec.root_hop_id);
        {
            let (session, shared) = (&session, shared.clone());
            ctx.run(|| async move {
                session.begin().await;
                shared.log.flush();
                Ok(())
            })
            .name("session.started")
            .await?;
        }
        let call = HopCall {
            session: spec.clone(),
            req: session.root_request(),
        };
        let result = ctx
            .service_client::<SwitchboardHopClient>()
            .run(Json(call))
            .call()
            .await?
            .into_inner();
        let outcome = {
            let (session, shared, result) = (&session, shared.clone(), &result);
            ctx.run(|| async move {
                // Hops ran on any worker: the session's totals come from its log.
                if let Ok(events) = read_log(shared.log.path()) {
                    shared.set_totals(usage_of(&events), result.written.clone());
                }
                Ok(Json(session.end(result).await))
            })
            .name("session.completed")
            .await?
            .into_inner()
        };
        self.0.forget(&spec.session_id);
        Ok(Json(outcome))
    }
}

/// Tokens of every hop that ended, from a session's events.
fn usage_of(events: &[crate::runtime::Event]) -> Usage {
    let mut total = Usage::default();
    for e in events {
        if let EventKind::HopCompleted { usage, .. } | EventKind::HopFailed { usage, .. } = &e.kind
        {
            total += *usage;
        }
    }
    total
}

/// The hop service: one invocation per hop.
pub struct SwitchboardHop(Arc<Inner>);

#[restate_sdk::service]
impl SwitchboardHop {
    #[handler]
    async fn run(&self, ctx: Context<'_>, call: Json<HopCall>) -> HandlerResult<Json<HopResult>> {
        let HopCall { session, mut req } = call.into_inner();
        let shared = self.0.shared_for(&session).map_err(terminal)?;
        // The hop id is the first step: a replay gets the same one (and learns it replays).
        let opened = Arc::new(AtomicBool::new(false));
        let hop_id: String = {
            let (opened, preset) = (opened.clone(), req.hop_id.clone());
            ctx.run(|| async move {
                opened.store(true, Ordering::SeqCst);
                Ok(preset.unwrap_or_else(crate::runtime::ids::new_id))
            })
            .name("hop.open")
            .await?
        };
        req.hop_id = Some(hop_id);
        let replaying = Arc::new(AtomicBool::new(!opened.load(Ordering::SeqCst)));
        let (tx, rx) = mpsc::unbounded_channel();
        let bridge = Bridge {
            tx,
            replaying: replaying.clone(),
            children: AtomicUsize::new(0),
        };
        let journal = Journal::Durable(Arc::new(bridge));
        let hop = AbortOnDrop(tokio::spawn(run_hop_on(shared.clone(), req, journal)));
        serve_steps(&ctx, rx, &session, &shared, &replaying).await;
        let result = (&mut { hop }.0)
            .await
            .map_err(|e| terminal(format!("the hop ended abnormally: {e}")))?;
        Ok(Json(result))
    }
}

/// Runs the hop loop's steps in `ctx`, in the order they arrive, until the loop is done.
async fn serve_steps(
    ctx: &Context<'_>,
    mut rx: mpsc::UnboundedReceiver<Op>,
    session: &SessionSpec,
    shared: &Arc<Shared>,
    replaying: &Arc<AtomicBool>,
) {
    type Call<'a> = BoxFuture<'a, Result<Json<HopResult>, TerminalError>>;
    let mut calls: Vec<Option<Call<'_>>> = Vec::new();
    while let Some(op) = rx.recv().await {
        match op {
            Op::Step { name, work, reply } => {
                let (shared, replaying) = (shared.clone(), replaying.clone());
                let value = ctx
                    .run(|| async move {
                        // Running for real: from here on the hop's events are new.
                        replaying.store(false, Ordering::SeqCst);
                        shared.log.flush();
                        Ok(work.await)
                    })
                    .name(name)
                    .await;
                let _ = reply.send(value.map_err(|e| JournalError(e.to_string())));
            }
            Op::Call { req } => {
                // The `tool.call` events before a delegation reach the disk before it starts.
                if !replaying.load(Ordering::SeqCst) {
                    shared.log.flush();
                }
                let call = HopCall {
                    session: session.clone(),
                    req,
                };
                let future = ctx
                    .service_client::<SwitchboardHopClient>()
                    .run(Json(call))
                    .call();
                calls.push(Some(Box::pin(future)));
            }
            Op::Await { index, reply } => {
                let result = match calls.get_mut(index).and_then(Option::take) {
                    Some(call) => call
                        .await
                        .map(Json::into_inner)
                        .map_err(|e| JournalError(format!("child hop: {e}"))),
                    None => Err(JournalError(format!("no child call #{index}"))),
                };
                let _ = reply.send(result);
            }
        }
    }
}

/// What the hop loop asks its handler to do.
enum Op {
    Step {
        name: String,
        work: BoxFuture<'static, String>,
        reply: oneshot::Sender<Result<String, JournalError>>,
    },
    /// Start child call number `n` (the order of `Call`s numbers them).
    Call { req: HopRequest },
    Await {
        index: usize,
        reply: oneshot::Sender<Result<HopResult, JournalError>>,
    },
}

/// The hop loop's side of the channel: [`Durable`] for Restate.
struct Bridge {
    tx: mpsc::UnboundedSender<Op>,
    replaying: Arc<AtomicBool>,
    children: AtomicUsize,
}

fn gone() -> JournalError {
    JournalError("the Restate handler is gone (the invocation was suspended or aborted)".into())
}

impl Durable for Bridge {
    fn step(
        &self,
        name: String,
        work: BoxFuture<'static, String>,
    ) -> BoxFuture<'static, Result<String, JournalError>> {
        let (reply, answer) = oneshot::channel();
        let sent = self.tx.send(Op::Step { name, work, reply });
        Box::pin(async move {
            sent.map_err(|_| gone())?;
            answer.await.map_err(|_| gone())?
        })
    }

    fn child(&self, req: HopRequest) -> BoxFuture<'static, Result<HopResult, JournalError>> {
        let index = self.children.fetch_add(1, Ordering::SeqCst);
        // Sent now, so every sibling is started before the first is awaited.
        let sent = self.tx.send(Op::Call { req });
        let tx = self.tx.clone();
        Box::pin(async move {
            sent.map_err(|_| gone())?;
            let (reply, answer) = oneshot::channel();
            tx.send(Op::Await { index, reply }).map_err(|_| gone())?;
            answer.await.map_err(|_| gone())?
        })
    }

    fn replaying(&self) -> bool {
        self.replaying.load(Ordering::SeqCst)
    }
}

/// The hop task, aborted when the handler is dropped (the invocation suspended or the
/// connection to the server broke): the replay runs it again.
struct AbortOnDrop(tokio::task::JoinHandle<HopResult>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Binds `addr` for a worker. Several workers may listen on one address (SO_REUSEPORT):
/// Restate sees one deployment and the kernel spreads its connections over them, and a worker
/// started there after another died takes over its invocations.
pub fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, RestateError> {
    let listen = |error: std::io::Error| RestateError::Listen {
        addr: addr.to_string(),
        error,
    };
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(listen)?;
    socket.set_reuseport(true).map_err(listen)?;
    socket.set_reuseaddr(true).map_err(listen)?;
    socket.bind(addr).map_err(listen)?;
    socket.listen(1024).map_err(listen)
}

/// Serves the session workflow and the hop service on `listener` until `shutdown` resolves.
pub async fn serve(
    worker: Worker,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let endpoint = Endpoint::builder()
        .bind(SwitchboardSession(worker.inner.clone()))
        .bind(SwitchboardHop(worker.inner.clone()))
        .build();
    HttpServer::new(endpoint)
        .serve_with_cancel(listener, shutdown)
        .await;
}
