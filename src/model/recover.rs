//! Tool calls a model wrote as text although tools were offered natively.
//!
//! Small open models served through a chat template often know they should call a tool but
//! write the call into the answer instead of the template's call channel: a fenced JSON object
//! `{"name": "task", "arguments": {…}}`, Qwen/Hermes `<tool_call>{…}</tool_call>`, Mistral's
//! `[TOOL_CALLS] […]`, Llama's `<|python_tag|>{…}`, our own `task({…})` — or a flattened object
//! with the arguments beside `name`. Taken as a final answer, such a reply ends a session
//! "completed" with no delegation at all. [`recover`] reads those calls back so the runtime runs
//! them like native ones (and logs a `model.tool_call_recovered` event naming the form).
//!
//! Recovery must not turn talk about a tool into a call, so a candidate counts only when
//! * it names a tool offered to this agent in this turn;
//! * it starts a line (outside code) or fills a whole code block: a call inside inline code in a
//!   sentence is a quotation;
//! * the prose just before it does not introduce an example ("for example", "e.g.", "such as",
//!   "would look like", …);
//! * at most one short line follows the last call: an answer that goes on after the "call" is
//!   an answer that quotes one.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::{Map, Value};

use super::textual::{literal, task_arguments, TASK_TOOL};
use super::{ToolCall, ToolSpec};

/// The tools offered in a turn: their names, and the parameters each takes (to recognise an
/// arguments object written without its tool's name).
#[derive(Debug, Clone, Default)]
pub struct Offered {
    tools: Vec<OfferedTool>,
    /// The agents `task` may name (its `subagent_type` enum): a call written with an agent's
    /// name as the tool's is a delegation to that agent.
    agents: Vec<String>,
}

#[derive(Debug, Clone)]
struct OfferedTool {
    name: String,
    required: Vec<String>,
    properties: Vec<String>,
}

impl Offered {
    /// From the specs sent to the model.
    pub fn from_specs(specs: &[ToolSpec]) -> Self {
        let names = |v: Option<&Value>| -> Vec<String> {
            match v {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect(),
                Some(Value::Object(map)) => map.keys().cloned().collect(),
                _ => Vec::new(),
            }
        };
        let agents = specs
            .iter()
            .find(|s| s.name == TASK_TOOL)
            .map(|s| crate::tools::narrowed_task_names(&s.parameters))
            .unwrap_or_default();
        Offered {
            tools: specs
                .iter()
                .map(|s| OfferedTool {
                    name: s.name.clone(),
                    required: names(s.parameters.get("required")),
                    properties: names(s.parameters.get("properties")),
                })
                .collect(),
            agents,
        }
    }

    /// Names only (no shapes): for callers that know no schemas.
    pub fn names(names: &[&str]) -> Self {
        Offered {
            tools: names
                .iter()
                .map(|n| OfferedTool {
                    name: n.to_string(),
                    required: Vec::new(),
                    properties: Vec::new(),
                })
                .collect(),
            agents: Vec::new(),
        }
    }

    /// Whether `name` was offered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// The one tool whose parameters `object` fits exactly: every required parameter present
    /// (at least one), no key it does not take. Two fitting tools: none (ambiguous).
    fn by_shape(&self, object: &Map<String, Value>) -> Option<&str> {
        let mut fits = self.tools.iter().filter(|t| {
            !t.required.is_empty()
                && t.required.iter().all(|r| object.contains_key(r))
                && object.keys().all(|k| t.properties.contains(k))
        });
        let first = fits.next()?;
        fits.next().is_none().then_some(first.name.as_str())
    }
}

