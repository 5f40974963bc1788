//! `switchboard eval SUITE --model M [--runs N] [--json]`: runs a suite of tasks and prints,
//! per agent, the share of answers conformant first time (whole contract, and shape alone),
//! after repairs, through the fallback, and failed; delegations made of those expected;
//! evidence items verified; tokens and time (see `crate::eval`).

use miette::IntoDiagnostic;
use std::path::PathBuf;

use super::Code;
use crate::eval::{load_suite, run_suite, AgentScore, EvalContext, EvalReport};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite: a YAML file of tasks (agent, prompt, expect), e.g. evals/agents.yaml
    pub suite: PathBuf,
    /// Model for every hop, as provider/model (e.g. local/.cache/models/smollm2-135m-instruct.gguf)
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: String,
    /// How many times to run every task
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub runs: u32,
    /// Print one JSON object (model, runs, per-agent counts, errors)
    #[arg(long)]
    pub json: bool,
    /// Local models decode freely, without the contract's grammar (`[providers.local] grammar
    /// = false`): the comparison the grammar is measured against
    #[arg(long)]
    pub no_grammar: bool,
    /// Wall-clock seconds a hop may take when its agent sets no `budget.wall_seconds`; a
    /// primary's hop includes its whole delegation
    #[arg(long, value_name = "SECS", default_value_t = super::run::DEFAULT_HOP_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub hop_timeout: u64,
    /// Leave the files each session writes where they are, for the sessions after it to see;
    /// by default the new ones are moved into the session's run folder
    /// (`.switchboard/runs/<id>/written/`) once it is judged
    #[arg(long)]
    pub keep_written: bool,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let mut ctx = super::run::context(global)?;
    if args.no_grammar {
        let mut providers = ctx.config.providers.clone();
        providers
            .entry(crate::model::local::PROVIDER.to_string())
            .or_default()
            .insert("grammar".into(), toml::Value::Boolean(false));
        ctx.models = std::sync::Arc::new(crate::model::Registry::with_builtins(
            crate::model::ProviderContext {
                project_root: ctx.project.root().to_path_buf(),
                providers,
                stream: global.no_stream.then_some(false),
            },
        ));
    }
    let suite = load_suite(&args.suite, &ctx.agents).into_diagnostic()?;
    // Build the model once up front, so a bad name is one error rather than one per session.
    ctx.models.get(&args.model).into_diagnostic()?;
    let eval = EvalContext {
        project: ctx.project,
        agents: ctx.agents,
        config: ctx.config,
        models: ctx.models,
        hop_timeout: std::time::Duration::from_secs(args.hop_timeout),
        keep_written: args.keep_written,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()?;
    let quiet = args.json;
    let progress = move |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let report = runtime.block_on(run_suite(
        &eval,
        &suite,
        &args.model,
        args.runs.max(1),
        &progress,
        super::signal::stop_requested(),
    ));
    if args.json {
        let text = serde_json::to_string_pretty(&report).into_diagnostic()?;
        println!("{text}");
    } else {
        print_table(&report);
    }
    Ok(if report.errors.is_empty() {
        Code::Clean
    } else {
        Code::Findings
    })
}

fn print_table(report: &EvalReport) {
    println!("model {} · {} run(s)", report.model, report.runs);
    println!(
        "{:<24} {:>5} {:>6} {:>6} {:>8} {:>8} {:>6} {:>9} {:>8} {:>9} {:>8}",
        "agent",
        "hops",
        "shape",
        "first",
        "repaired",
        "fallback",
        "failed",
        "delegated",
        "evidence",
        "tokens",
        "tok/s"
    );
    let total = report.total();
    for (agent, s) in report
        .agents
        .iter()
        .chain(std::iter::once((&"all".to_string(), &total)))
    {
        println!("{:<24} {}", agent, row(s));
    }
    if !report.primaries.is_empty() {
        println!();
        println!(
            "{:<12} {:>8} {:>6} {:>9} {:>7} {:>9} {:>8} {:>7} {:>9} {:>8} {:>9}",
            "primary",
            "sessions",
            "passed",
            "delivered",
            "planned",
            "delegated",
            "evidence",
            "sources",
            "done-w/o",
            "tok/sess",
            "s/sess"
        );
        for (agent, p) in &report.primaries {
            let (tokens, seconds) = p.per_session();
            println!(
                "{:<12} {:>8} {:>6} {:>9} {:>7} {:>9} {:>8} {:>7} {:>9} {:>8.0} {:>9.1}",
                agent,
                p.sessions,
                p.passed,
                p.delivered,
                p.planned,
                p.with_delegation,
                p.evidence_verified,
                format!("{}/{}", p.sources_cited, p.sources_expected),
                p.completed_without_deliverable,
                tokens,
                seconds
            );
        }
    }
    if !report.set_aside.is_empty() {
        let files: usize = report.set_aside.iter().map(|s| s.files.len()).sum();
        println!();
        println!(
            "{files} file(s) the sessions wrote were set aside in their run folders \
             (.switchboard/runs/<id>/written/), so each session started from the same tree"
        );
    }
    for e in &report.errors {
        println!("error: {e}");
    }
}

fn row(s: &AgentScore) -> String {
    let pct = |n: u64| format!("{:.0}%", 100.0 * s.share(n));
    let delegated = if s.delegations_expected == 0 {
        "-".to_string()
    } else {
        format!("{}/{}", s.delegations_made, s.delegations_expected)
    };
    let rate = if s.seconds > 0.0 {
        format!("{:.1}", s.output_tokens as f64 / s.seconds)
    } else {
        "-".into()
    };
    let evidence = if s.evidence_items == 0 {
        "-".to_string()
    } else {
        format!("{}/{}", s.evidence_verified, s.evidence_items)
    };
    format!(
        "{:>5} {:>6} {:>6} {:>8} {:>8} {:>6} {:>9} {:>8} {:>9} {:>8}",
        s.hops,
        pct(s.shape_first_time),
        pct(s.first_time),
        pct(s.after_repairs),
        pct(s.fallback),
        pct(s.failed),
        delegated,
        evidence,
        s.input_tokens + s.output_tokens,
        rate
    )
}
