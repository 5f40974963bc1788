//! What `switchboard run` shows while a session runs: on a terminal, the hop tree redrawn in place
//! (agent, status, elapsed); otherwise one plain line per hop start and end, so logs and CI stay
//! readable.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::events::{Event, EventKind, Observer};

#[derive(Debug, Clone)]
struct Row {
    agent: String,
    depth: u32,
    status: String,
    started: Instant,
    elapsed: Option<f64>,
}

/// The live view; [`View::observer`] plugs it into a session.
pub struct View {
    live: bool,
    inner: Mutex<ViewState>,
    clock: Instant,
}

#[derive(Default)]
struct ViewState {
    rows: Vec<(String, Row)>,
    index: HashMap<String, usize>,
    drawn_lines: usize,
}

impl View {
    /// `live`: redraw a tree with ANSI escapes (stdout is a terminal); else plain lines.
    pub fn new(live: bool) -> Arc<Self> {
        Arc::new(View {
            live,
            inner: Mutex::new(ViewState::default()),
            clock: Instant::now(),
        })
    }

    pub fn observer(self: &Arc<Self>) -> Observer {
        let view = self.clone();
        Arc::new(move |e: &Event| view.on_event(e))
    }

    fn on_event(&self, e: &Event) {
        let Some(hop) = e.hop_id.clone() else { return };
        let agent = e.agent.clone().unwrap_or_default();
        let Ok(mut st) = self.inner.lock() else {
            return;
        };
        let (status, depth) = match &e.kind {
            EventKind::HopStarted { depth, .. } => ("running".to_string(), Some(*depth)),
            EventKind::HopCompleted { status, .. } => (status.as_str().to_string(), None),
            EventKind::HopFailed { .. } => ("failed".to_string(), None),
            EventKind::HopReused { .. } => ("reused".to_string(), None),
            EventKind::HopRepair { repair, .. } => (format!("repair {repair}"), None),
            _ => return,
        };
        let idx = match st.index.get(&hop) {
            Some(&i) => i,
            None => {
                let parent_depth = e
                    .parent_hop_id
                    .as_ref()
                    .and_then(|p| st.index.get(p))
                    .map(|&i| st.rows[i].1.depth + 1);
                st.rows.push((
                    hop.clone(),
                    Row {
                        agent: agent.clone(),
                        depth: depth.or(parent_depth).unwrap_or(0),
                        status: String::new(),
                        started: Instant::now(),
                        elapsed: None,
                    },
                ));
                let i = st.rows.len() - 1;
                st.index.insert(hop.clone(), i);
                i
            }
        };
        let row = &mut st.rows[idx].1;
        row.status = status;
        if !matches!(row.status.as_str(), "running") && !row.status.starts_with("repair") {
            row.elapsed = Some(row.started.elapsed().as_secs_f64());
        }
        if self.live {
            Self::draw(&mut st);
        } else if !matches!(e.kind, EventKind::HopRepair { .. }) {
            let r = &st.rows[idx].1;
            let mut line = format!(
                "[{:>7.2}s] {}{} {}",
                self.clock.elapsed().as_secs_f64(),
                "  ".repeat(r.depth as usize),
                r.agent,
                r.status
            );
            if let Some(el) = r.elapsed {
                line.push_str(&format!(" ({el:.2}s)"));
            }
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }

    /// Redraws the tree (the ticker calls this so elapsed times move).
    pub fn tick(&self) {
        if self.live {
            if let Ok(mut st) = self.inner.lock() {
                Self::draw(&mut st);
            }
        }
    }

    fn draw(st: &mut ViewState) {
        let mut out = String::new();
        if st.drawn_lines > 0 {
            out.push_str(&format!("\x1b[{}A\x1b[J", st.drawn_lines));
        }
        for (_, r) in &st.rows {
            let secs = r
                .elapsed
                .unwrap_or_else(|| r.started.elapsed().as_secs_f64());
            out.push_str(&format!(
                "{}{} {} {:.1}s\n",
                "  ".repeat(r.depth as usize),
                r.agent,
                r.status,
                secs
            ));
        }
        st.drawn_lines = st.rows.len();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }
}
