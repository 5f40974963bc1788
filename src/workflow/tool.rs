//! The `step` tool as the runtime offers and dispatches it: which agents get it, what its
//! description says (the steps, those already accepted, the next one — so a resumed hop starts
//! where the state file says), and one call judged, stored, logged and answered.

use serde_json::{json, Value};

use super::engine::{self, Reply};
use super::state::{self, LogLine, RunStatus, State};
use super::{Workflow, WorkflowError};
use crate::model::ToolSpec;
use crate::project::Project;

/// The tool's name.
pub const TOOL: &str = "step";

/// Who is calling, and for which run.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub project: &'a Project,
    pub agent: &'a str,
    /// The agent's `workflow:` frontmatter key.
    pub declared: Option<&'a str>,
    /// The run's id: the hop's message id, which a resumed hop keeps.
    pub run_id: &'a str,
    pub session_id: &'a str,
    pub correlation_id: &'a str,
    pub task: &'a str,
    /// Files the agent's subagents found, in the order found: the next step's evidence is
    /// offered quoting them (`check::prefill_evidence`).
    pub found: &'a [String],
}

/// One handled call: the reply for the model, and what the event log records.
#[derive(Debug, Clone, PartialEq)]
pub struct Handled {
    pub text: String,
    /// True only when the call could not be judged at all (a broken workflow, a disk error).
    pub is_error: bool,
    /// The document written by the last step.
    pub written: Option<String>,
    pub workflow: String,
    pub step: String,
    pub action: String,
    pub attempt: u32,
    pub errors: Vec<String>,
}

/// The `step` tool's spec for this agent, or `None` when it runs no workflow (or its workflow
/// cannot be loaded: the first call says why).
pub fn offer(call: &Call) -> Option<ToolSpec> {
    let wf = match super::for_agent(call.project, call.agent, call.declared)? {
        Ok(wf) => wf,
        Err(_) => {
            return Some(spec_text(
                format!(
                    "Report a step of workflow `{}`; it cannot be loaded now (call it to see why).",
                    call.declared.unwrap_or("?")
                ),
                &[],
                &[],
            ))
        }
    };
    let state = state::load_existing(call.project, call.run_id)
        .ok()
        .flatten();
    Some(spec(&wf, state.as_ref(), call.run_id))
}

/// The step this run reports next, or `None` when the agent runs no workflow, it cannot be
/// loaded, or every step is accepted. (A model that writes a step's result as its answer, without
/// the `step` call around it, is read as reporting this step: see `runtime::hop`.)
pub fn next_step_name(call: &Call) -> Option<String> {
    owed(call).map(|(_, name)| name)
}

/// The workflow, loaded once, and the name of the step this run reports next.
fn owed(call: &Call) -> Option<(Workflow, String)> {
    let wf = super::for_agent(call.project, call.agent, call.declared)?.ok()?;
    let state = state::load_existing(call.project, call.run_id)
        .ok()
        .flatten();
    let name = match &state {
        Some(s) => engine::next_step(&wf, s).map(str::to_string),
        None => wf.names().first().map(|n| n.to_string()),
    }?;
    Some((wf, name))
}

/// The step to report next with the shape of its result, written as the `step` call to make:
/// for a note that shows a small model the call it owes. Its evidence is filled in from the
/// files the hop's subagents found, as a PROCEED reply's `next_call` is.
pub fn next_step_call(call: &Call) -> Option<serde_json::Value> {
    let (wf, name) = owed(call)?;
    let mut owed = engine::step_call(&wf, &name)?;
    prefill(call, &wf, &name, &mut owed["result"]);
    Some(owed)
}

/// Fills in the evidence of step `name`'s `result` shape from the files the hop's subagents
/// found (`check::prefill_evidence`); a step without an evidence check is left as it is.
fn prefill(call: &Call, wf: &Workflow, name: &str, result: &mut Value) {
    if let Some(step) = wf.step(name) {
        let words = crate::runtime::search_first::words(call.task);
        super::check::prefill_evidence(&step.checks, call.project, call.found, &words, result);
    }
}

