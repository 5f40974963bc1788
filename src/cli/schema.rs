//! `switchboard schema agent`: JSON Schema for editors.

use super::{Code, Global};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// Agent frontmatter (agent/*.md)
    Agent,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(value_enum)]
    which: Which,
}

pub fn run(_global: &Global, args: Args) -> miette::Result<Code> {
    let schema = match args.which {
        Which::Agent => crate::agent::schema::agent_schema(),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    );
    Ok(Code::Clean)
}
