//! Delegations written as text, for models that cannot call tools.
//!
//! Such a model writes `task({ subagent_type: "…", description: "…", prompt: "…" })` or the
//! keyword form `task(subagent_type="…", prompt="…")`, as our prompts show. [`parse_task_calls`]
//! reads those out of the answer (code blocks and inline code first, found with pulldown-cmark;
//! the bare text when no code holds a call) and returns synthetic [`ToolCall`]s named `task`.
//!
//! [`TextualTools`] wraps any provider for a model configured with `tools = false`: it sends no
//! tool definitions, turns earlier calls and results into plain text the model can read, and
//! fills `tool_calls` of the answer from its text, so the runtime dispatches them like native
//! calls without knowing the difference.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::{Map, Number, Value};
use std::sync::Arc;

use super::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, Role, ToolCall, ToolSpec,
    CONTINUE_PROMPT,
};

/// The tool name delegations use.
pub const TASK_TOOL: &str = "task";

/// The `task(...)` calls in `text`, in order, with all their arguments. Each needs a string
/// `subagent_type`; calls that do not parse are skipped. Ids are `text_call_1`, `text_call_2`, …
pub fn parse_task_calls(text: &str) -> Vec<ToolCall> {
    parse_task_calls_with_prefix(text, "text_call")
}

/// As [`parse_task_calls`], with ids `{prefix}_{n}`.
pub fn parse_task_calls_with_prefix(text: &str, prefix: &str) -> Vec<ToolCall> {
    let mut found = Vec::new();
    let mut block = String::new();
    let mut in_block = false;
    for event in Parser::new_ext(text, Options::empty()) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                in_block = true;
                block.clear();
            }
            Event::End(TagEnd::CodeBlock) => {
                in_block = false;
                scan(&block, &mut found);
            }
            Event::Text(t) if in_block => block.push_str(&t),
            Event::Code(code) => scan(&code, &mut found),
            _ => {}
        }
    }
    if found.is_empty() {
        scan(text, &mut found);
    }
    found
        .into_iter()
        .enumerate()
        .map(|(i, arguments)| ToolCall {
            id: format!("{prefix}_{}", i + 1),
            name: TASK_TOOL.to_string(),
            arguments: Value::Object(arguments),
        })
        .collect()
}

/// Finds every `task(` in `code` and parses its arguments.
fn scan(code: &str, out: &mut Vec<Map<String, Value>>) {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(pos) = code[from..].find("task") {
        let start = from + pos;
        from = start + 4;
        let word_start = start == 0 || {
            let b = bytes[start - 1];
            !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        };
        if !word_start {
            continue;
        }
        let mut cur = Cursor {
            s: code,
            pos: start + 4,
        };
        cur.ws();
        if !cur.eat(b'(') {
            continue;
        }
        if let Some((args, end)) = call_arguments(cur) {
            if matches!(args.get("subagent_type"), Some(Value::String(s)) if !s.trim().is_empty()) {
                out.push(args);
                from = end;
            }
        }
    }
}

/// One JS / Python / JSON literal at the start of `text` (after whitespace), leniently read as
/// models write them (single quotes, bare keys, trailing commas, `True`/`None`), and the bytes it
/// took. Used by [`super::recover`] for calls written as JSON.
pub(crate) fn literal(text: &str) -> Option<(Value, usize)> {
    let mut cur = Cursor { s: text, pos: 0 };
    cur.ws();
    let value = cur.value()?;
    Some((value, cur.pos))
}

/// The arguments of a `task(` call whose `(` ends at byte `open` of `text`, and the byte after
/// its `)`. For [`super::recover`], which finds the calls itself.
pub(crate) fn task_arguments(text: &str, open: usize) -> Option<(Map<String, Value>, usize)> {
    call_arguments(Cursor { s: text, pos: open })
}

