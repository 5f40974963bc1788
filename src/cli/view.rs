//! What `switchboard run` shows while a session runs: on a terminal, the hop tree redrawn in place
//! (agent, status, elapsed); otherwise one plain line per hop start and end, so logs and CI stay
//! readable.
//!
//! The runtime only emits events (through the [`Observer`] in `RunOptions`); this view turns them
//! into text, so the library never prints.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::runtime::{Event, EventKind, HopStatus, Observer};

/// Where a hop stands, as the view shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    /// Waiting for the answer after the Nth repair turn.
    Repair(u32),
    Ended(HopStatus),
    /// Completed in an earlier run; `resume` reused its answer.
    Reused,
}

impl State {
    /// Whether the hop is over, so its elapsed time stops.
    fn is_over(self) -> bool {
        matches!(self, State::Ended(_) | State::Reused)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Running => f.write_str("running"),
            State::Repair(n) => write!(f, "repair {n}"),
            State::Ended(s) => f.write_str(s.as_str()),
            State::Reused => f.write_str("reused"),
        }
    }
}

#[derive(Debug, Clone)]
struct Row {
    agent: String,
    depth: u32,
    state: State,
    started: Instant,
    elapsed: Option<f64>,
}

/// The live view; [`View::observer`] plugs it into a session.
pub struct View {
    live: bool,
    inner: Mutex<ViewState>,
    clock: Instant,
}

struct ViewState {
    rows: Vec<(String, Row)>,
    index: HashMap<String, usize>,
    drawn_lines: usize,
    out: Box<dyn Write + Send>,
}

impl View {
    /// `live`: redraw a tree with ANSI escapes (stdout is a terminal); else plain lines. Writes to
    /// stdout.
    pub fn new(live: bool) -> Arc<Self> {
        Self::with_writer(live, Box::new(std::io::stdout()))
    }

    /// [`View::new`] writing to `out`.
    pub fn with_writer(live: bool, out: Box<dyn Write + Send>) -> Arc<Self> {
        Arc::new(View {
            live,
            inner: Mutex::new(ViewState {
                rows: Vec::new(),
                index: HashMap::new(),
                drawn_lines: 0,
                out,
            }),
            clock: Instant::now(),
        })
    }

    pub fn observer(self: &Arc<Self>) -> Observer {
        let view = self.clone();
        Arc::new(move |e: &Event| view.on_event(e))
    }

