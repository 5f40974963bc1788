//! Run folders: `.switchboard/runs/<session>/`, what a person (or a tool) reads after a session
//! without replaying its log. Written once when the session ends, entirely from its event log:
//!
//! - `RESULTS.md`: YAML frontmatter (status, outcome, counts, checkpoint, next steps) a tool can
//!   read, then the same in prose;
//! - `THOUGHTS.md`: each hop's `<thinking>` (or, without one, the start of its answer);
//! - `DECISIONS.md`: contract outcomes (validated plans, repairs, fallbacks), refused tool calls,
//!   BLOCKED reasons, checkpoints, validator verdicts and any `gate.*` event, in log order;
//! - `metadata.yaml`: ids, agent, model, prompt, times, usage;
//! - `events.jsonl`: a copy of the log.
//!
//! The log is read as plain JSON lines, not as [`super::EventKind`], so event types this module
//! does not know (another module's `gate.plan`) still land in DECISIONS.md. A later run of the
//! same session (`resume`) rewrites the folder from the whole log. The library writes the files;
//! the CLI prints.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::status::{Outcome, SessionStatus};
use crate::project::Project;

/// Where run folders live, relative to the project root.
pub const RUNS_DIR: &str = ".switchboard/runs";

/// Why a run folder could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error("cannot read or write {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "no run `{0}` in {RUNS_DIR}; `switchboard runs list` lists them (a session gets its \
         folder when it ends)"
    )]
    NoRun(String),
    #[error("{}: not a run's metadata: {error}", path.display())]
    BadMetadata { path: PathBuf, error: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunsError + '_ {
    move |error| RunsError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// `metadata.yaml`, and the frontmatter of `RESULTS.md` without its lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub session_id: String,
    pub correlation_id: String,
    pub agent: String,
    #[serde(default)]
    pub model: Option<String>,
    pub prompt: String,
    /// The detailed status word (`completed`, `non_conformant`, …), `incomplete` if unended.
    pub status: String,
    /// COMPLETED, PARTIAL, BLOCKED, FAILED or NEEDS_INPUT; empty if the session never ended.
    pub outcome: String,
    pub started_at: String,
    pub ended_at: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Hops per outcome.
    #[serde(default)]
    pub hops: BTreeMap<String, u64>,
    /// The number of times the session ran (1 + resumes).
    pub runs: u64,
}

/// Writes (or rewrites) the run folder of `session_id` from the log at `log`; returns the folder.
pub fn write(project: &Project, session_id: &str, log: &Path) -> Result<PathBuf, RunsError> {
    let text = std::fs::read_to_string(log).map_err(io(log))?;
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let dir = project.root().join(RUNS_DIR).join(session_id);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let summary = Summary::of(&events);
    let files = [
        ("events.jsonl", text.clone()),
        ("metadata.yaml", yaml_of(&summary.meta)),
        ("RESULTS.md", summary.results()),
        ("THOUGHTS.md", thoughts(&events)),
        ("DECISIONS.md", decisions(&events)),
    ];
    for (name, body) in files {
        let path = dir.join(name);
        std::fs::write(&path, body).map_err(io(&path))?;
    }
    Ok(dir)
}

/// Where [`keep_written`] puts a session's files, inside its run folder.
pub const WRITTEN_DIR: &str = "written";

/// Moves `files` (project-relative, each confined to the project) into the run folder's
/// [`WRITTEN_DIR`], under the same relative paths: what an `eval` session wrote, set aside so
/// that the next session starts from the same tree, and kept beside the log that explains it.
/// Returns the folder they went to. Stops at the first file it cannot move, naming it; the
/// ones before it are moved.
pub fn keep_written(
    project: &Project,
    run_folder: &Path,
    files: &[String],
) -> Result<PathBuf, RunsError> {
    let kept = run_folder.join(WRITTEN_DIR);
    for rel in files {
        let from = project.root().join(rel);
        project.resolve(rel).map_err(|e| RunsError::Io {
            path: from.clone(),
            error: std::io::Error::other(e.to_string()),
        })?;
        let to = kept.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::rename(&from, &to).map_err(io(&from))?;
    }
    Ok(kept)
}

/// What RESULTS.md says, gathered in one pass over the log.
struct Summary {
    meta: RunMeta,
    answer: String,
    error: Option<String>,
    done: Vec<String>,
    remaining: Vec<String>,
    next_steps: Vec<String>,
    checkpoint_at: Option<String>,
    blocked: Option<(String, String)>,
}

