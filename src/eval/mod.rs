//! `switchboard eval`: runs a suite of tasks on one model and measures, per agent, how often its
//! answers met their contract first time, after repairs, through the fallback, or not at all;
//! whether the delegations the suite expects were made; how much of the cited evidence holds up;
//! tokens and time.
//!
//! Two conformance figures are kept apart. "First time" is the whole contract: shape and
//! content. "Shape" counts first answers free of violations of the rules a grammar derived from
//! the contract can force ([`crate::contract::Rule::is_shape`]): a local model decoding under
//! that grammar should score near 100 % there, while a cited file that does not exist is still
//! the checker's to catch.
//!
//! A suite is YAML (evals/*.yaml):
//!
//! ```yaml
//! tasks:
//!   - agent: analyst
//!     prompt: How do we rotate the billing service's API keys?
//!   - agent: researcher
//!     prompt: Where is the retry policy decided?
//!     expect: {delegates: [codebase-locator]}
//! ```
//!
//! Each task runs as its own session, `runs` times in a row (so a local engine's prompt cache
//! serves the repeats); the counts come from the sessions' event logs (`contract.outcome`,
//! `contract.checked`, `hop.started`, `hop.completed`), the records `switchboard stats` reads.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

mod isolate;

use crate::agent::{AgentSet, Mode};
use crate::config::Config;
use crate::contract::{tally_evidence, CheckContext, FileCache, Rule};
use crate::model::Registry;
use crate::project::Project;
use crate::runtime::events::read_log;
use crate::runtime::stats::{tally, StatsFilter};
use crate::runtime::{Event, EventKind, RunOptions, Session};

/// A suite as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub tasks: Vec<Task>,
}

/// One task: the primary agent, its prompt, what should happen.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub agent: String,
    pub prompt: String,
    #[serde(default)]
    pub expect: Expect,
}

/// What a task expects besides conformant answers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Agents the primary should delegate to (each at least once per run).
    #[serde(default)]
    pub delegates: Vec<String>,
    /// Files the primary's deliverable must cite (as an Evidence reference), relative to the
    /// project root: the sources that answer the question.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// Why a suite cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read suite `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("suite `{path}`: {reason}")]
    Parse { path: String, reason: String },
    #[error("suite `{path}`, task {index}: {why}")]
    UnknownAgent {
        path: String,
        index: usize,
        agent: String,
        /// What [`AgentSet::why_missing`] says of `agent`.
        why: String,
    },
    #[error("suite `{path}` has no tasks")]
    Empty { path: String },
}

/// Reads and checks a suite against the project's agents.
pub fn load_suite(path: &Path, agents: &AgentSet) -> Result<Suite, EvalError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Read {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    let suite: Suite = crate::yaml::from_str(&text).map_err(|e| EvalError::Parse {
        path: name.clone(),
        reason: e.to_string(),
    })?;
    if suite.tasks.is_empty() {
        return Err(EvalError::Empty { path: name });
    }
    for (i, task) in suite.tasks.iter().enumerate() {
        for agent in std::iter::once(&task.agent).chain(&task.expect.delegates) {
            if agents.get(agent).is_none() {
                return Err(EvalError::UnknownAgent {
                    path: name.clone(),
                    index: i + 1,
                    agent: agent.clone(),
                    why: agents.why_missing(agent),
                });
            }
        }
    }
    Ok(suite)
}

/// One agent's figures over the whole suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentScore {
    /// Answers checked against the agent's contract.
    pub hops: u64,
    pub first_time: u64,
    /// First answers with no shape violation (see the module doc); the content may still fail.
    pub shape_first_time: u64,
    pub after_repairs: u64,
    pub fallback: u64,
    /// Failed or handed up marked non-conformant.
    pub failed: u64,
    /// Delegations the suite expected of this agent, and how many were made.
    pub delegations_expected: u64,
    pub delegations_made: u64,
    /// Evidence items in the hops' final answers, and those whose reference and excerpt hold
    /// up against the project's files.
    pub evidence_items: u64,
    pub evidence_verified: u64,
    /// Sessions this agent was the primary of, with their tokens and seconds.
    pub sessions: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub seconds: f64,
}

