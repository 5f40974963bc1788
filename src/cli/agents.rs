//! `switchboard agents`: what the project defines, and what is wrong with it.

use serde::Serialize;

use super::{load_agents, print_diagnostics, Code, Global};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object (stable field names) instead of a table
    #[arg(long)]
    json: bool,
    /// Also start the configured MCP servers and list each agent's offered tools, MCP tools
    /// included (without it no server is started and MCP tools are not listed)
    #[arg(long)]
    tools: bool,
}

#[derive(Serialize)]
struct AgentRow<'a> {
    name: &'a str,
    mode: &'static str,
    model: Option<&'a str>,
    description: &'a str,
    file: &'a str,
    contract: Option<&'a str>,
    tools: Vec<&'static str>,
    /// What the agent will really be offered at run time: granted, provided by switchboard with
    /// this configuration, and not denied by `permission`.
    offered_tools: Vec<String>,
    problems: Vec<&'a crate::problem::Problem>,
}

pub fn run(global: &Global, args: Args) -> miette::Result<Code> {
    let (project, set) = load_agents(global)?;
    // A broken config is lint's to report; here it only means no optional tools are provided.
    let config = crate::config::Config::load(&project).unwrap_or_default();
    let provided = crate::tools::Provided::from_config(&config);
    let mcp = if args.tools && !config.mcp.is_empty() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| miette::miette!("cannot start the async runtime: {e}"))?;
        let (tools, reports) = runtime.block_on(crate::mcp::McpTools::start_for(
            &config.mcp,
            project.root(),
            &set,
        ));
        for r in reports.iter().filter(|r| r.error.is_some()) {
            eprintln!(
                "warning: MCP server `{}` brings no tools: {}",
                r.server,
                r.error.as_deref().unwrap_or_default()
            );
        }
        runtime.block_on(tools.shutdown());
        Some(tools)
    } else {
        None
    };
    let rows: Vec<AgentRow> = set
        .iter()
        .map(|a| AgentRow {
            name: &a.name,
            mode: a.mode.as_str(),
            model: a.model.as_deref(),
            description: &a.description,
            file: &a.file,
            contract: a.contract.as_ref().map(|c| c.name.as_str()),
            tools: a.tools.granted_builtins(),
            offered_tools: crate::tools::offered(a, &provided)
                .into_iter()
                .map(str::to_string)
                .chain(mcp.iter().flat_map(|m| m.offered(a)))
                // A gated agent is also offered the tool it submits its plan with.
                .chain(
                    a.gate
                        .is_some()
                        .then(|| crate::agent::gate::PLAN_TOOL.to_string()),
                )
                .collect(),
            problems: set.diagnostics_for(&a.file).collect(),
        })
        .collect();
    if args.json {
        let out = serde_json::json!({
            "agents": rows,
            "files": set.files,
            "diagnostics": set.diagnostics,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
        let model_w = rows
            .iter()
            .map(|r| r.model.unwrap_or("-").len())
            .max()
            .unwrap_or(5)
            .max(5);
        println!(
            "{:name_w$}  {:8}  {:model_w$}  DESCRIPTION",
            "NAME", "MODE", "MODEL"
        );
        for r in &rows {
            let mut desc: String = r.description.chars().take(70).collect();
            if r.description.chars().count() > 70 {
                desc.push('…');
            }
            println!(
                "{:name_w$}  {:8}  {:model_w$}  {desc}",
                r.name,
                r.mode,
                r.model.unwrap_or("-")
            );
            println!("{:name_w$}  {:8}  {:model_w$}  ↳ {}", "", "", "", r.file);
            if args.tools {
                println!(
                    "{:name_w$}  {:8}  {:model_w$}  tools: {}",
                    "",
                    "",
                    "",
                    r.offered_tools.join(", ")
                );
            }
        }
        let skipped: Vec<_> = set.files.iter().filter(|f| f.status == "skipped").collect();
        for f in skipped {
            println!(
                "skipped {}: {}",
                f.file,
                f.reason.as_deref().unwrap_or("not an agent")
            );
        }
        print_diagnostics(&set.diagnostics);
    }
    Ok(Code::findings_if(set.has_errors()))
}
