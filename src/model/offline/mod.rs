//! The `offline` provider: a deterministic model that needs no network, no weights and no key,
//! and is the default when nothing else is configured.
//!
//! It plays a role from what the agent declares (see [`role`]): a primary follows the
//! delegation workflow its prompt documents, a locator ranks the documents its search tools
//! return, an analyzer reads a document and quotes it. It is stateless: each call works out the
//! step from the tool calls it made earlier in `request.messages` (their ids say which step
//! they belong to) and the results that came back. It never reads files itself; everything it
//! knows arrived through tool results.

pub mod analyzer;
pub mod bm25;
pub mod checkpoint;
pub mod envelope;
pub mod extract;
pub mod file_analysis;
pub mod locator;
pub mod parse;
pub mod pipeline;
pub mod plan;
pub mod primary;
pub mod rank;
pub mod report;
pub mod role;
pub mod validator;
pub mod workflow;

use serde_json::Value;

use super::{
    BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse, Role as MsgRole, ToolCall,
    Usage,
};

/// The `properties` of the JSON Schema `request` owes, when it owes a `format: json` contract
/// with an inline schema: the JSON roles (plan, file analysis) know their contract by its keys.
fn json_contract_properties(request: &ModelRequest) -> Option<&Value> {
    let rc = request.response_contract.as_ref()?;
    if rc.contract.format != crate::contract::ContractFormat::Json {
        return None;
    }
    match rc.contract.json.as_ref().map(|j| &j.schema) {
        Some(crate::contract::SchemaSource::Inline(schema)) => Some(&schema["properties"]),
        _ => None,
    }
}

/// The offline provider. Holds no state; one value serves any number of sessions.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineModel {
    _private: (),
}

impl OfflineModel {
    pub fn new() -> Self {
        OfflineModel { _private: () }
    }
}

impl Model for OfflineModel {
    fn provider(&self) -> &str {
        "offline"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move { Ok(respond(&request.callable_only())) })
    }
}

/// What one role decided for this turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Call these tools (in one turn, so they may run in parallel).
    Calls(Vec<ToolCall>),
    /// The final answer.
    Answer(String),
}

/// The response to `request`, computed synchronously (the async trait method wraps this).
pub fn respond(request: &ModelRequest) -> ModelResponse {
    let history = History::new(&request.messages);
    let turn = match role::infer(request, &history) {
        role::Role::Primary => primary::turn(request, &history),
        role::Role::Analyzer => analyzer::turn(request, &history),
        role::Role::Locator => locator::turn(request, &history),
        role::Role::Plain => Turn::Answer(plain_answer(request, &history)),
        role::Role::Web => Turn::Answer(web_answer(request, &history)),
        role::Role::Planner => plan::turn(request),
        role::Role::Validator => Turn::Answer(validator::verdict(&history)),
        role::Role::PipelineWorker => Turn::Answer(pipeline::answer(&history)),
        role::Role::Checkpoint => checkpoint::turn(request, &history),
        role::Role::FileAnalyzer => file_analysis::turn(request),
    };
    let (content, tool_calls) = match turn {
        Turn::Calls(calls) => (String::new(), calls),
        Turn::Answer(text) => (text, Vec::new()),
    };
    let input_chars = request.system.len()
        + request
            .messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.to_string().len())
                        .sum::<usize>()
            })
            .sum::<usize>();
    let output_chars = content.len()
        + tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>();
    ModelResponse {
        content,
        tool_calls,
        usage: Usage {
            input_tokens: input_chars.div_ceil(4) as u64,
            output_tokens: output_chars.div_ceil(4) as u64,
            ..Default::default()
        },
        truncated: false,
    }
}

/// The answer for an agent the offline model cannot play: what it cannot do, why, and what to
/// use instead. It invents nothing.
fn plain_answer(request: &ModelRequest, history: &History) -> String {
    let why = role::why_not(request);
    let env = envelope::Envelope {
        fields: Vec::new(),
        thinking: format!(
            "No offline role fits agent `{}`: {why}.",
            request.agent
        ),
        answer: format!(
            "The offline model cannot serve agent `{}`: {why}.\n\nIt plays three roles, read from an agent's tools and contract: a lead that follows the `task(...)` workflow its prompt documents, a locator that searches (`grep`, `glob`), and an analyzer that reads (`read`) and quotes. Run this agent with a real model instead (`--model PROVIDER/MODEL`, see docs/providers.md).\n\nRequest: {}",
            request.agent,
            first_line(history.task)
        ),
    };
    env.render(request.response_contract.as_ref())
}

