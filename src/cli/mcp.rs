//! `switchboard mcp [--agent a,b]`: serves agents as MCP tools on stdin/stdout, for Claude Code,
//! opencode and other MCP clients (docs/mcp.md). Nothing else may write to stdout meanwhile.

use miette::IntoDiagnostic;

use super::Code;
use crate::runtime::RunOptions;
use crate::serve::{serve_stdio, AgentServer};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agents to serve, comma-separated or repeated (default: every agent). `--agents` is taken:
    /// it is the global option that adds an agent folder.
    #[arg(long = "agent", value_name = "NAME", value_delimiter = ',')]
    pub agents: Vec<String>,
    /// Model for every hop, as provider/model (default: each agent's configured model)
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let ctx = super::run::context(global)?;
    let options = RunOptions {
        model: args.model,
        ..RunOptions::default()
    };
    let server = AgentServer::new(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        &args.agents,
    )
    .into_diagnostic()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()?;
    runtime
        .block_on(serve_stdio(server))
        .map_err(|e| miette::miette!("MCP server: {e}"))?;
    Ok(Code::Clean)
}