/// How a recovered call was written; the `form` of the `model.tool_call_recovered` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `{"name": …, "arguments": {…}}` (or `parameters`/`args`/`input`, or OpenAI's
    /// `{"function": {"name": …, "arguments": "…"}}`), fenced or bare, alone or in an array.
    Json,
    /// `<tool_call>{…}</tool_call>` (Hermes, Qwen).
    Hermes,
    /// `[TOOL_CALLS] [{…}]` or `[TOOL_CALLS]name[ARGS]{…}` (Mistral).
    Mistral,
    /// `<|python_tag|>{…}` (Llama 3.x).
    PythonTag,
    /// `task({…})` or `task(key="…", …)`, the form our prompts show.
    TaskCall,
    /// A JSON call with (some of) its arguments beside `name` instead of inside `arguments`.
    Flattened,
    /// A workflow step's result written as the whole answer, without the `step` call around it.
    StepResult,
    /// A JSON call whose tool name is an agent `task` may call (`{"name": "codebase-locator",
    /// "arguments": {"prompt": …}}`): a delegation to that agent.
    AgentName,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Json => "json",
            Form::Hermes => "hermes",
            Form::Mistral => "mistral",
            Form::PythonTag => "python_tag",
            Form::TaskCall => "task_call",
            Form::Flattened => "flattened",
            Form::StepResult => "step_result",
            Form::AgentName => "agent_name",
        }
    }
}

/// Calls read back from an answer's text.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub calls: Vec<ToolCall>,
    /// The form of the first call (an answer rarely mixes forms).
    pub form: Form,
}

/// Keys of a JSON call object that are not arguments.
const META_KEYS: &[&str] = &[
    "name",
    "arguments",
    "parameters",
    "args",
    "input",
    "id",
    "type",
];
/// Keys that may hold the arguments object.
const ARGUMENT_KEYS: &[&str] = &["arguments", "parameters", "args", "input"];

/// Words that, at the end of the prose before a candidate, make it an example, not a call.
const EXAMPLE_CUES: &[&str] = &[
    "example",
    "e.g.",
    "for instance",
    "such as",
    "like this",
    "like so",
    "looks like",
    "look like",
    "would be written",
    "syntax",
    "usage",
    "you can call",
    "you could call",
    "one could",
    "could be called",
    "the format",
    "format is",
    "schema",
];

/// The tool calls written as text in `answer`, if it holds any that are calls by the rules in the
/// module docs. `offered` are the names of the tools offered in this turn; `turn` goes into the
/// ids (`recovered_t{turn}_{n}`), so they stay unique within a hop.
pub fn recover(answer: &str, offered: &Offered, turn: u32) -> Option<Recovered> {
    if offered.tools.is_empty() || answer.trim().is_empty() {
        return None;
    }
    let found = candidates(answer, offered);
    let last_end = found.last()?.end;
    if !short_tail(&answer[last_end..]) {
        return None;
    }
    let mut calls = Vec::new();
    let mut form = None;
    for c in found {
        if introduces_example(&answer[..c.start]) {
            return None;
        }
        form.get_or_insert(c.form);
        calls.extend(c.calls);
    }
    // Small models often write one call twice (fenced, then bare): it is one call.
    let mut unique: Vec<Call> = Vec::new();
    for call in calls {
        if !unique.contains(&call) {
            unique.push(call);
        }
    }
    Some(Recovered {
        calls: numbered(unique, turn),
        form: form?,
    })
}

/// Calls read from text as tool calls, with ids `recovered_t{turn}_{n}` (unique within a hop).
fn numbered(calls: Vec<Call>, turn: u32) -> Vec<ToolCall> {
    calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, arguments))| ToolCall {
            id: format!("recovered_t{turn}_{}", i + 1),
            name,
            arguments: Value::Object(arguments),
        })
        .collect()
}

/// The call an answer opens with, whatever follows it: for a turn that had to be a call
/// (`tool_choice: required`), where a model that writes its call as text often goes on as if
/// the result had come (Qwen2.5-Coder-1.5B wrote a `grep` call, then an answer listing a file
/// that does not exist). The call must start the answer or follow at most two lines of prose
/// that do not introduce an example. Returns the calls and where the first candidate ends: the
/// text after it was never a result and goes.
pub fn leading_call(answer: &str, offered: &Offered, turn: u32) -> Option<(Recovered, usize)> {
    const PREFACE_LINES: usize = 2;
    if offered.tools.is_empty() {
        return None;
    }
    let first = candidates(answer, offered).into_iter().next()?;
    let before = &answer[..first.start];
    let prose = before.lines().filter(|l| !l.trim().is_empty()).count();
    if prose > PREFACE_LINES || introduces_example(before) {
        return None;
    }
    Some((
        Recovered {
            calls: numbered(first.calls, turn),
            form: first.form,
        },
        first.end,
    ))
}

