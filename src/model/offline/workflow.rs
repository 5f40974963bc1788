//! What a lead's prompt documents about its workflow: the `task(...)` examples (which agent
//! locates, which analyzes, and the prompt each gets), where the report goes, the correlation id
//! and the report template. Read from the prompt, never assumed from agent names.

use regex::Regex;
use std::sync::LazyLock;

use super::parse;
use crate::markdown::CodeMap;

/// A `task(...)` example in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub subagent: String,
    pub prompt: String,
}

/// What the prompt documents about the workflow and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub locator: Option<String>,
    pub analyzer: Option<String>,
    /// The analyze example's prompt, whose path is replaced by each located document.
    pub analyze_example: Option<Example>,
    /// The folder reports go to, e.g. `thoughts/shared/research/`.
    pub report_dir: String,
    pub today: String,
    pub correlation_id: String,
    /// The report template (a fenced markdown block with frontmatter), if the prompt has one.
    pub template: Option<String>,
}

static SUBAGENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"subagent_type["']?\s*[:=]\s*["']([A-Za-z0-9_./-]+)["']"#).expect("static regex")
});
static PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bprompt"?\s*[:=]\s*"((?:[^"\\]|\\.)*)""#).expect("static regex")
});
static REPORT_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"`([A-Za-z0-9_./-]+/)(\d{4}-\d{2}-\d{2})?-?(?:\{\{\s*today\s*\}\}-)?<slug>\.md`")
        .expect("static regex")
});
static CORRELATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)correlation[ _]id(?: is)?:?\s*`?([A-Za-z0-9._:-]+)`?").expect("static regex")
});
static BACKTICK_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([a-z0-9][a-z0-9_-]*)`").expect("static regex"));

/// The `task(...)` examples in the prompt's code blocks, in order.
pub fn examples(system: &str) -> Vec<Example> {
    let mut out = Vec::new();
    for block in CodeMap::new(system).blocks {
        let content = &block.content;
        for cap in SUBAGENT.captures_iter(content) {
            let Some(m) = cap.get(1) else { continue };
            // The prompt that follows this subagent_type, before the next example.
            let rest = &content[m.end()..];
            let next = SUBAGENT.find(rest).map_or(rest.len(), |n| n.start());
            let prompt = PROMPT
                .captures(&rest[..next])
                .and_then(|c| c.get(1))
                .map(|p| p.as_str().replace("\\\"", "\""))
                .unwrap_or_default();
            out.push(Example {
                subagent: m.as_str().to_string(),
                prompt,
            });
        }
    }
    out
}

impl Workflow {
    pub fn from_prompt(system: &str) -> Self {
        let examples = examples(system);
        let analyze_at = examples
            .iter()
            .position(|e| !parse::paths_in(&e.prompt).is_empty());
        let analyze_example = analyze_at.map(|i| examples[i].clone());
        let analyzer = analyze_example.as_ref().map(|e| e.subagent.clone());
        let mut locator = analyze_at.and_then(|i| {
            examples[..i]
                .iter()
                .rev()
                .find(|e| {
                    parse::paths_in(&e.prompt).is_empty() && Some(&e.subagent) != analyzer.as_ref()
                })
                .map(|e| e.subagent.clone())
        });
        if locator.is_none() {
            if let Some(a) = &analyzer {
                locator = companion(system, a);
            }
        }
        let (report_dir, today) = match REPORT_TARGET.captures(system) {
            Some(c) => (
                c.get(1)
                    .map_or("thoughts/shared/research/", |m| m.as_str())
                    .to_string(),
                c.get(2).map(|m| m.as_str().to_string()),
            ),
            None => ("thoughts/shared/research/".to_string(), None),
        };
        let today = today.unwrap_or_else(|| super::date_of(None));
        let correlation_id = CORRELATION
            .captures(system)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().trim_end_matches(['.', ':']).to_string())
            .filter(|s| !s.is_empty() && !s.contains('{'))
            .unwrap_or_else(|| "offline".to_string());
        Workflow {
            locator,
            analyzer,
            analyze_example,
            report_dir,
            today,
            correlation_id,
            template: template(system),
        }
    }
}

/// Another agent named on a delegation line that names `analyzer`.
fn companion(system: &str, analyzer: &str) -> Option<String> {
    let needle = format!("`{analyzer}`");
    system
        .lines()
        .filter(|l| l.contains(&needle) && l.to_lowercase().contains("delegat"))
        .flat_map(|l| BACKTICK_NAME.captures_iter(l).filter_map(|c| c.get(1)))
        .map(|m| m.as_str().to_string())
        .find(|n| n != analyzer && n.contains('-'))
}

/// The report template: the fenced block whose text has frontmatter with `correlation_id`.
fn template(system: &str) -> Option<String> {
    CodeMap::new(system)
        .blocks
        .into_iter()
        .map(|b| b.content)
        .find(|c| {
            c.trim_start().starts_with("---") && c.contains("correlation_id") && c.contains("\n## ")
        })
}

/// The analyze example's prompt for `path` (the example's own path replaced), or a plain
/// request when the prompt shows no analyze example.
pub fn analyze_prompt(wf: &Workflow, path: &str) -> String {
    match &wf.analyze_example {
        Some(ex) => {
            let mut p = ex.prompt.clone();
            if let Some(old) = parse::paths_in(&ex.prompt).first() {
                p = p.replacen(old.as_str(), path, 1);
            }
            // The example's correlation id was rendered into the prompt already; keep it.
            if !p.contains("Correlation:") {
                p.push_str(&format!(" Correlation: {}", wf.correlation_id));
            }
            p
        }
        None => format!(
            "Extract the decisions, constraints and specs in {path}. Correlation: {}",
            wf.correlation_id
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSTEM: &str = "# R\n\n## Tools\n\n- **Historical Context**: Delegate to `thoughts-locator` / `thoughts-analyzer`.\n\nCorrelation id is `corr-9`.\n\n```\ntask({\n  subagent_type: \"codebase-analyzer\",\n  prompt: \"Read the files. Correlation: corr-9\"\n})\n```\n\n```\ntask({\n  subagent_type: \"finder\",\n  description: \"d\",\n  prompt: \"Find every document about the event log. Correlation: corr-9\"\n})\n```\n\n```\ntask({\n  subagent_type: \"reader\",\n  prompt: \"Extract the decisions in thoughts/shared/specs/x.md. Correlation: corr-9\"\n})\n```\n\nWrite it with `write` to `thoughts/shared/research/2026-11-21-<slug>.md`, where\n\n````markdown\n---\ndate: 2026-11-21\nstatus: active\ntags: [research, <w>]\ncorrelation_id: corr-9\n---\n\n## Question\n## Summary\n## Findings\n## Open Questions\n````\n";

    #[test]
    fn workflow_comes_from_the_examples() {
        let wf = Workflow::from_prompt(SYSTEM);
        assert_eq!(wf.locator.as_deref(), Some("finder"));
        assert_eq!(wf.analyzer.as_deref(), Some("reader"));
        assert_eq!(wf.report_dir, "thoughts/shared/research/");
        assert_eq!(wf.today, "2026-11-21");
        assert_eq!(wf.correlation_id, "corr-9");
        assert!(wf.template.is_some());
        assert_eq!(
            analyze_prompt(&wf, "thoughts/a.md"),
            "Extract the decisions in thoughts/a.md. Correlation: corr-9"
        );
    }

    /// Item titles are cut to a few words ("… before…"); the summary quoted them as if they
    /// were sentences, so it stopped mid-sentence. It must carry whole sentences only.

    #[test]
    fn companion_from_the_delegation_line() {
        let system = "- Delegate to `reader` (and `finder-x` when unsure).\n```\ntask({ subagent_type: \"reader\", prompt: \"Extract thoughts/a.md\" })\n```\n";
        let wf = Workflow::from_prompt(system);
        assert_eq!(wf.locator.as_deref(), Some("finder-x"));
    }
}
