//! `switchboard run AGENT "PROMPT"`: runs a session and shows its hop tree, or prints one JSON
//! object with `--json`.

use miette::IntoDiagnostic;
use std::io::IsTerminal;
use std::sync::Arc;

use super::view::View;
use super::Code;
use crate::agent::{load, AgentSet, LoadOptions};
use crate::config::Config;
use crate::model::Registry;
use crate::project::Project;
use crate::runtime::{RunOptions, Session, SessionOutcome, SessionStatus};
use crate::telemetry::Telemetry;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The primary agent to run
    pub agent: String,
    /// The task
    pub prompt: String,
    /// Model for every hop, as provider/model (e.g. scripted/tests/script.yaml)
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Correlation id shared by every hop (default: generated)
    #[arg(long, value_name = "ID")]
    pub correlation_id: Option<String>,
    /// Subagents running at once
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_parallel: usize,
    /// Deepest delegation allowed (the primary is depth 0)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_depth: u32,
    /// Print one JSON object (session_id, correlation_id, status, answer, written, events)
    #[arg(long)]
    pub json: bool,
    /// Wall-clock seconds a hop may take when its agent sets no `budget.wall_seconds`; a
    /// primary's hop includes its whole delegation
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_HOP_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub hop_timeout: u64,
    /// Export the session as an OpenTelemetry trace (OTLP/HTTP) to URL, else to `[telemetry]
    /// otlp_endpoint`, else to http://127.0.0.1:4318
    #[arg(long, value_name = "URL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub otel: Option<String>,
    /// Run the session as a durable workflow on a Restate server (restate://HOST:PORT, its
    /// ingress) whose workers serve this project; needs the `restate` feature (docs/restate.md)
    #[arg(long, value_name = "restate://HOST:PORT")]
    pub on: Option<String>,
}

/// What every session command needs: the project, its agents, its config and the models.
pub(crate) struct Context {
    pub project: Project,
    pub agents: Arc<AgentSet>,
    pub config: Config,
    pub models: Arc<Registry>,
}

/// `--hop-timeout`'s default: the runtime's own ([`RunOptions::default`]).
pub(crate) const DEFAULT_HOP_TIMEOUT_SECS: u64 = crate::runtime::DEFAULT_HOP_TIMEOUT.as_secs();

pub(crate) fn context(global: &super::Global) -> miette::Result<Context> {
    let project = super::open_project(global)?;
    let config = Config::load(&project).into_diagnostic()?;
    let agents = load(
        &project,
        &LoadOptions {
            extra_dirs: global.agent_dirs.clone(),
            only_extra: global.only_agents,
        },
    );
    let models = Arc::new(Registry::with_builtins(crate::model::ProviderContext {
        project_root: project.root().to_path_buf(),
        providers: config.providers.clone(),
        // --no-stream
        stream: global.no_stream.then_some(false),
    }));
    Ok(Context {
        project,
        agents: Arc::new(agents),
        config,
        models,
    })
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let ctx = context(global)?;
    let view = (!args.json).then(|| View::new(std::io::stdout().is_terminal()));
    let telemetry = start_telemetry("--otel", args.otel.as_deref(), &ctx.config)?;
    let options = RunOptions {
        model: args.model,
        correlation_id: args.correlation_id,
        max_parallel: args.max_parallel.max(1),
        max_depth: args.max_depth,
        hop_timeout: std::time::Duration::from_secs(args.hop_timeout),
        observer: observers(view.as_ref().map(|v| v.observer()), telemetry.as_ref()),
        ..RunOptions::default()
    };
    let session = Session::new(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        &args.agent,
        &args.prompt,
    )
    .into_diagnostic()?;
    drive(&session, view, telemetry, args.json)
}

/// The trace exporter `--otel[=URL]` or `[telemetry] otlp_endpoint` asks for, if any. Its one
/// warning (a collector that cannot be reached) goes to stderr.
/// `flag_name` is how the flag is spelled in this command, for errors.
pub(crate) fn start_telemetry(
    flag_name: &str,
    flag: Option<&str>,
    config: &Config,
) -> miette::Result<Option<Arc<Telemetry>>> {
    let configured = config.telemetry.otlp_endpoint.as_deref();
    let (endpoint, from) = match flag {
        Some(url) if !url.is_empty() => (url, flag_name),
        Some(_) => match configured {
            Some(url) => (url, "switchboard.toml [telemetry] otlp_endpoint"),
            None => (crate::telemetry::DEFAULT_ENDPOINT, flag_name),
        },
        None => match configured {
            Some(url) => (url, "switchboard.toml [telemetry] otlp_endpoint"),
            None => return Ok(None),
        },
    };
    let warn: crate::telemetry::Warn = Arc::new(|msg: &str| eprintln!("warning: {msg}"));
    Telemetry::start(endpoint, warn)
        .map(Some)
        .map_err(|e| miette::miette!("{from}: {e}"))
}

