//! `switchboard check`: subagent answers against the envelope contract.
//!
//! Exit codes ([`super::Code`]): 0 every file conforms, 1 some file violates its contract, 2 could
//! not run (unknown contract or agent, bad arguments: the error is returned and printed once by
//! `cli::main`; or some file could not be read: reported in line with the others, since the rest
//! were still checked).

use crate::contract::{
    check_envelope, CheckContext, Contract, ContractDecl, Envelope, FileCache, Report, Rule,
};
use serde::Serialize;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Compiler-style diagnostics
    Human,
    /// One JSON object with `files` and `violations`
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Answer files to check; `-` reads standard input
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// Check against the contract this agent declares in its frontmatter (agents are found as
    /// `switchboard agents` finds them)
    #[arg(long, value_name = "NAME", conflicts_with = "contract")]
    pub agent: Option<String>,
    /// Check against a built-in contract (`envelope`, `document-analysis`) or a contract YAML file;
    /// without it (and without --agent) the contract is chosen by each answer's `message_type`
    #[arg(long, value_name = "NAME")]
    pub contract: Option<String>,
    /// The correlation id the answers must carry
    #[arg(long, value_name = "ID")]
    pub correlation_id: Option<String>,
    /// The message id the answers must carry
    #[arg(long, value_name = "ID")]
    pub message_id: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

pub fn run(global: &super::Global, args: Args) -> miette::Result<super::Code> {
    let (project, fixed) = match &args.agent {
        Some(name) => {
            let (project, set) = super::load_agents(global)?;
            (project, Some(agent_contract(&set, name)?))
        }
        None => {
            let project = super::open_project(global)?;
            let contract = args.contract.as_deref().map(load_contract).transpose()?;
            (project, contract)
        }
    };

    let files = FileCache::new();
    let mut ctx = CheckContext::new(&project, &files);
    ctx.correlation_id = args.correlation_id.as_deref();
    ctx.message_id = args.message_id.as_deref();

    let color = args.format == Format::Human
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut json = JsonOutput::default();
    let (mut failed, mut unreadable, mut errors, mut warnings) = (0usize, 0usize, 0usize, 0usize);

    for name in &args.files {
        let shown = if name == "-" {
            "<stdin>"
        } else {
            name.as_str()
        };
        let bytes = match read_input(name) {
            Ok(b) => b,
            Err(e) => {
                unreadable += 1;
                let message = format!("cannot read {shown}: {e}");
                match args.format {
                    Format::Human => eprintln!("error: {message}"),
                    Format::Json => json.files.push(JsonFile {
                        file: shown.to_string(),
                        contract: None,
                        conformant: None,
                        errors: 0,
                        warnings: 0,
                        error: Some(message),
                    }),
                }
                continue;
            }
        };
        let (text, report) = check_bytes(bytes, fixed.as_ref(), &ctx);
        let (e, w) = (report.errors().count(), report.warnings().count());
        errors += e;
        warnings += w;
        if !report.is_conformant() {
            failed += 1;
        }
        match args.format {
            Format::Human => {
                let _ = out.write_all(report.render(shown, &text, color).as_bytes());
            }
            Format::Json => {
                json.files.push(JsonFile {
                    file: shown.to_string(),
                    contract: Some(report.contract.clone()),
                    conformant: Some(report.is_conformant()),
                    errors: e,
                    warnings: w,
                    error: None,
                });
                let index = crate::markdown::LineIndex::new(&text);
                for v in &report.violations {
                    let end = v.span.as_ref().map_or(0, |s| s.end);
                    let (end_line, end_column) = index.line_col(&text, end);
                    json.violations.push(JsonProblem {
                        file: shown.to_string(),
                        line: v.line,
                        column: v.column,
                        end_line,
                        end_column,
                        rule: v.code.to_string(),
                        severity: v.severity.as_str(),
                        message: v.message.clone(),
                        help: v.help.clone(),
                        actual: v.actual.as_ref().map(|a| a.lines.clone()),
                        actual_from: v.actual.as_ref().map(|a| a.from.clone()),
                    });
                }
            }
        }
    }

    let checked = args.files.len() - unreadable;
    match args.format {
        Format::Human => {
            let plural =
                |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
            let mut summary = format!(
                "checked {}: {} conform",
                plural(checked, "file"),
                checked - failed
            );
            if failed > 0 {
                summary.push_str(&format!(
                    ", {failed} do{} not ({}{})",
                    if failed == 1 { "es" } else { "" },
                    plural(errors, "error"),
                    if warnings > 0 {
                        format!(", {}", plural(warnings, "warning"))
                    } else {
                        String::new()
                    }
                ));
            }
            if unreadable > 0 {
                summary.push_str(&format!(
                    "; {} could not be read",
                    plural(unreadable, "file")
                ));
            }
            let _ = writeln!(out, "{summary}");
        }
        Format::Json => {
            let _ = serde_json::to_writer_pretty(&mut out, &json);
            let _ = writeln!(out);
        }
    }
    let _ = out.flush();
    Ok(if unreadable > 0 {
        super::Code::CouldNotRun
    } else {
        super::Code::findings_if(failed > 0)
    })
}

