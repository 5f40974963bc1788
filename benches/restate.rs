//! Sessions on Restate vs the local runtime, against a scripted model that takes 100 ms per
//! answer. Not a criterion bench: it starts a real restate-server (scripts/fetch-test-deps.sh)
//! and worker processes, so it runs only when asked:
//!
//!     cargo bench --profile dev --features restate --bench restate
//!
//! Each session is `lead` delegating to `fast` and `slow` in parallel, then answering: three
//! hops, four model turns, about 300 ms of model time. It prints sessions/minute for the local
//! runtime and for 1, 2 and 4 workers (all listening on one address, SO_REUSEPORT), and the
//! overhead per leaf hop (its duration minus its model time) as p50 and p99.

#[path = "../tests/support/mock.rs"]
mod mock;

#[path = "../tests/support/durable.rs"]
mod durable;

use std::path::Path;
use std::time::{Duration, Instant};

use switchboard::agent::LoadOptions;
use switchboard::project::Project;
use switchboard::restate::{client, SessionSpec};
use switchboard::runtime::events::read_log;
use switchboard::runtime::{EventKind, RunOptions, SessionOutcome, SessionStatus};

/// Sessions in flight at once, and in all, per measurement.
const CONCURRENT: usize = 16;
const SESSIONS: usize = 48;
const LATENCY: Duration = Duration::from_millis(100);

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Overheads (ms) of the leaf hops of these sessions: duration minus 100 ms per model turn.
fn leaf_overheads(outcomes: &[SessionOutcome]) -> Vec<f64> {
    let mut out = Vec::new();
    for o in outcomes {
        let events = read_log(&o.events).unwrap_or_default();
        for e in &events {
            let EventKind::HopCompleted { duration_us, .. } = &e.kind else {
                continue;
            };
            if e.agent.as_deref() == Some("lead") {
                continue;
            }
            let turns = events
                .iter()
                .filter(|x| x.hop_id == e.hop_id && x.kind.name() == "model.request")
                .count() as f64;
            out.push(*duration_us as f64 / 1000.0 - turns * LATENCY.as_secs_f64() * 1000.0);
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

fn report(label: &str, elapsed: Duration, outcomes: &[SessionOutcome]) {
    let done = outcomes
        .iter()
        .filter(|o| o.status == SessionStatus::Completed)
        .count();
    let per_minute = done as f64 / elapsed.as_secs_f64() * 60.0;
    let over = leaf_overheads(outcomes);
    println!(
        "{label:<12} {done:>3}/{SESSIONS} sessions in {:>6.2} s = {per_minute:>7.1} sessions/min; \
         leaf-hop overhead p50 {:>7.2} ms p99 {:>7.2} ms (n={})",
        elapsed.as_secs_f64(),
        percentile(&over, 0.50),
        percentile(&over, 0.99),
        over.len()
    );
}

async fn local(root: &Path) -> (Duration, Vec<SessionOutcome>) {
    let project = Project::open(root).expect("project");
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENT));
    let clock = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let (project, sem) = (project.clone(), sem.clone());
        tasks.push(tokio::spawn(async move {
            let _slot = sem.acquire_owned().await;
            switchboard::runtime::run(
                &project,
                &LoadOptions::default(),
                "lead",
                "find out",
                RunOptions::default(),
            )
            .await
            .expect("local session")
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.expect("session task"));
    }
    (clock.elapsed(), outcomes)
}

async fn on_restate(root: &Path, workers: usize) -> (Duration, Vec<SessionOutcome>) {
    let server = durable::Server::start();
    let port = durable::free_port();
    let workers: Vec<_> = (0..workers)
        .map(|_| durable::Worker::start(root, &server, port))
        .collect();
    let cpu = |pid: u32| durable::cpu_time(pid).as_millis();
    let server_before = server.pid().map_or(0, cpu);
    let workers_before: Vec<u128> = workers.iter().map(|w| cpu(w.pid())).collect();
    let ingress = client::ingress_url(&server.on()).expect("ingress");
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENT));
    let clock = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let (ingress, sem) = (ingress.clone(), sem.clone());
        tasks.push(tokio::spawn(async move {
            let _slot = sem.acquire_owned().await;
            let id = switchboard::runtime::ids::new_id;
            let spec = SessionSpec {
                session_id: id(),
                correlation_id: id(),
                root_hop_id: id(),
                agent: "lead".into(),
                prompt: "find out".into(),
                model: None,
                max_parallel: 8,
                max_depth: 3,
                hop_timeout_secs: 600,
            };
            client::submit(&ingress, &spec).await.expect("submit");
            client::outcome(&ingress, &spec.session_id, Duration::from_secs(300))
                .await
                .expect("outcome")
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.expect("session task"));
    }
    let elapsed = clock.elapsed();
    // Where the CPU went: the server, and each worker (how evenly the work spread).
    let worker_cpu: Vec<u128> = workers
        .iter()
        .zip(workers_before)
        .map(|(w, before)| cpu(w.pid()) - before)
        .collect();
    println!(
        "  cpu ms: restate-server {}, workers {worker_cpu:?}",
        server.pid().map_or(0, cpu) - server_before
    );
    (elapsed, outcomes)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let model = durable::Model::start().await;
        for role in ["lead", "fast", "slow"] {
            model.set_delay(role, LATENCY);
        }
        let dir = durable::project(model.addr());
        println!(
            "loadavg before: {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        let (elapsed, outcomes) = local(dir.path()).await;
        report("local", elapsed, &outcomes);
        for workers in [1, 2, 4] {
            let (elapsed, outcomes) = on_restate(dir.path(), workers).await;
            report(&format!("restate x{workers}"), elapsed, &outcomes);
        }
        println!(
            "loadavg after: {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
    });
}
