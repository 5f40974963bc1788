//! Contract rules: a prompt must ask for what its contract will check, and a consumer must not
//! count on evidence its producer is not bound to give.

use regex::Regex;
use std::sync::LazyLock;

use crate::agent::{Agent, AgentSet};
use crate::contract::EvidencePolicy;
use crate::markdown::LineIndex;
use crate::problem::{Problem, Severity};

static MESSAGE_TYPE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"message_type:\s*`?([A-Z][A-Z0-9_]*)").expect("static regex"));

const ENVELOPE_FIELDS: &[&str] = &["message_id", "correlation_id", "timestamp", "message_type"];

pub fn check(set: &AgentSet, out: &mut Vec<Problem>) {
    for agent in set.iter() {
        match &agent.contract {
            None if agent.mode.can_be_delegated_to() => {
                out.push(
                    Problem::new(
                        Severity::Note,
                        "contract/none",
                        &agent.file,
                        format!(
                            "`{}` declares no contract: its answers reach callers unchecked",
                            agent.name
                        ),
                    )
                    .with_help("add `contract: envelope` (or a stricter one) to the frontmatter"),
                );
            }
            None => {}
            // JSON contracts have their own template rule (lint/json_contracts.rs).
            Some(c) if c.format == crate::contract::ContractFormat::Json => {}
            Some(_) => template(agent, out),
        }
        expected_evidence(set, agent, out);
    }
}

/// `contract/template-missing`: the prompt's output template lacks something the contract checks.
fn template(agent: &Agent, out: &mut Vec<Problem>) {
    let Some(contract) = &agent.contract else {
        return;
    };
    let body = &agent.body;
    let mut missing: Vec<String> = ENVELOPE_FIELDS
        .iter()
        .map(|f| f.to_string())
        .chain(contract.fields.keys().cloned())
        .filter(|f| !body.contains(&format!("{f}:")))
        .map(|f| format!("`{f}:`"))
        .collect();
    for tag in ["<thinking>", "</thinking>", "<answer>", "</answer>"] {
        if !body.contains(tag) {
            missing.push(format!("`{tag}`"));
        }
    }
    if contract.evidence == EvidencePolicy::Required {
        for marker in ["**Evidence**", "**Excerpt**"] {
            if !body.contains(marker) {
                missing.push(format!("`{marker}`"));
            }
        }
    }
    for t in &contract.message_types {
        if !body.contains(t.as_str()) {
            missing.push(format!("message type `{t}`"));
        }
    }
    if !missing.is_empty() {
        out.push(
            Problem::new(
                Severity::Warning,
                "contract/template-missing",
                &agent.file,
                format!(
                    "contract `{}` will check answers for {}, but the prompt never shows {}",
                    contract.name,
                    missing.join(", "),
                    if missing.len() == 1 { "it" } else { "them" }
                ),
            )
            .at(agent.body_line, 1)
            .with_help("add an output template that shows the envelope the contract requires"),
        );
    }
}

/// `contract/evidence-not-required` and `contract/unknown-message-type`: a section of a
/// consumer's prompt that shows a producer's answer (by its `message_type`) with Evidence items
/// expects evidence; the producer's contract must require it.
fn expected_evidence(set: &AgentSet, consumer: &Agent, out: &mut Vec<Problem>) {
    if consumer.references.is_empty() {
        return;
    }
    let index = LineIndex::new(&consumer.body);
    for (start, section) in sections(&consumer.body) {
        if !section.contains("**Evidence**") {
            continue;
        }
        for cap in MESSAGE_TYPE.captures_iter(section) {
            let Some(ty) = cap.get(1).map(|m| m.as_str()) else {
                continue;
            };
            let at = start + cap.get(0).map_or(0, |m| m.start());
            let line = consumer.body_line + index.line(at) - 1;
            let producers: Vec<&Agent> = set
                .iter()
                .filter(|a| {
                    a.contract
                        .as_ref()
                        .is_some_and(|c| c.message_types.iter().any(|t| t == ty))
                })
                .collect();
            if producers.is_empty() {
                out.push(
                    Problem::new(
                        Severity::Warning,
                        "contract/unknown-message-type",
                        &consumer.file,
                        format!("the prompt expects `{ty}` answers, but no agent's contract produces them"),
                    )
                    .at(line, 1),
                );
            }
            for p in producers {
                if p.contract
                    .as_ref()
                    .is_some_and(|c| c.evidence != EvidencePolicy::Required)
                {
                    out.push(
                        Problem::new(
                            Severity::Warning,
                            "contract/evidence-not-required",
                            &consumer.file,
                            format!(
                                "`{}` expects evidence in `{ty}` answers, but `{}`'s contract does not require it",
                                consumer.name, p.name
                            ),
                        )
                        .at(line, 1)
                        .with_help(format!("set `evidence: required` in {}'s contract", p.file)),
                    );
                }
            }
        }
    }
}

/// The body cut at `##`/`###` headings outside fenced code: (byte offset of the section, text).
fn sections(body: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut in_fence = false;
    let mut offset = 0usize;
    for line in body.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        if !in_fence && (line.starts_with("## ") || line.starts_with("### ")) && offset > start {
            out.push((start, &body[start..offset]));
            start = offset;
        }
        offset += line.len();
    }
    out.push((start, &body[start..]));
    out
}
