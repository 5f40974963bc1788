//! `switchboard schema agent|events`: JSON Schema for editors (agent frontmatter) and for tools
//! that read session logs (every event type).

use super::{Code, Global};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// Agent frontmatter (agent/*.md)
    Agent,
    /// One line of a session's event log (.switchboard/sessions/<id>/events.jsonl)
    Events,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(value_enum)]
    which: Which,
}

pub fn run(_global: &Global, args: Args) -> miette::Result<Code> {
    let schema = match args.which {
        Which::Agent => crate::agent::schema::agent_schema(),
        Which::Events => crate::runtime::event_schema::events_schema(),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    );
    Ok(Code::Clean)
}
