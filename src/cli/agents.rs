//! `switchboard agents`: what the project defines, and what is wrong with it.

use serde::Serialize;

use super::{load_agents, print_diagnostics, Code, Global};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object (stable field names) instead of a table
    #[arg(long)]
    json: bool,
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
    offered_tools: Vec<&'static str>,
    problems: Vec<&'a crate::problem::Problem>,
}

pub fn run(global: &Global, args: Args) -> miette::Result<Code> {
    let (project, set) = load_agents(global)?;
    // A broken config is lint's to report; here it only means no optional tools are provided.
    let provided = crate::config::Config::load(&project)
        .map(|c| crate::tools::Provided::from_config(&c))
        .unwrap_or_default();
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
            offered_tools: crate::tools::offered(a, provided),
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