/// The refusal of `tool` (called as `called`) when the step owed next does not open it (its
/// `tools:`), naming the `step` call owed: `None` when the step opens it, declares no `tools:`,
/// or the agent has no workflow. `step` itself is always open.
pub fn closed_tool(call: &Call, tool: &str, called: &str) -> Option<String> {
    if tool == TOOL {
        return None;
    }
    let (wf, name) = owed(call)?;
    let open = wf.step(&name)?.tools.as_ref()?;
    // Either spelling of a tool (`mcp__fs__read` for `fs_read`, a grant's alias) opens it.
    let same = |t: &String| {
        t == tool
            || t == called
            || crate::agent::grants::canonical_tool_name(t) == tool
            || t.strip_prefix("mcp__")
                .and_then(|rest| rest.split_once("__"))
                .is_some_and(|(server, name)| {
                    crate::mcp::names::offered_name(server, name) == called
                })
    };
    if open.iter().any(same) {
        return None;
    }
    let owed = engine::step_call(&wf, &name)?;
    let opens = if open.is_empty() {
        "only `step`".to_string()
    } else {
        let list: Vec<String> = open.iter().map(|t| format!("`{t}`")).collect();
        format!("`step` and {}", list.join(", "))
    };
    Some(format!(
        "`{called}` is not open yet: your workflow's step `{name}` comes first, and it opens \
         {opens}. Report it with {}",
        how_to_report(&owed)
    ))
}

/// How to report the step call `owed` (from [`next_step_call`]), the end of every sentence
/// that tells an agent which step it owes: said one way wherever it is said, with the call to
/// copy last.
pub fn how_to_report(owed: &serde_json::Value) -> String {
    format!("the `step` tool, every `…` filled in and one choice of each `a | b`: {owed}")
}

/// The spec: what the tool does, the steps, and where this run stands.
pub fn spec(wf: &Workflow, state: Option<&State>, run_id: &str) -> ToolSpec {
    let names = wf.names();
    let done: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| state.is_some_and(|s| s.is_accepted(n)))
        .collect();
    let next = match state {
        Some(s) => engine::next_step(wf, s),
        None => names.first().copied(),
    };
    let mut text = format!(
        "Report one step of workflow `{}` (run `{run_id}`): `name` is the step, `result` its JSON \
         result. The runtime validates it and replies with JSON whose `action` you must follow: \
         PROCEED (go on with `next`), CLARIFY (ask the user `question`, then stop), INVALID (fix \
         `errors` and report the same step again), STOP (tell the user `error` and stop). Steps \
         in order: {}.",
        wf.name,
        names.join(", ")
    );
    if !done.is_empty() {
        text.push_str(&format!(" Already accepted: {}.", done.join(", ")));
    }
    if let Some(n) = next {
        text.push_str(&format!(" Next step: `{n}`."));
    }
    // The call this run takes now: the next step, with its result's schema. Under a local
    // model's grammar nothing else can be written. Qwen2.5-Coder-1.5B, told INVALID, sent the
    // reply back as its `scope` (`{"errors": […], "expected": {…}}`) with the evidence it was
    // to copy cut to `[]` where a free-form object's nesting ran out; offered the accepted
    // steps' shapes beside the next one's, it sent `clarify`'s result as `scope` six times.
    // The engine still takes an accepted step reported again (a model not under a grammar
    // may revise one); only the schema leaves it out. With no step left, any may be revised.
    let steps: Vec<&str> = match next {
        Some(n) => vec![n],
        None => done.clone(),
    };
    let mut results: Vec<Value> = steps
        .iter()
        .filter_map(|n| wf.steps.iter().find(|s| s.name == *n))
        .map(|step| with_project_files(step, state))
        .collect();
    results.dedup();
    let names = if next.is_some() { steps } else { names };
    spec_text(text, &names, &results)
}

