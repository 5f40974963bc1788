//! The offline model in a checkpoint workflow (src/workflow/): it plays an agent that was given
//! the `step` tool, reporting the planning steps the runtime asks for and doing exactly what each
//! reply's `action` says. Which step comes first is read from the tool's description (so a
//! resumed run starts where its state file says); what comes next is read from the replies.
//!
//! It fills in the steps of a planning workflow (intent, clarify, scope, test_strategy,
//! complexity, plan, render) from what its tools return: a `list` of the root (which toolchain)
//! and a `grep` for the request's words (which files, and the lines quoted as evidence). It never
//! reads a file itself, and it answers honestly when a reply rejects what it sent or when the
//! workflow has a step it does not know.

use regex::Regex;
use serde_json::{json, Value};
use std::sync::LazyLock;

use super::{call, first_line, strip_boilerplate, History, Turn};
use crate::model::{ModelRequest, ANSWER_MARK};

/// Lines longer than this are not quoted (grep cuts long lines, and a cut line is no quote).
const MAX_QUOTED_CHARS: usize = 200;
/// Evidence items the scope cites: what `eval` asks of a delivered plan (three verified items).
const SCOPE_EVIDENCE: usize = 3;

static NEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Next step: `([A-Za-z0-9_.-]+)`").expect("static regex"));

/// Whether the agent reports to a checkpoint workflow.
pub fn applies(request: &ModelRequest) -> bool {
    request.tools.iter().any(|t| t.name == "step")
}

pub fn turn(request: &ModelRequest, history: &History) -> Turn {
    let task = strip_boilerplate(history.task.split(ANSWER_MARK).next().unwrap_or(""));
    let answered = history.task.contains(ANSWER_MARK);
    let reported = history.step("wfstep");
    let next = match reported.last() {
        None => {
            let description = request
                .tools
                .iter()
                .find(|t| t.name == "step")
                .map_or("", |t| t.description.as_str());
            match NEXT.captures(description).and_then(|c| c.get(1)) {
                Some(m) => m.as_str().to_string(),
                None => {
                    return Turn::Answer(
                        "The workflow has no step left to report: it is complete or was closed. \
                         See `switchboard workflow list`."
                            .into(),
                    )
                }
            }
        }
        Some(last) => {
            let Some(result) = last.result else {
                return Turn::Answer("The last step got no reply.".into());
            };
            let reply: Value = serde_json::from_str(&result.content).unwrap_or(Value::Null);
            if result.is_error || reply.is_null() {
                return Turn::Answer(format!(
                    "The workflow could not go on: {}",
                    first_line(&result.content)
                ));
            }
            match reply["action"].as_str().unwrap_or("") {
                "PROCEED" | "UNCHANGED" => match reply["next"].as_str() {
                    Some(n) => n.to_string(),
                    None => return Turn::Answer(done(&reply, history)),
                },
                "CLARIFY" => {
                    return Turn::Answer(reply["question"].as_str().unwrap_or("?").to_string())
                }
                "INVALID" => {
                    let errors: Vec<&str> = reply["errors"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    return Turn::Answer(format!(
                        "The runtime rejected step `{}` and the offline model cannot repair it:\n- {}",
                        reply["step"].as_str().unwrap_or("?"),
                        errors.join("\n- ")
                    ));
                }
                _ => {
                    return Turn::Answer(format!(
                        "The workflow stopped: {}",
                        reply["error"].as_str().unwrap_or("no reason given")
                    ))
                }
            }
        }
    };
    // Every step after intent and clarify needs to know the project: look once.
    let needs_search = !matches!(next.as_str(), "intent" | "clarify");
    if needs_search && !history.did("wfsearch") {
        let words = keywords(&task);
        let pattern = if words.is_empty() {
            "\\S".to_string()
        } else {
            format!("(?i)({})", words.join("|"))
        };
        return Turn::Calls(vec![
            call("wfsearch", 0, "list", json!({"path": "."})),
            call("wfsearch", 1, "grep", json!({"pattern": pattern})),
        ]);
    }
    let facts = Facts::gather(history, keywords(&task));
    let result = match next.as_str() {
        "intent" => intent(&task, answered),
        "clarify" => json!({
            "action": "PROCEED",
            "assumptions": [format!("The plan covers the request as written: {}", first_line(&task))],
            "questions": []
        }),
        "scope" => match facts.scope() {
            Some(s) => s,
            None => {
                return Turn::Answer(format!(
                    "No file in the project mentions the request's words ({}), so the offline \
                     model cannot name a scope. Name the files to change, or run with a real model.",
                    keywords(&task).join(", ")
                ))
            }
        },
        "test_strategy" => facts.test_strategy(),
        "complexity" => json!({"domains": facts.domains()}),
        "plan" => facts.plan(&task),
        "render" => json!({
            "title": title(&task),
            "slug": super::report::slug(&task),
        }),
        other => {
            return Turn::Answer(format!(
                "The workflow asks for step `{other}`, which the offline model does not know how \
                 to fill in. Run this agent with a real model (`--model`)."
            ))
        }
    };
    Turn::Calls(vec![call(
        "wfstep",
        reported.len(),
        "step",
        json!({"name": next, "result": result}),
    )])
}

/// The plan's title: the request's first words, without a leading "plan".
fn title(task: &str) -> String {
    let words = first_words(task, 10);
    let lower = words.to_ascii_lowercase();
    let rest = ["plan how to ", "plan to ", "plan "]
        .iter()
        .find_map(|p| lower.starts_with(p).then(|| words[p.len()..].to_string()))
        .unwrap_or(words);
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) => format!("Plan: {}{}", c.to_uppercase(), chars.as_str()),
        None => "Plan".into(),
    }
}

