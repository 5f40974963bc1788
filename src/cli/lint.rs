//! `switchboard lint`: problems in agent definitions and delegations.

use super::{load_agents, print_diagnostics, Global};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print findings as a JSON array instead of compiler-style text
    #[arg(long)]
    json: bool,
}

pub fn run(global: &Global, args: Args) -> u8 {
    let (_project, set) = match load_agents(global) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let findings = crate::lint::lint(&set);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings).unwrap_or_default()
        );
    } else if findings.is_empty() {
        eprintln!("{} agents, no problems", set.len());
    } else {
        print_diagnostics(&findings);
    }
    crate::lint::exit_code(&findings)
}
