//! Checkpoint workflows end to end: the step protocol's four replies, every out-of-order call,
//! the verification-command table, scope confinement, template rendering, retry history, lint,
//! a run killed mid-workflow and resumed, and the offline planner over twenty prompts.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use switchboard::project::Project;

use crate::support::fs::{json_out, sb};
use switchboard::workflow::{self, command::check_command, state, tool, StepStatus};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A small Rust project with the shipped planner, its workflow and the agents it may call.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    crate::support::fs::copy_tree(&Path::new(ROOT).join("agent"), &root.join("agent"));
    crate::support::fs::copy_tree(&Path::new(ROOT).join("workflow"), &root.join("workflow"));
    let files = [
        ("Cargo.toml", "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n"),
        ("src/lib.rs", "pub mod retry;\npub mod cache;\n"),
        (
            "src/retry.rs",
            "//! Retry with backoff for the HTTP client.\npub fn backoff(attempt: u32) -> u64 {\n    100 * 2u64.pow(attempt)\n}\n",
        ),
        (
            "src/cache.rs",
            "//! An in-memory cache for fetched pages.\npub struct Cache;\n",
        ),
        (
            "tests/retry.rs",
            "#[test]\nfn backoff_doubles() {\n    assert_eq!(demo::retry::backoff(1), 200);\n}\n",
        ),
        ("README.md", "# demo\n\nA client with retry and a cache.\n"),
    ];
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Reports steps of one run through the same entry point the runtime uses.
struct Run<'a> {
    project: &'a Project,
    id: String,
}

impl Run<'_> {
    fn step(&self, name: &str, result: Value) -> Value {
        let call = tool::Call {
            project: self.project,
            agent: "planner",
            declared: Some("plan"),
            run_id: &self.id,
            session_id: "s-1",
            correlation_id: "corr-1",
            task: "Plan retries for the HTTP client",
            found: &[],
        };
        let h = tool::handle(&call, &json!({"name": name, "result": result})).unwrap();
        assert!(!h.is_error, "{}", h.text);
        serde_json::from_str(&h.text).unwrap()
    }

    fn state(&self) -> workflow::State {
        state::load(self.project, &self.id).unwrap()
    }
}

fn good(step: &str) -> Value {
    match step {
        "intent" => {
            json!({"action": "PROCEED", "refined_intent": "Add retries to the HTTP client"})
        }
        "clarify" => json!({"action": "PROCEED", "assumptions": ["backoff stays exponential"]}),
        "scope" => json!({
            "primary": ["src/retry.rs"], "secondary": ["tests/retry.rs"],
            "evidence": [{"fact": "Backoff doubles per attempt", "path": "src/retry.rs",
                          "start": 2, "end": 3,
                          "excerpt": "pub fn backoff(attempt: u32) -> u64 {\n    100 * 2u64.pow(attempt)"},
                         {"fact": "The module is the HTTP client's retry", "path": "src/retry.rs",
                          "start": 1, "end": 1,
                          "excerpt": "//! Retry with backoff for the HTTP client."},
                         {"fact": "A test checks the second attempt's delay", "path": "tests/retry.rs",
                          "start": 3, "end": 3,
                          "excerpt": "    assert_eq!(demo::retry::backoff(1), 200);"}]
        }),
        "test_strategy" => {
            json!({"verdict": "NEEDED", "strategy": "extend tests/retry.rs", "tests": ["tests/retry.rs"]})
        }
        "complexity" => json!({"domains": ["http"]}),
        "plan" => json!({
            "goals": ["retries are capped"],
            "steps": [{"title": "Cap the backoff", "files": ["src/retry.rs"], "change": "cap at 10 s", "done_when": "the test passes"},
                      {"title": "Test the cap", "files": ["tests/retry.rs"], "change": "add a case", "done_when": "it runs"}],
            "verification": "cargo test"
        }),
        "render" => json!({"title": "Cap retry backoff", "slug": "cap-retry-backoff"}),
        other => panic!("no result for {other}"),
    }
}

const STEPS: [&str; 7] = [
    "intent",
    "clarify",
    "scope",
    "test_strategy",
    "complexity",
    "plan",
    "render",
];