fn done(reply: &Value, history: &History) -> String {
    let steps: Vec<&str> = history
        .step("wfstep")
        .iter()
        .filter_map(|e| e.arg("name"))
        .collect();
    format!(
        "The plan is written to `{}`.\n\nSteps reported and accepted by the runtime: {}.\n",
        reply["document"].as_str().unwrap_or("?"),
        steps.join(", ")
    )
}

fn intent(task: &str, answered: bool) -> Value {
    let refined = first_words(task, 40);
    if keywords(task).len() < 2 && !answered {
        json!({
            "action": "CLARIFY",
            "refined_intent": if refined.len() >= 3 { refined } else { "unclear request".to_string() },
            "questions": ["What should change, and in which part of the project?"],
        })
    } else {
        json!({"action": "PROCEED", "refined_intent": refined, "questions": []})
    }
}

/// The request's content words, at most five.
fn keywords(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in first_line(task).split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        let lower = w.to_ascii_lowercase();
        if lower.len() > 3
            && !super::bm25::is_stopword(&lower)
            && !GENERIC.contains(&lower.as_str())
            && !out.contains(&lower)
        {
            out.push(lower);
        }
    }
    out.truncate(5);
    out
}

/// Words of planning requests that say nothing about where the change goes.
const GENERIC: &[&str] = &[
    "plan",
    "make",
    "change",
    "should",
    "would",
    "could",
    "want",
    "need",
    "please",
    "implement",
    "implementation",
    "support",
    "improve",
    "better",
    "when",
    "with",
    "that",
    "this",
    "from",
];

fn is_test(path: &str) -> bool {
    path.starts_with("tests/")
        || path.contains("/tests/")
        || path.contains("_test")
        || path.contains("test_")
}

