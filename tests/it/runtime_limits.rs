//! The limits that stop a hop: `steps`, the wall-clock limit (`budget.wall_seconds` and
//! `RunOptions::hop_timeout`) and Ctrl-C on the binary. Each test fails if its limit stops working:
//! the scripted model would otherwise loop or block far past the test's bounds.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use switchboard::runtime::events::read_log;
use switchboard::runtime::{Event, EventKind, HopStatus, RunOptions};

use crate::support::scripted;
use scripted::{project, run_with};

/// Adds subagent `name` (with `frontmatter` lines) to the project and lets the researcher call it.
fn add_subagent(root: &Path, name: &str, frontmatter: &str) {
    std::fs::write(
        root.join(format!("agent/{name}.md")),
        format!("---\nname: {name}\ndescription: d\nmode: subagent\n{frontmatter}---\nYou are {{{{ agent }}}}.\n"),
    )
    .unwrap();
    let path = root.join("agent/researcher.md");
    let researcher = std::fs::read_to_string(&path).unwrap();
    let allowed = researcher.replacen(
        "\"planner\": allow}",
        &format!("\"planner\": allow, \"{name}\": allow}}"),
        1,
    );
    assert_ne!(
        allowed, researcher,
        "the researcher's permission line changed"
    );
    std::fs::write(path, allowed).unwrap();
}

/// A script where the researcher delegates `prompt` to `agent`, then answers "done"; `rest` adds
/// the other agents' entries.
fn researcher_delegates(agent: &str, prompt: &str, rest: &str) -> String {
    format!(
        "agents:\n  researcher:\n    - turns:\n        - tool_calls:\n            - {{name: task, arguments: {{subagent_type: {agent}, description: d, prompt: \"{prompt}\"}}}}\n        - content: done\n{rest}"
    )
}

fn of_agent<'a>(events: &'a [Event], agent: &str, ty: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.agent.as_deref() == Some(agent) && e.kind.name() == ty)
        .collect()
}

/// Tool results the given agent received, in order: (is_error, output).
fn tool_results(events: &[Event], agent: &str) -> Vec<(bool, String)> {
    of_agent(events, agent, "tool.result")
        .into_iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error, output, ..
            } => Some((*is_error, output.clone())),
            _ => None,
        })
        .collect()
}

/// Every hop that started has exactly one end event (`hop.completed` or `hop.failed`).
#[track_caller]
fn assert_every_hop_ended(events: &[Event]) {
    let started: Vec<_> = events
        .iter()
        .filter(|e| e.kind.name() == "hop.started")
        .map(|e| e.hop_id.clone().unwrap())
        .collect();
    for id in &started {
        let ends = events
            .iter()
            .filter(|e| matches!(e.kind.name(), "hop.completed" | "hop.failed"))
            .filter(|e| e.hop_id.as_ref() == Some(id))
            .count();
        assert_eq!(ends, 1, "hop {id} has {ends} end events: {events:#?}");
    }
}

/// The error of the one `hop.failed` event of `agent`.
#[track_caller]
fn failure_of(events: &[Event], agent: &str) -> (String, u64) {
    let mut failed = failures_of(events, agent);
    assert_eq!(failed.len(), 1, "{agent}: {events:#?}");
    failed.remove(0)
}

/// Every `hop.failed` of `agent`: (error, duration_us).
fn failures_of(events: &[Event], agent: &str) -> Vec<(String, u64)> {
    of_agent(events, agent, "hop.failed")
        .into_iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopFailed {
                error, duration_us, ..
            } => Some((error.clone(), *duration_us)),
            _ => None,
        })
        .collect()
}