#[test]
fn the_four_actions() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-actions".into(),
    };
    // INVALID: the schema wants refined_intent; nothing is accepted.
    let r = run.step("intent", json!({"action": "PROCEED"}));
    assert_eq!(r["action"], "INVALID", "{r}");
    assert!(
        r["errors"][0].as_str().unwrap().contains("refined_intent"),
        "{r}"
    );
    // The reply shows the result's shape to fill in, what the result got right kept in it,
    // and that shape sent back unfilled is refused for each placeholder.
    assert_eq!(r["expected"]["refined_intent"], "…", "{r}");
    assert_eq!(r["expected"]["action"], "PROCEED", "{r}");
    let wrong = run.step("intent", json!({"action": "GO", "refined_intent": "x"}));
    assert_eq!(
        (
            &wrong["expected"]["action"],
            &wrong["expected"]["refined_intent"]
        ),
        (&json!("PROCEED | CLARIFY | AMBIGUOUS"), &json!("…")),
        "what an error concerns is shown as its shape: {wrong}"
    );
    let unfilled = run.step(
        "intent",
        json!({"action": "PROCEED", "refined_intent": "…", "reason": "…"}),
    );
    assert_eq!(unfilled["action"], "INVALID", "{unfilled}");
    let errors = unfilled["errors"].to_string();
    assert!(
        errors.contains("/reason: still the placeholder")
            && errors.contains("/refined_intent: still the placeholder"),
        "{unfilled}"
    );
    // The reply itself sent back as the result is named as such.
    let echo = run.step(
        "intent",
        json!({"errors": r["errors"], "expected": r["expected"]}),
    );
    assert_eq!(echo["action"], "INVALID", "{echo}");
    assert!(
        echo["errors"]
            .to_string()
            .contains("holds the runtime's reply (errors, expected)"),
        "{echo}"
    );
    assert_eq!(run.state().steps["intent"].status, StepStatus::Invalid);
    // CLARIFY: the one question comes back; the run waits.
    let r = run.step(
        "intent",
        json!({"action": "CLARIFY", "refined_intent": "retries", "questions": ["Which client?"]}),
    );
    assert_eq!(
        r,
        json!({"action": "CLARIFY", "step": "intent", "question": "Which client?"})
    );
    assert_eq!(run.state().status, workflow::RunStatus::Waiting);
    // PROCEED names the next step.
    let r = run.step("intent", good("intent"));
    assert_eq!(
        (r["action"].as_str(), r["next"].as_str()),
        (Some("PROCEED"), Some("clarify"))
    );
    // ... and writes out the call that reports it, with the shape of its result.
    assert_eq!(r["next_call"]["name"], "clarify", "{r}");
    assert_eq!(
        r["next_call"]["result"]["action"], "PROCEED | CLARIFY",
        "{r}"
    );
    assert_eq!(run.state().steps["intent"].attempts, 6);
    // STOP: an ambiguous request ends the run, and the run stays closed.
    let run2 = Run {
        project: &p,
        id: "r-stop".into(),
    };
    let r = run2.step(
        "intent",
        json!({"action": "AMBIGUOUS", "refined_intent": "???", "reason": "no target named"}),
    );
    assert_eq!(
        r,
        json!({"action": "STOP", "step": "intent", "error": "no target named"})
    );
    let again = run2.step("intent", good("intent"));
    assert_eq!(again["action"], "STOP");
    assert!(
        again["error"].as_str().unwrap().contains("stopped"),
        "{again}"
    );
    // An unknown step is INVALID and names the steps.
    let r = run.step("estimate", json!({}));
    assert_eq!(r["action"], "INVALID");
    assert!(r["errors"][0]
        .as_str()
        .unwrap()
        .contains("intent, clarify, scope"));
}

#[test]
fn every_out_of_order_call_is_refused_logged_and_not_stored() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-order".into(),
    };
    let mut refused = 0;
    for k in 0..STEPS.len() {
        // With steps before k accepted, every later step names step k as missing.
        for later in &STEPS[k + 1..] {
            let r = run.step(later, good(later));
            let want = format!("Missing {0}. Run step '{0}' first.", STEPS[k]);
            assert_eq!(r["action"], "STOP", "{later}: {r}");
            assert_eq!(r["error"], want.as_str(), "{later}");
            refused += 1;
        }
        let r = run.step(STEPS[k], good(STEPS[k]));
        assert_eq!(r["action"], "PROCEED", "{}: {r}", STEPS[k]);
    }
    assert_eq!(refused, 21);
    let s = run.state();
    assert_eq!(s.status, workflow::RunStatus::Done);
    // Refused calls stored nothing: every step has exactly one attempt.
    assert!(s
        .steps
        .values()
        .all(|r| r.attempts == 1 && r.history.len() == 1));
    let log = state::read_log(&p, "r-order").unwrap();
    assert_eq!(log.len(), 21 + 7);
    let refusals: Vec<_> = log.iter().filter(|l| l.attempt == 0).collect();
    assert_eq!(refusals.len(), 21);
    assert!(refusals
        .iter()
        .all(|l| l.action == "STOP" && l.note.is_some()));
}