fn first_words(text: &str, n: usize) -> String {
    first_line(text)
        .split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the search turn found.
struct Facts {
    root: Vec<String>,
    /// `(path, line, text)` of every grep hit.
    hits: Vec<(String, u64, String)>,
    /// The request's words, lowercase.
    words: Vec<String>,
}

impl Facts {
    fn gather(history: &History, words: Vec<String>) -> Self {
        let calls = history.step("wfsearch");
        let root = calls
            .iter()
            .find(|e| e.call.name == "list")
            .and_then(|e| e.ok())
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default();
        let hits = calls
            .iter()
            .find(|e| e.call.name == "grep")
            .and_then(|e| e.ok())
            .map(|t| {
                t.lines()
                    .filter_map(|l| {
                        let (path, rest) = l.split_once(':')?;
                        let (n, text) = rest.split_once(':')?;
                        Some((path.to_string(), n.parse().ok()?, text.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Facts { root, hits, words }
    }

    /// How many of the request's words `text` holds.
    fn matched(&self, text: &str) -> usize {
        let lower = text.to_lowercase();
        self.words
            .iter()
            .filter(|w| lower.contains(w.as_str()))
            .count()
    }

    /// Files ranked by how many of the request's words they hold (in their path or hit lines),
    /// then by how many lines matched; documents under `thoughts/` are not code to change.
    fn ranked(&self) -> Vec<String> {
        // (path, words seen, hit lines)
        let mut counts: Vec<(String, Vec<bool>, usize)> = Vec::new();
        for (path, _, text) in &self.hits {
            if path.starts_with("thoughts/") {
                continue;
            }
            let i = match counts.iter().position(|(p, _, _)| p == path) {
                Some(i) => i,
                None => {
                    let seen = self
                        .words
                        .iter()
                        .map(|w| path.to_lowercase().contains(w.as_str()))
                        .collect();
                    counts.push((path.clone(), seen, 0));
                    counts.len() - 1
                }
            };
            let lower = text.to_lowercase();
            let entry = &mut counts[i];
            entry.2 += 1;
            for (k, w) in self.words.iter().enumerate() {
                entry.1[k] |= lower.contains(w.as_str());
            }
        }
        let distinct = |seen: &[bool]| seen.iter().filter(|b| **b).count();
        counts.sort_by(|a, b| {
            distinct(&b.1)
                .cmp(&distinct(&a.1))
                .then(b.2.cmp(&a.2))
                .then(a.0.cmp(&b.0))
        });
        counts.into_iter().map(|(p, _, _)| p).collect()
    }

    /// The two best-ranked files that are not tests: what the change modifies.
    fn primary(&self) -> Vec<String> {
        self.ranked()
            .into_iter()
            .filter(|p| !is_test(p))
            .take(2)
            .collect()
    }

    /// The best-ranked test file and the next file: what the change reads or extends.
    fn secondary(&self) -> Vec<String> {
        let primary = self.primary();
        let ranked = self.ranked();
        let test = ranked.iter().find(|p| is_test(p)).cloned();
        let other = ranked
            .iter()
            .find(|p| !is_test(p) && !primary.contains(p))
            .cloned();
        test.into_iter().chain(other).collect()
    }

    /// The scope: the primary files, and [`SCOPE_EVIDENCE`] evidence items, each a distinct line
    /// that holds the request's words: the best line of each primary file first (the first of
    /// equals), then those of the secondary files, then the next-best lines of the primary files.
    fn scope(&self) -> Option<Value> {
        let primary = self.primary();
        let secondary = self.secondary();
        // Each file's quotable lines, best first (most of the request's words, then earliest).
        let lines_of = |f: &String| {
            let mut lines: Vec<&(String, u64, String)> = self
                .hits
                .iter()
                .filter(|(p, _, t)| {
                    p == f && !t.trim().is_empty() && t.chars().count() <= MAX_QUOTED_CHARS
                })
                .collect();
            lines.sort_by(|a, b| {
                self.matched(&b.2)
                    .cmp(&self.matched(&a.2))
                    .then(a.1.cmp(&b.1))
            });
            lines.dedup_by_key(|h| h.1);
            lines
        };
        let per_file: Vec<Vec<&(String, u64, String)>> =
            primary.iter().chain(&secondary).map(lines_of).collect();
        let firsts = per_file.iter().filter_map(|l| l.first());
        let nexts = per_file[..primary.len()]
            .iter()
            .flat_map(|l| l.iter().skip(1));
        let evidence: Vec<Value> = firsts
            .chain(nexts)
            .take(SCOPE_EVIDENCE)
            .map(|(path, line, text)| {
                json!({
                    "fact": format!("`{path}` line {line} bears on the request"),
                    "path": path, "start": line, "end": line, "excerpt": text,
                })
            })
            .collect();
        if primary.is_empty() || evidence.is_empty() {
            return None;
        }
        Some(json!({"primary": primary, "secondary": secondary, "evidence": evidence}))
    }

    fn test_strategy(&self) -> Value {
        let tests: Vec<String> = self
            .ranked()
            .into_iter()
            .filter(|p| p.starts_with("tests/") || p.contains("test"))
            .take(3)
            .collect();
        if self.root.iter().any(|e| e == "tests/") || !tests.is_empty() {
            json!({
                "verdict": "NEEDED",
                "strategy": "Extend the existing tests next to the change and run the whole suite after each step.",
                "tests": tests,
            })
        } else {
            json!({
                "verdict": "OPTIONAL",
                "strategy": "The project shows no test folder; check the change by running it.",
                "tests": [],
            })
        }
    }

    fn domains(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.primary().iter().chain(self.secondary().iter()) {
            // The folder the file sits in names its domain (`src/workflow/x.rs`: workflow);
            // a file at the root names its own.
            let named = match f.rsplit_once('/') {
                Some((dir, _)) => dir.rsplit('/').next().unwrap_or(dir),
                None => f.split('.').next().unwrap_or(f),
            };
            let d: String = named
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
                .to_ascii_lowercase();
            if !d.is_empty() && !out.contains(&d) {
                out.push(d);
            }
        }
        if out.is_empty() {
            out.push("project".into());
        }
        out
    }

    fn verification(&self) -> &'static str {
        let has = |name: &str| self.root.iter().any(|e| e == name);
        if has("Cargo.toml") {
            "cargo test"
        } else if has("package.json") {
            "npm test"
        } else if has("go.mod") {
            "go test ./..."
        } else if has("pyproject.toml") || has("setup.py") {
            "python3 -m pytest"
        } else {
            "git status"
        }
    }

    fn plan(&self, task: &str) -> Value {
        let intent = first_words(task, 40);
        let steps: Vec<Value> = self
            .primary()
            .iter()
            .map(|f| {
                json!({
                    "title": format!("Change `{f}`"),
                    "files": [f],
                    "change": format!("Make the change the request asks for in `{f}`: {intent}"),
                    "done_when": format!("`{}` passes with the change in `{f}`", self.verification()),
                })
            })
            .collect();
        json!({
            "goals": [intent],
            "non_goals": ["Changes outside the scoped files"],
            "steps": steps,
            "verification": self.verification(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_skip_stopwords_and_generic_words() {
        assert_eq!(
            keywords("Plan how to add retries to the webfetch client"),
            vec!["retries", "webfetch", "client"]
        );
        assert!(intent("fix it", false)["action"] == "CLARIFY");
        assert!(intent("fix it", true)["action"] == "PROCEED");
    }
}