/// Checks raw bytes: invalid UTF-8 is itself a violation, reported at the first bad byte. The
/// bytes become the returned text without a copy: the input is the largest thing in memory.
fn check_bytes(bytes: Vec<u8>, fixed: Option<&Contract>, ctx: &CheckContext) -> (String, Report) {
    match String::from_utf8(bytes) {
        Ok(text) => {
            // A JSON contract (`--agent` naming an agent that owes one) checks the JSON itself.
            if let Some(c) = fixed.filter(|c| c.format == crate::contract::ContractFormat::Json) {
                let report = crate::contract::check(&text, c, ctx);
                return (text, report);
            }
            let env = Envelope::parse_lenient(&text);
            let auto;
            let contract = match fixed {
                Some(c) => c,
                None => {
                    auto = Contract::for_message_type(env.message_type().unwrap_or(""));
                    &auto
                }
            };
            let report = check_envelope(&text, &env, contract, ctx);
            drop(env);
            (text, report)
        }
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let violation = Rule::Encoding.problem(
                at..at + 1,
                format!("the answer is not valid UTF-8 (bad byte at offset {at})"),
            );
            let contract = fixed.map_or_else(|| "envelope".to_string(), |c| c.name.clone());
            let report = Report::new(&text, contract, vec![violation]);
            (text, report)
        }
    }
}

fn read_input(name: &str) -> std::io::Result<Vec<u8>> {
    if name == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(name)
    }
}

/// The settled contract an agent declares.
fn agent_contract(set: &crate::agent::AgentSet, name: &str) -> Result<Contract, miette::Report> {
    let Some(agent) = set.get(name) else {
        if let Some(why) = set.load_failure(name) {
            return Err(miette::miette!("{why}"));
        }
        let names: Vec<&str> = set.iter().map(|a| a.name.as_str()).collect();
        let hint = crate::problem::nearest(name, names.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(miette::miette!(
            help = format!("known agents: {}", names.join(", ")),
            "no agent named `{name}`{hint}"
        ));
    };
    agent.contract.clone().ok_or_else(|| {
        miette::miette!(
            help = "add `contract: envelope` (or another contract) to its frontmatter, or pass \
                    `--contract NAME`",
            "agent `{name}` ({}) declares no contract, so its answers are not checked",
            agent.file
        )
    })
}

/// A built-in contract by name, or a contract declaration in a YAML file.
fn load_contract(name: &str) -> Result<Contract, miette::Report> {
    if let Some(c) = Contract::builtin(name) {
        return Ok(c);
    }
    let path = Path::new(name);
    if !path.is_file() {
        return Err(miette::miette!(
            help = format!(
                "built-ins are: {}; or pass a YAML file holding a contract declaration",
                crate::contract::spec::BUILTIN_NAMES.join(", ")
            ),
            "unknown contract `{name}`"
        ));
    }
    let yaml = std::fs::read_to_string(path)
        .map_err(|e| miette::miette!("cannot read contract file {name}: {e}"))?;
    let decl: ContractDecl = crate::yaml::from_str(&yaml)
        .map_err(|e| miette::miette!("contract file {name} is not a contract declaration: {e}"))?;
    Contract::resolve(&decl).map_err(|e| miette::miette!("contract file {name}: {e}"))
}

#[derive(Debug, Default, Serialize)]
struct JsonOutput {
    files: Vec<JsonFile>,
    violations: Vec<JsonProblem>,
}

#[derive(Debug, Serialize)]
struct JsonFile {
    file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    contract: Option<String>,
    /// `None` when the file could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    conformant: Option<bool>,
    errors: usize,
    warnings: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// One problem as `check --format json` prints it: the keys predate the shared problem type and
/// scripts read them (`rule` for the code, the end of the span, `actual_from` beside `actual`).
#[derive(Debug, Serialize)]
struct JsonProblem {
    file: String,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    rule: String,
    severity: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual_from: Option<String>,
}
