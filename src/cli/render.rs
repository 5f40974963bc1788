//! `switchboard render AGENT`: the system prompt exactly as the model would receive it.

use super::{load_agents, Global, EXIT_ERROR};
use crate::agent::render::PromptContext;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent to render
    agent: String,
    /// Set or override a template variable (repeatable): --var correlation_id=abc
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

pub fn run(global: &Global, args: Args) -> u8 {
    let (project, set) = match load_agents(global) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let Some(agent) = set.get(&args.agent) else {
        let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
        let hint = crate::problem::nearest(&args.agent, names.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        eprintln!(
            "error: no agent named `{}`{hint}; known agents: {}",
            args.agent,
            names.join(", ")
        );
        return EXIT_ERROR;
    };
    let mut context = PromptContext::preview(&project, &set, agent).into_json();
    if let Some(map) = context.as_object_mut() {
        for (k, v) in &args.vars {
            map.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
    }
    match crate::agent::render::render(agent, &context) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("  = help: define it with --var NAME=VALUE, or fix the template");
            EXIT_ERROR
        }
    }
}
