//! The lead's report: the analyzers' findings gathered, ranked against the question, and
//! filled into the template the prompt documents (or the research layout), with a summary that
//! quotes whole sentences only.

use super::workflow::Workflow;
use super::{bm25, first_line, parse, History};

/// The `<answer>` part of an envelope (or the whole text when there is none).
pub fn answer_part(text: &str) -> &str {
    match (text.find("<answer>"), text.rfind("</answer>")) {
        (Some(s), Some(e)) if s + 8 <= e => &text[s + 8..e],
        _ => text,
    }
}

/// One signal item from an analyzer answer, copied verbatim.
#[derive(Debug, Clone)]
pub struct Finding {
    pub kind: String,
    pub title: String,
    /// The Evidence line through the Excerpt's closing fence, exactly as the analyzer wrote them.
    pub block: String,
    pub source: String,
    pub document: String,
    pub status: String,
    pub reliability: String,
}

fn fm_value(text: &str, key: &str) -> Option<String> {
    let body = text.strip_prefix("---\n")?;
    let end = body.find("\n---")?;
    body[..end].lines().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().trim_matches('"').to_string())
    })
}

/// The signal items of one analyzer answer (items without Evidence are dropped).
pub fn findings(answer_text: &str) -> Vec<Finding> {
    let source = fm_value(answer_text, "message_id").unwrap_or_default();
    let document = fm_value(answer_text, "source_document").unwrap_or_default();
    let status = fm_value(answer_text, "document_status").unwrap_or_default();
    let reliability = fm_value(answer_text, "reliability").unwrap_or_default();
    let mut out = Vec::new();
    let mut current: Option<(String, String, Vec<&str>)> = None;
    let mut in_fence: Option<String> = None;
    let flush = |cur: Option<(String, String, Vec<&str>)>, out: &mut Vec<Finding>| {
        if let Some((kind, title, mut lines)) = cur {
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            if lines.iter().any(|l| l.contains("**Evidence**")) {
                out.push(Finding {
                    kind,
                    title,
                    block: lines.join("\n"),
                    source: source.clone(),
                    document: document.clone(),
                    status: status.clone(),
                    reliability: reliability.clone(),
                });
            }
        }
    };
    for line in answer_part(answer_text).lines() {
        let t = line.trim_start();
        if let Some(f) = &in_fence {
            if t.starts_with(f.as_str()) && t.trim_end().trim_start_matches('`').is_empty() {
                in_fence = None;
            }
            if let Some(c) = current.as_mut() {
                c.2.push(line);
            }
            continue;
        }
        if t.starts_with("```") {
            let ticks = t.len() - t.trim_start_matches('`').len();
            in_fence = Some("`".repeat(ticks));
            if let Some(c) = current.as_mut() {
                c.2.push(line);
            }
            continue;
        }
        if let Some(h) = t.strip_prefix("#### ") {
            flush(current.take(), &mut out);
            let (kind, title) = h.split_once(':').unwrap_or(("Finding", h));
            current = Some((
                kind.trim().to_string(),
                title.trim().to_string(),
                Vec::new(),
            ));
        } else if t.starts_with("#") {
            flush(current.take(), &mut out);
        } else if let Some(c) = current.as_mut() {
            c.2.push(line);
        }
    }
    flush(current, &mut out);
    out
}

/// Words of the question for a file name: lowercase, stopwords dropped, at most six.
pub fn slug(question: &str) -> String {
    let words: Vec<String> = first_line(question)
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|w| !bm25::is_stopword(w))
        .take(6)
        .collect();
    if words.is_empty() {
        "question".into()
    } else {
        words.join("-")
    }
}

struct Gathered {
    findings: Vec<Finding>,
    documents: Vec<(String, String, String)>,
    open: Vec<String>,
}

fn gather(history: &History) -> Gathered {
    let mut g = Gathered {
        findings: Vec::new(),
        documents: Vec::new(),
        open: Vec::new(),
    };
    if let Some(loc) = history.step("locate").first() {
        if loc.ok().is_none() {
            let why = loc.result.map_or("no result", |m| first_line(&m.content));
            g.open.push(if why.starts_with("the gate of") {
                // Not a failure: the validated plan chose sources that open no document search.
                format!("The documents were not searched: {why}")
            } else {
                format!(
                    "The locator failed ({why}); which documents bear on the question is unknown."
                )
            });
        }
    }
    for ex in history
        .analyzed_by_runtime()
        .into_iter()
        .chain(history.step("analyze"))
    {
        let asked = ex
            .arg("prompt")
            .and_then(|p| parse::paths_in(p).into_iter().next())
            .unwrap_or_default();
        match ex.ok() {
            Some(text) => {
                let f = findings(text);
                let status = fm_value(text, "document_status").unwrap_or_default();
                let rel = fm_value(text, "reliability").unwrap_or_default();
                if f.is_empty() {
                    g.open.push(format!("`{asked}` was analyzed and holds no decision, constraint or spec on this question."));
                }
                g.documents.push((asked, status, rel));
                g.findings.extend(f);
            }
            None => {
                let why = ex.result.map_or("no result", |m| first_line(&m.content));
                g.open.push(format!(
                    "The analysis of `{asked}` failed ({}); its content is unverified.",
                    why.replace(['<', '>'], "")
                ));
            }
        }
    }
    g
}