/// Runs the researcher delegating to `boss` (which may send tasks to `ping`) under
/// `hop_timeout: 2 s`, with `agents` the script entries of boss and ping; asserts the session
/// completed well before any 30 s delay of ping's could end and that every hop ended.
async fn boss_under_two_seconds(agents: &str) -> Vec<Event> {
    let (_d, p) = project();
    add_subagent(
        p.root(),
        "boss",
        "tools: {task: true}\npermission:\n  task: {\"*\": deny, ping: allow}\n",
    );
    let script = researcher_delegates("boss", "delegate", agents);
    completes_within_ten_seconds(&p, &script, Duration::from_secs(2)).await
}

/// Runs `script` under `hop_timeout`; asserts the session completed well before any 30 s delay in
/// it could end, and that every hop ended.
async fn completes_within_ten_seconds(
    p: &switchboard::project::Project,
    script: &str,
    hop_timeout: Duration,
) -> Vec<Event> {
    let options = RunOptions {
        hop_timeout,
        ..RunOptions::default()
    };
    let clock = Instant::now();
    let (outcome, events) = run_with(p, script, "x", options).await;
    assert!(
        clock.elapsed() < Duration::from_secs(10),
        "{:?}",
        clock.elapsed()
    );
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_every_hop_ended(&events);
    events
}