impl AgentScore {
    /// `part` as a share of the hops, 0 when there were none.
    pub fn share(&self, part: u64) -> f64 {
        if self.hops == 0 {
            0.0
        } else {
            part as f64 / self.hops as f64
        }
    }
}

/// One session of a primary: what it delivered and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrimarySession {
    pub prompt: String,
    pub run: u32,
    /// The session's detailed status (`completed`, `partial`, …).
    pub status: String,
    /// Whether the analyst's plan passed the retrieval gate (`gate.plan`) in this session.
    pub planned: bool,
    /// Child hops the primary started, other than the agent whose answer became its plan.
    pub delegations: u64,
    /// Of those, the ones the runtime made for it: before its first turn (`delegate_first:`),
    /// and the analyses owed when it answered before anything was read (`delegate_owed`); the
    /// rest are the agent's own calls.
    pub delegations_by_runtime: u64,
    /// Whether the agent declares `deliver:`; then the deliverable the last `deliver.checked`
    /// named, and whether it met the declaration.
    pub owes: bool,
    pub deliverable: Option<String>,
    pub delivered: bool,
    /// Verified Evidence items of the deliverable, as the project's files stand after the run.
    pub evidence_verified: u64,
    pub sources_expected: Vec<String>,
    /// The expected sources the deliverable cites in an Evidence reference.
    pub sources_cited: Vec<String>,
    /// Completed, delivered with at least [`MIN_VERIFIED_TO_PASS`] verified Evidence items
    /// (when the agent owes a deliverable), planned first (when it has a gate), at least one
    /// delegation past the plan, every expected source cited: issue 27's bar for one session.
    pub passed: bool,
    pub tokens: u64,
    pub seconds: f64,
}

/// A primary's sessions added up. `completed_without_deliverable` is the number that must stay 0:
/// a session that ended COMPLETED although its `deliver:` was not met.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrimaryScore {
    pub sessions: u64,
    pub passed: u64,
    pub completed: u64,
    pub delivered: u64,
    pub completed_without_deliverable: u64,
    pub planned: u64,
    pub with_delegation: u64,
    pub delegations: u64,
    /// Of `delegations`, those the runtime made (`delegate_first:`, `delegate_owed`).
    pub delegations_by_runtime: u64,
    pub evidence_verified: u64,
    pub sources_expected: u64,
    pub sources_cited: u64,
    pub tokens: u64,
    pub seconds: f64,
    pub runs: Vec<PrimarySession>,
}

impl PrimaryScore {
    /// Mean tokens and seconds per session.
    pub fn per_session(&self) -> (f64, f64) {
        if self.sessions == 0 {
            return (0.0, 0.0);
        }
        let n = self.sessions as f64;
        (self.tokens as f64 / n, self.seconds / n)
    }

    fn add(&mut self, s: PrimarySession) {
        self.sessions += 1;
        self.passed += u64::from(s.passed);
        let completed = s.status == "completed";
        self.completed += u64::from(completed);
        self.delivered += u64::from(s.delivered);
        self.completed_without_deliverable += u64::from(completed && s.owes && !s.delivered);
        self.planned += u64::from(s.planned);
        self.with_delegation += u64::from(s.delegations > 0);
        self.delegations += s.delegations;
        self.delegations_by_runtime += s.delegations_by_runtime;
        self.evidence_verified += s.evidence_verified;
        self.sources_expected += s.sources_expected.len() as u64;
        self.sources_cited += s.sources_cited.len() as u64;
        self.tokens += s.tokens;
        self.seconds += s.seconds;
        self.runs.push(s);
    }
}

/// What a primary's session is judged by, besides its events.
pub struct PrimaryRun<'a> {
    pub task: &'a Task,
    pub run: u32,
    pub status: &'a str,
    /// Whether the agent declares `gate:` (then the plan must come first).
    pub gated: bool,
    /// Whether the agent declares `deliver:`.
    pub owes: bool,
    pub tokens: u64,
    pub seconds: f64,
}