#[test]
fn verification_commands_both_ways() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    std::fs::write(dir.path().join("check.sh"), "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.path().join("check.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let safe = [
        "cargo test",
        "cargo test --workspace -- --nocapture",
        "cargo clippy --all-targets -- -D warnings",
        "cargo fmt --check",
        "cargo run -- check thoughts/x.md",
        "git status",
        "git diff --stat",
        "git log --oneline -5",
        "RUST_LOG=debug cargo test",
        "timeout 60 cargo test",
        "cargo test 2>&1 | grep -c passed",
        "cargo test > /dev/null",
        "cargo build && cargo test",
        "ls -la src",
        "grep -rn 'rm -rf' src",
        "echo 'a > b; rm x'",
        "./check.sh",
        "env CI=1 cargo test",
        "sh check.sh",
    ];
    let destructive = [
        ("rm -rf target", "deletes"),
        ("cargo test && rm -rf /", "deletes"),
        ("mv src/a.rs src/b.rs", "moves"),
        ("dd if=/dev/zero of=disk.img", "raw data"),
        ("truncate -s 0 src/lib.rs", "cuts"),
        ("git reset --hard HEAD", "git reset"),
        ("git clean -fdx", "git clean"),
        ("git push --force", "git push"),
        ("git checkout -- .", "git checkout"),
        ("cargo test > results.txt", "redirected"),
        ("echo x >> src/lib.rs", "redirected"),
        ("cargo test &> log", "redirected"),
        ("psql -c 'DROP TABLE users'", "DROP"),
        ("sqlite3 db.sqlite \"DELETE FROM t\"", "DELETE"),
        ("echo $(rm -rf /)", "substitution"),
        ("sh -c 'cargo test'", "script"),
        ("find . -name '*.rs' -delete", "-delete"),
        ("sed -i s/a/b/ src/lib.rs", "in place"),
        ("cargo clean", "cargo clean"),
        ("cargo fmt", "rewrites"),
        ("sudo cargo test", "rights"),
        ("no-such-program-xyz --run", "not a program the judge knows"),
        ("./missing.sh", "does not exist"),
        ("cargo test & ", "background"),
        ("timeout 5 rm x", "deletes"),
        // A script given to an interpreter is not read, so it must be inside the project.
        ("sh /etc/hostname", "/etc/hostname"),
        ("sh missing.sh", "does not exist"),
        // Configuration given on the command line can name programs the tool then runs.
        ("git -c core.pager=rm log", "configuration"),
        ("cargo --config target.x.runner=rm test", "configuration"),
    ];
    for c in safe {
        assert_eq!(check_command(c, &p), Ok(()), "{c}");
    }
    for (c, why) in destructive {
        let errors = check_command(c, &p).expect_err(c);
        assert!(errors.iter().any(|e| e.contains(why)), "{c}: {errors:?}");
    }
    assert!(safe.len() + destructive.len() >= 40);
}

