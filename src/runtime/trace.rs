//! Rebuilding the hop tree of a session from its event log (for `trace` and `sessions`).

use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

use super::events::EventKind;
use super::status::{HopProgress, HopStatus, SessionProgress};
use super::store::{self, log_path, LogError, SESSIONS_DIR};
use crate::problem::Problem;
use crate::project::Project;

/// One hop as the log tells it.
#[derive(Debug, Clone, Serialize)]
pub struct HopNode {
    pub hop_id: String,
    pub parent_hop_id: Option<String>,
    pub agent: String,
    pub depth: u32,
    pub message_id: String,
    /// `running` (no end in the log), `completed`, `partial`, `non_conformant`, `failed`.
    pub status: HopProgress,
    pub attempts: u32,
    pub reused: bool,
    pub started_at: Option<String>,
    pub duration_ms: Option<f64>,
    pub tokens: u64,
    /// `None`: no contract; else whether the last check passed.
    pub conformant: Option<bool>,
    pub violations: usize,
    /// The violations of the last check (or of the hop's end), for `trace` to list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violation_list: Vec<Problem>,
    pub repairs: u32,
    pub error: Option<String>,
    /// The plan the hop's gate accepted last (`gate.plan`), if it has a gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<GatePlan>,
    /// Calls the hop's gate refused (`gate.refused`): the tool, or `task → agent`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gate_refusals: Vec<String>,
    pub children: Vec<HopNode>,
}

/// A plan a hop's gate accepted, as `trace` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct GatePlan {
    /// `plan` (the agent's own tool) or the planning agent's name.
    pub via: String,
    pub contract: String,
    pub plan: serde_json::Value,
    pub sources: Vec<String>,
    pub allowed: Vec<String>,
    pub fallback: bool,
}

/// A session as the log tells it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionTrace {
    pub session_id: String,
    pub correlation_id: String,
    pub agent: String,
    pub prompt: String,
    pub started_at: String,
    /// `incomplete` when the log has no `session.completed`.
    pub status: SessionProgress,
    pub hops: usize,
    pub tokens: u64,
    pub roots: Vec<HopNode>,
    /// Bytes of torn last lines cut off before a resume appended (`log.repaired`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log_repairs: Vec<u64>,
}

/// Reads `.switchboard/sessions/<id>/events.jsonl` of `project`.
pub fn load(project: &Project, session_id: &str) -> Result<SessionTrace, LogError> {
    from_log(&log_path(project, session_id)?)
}