#[tokio::test]
async fn the_steps_limit_ends_a_tool_loop_partial_after_exactly_n_turns() {
    let (_d, p) = project();
    add_subagent(
        p.root(),
        "looper",
        "tools: {list: true, read: true}\nsteps: 3\n",
    );
    // Twelve turns, every one calling tools: without the limit the hop would run until the
    // script runs out (and fail), not stop at 3.
    let turns: String = (1..=12)
        .map(|n| {
            let tool = if n % 2 == 0 {
                "{name: read, arguments: {path: agent/ping.md}}"
            } else {
                "{name: list, arguments: {path: agent}}"
            };
            format!("        - {{content: \"looking, step {n}\", tool_calls: [{tool}]}}\n")
        })
        .collect();
    let script = researcher_delegates(
        "looper",
        "loop forever",
        &format!("  looper:\n    - turns:\n{turns}"),
    );
    let (outcome, events) = run_with(&p, &script, "x", RunOptions::default()).await;
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_every_hop_ended(&events);

    let requests: Vec<(u32, usize)> = of_agent(&events, "looper", "model.request")
        .iter()
        .map(|e| match &e.kind {
            EventKind::ModelRequest { step, tools, .. } => (*step, *tools),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        requests.len(),
        3,
        "exactly `steps` model turns: {requests:?}"
    );
    assert_eq!(requests.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(requests[..2].iter().all(|r| r.1 > 0), "{requests:?}");
    assert_eq!(requests[2].1, 0, "the last step offers no tools");
    // The tool calls of the last turn are not run.
    assert_eq!(of_agent(&events, "looper", "tool.call").len(), 2);

    let done = of_agent(&events, "looper", "hop.completed");
    assert_eq!(done.len(), 1);
    match &done[0].kind {
        EventKind::HopCompleted {
            status,
            steps,
            answer,
            ..
        } => {
            assert_eq!(*status, HopStatus::Partial);
            assert_eq!(*steps, 3);
            assert_eq!(answer, "looking, step 3");
        }
        _ => unreachable!(),
    }
    assert!(of_agent(&events, "looper", "hop.failed").is_empty());

    // The caller gets the partial answer, marked, not an error.
    let r = tool_results(&events, "researcher");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(!r[0].0, "{r:?}");
    assert!(
        r[0].1
            .starts_with("[PARTIAL: `looper` stopped before finishing (steps limit reached (3))"),
        "{r:?}"
    );
    assert!(r[0].1.ends_with("looking, step 3"), "{r:?}");
}

#[tokio::test]
async fn the_wall_clock_budget_fails_a_blocked_hop_and_tells_the_caller() {
    let (_d, p) = project();
    add_subagent(p.root(), "sleeper", "budget: {wall_seconds: 1}\n");
    let script = researcher_delegates(
        "sleeper",
        "take your time",
        "  sleeper:\n    - turns: [{delay_ms: 30000, content: too late}]\n",
    );
    let clock = Instant::now();
    let (outcome, events) = run_with(&p, &script, "x", RunOptions::default()).await;
    let wall = clock.elapsed();
    assert!(wall < Duration::from_secs(10), "stopped near 1 s: {wall:?}");
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_every_hop_ended(&events);

    let (error, duration_us) = failure_of(&events, "sleeper");
    assert_eq!(error, "timed out after 1 s (wall-clock limit)");
    assert!(duration_us >= 1_000_000, "{duration_us} µs");
    assert!(of_agent(&events, "sleeper", "model.response").is_empty());
    let r = tool_results(&events, "researcher");
    assert_eq!(
        r,
        [(
            true,
            "subagent `sleeper` failed: timed out after 1 s (wall-clock limit)".to_string()
        )]
    );
}

#[tokio::test]
async fn the_hop_timeout_option_bounds_an_agent_without_wall_seconds() {
    let (_d, p) = project();
    // The option covers every hop without its own limit: give the researcher one, so that only
    // ping runs under the 1 s option.
    let path = p.root().join("agent/researcher.md");
    let researcher = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        researcher.replacen("steps: 10\n", "steps: 10\nbudget: {wall_seconds: 60}\n", 1),
    )
    .unwrap();
    let script = researcher_delegates(
        "ping",
        "block",
        "  ping:\n    - turns: [{delay_ms: 30000, content: too late}]\n",
    );
    let events = completes_within_ten_seconds(&p, &script, Duration::from_secs(1)).await;
    let (error, _) = failure_of(&events, "ping");
    assert_eq!(error, "timed out after 1 s (wall-clock limit)");
    let r = tool_results(&events, "researcher");
    assert!(
        r[0].0 && r[0].1.contains("`ping` failed: timed out"),
        "{r:?}"
    );
}

/// `--hop-timeout` on `run` reaches the runtime (a 30 s turn ends after 1 s, the session's exit
/// code and status say so), and a zero limit is refused before anything runs.
#[test]
fn the_hop_timeout_flag_bounds_a_run_and_refuses_zero() {
    use std::process::Command;
    let (_d, p) = project();
    std::fs::write(
        p.root().join("slow.yaml"),
        "agents:\n  researcher:\n    - turns: [{delay_ms: 30000, content: too late}]\n",
    )
    .unwrap();
    let run = |limit: &str| {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("--root")
            .arg(p.root())
            .env("NO_COLOR", "1")
            .args([
                "run",
                "researcher",
                "x",
                "--json",
                "--model",
                "scripted/slow.yaml",
            ])
            .args(["--hop-timeout", limit])
            .output()
            .unwrap()
    };
    let clock = Instant::now();
    let out = run("1");
    assert!(
        clock.elapsed() < Duration::from_secs(15),
        "{:?}",
        clock.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_ne!(json["status"], "completed", "{json}");
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("timed out after 1 s"), "{stdout}");
    let zero = run("0");
    assert_eq!(zero.status.code(), Some(2), "{zero:?}");
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--hop-timeout"));
}

/// A child's wall-clock limit ends where its caller's reserve begins (`runtime::deadline`), so a
/// caller is not cut off while it waits: it reads the child's failure with time left, and that
/// turn is offered no tools. Under `hop_timeout: 2 s` the researcher's limit ends at 2 s, boss's
/// where the researcher's last fifth begins (1.6 s), ping's where boss's last fifth begins
/// (1.28 s). Before, boss and ping both ran to their own 2 s and boss's answer was lost.
#[tokio::test]
async fn a_child_ends_before_its_caller_so_the_caller_still_answers() {
    let events = boss_under_two_seconds(
        "  boss:\n    - turns:\n        - tool_calls: [{name: task, arguments: {subagent_type: ping, description: d, prompt: block}}]\n        - content: boss done\n  ping:\n    - turns: [{delay_ms: 30000, content: too late}]\n",
    )
    .await;
    assert_eq!(of_agent(&events, "ping", "hop.started").len(), 1);
    let (error, duration_us) = failure_of(&events, "ping");
    assert!(
        error.contains("(the wall-clock limit of its caller `boss`, less the part `boss` keeps"),
        "{error}"
    );
    // Its own limit is 2 s; boss's last fifth begins at most 1.28 s after ping started.
    assert!(
        duration_us < 1_300_000,
        "ping ends before boss's last fifth: {duration_us} µs"
    );
    // Boss ended on its own answer, and the turn that gave it was offered no tools.
    assert!(
        of_agent(&events, "boss", "hop.failed").is_empty(),
        "{events:#?}"
    );
    let steered: Vec<_> = of_agent(&events, "boss", "hop.steered")
        .into_iter()
        .filter_map(|e| match &e.kind {
            EventKind::HopSteered { why, .. } => Some(why.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(steered, ["time_short"]);
    let requests: Vec<_> = of_agent(&events, "boss", "model.request")
        .into_iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelRequest { tools, .. } => Some(*tools),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests[0] > 0,
        "boss's first turn offers its tools: {requests:?}"
    );
    assert_eq!(requests[1], 0, "boss's second turn offers no tools");
    let r = tool_results(&events, "researcher");
    assert_eq!(r, [(false, "boss done".to_string())], "{r:?}");
}

/// The deadlines of parallel hops are kept apart: boss sends four pings in one turn, so `Shared`'s
/// deadline map holds several children of one caller at once. The fast one answers (and its
/// entry goes) while its three slow siblings still run; each slow one is still held to boss's
/// deadline, not left to its own 2 s, and boss still answers. Deadlines live in one process by design (`runtime::deadline`), so there is no
/// several-process form of this test.
#[tokio::test]
async fn parallel_children_are_each_held_to_their_callers_deadline() {
    let call = |prompt: &str| {
        format!(
            "{{name: task, arguments: {{subagent_type: ping, description: d, prompt: {prompt}}}}}"
        )
    };
    let events = boss_under_two_seconds(&format!(
        "  boss:\n    - turns:\n        - tool_calls: [{}, {}, {}, {}]\n        - content: boss done\n  ping:\n    - when: fast\n      turns: [{{content: quick}}]\n    - repeat: true\n      turns: [{{delay_ms: 30000, content: too late}}]\n",
        call("slow-a"),
        call("fast"),
        call("slow-b"),
        call("slow-c"),
    ))
    .await;
    assert_eq!(of_agent(&events, "ping", "hop.started").len(), 4);
    let failed = failures_of(&events, "ping");
    assert_eq!(failed.len(), 3, "three slow pings time out: {failed:?}");
    for (error, duration_us) in &failed {
        assert!(
            error
                .contains("(the wall-clock limit of its caller `boss`, less the part `boss` keeps"),
            "{error}"
        );
        assert!(
            *duration_us < 1_300_000,
            "each ping ends before boss's last fifth: {duration_us} µs"
        );
    }
    assert_eq!(of_agent(&events, "ping", "hop.completed").len(), 1);
    assert!(
        of_agent(&events, "boss", "hop.failed").is_empty(),
        "{events:#?}"
    );
    let results = tool_results(&events, "boss");
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(
        results.iter().filter(|(err, _)| *err).count(),
        3,
        "{results:?}"
    );
    let r = tool_results(&events, "researcher");
    assert_eq!(r, [(false, "boss done".to_string())], "{r:?}");
}

/// A `switchboard run --json` of the researcher on `script` (written into the project), under a
/// guard that kills it if the test panics first.
#[cfg(unix)]
fn spawn_run(root: &Path, script: &str) -> (std::process::Child, KillOnPanic) {
    spawn(root, script, &["run", "researcher", "x"])
}

/// `switchboard <args> --json --model scripted/blocking.yaml`, `script` written there, under a
/// guard that kills it if the test panics first.
#[cfg(unix)]
fn spawn(root: &Path, script: &str, args: &[&str]) -> (std::process::Child, KillOnPanic) {
    use std::process::{Command, Stdio};
    std::fs::write(root.join("blocking.yaml"), script).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--root")
        .arg(root)
        .env("NO_COLOR", "1")
        .args(args)
        .args(["--json", "--model"])
        .arg("scripted/blocking.yaml")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = KillOnPanic(libc::pid_t::try_from(child.id()).unwrap());
    (child, guard)
}

/// Polls the session's log every `every` until `agent`'s hop has started; returns the log's path.
#[cfg(unix)]
fn wait_for_hop(
    child: &mut std::process::Child,
    root: &Path,
    agent: &str,
    every: Duration,
) -> std::path::PathBuf {
    let sessions = root.join(".switchboard/sessions");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "`{agent}` never started");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the session ended before Ctrl-C: {status}");
        }
        std::thread::sleep(every);
        let Some(entry) = std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next()) else {
            continue;
        };
        let log = entry.unwrap().path().join("events.jsonl");
        let events = read_log(&log).unwrap_or_default();
        if events
            .iter()
            .any(|e| e.kind.name() == "hop.started" && e.agent.as_deref() == Some(agent))
        {
            return log;
        }
    }
}

