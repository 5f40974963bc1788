//! Spans from events: the one place that decides what a session looks like as a trace.
//!
//! The live exporter (fed by the runtime's `Observer`) and `trace --otlp` (fed by an old
//! `events.jsonl`) push the same events through [`SpanAssembler::push`], so a session exported
//! live and re-exported later gives the same span tree, ids and attributes. A span is emitted when
//! its end arrives; its times come from the events, never from the clock of the exporter.
//!
//! Ids are derived, not random: the trace id is the session's UUID, a hop span's id comes from the
//! hop's UUID (and attempt), model and tool spans hash their hop, step or call id. That makes a
//! re-export idempotent and lets a reader go from a span back to the log.

use std::collections::HashMap;
use std::time::SystemTime;

use crate::runtime::events::{Event, EventKind, HopStatus};

/// Attribute values (the subset of OTLP's that switchboard uses).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Bool(bool),
}

/// Whether the span calls out of the process (a model) or stays inside (hops, tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Client,
}

/// One finished span, independent of any OpenTelemetry crate.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, AttrValue)>,
    /// `Some(description)` marks the span as failed.
    pub error: Option<String>,
}

impl SpanRecord {
    /// The value of attribute `key`, if set.
    pub fn attr(&self, key: &str) -> Option<&AttrValue> {
        self.attributes
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Session,
    Hop(String),
    Model(String, u32),
    Tool(String, String),
}

/// Turns a stream of events into finished spans.
#[derive(Debug, Default)]
pub struct SpanAssembler {
    trace_id: Option<[u8; 16]>,
    session_span: Option<[u8; 8]>,
    /// The current run's `session.started` time: part of derived ids, so a resumed run's model and
    /// tool spans differ from the dead run's, and a live export matches a re-export.
    run_tag: String,
    /// Span id of each hop's latest attempt, for its children's parent links.
    hop_spans: HashMap<String, [u8; 8]>,
    /// `(provider, model)` of each hop, for its model-call spans.
    hop_models: HashMap<String, (String, String)>,
    open: HashMap<Key, SpanRecord>,
    /// Order the open spans were started in, so leftovers close deterministically.
    order: Vec<Key>,
    last_time: Option<SystemTime>,
}

impl SpanAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one event; returns the spans it finished (often none).
    pub fn push(&mut self, e: &Event) -> Vec<SpanRecord> {
        let before = self.last_time;
        let at = parse_time(&e.timestamp).or(before);
        let Some(at) = at else {
            return Vec::new();
        };
        self.last_time = Some(at);
        if self.trace_id.is_none() && !e.session_id.is_empty() {
            self.trace_id = Some(trace_id(&e.session_id));
        }
        let hop = e.hop_id.clone().unwrap_or_default();
        let mut done = Vec::new();
        match &e.kind {
            EventKind::SessionStarted { resumed, model, .. } => {
                // A run that died left spans open: they end where its log ends.
                if let Some(prev) = before {
                    self.last_time = Some(prev);
                    done.extend(self.finish());
                    self.last_time = Some(at);
                }
                self.run_tag = e.timestamp.clone();
                let id = hash64(&format!("{}#session#{}", e.session_id, self.run_tag));
                self.session_span = Some(id);
                let mut attrs = ids(e);
                attrs.push(("switchboard.session.resumed", AttrValue::Bool(*resumed)));
                if let Some(m) = model {
                    attrs.push(("switchboard.session.model", AttrValue::Str(m.clone())));
                }
                let name = format!("session {}", e.agent.as_deref().unwrap_or(""));
                self.open(Key::Session, id, None, name, Kind::Internal, at, attrs);
            }
            EventKind::HopStarted {
                depth,
                attempt,
                message_id,
                model,
                started_at,
                ..
            } => {
                let id = hop_span_id(&hop, *attempt);
                // An earlier attempt still open (its end never logged) ends here.
                let key = Key::Hop(hop.clone());
                if self.open.contains_key(&key) {
                    done.extend(self.close_children(&hop, at));
                    done.extend(self.close_unfinished(vec![key], at));
                }
                let parent = self.parent_of(e);
                self.hop_spans.insert(hop.clone(), id);
                let (provider, model_name) = split_model(model);
                self.hop_models
                    .insert(hop.clone(), (provider.clone(), model_name.clone()));
                let agent = e.agent.clone().unwrap_or_default();
                let mut attrs = vec![
                    ("gen_ai.operation.name", str_attr("invoke_agent")),
                    ("gen_ai.agent.name", AttrValue::Str(agent.clone())),
                    ("gen_ai.provider.name", AttrValue::Str(provider.clone())),
                    ("gen_ai.system", AttrValue::Str(provider)),
                    ("gen_ai.request.model", AttrValue::Str(model_name)),
                ];
                attrs.extend(ids(e));
                attrs.push(("switchboard.message.id", str_attr(message_id)));
                attrs.push(("switchboard.hop.depth", AttrValue::Int(*depth as i64)));
                attrs.push(("switchboard.hop.attempt", AttrValue::Int(*attempt as i64)));
                let start = parse_time(started_at).unwrap_or(at);
                let name = format!("invoke_agent {agent}");
                self.open(
                    Key::Hop(hop),
                    id,
                    parent,
                    name,
                    Kind::Internal,
                    start,
                    attrs,
                );
            }
            EventKind::ModelRequest { step, .. } => {
                let id = hash64(&format!("{hop}#model#{step}#{}", self.run_tag));
                let parent = self.hop_spans.get(&hop).copied();
                let (provider, model) = self.hop_models.get(&hop).cloned().unwrap_or_default();
                let mut attrs = vec![
                    ("gen_ai.operation.name", str_attr("chat")),
                    ("gen_ai.provider.name", AttrValue::Str(provider.clone())),
                    ("gen_ai.system", AttrValue::Str(provider)),
                    ("gen_ai.request.model", AttrValue::Str(model.clone())),
                ];
                if let Some(a) = &e.agent {
                    attrs.push(("gen_ai.agent.name", str_attr(a)));
                }
                attrs.extend(ids(e));
                attrs.push(("switchboard.model.step", AttrValue::Int(*step as i64)));
                let key = Key::Model(hop, *step);
                self.open(
                    key,
                    id,
                    parent,
                    format!("chat {model}"),
                    Kind::Client,
                    at,
                    attrs,
                );
            }
            EventKind::ModelResponse {
                step,
                usage,
                tool_calls,
                ..
            } => {
                if let Some(mut s) = self.take(&Key::Model(hop, *step)) {
                    s.attributes.extend([
                        ("gen_ai.usage.input_tokens", int(usage.input_tokens)),
                        ("gen_ai.usage.output_tokens", int(usage.output_tokens)),
                        ("switchboard.model.tool_calls", int(*tool_calls as u64)),
                    ]);
                    s.end = at;
                    done.push(s);
                }
            }
            EventKind::ModelError { step, error, .. } => {
                if let Some(mut s) = self.take(&Key::Model(hop, *step)) {
                    s.attributes.push(("error.type", str_attr("model_error")));
                    s.error = Some(error.clone());
                    s.end = at;
                    done.push(s);
                }
            }
            EventKind::ModelRetry { step, .. } => {
                if let Some(s) = self.open.get_mut(&Key::Model(hop, *step)) {
                    bump(s, "switchboard.model.retries");
                }
            }
            EventKind::ToolCall { call_id, tool, .. } => {
                let id = hash64(&format!("{hop}#tool#{call_id}#{}", self.run_tag));
                let parent = self.hop_spans.get(&hop).copied();
                let mut attrs = vec![
                    ("gen_ai.operation.name", str_attr("execute_tool")),
                    ("gen_ai.tool.name", str_attr(tool)),
                    ("gen_ai.tool.call.id", str_attr(call_id)),
                ];
                if let Some(a) = &e.agent {
                    attrs.push(("gen_ai.agent.name", str_attr(a)));
                }
                attrs.extend(ids(e));
                let key = Key::Tool(hop, call_id.clone());
                let name = format!("execute_tool {tool}");
                self.open(key, id, parent, name, Kind::Internal, at, attrs);
            }
            EventKind::ToolResult {
                call_id,
                is_error,
                child_hop_id,
                ..
            } => {
                if let Some(mut s) = self.take(&Key::Tool(hop, call_id.clone())) {
                    if let Some(c) = child_hop_id {
                        s.attributes
                            .push(("switchboard.tool.child_hop.id", str_attr(c)));
                    }
                    if *is_error {
                        s.attributes.push(("error.type", str_attr("tool_error")));
                        s.error = Some("the tool returned an error".into());
                    }
                    s.end = at;
                    done.push(s);
                }
            }
            EventKind::ContractChecked {
                contract,
                conformant,
                violations,
                ..
            } => {
                if let Some(s) = self.open.get_mut(&Key::Hop(hop)) {
                    set(s, "switchboard.contract.name", str_attr(contract));
                    set(
                        s,
                        "switchboard.contract.conformant",
                        AttrValue::Bool(*conformant),
                    );
                    set(
                        s,
                        "switchboard.contract.violations",
                        int(violations.len() as u64),
                    );
                }
            }
            EventKind::HopRepair { .. } => {
                if let Some(s) = self.open.get_mut(&Key::Hop(hop)) {
                    bump(s, "switchboard.hop.repairs");
                }
            }
            EventKind::HopCompleted {
                status,
                usage,
                started_at,
                ended_at,
                steps,
                violations,
                ..
            } => {
                let key = Key::Hop(hop.clone());
                done.extend(self.close_children(&hop, at));
                if let Some(mut s) = self.take(&key) {
                    if let Some(t) = parse_time(started_at) {
                        s.start = t;
                    }
                    s.end = parse_time(ended_at).unwrap_or(at);
                    s.attributes.extend([
                        ("gen_ai.usage.input_tokens", int(usage.input_tokens)),
                        ("gen_ai.usage.output_tokens", int(usage.output_tokens)),
                        ("switchboard.hop.status", AttrValue::Str(status.to_string())),
                        ("switchboard.hop.steps", int(*steps as u64)),
                    ]);
                    set(
                        &mut s,
                        "switchboard.contract.violations",
                        int(violations.len() as u64),
                    );
                    if *status != HopStatus::Completed {
                        s.error = Some(format!("the hop ended {status}"));
                    }
                    done.push(s);
                }
            }
            EventKind::HopFailed {
                error,
                usage,
                ended_at,
                ..
            } => {
                let key = Key::Hop(hop.clone());
                done.extend(self.close_children(&hop, at));
                if let Some(mut s) = self.take(&key) {
                    s.end = parse_time(ended_at).unwrap_or(at).max(s.start);
                    s.attributes.extend([
                        ("gen_ai.usage.input_tokens", int(usage.input_tokens)),
                        ("gen_ai.usage.output_tokens", int(usage.output_tokens)),
                        ("switchboard.hop.status", str_attr("failed")),
                        ("error.type", str_attr("hop_failed")),
                    ]);
                    s.error = Some(error.clone());
                    done.push(s);
                }
            }
            EventKind::SessionCompleted { status, usage, .. } => {
                done.extend(self.close_all_but_session(at));
                if let Some(mut s) = self.take(&Key::Session) {
                    s.end = at;
                    s.attributes.extend([
                        ("gen_ai.usage.input_tokens", int(usage.input_tokens)),
                        ("gen_ai.usage.output_tokens", int(usage.output_tokens)),
                        (
                            "switchboard.session.status",
                            AttrValue::Str(status.to_string()),
                        ),
                    ]);
                    if *status != crate::runtime::SessionStatus::Completed {
                        s.error = Some(format!("the session ended {status}"));
                    }
                    done.push(s);
                }
            }
            _ => {}
        }
        done
    }

