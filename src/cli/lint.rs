//! `switchboard lint`: problems in agent definitions, delegations, contracts and cited evidence.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{print_diagnostics, Code, Global};
use crate::lint::Linter;
use crate::problem::Problem;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only report findings in these files or folders (the whole project is still read, since
    /// graph rules need every agent)
    paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Shorthand for --format json
    #[arg(long, hide = true)]
    json: bool,
    /// Re-lint on every change and print only what changed
    #[arg(long)]
    watch: bool,
    /// Exit 1 on findings of this severity too (`--deny warnings`, for CI)
    #[arg(long, value_enum, value_name = "LEVEL")]
    deny: Option<Deny>,
}

/// What `--deny` makes fail besides errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Deny {
    Warnings,
}

/// One lint pass over the project as it is now, keeping the findings under `paths`.
fn pass(linter: &mut Linter, paths: &[String]) -> Vec<Problem> {
    let mut findings = linter.run();
    if !paths.is_empty() {
        findings.retain(|d| {
            paths
                .iter()
                .any(|p| d.file == *p || d.file.starts_with(&format!("{p}/")))
        });
    }
    findings
}

pub fn run(global: &Global, args: Args) -> miette::Result<Code> {
    let format = if args.json { Format::Json } else { args.format };
    let project = super::open_project(global)?;
    let mut paths = Vec::new();
    for p in &args.paths {
        let abs = std::fs::canonicalize(p)
            .map_err(|e| miette::miette!("cannot lint {}: {e}", p.display()))?;
        if !abs.starts_with(project.root()) {
            return Err(miette::miette!(
                help = "pass files or folders inside the project, or point --root at the project \
                        that holds them",
                "{} is outside the project root {}",
                p.display(),
                project.root().display()
            ));
        }
        paths.push(project.relative(&abs));
    }
    paths.retain(|p| !p.is_empty());
    let options = crate::agent::LoadOptions {
        extra_dirs: global.agent_dirs.clone(),
        only_extra: global.only_agents,
    };
    let mut linter = Linter::new(project.clone(), options);
    let findings = pass(&mut linter, &paths);
    print(format, &findings);
    if args.watch {
        return watch(&mut linter, &project, &paths, format, findings);
    }
    let warned = findings
        .iter()
        .any(|d| d.severity >= crate::problem::Severity::Warning);
    let denied = args.deny == Some(Deny::Warnings) && warned;
    Ok(Code::findings_if(
        denied || crate::lint::exit_code(&findings) != 0,
    ))
}

fn print(format: Format, findings: &[Problem]) {
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(findings).unwrap_or_default()
        ),
        Format::Sarif => println!(
            "{}",
            serde_json::to_string_pretty(&crate::lint::sarif::to_sarif(findings))
                .unwrap_or_default()
        ),
        Format::Human if findings.is_empty() => eprintln!("no problems"),
        Format::Human => print_diagnostics(findings),
    }
}

/// Watches the project and re-lints after each burst of changes, printing only the findings that
/// appeared or went away. Runs until interrupted.
fn watch(
    linter: &mut Linter,
    project: &crate::project::Project,
    paths: &[String],
    format: Format,
    mut previous: Vec<Problem>,
) -> miette::Result<Code> {
    use notify::{RecursiveMode, Watcher};
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(e) = event {
            if e.paths
                .iter()
                .any(|p| p.extension().is_some_and(|x| x == "md" || x == "toml"))
            {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|e| miette::miette!("cannot watch files: {e}"))?;
    watcher
        .watch(project.root(), RecursiveMode::Recursive)
        .map_err(|e| miette::miette!("cannot watch {}: {e}", project.root().display()))?;
    eprintln!("watching {} (Ctrl-C to stop)", project.root().display());
    while rx.recv().is_ok() {
        // Let a burst of events (an editor's save) settle into one re-lint.
        while rx.recv_timeout(Duration::from_millis(30)).is_ok() {}
        let current = pass(linter, paths);
        let (added, fixed) = crate::lint::diff(&previous, &current);
        if added.is_empty() && fixed.is_empty() {
            continue;
        }
        match format {
            Format::Human => {
                for d in &fixed {
                    eprintln!(
                        "fixed: {}[{}] {}: {}",
                        d.severity,
                        d.code,
                        d.location(),
                        d.message
                    );
                }
                print_diagnostics(&added.into_iter().cloned().collect::<Vec<_>>());
            }
            _ => println!("{}", serde_json::json!({ "added": added, "fixed": fixed })),
        }
        previous = current;
    }
    Ok(Code::Clean)
}