/// Sends SIGINT and waits (bounded) for the process to exit; returns its exit status and output.
/// Takes the guard: once the child is reaped its pid is no longer ours to kill.
#[cfg(unix)]
fn interrupt(
    child: std::process::Child,
    guard: KillOnPanic,
) -> (std::process::ExitStatus, std::process::Output) {
    signal(child, guard, libc::SIGINT)
}

/// [`interrupt`] with the signal `sig`.
#[cfg(unix)]
fn signal(
    mut child: std::process::Child,
    guard: KillOnPanic,
    sig: libc::c_int,
) -> (std::process::ExitStatus, std::process::Output) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: plain kill(2) on our own child, which has not been reaped (try_wait saw it running).
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    let clock = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            clock.elapsed() < Duration::from_secs(15),
            "still running {:?} after signal {sig}",
            clock.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(guard);
    (status, child.wait_with_output().unwrap())
}

/// Handled, not killed by the signal: exit code 1 (the session did not complete), `--json` says
/// interrupted, and the log ends with one `session.completed` (interrupted) after every hop's end.
#[cfg(unix)]
#[track_caller]
fn assert_interrupted(status: std::process::ExitStatus, out: &std::process::Output, log: &Path) {
    assert_eq!(
        status.code(),
        Some(1),
        "{status}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "interrupted");
    let events = read_log(log).unwrap();
    match &events.last().unwrap().kind {
        EventKind::SessionCompleted { status, error, .. } => {
            assert_eq!(status, "interrupted");
            assert_eq!(error.as_deref(), Some("interrupted"));
        }
        other => panic!("the log ends with {other:?}"),
    }
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind.name() == "session.completed")
            .count(),
        1
    );
    assert_every_hop_ended(&events);
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_the_session_interrupted_with_every_hop_ended() {
    let (dir, _p) = project();
    let script = researcher_delegates(
        "ping",
        "block",
        "  ping:\n    - turns: [{delay_ms: 600000, content: too late}]\n",
    );
    let (mut child, guard) = spawn_run(dir.path(), &script);
    // Both hops started: the researcher is waiting for ping, which blocks.
    let log = wait_for_hop(&mut child, dir.path(), "ping", Duration::from_millis(20));
    let (status, out) = interrupt(child, guard);
    assert_interrupted(status, &out, &log);

    let events = read_log(&log).unwrap();
    let started: HashSet<_> = events
        .iter()
        .filter(|e| e.kind.name() == "hop.started")
        .map(|e| e.agent.clone().unwrap())
        .collect();
    assert_eq!(started, HashSet::from(["researcher".into(), "ping".into()]));
    for agent in ["researcher", "ping"] {
        assert_eq!(failure_of(&events, agent).0, "interrupted");
    }
}