    /// Ends every span still open at the last time seen (a log cut off by a crash, or a live
    /// session stopped before its end event), marked unfinished.
    pub fn finish(&mut self) -> Vec<SpanRecord> {
        let Some(at) = self.last_time else {
            return Vec::new();
        };
        let mut done = self.close_all_but_session(at);
        if let Some(mut s) = self.take(&Key::Session) {
            s.end = at.max(s.start);
            s.error = Some("the log ends before the session did".into());
            done.push(s);
        }
        done
    }

    #[allow(clippy::too_many_arguments)]
    fn open(
        &mut self,
        key: Key,
        span_id: [u8; 8],
        parent: Option<[u8; 8]>,
        name: String,
        kind: Kind,
        start: SystemTime,
        attributes: Vec<(&'static str, AttrValue)>,
    ) {
        let record = SpanRecord {
            trace_id: self.trace_id.unwrap_or_default(),
            span_id,
            parent_span_id: parent,
            name,
            kind,
            start,
            end: start,
            attributes,
            error: None,
        };
        if self.open.insert(key.clone(), record).is_none() {
            self.order.push(key);
        }
    }

    fn take(&mut self, key: &Key) -> Option<SpanRecord> {
        let s = self.open.remove(key)?;
        self.order.retain(|k| k != key);
        Some(s)
    }

    /// A hop's parent span: the calling hop's, else the session's.
    fn parent_of(&self, e: &Event) -> Option<[u8; 8]> {
        match e.parent_hop_id.as_deref().filter(|p| !p.is_empty()) {
            Some(p) => Some(
                self.hop_spans
                    .get(p)
                    .copied()
                    .unwrap_or_else(|| hop_span_id(p, 1)),
            ),
            None => self.session_span,
        }
    }

    /// Model and tool spans of `hop` still open when the hop ends.
    fn close_children(&mut self, hop: &str, at: SystemTime) -> Vec<SpanRecord> {
        let keys: Vec<Key> = self
            .order
            .iter()
            .filter(|k| matches!(k, Key::Model(h, _) | Key::Tool(h, _) if h == hop))
            .cloned()
            .collect();
        self.close_unfinished(keys, at)
    }

    fn close_all_but_session(&mut self, at: SystemTime) -> Vec<SpanRecord> {
        let keys: Vec<Key> = self
            .order
            .iter()
            .filter(|k| **k != Key::Session)
            .cloned()
            .collect();
        self.close_unfinished(keys, at)
    }

    fn close_unfinished(&mut self, keys: Vec<Key>, at: SystemTime) -> Vec<SpanRecord> {
        let mut out = Vec::new();
        for k in keys.into_iter().rev() {
            if let Some(mut s) = self.take(&k) {
                s.end = at.max(s.start);
                s.error = Some("unfinished: its end is not in the log".into());
                out.push(s);
            }
        }
        out
    }
}

/// The switchboard ids every span carries.
fn ids(e: &Event) -> Vec<(&'static str, AttrValue)> {
    let mut out = vec![
        ("switchboard.session.id", str_attr(&e.session_id)),
        ("switchboard.correlation.id", str_attr(&e.correlation_id)),
    ];
    if let Some(h) = e.hop_id.as_deref().filter(|h| !h.is_empty()) {
        out.push(("switchboard.hop.id", str_attr(h)));
    }
    if let Some(p) = e.parent_hop_id.as_deref().filter(|p| !p.is_empty()) {
        out.push(("switchboard.parent_hop.id", str_attr(p)));
    }
    out
}

fn str_attr(s: &str) -> AttrValue {
    AttrValue::Str(s.to_string())
}

fn int(n: u64) -> AttrValue {
    AttrValue::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn set(s: &mut SpanRecord, key: &'static str, value: AttrValue) {
    match s.attributes.iter_mut().find(|(k, _)| *k == key) {
        Some((_, v)) => *v = value,
        None => s.attributes.push((key, value)),
    }
}

fn bump(s: &mut SpanRecord, key: &'static str) {
    let n = match s.attr(key) {
        Some(AttrValue::Int(n)) => n + 1,
        _ => 1,
    };
    set(s, key, AttrValue::Int(n));
}

/// `provider/model` → (`provider`, `model`); a bare name is its own provider.
fn split_model(spec: &str) -> (String, String) {
    match spec.split_once('/') {
        Some((p, m)) => (p.to_string(), m.to_string()),
        None => (spec.to_string(), spec.to_string()),
    }
}

fn parse_time(s: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| SystemTime::from(t.with_timezone(&chrono::Utc)))
}

/// The session's UUID as the trace id (a non-UUID id is hashed).
pub fn trace_id(session_id: &str) -> [u8; 16] {
    match uuid::Uuid::parse_str(session_id) {
        Ok(u) if !u.is_nil() => *u.as_bytes(),
        _ => {
            let mut out = [0u8; 16];
            out[..8].copy_from_slice(&hash64(session_id));
            out[8..].copy_from_slice(&hash64(&format!("{session_id}#2")));
            out
        }
    }
}

/// A hop's span id: the random tail of its UUID v7 for the first attempt, a hash otherwise.
pub fn hop_span_id(hop_id: &str, attempt: u32) -> [u8; 8] {
    if attempt <= 1 {
        if let Ok(u) = uuid::Uuid::parse_str(hop_id) {
            let mut out = [0u8; 8];
            out.copy_from_slice(&u.as_bytes()[8..]);
            if out != [0; 8] {
                return out;
            }
        }
    }
    hash64(&format!("{hop_id}#attempt#{attempt}"))
}

/// FNV-1a, 64 bits: stable across processes and Rust versions (the std hasher is neither
/// promised), never all zero (an invalid span id).
fn hash64(s: &str) -> [u8; 8] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    if h == 0 {
        h = 1;
    }
    h.to_be_bytes()
}

#[cfg(test)]
mod tests;