/// A web researcher's answer when the offline model serves it: no findings, and why. Inventing
/// what a page says is the one thing this answer must never do.
fn web_answer(request: &ModelRequest, history: &History) -> String {
    let env = envelope::Envelope {
        fields: Vec::new(),
        thinking: "This agent's work is fetching pages from the web. The offline model runs \
                   without network access, so it fetched nothing and reports no findings."
            .into(),
        answer: format!(
            "Web access: not available: the offline model does not reach the network, so \
             nothing was fetched and there are no findings.\n\nTo research this on the web, run \
             with a real model (`--model`), which can call `webfetch`.\n\nRequest: {}",
            first_line(history.task)
        ),
    };
    env.render(request.response_contract.as_ref())
}

/// One tool call this provider made earlier, with the result that came back for it.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    pub call: &'a ToolCall,
    pub result: Option<&'a Message>,
}

impl<'a> Exchange<'a> {
    /// The result text when the tool succeeded.
    pub fn ok(&self) -> Option<&'a str> {
        self.result
            .filter(|m| !m.is_error)
            .map(|m| m.content.as_str())
    }

    pub fn arg(&self, key: &str) -> Option<&'a str> {
        self.call.arguments.get(key).and_then(Value::as_str)
    }
}

/// The conversation so far, as the offline provider reads it.
#[derive(Debug, Clone)]
pub struct History<'a> {
    /// The first user message: the question or the delegated task.
    pub task: &'a str,
    pub exchanges: Vec<Exchange<'a>>,
}

impl<'a> History<'a> {
    pub fn new(messages: &'a [Message]) -> Self {
        let task = messages
            .iter()
            .find(|m| m.role == MsgRole::User)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let mut exchanges = Vec::new();
        for m in messages.iter().filter(|m| m.role == MsgRole::Assistant) {
            for call in &m.tool_calls {
                let result = messages.iter().find(|r| {
                    r.role == MsgRole::Tool && r.tool_call_id.as_deref() == Some(call.id.as_str())
                });
                exchanges.push(Exchange { call, result });
            }
        }
        History { task, exchanges }
    }

    /// The calls made for `step`, in call order.
    pub fn step(&self, step: &str) -> Vec<Exchange<'a>> {
        let prefix = format!("offline-{step}-");
        self.exchanges
            .iter()
            .filter(|e| e.call.id.starts_with(&prefix))
            .copied()
            .collect()
    }

    /// The analyses the runtime made for this agent before its first turn (`analyze_found:`),
    /// in their order: they count as this agent's `analyze` step for the report.
    pub fn analyzed_by_runtime(&self) -> Vec<Exchange<'a>> {
        let id = crate::runtime::hop::ANALYZE_FOUND_ID;
        self.exchanges
            .iter()
            .filter(|e| e.call.name == "task" && e.call.id.starts_with(id))
            .copied()
            .collect()
    }

    pub fn did(&self, step: &str) -> bool {
        !self.step(step).is_empty()
    }

    /// Whether `text` stands in the task or in any tool result so far: what the session was
    /// told exists.
    pub fn seen(&self, text: &str) -> bool {
        self.task.contains(text)
            || self
                .exchanges
                .iter()
                .filter_map(|e| e.result)
                .any(|r| r.content.contains(text))
    }

    /// The answer of `agent` that the runtime folded into the task (`delegate_first:`), when
    /// it answered rather than failed.
    pub fn delegated_first(&self, agent: &str) -> Option<&'a str> {
        let head = format!("{}`{agent}` first", crate::runtime::hop::DELEGATED_FIRST);
        let rest = &self.task[self.task.find(&head)? + head.len()..];
        let (how, rest) = rest.split_once('\n')?;
        if !how.ends_with("its answer:") {
            return None;
        }
        let end = rest.find("\n[runtime] ").unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// A tool call for `step`; the id carries the step so a later turn knows where it is.
pub fn call(step: &str, index: usize, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("offline-{step}-{index}"),
        name: name.to_string(),
        arguments,
    }
}

