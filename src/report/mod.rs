//! The trace page: one self-contained HTML file (`trace ID --html FILE`) showing a session's hop
//! tree as a waterfall, with each hop's delegation prompt and answer a click away.
//!
//! Built from the event log alone (the hop tree from `runtime::trace`, prompts and answers from
//! `hop.started` / `hop.completed`), rendered by minijinja with HTML autoescaping on, so nothing an
//! agent or model wrote can become markup. No CDN, no fetches: CSS and JS are inline. Bar
//! positions are computed here (percent of the session's span) and also carried as `data-`
//! attributes, which is what the browser test reads back.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::problem::Problem;
use crate::runtime::events::{Event, EventKind};
use crate::runtime::store::{self, LogError};
use crate::runtime::trace::{self, HopNode, SessionTrace};

const TEMPLATE: &str = include_str!("trace_page.html.j2");

/// Why the page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("cannot render the trace page: {0}")]
    Render(#[from] minijinja::Error),
}

/// One bar of the waterfall.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub index: usize,
    pub depth: u32,
    pub agent: String,
    pub hop_id: String,
    pub parent_index: Option<usize>,
    pub message_id: String,
    pub status: String,
    /// Milliseconds from the session's first hop start.
    pub start_ms: f64,
    pub duration_ms: f64,
    pub left_pct: f64,
    pub width_pct: f64,
    pub tokens: u64,
    pub conformant: Option<bool>,
    pub violations: Vec<Problem>,
    pub repairs: u32,
    pub reused: bool,
    pub error: Option<String>,
    pub prompt: String,
    pub answer: String,
}

#[derive(Debug, Serialize)]
struct Page<'a> {
    trace: &'a SessionTrace,
    rows: Vec<Row>,
    total_ms: f64,
    ticks: Vec<(f64, String)>,
}

/// Renders the page for the session whose log is at `log`.
pub fn render_log(log: &Path) -> Result<String, ReportError> {
    let events = store::read(log)?;
    let trace = trace::from_log(log)?;
    render(&trace, &events)
}

/// Renders the page from an already built trace and its events.
pub fn render(trace: &SessionTrace, events: &[Event]) -> Result<String, ReportError> {
    let (rows, total_ms) = rows(trace, events);
    let ticks = (0..=4)
        .map(|i| {
            let ms = total_ms * i as f64 / 4.0;
            (i as f64 * 25.0, format_ms(ms))
        })
        .collect();
    let page = Page {
        trace,
        rows,
        total_ms,
        ticks,
    };
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_filter("ms", |v: f64| format_ms(v));
    env.add_template("trace_page.html", TEMPLATE)?;
    Ok(env
        .get_template("trace_page.html")?
        .render(minijinja::value::Serde(&page))?)
}

/// The hop tree in depth-first order, with positions relative to the whole session.
pub fn rows(trace: &SessionTrace, events: &[Event]) -> (Vec<Row>, f64) {
    let mut texts: HashMap<&str, (String, String)> = HashMap::new();
    let mut last_event = None;
    for e in events {
        if let Some(t) = parse_ms(&e.timestamp) {
            last_event = Some(last_event.map_or(t, |l: f64| l.max(t)));
        }
        let Some(h) = e.hop_id.as_deref() else {
            continue;
        };
        match &e.kind {
            EventKind::HopStarted { prompt, .. } => {
                texts.entry(h).or_default().0 = prompt.clone();
            }
            EventKind::HopCompleted { answer, .. } => {
                texts.entry(h).or_default().1 = answer.clone();
            }
            _ => {}
        }
    }
    let mut flat: Vec<(&HopNode, Option<usize>)> = Vec::new();
    fn walk<'n>(
        n: &'n HopNode,
        parent: Option<usize>,
        out: &mut Vec<(&'n HopNode, Option<usize>)>,
    ) {
        let me = out.len();
        out.push((n, parent));
        for c in &n.children {
            walk(c, Some(me), out);
        }
    }
    for r in &trace.roots {
        walk(r, None, &mut flat);
    }
    let starts: Vec<Option<f64>> = flat
        .iter()
        .map(|(n, _)| n.started_at.as_deref().and_then(parse_ms))
        .collect();
    let origin = starts
        .iter()
        .flatten()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    // A hop with no end (running when the process died) lasts until the log's last event.
    let end_of_log = last_event.unwrap_or(origin);
    let spans: Vec<(f64, f64)> = flat
        .iter()
        .zip(&starts)
        .map(|((n, _), s)| {
            let start = s.unwrap_or(origin) - origin;
            // A hop reused on resume did not run in this log: a mark, not a span.
            let dur = match (n.duration_ms, n.reused) {
                (Some(d), _) => d,
                (None, true) => 0.0,
                (None, false) => (end_of_log - origin - start).max(0.0),
            };
            (start, dur)
        })
        .collect();
    let total = spans
        .iter()
        .map(|(s, d)| s + d)
        .fold(0.0_f64, f64::max)
        .max(0.001);
    let rows = flat
        .iter()
        .zip(spans)
        .enumerate()
        .map(|(i, ((n, parent), (start, dur)))| {
            let (prompt, answer) = texts.get(n.hop_id.as_str()).cloned().unwrap_or_default();
            Row {
                index: i,
                depth: n.depth,
                agent: n.agent.clone(),
                hop_id: n.hop_id.clone(),
                parent_index: *parent,
                message_id: n.message_id.clone(),
                status: n.status.to_string(),
                start_ms: round3(start),
                duration_ms: round3(dur),
                left_pct: round3(start / total * 100.0),
                width_pct: round3((dur / total * 100.0).max(0.2)),
                tokens: n.tokens,
                conformant: n.conformant,
                violations: n.violation_list.clone(),
                repairs: n.repairs,
                reused: n.reused,
                error: n.error.clone(),
                prompt,
                answer,
            }
        })
        .collect();
    (rows, round3(total))
}

fn parse_ms(s: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_micros() as f64 / 1000.0)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn format_ms(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

#[cfg(test)]
mod tests;