/// One observer feeding the live view and the trace exporter, whichever are present.
pub(crate) fn observers(
    view: Option<crate::runtime::Observer>,
    telemetry: Option<&Arc<Telemetry>>,
) -> Option<crate::runtime::Observer> {
    let tel = telemetry.map(|t| t.observer());
    match (view, tel) {
        (Some(v), Some(t)) => Some(Arc::new(move |e: &crate::runtime::Event| {
            v(e);
            t(e);
        })),
        (v, t) => v.or(t),
    }
}

/// Runs (or resumes) a session on a tokio runtime, ending it cleanly on Ctrl-C, and prints.
pub(crate) fn drive(
    session: &Session,
    view: Option<Arc<View>>,
    telemetry: Option<Arc<Telemetry>>,
    json: bool,
) -> miette::Result<Code> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(async {
        let ticker = view.clone().map(|v| {
            tokio::spawn(async move {
                let mut every = tokio::time::interval(std::time::Duration::from_millis(250));
                loop {
                    every.tick().await;
                    v.tick();
                }
            })
        });
        // `biased`: the Ctrl-C handler is installed when its future is first polled, so poll it
        // before the session, which logs `hop.started` in its first poll; unbiased, a SIGINT
        // arriving right after that event could still kill the process with no end in the log.
        let outcome = tokio::select! {
            biased;
            _ = super::signal::stop_requested() => session.interrupt(),
            outcome = session.run() => outcome,
        };
        if let Some(t) = ticker {
            t.abort();
        }
        outcome
    });
    // The last spans go out before the process ends (bounded: a dead collector fails fast, a
    // silent one is given up on after a few seconds).
    if let Some(t) = telemetry {
        t.shutdown();
    }
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    print_outcome(&outcome, json)?;
    Ok(Code::of_outcome(outcome.outcome))
}

/// `run --json`'s object: the outcome as before, then the session's contract counts.
#[derive(serde::Serialize)]
struct WithCounts<'a> {
    #[serde(flatten)]
    outcome: &'a SessionOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    contracts: Option<std::collections::BTreeMap<String, crate::runtime::stats::ContractCounts>>,
}

pub(crate) fn print_outcome(outcome: &SessionOutcome, json: bool) -> miette::Result<()> {
    if json {
        // The session's contract outcomes per agent, from its own log (`switchboard stats`).
        let contracts = crate::runtime::events::read_log(&outcome.events)
            .ok()
            .map(|events| crate::runtime::stats::tally(&events, &Default::default()));
        let value = WithCounts { outcome, contracts };
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| miette::miette!("cannot serialize the outcome: {e}"))?;
        println!("{text}");
        return Ok(());
    }
    println!();
    println!(
        "session {} ({}), correlation {}",
        outcome.session_id, outcome.status, outcome.correlation_id
    );
    if outcome.status == SessionStatus::NeedsInput {
        // The question is the hop's `error` text (runtime/status.rs, `NeedsInput`).
        println!("question: {}", outcome.error.as_deref().unwrap_or(""));
        println!(
            "answer it with: switchboard resume {} --answer \"…\"",
            outcome.session_id
        );
    } else if let Some(e) = &outcome.error {
        println!("error: {e}");
    }
    if let Some(c) = &outcome.checkpoint {
        if outcome.outcome == crate::runtime::Outcome::Partial {
            for step in &c.next_steps {
                println!("next: {step}");
            }
            println!(
                "continue it with: switchboard resume {}",
                outcome.session_id
            );
        }
    }
    if let Some(dir) = &outcome.run_folder {
        println!("run folder {}", dir.display());
    }
    for w in &outcome.written {
        println!("wrote {w}");
    }
    println!("log {}", outcome.events.display());
    if !outcome.answer.is_empty() {
        println!();
        println!("{}", outcome.answer);
    }
    Ok(())
}
