//! `switchboard resume SESSION`: continues a session whose process died, without re-running hops
//! that completed.

use std::io::IsTerminal;

use crate::runtime::resume::plan;
use crate::runtime::view::View;
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
}

pub fn run(global: &super::Global, args: Args) -> u8 {
    let ctx = match super::run::context(global) {
        Ok(c) => c,
        Err(e) => return super::report_error(e),
    };
    let plan = match plan(&ctx.project, &args.session) {
        Ok(p) => p,
        Err(e) => return super::report_error(miette::miette!("{e}")),
    };
    if !args.json {
        eprintln!(
            "resuming session {}: {} hop(s) completed before and will not run again",
            plan.session_id, plan.completed_hops
        );
    }
    let view = (!args.json).then(|| View::new(std::io::stdout().is_terminal()));
    let options = RunOptions {
        model: args.model,
        observer: view.as_ref().map(|v| v.observer()),
        ..RunOptions::default()
    };
    let session = match Session::resume(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        plan,
    ) {
        Ok(s) => s,
        Err(e) => return super::report_error(miette::miette!("{e}")),
    };
    super::run::drive(&session, view, args.json)
}