#[test]
fn scope_files_outside_the_root_or_missing_are_invalid() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "x\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.rs"),
        dir.path().join("src/link.rs"),
    )
    .unwrap();
    let run = Run {
        project: &p,
        id: "r-scope".into(),
    };
    run.step("intent", good("intent"));
    run.step("clarify", good("clarify"));
    for (bad, why) in [
        ("../secret.rs", ".."),
        ("src/nope.rs", "does not exist"),
        // An invented path is answered with the real names that look like it.
        ("src/bin/retry.rs", "files with similar names: src/retry.rs"),
        ("src/link.rs", "outside the project root"),
        ("/etc/passwd", "absolute"),
        (".switchboard/workflows/r-scope/state.json", "not open"),
    ] {
        let mut result = good("scope");
        result["primary"] = json!([bad]);
        let r = run.step("scope", result);
        assert_eq!(r["action"], "INVALID", "{bad}: {r}");
        assert!(r["errors"].to_string().contains(why), "{bad}: {r}");
    }
    // A quote that does not match its lines is refused too.
    let mut result = good("scope");
    result["evidence"][0]["excerpt"] = json!("pub fn backoff() {}");
    let r = run.step("scope", result.clone());
    assert!(r["errors"].to_string().contains("does not match"), "{r}");
    // One item of the three the step asks for, and that one misquoted: the reply offers the
    // lines cited as the file has them, the fact kept, then the first lines of the other file
    // named (the fact what they declare), then the next lines of a file offered (a lone `}`
    // passed over), three items; copied back, they pass the check.
    result["evidence"] = json!([result["evidence"][0].clone()]);
    let r = run.step("scope", result);
    assert!(r["errors"].to_string().contains("less than 3 items"), "{r}");
    assert_eq!(
        r["expected"]["evidence"],
        json!([
            {"fact": "Backoff doubles per attempt", "path": "src/retry.rs", "start": 2, "end": 3,
             "excerpt": "pub fn backoff(attempt: u32) -> u64 {\n    100 * 2u64.pow(attempt)"},
            {"fact": "tests/retry.rs: declares `fn backoff_doubles`", "path": "tests/retry.rs",
             "start": 1, "end": 2, "excerpt": "#[test]\nfn backoff_doubles() {"},
            {"fact": "…", "path": "tests/retry.rs", "start": 3, "end": 4,
             "excerpt": "    assert_eq!(demo::retry::backoff(1), 200);\n}"}
        ]),
        "{r}"
    );
    // The shape's placeholders copied back as they are: the files' lines are offered.
    let mut unfilled = good("scope");
    unfilled["evidence"] = r["expected"]["evidence"].clone();
    let again = run.step("scope", unfilled.clone());
    assert_eq!(again["action"], "INVALID", "{again}");
    let about_fact: Vec<&Value> = again["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e.as_str().is_some_and(|e| e.starts_with("/evidence/")))
        .collect();
    assert_eq!(
        about_fact,
        [
            &json!("/evidence/2/fact: still the placeholder \"…\" of the expected shape; write the value itself")
        ],
        "only the unwritten facts are left, each said once: {again}"
    );
    unfilled["evidence"][2]["fact"] = json!("The second attempt waits 200 ms");
    let copied = run.step("scope", unfilled);
    assert_eq!(copied["action"], "PROCEED", "{copied}");
    // The right quote at the wrong lines is cited where it stands, and the reply says so.
    let mut result = good("scope");
    result["evidence"][0]["start"] = json!(1);
    result["evidence"][0]["end"] = json!(2);
    let r = run.step("scope", result);
    assert_eq!(r["action"], "PROCEED", "{r}");
    assert!(
        r["corrected"][0]
            .as_str()
            .is_some_and(|c| c.contains("src/retry.rs:1-2") && c.contains("lines 2-3")),
        "{r}"
    );
    let stored = run.state().steps["scope"].result.clone().unwrap();
    assert_eq!(
        (
            &stored["evidence"][0]["start"],
            &stored["evidence"][0]["end"]
        ),
        (&json!(2), &json!(3))
    );
    // Sent again as the runtime stored it (re-cited), it changes nothing: UNCHANGED, nothing
    // stored, and `scope` stays accepted.
    let attempts = run.state().steps["scope"].attempts;
    let r = run.step("scope", good("scope"));
    assert_eq!(
        (&r["action"], &r["next"]),
        (&json!("UNCHANGED"), &json!("test_strategy")),
        "{r}"
    );
    assert_eq!(run.state().steps["scope"].attempts, attempts);
    assert_eq!(run.state().steps["scope"].status, StepStatus::Accepted);
    // A plan step outside the scope is refused, naming the file.
    for s in ["test_strategy", "complexity"] {
        run.step(s, good(s));
    }
    let mut plan = good("plan");
    plan["steps"][0]["files"] = json!(["src/cache.rs"]);
    let r = run.step("plan", plan);
    assert_eq!(r["action"], "INVALID");
    assert!(
        r["errors"][0].as_str().unwrap().contains("src/cache.rs"),
        "{r}"
    );
}

