//! `switchboard knowledge …`: analyse files into `.switchboard/knowledge.db` and look at what is
//! stored (search, show, stale), or clean it up (forget, gc, export).

use miette::IntoDiagnostic;
use std::io::IsTerminal;

use super::Code;
use crate::knowledge::{KnowledgeError, Store};
use crate::runtime::analyze::{AnalyzeError, FileReport};
use crate::runtime::{RunOptions, Session};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Analyse files (folders: every file under them) and store what is learned
    Analyze {
        /// Files or folders, relative to the project root
        #[arg(required = true)]
        paths: Vec<String>,
        /// What to pay attention to (e.g. "error handling")
        #[arg(long, default_value = "")]
        focus: String,
        /// Model for the analyzer, as provider/model (default: its own, else offline)
        #[arg(long, value_name = "PROVIDER/MODEL")]
        model: Option<String>,
        /// Print one JSON object per file
        #[arg(long)]
        json: bool,
    },
    /// Stored notes matching a query, best first, with provenance
    Search {
        query: String,
        /// Only notes from this file or folder
        #[arg(long)]
        path: Option<String>,
        /// Only notes of this kind (heading, definition, symbol, decision, fact, focus)
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Everything stored about one file, as JSON
    Show { path: String },
    /// Analysed files that changed or disappeared since
    Stale {
        #[arg(long)]
        json: bool,
    },
    /// Supersede what is stored about a file or folder (gc deletes it)
    Forget { path: String },
    /// Delete superseded knowledge for good and compact the store
    Gc,
    /// Print all current knowledge as JSON
    Export {
        /// JSON is the only format; the flag is accepted for clarity
        #[arg(long)]
        json: bool,
    },
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    match args.command {
        Sub::Analyze {
            paths,
            focus,
            model,
            json,
        } => analyze(global, &paths, &focus, model, json),
        other => {
            let project = super::open_project(global)?;
            let mut store = Store::open(&project).into_diagnostic()?;
            inspect(&mut store, other)
        }
    }
}

fn inspect(store: &mut Store, sub: Sub) -> miette::Result<Code> {
    let print_json = |v: &serde_json::Value| {
        println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    };
    match sub {
        Sub::Search {
            query,
            path,
            kind,
            limit,
            json,
        } => {
            let notes = store
                .recall(&query, path.as_deref(), kind.as_deref(), limit.max(1))
                .into_diagnostic()?;
            if json {
                print_json(&serde_json::to_value(&notes).into_diagnostic()?);
            } else {
                print!("{}", crate::tools::recall::render(&query, &notes));
            }
        }
        Sub::Show { path } => {
            let shown = store.show(&path).into_diagnostic()?;
            if shown.is_empty() {
                eprintln!("nothing stored about `{path}`; `switchboard knowledge analyze {path}` stores it");
                return Ok(Code::Findings);
            }
            print_json(&serde_json::Value::Array(shown));
        }
        Sub::Stale { json } => {
            let stale = store.stale().into_diagnostic()?;
            if json {
                print_json(&serde_json::to_value(&stale).into_diagnostic()?);
            } else {
                for s in &stale {
                    println!("{}  analysed {}  {}", s.path, s.analysed_at, s.checksum);
                }
                println!(
                    "{} stale of {} analysed",
                    stale.len(),
                    store.sources().into_diagnostic()?.len()
                );
            }
            return Ok(if stale.is_empty() {
                Code::Clean
            } else {
                Code::Findings
            });
        }
        Sub::Forget { path } => {
            let now = crate::runtime::events::timestamp(chrono::Utc::now());
            let n = store.forget(&path, &now).into_diagnostic()?;
            println!(
                "{n} analysis(es) of `{path}` superseded; `switchboard knowledge gc` deletes them"
            );
        }
        Sub::Gc => {
            let r = store.gc().into_diagnostic()?;
            println!(
                "deleted {} superseded analyses and {} superseded notes",
                r.sources, r.notes
            );
        }
        Sub::Export { .. } => print_json(&store.export().into_diagnostic()?),
        Sub::Analyze { .. } => unreachable!("handled by run"),
    }
    Ok(Code::Clean)
}

