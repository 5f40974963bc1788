//! `switchboard trace SESSION`: the hop tree with agent, status, duration, tokens and contract
//! result.

use crate::runtime::trace::{self, HopNode};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id (see `switchboard sessions`)
    pub session: String,
    /// Print the tree as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(global: &super::Global, args: Args) -> u8 {
    let project = match super::open_project(global) {
        Ok(p) => p,
        Err(e) => return super::report_error(e),
    };
    let t = match trace::load(&project, &args.session) {
        Ok(t) => t,
        Err(e) => return super::report_error(miette::miette!("{e}")),
    };
    if args.json {
        match serde_json::to_string_pretty(&t) {
            Ok(s) => println!("{s}"),
            Err(e) => return super::report_error(miette::miette!("{e}")),
        }
        return 0;
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
    0
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
    if let Some(e) = &n.error {
        line.push_str(&format!("  error: {}", e.lines().next().unwrap_or("")));
    }
    println!("{line}");
    for c in &n.children {
        print_node(c, indent + 1);
    }
}