#[test]
fn the_document_is_rendered_from_the_template_and_its_evidence_holds() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-render".into(),
    };
    let mut last = Value::Null;
    for s in STEPS {
        // A slug begun with a date, as the 1.5B planner wrote one: the file's name has one date.
        // A secondary file that is also primary, as it listed one: the plan names it once. A
        // fact of two lines, as it wrote one: its heading stays one line.
        let result = match s {
            "render" => {
                json!({"title": "Cap retry backoff", "slug": "2026-01-02-cap-retry-backoff"})
            }
            "scope" => {
                let mut scope = good(s);
                scope["secondary"] = json!(["tests/retry.rs", "src/retry.rs"]);
                scope["evidence"][2]["fact"] = json!("A test checks\nthe second attempt's delay");
                scope
            }
            _ => good(s),
        };
        last = run.step(s, result);
        assert_eq!(last["action"], "PROCEED", "{s}: {last}");
        if s == "complexity" {
            // Computed, not asked for: 2 files (4) + 1 folder beyond the first (1).
            assert_eq!(
                last["computed"]["computed_complexity"]["score"], 5,
                "{last}"
            );
        }
    }
    assert!(last["next"].is_null());
    let doc = last["document"].as_str().unwrap();
    let today = run.state().created_at[..10].to_string();
    assert_eq!(
        doc,
        format!("thoughts/shared/plans/{today}-cap-retry-backoff.md")
    );
    let text = std::fs::read_to_string(dir.path().join(doc)).unwrap();
    assert!(text.starts_with("---\ndate: "), "{text}");
    assert!(text.contains("correlation_id: corr-1"));
    assert!(text.contains("# Cap retry backoff"));
    assert!(text.contains("- **Evidence**: `src/retry.rs:2-3`"));
    assert!(
        text.contains(
            "  ```\n  pub fn backoff(attempt: u32) -> u64 {\n      100 * 2u64.pow(attempt)\n  ```"
        ),
        "{text}"
    );
    assert!(
        text.contains("## Scope\n- `src/retry.rs` (primary)\n- `tests/retry.rs` (secondary)\n\n"),
        "{text}"
    );
    assert!(
        text.contains("### A test checks the second attempt's delay\n- **Evidence**"),
        "{text}"
    );
    assert!(text.contains("### Step 2: Test the cap"));
    assert!(text.contains("- `cargo test`"));
    assert!(text.contains("Complexity: **low** (score 5"), "{text}");
    let mut problems = Vec::new();
    switchboard::lint::evidence::check(&p, &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(run.state().status, workflow::RunStatus::Done);
    assert_eq!(run.step("plan", good("plan"))["action"], "STOP");
}

