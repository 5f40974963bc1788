//! Property test: lint and the runtime agree on every delegation.
//!
//! Random agent folders (modes, `disable`, `tools:` grants in both dialects, `permission.task`
//! as one action or glob patterns with allow/ask/deny, delegation references to real and
//! missing agents) are loaded from disk. For every pair the runtime's verdict at depth 0 with
//! an empty chain (accept or refuse) must equal lint's verdict on each reference of that pair
//! (an error finding on it; the edge drawn as a problem in `graph`) and the prompt's list of
//! callable subagents.
//!
//! The case count comes from `PROPTEST_CASES` (default 256).

use proptest::prelude::*;
use switchboard::agent::{self, AgentSet, LoadOptions};
use switchboard::problem::{Problem, Severity};
use switchboard::project::Project;

/// Agent names; the last ones are never written, so references to them are to missing agents.
const NAMES: &[&str] = &["lead", "alpha", "beta", "team/gamma", "team/delta", "ghost"];

const MODES: &[&str] = &["", "mode: primary\n", "mode: subagent\n", "mode: all\n"];

const TOOLS: &[&str] = &[
    "",
    "tools: {task: false}\n",
    "tools: {task: true, read: true}\n",
    "tools: {\"*\": false, read: true}\n",
    "tools: {\"*\": false, task: true}\n",
    "tools: {\"t*\": false}\n",
    "tools: Read, Grep\n",
    "tools: Read, Task\n",
    "tools: [Agent]\n",
];

const PATTERNS: &[&str] = &[
    "\"*\"",
    "\"team/*\"",
    "\"a*\"",
    "beta",
    "lead",
    "\"?eta\"",
    "team/gamma",
    "ghost",
];

const ACTIONS: &[&str] = &["allow", "ask", "deny"];

#[derive(Debug, Clone)]
enum PermissionSpec {
    None,
    Scalar(usize),
    Patterns(Vec<(usize, usize)>),
}

#[derive(Debug, Clone)]
struct AgentSpec {
    mode: usize,
    disable: Option<bool>,
    tools: usize,
    permission: PermissionSpec,
    /// (target index, written as a `task()` call rather than prose)
    references: Vec<(usize, bool)>,
}

fn permission() -> impl Strategy<Value = PermissionSpec> {
    prop_oneof![
        Just(PermissionSpec::None),
        (0..ACTIONS.len()).prop_map(PermissionSpec::Scalar),
        proptest::collection::vec((0..PATTERNS.len(), 0..ACTIONS.len()), 1..4)
            .prop_map(PermissionSpec::Patterns),
    ]
}

fn agent_spec() -> impl Strategy<Value = AgentSpec> {
    (
        0..MODES.len(),
        proptest::option::of(proptest::bool::weighted(0.3)),
        0..TOOLS.len(),
        permission(),
        proptest::collection::vec((0..NAMES.len(), any::<bool>()), 0..5),
    )
        .prop_map(|(mode, disable, tools, permission, references)| AgentSpec {
            mode,
            disable,
            tools,
            permission,
            references,
        })
}

/// One spec per written agent (all names but the last, which stays missing).
fn agent_set() -> impl Strategy<Value = Vec<AgentSpec>> {
    proptest::collection::vec(agent_spec(), NAMES.len() - 1)
}

fn file_text(spec: &AgentSpec) -> String {
    let mut fm = String::from("---\ndescription: \"an agent\"\n");
    fm.push_str(MODES[spec.mode]);
    if spec.mode != 1 {
        fm.push_str("contract: envelope\n");
    }
    if let Some(d) = spec.disable {
        fm.push_str(&format!("disable: {d}\n"));
    }
    fm.push_str(TOOLS[spec.tools]);
    match &spec.permission {
        PermissionSpec::None => {}
        PermissionSpec::Scalar(a) => {
            fm.push_str(&format!("permission:\n  task: {}\n", ACTIONS[*a]))
        }
        PermissionSpec::Patterns(rules) => {
            fm.push_str("permission:\n  task:\n");
            let mut seen = std::collections::BTreeSet::new();
            for (p, a) in rules {
                if seen.insert(*p) {
                    fm.push_str(&format!("    {}: {}\n", PATTERNS[*p], ACTIONS[*a]));
                }
            }
        }
    }
    fm.push_str("---\nWork carefully.\n");
    for (target, as_call) in &spec.references {
        let name = NAMES[*target];
        if *as_call {
            fm.push_str(&format!(
                "\n```\ntask({{ subagent_type: \"{name}\", prompt: \"x\" }})\n```\n"
            ));
        } else {
            fm.push_str(&format!("\nDelegate to `{name}`.\n"));
        }
    }
    fm
}

