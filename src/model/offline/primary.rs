//! The primary role: follow the two-step workflow the prompt documents (locate, then analyze the
//! located documents in parallel), write the report the prompt asks for, and reply with its path.
//!
//! Which subagent locates and which analyzes comes from the prompt's `task(...)` examples: the
//! example whose prompt names a document is the analyze step, the nearest example before it that
//! names none is the locate step (or, failing that, the other agent the prompt's "Delegate to"
//! line pairs with the analyzer). Names are read, never assumed.
//!
//! The workflow is read by [`super::workflow`]; the report is built by [`super::report`].

use serde_json::json;

use super::envelope::fence_for;
use super::report::{answer_part, report, slug};
use super::role::has_tool;
use super::workflow::{analyze_prompt, Workflow};
use super::{call, first_line, parse, strip_boilerplate, Exchange, History, Turn};
use crate::agent::gate::PLAN_TOOL;
use crate::model::ModelRequest;

/// Documents analyzed at most (one task each, all in one turn).
pub const MAX_ANALYZE: usize = 4;
pub fn turn(request: &ModelRequest, history: &History) -> Turn {
    let wf = Workflow::from_prompt(&request.system);
    let question = strip_boilerplate(history.task);
    if history.did("write") {
        return Turn::Answer(final_answer(history));
    }
    // A plan the runtime asked for itself (`gate.ask: runtime`) is not asked for again.
    let asked = history.exchanges.iter().any(|e| {
        [
            crate::runtime::plan_gate::RUNTIME_CALL_ID,
            crate::runtime::plan_gate::REASK_CALL_ID,
        ]
        .contains(&e.call.id.as_str())
    });
    if has_tool(request, PLAN_TOOL) && !history.did("plan") && !asked {
        if let Some(turn) = plan_turn(request, &question) {
            return turn;
        }
    }
    // What the knowledge store already holds (`switchboard knowledge analyze`): a lead, asked for
    // once before locating; its documents join the located ones and are verified the same way.
    // A locator the runtime called first (`delegate_first:`) counts as this agent's own.
    let located_first = wf
        .locator
        .as_deref()
        .is_some_and(|l| history.delegated_first(l).is_some());
    if has_tool(request, "recall") && !history.did("recall") && !history.did("locate") {
        return Turn::Calls(vec![call(
            "recall",
            0,
            "recall",
            json!({ "query": question }),
        )]);
    }
    let can_task = has_tool(request, "task");
    if !can_task
        || history.did("analyze")
        || ((history.did("locate") || located_first)
            && located(history, &wf).is_empty()
            && recalled(history).is_empty())
    {
        return write_turn(request, &wf, &question, history);
    }
    let named: Vec<String> = parse::paths_in(&question)
        .into_iter()
        .filter(|p| p.ends_with(".md"))
        .collect();
    let to_analyze = if history.did("locate") || located_first {
        let mut paths = located(history, &wf);
        for p in recalled(history) {
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
        // What the runtime analyzed already (`analyze_found:`) is not asked for again.
        let analyzed: Vec<String> = history
            .analyzed_by_runtime()
            .iter()
            .filter_map(|e| e.arg("prompt"))
            .flat_map(parse::paths_in)
            .collect();
        paths.retain(|p| !analyzed.contains(p));
        if paths.is_empty() && !analyzed.is_empty() {
            return write_turn(request, &wf, &question, history);
        }
        paths
    } else if !named.is_empty() {
        named
    } else if let Some(locator) = &wf.locator {
        let prompt = format!(
            "Find every document about: {question}\nCorrelation: {}",
            wf.correlation_id
        );
        return Turn::Calls(vec![call(
            "locate",
            0,
            "task",
            json!({
                "subagent_type": locator,
                "description": format!("Find documents: {}", short(&question, 8)),
                "prompt": prompt,
            }),
        )]);
    } else {
        Vec::new()
    };
    match (&wf.analyzer, to_analyze.is_empty()) {
        (Some(analyzer), false) => Turn::Calls(
            to_analyze
                .iter()
                .take(MAX_ANALYZE)
                .enumerate()
                .map(|(i, path)| {
                    call(
                        "analyze",
                        i,
                        "task",
                        json!({
                            "subagent_type": analyzer,
                            "description": format!("Analyze {}", path.rsplit('/').next().unwrap_or(path)),
                            "prompt": analyze_prompt(&wf, path),
                        }),
                    )
                })
                .collect(),
        ),
        _ => write_turn(request, &wf, &question, history),
    }
}

/// The first move of a gated agent (`gate:`): no retrieval opens before a plan. When the `plan`
/// tool names an agent that plans, delegate the question to it (its validated answer becomes the
/// plan); else, when the plan's parameters are the analyst's shape, submit a keyword plan
/// (offline/plan.rs) directly. `None` when neither works: the turn goes on, and the gate's
/// refusals say why.
fn plan_turn(request: &ModelRequest, question: &str) -> Option<Turn> {
    let spec = request.tools.iter().find(|t| t.name == PLAN_TOOL)?;
    if let Some(planner) = planning_agent(&spec.description) {
        return Some(Turn::Calls(vec![call(
            "plan",
            0,
            "task",
            json!({
                "subagent_type": planner,
                "description": format!("Plan: {}", short(question, 8)),
                "prompt": question,
            }),
        )]));
    }
    let props = spec.parameters.get("properties")?;
    if props.get("request_type").is_none() || props.get("required_sources").is_none() {
        return None;
    }
    Some(Turn::Calls(vec![call(
        "plan",
        0,
        PLAN_TOOL,
        super::plan::plan_for(question, false),
    )]))
}

/// The agent the `plan` tool's description says to delegate to (``delegate to `name` ``).
fn planning_agent(description: &str) -> Option<&str> {
    let rest = description.split_once("delegate to `")?.1;
    let name = rest.split('`').next()?;
    (!name.is_empty()).then_some(name)
}

/// Writes the report, or (with no `write` tool, e.g. on the last step) answers with it.
fn write_turn(request: &ModelRequest, wf: &Workflow, question: &str, history: &History) -> Turn {
    if has_tool(request, "write") {
        return Turn::Calls(vec![write_call(wf, question, history)]);
    }
    let content = report(wf, question, history);
    let fence = fence_for(content.lines());
    Turn::Answer(format!(
        "The report could not be written (no `write` tool on this turn); here it is.\n\n{fence}markdown\n{content}{fence}\n"
    ))
}

fn short(text: &str, words: usize) -> String {
    first_line(text)
        .split_whitespace()
        .take(words)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The paths the locator returned (called by this agent, else by the runtime first): its
/// suggestions first, then the rest of its list.
pub fn located(history: &History, wf: &Workflow) -> Vec<String> {
    let own = history.step("locate").first().and_then(Exchange::ok);
    let first = || history.delegated_first(wf.locator.as_deref()?);
    let Some(out) = own.or_else(first) else {
        return Vec::new();
    };
    let answer = answer_part(out);
    let mut paths: Vec<String> = Vec::new();
    let suggested = answer
        .lines()
        .filter(|l| l.to_lowercase().contains("suggested"))
        .flat_map(parse::paths_in);
    let listed = answer
        .lines()
        .filter(|l| l.trim_start().starts_with("- "))
        .flat_map(parse::paths_in);
    for p in suggested.chain(listed) {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    paths
}

/// The documents (`.md`) the `recall` step's notes came from, best first, without repeats; none
/// when the store held nothing or the call failed.
pub fn recalled(history: &History) -> Vec<String> {
    let Some(out) = history.step("recall").first().and_then(Exchange::ok) else {
        return Vec::new();
    };
    let mut paths: Vec<String> = Vec::new();
    for line in out.lines() {
        let Some(rest) = line.trim_start().strip_prefix("from ") else {
            continue;
        };
        let path = rest.split(':').next().unwrap_or("");
        if path.ends_with(".md") && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

fn write_call(wf: &Workflow, question: &str, history: &History) -> crate::model::ToolCall {
    // A report this session found (an earlier session's on the same question, that day) is a
    // source it cites, not a draft to write over: the next name nothing mentioned.
    let stem = format!("{}{}-{}", wf.report_dir, wf.today, slug(question));
    let path = std::iter::once(format!("{stem}.md"))
        .chain((2..100).map(|n| format!("{stem}-{n}.md")))
        .find(|p| !history.seen(p))
        .unwrap_or_else(|| format!("{stem}-100.md"));
    call(
        "write",
        0,
        "write",
        json!({"path": path, "content": report(wf, question, history)}),
    )
}

/// The path a `write` result says the content went to when that is not the path asked for
/// (`… wrote N bytes to `NAME-2.md` instead …`: the asked one was another session's file).
/// Why: four offline researchers run at once on one question each answered "Report written to
/// `…-event-log.md`", where three had been written to `-2`, `-3` and `-4`.
fn written_to(result: &str) -> Option<&str> {
    let (_, rest) = result.split_once(" bytes to `")?;
    rest.split_once('`').map(|(path, _)| path)
}

fn final_answer(history: &History) -> String {
    let Some(w) = history.step("write").into_iter().next() else {
        return "No report was written.".into();
    };
    let path = w.arg("path").unwrap_or("");
    let content = w.arg("content").unwrap_or("");
    let summary = content
        .split("\n## Summary\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            // A template without a Summary section (a plan): list what it cites.
            let cited: Vec<&str> = content
                .lines()
                .filter_map(|l| l.strip_prefix("### "))
                .take(5)
                .collect();
            if cited.is_empty() {
                "No evidence was found for it under `thoughts/`.".to_string()
            } else {
                format!("It cites:\n- {}", cited.join("\n- "))
            }
        });
    match w.ok() {
        Some(result) => {
            let path = written_to(result).unwrap_or(path);
            format!("Report written to `{path}`.\n\n{summary}\n")
        }
        None => {
            let why = w.result.map_or("no result", |m| first_line(&m.content));
            let fence = fence_for(content.lines());
            format!("Could not write `{path}` ({why}). The report follows.\n\n{fence}markdown\n{content}{fence}\n")
        }
    }
}
