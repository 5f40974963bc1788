//! `switchboard runs list|show SESSION|gc --keep N`: the run folders sessions leave in
//! `.switchboard/runs/<session>/` (written by `runtime::runs` when a session ends).

use miette::IntoDiagnostic;

use super::Code;
use crate::runtime::runs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: RunsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// The run folders, newest first
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// A run's RESULTS.md (or, with --json, its metadata and folder)
    Show {
        /// The session id
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete every run folder but the newest N (session logs stay)
    Gc {
        /// How many of the newest run folders to keep
        #[arg(long, value_name = "N")]
        keep: usize,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let project = super::open_project(global)?;
    match args.command {
        RunsCommand::List { json } => {
            let list = runs::list(&project).into_diagnostic()?;
            if json {
                println!("{}", to_json(&list)?);
                return Ok(Code::Clean);
            }
            if list.is_empty() {
                println!("no run folders under {}/", runs::RUNS_DIR);
            }
            for r in list {
                let prompt: String = r.meta.prompt.chars().take(60).collect();
                println!(
                    "{}  {}  {:<11} {:<16} {prompt}",
                    r.meta.session_id, r.meta.ended_at, r.meta.outcome, r.meta.agent
                );
            }
        }
        RunsCommand::Show { session, json } => {
            let (entry, results) = runs::show(&project, &session).into_diagnostic()?;
            if json {
                println!("{}", to_json(&entry)?);
            } else {
                print!("{results}");
                println!("\n(folder {})", entry.dir.display());
            }
        }
        RunsCommand::Gc { keep, json } => {
            let removed = runs::gc(&project, keep).into_diagnostic()?;
            if json {
                println!("{}", to_json(&serde_json::json!({"removed": removed}))?);
            } else {
                for id in &removed {
                    println!("removed {}/{id}", runs::RUNS_DIR);
                }
                println!(
                    "{} run folder(s) removed, {keep} kept at most",
                    removed.len()
                );
            }
        }
    }
    Ok(Code::Clean)
}

fn to_json<T: serde::Serialize>(value: &T) -> miette::Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| miette::miette!("cannot serialize: {e}"))
}