/// Verified Evidence items a deliverable needs for its session to pass (issue 27: "their
/// deliverable written with ≥ 3 verified evidence items"), whatever its own `deliver.evidence`
/// asks: a report that verifies one excerpt is delivered, not yet the main job done.
pub const MIN_VERIFIED_TO_PASS: u64 = 3;

/// Judges one primary session from its event log and the files it left.
pub fn judge_primary(project: &Project, run: &PrimaryRun, events: &[Event]) -> PrimarySession {
    let root = events
        .iter()
        .find(|e| e.parent_hop_id.is_none() && e.kind.name() == "hop.started")
        .and_then(|e| e.hop_id.clone());
    let of_root = |e: &&Event| e.hop_id == root;
    let planned = events
        .iter()
        .filter(of_root)
        .any(|e| matches!(e.kind, EventKind::GatePlan { .. }));
    // The agents whose answer became the plan: asking for the plan is the gate's price, not
    // the work, so those hops are no delegation.
    let planners: Vec<&str> = events
        .iter()
        .filter(of_root)
        .filter_map(|e| match &e.kind {
            EventKind::GatePlan { via, .. } => Some(via.as_str()),
            _ => None,
        })
        .collect();
    let delegations = events
        .iter()
        .filter(|e| {
            e.kind.name() == "hop.started"
                && e.parent_hop_id.is_some()
                && e.parent_hop_id == root
                && !e.agent.as_deref().is_some_and(|a| planners.contains(&a))
        })
        .count() as u64;
    let delegations_by_runtime = events
        .iter()
        .filter(of_root)
        .filter(|e| {
            matches!(&e.kind, EventKind::ToolCall { call_id, tool, .. }
                if tool == "task" && crate::runtime::hop::RUNTIME_DELEGATION_IDS
                    .iter().any(|id| call_id.starts_with(id)))
        })
        .count() as u64;
    let last_check = events
        .iter()
        .filter(of_root)
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::DeliverChecked { path, outcome, .. } => {
                Some((path.clone(), outcome.clone()))
            }
            _ => None,
        });
    let (deliverable, delivered) = match last_check {
        Some((path, outcome)) => (path, outcome == "met"),
        None => (None, false),
    };
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let text = deliverable
        .as_ref()
        .and_then(|p| project.resolve(p).ok())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let evidence_verified = tally_evidence(&text, &ctx).verified;
    let cited: Vec<String> = crate::contract::parse_document(&text)
        .evidence
        .iter()
        .flat_map(|item| {
            item.references
                .iter()
                .map(|c| c.path.trim_start_matches("./").to_string())
        })
        .collect();
    let sources_expected = run.task.expect.sources.clone();
    let sources_cited: Vec<String> = sources_expected
        .iter()
        .filter(|want| cited.iter().any(|c| c == want.trim_start_matches("./")))
        .cloned()
        .collect();
    let passed = run.status == "completed"
        && (delivered || !run.owes)
        && (evidence_verified >= MIN_VERIFIED_TO_PASS || !run.owes)
        && (planned || !run.gated)
        && delegations > 0
        && sources_cited.len() == sources_expected.len();
    PrimarySession {
        prompt: run.task.prompt.clone(),
        run: run.run,
        status: run.status.to_string(),
        planned,
        delegations,
        delegations_by_runtime,
        owes: run.owes,
        deliverable,
        delivered,
        evidence_verified,
        sources_expected,
        sources_cited,
        passed,
        tokens: run.tokens,
        seconds: run.seconds,
    }
}

/// The files one session wrote, set aside so that the next session starts from the same tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SetAside {
    pub agent: String,
    pub prompt: String,
    pub run: u32,
    /// Project-relative paths as the session wrote them.
    pub files: Vec<String>,
    /// Where they are now, project-relative: `.switchboard/runs/<session>/written/`, each
    /// file under its own path.
    pub folder: String,
}

