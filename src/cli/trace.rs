//! `switchboard trace SESSION`: the hop tree with agent, status, duration, tokens and contract
//! result.

use miette::IntoDiagnostic;

use super::Code;
use crate::runtime::store;
use crate::runtime::trace::{self, HopNode};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id (see `switchboard sessions`)
    pub session: String,
    /// Print the tree as JSON
    #[arg(long)]
    pub json: bool,
    /// Send the session as an OpenTelemetry trace (OTLP/HTTP) to URL, else to `[telemetry]
    /// otlp_endpoint`, else to http://127.0.0.1:4318
    #[arg(long, value_name = "URL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub otlp: Option<String>,
    /// Write the trace page (one self-contained HTML file) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<Code> {
    let project = super::open_project(global)?;
    if args.otlp.is_some() || args.html.is_some() {
        return export(&project, &args);
    }
    let t = trace::load(&project, &args.session).into_diagnostic()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t).into_diagnostic()?);
        return Ok(Code::Clean);
    }
    println!(
        "session {} ({}), correlation {}, {} hops, {} tokens",
        t.session_id, t.status, t.correlation_id, t.hops, t.tokens
    );
    for bytes in &t.log_repairs {
        println!(
            "log repaired on resume: dropped a torn last line ({bytes} bytes) left by a crash"
        );
    }
    for root in &t.roots {
        print_node(root, 0);
    }
    Ok(Code::Clean)
}

/// `--otlp` and `--html`: the session's log, sent as spans and/or written as a page.
fn export(project: &crate::project::Project, args: &Args) -> miette::Result<Code> {
    let log = store::log_path(project, &args.session).into_diagnostic()?;
    if let Some(file) = &args.html {
        let page = crate::report::render_log(&log).into_diagnostic()?;
        std::fs::write(file, &page)
            .map_err(|e| miette::miette!("cannot write {}: {e}", file.display()))?;
        println!("wrote {} ({} bytes)", file.display(), page.len());
    }
    if let Some(flag) = &args.otlp {
        let config = crate::config::Config::load(project).into_diagnostic()?;
        let Some(telemetry) = super::run::start_telemetry("--otlp", Some(flag), &config)? else {
            return Ok(Code::Clean);
        };
        let events = store::read(&log).into_diagnostic()?;
        telemetry.replay(&events);
        let failed = telemetry.shutdown();
        if failed > 0 {
            // The warning above said why.
            return Err(miette::miette!(
                "the session's trace was not exported ({failed} failed export(s))"
            ));
        }
        println!(
            "exported session {} ({} events)",
            args.session,
            events.len()
        );
    }
    Ok(Code::Clean)
}

fn print_node(n: &HopNode, indent: usize) {
    let duration = n
        .duration_ms
        .map_or("-".to_string(), |d| format!("{:.1} ms", d));
    let contract = match n.conformant {
        None => "no contract".to_string(),
        Some(true) if n.repairs > 0 => format!("conformant after {} repair(s)", n.repairs),
        Some(true) => "conformant".to_string(),
        Some(false) => format!("{} violation(s)", n.violations),
    };
    let mut line = format!(
        "{}{} [{}] {}  {}  {} tokens  {}",
        "  ".repeat(indent),
        n.agent,
        n.message_id,
        n.status,
        duration,
        n.tokens,
        contract
    );
    if n.reused {
        line.push_str("  (reused on resume)");
    }
    if n.attempts > 1 {
        line.push_str(&format!("  attempt {}", n.attempts));
    }
    let pad = "  ".repeat(indent + 2);
    if let Some(e) = &n.error {
        // The whole error: its first line on the hop's line, the rest indented below it.
        let mut lines = e.lines();
        line.push_str(&format!("  error: {}", lines.next().unwrap_or("")));
        for rest in lines {
            line.push_str(&format!("\n{pad}{rest}"));
        }
    }
    // Every violation, unless the error above already lists it.
    for v in &n.violation_list {
        if !n.error.as_deref().is_some_and(|e| e.contains(&v.message)) {
            let at = if v.line > 0 {
                format!("line {}: ", v.line)
            } else {
                String::new()
            };
            line.push_str(&format!("\n{pad}- {at}[{}] {}", v.code, v.message));
        }
    }
    if let Some(p) = &n.plan {
        let how = if p.via == "plan" {
            "its `plan` call".to_string()
        } else if p.fallback {
            format!("`{}` (its declared fallback)", p.via)
        } else {
            format!("`{}`", p.via)
        };
        let opened = if p.allowed.is_empty() {
            "nothing".to_string()
        } else {
            p.allowed.join(", ")
        };
        line.push_str(&format!(
            "\n{pad}plan from {how} passed `{}`: sources {} → {opened}",
            p.contract,
            if p.sources.is_empty() {
                "none".to_string()
            } else {
                p.sources.join(", ")
            },
        ));
        if let Some(t) = p.plan.get("request_type").and_then(|v| v.as_str()) {
            line.push_str(&format!(" ({t})"));
        }
    }
    if !n.gate_refusals.is_empty() {
        line.push_str(&format!(
            "\n{pad}gate refused {} call(s): {}",
            n.gate_refusals.len(),
            n.gate_refusals.join(", ")
        ));
    }
    println!("{line}");
    for c in &n.children {
        print_node(c, indent + 1);
    }
}
