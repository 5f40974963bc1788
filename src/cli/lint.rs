//! `switchboard lint`: problems in agent definitions, delegations, contracts and cited evidence.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{print_diagnostics, Global, EXIT_ERROR};
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

pub fn run(global: &Global, args: Args) -> u8 {
    let format = if args.json { Format::Json } else { args.format };
    let project = match super::open_project(global) {
        Ok(p) => p,
        Err(e) => return super::report_error(e),
    };
    let mut paths = Vec::new();
    for p in &args.paths {
        let abs = std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
        match abs {
            Ok(a) if a.starts_with(project.root()) => paths.push(project.relative(&a)),
            Ok(_) => {
                eprintln!(
                    "error: {} is outside the project root {}",
                    p.display(),
                    project.root().display()
                );
                return EXIT_ERROR;
            }
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_ERROR;
            }
        }
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
    crate::lint::exit_code(&findings)
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
) -> u8 {
    use notify::{RecursiveMode, Watcher};
    let (tx, rx) = mpsc::channel();
    let mut watcher =
        match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(e) = event {
                if e.paths
                    .iter()
                    .any(|p| p.extension().is_some_and(|x| x == "md" || x == "toml"))
                {
                    let _ = tx.send(());
                }
            }
        }) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: cannot watch files: {e}");
                return EXIT_ERROR;
            }
        };
    if let Err(e) = watcher.watch(project.root(), RecursiveMode::Recursive) {
        eprintln!("error: cannot watch {}: {e}", project.root().display());
        return EXIT_ERROR;
    }
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
    0
}