/// Findings a report keeps at most.
pub const MAX_FINDINGS: usize = 8;

/// Keeps the findings that speak to the question, most relevant first (ties keep the order
/// the analyzers gave, which follows the locator's ranking); the first few when none does.
fn relevant(findings: Vec<Finding>, question: &str) -> Vec<Finding> {
    let terms = bm25::query_terms(question);
    let mut scored: Vec<(usize, usize, Finding)> = findings
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let tokens = bm25::tokenize(&format!("{} {}", f.title, f.block));
            let score = terms.iter().filter(|t| tokens.contains(t)).count();
            (score, i, f)
        })
        .collect();
    let any = scored.iter().any(|(s, _, _)| *s > 0);
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .filter(|(s, _, _)| !any || *s > 0)
        .take(if any { MAX_FINDINGS } else { 3 })
        .map(|(_, _, f)| f)
        .collect()
}

/// The report, filled into the prompt's template headings (or the research layout).
pub fn report(wf: &Workflow, question: &str, history: &History) -> String {
    let mut g = gather(history);
    g.findings = relevant(std::mem::take(&mut g.findings), question);
    let template = wf.template.clone().unwrap_or_default();
    let status_default = template
        .lines()
        .find_map(|l| l.strip_prefix("status:"))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !s.contains('<'))
        .unwrap_or_else(|| "active".into());
    let failed = g.open.iter().any(|o| o.contains("failed"));
    let status = if failed {
        "draft".to_string()
    } else {
        status_default
    };
    let kind_tag = template
        .lines()
        .find_map(|l| l.strip_prefix("tags:"))
        .and_then(|t| {
            t.trim()
                .trim_start_matches('[')
                .split(',')
                .next()
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty() && !s.contains('<'))
        .unwrap_or_else(|| "research".into());
    let mut headings: Vec<String> = template
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.trim().to_string())
        .collect();
    if headings.is_empty() {
        headings = ["Question", "Summary", "Findings", "Open Questions"]
            .map(String::from)
            .to_vec();
    }
    let topic_words: Vec<String> = slug(question)
        .split('-')
        .take(3)
        .map(String::from)
        .collect();
    let one_line = first_line(question).replace('"', "'");
    // A report that found nothing says so where the runtime's `deliver:` check reads it.
    let none = if g.findings.is_empty() {
        "findings: none\n"
    } else {
        ""
    };
    let mut out = format!(
        "---\ndate: {}\nstatus: {status}\n{none}topic: {}\ntags: [{kind_tag}, {}]\ncorrelation_id: {}\n---\n\n",
        wf.today,
        serde_json::to_string(&one_line).unwrap_or_default(),
        topic_words.join(", "),
        wf.correlation_id
    );
    let mut title_kind = kind_tag.clone();
    if let Some(f) = title_kind.get(..1) {
        title_kind = f.to_uppercase() + title_kind.get(1..).unwrap_or("");
    }
    out.push_str(&format!(
        "# {title_kind}: {}\n\n",
        one_line.trim_end_matches('?')
    ));
    for h in headings {
        let l = h.to_lowercase();
        out.push_str(&format!("## {h}\n"));
        if l.contains("question") && !l.contains("open") {
            out.push_str(&format!("{}\n\n", question.trim()));
        } else if l.contains("input") {
            out.push_str(&format!("- The request: {one_line}\n"));
            for (doc, status, _) in &g.documents {
                out.push_str(&format!("- `{doc}` ({status})\n"));
            }
            out.push('\n');
        } else if l.contains("summary") {
            out.push_str(&summary(&g));
            out.push_str("\n\n");
        } else if l.contains("finding") || l.contains("current state") || l.contains("evidence") {
            if g.findings.is_empty() {
                out.push_str(
                    "None: no document under `thoughts/` gave evidence on this question.\n\n",
                );
            }
            for f in &g.findings {
                let doc = f.document.rsplit('/').next().unwrap_or(&f.document);
                out.push_str(&format!(
                    "### {}: {} ({doc})\n{}\n",
                    f.kind, f.title, f.block
                ));
                if !f.source.is_empty() {
                    out.push_str(&format!("- **Source**: {}\n", f.source));
                }
                out.push('\n');
            }
        } else if l.contains("open") {
            let mut open = g.open.clone();
            if g.findings.is_empty() {
                open.push(format!("Nothing found for: {one_line} — the project's documents do not record it; ask the maintainers or search the code."));
            }
            open.push("Nothing here was checked against the code; the offline model reports what the documents say.".into());
            for o in open {
                out.push_str(&format!("- {o}\n"));
            }
            out.push('\n');
        } else {
            out.push_str("Not determined by the offline model: it gathers and quotes evidence only. This section needs a person or a real model.\n\n");
        }
    }
    out
}