/// The arguments after `task(`: one object literal, or `key=value` pairs.
fn call_arguments(mut cur: Cursor<'_>) -> Option<(Map<String, Value>, usize)> {
    cur.ws();
    let args = if cur.peek() == Some(b'{') {
        match cur.value()? {
            Value::Object(map) => map,
            _ => return None,
        }
    } else {
        let mut map = Map::new();
        loop {
            cur.ws();
            if cur.peek() == Some(b')') {
                break;
            }
            let key = cur.key()?;
            cur.ws();
            if !(cur.eat(b'=') || cur.eat(b':')) {
                return None;
            }
            let value = cur.value()?;
            map.insert(key, value);
            cur.ws();
            if !cur.eat(b',') {
                break;
            }
        }
        map
    };
    cur.ws();
    cur.eat(b',');
    cur.ws();
    if !cur.eat(b')') {
        return None;
    }
    Some((args, cur.pos))
}

/// A small reader for JS / Python / JSON literals.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    /// Whitespace and `//` or `#` line comments.
    fn ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("//") || trimmed.starts_with('#') {
                let line = trimmed.find('\n').unwrap_or(trimmed.len());
                self.pos += line;
            } else {
                return;
            }
        }
    }

    fn ident(&mut self) -> Option<String> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || c == '-'))
            .unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        self.pos += len;
        Some(rest[..len].to_string())
    }

    fn key(&mut self) -> Option<String> {
        match self.peek()? {
            b'"' | b'\'' | b'`' => self.string(),
            _ => self.ident(),
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        let value = match self.peek()? {
            b'"' | b'\'' | b'`' => Value::String(self.string()?),
            b'{' => {
                self.pos += 1;
                let mut map = Map::new();
                loop {
                    self.ws();
                    if self.eat(b'}') {
                        break;
                    }
                    let key = self.key()?;
                    self.ws();
                    if !(self.eat(b':') || self.eat(b'=')) {
                        return None;
                    }
                    let v = self.value()?;
                    map.insert(key, v);
                    self.ws();
                    if !self.eat(b',') {
                        self.ws();
                        if !self.eat(b'}') {
                            return None;
                        }
                        break;
                    }
                }
                Value::Object(map)
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.eat(b']') {
                        break;
                    }
                    items.push(self.value()?);
                    self.ws();
                    if !self.eat(b',') {
                        self.ws();
                        if !self.eat(b']') {
                            return None;
                        }
                        break;
                    }
                }
                Value::Array(items)
            }
            _ => {
                let word = self.ident()?;
                match word.as_str() {
                    "true" | "True" => Value::Bool(true),
                    "false" | "False" => Value::Bool(false),
                    "null" | "None" | "undefined" => Value::Null,
                    w => {
                        if let Ok(i) = w.parse::<i64>() {
                            Value::Number(i.into())
                        } else {
                            Value::Number(Number::from_f64(w.parse::<f64>().ok()?)?)
                        }
                    }
                }
            }
        };
        // `"a" + "b"` concatenation, as models write long prompts in JS.
        if let Value::String(mut s) = value {
            loop {
                let save = self.pos;
                self.ws();
                if self.eat(b'+') {
                    self.ws();
                    if matches!(self.peek(), Some(b'"' | b'\'' | b'`')) {
                        s.push_str(&self.string()?);
                        continue;
                    }
                }
                self.pos = save;
                break;
            }
            return Some(Value::String(s));
        }
        Some(value)
    }

    /// A quoted string: `"…"`, `'…'`, `` `…` `` or Python's triple quotes, with escapes.
    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        let triple = [quote; 3];
        let rest = self.rest().as_bytes();
        let (close, raw): (&[u8], bool) = if quote != b'`' && rest.starts_with(&triple) {
            (&triple, false)
        } else {
            (&triple[..1], quote == b'`')
        };
        self.pos += close.len();
        let mut out = String::new();
        loop {
            let rest = self.rest();
            if rest.as_bytes().starts_with(close) {
                self.pos += close.len();
                return Some(out);
            }
            let c = rest.chars().next()?;
            // A line break ends a single-quoted string that was never closed; models do write
            // raw line breaks inside double-quoted JSON strings, which are read as written.
            if c == '\n' && close.len() == 1 && !raw && quote != b'"' {
                return None;
            }
            self.pos += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = self.rest().chars().next()?;
            self.pos += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' => {
                    let hex = self.rest().get(..4)?;
                    let code = u32::from_str_radix(hex, 16).ok()?;
                    self.pos += 4;
                    out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                }
                '\n' => {}
                other => out.push(other),
            }
        }
    }
}