/// The step's schema with [`crate::model::PROJECT_FILE_KEYWORD`] on every string its own
/// `files_exist` and `in_scope` checks select: those must be files of the project, and a
/// grammar that knows it writes one the conversation named. An `in_scope` string whose scope
/// is already accepted (`state`) also takes that scope as its `enum`: the plan's steps may
/// name only the files its scope named, and a schema that lists them lets a grammar, or any
/// model that reads schemas, write nothing else. A string a `safe_command` check selects
/// takes a `pattern` that opens on a program the judge knows and that is installed
/// ([`command_pattern`]).
fn with_project_files(step: &super::Step, state: Option<&State>) -> Value {
    use super::check::{split_pointer, strings, Check};
    let accepted = state.map(State::accepted).unwrap_or_default();
    let mut schema = step.schema.clone();
    for check in &step.checks {
        if let Check::SafeCommand(pointers) = check {
            let pattern = Value::String(command_pattern(&super::command::installed_openers()));
            for pointer in pointers {
                if let (None, pointer) = split_pointer(pointer) {
                    mark_string(&mut schema, pointer, |obj| {
                        obj.insert("pattern".into(), pattern.clone());
                    });
                }
            }
            continue;
        }
        let (pointers, scope) = match check {
            Check::FilesExist(p) => (p.as_slice(), Vec::new()),
            Check::InScope { files, scope } => {
                // Other steps' accepted results only: this step's own is not written yet
                // (null, which selects nothing).
                let mut allowed: Vec<Value> = Vec::new();
                for path in strings(&Value::Null, &accepted, scope) {
                    let path = Value::String(path);
                    if !allowed.contains(&path) {
                        allowed.push(path);
                    }
                }
                (files.as_slice(), allowed)
            }
            _ => continue,
        };
        for pointer in pointers {
            // `step:/pointer` selects another step's result, not this one's.
            if let (None, pointer) = split_pointer(pointer) {
                mark_string(&mut schema, pointer, |obj| {
                    obj.insert(crate::model::PROJECT_FILE_KEYWORD.into(), Value::Bool(true));
                    if !scope.is_empty() {
                        obj.insert("enum".into(), Value::Array(scope.clone()));
                    }
                });
            }
        }
    }
    schema
}

/// The pattern of a verification command: a script of the project (`./…`), or one of
/// `openers` alone or followed by its arguments, and never a backquote (a substitution the
/// judge refuses anyway). It narrows what the judge accepts; the judge still decides.
fn command_pattern(openers: &[&str]) -> String {
    let names: Vec<String> = openers.iter().map(|n| regex::escape(n)).collect();
    format!("^(\\./[^`]*|(?:{})(?: [^`]*)?)$", names.join("|"))
}

/// Follows `pointer` through `properties` (a name) and `items` (`*`) and, when it ends on a
/// string schema, lets `mark` add to it; a pointer the schema does not spell out that way
/// marks nothing.
fn mark_string(
    schema: &mut Value,
    pointer: &str,
    mark: impl FnOnce(&mut serde_json::Map<String, Value>),
) {
    let mut at = schema;
    for seg in super::check::segments(pointer) {
        let next = if seg == "*" {
            at.get_mut("items")
        } else {
            at.get_mut("properties").and_then(|p| p.get_mut(&seg))
        };
        match next {
            Some(next) => at = next,
            None => return,
        }
    }
    let is_string = at.get("type").and_then(Value::as_str) == Some("string");
    if let (true, Some(obj)) = (is_string, at.as_object_mut()) {
        mark(obj);
    }
}

fn spec_text(description: String, names: &[&str], results: &[Value]) -> ToolSpec {
    let mut name = json!({"type": "string", "description": "the step's name"});
    if !names.is_empty() {
        name["enum"] = json!(names);
    }
    let about = "the step's result, as its schema asks";
    let result = match results {
        [] => json!({"type": "object", "description": about}),
        [one] => with_description(one.clone(), about),
        many => json!({"description": about, "anyOf": many}),
    };
    ToolSpec {
        name: TOOL.to_string(),
        description,
        parameters: json!({"type": "object", "properties": {
            "name": name,
            "result": result},
            "required": ["name", "result"]}),
    }
}

fn with_description(mut schema: Value, about: &str) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.entry("description")
            .or_insert_with(|| Value::from(about));
    }
    schema
}