/// The primary hop logs `hop.started` in the session's first poll: Ctrl-C right after it must be
/// handled too (it killed the process about half the time when the handler was installed after
/// that poll). Timing-dependent, so a few tries.
#[cfg(unix)]
#[test]
fn ctrl_c_right_after_the_first_hop_starts_is_handled() {
    for _ in 0..5 {
        let (dir, _p) = project();
        let script = "agents:\n  researcher:\n    - turns: [{delay_ms: 600000, content: late}]\n";
        let (mut child, guard) = spawn_run(dir.path(), script);
        let log = wait_for_hop(
            &mut child,
            dir.path(),
            "researcher",
            Duration::from_millis(1),
        );
        let (status, out) = interrupt(child, guard);
        assert_interrupted(status, &out, &log);
    }
}

/// SIGTERM (`kill`, `timeout`, a CI runner's limit) ends a session as Ctrl-C does: every hop
/// and the session end in the log, and the outcome says interrupted.
#[cfg(unix)]
#[test]
fn sigterm_ends_the_session_as_ctrl_c_does() {
    let (dir, _p) = project();
    let script = researcher_delegates(
        "ping",
        "block",
        "  ping:\n    - turns: [{delay_ms: 600000, content: too late}]\n",
    );
    let (mut child, guard) = spawn_run(dir.path(), &script);
    let log = wait_for_hop(&mut child, dir.path(), "ping", Duration::from_millis(20));
    let (status, out) = signal(child, guard, libc::SIGTERM);
    assert_interrupted(status, &out, &log);
}

