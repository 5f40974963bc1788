//! `switchboard pipeline run FILE "INPUT"`: runs an event-driven pipeline (`pipeline/*.yaml`)
//! as one session; exits with its outcome's code like `run`.

use miette::IntoDiagnostic;

use super::Code;
use crate::runtime::pipeline::{self, Pipeline};
use crate::runtime::{RunOptions, Session};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: PipelineCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PipelineCommand {
    /// Run a pipeline file on an input
    Run {
        /// The pipeline file, relative to the project root (e.g. pipeline/research.yaml)
        file: String,
        /// The input the pipeline's `input` worker gets
        input: String,
        /// Model for every worker, as provider/model
        #[arg(long, value_name = "PROVIDER/MODEL")]
        model: Option<String>,
        /// Worker hops running at once
        #[arg(long, value_name = "N", default_value_t = 8)]
        max_parallel: usize,
        /// Correlation id shared by every hop (default: generated)
        #[arg(long, value_name = "ID")]
        correlation_id: Option<String>,
        /// Print one JSON object instead of a summary
        #[arg(long)]
        json: bool,
    },
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let PipelineCommand::Run {
        file,
        input,
        model,
        max_parallel,
        correlation_id,
        json,
    } = args.command;
    let ctx = super::run::context(global)?;
    let spec = Pipeline::load(&ctx.project, &file, &ctx.agents).into_diagnostic()?;
    let options = RunOptions {
        model,
        correlation_id,
        max_parallel: max_parallel.max(1),
        ..RunOptions::default()
    };
    let session = Session::for_pipeline(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        &format!("pipeline:{}", spec.file.name),
        &input,
    )
    .into_diagnostic()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            biased;
            _ = super::signal::stop_requested() => session.interrupt(),
            outcome = pipeline::run(&session, &spec, &input) => outcome,
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    super::run::print_outcome(&outcome, json)?;
    Ok(Code::of_outcome(outcome.outcome))
}