/// The one JSON object an answer consists of (alone, or alone in one code fence), read leniently
/// like a call's arguments; `None` when the answer holds anything else. For a workflow agent that
/// writes a step's result as its answer without the `step` call around it.
pub fn sole_object(answer: &str) -> Option<Map<String, Value>> {
    let mut objects = sole_objects(answer)?;
    (objects.len() == 1).then(|| objects.remove(0))
}

/// The JSON objects an answer consists of, in order: each bare or alone in its own code fence,
/// nothing but white space between them, read leniently like a call's arguments; `None` when the
/// answer holds anything else (prose, an array, an empty object) or no object at all. Over
/// llama-server the 1.5B planner wrote the `intent` step it had reported again and the `clarify`
/// step it owed as two fenced objects in one answer, three turns running.
pub fn sole_objects(answer: &str) -> Option<Vec<Map<String, Value>>> {
    let mut objects = Vec::new();
    let mut rest = answer.trim();
    while !rest.is_empty() {
        let (text, after) = match crate::markdown::leading_fence(rest) {
            Some((content, after)) => (content.trim(), after),
            None => (rest, ""),
        };
        let (value, used) = literal(text)?;
        let tail = text[used..].trim();
        // A bare object may be followed by the next one; a fenced one holds nothing else.
        let next = if after.is_empty() && rest.starts_with(['{', '[']) {
            tail
        } else if tail.is_empty() {
            after.trim()
        } else {
            return None;
        };
        match value {
            Value::Object(map) if !map.is_empty() => objects.push(map),
            _ => return None,
        }
        rest = next;
    }
    (!objects.is_empty()).then_some(objects)
}

/// One place in the answer that holds calls: byte range, form, and `(name, arguments)` pairs.
#[derive(Debug)]
struct Candidate {
    start: usize,
    end: usize,
    form: Form,
    calls: Vec<Call>,
}