    fn on_event(&self, e: &Event) {
        if let EventKind::McpServer(r) = &e.kind {
            if let Some(error) = &r.error {
                eprintln!(
                    "warning: MCP server `{}` brings no tools this session: {error}",
                    r.server
                );
            }
            return;
        }
        let Some(hop) = e.hop_id.clone() else { return };
        let agent = e.agent.clone().unwrap_or_default();
        let Ok(mut st) = self.inner.lock() else {
            return;
        };
        let (state, depth) = match &e.kind {
            EventKind::HopStarted { depth, .. } => (State::Running, Some(*depth)),
            EventKind::HopCompleted { status, .. } => (State::Ended(*status), None),
            EventKind::HopBlocked { .. } => (State::Ended(HopStatus::Blocked), None),
            EventKind::HopFailed { .. } => {
                // A blocked hop logs `hop.failed` right after `hop.blocked`: it stays blocked.
                let blocked = State::Ended(HopStatus::Blocked);
                if st
                    .index
                    .get(&hop)
                    .is_some_and(|&i| st.rows[i].1.state == blocked)
                {
                    return;
                }
                (State::Ended(HopStatus::Failed), None)
            }
            EventKind::HopReused { .. } => (State::Reused, None),
            EventKind::HopRepair { repair, .. } => (State::Repair(*repair), None),
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
                        state,
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
        row.state = state;
        if state.is_over() {
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
                r.state
            );
            if let Some(el) = r.elapsed {
                line.push_str(&format!(" ({el:.2}s)"));
            }
            let _ = writeln!(st.out, "{line}");
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
                r.state,
                secs
            ));
        }
        st.drawn_lines = st.rows.len();
        let _ = st.out.write_all(out.as_bytes());
        let _ = st.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn event(hop: &str, parent: Option<&str>, agent: &str, kind: EventKind) -> Event {
        Event {
            timestamp: String::new(),
            session_id: "s".into(),
            correlation_id: "c".into(),
            hop_id: Some(hop.into()),
            parent_hop_id: parent.map(str::to_string),
            agent: Some(agent.into()),
            kind,
        }
    }

    fn started(depth: u32) -> EventKind {
        EventKind::HopStarted {
            depth,
            attempt: 1,
            message_id: "m".into(),
            model: "scripted/x".into(),
            description: String::new(),
            prompt: "p".into(),
            occurrence: 0,
            started_at: String::new(),
        }
    }

    fn completed(status: HopStatus) -> EventKind {
        EventKind::HopCompleted {
            status,
            message_id: "m".into(),
            answer: String::new(),
            usage: Usage::default(),
            started_at: String::new(),
            ended_at: String::new(),
            duration_us: 0,
            steps: 1,
            conformant: None,
            violations: Vec::new(),
            written: Vec::new(),
        }
    }

    /// Each plain line without its `[  0.00s] ` clock and `(0.00s)` elapsed, which vary.
    fn shapes(text: &str) -> Vec<String> {
        text.lines()
            .map(|l| {
                let l = l.split_once("s] ").map_or(l, |(_, rest)| rest);
                l.split(" (").next().unwrap_or(l).to_string()
            })
            .collect()
    }

    #[test]
    fn plain_lines_show_each_start_and_end_indented_by_depth() {
        let out = Shared::default();
        let view = View::with_writer(false, Box::new(out.clone()));
        let observe = view.observer();
        observe(&event("h1", None, "lead", started(0)));
        observe(&event("h2", Some("h1"), "helper", started(1)));
        observe(&event(
            "h2",
            Some("h1"),
            "helper",
            EventKind::HopRepair {
                repair: 1,
                violations: 2,
            },
        ));
        observe(&event(
            "h2",
            Some("h1"),
            "helper",
            completed(HopStatus::NonConformant),
        ));
        observe(&event("h1", None, "lead", completed(HopStatus::Completed)));
        let text = out.text();
        assert_eq!(
            shapes(&text),
            [
                "lead running",
                "  helper running",
                "  helper non_conformant",
                "lead completed"
            ],
            "a repair is not a line of its own: {text}"
        );
        let ends: Vec<_> = text.lines().map(|l| l.ends_with("s)")).collect();
        assert_eq!(ends, [false, false, true, true], "ended hops show elapsed");
        assert!(text.starts_with("[   0.00s] "), "{text}");
    }

    #[test]
    fn live_view_redraws_the_whole_tree_in_place() {
        let out = Shared::default();
        let view = View::with_writer(true, Box::new(out.clone()));
        let observe = view.observer();
        observe(&event("h1", None, "lead", started(0)));
        observe(&event(
            "h1",
            None,
            "lead",
            EventKind::HopFailed {
                error: "boom".into(),
                usage: Usage::default(),
                started_at: String::new(),
                ended_at: String::new(),
                duration_us: 0,
                violations: Vec::new(),
            },
        ));
        let text = out.text();
        assert!(text.starts_with("lead running 0.0s\n"), "{text:?}");
        assert!(
            text.contains("\x1b[1A\x1b[Jlead failed 0.0s\n"),
            "the second draw moves up over the first: {text:?}"
        );
    }

    #[test]
    fn a_blocked_hop_shows_blocked_once_not_failed() {
        let out = Shared::default();
        let view = View::with_writer(false, Box::new(out.clone()));
        let observe = view.observer();
        observe(&event("h1", None, "lead", started(0)));
        observe(&event(
            "h1",
            None,
            "lead",
            EventKind::HopBlocked {
                reason: "refused".into(),
                action: "fix it".into(),
            },
        ));
        observe(&event(
            "h1",
            None,
            "lead",
            EventKind::HopFailed {
                error: "refused".into(),
                usage: Usage::default(),
                started_at: String::new(),
                ended_at: String::new(),
                duration_us: 0,
                violations: Vec::new(),
            },
        ));
        assert_eq!(shapes(&out.text()), ["lead running", "lead blocked"]);
    }
}
