//! `switchboard run --on restate://HOST:PORT`: submits the session to a Restate server whose
//! workers (`switchboard worker`) serve this project, shows its hop tree live from the event log
//! the workers write, and prints the outcome as a local run does.

use super::Code;

#[cfg(not(feature = "restate"))]
pub fn run(_global: &super::Global, _args: super::run::Args, on: &str) -> miette::Result<Code> {
    Err(miette::miette!(
        help = "rebuild with `cargo build --features restate` (docs/restate.md), or drop --on to run locally",
        "--on {on}: this switchboard was built without the `restate` feature"
    ))
}

#[cfg(feature = "restate")]
pub fn run(global: &super::Global, args: super::run::Args, on: &str) -> miette::Result<Code> {
    use miette::IntoDiagnostic;
    use std::io::IsTerminal;

    use super::view::View;
    use crate::restate::{client, SessionSpec};
    use crate::runtime::session::SESSIONS_DIR;
    use crate::runtime::RuntimeError;

    if args.otel.is_some() {
        return Err(miette::miette!(
            help = "export the session afterwards with `switchboard trace ID --otlp`",
            "--otel is not supported with --on yet"
        ));
    }
    let ingress = client::ingress_url(on).map_err(|e| miette::miette!("--on: {e}"))?;
    let ctx = super::run::context(global)?;
    // The same refusals as a local run, before anything is submitted.
    match ctx.agents.get(&args.agent) {
        None => return Err(RuntimeError::unknown(&ctx.agents, &args.agent)).into_diagnostic(),
        Some(a) if !a.mode.can_be_primary() => {
            return Err(RuntimeError::NotPrimary(args.agent.clone())).into_diagnostic()
        }
        Some(_) => {}
    }
    let new_id = crate::runtime::ids::new_id;
    let spec = SessionSpec {
        session_id: new_id(),
        correlation_id: args.correlation_id.clone().unwrap_or_else(new_id),
        root_hop_id: new_id(),
        agent: args.agent.clone(),
        prompt: args.prompt.clone(),
        model: args.model.clone(),
        max_parallel: args.max_parallel.max(1),
        max_depth: args.max_depth,
        hop_timeout_secs: args.hop_timeout,
    };
    let log = ctx
        .project
        .root()
        .join(SESSIONS_DIR)
        .join(&spec.session_id)
        .join("events.jsonl");
    let view = (!args.json).then(|| View::new(std::io::stdout().is_terminal()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(async {
        client::submit(&ingress, &spec).await?;
        let follower = view.clone().map(|v| {
            let (log, observer) = (log.clone(), v.observer());
            tokio::spawn(async move {
                let ticker = async {
                    let mut every = tokio::time::interval(std::time::Duration::from_millis(250));
                    loop {
                        every.tick().await;
                        v.tick();
                    }
                };
                tokio::join!(client::follow(&log, observer), ticker);
            })
        });
        // A durable session outlives this process: Ctrl-C stops following, not the session.
        let patience = std::time::Duration::from_secs(7 * 24 * 3600);
        let result = tokio::select! {
            _ = tokio::signal::ctrl_c() => Err(crate::restate::RestateError::BadOutcome(format!(
                "stopped following; session {} goes on in Restate (`switchboard trace {}` shows it)",
                spec.session_id, spec.session_id
            ))),
            r = client::outcome(&ingress, &spec.session_id, patience) => r,
        };
        if let Some(f) = follower {
            f.abort();
        }
        result
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let outcome = outcome.map_err(|e| miette::miette!("--on {on}: {e}"))?;
    super::run::print_outcome(&outcome, args.json)?;
    Ok(Code::of_outcome(outcome.outcome))
}
