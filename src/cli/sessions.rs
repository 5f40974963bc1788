//! `switchboard sessions`: the project's sessions, newest first.

use super::Code;
use crate::runtime::trace;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let project = super::open_project(global)?;
    let sessions = trace::list(&project);
    if args.json {
        let rows: Vec<serde_json::Value> = sessions
            .iter()
            .map(|s| {
                serde_json::json!({
                    "session_id": s.session_id, "correlation_id": s.correlation_id,
                    "agent": s.agent, "prompt": s.prompt, "started_at": s.started_at,
                    "status": s.status, "hops": s.hops, "tokens": s.tokens,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(Code::Clean);
    }
    if sessions.is_empty() {
        println!("no sessions under .switchboard/sessions/");
    }
    for s in sessions {
        let prompt: String = s.prompt.chars().take(60).collect();
        println!(
            "{}  {}  {:<12} {:<16} {:>3} hops {:>7} tokens  {prompt}",
            s.session_id, s.started_at, s.status, s.agent, s.hops, s.tokens
        );
    }
    Ok(Code::Clean)
}