/// Handles a `step` call; `None` when the agent runs no workflow (the call is then an unknown
/// tool like any other).
pub fn handle(call: &Call, args: &Value) -> Option<Handled> {
    let loaded = super::for_agent(call.project, call.agent, call.declared)?;
    let failed = |workflow: &str, message: String| Handled {
        text: format!("`step`: {message}"),
        is_error: true,
        written: None,
        workflow: workflow.to_string(),
        step: args["name"].as_str().unwrap_or("").to_string(),
        action: "ERROR".into(),
        attempt: 0,
        errors: vec![message],
    };
    let wf = match loaded {
        Ok(wf) => wf,
        Err(e) => return Some(failed(call.declared.unwrap_or(""), e.to_string())),
    };
    Some(match judge(call, &wf, args) {
        Ok(h) => h,
        Err(e) => failed(&wf.name, e.to_string()),
    })
}

fn judge(call: &Call, wf: &Workflow, args: &Value) -> Result<Handled, WorkflowError> {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return Err(WorkflowError::Refused(
            "send `name` (the step, a string) and `result` (its JSON object)".into(),
        ));
    };
    // Some models send the result as a JSON string; take what it encodes.
    let result = match args.get("result") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let mut state = match state::load_existing(call.project, call.run_id)? {
        Some(s) => s,
        None => State::new(
            call.run_id,
            wf,
            call.agent,
            call.session_id,
            call.correlation_id,
            call.task,
        ),
    };
    let mut outcome = engine::submit(wf, &mut state, call.project, name, &result);
    if let Reply::Proceed {
        next: Some(next),
        next_call: Some(next_call),
        ..
    }
    | Reply::Unchanged {
        next: Some(next),
        next_call: Some(next_call),
        ..
    } = &mut outcome.reply
    {
        prefill(call, wf, next, &mut next_call["result"]);
    }
    let mut written = None;
    if outcome.complete {
        match finish(call.project, wf, &mut state) {
            Ok(path) => {
                if let Reply::Proceed { document, .. } = &mut outcome.reply {
                    *document = Some(path.clone());
                }
                written = Some(path);
            }
            Err(errors) => {
                // The document cannot be written as the results stand: the last step is not
                // accepted after all.
                let r = state.record(name);
                r.status = super::StepStatus::Invalid;
                if let Some(h) = r.history.last_mut() {
                    h.action = "INVALID".into();
                    h.errors = errors.clone();
                }
                outcome.reply = Reply::Invalid {
                    step: name.to_string(),
                    errors,
                    expected: None,
                };
            }
        }
    }
    let errors = outcome.reply.errors();
    let line = LogLine {
        at: state::now(),
        step: name.to_string(),
        action: outcome.reply.action().to_string(),
        attempt: outcome.attempt,
        errors: errors.clone(),
        note: (outcome.attempt == 0).then(|| match outcome.reply {
            Reply::Unchanged { .. } => "unchanged; not stored".to_string(),
            _ => "refused; not stored".to_string(),
        }),
    };
    // The log line first, then the state: a process killed between the two leaves a logged
    // attempt the state does not hold (the step is reported again on resume), never an accepted
    // step with no line in the log.
    state::append_log(call.project, call.run_id, &line)?;
    if outcome.attempt > 0 {
        state::save(call.project, &mut state)?;
    }
    Ok(Handled {
        text: outcome.reply.to_json(),
        is_error: false,
        written,
        workflow: wf.name.clone(),
        step: name.to_string(),
        action: outcome.reply.action().to_string(),
        attempt: outcome.attempt,
        errors,
    })
}