/// Two runs that render one name: the second document takes the next free name and the
/// first is left as it was; a retried run renders over its own document, not a third name.
#[test]
fn a_document_never_replaces_another_run_s() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let finish = |id: &str| -> String {
        let run = Run {
            project: &p,
            id: id.into(),
        };
        let mut last = Value::Null;
        for s in STEPS {
            last = run.step(s, good(s));
        }
        last["document"].as_str().expect("rendered").to_string()
    };
    let first = finish("r-one");
    assert!(first.ends_with("-cap-retry-backoff.md"), "{first}");
    let path = dir.path().join(&first);
    let before = std::fs::read_to_string(&path).unwrap();
    let second = finish("r-two");
    assert_eq!(second, first.replace(".md", "-2.md"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(std::fs::read_to_string(dir.path().join(&second))
        .unwrap()
        .contains("workflow_run: r-two"));
    // Retried at `render`, the second run writes its document again where it was.
    let v = json_out(sb(dir.path()).args(["workflow", "retry", "r-two", "render", "--json"]));
    assert_eq!(v["status"], "open", "{v}");
    let run = Run {
        project: &p,
        id: "r-two".into(),
    };
    let again = run.step("render", good("render"));
    assert_eq!(again["document"], second.as_str(), "{again}");
    assert!(!dir.path().join(first.replace(".md", "-3.md")).exists());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[test]
fn a_retried_step_keeps_its_history_and_resets_its_dependents() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-retry".into(),
    };
    for s in &STEPS[..6] {
        assert_eq!(run.step(s, good(s))["action"], "PROCEED");
    }
    let v = json_out(sb(dir.path()).args(["workflow", "retry", "r-retry", "scope", "--json"]));
    assert_eq!(
        v,
        json!({"id": "r-retry", "step": "scope", "status": "open"})
    );
    let s = run.state();
    assert_eq!(s.steps["scope"].status, StepStatus::Pending);
    for later in ["test_strategy", "complexity", "plan"] {
        assert_eq!(s.steps[later].status, StepStatus::Invalidated, "{later}");
    }
    assert_eq!(s.steps["intent"].status, StepStatus::Accepted);
    // The plan cannot be reported before scope is again.
    assert_eq!(
        run.step("plan", good("plan"))["error"],
        "Missing scope. Run step 'scope' first."
    );
    assert_eq!(run.step("scope", good("scope"))["next"], "test_strategy");
    let h = &run.state().steps["scope"];
    assert_eq!(h.attempts, 2);
    let actions: Vec<&str> = h.history.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, vec!["PROCEED", "RETRY", "PROCEED"]);
    let status = json_out(sb(dir.path()).args(["workflow", "status", "r-retry", "--json"]));
    assert_eq!(status["next"], "test_strategy");
    assert_eq!(status["accepted"], json!(["intent", "clarify", "scope"]));
    let shown = json_out(sb(dir.path()).args(["workflow", "show", "r-retry", "--json"]));
    assert_eq!(
        shown["state"]["steps"]["scope"]["history"][1]["action"],
        "RETRY"
    );
    assert!(shown["log"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["action"] == "RETRY"));
    let list = json_out(sb(dir.path()).args(["workflow", "list", "--json"]));
    assert_eq!(list[0]["id"], "r-retry");
    let aborted = json_out(sb(dir.path()).args(["workflow", "abort", "r-retry", "--json"]));
    assert_eq!(aborted["status"], "aborted");
    assert_eq!(
        run.step("test_strategy", good("test_strategy"))["action"],
        "STOP"
    );
    let out = sb(dir.path())
        .args(["workflow", "show", "../etc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn reporting_an_accepted_step_again_invalidates_what_depends_on_it() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-redo".into(),
    };
    for s in &STEPS[..4] {
        run.step(s, good(s));
    }
    let r = run.step("clarify", good("clarify"));
    assert_eq!(r["next"], "scope");
    let s = run.state();
    assert_eq!(s.steps["scope"].status, StepStatus::Invalidated);
    assert_eq!(s.steps["test_strategy"].status, StepStatus::Invalidated);
}

/// The 1.5B planner reported `clarify` as `{assumptions: [], questions: [...]}` five times and
/// was refused each time for the missing `action`. The shipped workflow's `default` makes
/// silence PROCEED, and the reply says what it assumed.
#[test]
fn clarify_without_its_action_proceeds_by_the_workflow_default() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let run = Run {
        project: &p,
        id: "r-default".into(),
    };
    run.step("intent", good("intent"));
    let r = run.step(
        "clarify",
        json!({"assumptions": [], "questions": ["Which command?"]}),
    );
    assert_eq!(r["action"], "PROCEED", "{r}");
    assert_eq!(r["next"], "scope");
    assert_eq!(r["defaults"], json!({"action": "PROCEED"}));
    let stored = run.state().steps["clarify"].result.clone().unwrap();
    assert_eq!(stored["action"], "PROCEED");
    // A decision that is given is the model's: CLARIFY still asks.
    let r = run.step(
        "clarify",
        json!({"action": "CLARIFY", "assumptions": [], "questions": ["Which command?"]}),
    );
    assert_eq!(r["action"], "CLARIFY", "{r}");
    // test_strategy's verdict copied back as the shape's choices is the default, NEEDED.
    run.step("clarify", good("clarify"));
    run.step("scope", good("scope"));
    let r = run.step(
        "test_strategy",
        json!({"verdict": "CRITICAL | NEEDED | OPTIONAL | NONE", "strategy": "unit tests of the flag"}),
    );
    assert_eq!(r["action"], "PROCEED", "{r}");
    assert_eq!(r["defaults"], json!({"verdict": "NEEDED"}));
}