/// Files named, with folders expanded to the files under them (walked like `glob`: ignored and
/// hidden files stay out). The flag says whether a file came from a folder (then a binary file
/// is skipped, not an error).
fn expand(
    project: &crate::project::Project,
    names: &[String],
) -> miette::Result<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for name in names {
        let abs = project
            .resolve(name)
            .map_err(|e| miette::miette!("`{name}`: {e}"))?;
        if abs.is_dir() {
            let mut files: Vec<String> = crate::tools::walk_files(project, &abs)
                .map(|(rel, _)| rel)
                .collect();
            files.sort();
            out.extend(files.into_iter().map(|f| (f, true)));
        } else {
            out.push((name.clone(), false));
        }
    }
    Ok(out)
}

/// The bar `knowledge analyze` draws on a terminal: files done of all, the file being analysed.
fn progress_bar(files: &[String]) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(files.len() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files, {elapsed} {wide_msg}")
    {
        bar.set_style(style);
    }
    bar.set_message(files.first().cloned().unwrap_or_default());
    bar
}

fn analyze(
    global: &super::Global,
    names: &[String],
    focus: &str,
    model: Option<String>,
    json: bool,
) -> miette::Result<Code> {
    let ctx = super::run::context(global)?;
    let files = expand(&ctx.project, names)?;
    let list: Vec<String> = files.iter().map(|(f, _)| f.clone()).collect();
    let options = RunOptions {
        model,
        ..RunOptions::default()
    };
    let session = Session::for_agent(
        ctx.project,
        ctx.agents,
        ctx.config,
        ctx.models,
        options,
        crate::knowledge::ANALYZER_AGENT,
        &format!("knowledge analyze {}", names.join(" ")),
    )
    .into_diagnostic()?;
    // A bar only for people: stderr a terminal, no --json, more than one file. Elsewhere
    // nothing is drawn, so logs and pipes see exactly the per-file lines.
    let bar =
        (std::io::stderr().is_terminal() && !json && list.len() > 1).then(|| progress_bar(&list));
    let (drawn, names) = (bar.clone(), list.clone());
    let progress = move |done: usize, total: usize, _: &Result<FileReport, AnalyzeError>| {
        if let Some(bar) = &drawn {
            bar.set_position(done as u64);
            match names.get(done) {
                Some(next) if done < total => bar.set_message(next.clone()),
                _ => bar.finish_and_clear(),
            }
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()?;
    let (results, _outcome) = runtime.block_on(session.analyse_files(&list, focus, &progress));
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let (mut analysed, mut unchanged, mut skipped, mut failed) = (0, 0, 0, 0);
    for ((name, from_folder), r) in files.iter().zip(&results) {
        let line = match r {
            Ok(f) if f.reused => {
                unchanged += 1;
                serde_json::json!({"path": f.path, "status": "unchanged"})
            }
            Ok(f) => {
                analysed += 1;
                let o = f.outcome.clone().unwrap_or_default();
                let mut line = serde_json::json!({"path": f.path, "status": "analysed",
                    "chunks": f.chunks, "notes_new": o.notes_new,
                    "notes_reinforced": o.notes_reinforced, "entities": o.entities,
                    "relations": o.relations, "superseded": o.superseded.is_some()});
                if let Some(e) = &f.embeddings_error {
                    line["embeddings_error"] = e.clone().into();
                    if !json {
                        eprintln!(
                            "warning   {}: {e}; near-duplicates were found by text similarity",
                            f.path
                        );
                    }
                }
                line
            }
            Err(AnalyzeError::Knowledge(KnowledgeError::Binary { .. })) if *from_folder => {
                skipped += 1;
                serde_json::json!({"path": name, "status": "skipped", "reason": "binary"})
            }
            Err(e) => {
                failed += 1;
                serde_json::json!({"path": name, "status": "failed", "error": e.to_string()})
            }
        };
        if json {
            println!("{line}");
        } else {
            match line["status"].as_str() {
                Some("analysed") => println!(
                    "analysed  {}  {} chunk(s), {} notes new, {} reinforced, {} entities, {} relations{}",
                    line["path"].as_str().unwrap_or(""),
                    line["chunks"], line["notes_new"], line["notes_reinforced"],
                    line["entities"], line["relations"],
                    if line["superseded"] == true { " (previous analysis superseded)" } else { "" }
                ),
                Some("unchanged") => println!("unchanged {}", line["path"].as_str().unwrap_or("")),
                Some("skipped") => println!("skipped   {} (binary)", name),
                _ => eprintln!("failed    {}: {}", name, line["error"].as_str().unwrap_or("")),
            }
        }
    }
    if !json {
        println!("{analysed} analysed, {unchanged} unchanged, {skipped} skipped, {failed} failed");
    }
    Ok(if failed == 0 {
        Code::Clean
    } else {
        Code::Findings
    })
}