/// Every candidate in `answer`, in order: whole code blocks that are nothing but calls, and calls
/// that start a line of the prose around them.
fn candidates(answer: &str, offered: &Offered) -> Vec<Candidate> {
    let mut found = Vec::new();
    // Code blocks, by byte range of the whole block (fences included) and of its content.
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<(usize, usize, usize)> = None; // (block start, content start, content end)
    for (event, range) in Parser::new_ext(answer, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => open = Some((range.start, usize::MAX, 0)),
            Event::Text(_) => {
                if let Some((_, from, to)) = open.as_mut() {
                    *from = (*from).min(range.start);
                    *to = (*to).max(range.end);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((start, from, to)) = open.take() {
                    blocks.push((start, range.end));
                    if from < to {
                        if let Some(mut c) = whole(&answer[from..to], offered) {
                            c.start = start;
                            c.end = range.end;
                            found.push(c);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Prose: a call that starts a line outside every code block.
    let mut pos = 0;
    while pos < answer.len() {
        if let Some(&(_, end)) = blocks.iter().find(|(s, e)| *s <= pos && pos < *e) {
            pos = end;
            continue;
        }
        let line_end = answer[pos..]
            .find('\n')
            .map_or(answer.len(), |i| pos + i + 1);
        let indent = answer[pos..line_end].len() - answer[pos..line_end].trim_start().len();
        let at = pos + indent;
        match one(answer, at, offered) {
            Some(c) if c.end > at => {
                // Go on at the line after the one the call ended on.
                pos = if answer[..c.end].ends_with('\n') {
                    c.end
                } else {
                    answer[c.end..]
                        .find('\n')
                        .map_or(answer.len(), |i| c.end + i + 1)
                };
                found.push(c);
            }
            _ => pos = line_end,
        }
    }
    found.sort_by_key(|c| c.start);
    found
}

/// A code block's content when it is nothing but calls.
fn whole(code: &str, offered: &Offered) -> Option<Candidate> {
    let mut at = code.len() - code.trim_start().len();
    let mut calls = Vec::new();
    let mut form = None;
    while at < code.len() {
        let c = one(code, at, offered)?;
        form.get_or_insert(c.form);
        calls.extend(c.calls);
        at = c.end;
        let rest = &code[at..];
        at += rest.len()
            - rest
                .trim_start_matches([' ', '\t', '\n', '\r', ';', ','])
                .len();
    }
    Some(Candidate {
        start: 0,
        end: code.len(),
        form: form?,
        calls,
    })
}

/// The call(s) that start at byte `at` of `text`, in any form.
fn one(text: &str, at: usize, offered: &Offered) -> Option<Candidate> {
    let rest = &text[at..];
    let (form, after_marker, close) = if let Some(r) = rest.strip_prefix("<tool_call>") {
        (Form::Hermes, rest.len() - r.len(), Some("</tool_call>"))
    } else if let Some(r) = rest.strip_prefix("<tools>") {
        // Qwen2.5-Coder-1.5B wraps a call in the tag its chat template lists the tools in.
        (Form::Hermes, rest.len() - r.len(), Some("</tools>"))
    } else if let Some(r) = rest.strip_prefix("[TOOL_CALLS]") {
        (Form::Mistral, rest.len() - r.len(), None)
    } else if let Some(r) = rest.strip_prefix("<|python_tag|>") {
        (Form::PythonTag, rest.len() - r.len(), Some("<|eom_id|>"))
    } else {
        (Form::Json, 0, None)
    };
    let body = at + after_marker;
    let (calls, mut end, shape) = match form {
        Form::Mistral => mistral(text, body, offered)?,
        _ => match json_calls(text, body, offered) {
            Some(found) => found,
            None if form == Form::Json => {
                let (call, end) = task_call(text, body, offered)?;
                return Some(Candidate {
                    start: at,
                    end,
                    form: Form::TaskCall,
                    calls: vec![call],
                });
            }
            None => {
                let (call, end) = task_call(text, skip_ws(text, body), offered)?;
                (vec![call], end, Shape::Plain)
            }
        },
    };
    if let Some(close) = close {
        let after = skip_ws(text, end);
        if text[after..].starts_with(close) {
            end = after + close.len();
        }
    }
    let form = match (form, shape) {
        (Form::Json, Shape::Flattened) => Form::Flattened,
        (Form::Json, Shape::AgentName) => Form::AgentName,
        (form, _) => form,
    };
    Some(Candidate {
        start: at,
        end,
        form,
        calls,
    })
}

/// One call: tool name and arguments.
type Call = (String, Map<String, Value>);
/// How a JSON call object was written, from plain to furthest from the standard form (an
/// array of calls reports the furthest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    Plain,
    Flattened,
    AgentName,
}

/// Calls found, where they end, and how they were written.
type Found = (Vec<Call>, usize, Shape);

/// A JSON call object, or an array of them, at `at`: the calls, the end, and whether any was
/// flattened.
fn json_calls(text: &str, at: usize, offered: &Offered) -> Option<Found> {
    let at = skip_ws(text, at);
    if !matches!(text.as_bytes().get(at), Some(b'{' | b'[')) {
        return None;
    }
    let (value, used) = literal(&text[at..])?;
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => return None,
        object => vec![object],
    };
    let mut calls = Vec::new();
    let mut shape = Shape::Plain;
    for item in items {
        let (name, arguments, this) = call_object(item, offered)?;
        shape = shape.max(this);
        calls.push((name, arguments));
    }
    Some((calls, at + used, shape))
}

/// `(name, arguments, shape)` of one JSON call object naming an offered tool (or an agent
/// the offered `task` may call).
fn call_object(value: Value, offered: &Offered) -> Option<(String, Map<String, Value>, Shape)> {
    let Value::Object(mut object) = value else {
        return None;
    };
    // OpenAI's wire shape: {"type": "function", "function": {"name", "arguments": "<json>"}}.
    if let Some(Value::Object(function)) = object.remove("function") {
        return call_object(Value::Object(function), offered);
    }
    let name = match object.get("name").or_else(|| object.get("tool")) {
        Some(Value::String(name)) => name.trim().to_string(),
        // No name: the arguments alone, when they fit exactly one offered tool.
        None => {
            let name = offered.by_shape(&object)?.to_string();
            return Some((name, object, Shape::Flattened));
        }
        _ => return None,
    };
    let agent =
        (!offered.contains(&name) && offered.contains(TASK_TOOL) && offered.agents.contains(&name))
            .then(|| name.clone());
    if !offered.contains(&name) && agent.is_none() {
        return None;
    }
    object.remove("tool");
    let mut arguments = Map::new();
    for key in ARGUMENT_KEYS {
        match object.remove(*key) {
            Some(Value::Object(map)) => {
                arguments = map;
                break;
            }
            // Arguments as a JSON string, as the OpenAI wire carries them.
            Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
                Ok(Value::Object(map)) => {
                    arguments = map;
                    break;
                }
                _ => return None,
            },
            Some(Value::Null) | None => {}
            Some(_) => return None,
        }
    }
    // A tool's definition echoed from the prompt is no call: Qwen2.5-Coder-1.5B copied its chat
    // template's `<tools>` list entry for `read` before its real call, and that entry read as a
    // call would run `read` with the schema as its arguments.
    // Anthropic's and MCP's definitions name the schema `input_schema`/`inputSchema`.
    if is_schema(&arguments)
        || object.contains_key("input_schema")
        || object.contains_key("inputSchema")
    {
        return None;
    }
    let mut shape = Shape::Plain;
    for (key, value) in object {
        if META_KEYS.contains(&key.as_str()) {
            continue;
        }
        shape = Shape::Flattened;
        arguments.entry(key).or_insert(value);
    }
    if let Some(agent) = agent {
        // The agent's name stands for `task`; a `subagent_type` written inside is overruled.
        arguments.insert("subagent_type".into(), Value::String(agent));
        return Some((TASK_TOOL.to_string(), arguments, Shape::AgentName));
    }
    Some((name, arguments, shape))
}

/// Whether `arguments` are a JSON Schema of an object (`"type": "object"` with `properties`),
/// which is how a tool's definition gives its parameters; no offered tool takes such arguments.
fn is_schema(arguments: &Map<String, Value>) -> bool {
    arguments.get("type").and_then(Value::as_str) == Some("object")
        && arguments.get("properties").is_some_and(Value::is_object)
}

/// Mistral's `[TOOL_CALLS]` body: a JSON array/object, or `name[ARGS]{…}` (repeated).
fn mistral(text: &str, at: usize, offered: &Offered) -> Option<Found> {
    if let Some(found) = json_calls(text, at, offered) {
        return Some(found);
    }
    let mut calls = Vec::new();
    let mut pos = skip_ws(text, at);
    loop {
        let rest = &text[pos..];
        let marker = rest.find("[ARGS]")?;
        let name = rest[..marker].trim();
        if !offered.contains(name) {
            return None;
        }
        let args_at = pos + marker + "[ARGS]".len();
        let (value, used) = literal(&text[args_at..])?;
        let Value::Object(arguments) = value else {
            return None;
        };
        calls.push((name.to_string(), arguments));
        pos = args_at + used;
        let next = skip_ws(text, pos);
        match text[next..].strip_prefix("[TOOL_CALLS]") {
            Some(_) => pos = next + "[TOOL_CALLS]".len(),
            None => return Some((calls, pos, Shape::Plain)),
        }
    }
}

/// `task(` at `at`, with its arguments (when `task` is offered).
fn task_call(text: &str, at: usize, offered: &Offered) -> Option<(Call, usize)> {
    if !offered.contains(TASK_TOOL) {
        return None;
    }
    let rest = text[at..].strip_prefix(TASK_TOOL)?;
    let paren = rest.len() - rest.trim_start().len();
    if !rest[paren..].starts_with('(') {
        return None;
    }
    let open = at + TASK_TOOL.len() + paren + 1;
    let (arguments, end) = task_arguments(text, open)?;
    Some(((TASK_TOOL.to_string(), arguments), end))
}

fn skip_ws(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    at + rest.len() - rest.trim_start().len()
}

/// Whether what follows the last call is at most one short line (a closing tag, "Waiting for
/// the result."), not more answer.
fn short_tail(tail: &str) -> bool {
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```") && !is_closing_tag(l))
        .collect();
    match lines.as_slice() {
        [] => true,
        [one] => one.chars().count() <= 120,
        _ => false,
    }
}

/// `</answer>`, `</tool_call>`, `<|eot_id|>` and the like: markup, not prose.
fn is_closing_tag(line: &str) -> bool {
    (line.starts_with("</") && line.ends_with('>'))
        || (line.starts_with("<|") && line.ends_with("|>"))
}

/// Whether the prose right before a candidate introduces an example of a call.
fn introduces_example(before: &str) -> bool {
    let last = before
        .trim_end()
        .trim_end_matches("```json")
        .trim_end_matches("```")
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))
        .unwrap_or("")
        .to_lowercase();
    EXAMPLE_CUES.iter().any(|cue| last.contains(cue))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOOLS: &[&str] = &["task", "read", "grep"];

    fn calls(text: &str) -> Option<(Form, Vec<(String, Value)>)> {
        recover(text, &Offered::names(TOOLS), 1).map(|r| {
            (
                r.form,
                r.calls.into_iter().map(|c| (c.name, c.arguments)).collect(),
            )
        })
    }

    #[test]
    fn the_flattened_fenced_call_of_the_field_report_is_recovered() {
        let text = "I will delegate this.\n\n```json\n{\"name\": \"task\", \"arguments\": \
                    {\"description\": \"find yaml decision\", \"prompt\": \"Find it\"}, \
                    \"subagent_type\": \"codebase-analyzer\"}\n```";
        let (form, found) = calls(text).expect("a call");
        assert_eq!(form, Form::Flattened);
        assert_eq!(found[0].0, "task");
        assert_eq!(found[0].1["subagent_type"], "codebase-analyzer");
        assert_eq!(found[0].1["prompt"], "Find it");
    }

    #[test]
    fn every_form_is_recovered() {
        let cases = [
            (
                "{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}",
                Form::Json,
            ),
            (
                "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\n</tool_call>",
                Form::Hermes,
            ),
            (
                "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}",
                Form::Hermes,
            ),
            (
                "[TOOL_CALLS] [{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}]",
                Form::Mistral,
            ),
            ("[TOOL_CALLS]read[ARGS]{\"path\": \"a.md\"}", Form::Mistral),
            (
                "<|python_tag|>{\"name\": \"read\", \"parameters\": {\"path\": \"a.md\"}}<|eom_id|>",
                Form::PythonTag,
            ),
            (
                "task({subagent_type: \"thoughts-locator\", description: \"d\", prompt: \"p\"})",
                Form::TaskCall,
            ),
            (
                "{\"type\": \"function\", \"function\": {\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"a.md\\\"}\"}}",
                Form::Json,
            ),
        ];
        for (text, form) in cases {
            let (got, found) = calls(text).unwrap_or_else(|| panic!("no call in {text}"));
            assert_eq!(got, form, "{text}");
            assert_eq!(found.len(), 1, "{text}");
            if found[0].0 == "read" {
                assert_eq!(found[0].1, json!({"path": "a.md"}), "{text}");
            }
        }
    }

    #[test]
    fn several_calls_keep_their_order_and_get_distinct_ids() {
        let text = "<tool_call>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"a\"}}\n</tool_call>\n\
                    <tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>";
        let r = recover(text, &Offered::names(TOOLS), 3).expect("calls");
        let ids: Vec<_> = r.calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["recovered_t3_1", "recovered_t3_2"]);
        assert_eq!(r.calls[0].name, "grep");
        assert_eq!(r.calls[1].name, "read");
    }

    #[test]
    fn an_agent_named_as_the_tool_is_a_delegation_to_it() {
        // Qwen2.5-Coder-1.5B, researcher, after its plan passed (session 01a21076, 2026-11-25).
        let text = "```\n{\n  \"name\": \"codebase-analyzer\",\n  \"arguments\": {\n    \"description\": \"Analyze the codebase\",\n    \"prompt\": \"What did we decide about prompt templates?\",\n    \"sources\": [\"doc\", \"code\"]\n  }\n}\n```\n```\n";
        let task = ToolSpec {
            name: "task".into(),
            description: String::new(),
            parameters: json!({
                "type": "object",
                "required": ["subagent_type", "description", "prompt"],
                "properties": {
                    "subagent_type": {"type": "string", "enum": ["codebase-analyzer", "analyst"]},
                    "description": {}, "prompt": {}
                }
            }),
        };
        let offered = Offered::from_specs(std::slice::from_ref(&task));
        let r = recover(text, &offered, 3).expect("a delegation");
        assert_eq!(r.form, Form::AgentName);
        assert_eq!(r.calls[0].name, "task");
        assert_eq!(r.calls[0].arguments["subagent_type"], "codebase-analyzer");
        assert_eq!(
            r.calls[0].arguments["prompt"],
            "What did we decide about prompt templates?"
        );
        // An agent `task` may not call is no call; nor is any agent when `task` is not offered.
        let other = text.replace("codebase-analyzer", "web-search-researcher");
        assert!(recover(&other, &offered, 3).is_none());
        assert!(recover(text, &Offered::names(&["read"]), 3).is_none());
    }

    #[test]
    fn a_call_written_twice_is_one_call() {
        let text = "```json\n{\"name\": \"list\", \"arguments\": {\"path\": \"a\"}}\n```\n\n\
                    {\"name\": \"list\", \"arguments\": {\"path\": \"a\"}}";
        let r = recover(text, &Offered::names(&["list"]), 1).expect("a call");
        assert_eq!(r.calls.len(), 1);
    }

    #[test]
    fn arguments_without_a_name_are_the_call_of_the_one_tool_they_fit() {
        let spec = |name: &str, required: &[&str], props: &[&str]| ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({
                "type": "object",
                "required": required,
                "properties": props.iter().map(|p| (p.to_string(), json!({}))).collect::<Map<_, _>>(),
            }),
        };
        let offered = Offered::from_specs(&[
            spec("write", &["path", "content"], &["path", "content"]),
            spec("read", &["path"], &["path", "offset", "limit"]),
        ]);
        // A real answer: the write's arguments, fenced, with raw newlines inside the string.
        let text =
            "```\n{\n  \"path\": \"thoughts/r.md\",\n  \"content\": \"## Q\nWhat?\n\"\n}\n```";
        let r = recover(text, &offered, 1).expect("a call");
        assert_eq!(r.form, Form::Flattened);
        assert_eq!(r.calls[0].name, "write");
        assert_eq!(r.calls[0].arguments["content"], "## Q\nWhat?\n");
        let r = recover("{\"path\": \"a.md\", \"limit\": 5}", &offered, 1).expect("a call");
        assert_eq!(r.calls[0].name, "read");
        // Keys no tool takes, or no required key: no call.
        assert!(recover("{\"path\": \"a.md\", \"mode\": 1}", &offered, 1).is_none());
        assert!(recover("{\"offset\": 3}", &offered, 1).is_none());
    }

    #[test]
    fn a_sole_object_is_found_bare_or_fenced_and_nothing_else_is() {
        let fenced = "```json\n{\n  \"action\": \"PROCEED\",\n  \"questions\": []\n}\n```";
        assert_eq!(sole_object(fenced).expect("object")["action"], "PROCEED");
        assert!(sole_object("{\"a\": 1}").is_some());
        for text in [
            "{\"a\": 1} and more",
            "Here: {\"a\": 1}",
            "[1, 2]",
            "{}",
            "plain",
        ] {
            assert!(sole_object(text).is_none(), "{text}");
        }
    }

    #[test]
    fn an_answer_of_several_objects_is_read_in_order_and_any_prose_spoils_it() {
        // The 1.5B planner's answer over llama-server, three turns running.
        let two = "```json\n{\n  \"name\": \"intent\",\n  \"result\": {\"action\": \"PROCEED\"}\n}\n```\n```json\n{\n  \"name\": \"clarify\",\n  \"result\": {\"action\": \"PROCEED\", \"assumptions\": []}\n}\n```";
        let names = |text: &str| {
            sole_objects(text).map(|objects| {
                objects
                    .iter()
                    .map(|o| o["name"].as_str().unwrap_or("").to_string())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(names(two), Some(vec!["intent".into(), "clarify".into()]));
        assert_eq!(
            names("{\"name\": \"a\"}\n\n{\"name\": \"b\"}"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            names("{\"name\": \"a\"}\n```json\n{\"name\": \"b\"}\n```"),
            Some(vec!["a".into(), "b".into()])
        );
        // Two objects are no sole object.
        assert!(sole_object(two).is_none());
        for text in [
            "```json\n{\"a\": 1}\n```\nThen I will scope it.",
            "{\"a\": 1}\nNext: {\"b\": 2}",
            "```json\n{\"a\": 1}\n```\n```json\n[1]\n```",
            "```json\n{\"a\": 1} and more\n```",
            "",
        ] {
            assert!(sole_objects(text).is_none(), "{text}");
        }
    }

    #[test]
    fn a_leading_call_is_taken_whatever_follows_it() {
        let offered = Offered::from_specs(&[crate::tools::spec("grep").unwrap()]);
        // Qwen2.5-Coder-1.5B on a turn that had to be a call: the call in the tag of its chat
        // template's tool list, then a made-up answer.
        let answer = "<tools>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"YAML parser\"}}\n</tools>\n\n<answer>\n- `thoughts/shared/decisions/2026-11-25-001.md`\n</answer>\n";
        assert!(
            recover(answer, &offered, 1).is_none(),
            "an answer follows: no call"
        );
        let (found, end) = leading_call(answer, &offered, 1).expect("the leading call");
        assert_eq!(found.form, Form::Hermes);
        assert_eq!(found.calls[0].arguments["pattern"], "YAML parser");
        assert_eq!(&answer[..end], "<tools>\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"YAML parser\"}}\n</tools>");
        let prefaced = format!("I will search first.\n\n{answer}");
        assert!(leading_call(&prefaced, &offered, 1).is_some());
        for not_leading in [
            format!("One.\nTwo.\nThree.\n{answer}"),
            format!("For example:\n{answer}"),
            "No documents found.".to_string(),
        ] {
            assert!(
                leading_call(&not_leading, &offered, 1).is_none(),
                "{not_leading}"
            );
        }
    }

    #[test]
    fn a_tool_definition_echoed_before_the_call_is_not_called() {
        let definition = json!({"type": "function", "function": {
            "name": "read",
            "description": "Read a text file under the project root.",
            "parameters": {"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string", "description": "path"}}}}});
        let answer = format!(
            "<tools>\n{definition}\n</tools>\n\n```json\n{{\"name\": \"read\", \"arguments\": {{\"path\": \"src/cli/mod.rs\"}}}}\n```\n"
        );
        let (_, got) = calls(&answer).expect("the fenced call");
        assert_eq!(
            got,
            vec![("read".to_string(), json!({"path": "src/cli/mod.rs"}))]
        );
        // The definition alone is no call at all, nor is one in Anthropic's shape.
        assert!(calls(&format!("<tools>\n{definition}\n</tools>")).is_none());
        let anthropic = json!({"name": "read", "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}});
        assert!(calls(&anthropic.to_string()).is_none());
    }

    #[test]
    fn talk_about_tools_is_no_call() {
        let cases = [
            // A tool that was not offered.
            "{\"name\": \"bash\", \"arguments\": {\"cmd\": \"ls\"}}",
            // Inline code in a sentence.
            "You could delegate with `task({subagent_type: \"x\", prompt: \"p\"})` later.",
            // Introduced as an example.
            "For example:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
            "A call would look like this:\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}",
            // The answer goes on after the quoted call.
            "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\n\nThis reads a.\n\
             The file holds the decision, which we took on 2026-11-20 for speed.",
            // A code block with more than calls.
            "```python\nresult = task({\"subagent_type\": \"x\", \"prompt\": \"p\"})\nprint(result)\n```",
            // Mentions only.
            "I will use the task tool to ask thoughts-locator.",
            // JSON that is not a call.
            "{\"status\": \"ok\", \"name\": \"report\"}",
        ];
        for text in cases {
            assert!(calls(text).is_none(), "recovered a call from: {text}");
        }
    }

    #[test]
    fn nothing_is_recovered_when_no_tool_was_offered() {
        assert!(recover(
            "{\"name\": \"read\", \"arguments\": {}}",
            &Offered::default(),
            1
        )
        .is_none());
    }
}