#[test]
fn lint_reports_workflow_problems_with_positions() {
    let dir = project();
    std::fs::write(
        dir.path().join("workflow/bad.yaml"),
        "steps:\n  - name: a\n  - name: b\n    requires: [a, c]\noutput:\n  path: x.md\n  template: \"{{ a }} {{ ghost }}\"\n",
    )
    .unwrap();
    let p = Project::open(dir.path()).unwrap();
    let mut out = Vec::new();
    switchboard::lint::workflows::check(&p, &mut out);
    let found: Vec<(&str, usize, usize)> = out
        .iter()
        .map(|p| (p.code.as_ref(), p.line, p.column))
        .collect();
    assert!(
        found.contains(&("workflow/unknown-step", 4, 19)),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.0 == "workflow/unknown-variable" && f.1 == 7),
        "{found:?}"
    );
    assert!(out.iter().all(|p| p.file == "workflow/bad.yaml"), "{out:?}");
    // An agent that names a workflow the project does not have.
    std::fs::write(
        dir.path().join("agent/drafter.md"),
        "---\ndescription: Drafts.\nmode: primary\nworkflow: plann\n---\nDraft.\n",
    )
    .unwrap();
    let set = switchboard::agent::load(&p, &Default::default());
    let mut agents = Vec::new();
    switchboard::lint::workflows::agents(&p, &set, &mut agents);
    assert_eq!(agents.len(), 1, "{agents:?}");
    assert_eq!(
        (agents[0].code.as_ref(), agents[0].line),
        ("workflow/not-found", 4)
    );
    assert!(agents[0].help.as_deref().unwrap().contains("`plan`"));
    // The shipped workflow is clean.
    let shipped = Project::open(ROOT).unwrap();
    let mut mine = Vec::new();
    switchboard::lint::workflows::check(&shipped, &mut mine);
    assert!(mine.is_empty(), "{mine:#?}");
}