/// Rebuilds the trace from the log at `path`.
pub fn from_log(path: &Path) -> Result<SessionTrace, LogError> {
    let events = store::read(path)?;
    let mut trace = SessionTrace {
        session_id: String::new(),
        correlation_id: String::new(),
        agent: String::new(),
        prompt: String::new(),
        started_at: String::new(),
        status: SessionProgress::Incomplete,
        hops: 0,
        tokens: 0,
        roots: Vec::new(),
        log_repairs: Vec::new(),
    };
    let mut nodes: HashMap<String, HopNode> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for e in &events {
        let agent = e.agent.clone().unwrap_or_default();

        match &e.kind {
            EventKind::SessionStarted { prompt, .. } => {
                if trace.session_id.is_empty() {
                    trace.session_id = e.session_id.clone();
                    trace.correlation_id = e.correlation_id.clone();
                    trace.agent = agent.clone();
                    trace.prompt = prompt.clone();
                    trace.started_at = e.timestamp.clone();
                }
                trace.status = SessionProgress::Incomplete;
            }
            EventKind::SessionCompleted { status, .. } => {
                trace.status = SessionProgress::Ended(*status)
            }
            EventKind::LogRepaired { dropped_bytes } => trace.log_repairs.push(*dropped_bytes),
            EventKind::HopStarted {
                depth,
                attempt,
                message_id,
                started_at,
                ..
            } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.depth = *depth;
                    n.attempts = n.attempts.max(*attempt);
                    n.message_id = message_id.clone();
                    n.started_at = Some(started_at.clone());
                    n.status = HopProgress::Running;
                    n.error = None;
                }
            }
            EventKind::ModelResponse { usage, .. } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.tokens += usage.total();
                }
            }
            EventKind::ContractChecked {
                conformant,
                violations,
                ..
            } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.conformant = Some(*conformant);
                    n.violations = violations.len();
                    n.violation_list = violations.clone();
                }
            }
            EventKind::HopRepair { .. } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.repairs += 1;
                }
            }
            EventKind::HopCompleted {
                status,
                duration_us,
                ..
            } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.status = HopProgress::Ended(*status);
                    n.duration_ms = Some(*duration_us as f64 / 1000.0);
                }
            }
            EventKind::HopBlocked { .. } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.status = HopProgress::Ended(HopStatus::Blocked);
                }
            }
            EventKind::HopFailed {
                error,
                duration_us,
                violations,
                ..
            } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    // A blocked hop logged `hop.blocked` just before: it stays blocked.
                    if n.status != HopProgress::Ended(HopStatus::Blocked) {
                        n.status = HopProgress::Ended(HopStatus::Failed);
                    }
                    n.error = Some(error.clone());
                    if !violations.is_empty() {
                        n.violation_list = violations.clone();
                    }
                    if *duration_us > 0 {
                        n.duration_ms = Some(*duration_us as f64 / 1000.0);
                    }
                }
            }
            EventKind::HopReused { .. } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.reused = true;
                }
            }
            EventKind::GatePlan {
                via,
                contract,
                plan,
                sources,
                allowed,
                fallback,
            } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.plan = Some(GatePlan {
                        via: via.clone(),
                        contract: contract.clone(),
                        plan: plan.clone(),
                        sources: sources.clone(),
                        allowed: allowed.clone(),
                        fallback: *fallback,
                    });
                }
            }
            EventKind::GateRefused { tool, target, .. } => {
                if let Some(n) = node_for(&mut nodes, &mut order, e) {
                    n.gate_refusals.push(match target {
                        Some(t) => format!("{tool} → {t}"),
                        None => tool.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    trace.hops = nodes.len();
    trace.tokens = nodes.values().map(|n| n.tokens).sum();
    // Assemble children under parents, deepest first so each subtree is complete when moved.
    let mut ids = order;
    ids.sort_by_key(|id| std::cmp::Reverse(nodes.get(id).map_or(0, |n| n.depth)));
    let mut children: HashMap<String, Vec<HopNode>> = HashMap::new();
    let mut roots = Vec::new();
    for id in &ids {
        let Some(mut n) = nodes.remove(id) else {
            continue;
        };
        n.children = children.remove(id).unwrap_or_default();
        match n.parent_hop_id.clone() {
            Some(p) if nodes.contains_key(&p) => children.entry(p).or_default().push(n),
            _ => roots.push(n),
        }
    }
    trace.roots = roots;
    Ok(trace)
}

/// Every session of a project, newest first, as summaries (hop trees included).
pub fn list(project: &Project) -> Vec<SessionTrace> {
    let dir = project.root().join(SESSIONS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionTrace> = entries
        .filter_map(Result::ok)
        .filter_map(|e| from_log(&e.path().join("events.jsonl")).ok())
        .filter(|t| !t.session_id.is_empty())
        .collect();
    out.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    out
}

fn node_for<'n>(
    nodes: &'n mut HashMap<String, HopNode>,
    order: &mut Vec<String>,
    e: &super::events::Event,
) -> Option<&'n mut HopNode> {
    let hop_id = e.hop_id.clone().filter(|h| !h.is_empty())?;
    if !nodes.contains_key(&hop_id) {
        order.push(hop_id.clone());
    }
    Some(nodes.entry(hop_id.clone()).or_insert_with(|| HopNode {
        hop_id,
        parent_hop_id: e.parent_hop_id.clone(),
        agent: e.agent.clone().unwrap_or_default(),
        depth: 0,
        message_id: String::new(),
        status: HopProgress::Running,
        attempts: 0,
        reused: false,
        started_at: None,
        duration_ms: None,
        tokens: 0,
        conformant: None,
        violations: 0,
        violation_list: Vec::new(),
        repairs: 0,
        plan: None,
        gate_refusals: Vec::new(),
        error: None,
        children: Vec::new(),
    }))
}
