//! `switchboard resume SESSION`: continues a session whose process died (interrupted), that
//! asked a question (`--answer`) or that ended PARTIAL (from its checkpoints, with a fresh
//! budget), without re-running hops that completed. A corrupt log or a missing agent is BLOCKED
//! (exit 5): nothing runs.

use miette::IntoDiagnostic;
use std::io::IsTerminal;

use super::view::View;
use super::Code;
use crate::runtime::resume::{plan, ResumeError};
use crate::runtime::{RunOptions, Session};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id (see `switchboard sessions`)
    pub session: String,
    /// Model for every hop (default: the `--model` the session was started with)
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Print one JSON object instead of the live view
    #[arg(long)]
    pub json: bool,
    /// Export the resumed run as an OpenTelemetry trace (as `run --otel[=URL]`)
    #[arg(long, value_name = "URL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub otel: Option<String>,
    /// The answer to the question a `needs_input` session asked
    #[arg(long)]
    pub answer: Option<String>,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let ctx = super::run::context(global)?;
    let mut plan = match plan(&ctx.project, &args.session) {
        Ok(plan) => plan,
        // Tier 3: said once on stderr, with its own exit code.
        Err(e) if e.is_blocked() => {
            eprintln!("{e}");
            return Ok(Code::Blocked);
        }
        Err(e) => return Err(e).into_diagnostic(),
    };
    let mut questions_asked = 0;
    match (&args.answer, &plan.question) {
        (Some(answer), _) => {
            plan = plan.answer(answer).into_diagnostic()?;
            questions_asked = 1;
        }
        (None, Some(question)) => {
            return Err(ResumeError::NeedsAnswer {
                session_id: plan.session_id.clone(),
                question: question.clone(),
            })
            .into_diagnostic();
        }
        (None, None) => {}
    }
    if ctx.agents.get(&plan.agent).is_none() {
        // Tier 3: the session's primary is gone; only a person can bring it back.
        eprintln!(
            "BLOCKED: session {} was run by agent `{}`, which this project no longer defines. \
             A person must restore agent/{}.md (`switchboard agents` lists the agents); \
             nothing was run",
            plan.session_id, plan.agent, plan.agent
        );
        return Ok(Code::Blocked);
    }
    if !args.json {
        eprintln!(
            "resuming session {}: {} hop(s) completed before and will not run again",
            plan.session_id, plan.completed_hops
        );
    }
    let view = (!args.json).then(|| View::new(std::io::stdout().is_terminal()));
    let telemetry = super::run::start_telemetry("--otel", args.otel.as_deref(), &ctx.config)?;
    let options = RunOptions {
        model: args.model,
        observer: super::run::observers(view.as_ref().map(|v| v.observer()), telemetry.as_ref()),
        questions_asked,
        ..RunOptions::default()
    };
    let session = Session::resume(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        plan,
    )
    .into_diagnostic()?;
    super::run::drive(&session, view, telemetry, args.json)
}
