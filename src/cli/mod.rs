//! The command line: a thin layer over the library and the only place that prints.
//!
//! Each command lives in its own file with its clap arguments and
//! `pub fn run(global: &Global, args: Args) -> miette::Result<Code>`. A command prints its normal
//! output (reports, tables, findings) itself and returns how it ended; when it cannot run it
//! returns the error, and [`main`], the one error printer, renders it once on stderr and exits
//! with [`Code::CouldNotRun`]. The exit codes are [`exit::Code`]: 0 clean, 1 findings
//! (violations, lint errors, a session that FAILED), 2 could not run, 3 needs input, 4 PARTIAL,
//! 5 BLOCKED — the table in README's "Exit codes" section.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod agents;
mod check;
mod eval;
pub mod exit;
mod graph;
mod knowledge;
mod lint;
mod mcp;
mod pipeline;
mod remote;
mod render;
mod resume;
mod run;
mod runs;
mod schema;
mod sessions;
mod signal;
mod stats;
mod trace;
pub mod view;
#[cfg(feature = "restate")]
mod worker;
mod workflow;

pub use exit::Code;

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Run, check and lint multi-agent workflows whose agents are markdown files",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command understands.
#[derive(Debug, clap::Args)]
pub struct Global {
    /// Project root (default: the nearest ancestor with agent/, switchboard.toml or .git)
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Extra agent folder, searched after the standard ones; may be repeated
    #[arg(long = "agents", global = true, value_name = "DIR")]
    pub agent_dirs: Vec<PathBuf>,
    /// Use only the --agents folders, not the standard ones
    #[arg(long, global = true)]
    pub only_agents: bool,
    /// Ask HTTP model providers (openai, anthropic) for whole answers instead of streams
    #[arg(long, global = true)]
    pub no_stream: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the agents the project defines, with their problems
    Agents(agents::Args),
    /// Print an agent's system prompt as the model would get it
    Render(render::Args),
    /// Check subagent answers against the envelope contract
    Check(check::Args),
    /// Report problems in agent definitions, delegations, contracts and cited evidence
    Lint(lint::Args),
    /// Run a primary agent on a task
    Run(run::Args),
    /// List the project's sessions
    Sessions(sessions::Args),
    /// Show a session's hop tree
    Trace(trace::Args),
    /// Count contract outcomes per agent (valid, repaired, sanitized, fallback, failed, questions)
    Stats(stats::Args),
    /// Continue a session that was interrupted, ended PARTIAL, or asked a question
    Resume(resume::Args),
    /// List, show or prune the run folders sessions leave in .switchboard/runs/
    Runs(runs::Args),
    /// Run an event-driven pipeline (pipeline/*.yaml) on an input
    Pipeline(pipeline::Args),
    /// Draw the delegation graph (mermaid, dot or JSON)
    Graph(graph::Args),
    /// Print a JSON Schema (for editors' YAML language servers)
    Schema(schema::Args),
    /// Serve agents as MCP tools over stdio (for Claude Code, opencode, …)
    Mcp(mcp::Args),
    /// Checkpoint-workflow runs: list, show, status, retry a step, abort
    Workflow(workflow::Args),
    /// Analyse files into the knowledge store and search, show or clean what it holds
    Knowledge(knowledge::Args),
    /// Run a suite of tasks on a model and report contract conformance per agent
    Eval(eval::Args),
    /// Serve this project's sessions as durable workflows on a Restate server (feature `restate`)
    #[cfg(feature = "restate")]
    Worker(worker::Args),
}

/// Parses arguments, runs the command and prints its error, if any: the one place an error that
/// stops a command is rendered.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = color_enabled();
    // The hook can only be installed once; a second call (tests running `main` twice) is harmless.
    let _ = miette::set_hook(Box::new(move |_| {
        Box::new(miette::MietteHandlerOpts::new().color(color).build())
    }));
    match run(cli) {
        Ok(code) => code.into(),
        Err(report) => {
            eprintln!("{report:?}");
            Code::CouldNotRun.into()
        }
    }
}