fn summary(g: &Gathered) -> String {
    if g.findings.is_empty() {
        return "Nothing found. No document under `thoughts/` answers this question with a decision, constraint or spec, so this report makes no claim.".into();
    }
    let mut s = format!(
        "{} document(s) were analyzed; the {} item(s) below bear most on the question, each with verified evidence.",
        g.documents.len(),
        g.findings.len()
    );
    let mut ordered: Vec<&Finding> = g.findings.iter().collect();
    ordered.sort_by_key(|f| match f.reliability.as_str() {
        "High" => 0,
        "Medium" => 1,
        _ => 2,
    });
    for f in ordered.iter().take(5) {
        let doc = f.document.rsplit('/').next().unwrap_or(&f.document);
        let note = if f.reliability == "Low" {
            " (low reliability: history, not current policy)"
        } else {
            ""
        };
        // Titles are cut to a few words; only a whole sentence of the excerpt may stand as one.
        match first_sentence(&f.block) {
            Some(sentence) => s.push_str(&format!(
                " {} in `{doc}` ({}){note}: {sentence}",
                f.kind, f.status
            )),
            None => s.push_str(&format!(
                " {} in `{doc}` ({}){note}, titled “{}”.",
                f.kind, f.status, f.title
            )),
        }
    }
    s
}

/// Longest sentence the summary quotes, in characters.
const MAX_SENTENCE: usize = 320;

/// The first whole sentence of a finding's excerpt (prose only: table rows and fences are not
/// sentences), or `None` when the excerpt holds no sentence that ends within it.
fn first_sentence(block: &str) -> Option<String> {
    let mut prose: Vec<&str> = Vec::new();
    let mut in_excerpt = false;
    for line in block.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            if in_excerpt {
                break;
            }
            in_excerpt = true;
            continue;
        }
        if !in_excerpt || t.starts_with('|') {
            continue;
        }
        let t = t
            .trim_start_matches('#')
            .trim_start_matches(['-', '*', '+', '>'])
            .trim();
        if !t.is_empty() {
            prose.push(t);
        }
    }
    let text = prose.join(" ");
    let chars: Vec<char> = text.chars().collect();
    let mut ticks = 0;
    for (i, &c) in chars.iter().enumerate() {
        if c == '`' {
            ticks += 1;
        }
        let ends = matches!(c, '.' | '!' | '?')
            && ticks % 2 == 0
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        if ends {
            let sentence: String = chars[..=i].iter().collect();
            let starts_well = sentence
                .chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c == '`' || c.is_ascii_digit());
            return (starts_well && sentence.chars().count() <= MAX_SENTENCE).then_some(sentence);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_never_ends_mid_sentence() {
        let finding = |title: &str, excerpt: &[&str]| Finding {
            kind: "Decision".into(),
            title: title.into(),
            block: format!(
                "- **Evidence**: `thoughts/d.md:16-17`\n- **Excerpt**:\n  ```markdown\n{}\n  ```",
                excerpt
                    .iter()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            source: "thoughts-2026-11-21-002".into(),
            document: "thoughts/d.md".into(),
            status: "accepted".into(),
            reliability: "High".into(),
        };
        let g = Gathered {
            findings: vec![
                finding(
                    "We decided that the runtime checks every task() call before…",
                    &[
                        "We decided that the runtime checks every `task()` call before it allocates ids or writes",
                        "`hop.started`. A refused call does not start a hop.",
                    ],
                ),
                // A table row has no sentence to quote: the title is named, not used as one.
                finding(
                    "Refusal rules: Unknown agent, Depth, Cycle, Permission, Mode, Grant, Steps…",
                    &["| Rule | A call is refused when |", "| --- | --- |"],
                ),
            ],
            documents: vec![("thoughts/d.md".into(), "accepted".into(), "High".into())],
            open: Vec::new(),
        };
        let s = summary(&g);
        assert!(
            s.contains("We decided that the runtime checks every `task()` call before it allocates ids or writes `hop.started`."),
            "{s}"
        );
        assert!(!s.contains("before."), "{s}");
        assert!(!s.contains("Steps."), "{s}");
        assert!(s.ends_with('.'), "{s}");
        // Every sentence the summary shows ends where a sentence of its source ends.
        for part in s.split(": ").skip(1) {
            let quoted = part.split(" Decision in ").next().unwrap_or(part);
            assert!(
                quoted.trim_end().ends_with(['.', '!', '?', '”']),
                "{quoted}"
            );
        }
    }

    #[test]
    fn slugs_and_findings() {
        assert_eq!(
            slug("How are message IDs allocated?"),
            "message-ids-allocated"
        );
        let answer = "---\nmessage_id: thoughts-2026-11-21-002\nsource_document: a.md\ndocument_status: accepted\nreliability: High\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\n## Analysis: a.md\n\n### Extracted Signal\n\n#### Decision: Use X\n- **Evidence**: `a.md:3-3`\n- **Excerpt**:\n  ```markdown\n  #### not a heading\n  ```\n\n#### Spec: no evidence\nprose\n\n### Verification Notes\n- n\n</answer>\n";
        let f = findings(answer);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].title, "Use X");
        assert_eq!(f[0].source, "thoughts-2026-11-21-002");
        assert!(f[0].block.ends_with("  #### not a heading\n  ```"));
    }
}