/// An `eval` stopped by a signal keeps what it measured: the session running then ends
/// interrupted in its log and is scored, no later task starts, and the report (JSON, exit 1)
/// says it was interrupted.
#[cfg(unix)]
#[test]
fn an_interrupted_eval_reports_what_ran_and_starts_nothing_more() {
    let (dir, _p) = project();
    let script = researcher_delegates(
        "ping",
        "block",
        "  ping:\n    - turns: [{delay_ms: 600000, content: too late}]\n",
    );
    std::fs::write(
        dir.path().join("suite.yaml"),
        "tasks:\n  - agent: researcher\n    prompt: first\n  - agent: researcher\n    prompt: second\n",
    )
    .unwrap();
    let suite = dir.path().join("suite.yaml");
    let suite = suite.to_str().unwrap();
    let (mut child, guard) = spawn(dir.path(), &script, &["eval", suite]);
    let log = wait_for_hop(&mut child, dir.path(), "ping", Duration::from_millis(20));
    let (status, out) = signal(child, guard, libc::SIGTERM);
    assert_eq!(
        status.code(),
        Some(1),
        "{status}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["interrupted"], true, "{report}");
    assert!(
        report["errors"].as_array().is_some_and(|e| e
            .iter()
            .any(|e| e.as_str().is_some_and(|e| e.starts_with("interrupted")))),
        "{report}"
    );
    assert_eq!(report["primaries"]["researcher"]["sessions"], 1, "{report}");
    let sessions = std::fs::read_dir(dir.path().join(".switchboard/sessions"))
        .unwrap()
        .count();
    assert_eq!(sessions, 1, "the second task never started");
    let events = read_log(&log).unwrap();
    match &events.last().unwrap().kind {
        EventKind::SessionCompleted { status, .. } => assert_eq!(status, "interrupted"),
        other => panic!("the log ends with {other:?}"),
    }
    assert_every_hop_ended(&events);
}

/// Kills the child (by pid) if the test panics while it runs.
#[cfg(unix)]
struct KillOnPanic(libc::pid_t);

#[cfg(unix)]
impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // SAFETY: kill(2) on the test's own child, not yet reaped.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}
