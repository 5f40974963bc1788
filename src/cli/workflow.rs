//! `switchboard workflow`: the checkpoint-workflow runs of the project (`.switchboard/workflows/`)
//! — list them, show one with its step history and execution log, say where one stands, reset a
//! step for another attempt, or abort a run.

use serde_json::json;

use super::Code;
use crate::workflow::{self, engine, state, RunStatus, State};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// List the workflow runs, oldest first
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Show a run: every step with its attempts and history, and the execution log
    Show {
        id: String,
        /// Print JSON (the state file and the log)
        #[arg(long)]
        json: bool,
    },
    /// Where a run stands: its status, the accepted steps and the next one
    Status {
        id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Reset a step (and the steps that depend on it) so it is reported again; history is kept
    Retry {
        id: String,
        step: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Stop a run for good
    Abort {
        id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let project = super::open_project(global)?;
    match args.command {
        Sub::List { json } => {
            let runs = state::list(&project);
            if json {
                let rows: Vec<serde_json::Value> = runs.iter().map(summary).collect();
                println!("{}", serde_json::Value::Array(rows));
            } else if runs.is_empty() {
                println!("no workflow runs under {}/", state::WORKFLOWS_DIR);
            } else {
                for s in &runs {
                    let (done, total) = progress(s);
                    println!(
                        "{}  {:<10} {:<8} {:<12} {done}/{total} steps  {}",
                        s.id,
                        s.workflow,
                        s.status.as_str(),
                        s.agent,
                        s.document.as_deref().unwrap_or("")
                    );
                }
            }
            Ok(Code::Clean)
        }
        Sub::Show { id, json } => {
            let s = load(&project, &id)?;
            let log = state::read_log(&project, &id).map_err(|e| miette::miette!("{e}"))?;
            if json {
                println!("{}", json!({"state": s, "log": log}));
                return Ok(Code::Clean);
            }
            println!(
                "{}  workflow {}  agent {}  {}",
                s.id,
                s.workflow,
                s.agent,
                s.status.as_str()
            );
            println!("task: {}", s.task.lines().next().unwrap_or(""));
            if let Some(d) = &s.document {
                println!("document: {d}");
            }
            if let Some(r) = &s.reason {
                println!("reason: {r}");
            }
            for name in ordered_steps(&project, &s) {
                let Some(r) = s.steps.get(&name) else {
                    continue;
                };
                println!("\n{name}: {:?} ({} attempt(s))", r.status, r.attempts);
                for h in &r.history {
                    println!("  #{} {} {}", h.attempt, h.at, h.action);
                    for e in &h.errors {
                        println!("      {e}");
                    }
                }
            }
            println!("\nexecution log: {} line(s)", log.len());
            for l in &log {
                let note = l
                    .note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                println!("  {} {} {}{note}", l.at, l.step, l.action);
            }
            Ok(Code::Clean)
        }
        Sub::Status { id, json } => {
            let s = load(&project, &id)?;
            let next = next_of(&project, &s);
            let accepted: Vec<String> = ordered_steps(&project, &s)
                .into_iter()
                .filter(|n| s.is_accepted(n))
                .collect();
            if json {
                println!(
                    "{}",
                    json!({"id": s.id, "workflow": s.workflow, "status": s.status.as_str(),
                           "accepted": accepted, "next": next, "document": s.document,
                           "reason": s.reason})
                );
            } else {
                println!("{}: {}", s.id, s.status.as_str());
                println!(
                    "accepted: {}",
                    if accepted.is_empty() {
                        "none".to_string()
                    } else {
                        accepted.join(", ")
                    }
                );
                if let Some(n) = &next {
                    if matches!(s.status, RunStatus::Open | RunStatus::Waiting) {
                        println!("next: {n}");
                    }
                }
                if let Some(d) = &s.document {
                    println!("document: {d}");
                }
                if let Some(r) = &s.reason {
                    println!("reason: {r}");
                }
            }
            Ok(Code::Clean)
        }
        Sub::Retry { id, step, json } => {
            let mut s = load(&project, &id)?;
            let wf = workflow::find(&project, &s.workflow).map_err(|e| miette::miette!("{e}"))?;
            engine::retry(&wf, &mut s, &step).map_err(|e| miette::miette!("{e}"))?;
            save_and_log(&project, &mut s, &step, "RETRY")?;
            if json {
                println!(
                    "{}",
                    json!({"id": s.id, "step": step, "status": s.status.as_str()})
                );
            } else {
                println!(
                    "{}: step `{step}` and the steps after it that depend on it will be reported again (history kept)",
                    s.id
                );
            }
            Ok(Code::Clean)
        }
        Sub::Abort { id, json } => {
            let mut s = load(&project, &id)?;
            engine::abort(&mut s, "aborted from the command line");
            save_and_log(&project, &mut s, "-", "ABORT")?;
            if json {
                println!("{}", json!({"id": s.id, "status": s.status.as_str()}));
            } else {
                println!("{}: aborted", s.id);
            }
            Ok(Code::Clean)
        }
    }
}

fn load(project: &crate::project::Project, id: &str) -> miette::Result<State> {
    state::load(project, id)
        .map_err(|e| miette::miette!(help = "`switchboard workflow list` shows the runs", "{e}"))
}

fn save_and_log(
    project: &crate::project::Project,
    s: &mut State,
    step: &str,
    action: &str,
) -> miette::Result<()> {
    state::save(project, s).map_err(|e| miette::miette!("{e}"))?;
    let line = state::LogLine {
        at: state::now(),
        step: step.to_string(),
        action: action.to_string(),
        attempt: 0,
        errors: Vec::new(),
        note: Some("from the command line".into()),
    };
    state::append_log(project, &s.id, &line).map_err(|e| miette::miette!("{e}"))
}

/// The run's steps in workflow order when the workflow still loads, else by name.
fn ordered_steps(project: &crate::project::Project, s: &State) -> Vec<String> {
    match workflow::find(project, &s.workflow) {
        Ok(wf) => wf.names().into_iter().map(str::to_string).collect(),
        Err(_) => s.steps.keys().cloned().collect(),
    }
}

fn next_of(project: &crate::project::Project, s: &State) -> Option<String> {
    ordered_steps(project, s)
        .into_iter()
        .find(|n| !s.is_accepted(n))
}

fn progress(s: &State) -> (usize, usize) {
    let done = s
        .steps
        .values()
        .filter(|r| r.status == workflow::StepStatus::Accepted)
        .count();
    (done, s.steps.len())
}

fn summary(s: &State) -> serde_json::Value {
    let (done, total) = progress(s);
    json!({"id": s.id, "workflow": s.workflow, "agent": s.agent, "status": s.status.as_str(),
           "session_id": s.session_id, "accepted": done, "steps": total,
           "created_at": s.created_at, "updated_at": s.updated_at, "document": s.document})
}