fn s(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Summary {
    fn of(events: &[Value]) -> Summary {
        let mut meta = RunMeta {
            status: "incomplete".into(),
            ..RunMeta::default()
        };
        let mut sum = Summary {
            meta: RunMeta::default(),
            answer: String::new(),
            error: None,
            done: Vec::new(),
            remaining: Vec::new(),
            next_steps: Vec::new(),
            checkpoint_at: None,
            blocked: None,
        };
        let mut root = String::new();
        let mut hop_status: BTreeMap<String, String> = BTreeMap::new();
        for e in events {
            let hop = s(e, "hop_id");
            match s(e, "type").as_str() {
                "session.started" => {
                    meta.runs += 1;
                    if meta.session_id.is_empty() {
                        meta.session_id = s(e, "session_id");
                        meta.correlation_id = s(e, "correlation_id");
                        meta.agent = s(e, "agent");
                        meta.prompt = s(e, "prompt");
                        meta.started_at = s(e, "timestamp");
                        root = hop.clone();
                    }
                    if let Some(m) = e.get("model").and_then(Value::as_str) {
                        meta.model = Some(m.to_string());
                    }
                }
                "hop.completed" => {
                    hop_status.insert(hop, s(e, "status"));
                }
                "hop.failed" => {
                    // A blocked hop logs `hop.blocked` first; keep that word.
                    let entry = hop_status.entry(hop).or_default();
                    if entry != "blocked" {
                        *entry = "failed".into();
                    }
                }
                "hop.blocked" => {
                    hop_status.insert(hop.clone(), "blocked".into());
                    if hop == root {
                        sum.blocked = Some((s(e, "reason"), s(e, "action")));
                    }
                }
                "hop.checkpoint" if hop == root => {
                    let c = e.get("checkpoint").cloned().unwrap_or(Value::Null);
                    sum.done = strings(&c, "done");
                    sum.remaining = strings(&c, "remaining");
                    sum.next_steps = strings(&c, "next_steps");
                    sum.checkpoint_at = Some(s(e, "timestamp"));
                }
                "session.completed" => {
                    meta.status = s(e, "status");
                    meta.ended_at = s(e, "timestamp");
                    sum.answer = s(e, "answer");
                    sum.error = e.get("error").and_then(Value::as_str).map(str::to_string);
                    let usage = e.get("usage").cloned().unwrap_or(Value::Null);
                    meta.input_tokens += usage
                        .get("input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    meta.output_tokens += usage
                        .get("output_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                }
                _ => {}
            }
        }
        meta.outcome = serde_json::from_value::<SessionStatus>(Value::String(meta.status.clone()))
            .map(|st| st.outcome().as_str().to_string())
            .unwrap_or_default();
        for status in hop_status.values() {
            let word = serde_json::from_value::<SessionStatus>(Value::String(status.clone()))
                .map(|st| st.outcome())
                .unwrap_or(Outcome::Failed);
            *meta.hops.entry(word.as_str().to_string()).or_default() += 1;
        }
        if meta.outcome != Outcome::Partial.as_str() {
            // A checkpoint an earlier run left is not what this outcome continues from.
            sum.done.clear();
            sum.remaining.clear();
            sum.next_steps.clear();
            sum.checkpoint_at = None;
        }
        sum.meta = meta;
        sum
    }

    fn next_steps(&self) -> Vec<String> {
        let id = &self.meta.session_id;
        match self.meta.outcome.as_str() {
            "PARTIAL" => {
                let mut steps = self.next_steps.clone();
                steps.push(format!("switchboard resume {id}"));
                steps
            }
            "NEEDS_INPUT" => vec![format!("switchboard resume {id} --answer \"…\"")],
            "BLOCKED" => vec![self
                .blocked
                .as_ref()
                .map(|(_, action)| action.clone())
                .unwrap_or_else(|| "read the error below and fix its cause".into())],
            "FAILED" => vec![format!(
                "see the error below; `switchboard trace {id}` shows where it failed"
            )],
            _ => Vec::new(),
        }
    }

    fn results(&self) -> String {
        let m = &self.meta;
        let mut out = String::from("---\n");
        out.push_str(&yaml_of(m));
        let lists = [
            ("done", &self.done),
            ("remaining", &self.remaining),
            ("next_steps", &self.next_steps()),
        ];
        if let Some(at) = &self.checkpoint_at {
            let _ = writeln!(out, "checkpoint_at: {}", quote(at));
        }
        for (key, items) in lists {
            out.push_str(&yaml_list(key, items));
        }
        out.push_str("---\n\n");
        let _ = writeln!(out, "# {} — {}\n", m.outcome, m.agent);
        let _ = writeln!(out, "Session `{}` ({}).\n", m.session_id, m.status);
        let _ = writeln!(out, "Task: {}\n", m.prompt);
        if let Some((reason, action)) = &self.blocked {
            let _ = writeln!(
                out,
                "**Blocked:** {reason}\n\n**A person must:** {action}\n"
            );
        } else if let Some(e) = &self.error {
            let _ = writeln!(out, "**Why:** {e}\n");
        }
        for (title, items) in lists {
            if !items.is_empty() {
                let _ = writeln!(out, "## {}\n", title.replace('_', " "));
                for i in items {
                    let _ = writeln!(out, "- {i}");
                }
                out.push('\n');
            }
        }
        if !self.answer.trim().is_empty() {
            let _ = writeln!(out, "## answer\n\n{}", self.answer.trim_end());
        }
        out
    }
}

/// A YAML double-quoted scalar (JSON's string escapes are YAML's).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn yaml_list(key: &str, items: &[String]) -> String {
    if items.is_empty() {
        return format!("{key}: []\n");
    }
    let mut out = format!("{key}:\n");
    for i in items {
        let _ = writeln!(out, "  - {}", quote(i));
    }
    out
}

/// `metadata.yaml`: one key a line, strings quoted, so any prompt round-trips.
fn yaml_of(m: &RunMeta) -> String {
    let mut out = String::new();
    for (k, v) in [
        ("session_id", &m.session_id),
        ("correlation_id", &m.correlation_id),
        ("agent", &m.agent),
        ("prompt", &m.prompt),
        ("status", &m.status),
        ("outcome", &m.outcome),
        ("started_at", &m.started_at),
        ("ended_at", &m.ended_at),
    ] {
        let _ = writeln!(out, "{k}: {}", quote(v));
    }
    match &m.model {
        Some(model) => {
            let _ = writeln!(out, "model: {}", quote(model));
        }
        None => out.push_str("model: null\n"),
    }
    let _ = writeln!(out, "input_tokens: {}", m.input_tokens);
    let _ = writeln!(out, "output_tokens: {}", m.output_tokens);
    let _ = writeln!(out, "runs: {}", m.runs);
    if m.hops.is_empty() {
        out.push_str("hops: {}\n");
    } else {
        out.push_str("hops:\n");
        for (k, n) in &m.hops {
            let _ = writeln!(out, "  {k}: {n}");
        }
    }
    out
}

/// THOUGHTS.md: each ended hop's thinking, in the order the hops ended.
fn thoughts(events: &[Value]) -> String {
    let mut out =
        String::from("# Thoughts\n\nEach hop's reasoning, as its final answer gave it.\n");
    for e in events.iter().filter(|e| s(e, "type") == "hop.completed") {
        let answer = s(e, "answer");
        let thinking = between(&answer, "<thinking>", "</thinking>").unwrap_or_else(|| {
            let head: String = answer.chars().take(600).collect();
            if head.len() < answer.len() {
                format!("{head}…")
            } else {
                head
            }
        });
        let _ = write!(
            out,
            "\n## {} — {} ({})\n\n{}\n",
            s(e, "agent"),
            s(e, "hop_id"),
            s(e, "status"),
            thinking.trim()
        );
    }
    out
}

fn between(text: &str, open: &str, close: &str) -> Option<String> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(text[start..end].to_string())
}

/// DECISIONS.md: what was decided and why, in log order.
fn decisions(events: &[Value]) -> String {
    let mut out = String::from(
        "# Decisions\n\nContract outcomes, refusals, BLOCKED reasons, checkpoints and gate \
         decisions, in the order they happened.\n\n",
    );
    let mut any = false;
    // A call the gate refused has its own line; its tool error would only say it again.
    let gate_refused: std::collections::HashSet<String> = events
        .iter()
        .filter(|e| s(e, "type") == "gate.refused")
        .map(|e| s(e, "call_id"))
        .collect();
    for e in events {
        let ty = s(e, "type");
        let who = format!("`{}` ({})", s(e, "agent"), s(e, "timestamp"));
        let line = match ty.as_str() {
            "contract.outcome" => {
                let mut l = format!(
                    "contract `{}`: {} after {} repair(s)",
                    s(e, "contract"),
                    s(e, "outcome"),
                    e.get("repairs").and_then(Value::as_u64).unwrap_or(0)
                );
                if let Some(r) = e.get("reason").and_then(Value::as_str) {
                    let _ = write!(l, ", reason {r}");
                }
                l
            }
            "tool.result" if gate_refused.contains(&s(e, "call_id")) => continue,
            "tool.result" if e.get("is_error").and_then(Value::as_bool) == Some(true) => {
                format!(
                    "tool `{}` refused or failed: {}",
                    s(e, "tool"),
                    s(e, "output")
                )
            }
            "hop.blocked" => format!(
                "BLOCKED: {} — a person must: {}",
                s(e, "reason"),
                s(e, "action")
            ),
            "hop.checkpoint" => format!("checkpoint (PARTIAL): {}", s(e, "reason")),
            "validator.verdict" => {
                let line = format!(
                    "validator `{}` round {}: {} — {}",
                    s(e, "validator"),
                    e.get("round").and_then(Value::as_u64).unwrap_or(0),
                    s(e, "verdict"),
                    s(e, "feedback")
                );
                match e.get("overruled").and_then(Value::as_str) {
                    Some(why) => format!("{line} (overruled by the runtime: {why})"),
                    None => line,
                }
            }
            "model.tools_fallback" => format!("tools fallback: {}", s(e, "reason")),
            "gate.plan" => {
                let list = |key: &str| {
                    let items: Vec<&str> = e
                        .get(key)
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    if items.is_empty() {
                        "nothing".to_string()
                    } else {
                        items.join(", ")
                    }
                };
                let via = match s(e, "via").as_str() {
                    "plan" => "its `plan` call".to_string(),
                    v => format!("`{v}`"),
                };
                let fallback = if e.get("fallback").and_then(Value::as_bool) == Some(true) {
                    " (the planner's declared fallback)"
                } else {
                    ""
                };
                format!(
                    "gate: plan from {via}{fallback} passed contract `{}`; sources {} open {}; \
                     plan {}",
                    s(e, "contract"),
                    list("sources"),
                    list("allowed"),
                    e.get("plan").map_or(String::new(), Value::to_string)
                )
            }
            "gate.refused" => format!("gate refused `{}`: {}", s(e, "tool"), s(e, "reason")),
            t if t.starts_with("gate.") => {
                let mut fields = e.clone();
                if let Some(map) = fields.as_object_mut() {
                    for k in [
                        "timestamp",
                        "session_id",
                        "correlation_id",
                        "hop_id",
                        "parent_hop_id",
                        "agent",
                        "type",
                    ] {
                        map.remove(k);
                    }
                }
                format!("{t}: {fields}")
            }
            _ => continue,
        };
        any = true;
        let _ = writeln!(out, "- {who}: {}", line.replace('\n', " "));
    }
    if !any {
        out.push_str("Nothing to record: no contract, refusal or gate decision in this run.\n");
    }
    out
}

/// One run folder, as `runs list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunEntry {
    pub dir: PathBuf,
    #[serde(flatten)]
    pub meta: RunMeta,
}

/// Every run folder with readable metadata, newest first (by end time, then id).
pub fn list(project: &Project) -> Result<Vec<RunEntry>, RunsError> {
    let root = project.root().join(RUNS_DIR);
    let read = match std::fs::read_dir(&root) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&root)(e)),
    };
    let mut runs = Vec::new();
    for entry in read.flatten() {
        // Only real folders: a symlink here is not ours to read or delete.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        if let Ok(meta) = read_meta(&dir) {
            runs.push(RunEntry { dir, meta });
        }
    }
    runs.sort_by(|a, b| {
        (&b.meta.ended_at, &b.meta.session_id).cmp(&(&a.meta.ended_at, &a.meta.session_id))
    });
    Ok(runs)
}