/// The suite's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EvalReport {
    pub model: String,
    pub runs: u32,
    pub agents: BTreeMap<String, AgentScore>,
    /// The main job, per primary agent: did its sessions deliver (see [`PrimaryScore`]).
    pub primaries: BTreeMap<String, PrimaryScore>,
    /// The files sessions wrote that were new, moved into their run folders once judged (see
    /// [`isolate`]); empty under `--keep-written`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<SetAside>,
    /// Sessions that could not start (the model could not be built, …), with the reason.
    pub errors: Vec<String>,
    /// The suite was stopped (Ctrl-C, SIGTERM) before its end: the session running then is
    /// scored as it ended (interrupted), and no later one ran.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl EvalReport {
    /// All agents together.
    pub fn total(&self) -> AgentScore {
        let mut t = AgentScore::default();
        for s in self.agents.values() {
            t.hops += s.hops;
            t.first_time += s.first_time;
            t.shape_first_time += s.shape_first_time;
            t.evidence_items += s.evidence_items;
            t.evidence_verified += s.evidence_verified;
            t.after_repairs += s.after_repairs;
            t.fallback += s.fallback;
            t.failed += s.failed;
            t.delegations_expected += s.delegations_expected;
            t.delegations_made += s.delegations_made;
            t.sessions += s.sessions;
            t.input_tokens += s.input_tokens;
            t.output_tokens += s.output_tokens;
            t.seconds += s.seconds;
        }
        t
    }

    /// Adds one session's events, the task it ran and what it cost; cited evidence is checked
    /// against `project`'s files.
    pub fn add_session(
        &mut self,
        project: &Project,
        task: &Task,
        events: &[Event],
        usage: (u64, u64),
        seconds: f64,
    ) {
        let files = FileCache::new();
        let check = CheckContext::new(project, &files);
        // A hop's first answer only: an answer its validator sent back is checked again from
        // repair 0 (see `stats::tally`, which counts such a hop once).
        let mut first_checked: std::collections::HashSet<&str> = Default::default();
        for e in events {
            let Some(agent) = e.agent.as_deref() else {
                continue;
            };
            match &e.kind {
                EventKind::ContractChecked {
                    repair: 0,
                    violations,
                    ..
                } if e
                    .hop_id
                    .as_deref()
                    .is_none_or(|hop| first_checked.insert(hop)) =>
                {
                    let shape_ok = !violations
                        .iter()
                        .any(|v| Rule::from_code(&v.code).is_none_or(Rule::is_shape));
                    let s = self.agents.entry(agent.to_string()).or_default();
                    s.shape_first_time += u64::from(shape_ok);
                }
                EventKind::HopCompleted { answer, .. } => {
                    let t = tally_evidence(answer, &check);
                    if t.items > 0 {
                        let s = self.agents.entry(agent.to_string()).or_default();
                        s.evidence_items += t.items;
                        s.evidence_verified += t.verified;
                    }
                }
                _ => {}
            }
        }
        for (agent, c) in tally(events, &StatsFilter::default()) {
            let s = self.agents.entry(agent).or_default();
            s.hops += c.total();
            s.first_time += c.valid_first_pass;
            s.after_repairs += c.repaired.values().sum::<u64>();
            s.fallback += c.fallback.values().sum::<u64>();
            s.failed += c.failed + c.non_conformant;
        }
        let s = self.agents.entry(task.agent.clone()).or_default();
        s.sessions += 1;
        s.input_tokens += usage.0;
        s.output_tokens += usage.1;
        s.seconds += seconds;
        s.delegations_expected += task.expect.delegates.len() as u64;
        s.delegations_made += task
            .expect
            .delegates
            .iter()
            .filter(|want| {
                events.iter().any(|e| {
                    matches!(e.kind, EventKind::HopStarted { depth, .. } if depth > 0)
                        && e.agent.as_deref() == Some(want.as_str())
                })
            })
            .count() as u64;
    }
}

/// What a suite run needs from the project.
pub struct EvalContext {
    pub project: Project,
    pub agents: Arc<AgentSet>,
    pub config: Config,
    pub models: Arc<Registry>,
    /// Wall-clock limit of each hop whose agent sets no `budget.wall_seconds` (`--hop-timeout`):
    /// a primary's hop lasts as long as its whole delegation, which on a small local model on
    /// two cores can take longer than the default's ten minutes.
    pub hop_timeout: std::time::Duration,
    /// Leave the files sessions write where they are (`--keep-written`); by default the new
    /// ones are set aside after each session ([`isolate`]).
    pub keep_written: bool,
}

