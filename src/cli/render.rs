//! `switchboard render AGENT`: the system prompt exactly as the model would receive it.

use super::{load_agents, Code, Global};
use crate::agent::render::PromptContext;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent to render
    agent: String,
    /// Set or override a template variable (repeatable): --var correlation_id=abc
    #[arg(long = "var", value_name = "KEY=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
}

/// A `--var` that is not `KEY=VALUE` (clap prints it after the flag it came with).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not KEY=VALUE (write it as --var name=value)")]
struct NotKeyValue(String);

fn parse_var(s: &str) -> Result<(String, String), NotKeyValue> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| NotKeyValue(s.to_string()))
}

pub fn run(global: &Global, args: Args) -> miette::Result<Code> {
    let (project, set) = load_agents(global)?;
    let Some(agent) = set.get(&args.agent) else {
        if let Some(why) = set.load_failure(&args.agent) {
            return Err(miette::miette!("{why}"));
        }
        let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
        let hint = crate::problem::nearest(&args.agent, names.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(miette::miette!(
            help = format!("known agents: {}", names.join(", ")),
            "no agent named `{}`{hint}",
            args.agent
        ));
    };
    let mut context = PromptContext::preview(&project, &set, agent).into_json();
    if let Some(map) = context.as_object_mut() {
        for (k, v) in &args.vars {
            map.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
    }
    let text = crate::agent::render::render(agent, &context).map_err(|e| {
        miette::miette!(
            help = "define it with --var NAME=VALUE, or fix the template",
            "{e}"
        )
    })?;
    print!("{text}");
    Ok(Code::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn var_is_split_at_the_first_equals_sign_and_a_bad_one_says_how() {
        assert_eq!(
            parse_var(" k =a=b"),
            Ok(("k".to_string(), "a=b".to_string()))
        );
        let err = parse_var("=x").unwrap_err();
        assert_eq!(err, NotKeyValue("=x".into()));
        assert!(err.to_string().contains("--var name=value"), "{err}");
        assert!(parse_var("novalue").is_err());
    }
}