fn read_meta(dir: &Path) -> Result<RunMeta, RunsError> {
    let path = dir.join("metadata.yaml");
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    crate::yaml::from_str(&text).map_err(|e| RunsError::BadMetadata {
        path,
        error: e.to_string(),
    })
}

/// The run of `session_id` and its RESULTS.md.
pub fn show(project: &Project, session_id: &str) -> Result<(RunEntry, String), RunsError> {
    let rel = format!("{RUNS_DIR}/{session_id}");
    let dir = project
        .resolve(&rel)
        .map_err(|_| RunsError::NoRun(session_id.to_string()))?;
    if !dir.is_dir() {
        return Err(RunsError::NoRun(session_id.to_string()));
    }
    let meta = read_meta(&dir)?;
    let results_path = dir.join("RESULTS.md");
    let results = std::fs::read_to_string(&results_path).map_err(io(&results_path))?;
    Ok((RunEntry { dir, meta }, results))
}

/// Deletes every run folder but the newest `keep`; returns the removed sessions' ids. Session
/// logs under `.switchboard/sessions/` stay: a run folder can be written again from them.
pub fn gc(project: &Project, keep: usize) -> Result<Vec<String>, RunsError> {
    let mut removed = Vec::new();
    for run in list(project)?.into_iter().skip(keep) {
        std::fs::remove_dir_all(&run.dir).map_err(io(&run.dir))?;
        removed.push(run.meta.session_id);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests;