/// Renders the document, checks its evidence, writes it and closes the run; the document's
/// project-relative path, or why it could not be written.
pub fn finish(project: &Project, wf: &Workflow, state: &mut State) -> Result<String, Vec<String>> {
    let (path, text) = engine::render(wf, state).map_err(|e| vec![e.to_string()])?;
    let files = crate::contract::FileCache::new();
    let ctx = crate::contract::CheckContext::new(project, &files);
    let check = crate::contract::verify_document(&text, &ctx);
    let bad: Vec<String> = check
        .violations
        .iter()
        .filter(|p| p.is_error())
        .map(|p| format!("the rendered document: {} (line {})", p.message, p.line))
        .collect();
    if !bad.is_empty() {
        return Err(bad);
    }
    // Two planner sessions on one prompt on one day rendered the same slug, and the second
    // wrote its plan over the first's: a document takes a free name, or its run's own.
    let path = crate::tools::write::write_new(project, &path, &text, state.document.as_deref())
        .map_err(|e| vec![e])?;
    state.document = Some(path.clone());
    state.status = RunStatus::Done;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_opens_its_tools_in_either_spelling_and_closes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("workflow")).unwrap();
        std::fs::write(
            dir.path().join("workflow/w.yaml"),
            "steps:\n  - name: a\n    tools: [read, mcp__fs__list]\n  - name: b\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let p = Project::open(dir.path()).unwrap();
        let call = Call {
            project: &p,
            agent: "boss",
            declared: Some("w"),
            run_id: "r1",
            session_id: "s",
            correlation_id: "c",
            task: "t",
            found: &[],
        };
        assert_eq!(closed_tool(&call, "read", "read"), None);
        assert_eq!(closed_tool(&call, "fs_list", "fs_list"), None);
        assert_eq!(closed_tool(&call, TOOL, TOOL), None);
        let why = closed_tool(&call, "task", "task").expect("closed");
        assert!(
            why.contains("`task` is not open yet: your workflow's step `a` comes first")
                && why.contains("it opens `step` and `read`, `mcp__fs__list`"),
            "{why}"
        );
    }

    #[test]
    fn the_description_names_the_accepted_steps_and_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let wf = super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: a\n  - name: b\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let fresh = spec(&wf, None, "r1");
        assert!(
            fresh.description.ends_with("Next step: `a`."),
            "{}",
            fresh.description
        );
        // The call names the next step only; the description names them all.
        assert_eq!(fresh.parameters["properties"]["name"]["enum"], json!(["a"]));
        assert!(fresh.description.contains("Steps in order: a, b."));
        let mut s = State::new("r1", &wf, "x", "s", "c", "t");
        engine::submit(&wf, &mut s, &p, "a", &json!({}));
        let later = spec(&wf, Some(&s), "r1");
        assert!(later
            .description
            .contains("Already accepted: a. Next step: `b`."));
    }

    /// The result's schema is the next step's, or any of it and the accepted steps' schemas:
    /// the shapes a result can take now, which a local model's grammar is written from.
    #[test]
    fn the_call_takes_the_next_steps_name_and_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::open(dir.path()).unwrap();
        let wf = super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: a\n    schema: {type: object, required: [x], properties: {x: {type: string}}}\n  - name: b\n    schema: {type: object, required: [count], properties: {count: {type: integer}}}\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let fresh = spec(&wf, None, "r1");
        let result = &fresh.parameters["properties"]["result"];
        assert_eq!(result["required"], json!(["x"]), "{result}");
        assert!(result["description"].is_string());
        let mut s = State::new("r1", &wf, "x", "s", "c", "t");
        engine::submit(&wf, &mut s, &p, "a", &json!({"x": "done"}));
        assert_eq!(fresh.parameters["properties"]["name"]["enum"], json!(["a"]));
        let later = spec(&wf, Some(&s), "r1");
        let result = &later.parameters["properties"]["result"];
        assert_eq!(result["required"], json!(["count"]), "{result}");
        assert_eq!(later.parameters["properties"]["name"]["enum"], json!(["b"]));
        assert!(later.description.contains("Already accepted: a."));
        // The grammar a local model decodes the call under is written from it.
        let gbnf = crate::model::local::grammar::json_schema(&later.parameters).expect("grammar");
        assert!(gbnf.contains("count"), "{gbnf}");
    }
    /// The strings a step's own `files_exist`/`in_scope` checks select carry the project-file
    /// annotation, so a local grammar writes them as files the conversation named; a pointer
    /// into another step's result marks nothing here.
    #[test]
    fn the_paths_a_step_checks_are_marked_as_project_files() {
        let wf = super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: scope\n    schema: {type: object, properties: {primary: {type: array, items: {type: string}}, note: {type: string}, steps: {type: array, items: {type: object, properties: {files: {type: array, items: {type: string}}}}}}}\n    checks:\n      - files_exist: [/primary/*, other:/primary/*, /missing/*]\n      - in_scope: {files: [/steps/*/files/*], scope: [/primary/*]}\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let tool = spec(&wf, None, "r1");
        let result = &tool.parameters["properties"]["result"]["properties"];
        let key = crate::model::PROJECT_FILE_KEYWORD;
        assert_eq!(result["primary"]["items"][key], json!(true), "{result}");
        assert_eq!(
            result["steps"]["items"]["properties"]["files"]["items"][key],
            json!(true),
            "{result}"
        );
        assert!(result["note"].get(key).is_none(), "{result}");
        assert!(result["steps"]["items"]["properties"]["files"]["items"]
            .get("enum")
            .is_none());
        assert!(result.get("missing").is_none(), "{result}");
        // The step's own schema, which validates the result, is left as written.
        assert!(wf.steps[0].schema["properties"]["primary"]["items"]
            .get(key)
            .is_none());
    }
    /// Once the scope is accepted, the files a later step may name are the scope's, as an enum.
    #[test]
    fn an_in_scope_string_takes_the_accepted_scope_as_its_enum() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "x\n").unwrap();
        std::fs::write(dir.path().join("b.rs"), "x\n").unwrap();
        let p = Project::open(dir.path()).unwrap();
        let wf = super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: scope\n    schema: {type: object, properties: {primary: {type: array, items: {type: string}}, secondary: {type: array, items: {type: string}}}}\n    checks:\n      - files_exist: [/primary/*, /secondary/*]\n  - name: plan\n    schema: {type: object, properties: {files: {type: array, items: {type: string}}}}\n    checks:\n      - in_scope: {files: [/files/*], scope: [\"scope:/primary/*\", \"scope:/secondary/*\"]}\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let mut s = State::new("r1", &wf, "x", "s", "c", "t");
        let scope = json!({"primary": ["a.rs"], "secondary": ["b.rs", "a.rs"]});
        engine::submit(&wf, &mut s, &p, "scope", &scope);
        assert!(s.is_accepted("scope"), "{:?}", s.steps);
        let tool = spec(&wf, Some(&s), "r1");
        let files = &tool.parameters["properties"]["result"]["properties"]["files"]["items"];
        assert_eq!(files["enum"], json!(["a.rs", "b.rs"]), "{files}");
        assert_eq!(files[crate::model::PROJECT_FILE_KEYWORD], json!(true));
    }

    /// A verification command's string opens on an installed program the judge knows, or a
    /// project script, and holds no backquote; the pattern is one the local grammar writes.
    #[test]
    fn a_safe_command_string_opens_on_a_known_program() {
        let pattern = command_pattern(&["cargo", "grep", "cargo-nextest"]);
        let re = regex::Regex::new(&pattern).expect("pattern compiles");
        for ok in [
            "cargo test",
            "cargo",
            "./ci/check.sh",
            "grep -q x src/a.rs",
            "cargo-nextest run",
        ] {
            assert!(re.is_match(ok), "{ok} against {pattern}");
        }
        for no in [
            "Run `cargo test` to ensure it works.",
            "Run cargo test",
            "cargotest",
            "cargo test `x`",
            "",
        ] {
            assert!(!re.is_match(no), "{no} against {pattern}");
        }
        crate::model::local::gbnf::pattern_to_gbnf(&pattern, 40).expect("the grammar writes it");

        let wf = super::super::spec::parse(
            "workflow/t.yaml",
            "steps:\n  - name: plan\n    schema: {type: object, properties: {verification: {type: string}}}\n    checks:\n      - safe_command: [/verification]\noutput: {path: o.md, template: x}\n",
        )
        .unwrap();
        let tool = spec(&wf, None, "r1");
        let v = &tool.parameters["properties"]["result"]["properties"]["verification"];
        assert_eq!(
            v["pattern"],
            json!(command_pattern(&super::super::command::installed_openers())),
            "{v}"
        );
        // The step's own schema, which validates the result, is left as written.
        assert!(wf.steps[0].schema["properties"]["verification"]
            .get("pattern")
            .is_none());
    }
}