/// Wraps a provider for a model that cannot call tools (`tools = false` in its config).
pub struct TextualTools {
    inner: Arc<dyn Model>,
}

impl TextualTools {
    pub fn new(inner: Arc<dyn Model>) -> Self {
        TextualTools { inner }
    }

    /// The request the inner model gets: no tool definitions, calls and results as text.
    pub fn textual_request(request: &ModelRequest) -> ModelRequest {
        let mut system = request.system.clone();
        if request.tools.iter().any(|t| t.name == TASK_TOOL) {
            system.push_str(
                "\n\nYou cannot call tools directly. To delegate, write the call as text in a \
                 code block, e.g.\n```\ntask({ subagent_type: \"NAME\", description: \"short \
                 summary\", prompt: \"what to do\" })\n```\nand stop; the result comes back in \
                 the next message.",
            );
        }
        system.push_str(&json_tools_text(request));
        let mut messages = Vec::with_capacity(request.messages.len());
        for m in &request.messages {
            match m.role {
                Role::User => messages.push(m.clone()),
                Role::Assistant => {
                    let mut content = m.content.clone();
                    // Calls that are not already in the text (a native call from another
                    // model earlier in the conversation) are written out.
                    for call in &m.tool_calls {
                        // Calls read from the text (here, or recovered by the runtime) are
                        // in it already.
                        if call.id.starts_with("text_call") || call.id.starts_with("recovered_") {
                            continue;
                        }
                        if call.name == TASK_TOOL {
                            content.push_str(&format!(
                                "\n```\n{}({})\n```",
                                call.name, call.arguments
                            ));
                        } else {
                            content.push_str(&format!(
                                "\n```json\n{{\"name\": {}, \"arguments\": {}}}\n```",
                                Value::String(call.name.clone()),
                                call.arguments
                            ));
                        }
                    }
                    messages.push(Message::assistant(content, Vec::new()));
                }
                Role::Tool => {
                    let id = m.tool_call_id.as_deref().unwrap_or("?");
                    let label = if m.is_error { "failed" } else { "result" };
                    messages.push(Message::user(format!(
                        "[{label} of call {id}]\n{}",
                        m.content
                    )));
                }
            }
        }
        ModelRequest {
            model: request.model.clone(),
            agent: request.agent.clone(),
            system,
            messages,
            tools: Vec::new(),
            tool_choice: Default::default(),
            temperature: request.temperature,
            top_p: request.top_p,
            max_tokens: request.max_tokens,
            response_contract: request.response_contract.clone(),
        }
    }
}

impl Model for TextualTools {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let textual = Self::textual_request(request);
            let mut response = self.inner.complete(&textual).await?;
            if !request.callable_tools().is_empty() && !response.truncated {
                response.tool_calls = Self::calls_in_answer(request, &response.content);
            } else {
                // No tools, or cut off: a call may be unfinished, so none is read until the
                // runtime has asked for the rest.
                response.tool_calls.clear();
            }
            Ok(response)
        })
    }
}