/// The task text without the runtime's boilerplate (`Correlation: …` lines and suffixes, and
/// the file list `search_first` appends: the offline locator makes its own searches).
pub fn strip_boilerplate(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        // What the runtime put after the task (its search, its own delegations' answers, a
        // note) is not the task.
        if line.starts_with(crate::runtime::search_first::HEADING) || line.starts_with("[runtime] ")
        {
            break;
        }
        let cut = match line.find("Correlation:") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(cut.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// The `YYYY-MM-DD` of an RFC 3339 timestamp, else today's UTC date.
pub fn date_of(timestamp: Option<&str>) -> String {
    timestamp
        .and_then(|t| t.get(..10))
        .filter(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
        .map(str::to_string)
        .unwrap_or_else(|| chrono::Utc::now().format("%Y-%m-%d").to_string())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for building requests and playing tool results in unit tests.

    use super::*;
    use crate::contract::Contract;
    use crate::model::{ResponseContract, ToolSpec};

    pub fn tools(names: &[&str]) -> Vec<ToolSpec> {
        names
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            })
            .collect()
    }

    pub fn request(
        system: &str,
        tools_: &[&str],
        contract: Option<Contract>,
        messages: Vec<Message>,
    ) -> ModelRequest {
        ModelRequest {
            model: "default".into(),
            agent: "renamed-agent".into(),
            system: system.into(),
            messages,
            tools: tools(tools_),
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: contract.map(|contract| ResponseContract {
                message_id: format!(
                    "{}-2026-11-21-001",
                    contract.message_id_prefix.clone().unwrap_or("agent".into())
                ),
                contract,
                correlation_id: "corr-test-1".into(),
                timestamp: "2026-11-21T09:30:00Z".into(),
            }),
        }
    }

    /// A tool call the test harness refuses; its text becomes the error result.
    #[derive(Debug)]
    pub struct ToolFailed(pub String);

    impl From<&str> for ToolFailed {
        fn from(s: &str) -> Self {
            ToolFailed(s.to_string())
        }
    }

    impl From<String> for ToolFailed {
        fn from(s: String) -> Self {
            ToolFailed(s)
        }
    }

    /// Appends the assistant turn of `response` and one tool result per call from `run`.
    pub fn play(
        messages: &mut Vec<Message>,
        response: &ModelResponse,
        mut run: impl FnMut(&ToolCall) -> Result<String, ToolFailed>,
    ) {
        messages.push(Message::assistant(
            response.content.clone(),
            response.tool_calls.clone(),
        ));
        for c in &response.tool_calls {
            match run(c) {
                Ok(out) => messages.push(Message::tool(c.id.clone(), out, false)),
                Err(ToolFailed(out)) => messages.push(Message::tool(c.id.clone(), out, true)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{play, request};
    use super::*;
    use crate::contract::Contract;

    #[test]
    fn role_comes_from_declarations_not_the_name() {
        let h = History::new(&[]);
        // A lead documents its workflow; `task` alone (opencode grants it unless switched off)
        // does not make one.
        let lead = "```\ntask({ subagent_type: \"finder\", prompt: \"Find docs\" })\n```\n";
        let r = request(lead, &["task", "read"], None, vec![]);
        assert_eq!(role::infer(&r, &h), role::Role::Primary);
        let r = request("x", &["task", "read", "grep"], None, vec![]);
        assert_eq!(role::infer(&r, &h), role::Role::Analyzer);
        let r = request("x", &["task", "grep", "glob"], None, vec![]);
        assert_eq!(role::infer(&r, &h), role::Role::Locator);
        let r = request("x", &["task", "write", "read"], None, vec![]);
        assert_eq!(role::infer(&r, &h), role::Role::Plain);
        let r = request(
            "x",
            &["read", "grep"],
            Some(Contract::document_analysis()),
            vec![],
        );
        assert_eq!(role::infer(&r, &h), role::Role::Analyzer);
        let r = request(
            "x",
            &["grep", "glob", "list"],
            Some(Contract::envelope()),
            vec![],
        );
        assert_eq!(role::infer(&r, &h), role::Role::Locator);
        let mut r = request("x", &[], None, vec![]);
        assert_eq!(role::infer(&r, &h), role::Role::Plain);
        // The same agent under any name plays the same role.
        r.agent = "thoughts-locator".into();
        assert_eq!(role::infer(&r, &h), role::Role::Plain);
    }

    #[test]
    fn a_primary_without_tools_on_its_last_step_answers_with_the_report() {
        let system = "Delegate to `finder` / `reader`.\n```\ntask({ subagent_type: \"finder\", prompt: \"Find docs. Correlation: c\" })\n```\n```\ntask({ subagent_type: \"reader\", prompt: \"Extract thoughts/a.md. Correlation: c\" })\n```\n";
        let mut messages = vec![Message::user("What did we decide about logs?")];
        let r = request(system, &["task", "write"], None, messages.clone());
        let first = respond(&r);
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].arguments["subagent_type"], "finder");
        play(&mut messages, &first, |_| {
            Ok("<answer>\n### Decisions\n- `thoughts/a.md` — Logs\n\nSuggested for analysis: `thoughts/a.md`\n</answer>".into())
        });
        let r = request(system, &["task", "write"], None, messages.clone());
        let second = respond(&r);
        assert_eq!(second.tool_calls.len(), 1);
        assert_eq!(second.tool_calls[0].arguments["subagent_type"], "reader");
        assert_eq!(
            second.tool_calls[0].arguments["prompt"],
            "Extract thoughts/a.md. Correlation: c"
        );
        play(&mut messages, &second, |_| Err("analyzer failed".into()));
        // The runtime withdraws the tools on the last step: the answer carries the report.
        let r = request(system, &[], None, messages.clone());
        let last = respond(&r);
        assert!(last.tool_calls.is_empty());
        assert!(
            last.content.contains("## Open Questions"),
            "{}",
            last.content
        );
        assert!(last
            .content
            .contains("The analysis of `thoughts/a.md` failed"));
        assert!(last.usage.input_tokens > 0 && last.usage.output_tokens > 0);
    }
}