/// Runs every task `runs` times on `model`, one session at a time; `progress` hears about
/// each session as it ends (the CLI prints it; the library does not). When `stop` completes
/// (the CLI's Ctrl-C or SIGTERM), the session running then ends interrupted
/// (`Session::interrupt`: its hops and itself end in its log), is scored like any other, and
/// no later one starts; the report says so (`interrupted`, and an entry in `errors`). A suite
/// of real-model sessions runs for hours, and one stopped by hand should keep what it measured.
pub async fn run_suite(
    ctx: &EvalContext,
    suite: &Suite,
    model: &str,
    runs: u32,
    progress: &(dyn Fn(&str) + Sync),
    stop: impl std::future::Future<Output = ()>,
) -> EvalReport {
    let mut report = EvalReport {
        model: model.to_string(),
        runs,
        ..EvalReport::default()
    };
    let mut stop = std::pin::pin!(stop);
    for task in suite.tasks.iter() {
        if report.interrupted {
            break;
        }
        for run in 1..=runs {
            if report.interrupted {
                break;
            }
            let options = RunOptions {
                model: Some(model.to_string()),
                hop_timeout: ctx.hop_timeout,
                ..RunOptions::default()
            };
            let before = (!ctx.keep_written).then(|| isolate::before(&ctx.project));
            let started = Instant::now();
            // Subagents run as the root hop with their contract enforced, as `switchboard mcp`
            // serves them: a suite can measure every agent directly.
            let session = match Session::for_agent(
                ctx.project.clone(),
                ctx.agents.clone(),
                ctx.config.clone(),
                ctx.models.clone(),
                options,
                &task.agent,
                &task.prompt,
            ) {
                Ok(s) => s,
                Err(e) => {
                    report.errors.push(format!("{}: {e}", task.agent));
                    continue;
                }
            };
            // `biased`: the signal handlers are installed before the session's first poll.
            let outcome = tokio::select! {
                biased;
                _ = &mut stop => {
                    report.interrupted = true;
                    session.interrupt()
                }
                outcome = session.run() => outcome,
            };
            let seconds = started.elapsed().as_secs_f64();
            let events = read_log(&outcome.events).unwrap_or_default();
            let usage = session_usage(&outcome.usage, &events);
            if let Some(e) = &outcome.error {
                report
                    .errors
                    .push(format!("{} (run {run}): {e}", task.agent));
            }
            report.add_session(&ctx.project, task, &events, usage, seconds);
            let primary = ctx
                .agents
                .get(&task.agent)
                .filter(|a| a.mode == Mode::Primary || a.deliver.is_some());
            if let Some(agent) = primary {
                let status = serde_json::to_value(outcome.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let judged = judge_primary(
                    &ctx.project,
                    &PrimaryRun {
                        task,
                        run,
                        status: &status,
                        gated: agent.gate.is_some(),
                        owes: agent.deliver.is_some(),
                        tokens: usage.0 + usage.1,
                        seconds,
                    },
                    &events,
                );
                report
                    .primaries
                    .entry(task.agent.clone())
                    .or_default()
                    .add(judged);
            }
            let mut line = format!(
                "run {run}/{runs} {}: {:?} in {seconds:.1}s",
                task.agent, outcome.status
            );
            if let Some(before) = &before {
                let files = isolate::to_set_aside(&ctx.project, before, &outcome.written);
                match (&outcome.run_folder, files.is_empty()) {
                    (_, true) => {}
                    (Some(folder), false) => {
                        match crate::runtime::runs::keep_written(&ctx.project, folder, &files) {
                            Ok(kept) => {
                                let folder = ctx.project.relative(&kept);
                                line.push_str(&format!(
                                    "; {} file(s) it wrote set aside in {folder}",
                                    files.len()
                                ));
                                report.set_aside.push(SetAside {
                                    agent: task.agent.clone(),
                                    prompt: task.prompt.clone(),
                                    run,
                                    files,
                                    folder,
                                });
                            }
                            Err(e) => report.errors.push(format!(
                                "{} (run {run}): what it wrote could not be set aside, so later \
                                 sessions see it: {e}",
                                task.agent
                            )),
                        }
                    }
                    (None, false) => report.errors.push(format!(
                        "{} (run {run}): the session has no run folder, so the {} file(s) it \
                         wrote stay and later sessions see them: {}",
                        task.agent,
                        files.len(),
                        files.join(", ")
                    )),
                }
            }
            progress(&line);
        }
    }
    if report.interrupted {
        report.errors.push(
            "interrupted: the suite was stopped before its end; the session running then \
             ended interrupted and no later one ran"
                .to_string(),
        );
    }
    report
}

/// A session's (input, output) tokens: the session's count, or the sum of every model response
/// its log records when that is more. A hop's tokens reach the session's count when the hop
/// ends, so a session that timed out or was interrupted left out the hops cut short (a
/// researcher stopped at its wall limit counted its own 10,208 tokens and not its
/// codebase-locator's first turn).
fn session_usage(counted: &crate::model::Usage, events: &[Event]) -> (u64, u64) {
    let logged = events.iter().fold((0, 0), |(i, o), e| match &e.kind {
        EventKind::ModelResponse { usage, .. } => (i + usage.input_tokens, o + usage.output_tokens),
        _ => (i, o),
    });
    let counted = (counted.input_tokens, counted.output_tokens);
    if logged.0 + logged.1 > counted.0 + counted.1 {
        logged
    } else {
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(agent: &str, kind: EventKind) -> Event {
        Event {
            timestamp: "2026-11-23T00:00:00Z".into(),
            session_id: "s".into(),
            correlation_id: "c".into(),
            hop_id: Some("h".into()),
            parent_hop_id: None,
            agent: Some(agent.into()),
            kind,
        }
    }

    fn on_hop(hop: &str, mut e: Event) -> Event {
        e.hop_id = Some(hop.into());
        e
    }

    /// A session cut short counts the responses its log holds, not only the hops that ended.
    #[test]
    fn a_session_cut_short_counts_every_logged_response() {
        let response = |input, output| {
            event(
                "locator",
                EventKind::ModelResponse {
                    step: 1,
                    usage: crate::model::Usage {
                        input_tokens: input,
                        output_tokens: output,
                        ..Default::default()
                    },
                    tool_calls: 0,
                    elapsed_us: 0,
                },
            )
        };
        let events = [response(100, 10), response(1154, 45)];
        let ended_hops = crate::model::Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Default::default()
        };
        assert_eq!(session_usage(&ended_hops, &events), (1254, 55));
        // A session whose count is the larger keeps it.
        let counted = crate::model::Usage {
            input_tokens: 5000,
            output_tokens: 10,
            ..Default::default()
        };
        assert_eq!(session_usage(&counted, &events), (5000, 10));
    }

    fn outcome(agent: &str, outcome: &str, repairs: u32) -> Event {
        event(
            agent,
            EventKind::ContractOutcome {
                contract: "c".into(),
                outcome: outcome.into(),
                repairs,
                reason: (outcome == "fallback").then(|| "schema".into()),
                sanitized: 0,
                question: false,
            },
        )
    }

    fn started(agent: &str, depth: u32) -> Event {
        event(
            agent,
            EventKind::HopStarted {
                depth,
                attempt: 0,
                message_id: "m".into(),
                model: "x".into(),
                description: String::new(),
                prompt: String::new(),
                occurrence: 0,
                started_at: String::new(),
            },
        )
    }

    #[test]
    fn sessions_add_up_per_agent() {
        let task = Task {
            agent: "researcher".into(),
            prompt: "p".into(),
            expect: Expect {
                delegates: vec!["locator".into(), "analyzer".into()],
                sources: Vec::new(),
            },
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let checked = |repair: u32, codes: &[&'static str]| {
            let violations = codes
                .iter()
                .map(|c| crate::problem::Problem::in_text(Default::default(), *c, 0..1, "x"))
                .collect();
            event(
                "locator",
                EventKind::ContractChecked {
                    contract: "c".into(),
                    message_id: "m".into(),
                    conformant: codes.is_empty(),
                    repair,
                    violations,
                },
            )
        };
        let completed = |answer: &str| {
            event(
                "locator",
                EventKind::HopCompleted {
                    status: crate::runtime::HopStatus::Completed,
                    message_id: "m".into(),
                    answer: answer.into(),
                    usage: Default::default(),
                    started_at: String::new(),
                    ended_at: String::new(),
                    duration_us: 0,
                    steps: 1,
                    conformant: Some(true),
                    violations: Vec::new(),
                    written: Vec::new(),
                },
            )
        };
        let mut r = EvalReport::default();
        let events = vec![
            started("researcher", 0),
            started("locator", 1),
            // First answers: one clean, one with only a content fault (shape ok), one with a
            // shape fault; the repair of the last does not count.
            on_hop("h1", checked(0, &[])),
            on_hop("h2", checked(0, &["evidence/file-missing"])),
            on_hop(
                "h3",
                checked(0, &["envelope/tags", "evidence/file-missing"]),
            ),
            on_hop("h3", checked(1, &[])),
            // An answer sent back by a validator is checked from repair 0 again: not a first.
            on_hop("h3", checked(0, &[])),
            completed(
                "- **Evidence**: `a.txt:2`\n- **Excerpt**:\n  ```\n  two\n  ```\n\
                 - **Evidence**: `a.txt:1`\n- **Excerpt**:\n  ```\n  two\n  ```\n",
            ),
            on_hop("h1", outcome("locator", "valid", 0)),
            on_hop("h3", outcome("locator", "repaired", 1)),
            on_hop("r1", outcome("researcher", "fallback", 2)),
            on_hop("r2", outcome("researcher", "failed", 2)),
            on_hop("r3", outcome("researcher", "non_conformant", 2)),
        ];
        r.add_session(&project, &task, &events, (100, 20), 1.5);
        let loc = &r.agents["locator"];
        assert_eq!((loc.hops, loc.first_time, loc.after_repairs), (2, 1, 1));
        assert_eq!(loc.shape_first_time, 2);
        assert_eq!((loc.evidence_items, loc.evidence_verified), (2, 1));
        assert_eq!(loc.share(loc.first_time), 0.5);
        let res = &r.agents["researcher"];
        assert_eq!((res.hops, res.fallback, res.failed), (3, 1, 2));
        assert_eq!((res.delegations_expected, res.delegations_made), (2, 1));
        assert_eq!(
            (res.input_tokens, res.output_tokens, res.sessions),
            (100, 20, 1)
        );
        let t = r.total();
        assert_eq!((t.hops, t.first_time), (5, 1));
        assert_eq!(AgentScore::default().share(0), 0.0);
    }

    #[test]
    fn a_primary_session_passes_on_three_verified_items_and_a_delegation_past_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        let item = |n: usize, line: &str| {
            format!("- **Evidence**: `a.txt:{n}`\n- **Excerpt**:\n  ```\n  {line}\n  ```\n")
        };
        let write = |items: &[(usize, &str)]| {
            let body: String = items.iter().map(|(n, l)| item(*n, l)).collect();
            std::fs::write(dir.path().join("report.md"), format!("# R\n\n{body}")).unwrap();
        };
        let task = Task {
            agent: "researcher".into(),
            prompt: "p".into(),
            expect: Expect {
                delegates: Vec::new(),
                sources: vec!["a.txt".into()],
            },
        };
        let on = |hop: &str, parent: Option<&str>, agent: &str, kind: EventKind| Event {
            hop_id: Some(hop.into()),
            parent_hop_id: parent.map(Into::into),
            ..event(agent, kind)
        };
        let start = |hop: &str, parent: Option<&str>, agent: &str| {
            let mut e = started(agent, u32::from(parent.is_some()));
            e.hop_id = Some(hop.into());
            e.parent_hop_id = parent.map(Into::into);
            e
        };
        let plan = EventKind::GatePlan {
            via: "analyst".into(),
            contract: "analyst-plan".into(),
            plan: serde_json::json!({}),
            sources: vec!["doc".into()],
            allowed: Vec::new(),
            fallback: false,
        };
        let checked = EventKind::DeliverChecked {
            write: "*.md".into(),
            path: Some("report.md".into()),
            verified: 3,
            required: 1,
            outcome: "met".into(),
            repair: 0,
        };
        let judge = |events: &[Event]| {
            let run = PrimaryRun {
                task: &task,
                run: 1,
                status: "completed",
                gated: true,
                owes: true,
                tokens: 10,
                seconds: 1.0,
            };
            judge_primary(&project, &run, events)
        };
        let mut events = vec![
            start("r", None, "researcher"),
            start("p", Some("r"), "analyst"),
            on("r", None, "researcher", plan),
            on("r", None, "researcher", checked),
        ];
        write(&[(1, "one"), (2, "two"), (3, "three")]);
        // The plan alone is no delegation.
        let s = judge(&events);
        assert_eq!((s.planned, s.delivered, s.delegations), (true, true, 0));
        assert!(!s.passed, "{s:?}");
        events.insert(2, start("l", Some("r"), "thoughts-locator"));
        let s = judge(&events);
        assert_eq!((s.delegations, s.evidence_verified), (1, 3));
        assert_eq!(s.sources_cited, ["a.txt"]);
        assert!(s.passed, "{s:?}");
        assert_eq!(s.delegations_by_runtime, 0);
        // Made by the runtime (`delegate_first:`), it is counted apart too.
        let call = EventKind::ToolCall {
            call_id: crate::runtime::hop::DELEGATE_FIRST_ID.into(),
            tool: "task".into(),
            arguments: serde_json::json!({"subagent_type": "thoughts-locator"}),
        };
        events.insert(2, on("r", None, "researcher", call));
        let s = judge(&events);
        assert_eq!((s.delegations, s.delegations_by_runtime), (1, 1));
        events.remove(2);
        // Two verified items (one of three excerpts is wrong) are not enough.
        write(&[(1, "one"), (2, "two"), (3, "not line three")]);
        let s = judge(&events);
        assert_eq!(s.evidence_verified, 2);
        assert!(!s.passed, "{s:?}");
    }

    #[test]
    fn suites_name_their_mistakes() {
        let dir = tempfile::tempdir().unwrap();
        let agents = AgentSet::default();
        let path = dir.path().join("s.yaml");
        let e = load_suite(&path, &agents).unwrap_err().to_string();
        assert!(e.contains("cannot read suite"), "{e}");
        std::fs::write(&path, "tasks:\n  - agent: a\n    promt: x\n").unwrap();
        let e = load_suite(&path, &agents).unwrap_err().to_string();
        assert!(e.contains("promt"), "{e}");
        std::fs::write(&path, "tasks: []\n").unwrap();
        let e = load_suite(&path, &agents).unwrap_err().to_string();
        assert!(e.contains("no tasks"), "{e}");
        std::fs::write(&path, "tasks:\n  - agent: ghost\n    prompt: x\n").unwrap();
        let e = load_suite(&path, &agents).unwrap_err().to_string();
        assert!(e.contains("task 1") && e.contains("`ghost`"), "{e}");
    }

    #[test]
    fn the_shipped_suite_covers_every_agent() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let project = Project::open(root).unwrap();
        let agents = crate::agent::load(&project, &crate::agent::LoadOptions::default());
        let suite = load_suite(&root.join("evals/agents.yaml"), &agents).unwrap();
        let covered: std::collections::BTreeSet<&str> =
            suite.tasks.iter().map(|t| t.agent.as_str()).collect();
        let missing: Vec<&str> = agents
            .iter()
            .map(|a| a.name.as_str())
            .filter(|name| !covered.contains(name))
            .collect();
        assert!(
            missing.is_empty(),
            "evals/agents.yaml has no task for {missing:?}"
        );
    }
}
