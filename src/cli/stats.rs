//! `switchboard stats`: contract outcomes per agent (first-pass valid, repaired, sanitized,
//! fallback by reason, non-conformant, failed, questions), read from the sessions' event logs.

use super::Code;
use crate::runtime::stats::{project_stats, ContractCounts, StatsFilter};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Count only this agent's answers
    #[arg(long)]
    pub agent: Option<String>,
    /// Count only answers at or after this UTC time (RFC 3339 or a prefix, e.g. 2026-11-23)
    #[arg(long)]
    pub since: Option<String>,
    /// Print JSON (agent name → counts)
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let project = super::open_project(global)?;
    if let Some(since) = &args.since {
        let ok = since.len() >= 4 && since[..4].bytes().all(|b| b.is_ascii_digit());
        if !ok {
            return Err(miette::miette!(
                "--since `{since}` is not a UTC time: write it as RFC 3339 or a prefix, e.g. \
                 2026-11-23 or 2026-11-23T10:00"
            ));
        }
    }
    let filter = StatsFilter {
        agent: args.agent.clone(),
        since: args.since.clone(),
    };
    let (counts, skipped) = project_stats(&project, &filter);
    for s in &skipped {
        eprintln!("warning: skipped unreadable log {s}");
    }
    if args.json {
        let text = serde_json::to_string_pretty(&counts)
            .map_err(|e| miette::miette!("cannot serialize the counts: {e}"))?;
        println!("{text}");
        return Ok(Code::Clean);
    }
    if counts.is_empty() {
        println!("no contract outcomes logged under .switchboard/sessions/");
    }
    for (agent, c) in &counts {
        println!("{agent}: {}", line(c));
    }
    Ok(Code::Clean)
}

fn line(c: &ContractCounts) -> String {
    let repaired: Vec<String> = c
        .repaired
        .iter()
        .map(|(turns, n)| format!("{n} after {turns}"))
        .collect();
    let fallback: Vec<String> = c.fallback.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!(
        "{} answers: {} valid first pass, {} repaired{}, {} sanitized, {} fallback{}, {} \
         non-conformant, {} failed, {} questions",
        c.total(),
        c.valid_first_pass,
        c.repaired.values().sum::<u64>(),
        if repaired.is_empty() {
            String::new()
        } else {
            format!(" ({})", repaired.join(", "))
        },
        c.sanitized,
        c.fallback.values().sum::<u64>(),
        if fallback.is_empty() {
            String::new()
        } else {
            format!(" ({})", fallback.join(", "))
        },
        c.non_conformant,
        c.failed,
        c.questions
    )
}