impl TextualTools {
    /// The `task(...)` calls of `answer`, the reply to `request`. When `request` asked for the
    /// rest of a cut-off answer ([`CONTINUE_PROMPT`] after it), the cut-off parts come first,
    /// so a call split by the cut is read whole. Ids carry the turn number, unique in the
    /// conversation.
    pub fn calls_in_answer(request: &ModelRequest, answer: &str) -> Vec<ToolCall> {
        let (before, start) = continued_text(&request.messages);
        let turn = request.messages[..start]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count()
            + 1;
        let text = format!("{before}{answer}");
        let prefix = format!("text_call_t{turn}");
        if request.tools.iter().any(|t| t.name == TASK_TOOL) {
            let calls = parse_task_calls_with_prefix(&text, &prefix);
            if !calls.is_empty() {
                return calls;
            }
        }
        // The other tools' calls, in the JSON form `json_tools_text` shows, by the recovery
        // rules (a call the answer only talks about is none).
        let others: Vec<ToolSpec> = request
            .tools
            .iter()
            .filter(|t| t.name != TASK_TOOL)
            .cloned()
            .collect();
        let offered = super::recover::Offered::from_specs(&others);
        super::recover::recover(&text, &offered, turn as u32)
            .map(|r| {
                r.calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| ToolCall {
                        id: format!("{prefix}_{}", i + 1),
                        ..c
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What a model without a tool channel reads about its tools other than `task`: the JSON form
/// of a call (the form small models write unprompted, and the one the `local` provider's
/// grammar admits) and each tool with its arguments, optional ones marked `?`. Empty when
/// `task` is the only tool. With `tool_choice: required`, the next answer must be a call.
pub fn json_tools_text(request: &ModelRequest) -> String {
    let others: Vec<&ToolSpec> = request
        .tools
        .iter()
        .filter(|t| t.name != TASK_TOOL)
        .collect();
    let Some(first) = others.first() else {
        return String::new();
    };
    let example = first
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str)
        .map_or_else(String::new, |arg| format!("\"{arg}\": \"...\""));
    let mut out = format!(
        "\n\nTo call one of the tools below, write the call alone in a code block as one JSON \
         object and stop; its result comes back in the next message:\n```json\n{{\"name\": \
         \"{}\", \"arguments\": {{{example}}}}}\n```\nTools:",
        first.name
    );
    for tool in others {
        let required: Vec<&str> = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let args: Vec<String> = tool
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.keys()
                    .map(|k| {
                        if required.contains(&k.as_str()) {
                            k.clone()
                        } else {
                            format!("{k}?")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let what = tool
            .description
            .split(". ")
            .next()
            .unwrap_or("")
            .trim_end_matches('.');
        out.push_str(&format!(
            "\n- `{}` ({}): {what}.",
            tool.name,
            args.join(", ")
        ));
    }
    if request.tool_choice == super::ToolChoice::Required {
        out.push_str("\nYour next answer must be one such call.");
    }
    out
}

/// The cut-off parts a continuation request carries at its end (assistant turns, each followed
/// by the [`CONTINUE_PROMPT`]), joined, and the index where they begin.
fn continued_text(messages: &[Message]) -> (String, usize) {
    let mut start = messages.len();
    while start >= 2
        && messages[start - 1].role == Role::User
        && messages[start - 1].content == CONTINUE_PROMPT
        && messages[start - 2].role == Role::Assistant
    {
        start -= 2;
    }
    let text = messages[start..]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.content.as_str())
        .collect();
    (text, start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_form_in_a_fenced_block() {
        let text = "I'll delegate.\n\n```js\ntask({\n  subagent_type: \"codebase-locator\",\n  description: 'Find auth',\n  prompt: \"Find files about \\\"auth\\\"\\nand list them\",\n})\n```\n";
        let calls = parse_task_calls(text);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "task");
        assert_eq!(calls[0].id, "text_call_1");
        assert_eq!(
            calls[0].arguments,
            json!({
                "subagent_type": "codebase-locator",
                "description": "Find auth",
                "prompt": "Find files about \"auth\"\nand list them",
            })
        );
    }

    #[test]
    fn keyword_form_with_triple_quotes_and_two_calls() {
        let text = "```python\ntask(subagent_type=\"a\", prompt=\"\"\"line one\nline two\"\"\")\ntask(subagent_type='b', description=\"d\", prompt='p')\n```";
        let calls = parse_task_calls(text);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments["prompt"], "line one\nline two");
        assert_eq!(calls[1].arguments["subagent_type"], "b");
        assert_eq!(calls[1].id, "text_call_2");
    }

    #[test]
    fn bare_text_inline_code_and_concatenation() {
        let bare = "Now: task({subagent_type: \"x\", prompt: \"a\" + 'b' + `c`})";
        let calls = parse_task_calls(bare);
        assert_eq!(calls[0].arguments["prompt"], "abc");
        let inline = "Run `task(subagent_type=\"y\", prompt=\"z\")` next";
        assert_eq!(parse_task_calls(inline)[0].arguments["subagent_type"], "y");
    }

    fn request_with(tools: &[&str], messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            agent: "finder".into(),
            system: "You find.".into(),
            messages,
            tools: tools
                .iter()
                .map(|t| crate::tools::spec(t).expect("spec"))
                .collect(),
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: None,
        }
    }

    #[test]
    fn every_tool_is_described_and_its_json_call_is_read_back() {
        let mut request = request_with(&["grep", "glob", "task"], vec![Message::user("find")]);
        let system = TextualTools::textual_request(&request).system;
        assert!(system.contains("task({ subagent_type:"), "{system}");
        assert!(
            system.contains("{\"name\": \"grep\", \"arguments\": {\"pattern\": \"...\"}}"),
            "{system}"
        );
        assert!(system.contains("- `grep` ("), "{system}");
        assert!(system.contains("- `glob` ("), "{system}");
        assert!(!system.contains("- `task`"), "{system}");
        assert!(!system.contains("must be one such call"), "{system}");
        // Held back (`tool_choice: none`), the tools read as before: the prompt opens the same,
        // and the local model's cache serves it.
        request.tool_choice = crate::model::ToolChoice::None;
        assert_eq!(TextualTools::textual_request(&request).system, system);
        request.tool_choice = crate::model::ToolChoice::Required;
        let system = TextualTools::textual_request(&request).system;
        assert!(
            system.contains("Your next answer must be one such call."),
            "{system}"
        );
        // A call alone in its block is a call; one the answer shows as an example is not.
        let call = "```json\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"thoughts/**/*.md\"}}\n```";
        let calls = TextualTools::calls_in_answer(&request, call);
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (calls[0].name.as_str(), calls[0].id.as_str()),
            ("glob", "text_call_t1_1")
        );
        let talk =
            format!("For example, you could write:\n{call}\nand then read the files it lists.");
        assert!(TextualTools::calls_in_answer(&request, &talk).is_empty());
        // Only offered tools: `read` is not one.
        let read = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.md\"}}\n```";
        assert!(TextualTools::calls_in_answer(&request, read).is_empty());
    }

    #[test]
    fn a_native_call_in_the_history_is_replayed_in_the_form_the_prompt_shows() {
        let native = ToolCall {
            id: "call_1".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "yaml"}),
        };
        let read_back = ToolCall {
            id: "text_call_t1_1".into(),
            name: "grep".into(),
            arguments: json!({"pattern": "x"}),
        };
        let request = request_with(
            &["grep"],
            vec![
                Message::user("find"),
                Message::assistant("", vec![native]),
                Message::assistant("already in the text", vec![read_back]),
            ],
        );
        let textual = TextualTools::textual_request(&request);
        assert_eq!(
            textual.messages[1].content,
            "\n```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\":\"yaml\"}}\n```"
        );
        assert_eq!(textual.messages[2].content, "already in the text");
    }

    #[test]
    fn rejects_non_calls() {
        for text in [
            "no calls here",
            "multitask(subagent_type=\"x\")",
            "task(prompt=\"missing type\")",
            "task({ subagent_type: \"x\", prompt: \"unterminated })",
            "task(subagent_type=\"x\" prompt=\"no comma\")",
            "the task (of the day)",
        ] {
            assert!(parse_task_calls(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn code_blocks_win_over_prose() {
        let text =
            "Earlier I wrote task(subagent_type=\"old\")\n\n```\ntask(subagent_type=\"new\")\n```";
        let calls = parse_task_calls(text);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments["subagent_type"], "new");
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_text(tail in "\\PC{0,80}", quote in "[\"'`]{0,3}") {
            let text = format!("```\ntask({quote}{tail}\n```\ntask({{ subagent_type: {quote}{tail}");
            let _ = parse_task_calls(&text);
        }

        #[test]
        fn round_trips_any_prompt(prompt in "\\PC{0,60}") {
            let encoded = serde_json::to_string(&prompt).unwrap_or_default();
            let text = format!("```\ntask({{ subagent_type: \"x\", prompt: {encoded} }})\n```");
            let calls = parse_task_calls(&text);
            proptest::prop_assert_eq!(calls.len(), 1);
            proptest::prop_assert_eq!(calls[0].arguments["prompt"].as_str(), Some(prompt.as_str()));
        }
    }
}
