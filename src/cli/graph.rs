//! `switchboard graph`: the delegation graph, for docs and for seeing what lint complains about.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{load_agents, Code, Global};
use crate::agent::{AgentSet, Mode};
use crate::lint::graph::edges;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Mermaid,
    Dot,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value_t = Format::Mermaid)]
    format: Format,
}

/// One edge as drawn: where it is declared and whether it is a problem.
#[derive(serde::Serialize)]
struct EdgeOut<'a> {
    from: &'a str,
    to: &'a str,
    file: &'a str,
    line: usize,
    kind: crate::agent::DelegationRefKind,
    /// Empty when the edge is fine; else the lint code that flags it.
    problem: Option<&'static str>,
}

fn collect(set: &AgentSet) -> Vec<EdgeOut<'_>> {
    edges(set)
        .into_iter()
        .map(|e| {
            let problem = e.refusals(set).first().map(|p| p.code());
            EdgeOut {
                from: &e.from.name,
                to: e.to,
                file: &e.from.file,
                line: e.reference.line,
                kind: e.reference.kind,
                problem,
            }
        })
        .collect()
}

pub fn run(global: &Global, args: Args) -> miette::Result<Code> {
    let (_project, set) = load_agents(global)?;
    let all = collect(&set);
    // One drawn edge per pair; the first declaration names it, any problem marks it.
    let mut seen = BTreeSet::new();
    let drawn: Vec<&EdgeOut> = all.iter().filter(|e| seen.insert((e.from, e.to))).collect();
    let problem = |from: &str, to: &str| {
        all.iter()
            .find(|e| e.from == from && e.to == to && e.problem.is_some())
            .and_then(|e| e.problem)
    };
    let id = |name: &str| name.replace(['/', '-', '.'], "_");
    let mut out = String::new();
    match args.format {
        Format::Json => {
            let nodes: Vec<_> = set
                .iter()
                .map(|a| serde_json::json!({"name": a.name, "mode": a.mode.as_str(), "file": a.file}))
                .collect();
            out = serde_json::to_string_pretty(&serde_json::json!({"nodes": nodes, "edges": all}))
                .unwrap_or_default();
        }
        Format::Mermaid => {
            out.push_str("flowchart LR\n");
            for a in set.iter() {
                let shape = match a.mode {
                    Mode::Primary => format!("{}([\"{}\"])", id(&a.name), a.name),
                    Mode::Subagent => format!("{}[\"{}\"]", id(&a.name), a.name),
                    Mode::All => format!("{}{{{{\"{}\"}}}}", id(&a.name), a.name),
                };
                let _ = writeln!(out, "  {shape}");
            }
            for (i, e) in drawn.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  {} -->|\"{}:{}\"| {}",
                    id(e.from),
                    e.file,
                    e.line,
                    id(e.to)
                );
                if problem(e.from, e.to).is_some() {
                    let _ = writeln!(out, "  linkStyle {i} stroke:#d00,stroke-width:2px");
                }
            }
        }
        Format::Dot => {
            out.push_str("digraph delegation {\n  rankdir=LR;\n");
            for a in set.iter() {
                let shape = match a.mode {
                    Mode::Primary => "doubleoctagon",
                    Mode::Subagent => "box",
                    Mode::All => "ellipse",
                };
                let _ = writeln!(out, "  \"{}\" [shape={shape}];", a.name);
            }
            for e in &drawn {
                let style = match problem(e.from, e.to) {
                    Some(code) => format!(", color=red, tooltip=\"{code}\""),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  \"{}\" -> \"{}\" [label=\"{}:{}\"{style}];",
                    e.from, e.to, e.file, e.line
                );
            }
            out.push_str("}\n");
        }
    }
    print!("{out}");
    if !out.ends_with('\n') {
        println!();
    }
    Ok(Code::Clean)
}