/// Runs the command `cli` names.
fn run(cli: Cli) -> miette::Result<Code> {
    check_agent_dirs(&cli.global)?;
    match cli.command {
        Command::Agents(args) => agents::run(&cli.global, args),
        Command::Render(args) => render::run(&cli.global, args),
        Command::Check(args) => check::run(&cli.global, args),
        Command::Lint(args) => lint::run(&cli.global, args),
        // `--on restate://…`: the session runs on a Restate server (feature `restate`).
        Command::Run(args) => match args.on.clone() {
            Some(on) => remote::run(&cli.global, args, &on),
            None => run::run(&cli.global, args),
        },
        Command::Sessions(args) => sessions::run(&cli.global, args),
        Command::Trace(args) => trace::run(&cli.global, args),
        Command::Stats(args) => stats::run(&cli.global, args),
        Command::Resume(args) => resume::run(&cli.global, args),
        Command::Runs(args) => runs::run(&cli.global, args),
        Command::Pipeline(args) => pipeline::run(&cli.global, args),
        Command::Graph(args) => graph::run(&cli.global, args),
        Command::Schema(args) => schema::run(&cli.global, args),
        Command::Mcp(args) => mcp::run(&cli.global, args),
        Command::Workflow(args) => workflow::run(&cli.global, args),
        Command::Knowledge(args) => knowledge::run(&cli.global, args),
        Command::Eval(args) => eval::run(&cli.global, args),
        #[cfg(feature = "restate")]
        Command::Worker(args) => worker::run(&cli.global, args),
    }
}

/// Whether colour is allowed: `NO_COLOR` set to anything non-empty turns it off.
pub(crate) fn color_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// Refuses to run when an `--agents` folder is missing or not a folder. `--agents` is global, so
/// this one check, made before any command starts, covers every command: a mistyped folder (or
/// `mcp --agents NAME` meant as `--agent NAME`) must not run on the project's other agents as if
/// nothing were wrong.
fn check_agent_dirs(global: &Global) -> miette::Result<()> {
    if global.agent_dirs.is_empty() {
        return Ok(());
    }
    let project = open_project(global)?;
    let options = crate::agent::LoadOptions {
        extra_dirs: global.agent_dirs.clone(),
        only_extra: global.only_agents,
    };
    let missing = crate::agent::discovery::missing_extra_dirs(&project, &options);
    let Some(first) = missing.first() else {
        return Ok(());
    };
    let lines: Vec<String> = missing
        .iter()
        .map(|m| {
            format!(
                "`--agents {}`: {} {}",
                m.given.display(),
                m.resolved.display(),
                m.why
            )
        })
        .collect();
    let relative = if first.given.is_absolute() {
        String::new()
    } else {
        format!(
            " (a relative folder is read from the project root, {})",
            project.root().display()
        )
    };
    Err(miette::miette!(
        help = "`--agents DIR` adds a folder of agent files; pass an existing folder, or drop the \
                option. To pick which agents `switchboard mcp` serves, use `--agent NAME`",
        "agent folder not found{relative}:\n{}",
        lines.join("\n")
    ))
}

/// Opens the project and loads its agents.
pub(crate) fn load_agents(
    global: &Global,
) -> miette::Result<(crate::project::Project, crate::agent::AgentSet)> {
    let project = open_project(global)?;
    let options = crate::agent::LoadOptions {
        extra_dirs: global.agent_dirs.clone(),
        only_extra: global.only_agents,
    };
    let set = crate::agent::load(&project, &options);
    Ok((project, set))
}

/// Prints diagnostics on stderr, most severe last so they stay on screen, with a summary line.
pub(crate) fn print_diagnostics(diagnostics: &[crate::problem::Problem]) {
    use crate::problem::Severity;
    let mut sorted: Vec<_> = diagnostics.iter().collect();
    sorted.sort_by(|a, b| (a.severity, &a.file, a.line).cmp(&(b.severity, &b.file, b.line)));
    for d in &sorted {
        eprintln!("{d}\n");
    }
    let count = |s| diagnostics.iter().filter(|d| d.severity == s).count();
    let (e, w) = (count(Severity::Error), count(Severity::Warning));
    if e + w > 0 {
        eprintln!("{e} error(s), {w} warning(s)");
    }
}

/// Opens the project named by `--root`, or discovers it from the working directory.
pub(crate) fn open_project(global: &Global) -> Result<crate::project::Project, miette::Report> {
    let start = global.root.clone().unwrap_or_else(|| PathBuf::from("."));
    let result = if global.root.is_some() {
        crate::project::Project::open(&start)
    } else {
        crate::project::Project::discover(&start)
    };
    result.map_err(|e| miette::miette!("cannot open project root {}: {e}", start.display()))
}