/// A run whose model stops after two steps is killed; `resume` with the offline model starts
/// at `scope` (the state file says intent and clarify are accepted) and renders the plan.
#[test]
fn a_killed_run_resumes_at_the_last_validated_step() {
    let dir = project();
    // The script plays the planner's own turns; its `delegate_first` hop is not this test's
    // subject (deliver.rs tests it), and the scripted model numbers a hop's turns by the
    // assistant messages in its request, which that delegation would shift by one.
    let planner = dir.path().join("agent/planner.md");
    let text = std::fs::read_to_string(&planner).unwrap();
    std::fs::write(
        &planner,
        text.replace("delegate_first: codebase-locator\n", ""),
    )
    .unwrap();
    let script = "agents:\n  planner:\n    - turns:\n        - tool_calls:\n            - name: step\n              arguments: {name: intent, result: {action: PROCEED, refined_intent: \"Cap the retry backoff\"}}\n        - tool_calls:\n            - name: step\n              arguments: {name: clarify, result: {action: PROCEED, assumptions: []}}\n        - delay_ms: 60000\n          content: never\n";
    std::fs::write(dir.path().join("script.yaml"), script).unwrap();
    let mut child = sb(dir.path())
        .args([
            "run",
            "planner",
            "Plan a cap on the retry backoff",
            "--json",
            "--model",
        ])
        .arg("scripted/script.yaml")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let runs = dir.path().join(".switchboard/workflows");
    let deadline = Instant::now() + Duration::from_secs(60);
    let id = loop {
        assert!(Instant::now() < deadline, "the run never reported clarify");
        std::thread::sleep(Duration::from_millis(20));
        let Some(Ok(entry)) = std::fs::read_dir(&runs).ok().and_then(|mut d| d.next()) else {
            continue;
        };
        let id = entry.file_name().to_string_lossy().to_string();
        let p = Project::open(dir.path()).unwrap();
        if state::load(&p, &id).is_ok_and(|s| s.is_accepted("clarify")) {
            break id;
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let sessions = dir.path().join(".switchboard/sessions");
    let session = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let v = json_out(sb(dir.path()).arg("resume").arg(&session).args([
        "--model",
        "offline/default",
        "--json",
    ]));
    assert_eq!(v["status"], "completed", "{v}");
    let p = Project::open(dir.path()).unwrap();
    let s = state::load(&p, &id).unwrap();
    assert_eq!(s.status, workflow::RunStatus::Done, "{s:#?}");
    // intent and clarify were not reported again: one attempt each, from the killed run.
    assert_eq!(s.steps["intent"].attempts, 1);
    assert_eq!(s.steps["clarify"].attempts, 1);
    let log = state::read_log(&p, &id).unwrap();
    let steps: Vec<&str> = log.iter().map(|l| l.step.as_str()).collect();
    assert_eq!(steps, STEPS.to_vec());
    assert!(dir.path().join(s.document.unwrap()).is_file());
}

/// The offline planner over twenty different requests: the share that reaches the rendered
/// plan (the seed's compliance rate), each plan's evidence holding.
#[test]
fn the_offline_planner_renders_plans_for_twenty_prompts() {
    let dir = project();
    let prompts = [
        "Plan a cap on the retry backoff",
        "Add jitter to the retry backoff",
        "Make the cache evict old pages",
        "Plan a size limit for the cache",
        "Document the retry behaviour in the README",
        "Rename backoff to delay_for in retry",
        "Add a test for the cache",
        "Plan logging for each retry attempt",
        "Cache fetched pages on disk instead of memory",
        "Make the backoff configurable per client",
        "Plan metrics for cache hits and misses",
        "Support a maximum number of retry attempts",
        "Plan removing the cache module",
        "Explain the client in the README",
        "Add a retry budget shared across requests",
        "Plan thread safety for the cache",
        "Plan a builder for the HTTP client with retry options",
        "Retry only on transient errors",
        "Expire cache entries after a time to live",
        "Plan benchmarks for the backoff function",
    ];
    let mut rendered = 0;
    for prompt in prompts {
        let out = sb(dir.path())
            .args(["run", "planner", prompt, "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let wrote = v["written"].as_array().is_some_and(|w| {
            w.iter().any(|f| {
                f.as_str()
                    .is_some_and(|f| f.starts_with("thoughts/shared/plans/"))
            })
        });
        if wrote {
            rendered += 1;
        }
    }
    let p = Project::open(dir.path()).unwrap();
    let mut problems = Vec::new();
    switchboard::lint::evidence::check(&p, &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
    eprintln!(
        "offline compliance: {rendered}/{} prompts reached the rendered plan",
        prompts.len()
    );
    assert_eq!(rendered, prompts.len());
}

/// The reply that opens `scope` offers its evidence already quoting the files the planner's
/// subagents found, the lines that hold the task's words first; copied with facts written, it
/// passes. Without found files the placeholders stay.
#[test]
fn the_scope_call_is_offered_with_evidence_from_the_files_found() {
    let dir = project();
    let p = Project::open(dir.path()).unwrap();
    let found = ["src/retry.rs".to_string(), "tests/retry.rs".to_string()];
    let step = |id: &str, found: &[String], name: &str, result: Value| {
        let call = tool::Call {
            project: &p,
            agent: "planner",
            declared: Some("plan"),
            run_id: id,
            session_id: "s-1",
            correlation_id: "corr-1",
            task: "Plan capping the retry backoff",
            found,
        };
        let h = tool::handle(&call, &json!({"name": name, "result": result})).unwrap();
        serde_json::from_str::<Value>(&h.text).unwrap()
    };
    step("r-found", &found, "intent", good("intent"));
    let r = step("r-found", &found, "clarify", good("clarify"));
    assert_eq!(r["next"], "scope", "{r}");
    let evidence = r["next_call"]["result"]["evidence"].clone();
    let at: Vec<(&str, u64)> = evidence
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["start"].as_u64().unwrap()))
        .collect();
    // `retry`/`backoff` lines of each file in turn.
    assert_eq!(
        at,
        [
            ("src/retry.rs", 1),
            ("tests/retry.rs", 2),
            ("src/retry.rs", 3)
        ],
        "{r}"
    );
    // A comment opening the lines gives the fact (the doc comment above `backoff`), a
    // declaration what it declares; the rest are left to write.
    let facts: Vec<&str> = evidence
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["fact"].as_str().unwrap())
        .collect();
    assert_eq!(
        facts,
        [
            "src/retry.rs: Retry with backoff for the HTTP client.",
            "tests/retry.rs: declares `fn backoff_doubles`",
            "…"
        ]
    );
    let mut scope = good("scope");
    scope["evidence"] = evidence;
    for (i, fact) in ["Backoff is the retry's", "A test checks it", "It doubles"]
        .iter()
        .enumerate()
    {
        scope["evidence"][i]["fact"] = json!(fact);
    }
    assert_eq!(step("r-found", &found, "scope", scope)["action"], "PROCEED");
    // Nothing found: the shape's placeholders, as before.
    step("r-none", &[], "intent", good("intent"));
    let r = step("r-none", &[], "clarify", good("clarify"));
    assert_eq!(r["next_call"]["result"]["evidence"][0]["path"], "…", "{r}");
}