fn load(specs: &[AgentSpec]) -> (tempfile::TempDir, Project, AgentSet) {
    let dir = tempfile::tempdir().unwrap();
    for (name, spec) in NAMES.iter().zip(specs) {
        let path = dir.path().join("agent").join(format!("{name}.md"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, file_text(spec)).unwrap();
    }
    let project = Project::open(dir.path()).unwrap();
    let set = agent::load(&project, &LoadOptions::default());
    (dir, project, set)
}

/// The runtime's verdict on `caller` → `target` for a session's primary: depth 0, nothing above
/// it in the chain, the default `--max-depth`.
fn runtime_accepts(set: &AgentSet, caller: &agent::Agent, target: &str) -> bool {
    let max_depth = switchboard::runtime::RunOptions::default().max_depth;
    let args = serde_json::json!({"subagent_type": target, "prompt": "do it"});
    switchboard::runtime::dispatch::accept(
        caller,
        &args,
        std::slice::from_ref(&caller.name),
        0,
        max_depth,
        set,
    )
    .is_ok()
}

/// Whether lint reports an error on the reference at `line:column` of `caller`'s file. A missing
/// `task` grant is reported once per caller (at its first delegation), so it counts for every
/// reference of that caller. A cycle through other agents is refused only deeper in a chain, so
/// at depth 0 only a cycle back to the caller itself counts.
fn lint_refuses(
    findings: &[Problem],
    caller: &agent::Agent,
    target: &str,
    line: usize,
    column: usize,
) -> bool {
    findings.iter().any(|d| {
        d.severity == Severity::Error
            && d.file == caller.file
            && d.code.starts_with("delegation/")
            && (d.code == "delegation/no-task-tool"
                || (d.line == line
                    && d.column == column
                    && (d.code != "delegation/cycle" || target == caller.name)))
    })
}

/// Whether `graph` draws the edge as a problem.
fn graph_refuses(set: &AgentSet, caller: &agent::Agent, line: usize, column: usize) -> bool {
    switchboard::lint::graph::edges(set)
        .into_iter()
        .filter(|e| {
            e.from.name == caller.name && e.reference.line == line && e.reference.column == column
        })
        .any(|e| !e.refusals(set).is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn lint_and_runtime_agree_on_every_pair(specs in agent_set()) {
        let (_dir, project, set) = load(&specs);
        // Every written file loaded, so the sets exercise what the specs say.
        prop_assert_eq!(set.len(), NAMES.len() - 1, "{:#?}", set.diagnostics);
        let findings = switchboard::lint::lint_project(&project, &set);
        for caller in set.iter() {
            for r in &caller.references {
                let runtime = runtime_accepts(&set, caller, &r.target);
                let lint = !lint_refuses(&findings, caller, &r.target, r.line, r.column);
                prop_assert_eq!(
                    runtime, lint,
                    "{} -> {} (line {}): runtime accepts: {}, lint accepts: {}\n{}\n{:?}",
                    caller.name, r.target, r.line, runtime, lint,
                    file_text(&specs[NAMES.iter().position(|n| *n == caller.name).unwrap()]),
                    findings.iter().map(|d| (d.code.clone(), d.file.as_str(), d.line)).collect::<Vec<_>>()
                );
                let graph = !graph_refuses(&set, caller, r.line, r.column);
                prop_assert_eq!(runtime, graph, "{} -> {}: graph disagrees", caller.name, r.target);
            }
            // The prompt lists exactly the agents the runtime would accept.
            let listed: Vec<String> = agent::render::PromptContext::callable_subagents(&set, caller)
                .into_iter()
                .map(|s| s.name)
                .collect();
            for target in NAMES {
                prop_assert_eq!(
                    runtime_accepts(&set, caller, target),
                    listed.iter().any(|n| n == target),
                    "{} -> {}: prompt list {:?}", caller.name, target, listed
                );
            }
        }
    }
}
