//! Grammars derived from an agent's contract, so a local model can only produce the right shape.
//!
//! The `local` provider decodes under the grammar [`for_request`] returns: for a `format: json`
//! contract, a grammar of its JSON Schema ([`json_schema`]); for an envelope contract, the
//! envelope's shape with the ids the runtime allocated for the hop ([`envelope`]); and, when the
//! agent may delegate, the textual `task(...)` call as an alternative ([`task_call`]), naming
//! only the agents it may call (`tools::narrow_task`); a primary's free answer is otherwise
//! unconstrained. Nothing is written by hand per agent.
//!
//! What a grammar cannot express is left to the contract checker and the repair loop, as for
//! any other provider: conditionals (`if`/`then`, `allOf`, `not`, `contains`), `uniqueItems`
//! (except over an enum's values, which the grammar spells out),
//! `$ref`, patterns that are not anchored or use lookaround, that a cited file exists (the
//! grammar only names the files the conversation named), that a JSON evidence object's
//! `start` and `end` are the lines its excerpt quotes. An excerpt of a file the conversation
//! showed is a run of that file's own lines ([`cited::Cited`](super::cited::Cited)), so what
//! it quotes is always there; in the envelope, the run its reference names ([`tied_cites`]).
//!
//! Over 600 lines: about 480 of code (JSON Schema, envelope and delegation grammars share the
//! rule writer and the JSON string rules) and the tests beside them.

use serde_json::Value;
use std::collections::HashMap;

use super::cited::{Cited, Quotable, NAMED_FILES_MAX};
use super::fresh::{Opening, Shape};
use super::gbnf::{lit, pattern_to_gbnf, Gbnf};
use crate::contract::spec::NamedPaths;
use crate::contract::{ContractFormat, FieldKind, FieldRule};
use crate::model::textual::TASK_TOOL;
use crate::model::{ModelRequest, ResponseContract, ToolChoice};

/// A schema the grammar builder refuses (nothing could match it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON Schema at `{pointer}`: {reason}")]
pub struct GrammarError {
    /// JSON pointer into the schema (`/properties/track`), `` for the root.
    pub pointer: String,
    pub reason: String,
}

/// How long each free part of a grammar may run. Tighter limits than the schema's are still
/// conformant, and a small model that rambles must close its answer inside its token budget
/// (a file-analyzer answer of 80 notes once ran out of tokens and was cut off as unparseable
/// JSON): [`for_request`] takes the loosest step of [`Limits::LADDER`] whose longest answer
/// fits the request's `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Characters of the envelope's `<thinking>`.
    pub thinking: u32,
    /// Characters of a JSON string, unless `minLength` asks for more.
    pub string: u64,
    /// Items of a JSON array (members of a free-form object), unless `minItems` asks for more.
    pub items: u64,
    /// Characters of one line of an answer's prose.
    pub prose_line: u32,
    /// Blocks (prose lines, signal items, evidence items) under one heading of an answer.
    pub blocks: u32,
    /// Lines of one excerpt (never more than the contract's `excerpt_max_lines`).
    pub excerpt_lines: u32,
    /// Characters of one excerpt line: a quoted line must fit whole, so this shrinks least.
    pub excerpt_line: u32,
    /// Repeats of a JSON Schema pattern's `*`, `+` and `{m,}`.
    pub pattern_repeat: u32,
    /// Nesting of a JSON value whose schema leaves it free.
    pub depth: u32,
}

impl Limits {
    /// From loose to tight.
    pub const LADDER: [Limits; 6] = [
        Limits::step(240, 160, 8, 300, 6, 12, 200, 40, 3),
        Limits::step(200, 120, 6, 200, 4, 6, 160, 24, 3),
        Limits::step(160, 100, 4, 160, 3, 4, 160, 16, 2),
        Limits::step(120, 80, 3, 120, 2, 3, 120, 12, 2),
        Limits::step(80, 60, 2, 100, 1, 2, 120, 8, 1),
        Limits::step(60, 40, 1, 80, 1, 1, 100, 6, 1),
    ];

    // One argument per limit keeps the ladder a readable table.
    #[allow(clippy::too_many_arguments)]
    const fn step(
        thinking: u32,
        string: u64,
        items: u64,
        prose_line: u32,
        blocks: u32,
        excerpt_lines: u32,
        excerpt_line: u32,
        pattern_repeat: u32,
        depth: u32,
    ) -> Limits {
        Limits {
            thinking,
            string,
            items,
            prose_line,
            blocks,
            excerpt_lines,
            excerpt_line,
            pattern_repeat,
            depth,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::LADDER[0]
    }
}

/// Characters one answer token is counted as when fitting a grammar to `max_tokens`: English
/// runs near four per token in SmolLM2's and most BPE vocabularies, JSON and code nearer three.
pub const CHARS_PER_TOKEN: u64 = 3;

/// The rule writer, the limits the rules are written to, and the files an answer may cite
/// (borrowed: [`for_request`] writes a grammar per step of the ladder, all from one `Cited`).
struct Writer<'a> {
    gbnf: Gbnf,
    limits: Limits,
    cited: &'a Cited,
    /// The lines each quoted file's excerpts may open on, per shape ([`quoted_runs`],
    /// [`tied_cites`]).
    openings: Vec<Opening>,
    /// Evidence items an envelope answer must hold at least: the goal of an `evidence_goal`
    /// ask this turn answers (`runtime::evidence_goal::asked_goal`), else 0.
    least_items: u32,
}

/// What a grammar written without a conversation may cite: nothing named, nothing quoted.
static NOTHING_CITED: Cited = Cited {
    files: Vec::new(),
    quotable: Vec::new(),
};

impl<'a> Writer<'a> {
    fn new(limits: Limits) -> Self {
        Writer {
            gbnf: Gbnf::new(),
            limits,
            cited: &NOTHING_CITED,
            openings: Vec::new(),
            least_items: 0,
        }
    }
}

impl std::ops::Deref for Writer<'_> {
    type Target = Gbnf;
    fn deref(&self) -> &Gbnf {
        &self.gbnf
    }
}

impl std::ops::DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut Gbnf {
        &mut self.gbnf
    }
}

/// The grammar for one request, or `None` when nothing constrains it (a primary agent's
/// turn, which has no contract). `schema` is the JSON contract's schema, already loaded. The
/// grammar is written to the loosest [`Limits`] whose longest answer fits `max_tokens` (at
/// [`CHARS_PER_TOKEN`]), the tightest when none does; a grammar with no longest answer (a
/// free-form JSON value) keeps the loosest. `cited` holds the paths an Evidence item may cite
/// (empty, any well-formed path) and the files whose excerpts are runs of their lines.
pub fn for_request(
    request: &ModelRequest,
    schema: Option<&Value>,
    max_tokens: u32,
    cited: &Cited,
) -> Result<Option<String>, GrammarError> {
    Ok(with_openings(request, schema, max_tokens, cited)?.map(|(g, _)| g))
}

/// [`for_request`], with the lines each quoted file's excerpts may open on under it: the
/// sampler's excerpt guard ([`super::fresh`]) must not steer into a line the grammar cannot
/// quote.
pub fn with_openings(
    request: &ModelRequest,
    schema: Option<&Value>,
    max_tokens: u32,
    cited: &Cited,
) -> Result<Option<(String, Vec<Opening>)>, GrammarError> {
    let budget = u64::from(max_tokens).saturating_mul(CHARS_PER_TOKEN);
    let mut last = None;
    for limits in Limits::LADDER {
        let Some(mut g) = write_request(request, schema, limits, cited)? else {
            return Ok(None);
        };
        match g.max_chars("root") {
            Some(n) if n > budget => last = Some(g),
            _ => {
                let openings = std::mem::take(&mut g.openings);
                return Ok(Some((g.render(), openings)));
            }
        }
    }
    Ok(last.map(|mut g| {
        let openings = std::mem::take(&mut g.openings);
        (g.render(), openings)
    }))
}

/// The grammar of [`for_request`] at one step of limits.
fn write_request<'a>(
    request: &ModelRequest,
    schema: Option<&Value>,
    limits: Limits,
    cited: &'a Cited,
) -> Result<Option<Writer<'a>>, GrammarError> {
    let mut g = Writer::new(limits);
    g.cited = cited;
    // The turn that asks for a checkpoint (a budget at its threshold) is answered with the
    // checkpoint's JSON, whatever the contract: held to the pipeline planner's `{"events": …}`,
    // the 1.5B model put the request's own example strings ("what you have finished") in as
    // task titles, and the checkpoint was lost.
    let asks_checkpoint = request
        .messages
        .last()
        .is_some_and(|m| crate::runtime::checkpoint::is_request(&m.content));
    if asks_checkpoint {
        let root = json_rules(&mut g, &crate::runtime::checkpoint::schema())?;
        g.rule("root", root);
        return Ok(Some(g));
    }
    let call = calls_rules(&mut g, request.callable_tools());
    let required = request.tool_choice == ToolChoice::Required;
    let Some(contract) = &request.response_contract else {
        // A turn without a contract (a primary's) answers in free text, but a call it starts is
        // one well-formed call of a tool it was offered (a free answer cannot open with a
        // backtick, so a code fence at the start is the call).
        let Some(call) = call else {
            // Offered no tools right after the note to write the report now: the report, with
            // the note's verified items copied whole. Else anything.
            let findings = request
                .messages
                .last()
                .and_then(|m| crate::runtime::deliver::report_now_findings(&m.content));
            let Some(findings) = findings else {
                return Ok(None);
            };
            let report = report_rules(&mut g, &findings);
            g.rule("root", report);
            return Ok(Some(g));
        };
        let root = if required {
            call
        } else {
            let free = g.rule("free-answer", "[^`\\x00] [^\\x00]*");
            format!("{call} | {free}")
        };
        g.rule("root", root);
        return Ok(Some(g));
    };
    let answer = match contract.contract.format {
        ContractFormat::Json => {
            let schema = schema.ok_or_else(|| GrammarError {
                pointer: String::new(),
                reason: "the JSON contract's schema was not loaded".into(),
            })?;
            json_rules(&mut g, schema)?
        }
        ContractFormat::Envelope => {
            g.least_items = request
                .messages
                .last()
                .and_then(|m| crate::runtime::evidence_goal::asked_goal(&m.content))
                .unwrap_or(0);
            envelope_rules(&mut g, contract)
        }
    };
    let root = match call {
        Some(call) if required => call,
        Some(call) => format!("{answer} | {call}"),
        None => answer,
    };
    g.rule("root", root);
    Ok(Some(g))
}

/// A research report's sections (the researcher's template: Question, Summary, Findings, Open
/// Questions), its Findings the verified items of the note to write it (`findings`), each
/// copied whole and in order; the runtime puts the frontmatter above them
/// (`deliver::document_from_sections`). Told to write its report with three verified items
/// and offered no tools, Qwen2.5-Coder-1.5B wrote a `task` call as text instead.
fn report_rules(g: &mut Writer, findings: &[String]) -> String {
    const OPEN_QUESTION_CHARS: u32 = 160;
    let l = g.limits;
    let line = g.rule(
        "report-line",
        format!("[^#`<\\n \\t] [^`<\\n]{{0,{}}} \"\\n\"", l.prose_line),
    );
    // An open question is one short line, two at most: unbounded, the 1.5B researcher filled
    // four lines of 300 characters with the same sentence about its budget. It opens with no
    // `*`: its first line cut at the limit, the 1.5B researcher wrote `- **Evidence**: none` as
    // its second, an item that verifies nothing, and its report failed `deliver:` three times
    // over (t0, 2026-12-01).
    let open = g.rule(
        "report-open",
        format!(
            "\"- \" [^#`<\\n \\t*] [^`<\\n]{{0,{}}} \"\\n\"",
            OPEN_QUESTION_CHARS
        ),
    );
    let items: Vec<String> = findings.iter().map(|f| lit(&format!("{f}\n"))).collect();
    g.rule(
        "report",
        format!(
            "\"## Question\\n\\n\" {line} \"\\n## Summary\\n\\n\" {line}{{1,6}} \
             \"\\n## Findings\\n\\n\" {} ( \"\\n## Open Questions\\n\\n\" {open}{{1,2}} )?",
            items.join(" \"\\n\" ")
        ),
    )
}

/// One call of any tool in `tools`, or `None` when there are none: `task` in its textual form
/// (naming only the agents it may call), every other tool as the fenced JSON object the
/// prompt shows (`textual::json_tools_text`), its arguments under the tool's parameter
/// schema. A schema the grammar cannot write (an MCP tool's `$ref`) takes any JSON object:
/// the tool itself still checks its arguments.
fn calls_rules(g: &mut Writer, tools: &[crate::model::ToolSpec]) -> Option<String> {
    if tools.iter().any(|t| t.name != TASK_TOOL) {
        // The object rules of `schema_rule` separate their members with it.
        g.rule("ws", "[ \\t\\n]{0,4}");
    }
    let mut alternatives = Vec::new();
    for tool in tools {
        if tool.name == TASK_TOOL {
            let names = crate::tools::narrowed_task_names(&tool.parameters);
            alternatives.push(task_call_rules(g, &names));
            continue;
        }
        let pointer = format!("/tools/{}", tool.name);
        let arguments = match schema_rule(g, &tool.parameters, &pointer) {
            Ok(rule) => rule,
            Err(_) => any_rules(g).1,
        };
        let open = lit(&format!(
            "```json\n{{\"name\": {}, \"arguments\": ",
            Value::String(tool.name.clone())
        ));
        let rule = format!("{open} {arguments} {}", lit("}\n```\n"));
        alternatives.push(g.rule(&format!("call-{}", tool.name), rule));
    }
    (!alternatives.is_empty()).then(|| g.rule("tool-call", alternatives.join(" | ")))
}

/// A grammar whose root is one JSON value matching `schema` (see the module doc for what is
/// left to the checker).
pub fn json_schema(schema: &Value) -> Result<String, GrammarError> {
    let mut g = Writer::new(Limits::default());
    let value = json_rules(&mut g, schema)?;
    g.rule("root", value);
    Ok(g.render())
}

/// A grammar whose root is the envelope for `contract`.
pub fn envelope(contract: &ResponseContract) -> String {
    let mut g = Writer::new(Limits::default());
    let body = envelope_rules(&mut g, contract);
    g.rule("root", body);
    g.render()
}

/// A grammar whose root is one textual `task(...)` call in a code block.
pub fn task_call() -> String {
    let mut g = Writer::new(Limits::default());
    let body = task_call_rules(&mut g, &[]);
    g.rule("root", body);
    g.render()
}

fn json_rules(g: &mut Writer, schema: &Value) -> Result<String, GrammarError> {
    g.rule("ws", "[ \\t\\n]{0,4}");
    let value = schema_rule(g, schema, "")?;
    Ok(format!("ws {value} ws"))
}

/// The generic JSON rules, added once.
/// Any JSON value (a schema that does not say which): the names of its value rule and of its
/// object rule. Nesting stops at `Limits::depth` (scalars below), so even a free-form value
/// has a longest text and the grammar can be fitted to the token budget.
fn any_rules(g: &mut Writer) -> (String, String) {
    let l = g.limits;
    let string = string_rule(g);
    let number = number_rule(g);
    let scalar = g.rule(
        "scalar",
        format!("{string} | {number} | \"true\" | \"false\" | \"null\""),
    );
    let more = l.items.saturating_sub(1);
    let mut value = scalar.clone();
    let mut object = g.rule("object-0", "\"{\" ws \"}\"");
    for depth in 1..=l.depth.max(1) {
        object = g.rule(
            &format!("object-{depth}"),
            format!(
                "\"{{\" ws ( {string} ws \":\" ws {value} ws ( \",\" ws {string} ws \":\" ws {value} ws ){{0,{more}}} )? \"}}\""
            ),
        );
        let array = g.rule(
            &format!("array-{depth}"),
            format!("\"[\" ws ( {value} ws ( \",\" ws {value} ws ){{0,{more}}} )? \"]\""),
        );
        value = g.rule(
            &format!("any-{depth}"),
            format!("{object} | {array} | {scalar}"),
        );
    }
    (value, object)
}

fn any_value(g: &mut Writer) -> String {
    any_rules(g).0
}

/// What a JSON string's `char` (and `first-char`) leaves out, as a GBNF class body, and the
/// escapes it allows instead: one place for both rules.
const STRING_CHAR_OUT: &str = "\"\\\\\\x00-\\x1F…";
const STRING_ESCAPE: &str = "\"\\\\\" [\"\\\\/bfnrt]";

/// A JSON string's characters: anything but `"`, `\` and control characters, which only come
/// as the two-character escapes. `\uXXXX` is left out: every character can be written as
/// itself, and an escape six characters long would make the grammar's longest answer (which
/// is fitted to the token budget) six times a string's length.
fn string_rule(g: &mut Writer) -> String {
    let l = g.limits;
    // No `…`: it is the placeholder of every shape the runtime shows (a step's `next_call`, a
    // reply's `expected`), and the 1.5B planner copied it as a file path into `scope`.
    g.rule("char", format!("[^{STRING_CHAR_OUT}] | {STRING_ESCAPE}"));
    let most = l.string;
    g.rule("string", format!("\"\\\"\" char{{0,{most}}} \"\\\"\""))
}

fn number_rule(g: &mut Writer) -> String {
    g.rule(
        "number",
        "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?",
    )
}

fn integer_rule(g: &mut Writer) -> String {
    g.rule("integer", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )")
}

/// A rule for `schema` at `pointer`; returns the expression to use (a rule name or an inline
/// alternative).
fn schema_rule(g: &mut Writer, schema: &Value, pointer: &str) -> Result<String, GrammarError> {
    let err = |reason: String| GrammarError {
        pointer: pointer.to_string(),
        reason,
    };
    let obj = match schema {
        Value::Bool(true) => return Ok(any_value(g)),
        Value::Bool(false) => return Err(err("`false` admits no value".into())),
        Value::Object(o) => o,
        _ => return Err(err("a schema must be an object or a boolean".into())),
    };
    let hint = pointer.rsplit('/').next().unwrap_or("value");
    let hint = if hint.is_empty() { "value" } else { hint };
    if let Some(c) = obj.get("const") {
        return Ok(lit(&c.to_string()));
    }
    if let Some(e) = obj.get("enum") {
        let items = e
            .as_array()
            .ok_or_else(|| err("`enum` must be an array".into()))?;
        if items.is_empty() {
            return Err(err("an empty `enum` admits no value".into()));
        }
        let alts: Vec<String> = items.iter().map(|v| lit(&v.to_string())).collect();
        return Ok(g.rule(hint, alts.join(" | ")));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(list) = obj.get(key) {
            let list = list
                .as_array()
                .filter(|l| !l.is_empty())
                .ok_or_else(|| err(format!("`{key}` must be a non-empty array")))?;
            let alts = list
                .iter()
                .enumerate()
                .map(|(i, s)| schema_rule(g, s, &format!("{pointer}/{key}/{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(g.rule(hint, alts.join(" | ")));
        }
    }
    let types: Vec<&str> = match obj.get("type") {
        None => {
            // No type: infer it from the keywords, else any value.
            if obj.contains_key("properties") || obj.contains_key("required") {
                vec!["object"]
            } else if obj.contains_key("items") {
                vec!["array"]
            } else {
                return Ok(any_value(g));
            }
        }
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(err("`type` must be a string or an array of strings".into())),
    };
    if types.is_empty() {
        return Err(err("`type` lists no type".into()));
    }
    let mut alts = Vec::new();
    for t in types {
        alts.push(match t {
            "string" => string_schema(g, obj, hint),
            "integer" => integer_rule(g),
            "number" => number_rule(g),
            "boolean" => "( \"true\" | \"false\" )".into(),
            "null" => "\"null\"".into(),
            "array" => array_schema(g, obj, pointer, hint)?,
            "object" => object_schema(g, obj, pointer, hint)?,
            other => return Err(err(format!("unknown type `{other}`"))),
        });
    }
    Ok(if alts.len() == 1 {
        alts.remove(0)
    } else {
        g.rule(hint, alts.join(" | "))
    })
}

fn string_schema(g: &mut Writer, obj: &serde_json::Map<String, Value>, hint: &str) -> String {
    let l = g.limits;
    let project_file = obj.get(crate::model::PROJECT_FILE_KEYWORD) == Some(&Value::Bool(true));
    let cited = g.cited;
    if project_file && !cited.files.is_empty() {
        return g.rule("project-file", json_names(&cited.files));
    }
    if let Some(body) = obj
        .get("pattern")
        .and_then(Value::as_str)
        .and_then(|p| pattern_to_gbnf(p, l.pattern_repeat).ok())
    {
        return g.rule(hint, format!("\"\\\"\" {body} \"\\\"\""));
    }
    let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    // Without a maxLength a small model may never close the string: bound it.
    let max = obj
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX)
        .min(l.string.max(min));
    string_rule(g);
    // Not opening on `.`: Qwen2.5-Coder-1.5B, barred from the shapes' `…`, wrote `...` in
    // its place; a value that is a real sentence or name rarely starts with a dot.
    let first = g.rule(
        "first-char",
        format!("[^{STRING_CHAR_OUT}.] | {STRING_ESCAPE}"),
    );
    let rest = max.max(min).saturating_sub(1);
    let body = if max.max(min) == 0 {
        String::new()
    } else if min == 0 {
        format!("( {first} char{{0,{rest}}} )?")
    } else {
        format!("{first} char{{{},{rest}}}", min - 1)
    };
    g.rule(hint, format!("\"\\\"\" {body} \"\\\"\""))
}

fn array_schema(
    g: &mut Writer,
    obj: &serde_json::Map<String, Value>,
    pointer: &str,
    hint: &str,
) -> Result<String, GrammarError> {
    let l = g.limits;
    let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let mut max = obj.get("maxItems").and_then(Value::as_u64);
    if let Some(rule) = unique_enum_array(g, obj, min, max, hint) {
        return Ok(rule);
    }
    // Bounded for the token budget (see Limits); a larger minItems wins.
    max = Some(max.unwrap_or(u64::MAX).min(l.items.max(min)));
    let item = match obj.get("items") {
        Some(items) => schema_rule(g, items, &format!("{pointer}/items"))?,
        None => any_value(g),
    };
    // Unique items drawn from an enum: no more items than the enum has values.
    if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
        if let Some(n) = obj
            .get("items")
            .and_then(|i| i.get("enum"))
            .and_then(Value::as_array)
            .map(|e| e.len() as u64)
        {
            max = Some(max.map_or(n, |m| m.min(n)));
        }
    }
    if let Some(max) = max {
        if max < min {
            return Err(GrammarError {
                pointer: pointer.to_string(),
                reason: format!("maxItems {max} is less than minItems {min}"),
            });
        }
        if max == 0 {
            return Ok(g.rule(hint, "\"[\" ws \"]\""));
        }
    }
    let more = format!("( \",\" ws {item} ws )");
    let rest = match (min.saturating_sub(1), max.map(|m| m - 1)) {
        (0, None) => format!("{more}*"),
        (lo, None) => format!("{more}{{{lo},}}"),
        (0, Some(0)) => String::new(),
        (lo, Some(hi)) => format!("{more}{{{lo},{hi}}}"),
    };
    let body = if min == 0 {
        format!("\"[\" ws ( {item} ws {rest} )? \"]\"")
    } else {
        format!("\"[\" ws {item} ws {rest} \"]\"")
    };
    Ok(g.rule(hint, body))
}

/// Most enum values a `uniqueItems` array is spelled out for (the rules grow with the square).
const UNIQUE_ENUM_MAX: usize = 16;

/// `uniqueItems` over an enum's values, which a plain repetition cannot say: the array holds
/// the values in the order the enum lists them, each at most once (a rule per position: after
/// value k only values after k may follow). Used when the count bounds do not cut into it
/// (`minItems` at most 1, `maxItems` absent or at least the enum's size); otherwise the plain
/// repetition is bounded and the checker sees duplicates.
fn unique_enum_array(
    g: &mut Writer,
    obj: &serde_json::Map<String, Value>,
    min: u64,
    max: Option<u64>,
    hint: &str,
) -> Option<String> {
    if obj.get("uniqueItems") != Some(&Value::Bool(true)) {
        return None;
    }
    let values = obj.get("items")?.get("enum")?.as_array()?;
    let n = values.len();
    if n == 0 || n > UNIQUE_ENUM_MAX || min > 1 || max.is_some_and(|m| m < n as u64) {
        return None;
    }
    let lits: Vec<String> = values.iter().map(|v| lit(&v.to_string())).collect();
    // from(k): one of values k.. followed by what may come after it.
    let mut after: Vec<String> = vec![String::new(); n + 1];
    for k in (1..n).rev() {
        let alts: Vec<String> = (k..n)
            .map(|j| {
                format!("{} ws {}", lits[j], after[j + 1])
                    .trim_end()
                    .to_string()
            })
            .collect();
        after[k] = g.rule(
            &format!("{hint}-after-{k}"),
            format!("( \",\" ws ( {} ) )?", alts.join(" | ")),
        );
    }
    let first: Vec<String> = (0..n)
        .map(|j| {
            format!("{} ws {}", lits[j], after[j + 1])
                .trim_end()
                .to_string()
        })
        .collect();
    let first = format!("( {} )", first.join(" | "));
    let body = if min == 0 {
        format!("\"[\" ws {first}? \"]\"")
    } else {
        format!("\"[\" ws {first} \"]\"")
    };
    Some(g.rule(hint, body))
}

fn object_schema(
    g: &mut Writer,
    obj: &serde_json::Map<String, Value>,
    pointer: &str,
    hint: &str,
) -> Result<String, GrammarError> {
    let props = obj.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        let (value, object) = any_rules(g);
        if required.is_empty() {
            return Ok(object);
        }
        // Required keys without declared shapes: each with any value.
        let members: Vec<String> = required
            .iter()
            .map(|k| format!("{} ws \":\" ws {value}", lit(&Value::from(*k).to_string())))
            .collect();
        return Ok(g.rule(
            hint,
            format!("\"{{\" ws {} ws \"}}\"", members.join(" ws \",\" ws ")),
        ));
    };
    // Required keys in the order `required` lists them, then the optional ones in the order
    // `properties` has them; each optional key may be left out.
    let mut members: Vec<(&str, String, bool)> = Vec::new();
    for key in &required {
        let sub = props.get(*key).cloned().unwrap_or(Value::Bool(true));
        let value = schema_rule(g, &sub, &format!("{pointer}/properties/{key}"))?;
        members.push((key, value, true));
    }
    for (key, sub) in props {
        if required.contains(&key.as_str()) {
            continue;
        }
        let value = schema_rule(g, sub, &format!("{pointer}/properties/{key}"))?;
        members.push((key, value, false));
    }
    if required.is_empty() && members.len() > 1 {
        // Optional members only: the separators below assume a member before each; keep it
        // simple and admit any subset in order, each introduced by a comma after the first.
        let alts: Vec<String> = members
            .iter()
            .map(|(k, v, _)| format!("{} ws \":\" ws {v} ws", lit(&Value::from(*k).to_string())))
            .collect();
        let member = g.rule(&format!("{hint}-member"), alts.join(" | "));
        return Ok(g.rule(
            hint,
            format!("\"{{\" ws ( {member} ( \",\" ws {member} )* )? \"}}\""),
        ));
    }
    let Some(quoted) = quoted_objects(g, &members, props, hint) else {
        return Ok(g.rule(hint, object_body(&members)));
    };
    Ok(g.rule(hint, quoted))
}

/// An object's text with `members` (key, value rule, required) in order.
fn object_body(members: &[(&str, String, bool)]) -> String {
    let mut body = String::from("\"{\" ws ");
    let mut first = true;
    for (key, value, is_required) in members {
        let member = format!(
            "{} ws \":\" ws {value}",
            lit(&Value::from(*key).to_string())
        );
        let sep = if first { "" } else { "\",\" ws " };
        if *is_required {
            body.push_str(&format!("{sep}{member} ws "));
            first = false;
        } else {
            // An optional member after nothing required needs its comma only when one follows.
            body.push_str(&format!("( {sep}{member} ws )? "));
        }
    }
    body.push_str("\"}\"");
    body
}

/// An evidence object's alternatives when the conversation showed files to quote: an object
/// with required `path` and `excerpt` strings (path first) cites one of those files, its
/// `excerpt` a run of that file's lines ([`quoted_runs`]) and its required integer `start` and
/// `end` lines of it; any other named file (any path when none was named) keeps the free
/// object. `None` when the object is not one or no file can be quoted. The planner's `scope`
/// step cited `src/runtime/run.rs` lines 1-347 with an excerpt it had made up.
fn quoted_objects(
    g: &mut Writer,
    members: &[(&str, String, bool)],
    props: &serde_json::Map<String, Value>,
    hint: &str,
) -> Option<String> {
    let plain_string = |key: &str| {
        props.get(key).and_then(Value::as_object).is_some_and(|o| {
            o.get("type") == Some(&Value::from("string"))
                && !["enum", "const", "pattern", "maxLength"]
                    .iter()
                    .any(|k| o.contains_key(*k))
        })
    };
    let at = |key: &str| members.iter().position(|(k, _, req)| *k == key && *req);
    let (path_at, excerpt_at) = (at("path")?, at("excerpt")?);
    if path_at > excerpt_at || !plain_string("path") || !plain_string("excerpt") {
        return None;
    }
    let integer =
        |key: &str| props.get(key).and_then(|v| v.get("type")) == Some(&Value::from("integer"));
    let most = crate::contract::spec::MAX_EXCERPT_LINES.min(g.limits.excerpt_lines);
    let cited = g.cited;
    let mut alts = Vec::new();
    let mut quoted: Vec<&str> = Vec::new();
    for file in &cited.quotable {
        let Some(runs) = quoted_runs(g, file, most) else {
            continue;
        };
        let line = g.rule(
            &format!("j-{}-line", file.path),
            line_numbers(file.lines.len()),
        );
        let mut own: Vec<(&str, String, bool)> = members.to_vec();
        for (key, value, required) in own.iter_mut() {
            match *key {
                "path" => *value = lit(&Value::from(file.path.as_str()).to_string()),
                "excerpt" => *value = format!("\"\\\"\" {runs} \"\\\"\""),
                "start" | "end" if *required && integer(key) => *value = line.clone(),
                _ => {}
            }
        }
        alts.push(g.rule(&format!("{hint}-{}", file.path), object_body(&own)));
        quoted.push(file.path.as_str());
    }
    if alts.is_empty() {
        return None;
    }
    match unquoted(cited, &quoted) {
        Unquoted::AnyPath => alts.push(g.rule(&format!("{hint}-free"), object_body(members))),
        Unquoted::Named(rest) => {
            let path = g.rule(&format!("{hint}-free-path"), json_names(&rest));
            let mut free: Vec<(&str, String, bool)> = members.to_vec();
            free[path_at].1 = path;
            alts.push(g.rule(&format!("{hint}-free"), object_body(&free)));
        }
        Unquoted::NoneLeft => {}
    }
    Some(alts.join(" | "))
}

/// The envelope: the frontmatter with the hop's ids (literally: the runtime allocated them)
/// and the contract's fields, one `<thinking>`, one `<answer>`.
fn envelope_rules(g: &mut Writer, rc: &ResponseContract) -> String {
    let l = g.limits;
    let files = &g.cited.files;
    let c = &rc.contract;
    let date = g.rule(
        "date",
        "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )",
    );
    let time = g.rule(
        "time",
        "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9]",
    );
    let message_id = if rc.message_id.is_empty() {
        let prefix = c
            .message_id_prefix
            .as_deref()
            .map(lit)
            .unwrap_or_else(|| "[a-z] [a-z0-9-]*".into());
        g.rule(
            "message-id",
            format!("{prefix} \"-\" {date} \"-\" [0-9]{{3,6}}"),
        )
    } else {
        lit(&rc.message_id)
    };
    let correlation = if rc.correlation_id.is_empty() {
        g.rule("correlation-id", "[A-Za-z0-9._:-]{1,64}")
    } else {
        lit(&rc.correlation_id)
    };
    let timestamp = if rc.timestamp.is_empty() {
        g.rule("timestamp", format!("{date} \"T\" {time} \"Z\""))
    } else {
        lit(&rc.timestamp)
    };
    let message_type = if c.message_types.is_empty() {
        g.rule("message-type", "[A-Z] [A-Z0-9]* ( \"_\" [A-Z0-9]+ ){0,6}")
    } else {
        let alts: Vec<String> = c.message_types.iter().map(|t| lit(t)).collect();
        g.rule("message-type", alts.join(" | "))
    };
    let mut front = format!(
        "\"---\\n\" \"message_id: \" {message_id} \"\\n\" \"correlation_id: \" {correlation} \
         \"\\n\" \"timestamp: \" {timestamp} \"\\n\" \"message_type: \" {message_type} \"\\n\""
    );
    for (key, rule) in &c.fields {
        let value = match rule {
            FieldRule::OneOf { one_of } => {
                let alts: Vec<String> = one_of.iter().map(|v| lit(v)).collect();
                g.rule(&format!("field-{key}"), alts.join(" | "))
            }
            FieldRule::Kind(FieldKind::Date) => date.clone(),
            FieldRule::Kind(FieldKind::Timestamp) => {
                g.rule("timestamp-any", format!("{date} \"T\" {time} \"Z\""))
            }
            // One of the files the conversation named; else any relative path, and that it
            // exists is the checker's business.
            FieldRule::Kind(FieldKind::Path) if !files.is_empty() => named_path(g, files),
            FieldRule::Kind(FieldKind::Path) => {
                g.rule("path", "[A-Za-z0-9_] [A-Za-z0-9_./-]{0,120}")
            }
            // A plain YAML scalar that reads back as the text written.
            FieldRule::Kind(FieldKind::String) => {
                g.rule("plain", "[A-Za-z0-9] [A-Za-z0-9 ._/-]{0,80}")
            }
        };
        front.push_str(&format!(" {} {value} \"\\n\"", lit(&format!("{key}: "))));
    }
    front.push_str(" \"---\\n\"");
    let frontmatter = g.rule("frontmatter", front);
    let thinking = g.rule(
        "thinking-text",
        format!("[^<` \\t\\n] [^<`]{{0,{}}}", l.thinking),
    );
    let answer = answer_rules(g, c);
    g.rule(
        "envelope",
        format!(
            "{frontmatter} \"\\n<thinking>\\n\" {thinking} \"\\n\"? \"</thinking>\\n\\n<answer>\\n\" \
             {answer} \"\\n\"? \"</answer>\\n\""
        ),
    )
}

/// The `<answer>` text: the contract's required sections as headings in order (free text
/// before them), each holding prose lines, signal items (`#### Finding: title`, with their
/// Evidence when the contract requires it) and Evidence items (`- **Evidence**: `path:N-M``,
/// `- **Excerpt**:`, a fenced block of at most `excerpt_max_lines` lines). Prose cannot open a
/// code fence (it would swallow `</answer>`), a heading or a bold label: those only come in the
/// shapes above. An excerpt of a quotable file is the run of its lines the reference names,
/// copied whole ([`tied_cites`]); all of it is the checker's business for other files.
fn answer_rules(g: &mut Writer, c: &crate::contract::Contract) -> String {
    let cited = g.cited;
    let l = g.limits;
    let line_no = g.rule("line-no", "[1-9] [0-9]{0,5}");
    // A list cut at `NAMED_FILES_MAX` would hide the files past it: then the checker judges.
    let all_named = !cited.files.is_empty() && cited.files.len() < NAMED_FILES_MAX;
    let prose = if c.named_paths == NamedPaths::Exist && all_named {
        prose_naming_files(g, &line_no)
    } else {
        // A backtick only before another character: inline code, never a fence.
        let prose_char = g.rule("prose-char", "[^<`#*\\n] | \"`\" [^<`#*\\n]");
        g.rule(
            "prose-line",
            format!("[^<`#*\\n \\t] {prose_char}{{0,{}}} \"\\n\"", l.prose_line),
        )
    };
    let excerpt_line = g.rule(
        "excerpt-line",
        format!("[^`<\\n]{{0,{}}} \"\\n\"", l.excerpt_line),
    );
    let most = c.excerpt_max_lines.min(l.excerpt_lines).max(1);
    let reference = g.rule(
        "evidence-lines",
        format!("\":\" {line_no} ( \"-\" {line_no} )? \"`\\n- **Excerpt**:\\n```\\n\""),
    );
    let mut cites = Vec::new();
    let mut quoted = Vec::new();
    for file in &cited.quotable {
        if let Some(tied) = tied_cites(g, file, most) {
            cites.push(format!("{} \":\" {tied}", lit(&file.path)));
            quoted.push(file.path.as_str());
        }
    }
    let other = match unquoted(cited, &quoted) {
        Unquoted::AnyPath => Some(g.rule("evidence-path", "[A-Za-z0-9_.] [A-Za-z0-9_./-]{0,120}")),
        Unquoted::Named(rest) => {
            let names: Vec<String> = rest.iter().map(|f| lit(f)).collect();
            Some(g.rule("free-path", names.join(" | ")))
        }
        Unquoted::NoneLeft => None,
    };
    if let Some(other) = other {
        cites.push(format!("{other} {reference} {excerpt_line}{{1,{most}}}"));
    }
    let cite = g.rule("evidence-cite", cites.join(" | "));
    let evidence = g.rule(
        "evidence-item",
        format!("\"- **Evidence**: `\" {cite} \"```\\n\""),
    );
    let mut blocks = vec![prose.clone(), evidence.clone()];
    // The blocks that hold an Evidence item: what `least_items` counts.
    let mut evidenced = vec![evidence.clone()];
    if !c.signal_headings.is_empty() {
        let names: Vec<String> = c.signal_headings.iter().map(|h| lit(h)).collect();
        let title = g.rule("signal-title", "[^<`#*\\n] [^<`#*\\n]{0,80}");
        let head = format!(
            "\"#### \" ( {} ) \": \" {title} \"\\n\" {prose}?",
            names.join(" | ")
        );
        if c.evidence == crate::contract::EvidencePolicy::Required {
            let item = g.rule("signal-item", format!("{head} {evidence}"));
            evidenced.push(item.clone());
            blocks.push(item);
        } else {
            blocks.push(g.rule("signal-item", format!("{head} {evidence}?")));
            evidenced.push(g.rule("signal-evidenced", format!("{head} {evidence}")));
        }
    }
    let block = g.rule("answer-block", blocks.join(" | "));
    let body = format!("( {block} \"\\n\"? ){{1,{}}}", l.blocks);
    // Answering an `evidence_goal` ask, the (first) section opens with that many evidenced
    // blocks, prose allowed before each; the sampler's number guard (`super::fresh`) keeps each
    // new excerpt off the lines an earlier one quoted.
    let first_body = match g.least_items {
        0 => body.clone(),
        least => {
            let held = g.rule("evidenced-block", evidenced.join(" | "));
            format!(
                "( ( {prose} \"\\n\"? )? {held} \"\\n\"? ){{{least}}} ( {block} \"\\n\"? ){{0,{}}}",
                l.blocks.saturating_sub(least)
            )
        }
    };
    let mut text = format!("( {prose} \"\\n\"? )?");
    if c.required_sections.is_empty() {
        text = first_body;
    } else {
        for (i, section) in c.required_sections.iter().enumerate() {
            let body = if i == 0 { &first_body } else { &body };
            text.push_str(&format!(" {} {body}", lit(&format!("### {section}\n"))));
        }
    }
    g.rule("answer-text", text)
}

/// A prose line of an answer whose contract checks the paths it lists (`named_paths: exist`),
/// when the conversation named files: inline code holding a `/` is one of those files (a
/// `path:N-M` reference to one included), so a listed path is one a tool or the task showed.
/// The 1.5B thoughts-locator listed an invented `thoughts/shared/plans/…-switchboard-pipeline.md`
/// at its answer and both repairs, and the hop failed on it. Other inline code (`grep`,
/// `(?i)parser`) stays free, and plain text holds no `/`: a path written bare would pass the
/// check unseen, which is why SmolLM2-135M, told to list an invented record in backticks,
/// wrote it bare. A line holds at most three code spans; with them, a quarter of the line's
/// plain length before the first and half after each (a locator's line is mostly the title
/// after its path), so the longest line is under twice a plain one plus its spans, and the
/// grammar's ladder (`Limits`) moves by a step at most. Only when the conversation's named
/// files were not cut at `NAMED_FILES_MAX` (the caller's check): past it, real files would be
/// unwritable.
fn prose_naming_files(g: &mut Writer, line_no: &str) -> String {
    let (n, cited) = (g.limits.prose_line, g.cited);
    let named = named_path(g, &cited.files);
    let plain = g.rule("prose-plain", "[^<`#*\\n/]");
    let code = g.rule(
        "prose-code",
        format!(
            "\"`\" ( {named} ( \":\" {line_no} ( \"-\" {line_no} )? )? | [^<`#*\\n/]{{1,40}} ) \"`\""
        ),
    );
    let first = "[^<`#*\\n \\t/]";
    g.rule(
        "prose-line",
        format!(
            "{first} ( {plain}{{0,{n}}} | {plain}{{0,{}}} ( {code} {plain}{{0,{}}} ){{1,3}} ) \"\\n\"",
            n / 4,
            n / 2
        ),
    )
}

/// The paths an Evidence item may still cite with a free excerpt, once the `quoted` files have
/// their runs: the Evidence rule and the JSON evidence object leave the same ones free.
enum Unquoted<'a> {
    /// Nothing was named: any well-formed path, its existence the checker's business.
    AnyPath,
    /// The named files not read for quoting.
    Named(Vec<&'a String>),
    /// Every named file is quoted: no free excerpt at all.
    NoneLeft,
}

fn unquoted<'a>(cited: &'a Cited, quoted: &[&str]) -> Unquoted<'a> {
    if cited.files.is_empty() {
        return Unquoted::AnyPath;
    }
    let rest: Vec<&String> = cited
        .files
        .iter()
        .filter(|f| !quoted.contains(&f.as_str()))
        .collect();
    if rest.is_empty() {
        Unquoted::NoneLeft
    } else {
        Unquoted::Named(rest)
    }
}

/// How a quoted line is written: in a fenced block, or inside a JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Each line whole with its line end; a line that would break the envelope (a code fence,
    /// an envelope tag) is never quoted.
    Markdown,
    /// Each line JSON-escaped, lines joined by `\n`, with no line end after the last.
    Json,
}

/// A quotable file's lines as rules: `names[i]` the rule of line `i` as `form` writes it (empty
/// for a line an excerpt may not copy: longer than an excerpt line may be, or in a fenced block
/// one that would close the fence or the answer), and `opens[i]` whether an excerpt may open on
/// it (a line without a word, `},`, opens none: the checker refuses it as `excerpt/no-words`).
struct Lines {
    names: Vec<String>,
    opens: Vec<bool>,
}

impl Lines {
    fn new(g: &mut Writer, file: &Quotable, form: Form) -> Self {
        let limit = g.limits.excerpt_line as usize;
        let quotable = |line: &str| {
            line.chars().count() <= limit
                && (form == Form::Json
                    || !line.contains("```")
                        && !["<answer>", "</answer>", "<thinking>", "</thinking>"]
                            .iter()
                            .any(|tag| line.contains(tag)))
        };
        let stem = match form {
            Form::Markdown => format!("q-{}", file.path),
            Form::Json => format!("j-{}", file.path),
        };
        let mut names = Vec::with_capacity(file.lines.len());
        let mut opens = Vec::with_capacity(file.lines.len());
        for (i, line) in file.lines.iter().enumerate() {
            if !quotable(line) {
                names.push(String::new());
                opens.push(false);
                continue;
            }
            let text = match form {
                Form::Markdown => format!("{line}\n"),
                // The string's content: its JSON text without the quotes.
                Form::Json => {
                    let quoted = Value::from(line.as_str()).to_string();
                    quoted[1..quoted.len() - 1].to_string()
                }
            };
            names.push(g.rule(&format!("{stem}-{}", i + 1), lit(&text)));
            opens.push(crate::contract::has_word(line));
        }
        Lines { names, opens }
    }

    fn ok(&self, i: usize) -> bool {
        !self.names[i].is_empty()
    }
}

/// Tells the sampler's guards ([`super::fresh`]) the lines an excerpt of `path` in `shape` may
/// open on, once per file and shape.
fn record_openings(g: &mut Writer, path: &str, shape: Shape, lines: Vec<bool>) {
    if !g
        .openings
        .iter()
        .any(|o| o.path == path && o.shape == shape)
    {
        g.openings.push(Opening {
            path: path.to_string(),
            shape,
            lines,
        });
    }
}

/// The reference and fenced excerpt of an Evidence item citing `file`, tied: after
/// `` `path: `` the line number `N` (or the range `N-M`, at most `most` lines), then exactly the
/// lines it names, each copied whole; `None` when no line can open an excerpt. The number
/// comes first, so the number chooses the lines. Under the earlier grammar (any number, any
/// run of the file's lines), Qwen2.5-Coder-1.5B's codebase-analyzer cited the line its title
/// paraphrased (`template.rs:4`) and then quoted `Message::user("hi"),` from line 89: 47
/// `excerpt/mismatch` problems in the analyzers' answers of five researcher sessions, none of
/// the 22 right first time. Reading numbered lines, the model copies a number better than it
/// picks a line to copy.
///
/// The numbers are a digit trie (`q-F-n-<digits>`), so the sampler follows one branch per digit
/// written, not one per line of the file. An opening is a line with a word that may be quoted
/// (as for [`quoted_runs`], see [`Lines`]); a range runs on only over lines that may be quoted. The lines an
/// excerpt may open on go to the sampler's number guard ([`super::fresh`]).
fn tied_cites(g: &mut Writer, file: &Quotable, most: u32) -> Option<String> {
    let lines = Lines::new(g, file, Form::Markdown);
    let (names, opens) = (&lines.names, &lines.opens);
    let stem = format!("q-{}", file.path);
    let n = file.lines.len();
    let head = lit("`\n- **Excerpt**:\n```\n");
    // The tail after each opening's number: the lines it names, one or a range of them.
    let mut tails: HashMap<usize, String> = HashMap::new();
    for i in (0..n).filter(|&i| opens[i]) {
        let mut ends = vec![format!("{head} {}", names[i])];
        let mut run = names[i].clone();
        let mut alts = vec![format!("{} {head} {run}", lit(&(i + 1).to_string()))];
        for j in (i + 1..n).take(most.saturating_sub(1) as usize) {
            if !lines.ok(j) {
                break;
            }
            run = format!("{run} {}", names[j]);
            alts.push(format!("{} {head} {run}", lit(&(j + 1).to_string())));
        }
        ends.push(format!("\"-\" ( {} )", alts.join(" | ")));
        tails.insert(
            i + 1,
            g.rule(&format!("{stem}-at{}", i + 1), ends.join(" | ")),
        );
    }
    if tails.is_empty() {
        return None;
    }
    // The digit trie over the openings' numbers, its nodes written deepest first; its root
    // (the empty prefix) is the cite. No number opens with `0`, so no node follows that digit.
    let numbers: Vec<String> = tails.keys().map(usize::to_string).collect();
    let mut prefixes: Vec<&str> = numbers
        .iter()
        .flat_map(|num| (0..=num.len()).map(move |k| &num[..k]))
        .collect();
    prefixes.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    prefixes.dedup();
    let mut node: HashMap<&str, String> = HashMap::new();
    for prefix in prefixes {
        let mut alts = Vec::new();
        if let Some(tail) = prefix.parse::<usize>().ok().and_then(|k| tails.get(&k)) {
            alts.push(tail.clone());
        }
        for d in '0'..='9' {
            let child = format!("{prefix}{d}");
            if let Some(rule) = node.get(child.as_str()) {
                alts.push(format!("\"{d}\" {rule}"));
            }
        }
        let name = if prefix.is_empty() {
            format!("{stem}-cite")
        } else {
            format!("{stem}-n-{prefix}")
        };
        let rule = g.rule(&name, alts.join(" | "));
        node.insert(prefix, rule);
    }
    let cite = node.remove("")?;
    record_openings(g, &file.path, Shape::Markdown, lines.opens);
    Some(cite)
}

/// The excerpts of `file` in a JSON string: a run of at most `most` of its lines, each copied
/// whole and joined by JSON's escaped line end, opening on a line with a word; `None` when no
/// line can open one. A line longer than an excerpt line may be is never quoted and ends a run
/// before it. (The envelope's fenced excerpts are tied to their reference: [`tied_cites`].)
fn quoted_runs(g: &mut Writer, file: &Quotable, most: u32) -> Option<String> {
    let lines = Lines::new(g, file, Form::Json);
    let stem = format!("j-{}", file.path);
    // JSON's escaped line end, `\n` in the string's text.
    let join = "\"\\\\n\" ";
    let names = &lines.names;
    // run[d][i]: a run of at most d + 1 lines from line i; built from the last line back.
    let n = file.lines.len();
    let mut run: Vec<Vec<String>> = Vec::with_capacity(most as usize);
    for d in 0..most as usize {
        let mut row = vec![String::new(); n];
        for i in (0..n).filter(|&i| lines.ok(i)) {
            let next = if d == 0 || i + 1 == n || !lines.ok(i + 1) {
                None
            } else {
                Some(&run[d - 1][i + 1])
            };
            row[i] = match next {
                None => names[i].clone(),
                // The same continuation as one line shorter: the same run.
                Some(next) if d >= 2 && *next == run[d - 2][i + 1] => run[d - 1][i].clone(),
                Some(next) => g.rule(
                    &format!("{stem}-{}-run{}", i + 1, d + 1),
                    format!("{} ( {join}{next} )?", names[i]),
                ),
            };
        }
        run.push(row);
    }
    let longest = run.last()?;
    let starts: Vec<&str> = (0..n)
        .filter(|&i| lines.opens[i])
        .map(|i| longest[i].as_str())
        .collect();
    let excerpt = (!starts.is_empty()).then(|| starts.join(" | "));
    record_openings(g, &file.path, Shape::Json, lines.opens);
    excerpt.map(|e| g.rule(&format!("{stem}-excerpt"), e))
}

/// The numbers 1 to `n` (at least 1), written without leading zeros: those with fewer digits
/// than `n`, then for each digit of `n` the numbers that share its digits before it and have a
/// smaller one there, then `n`.
fn line_numbers(n: usize) -> String {
    let digits: Vec<u32> = n
        .max(1)
        .to_string()
        .chars()
        .filter_map(|c| c.to_digit(10))
        .collect();
    let d = digits.len();
    let mut alts = Vec::new();
    if d > 1 {
        alts.push(format!("[1-9] [0-9]{{0,{}}}", d - 2));
    }
    let any = |k: usize| {
        if k == 0 {
            String::new()
        } else {
            format!(" [0-9]{{{k}}}")
        }
    };
    for (i, &digit) in digits.iter().enumerate() {
        let low = u32::from(i == 0);
        if digit > low {
            let prefix: String = digits[..i].iter().map(|c| c.to_string()).collect();
            let prefix = if prefix.is_empty() {
                String::new()
            } else {
                format!("{} ", lit(&prefix))
            };
            alts.push(format!("{prefix}[{low}-{}]{}", digit - 1, any(d - i - 1)));
        }
    }
    alts.push(lit(&n.max(1).to_string()));
    alts.join(" | ")
}

/// One of `files` as a JSON string (quotes and escapes included): the body of a rule for a
/// JSON value that names one of them.
fn json_names<S: AsRef<str>>(files: &[S]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|f| lit(&Value::from(f.as_ref()).to_string()))
        .collect();
    names.join(" | ")
}

/// One of `files` (`cited::named_files`): the rule Evidence paths and `path` fields share.
fn named_path(g: &mut Writer, files: &[String]) -> String {
    let names: Vec<String> = files.iter().map(|f| lit(f)).collect();
    g.rule("named-path", names.join(" | "))
}

/// The textual delegation [`crate::model::textual`] parses: one call in a code block. With
/// `names` (the agents the caller may delegate to) the subagent is one of them, so a small model
/// cannot copy a placeholder such as `NAME` from its prompt; without, any well-formed name.
fn task_call_rules(g: &mut Writer, names: &[String]) -> String {
    string_rule(g);
    let text = g.rule("call-text", "\"\\\"\" char{1,400} \"\\\"\"");
    let name = if names.is_empty() {
        g.rule("subagent-name", "\"\\\"\" [a-z] [a-z0-9_-]{0,63} \"\\\"\"")
    } else {
        let alternatives: Vec<String> = names.iter().map(|n| lit(&format!("\"{n}\""))).collect();
        g.rule("subagent-name", alternatives.join(" | "))
    };
    g.rule(
        "task-call",
        format!(
            "\"```\\ntask({{ subagent_type: \" {name} \", description: \" {text} \", prompt: \" \
             {text} \" }})\\n```\\n\""
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;
    use serde_json::json;

    fn rc(contract: Contract) -> ResponseContract {
        ResponseContract {
            contract,
            message_id: "analyzer-2026-11-23-001".into(),
            correlation_id: "corr-1".into(),
            timestamp: "2026-11-23T12:00:00Z".into(),
        }
    }

    /// A request with no conversation and no tools, under `contract`.
    fn request_for(contract: Option<ResponseContract>) -> ModelRequest {
        ModelRequest {
            model: String::new(),
            agent: "reader".into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: contract,
        }
    }

    /// The rule names `grammar` uses but never defines (llama.cpp rejects such a grammar).
    fn undefined(grammar: &str) -> Vec<String> {
        let mut defined = std::collections::BTreeSet::new();
        let mut used = std::collections::BTreeSet::new();
        for line in grammar.lines() {
            let Some((name, body)) = line.split_once(" ::= ") else {
                continue;
            };
            defined.insert(name.to_string());
            let (mut quoted, mut class, mut escaped) = (false, false, false);
            let mut word = String::new();
            for c in body.chars().chain(std::iter::once(' ')) {
                if escaped {
                    escaped = false;
                    continue;
                }
                match c {
                    '\\' if quoted || class => escaped = true,
                    '"' if !class => quoted = !quoted,
                    '[' if !quoted => class = true,
                    ']' if class => class = false,
                    c if !quoted && !class && (c.is_ascii_alphanumeric() || c == '-') => {
                        word.push(c)
                    }
                    _ => {
                        if word.starts_with(|c: char| c.is_ascii_alphabetic()) {
                            used.insert(std::mem::take(&mut word));
                        }
                        word.clear();
                    }
                }
            }
        }
        used.difference(&defined).cloned().collect()
    }

    fn rule<'a>(grammar: &'a str, name: &str) -> &'a str {
        let prefix = format!("{name} ::= ");
        grammar
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no rule {name} in\n{grammar}"))
    }

    /// `name`'s rule as a regular expression, every rule it names written in: for acyclic
    /// parts of a grammar made of literals, rule names, groups, alternatives and `?`.
    fn expand(grammar: &str, name: &str) -> String {
        let body = rule(grammar, name);
        let mut out = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    let mut text = String::new();
                    while let Some(c) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => text.push(match chars.next() {
                                Some('n') => '\n',
                                Some('r') => '\r',
                                Some('t') => '\t',
                                Some(other) => other,
                                None => break,
                            }),
                            c => text.push(c),
                        }
                    }
                    out.push_str(&regex::escape(&text));
                }
                '(' => out.push_str("(?:"),
                ')' | '|' | '?' => out.push(c),
                ' ' => {}
                c if c.is_ascii_alphanumeric() => {
                    let mut word = String::from(c);
                    while let Some(&n) = chars.peek() {
                        if !(n.is_ascii_alphanumeric() || n == '-') {
                            break;
                        }
                        word.push(n);
                        chars.next();
                    }
                    out.push_str(&format!("(?:{})", expand(grammar, &word)));
                }
                other => panic!("`{other}` in {name} ::= {body}"),
            }
        }
        out
    }

    #[test]
    fn the_analyst_schema_becomes_an_object_with_required_keys_in_order() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["intent", "track", "required_sources", "missing_info_questions"],
            "properties": {
                "intent": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                "track": {"enum": ["FAST", "QUALITY"]},
                "required_sources": {"type": "array", "uniqueItems": true,
                    "items": {"enum": ["db", "doc"]}},
                "missing_info_questions": {"type": "array", "maxItems": 1,
                    "items": {"type": "string", "minLength": 5}},
                "note": {"type": "string"}
            },
            "allOf": [{"if": {"properties": {"track": {"const": "FAST"}}},
                       "then": {"properties": {"missing_info_questions": {"maxItems": 0}}}}]
        });
        let g = json_schema(&schema).unwrap();
        let root = rule(&g, "value");
        let i = root.find("intent").unwrap();
        let t = root.find("track").unwrap();
        let s = root.find("required_sources").unwrap();
        let n = root.find("note").unwrap();
        assert!(i < t && t < s && s < n, "{root}");
        // The optional `note` may be left out; the required ones may not.
        assert!(root.contains("( \",\" ws \"\\\"note\\\"\""), "{root}");
        assert_eq!(rule(&g, "track"), r#""\"FAST\"" | "\"QUALITY\"""#);
        assert_eq!(rule(&g, "intent"), r#""\"" [a-z] [a-z0-9_]{0,40} "\"""#);
        // Unique values of an enum: each value at most once, in the enum's order.
        assert_eq!(
            rule(&g, "required-sources"),
            r#""[" ws ( "\"db\"" ws required-sources-after-1 | "\"doc\"" ws )? "]""#
        );
        assert_eq!(
            rule(&g, "required-sources-after-1"),
            r#"( "," ws ( "\"doc\"" ws ) )?"#
        );
        // maxItems 1: the comma-separated tail never repeats; minLength 5 on the items.
        let q = rule(&g, "missing-info-questions");
        assert!(!q.contains("\",\""), "{q}");
        assert!(g.contains("first-char char{4,159}"), "{g}");
    }

    #[test]
    fn the_shipped_analyst_contract_compiles() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/analyst.md"),
        )
        .unwrap();
        let (front, _) = text[4..].split_once("\n---\n").unwrap();
        let front: Value = serde_saphyr::from_str(front).unwrap();
        let g = json_schema(&front["contract"]["schema"]).unwrap();
        for want in [
            "STATUS_METRIC",
            "neo4j",
            "\"v\" [0-9]",
            "expected_output_schema",
        ] {
            assert!(g.contains(want), "{want} missing in\n{g}");
        }
    }

    /// A budget no grammar here comes near.
    const LOOSE: u32 = 1_000_000;

    /// The grammar of `request` with no budget to fit and nothing cited; the request must be
    /// one that has a grammar.
    fn loose_grammar(request: &ModelRequest) -> String {
        for_request(request, None, LOOSE, &Cited::default())
            .unwrap()
            .unwrap()
    }

    fn shipped_contract(agent: &str) -> (Contract, Option<Value>) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let project = crate::project::Project::open(root).unwrap();
        let agents = crate::agent::load(&project, &crate::agent::LoadOptions::default());
        let a = agents.get(agent).unwrap();
        let c = a.contract.clone().unwrap();
        let schema = c.json.as_ref().map(|j| match &j.schema {
            crate::contract::schema::SchemaSource::Inline(v) => v.clone(),
            crate::contract::schema::SchemaSource::Path(p) => {
                crate::contract::schema::read_schema(&project, p).unwrap()
            }
        });
        (c, schema)
    }

    fn longest(grammar: &str) -> Option<u64> {
        let mut g = Gbnf::new();
        for line in grammar.lines() {
            let (name, body) = line.split_once(" ::= ").unwrap();
            g.rule(name, body);
        }
        g.max_chars("root")
    }

    /// The turn asking for a checkpoint is held to the checkpoint's schema, not the contract's.
    #[test]
    fn a_checkpoint_request_is_answered_with_the_checkpoint_s_json() {
        let (contract, schema) = shipped_contract("pipeline/planner");
        let mut request = request_for(Some(rc(contract)));
        let before = for_request(&request, schema.as_ref(), LOOSE, &Cited::default())
            .unwrap()
            .unwrap();
        assert!(before.contains("events"), "{before}");
        let ask = crate::runtime::checkpoint::request("token budget at 60 %");
        request.messages.push(crate::model::Message::user(ask));
        let g = for_request(&request, schema.as_ref(), LOOSE, &Cited::default())
            .unwrap()
            .unwrap();
        assert!(g.contains("next_steps") && !g.contains("events"), "{g}");
        assert!(undefined(&g).is_empty(), "{g}");
    }

    #[test]
    fn the_grammar_is_fitted_to_the_token_budget() {
        for agent in [
            "file-analyzer",
            "thoughts-analyzer",
            "codebase-analyzer",
            "analyst",
        ] {
            let (contract, schema) = shipped_contract(agent);
            let request = request_for(Some(rc(contract)));
            let loose = for_request(&request, schema.as_ref(), LOOSE, &Cited::default())
                .unwrap()
                .unwrap();
            let fitted = for_request(&request, schema.as_ref(), 1024, &Cited::default())
                .unwrap()
                .unwrap();
            let (loose, fitted) = (longest(&loose).unwrap(), longest(&fitted).unwrap());
            assert!(
                fitted <= 1024 * CHARS_PER_TOKEN && fitted <= loose,
                "{agent}: longest answer {fitted} characters (loose {loose})"
            );
        }
    }

    #[test]
    fn schemas_that_admit_nothing_are_refused_with_their_place() {
        let e = json_schema(&json!({"properties": {"a": {"enum": []}}, "required": ["a"]}))
            .unwrap_err();
        assert_eq!(e.pointer, "/properties/a");
        assert!(e.to_string().contains("empty `enum`"), "{e}");
        let e = json_schema(&json!({"type": "array", "minItems": 3, "maxItems": 1})).unwrap_err();
        assert!(e.reason.contains("maxItems 1"), "{e}");
        let e = json_schema(&json!({"type": "tuple"})).unwrap_err();
        assert!(e.reason.contains("unknown type `tuple`"), "{e}");
    }

    #[test]
    fn untranslatable_patterns_fall_back_to_any_string() {
        let g = json_schema(&json!({"type": "string", "pattern": "a(?=b)"})).unwrap();
        assert!(rule(&g, "value").contains("char{0,159}"), "{g}");
    }

    #[test]
    fn the_envelope_pins_the_hops_ids_and_the_contracts_fields() {
        let g = envelope(&rc(Contract::document_analysis()));
        let front = rule(&g, "frontmatter");
        assert!(front.contains(r#""analyzer-2026-11-23-001""#), "{front}");
        assert!(front.contains(r#""corr-1""#), "{front}");
        assert!(front.contains(r#""2026-11-23T12:00:00Z""#), "{front}");
        for key in ["source_document: ", "document_date: ", "reliability: "] {
            assert!(front.contains(key), "{key} in {front}");
        }
        assert_eq!(rule(&g, "message-type"), r#""DOCUMENT_ANALYSIS_RESPONSE""#);
        assert_eq!(
            rule(&g, "field-reliability"),
            r#""High" | "Medium" | "Low""#
        );
        let env = rule(&g, "envelope");
        assert_eq!(env.matches("<thinking>").count(), 1);
        assert_eq!(env.matches("<answer>").count(), 1);
        assert!(env.find("<thinking>") < env.find("<answer>"));
    }

    #[test]
    fn the_answer_holds_the_required_sections_signals_and_evidence_shapes() {
        let mut c = Contract::envelope();
        c.required_sections = vec!["Findings".into(), "Open questions".into()];
        c.signal_headings = vec!["Finding".into()];
        c.evidence = crate::contract::EvidencePolicy::Required;
        c.excerpt_max_lines = 6;
        let g = envelope(&rc(c));
        let answer = rule(&g, "answer-text");
        let f = answer.find(r####""### Findings\n""####).unwrap();
        let o = answer.find(r####""### Open questions\n""####).unwrap();
        assert!(f < o, "{answer}");
        // A signal item must carry its evidence (not optional) when evidence is required.
        let signal = rule(&g, "signal-item");
        assert!(signal.contains(r#""Finding""#), "{signal}");
        assert!(signal.ends_with(" evidence-item"), "{signal}");
        let evidence = rule(&g, "evidence-item");
        assert!(evidence.contains("**Evidence**: `"), "{g}");
        assert!(
            rule(&g, "evidence-cite").contains("excerpt-line{1,6}"),
            "{g}"
        );
        // Prose can open neither a fence, a heading nor a bold label.
        assert!(rule(&g, "prose-line").starts_with("[^<`#*"), "{g}");
        assert!(rule(&g, "thinking-text").contains("[^<`]"), "{g}");
    }

    #[test]
    fn the_answer_to_an_evidence_goal_ask_holds_the_goals_items() {
        let dir = tempfile::tempdir().unwrap();
        let doc = "# Parser\n\nWe parse YAML with serde-saphyr behind our own splitter.\n\
                   It never panics on malformed input from users.\n\
                   It reports the line and column of every error.\n";
        std::fs::write(dir.path().join("d.md"), doc).unwrap();
        let project = crate::project::Project::open(dir.path()).unwrap();
        let one =
            "#### Decision: serde-saphyr\n- **Evidence**: `d.md:3`\n- **Excerpt**:\n  ```\n  \
                   We parse YAML with serde-saphyr behind our own splitter.\n  ```\n";
        let heads = vec!["Decision".to_string()];
        let (_, note) =
            crate::runtime::evidence_goal::ask(one, 3, &heads, &project).expect("asked");
        let mut c = Contract::document_analysis();
        let mut request = request_for(Some(rc(c.clone())));
        request
            .messages
            .push(crate::model::Message::user("What did we decide?"));
        request
            .messages
            .push(crate::model::Message::assistant(one, Vec::new()));
        request.messages.push(crate::model::Message::user(&note));
        let g = loose_grammar(&request);
        assert!(undefined(&g).is_empty(), "{:?}", undefined(&g));
        // Three blocks that hold Evidence, prose allowed before each, then any blocks.
        let answer = rule(&g, "answer-text");
        assert!(
            answer.starts_with(
                r#"( ( prose-line "\n"? )? evidenced-block "\n"? ){3} ( answer-block"#
            ),
            "{answer}"
        );
        assert_eq!(rule(&g, "evidenced-block"), "evidence-item | signal-item");
        // The first turn, and a turn after any other message, hold one block at least.
        request.messages.pop();
        let g = loose_grammar(&request);
        assert!(rule(&g, "answer-text").starts_with("( answer-block"), "{g}");
        assert!(!g.contains("evidenced-block"), "{g}");
        // Optional evidence: a signal item counts only with its Evidence; the goal holds in
        // the first required section.
        c.evidence = crate::contract::EvidencePolicy::Optional;
        c.required_sections = vec!["Findings".into(), "Gaps".into()];
        let mut request = request_for(Some(rc(c)));
        request.messages.push(crate::model::Message::user(&note));
        let g = loose_grammar(&request);
        assert_eq!(
            rule(&g, "evidenced-block"),
            "evidence-item | signal-evidenced"
        );
        assert!(rule(&g, "signal-item").ends_with(" evidence-item?"), "{g}");
        let answer = rule(&g, "answer-text");
        let findings = answer.find("evidenced-block").unwrap();
        let gaps = answer.find(r####""### Gaps\n""####).unwrap();
        assert!(
            findings < gaps && answer.matches("evidenced-block").count() == 1,
            "{answer}"
        );
    }

    #[test]
    fn named_files_are_the_only_evidence_paths() {
        let request = request_for(Some(rc(Contract::envelope())));
        let cited = Cited {
            files: vec!["README.md".to_string(), "src/a \"b\".rs".to_string()],
            quotable: Vec::new(),
        };
        let g = for_request(&request, None, LOOSE, &cited).unwrap().unwrap();
        assert_eq!(rule(&g, "free-path"), r#""README.md" | "src/a \"b\".rs""#);
        assert!(
            rule(&g, "evidence-cite").starts_with("free-path evidence-lines "),
            "{g}"
        );
        assert!(!g.contains("evidence-path"), "{g}");
        let g = loose_grammar(&request);
        assert!(
            rule(&g, "evidence-path").starts_with("[A-Za-z0-9_.]"),
            "{g}"
        );
    }

    /// Under `named_paths: exist`, inline code holding a `/` is one of the named files; other
    /// inline code stays free, and without named files (or the check) prose is as before.
    #[test]
    fn listed_paths_are_named_files_when_the_contract_checks_them() {
        let mut c = Contract::envelope();
        c.named_paths = NamedPaths::Exist;
        let request = request_for(Some(rc(c)));
        let cited = Cited {
            files: vec!["thoughts/a.md".to_string(), "src/b.rs".to_string()],
            quotable: Vec::new(),
        };
        let g = for_request(&request, None, LOOSE, &cited).unwrap().unwrap();
        assert!(undefined(&g).is_empty(), "{:?}", undefined(&g));
        assert_eq!(rule(&g, "named-path"), r#""thoughts/a.md" | "src/b.rs""#);
        let code = rule(&g, "prose-code");
        assert!(
            code.contains("named-path") && code.contains("[^<`#*\\n/]{1,40}"),
            "{code}"
        );
        assert!(!g.contains("prose-char"), "{g}");
        assert!(rule(&g, "prose-line").contains("prose-code"), "{g}");
        let g = loose_grammar(&request);
        assert!(!g.contains("prose-code") && g.contains("prose-char"), "{g}");
        // Named files cut at the most a grammar spells out: the files past the cut stay
        // writable, so inline code is free again.
        let many = Cited {
            files: (0..NAMED_FILES_MAX)
                .map(|i| format!("src/f{i}.rs"))
                .collect(),
            quotable: Vec::new(),
        };
        let g = for_request(&request, None, LOOSE, &many).unwrap().unwrap();
        assert!(!g.contains("prose-code") && g.contains("prose-char"));
        let request = request_for(Some(rc(Contract::envelope())));
        let g = for_request(&request, None, LOOSE, &cited).unwrap().unwrap();
        assert!(!g.contains("prose-code") && g.contains("prose-char"), "{g}");
    }

    #[test]
    fn a_json_evidence_object_quotes_a_run_of_a_shown_files_lines() {
        let schema = serde_json::json!({
            "type": "object",
            "required": ["evidence"],
            "properties": {"evidence": {"type": "array", "items": {
                "type": "object",
                "required": ["fact", "path", "start", "end", "excerpt"],
                "properties": {
                    "fact": {"type": "string"},
                    "path": {"type": "string"},
                    "start": {"type": "integer", "minimum": 1},
                    "end": {"type": "integer", "minimum": 1},
                    "excerpt": {"type": "string", "minLength": 1}
                }
            }}}
        });
        let mut c = Contract::envelope();
        c.format = ContractFormat::Json;
        let request = request_for(Some(rc(c)));
        let cited = Cited {
            files: vec!["a.rs".into(), "b.rs".into()],
            quotable: vec![Quotable {
                path: "a.rs".into(),
                lines: vec![
                    "fn main() {".into(),
                    "    println!(\"hi\");".into(),
                    "}".into(),
                ],
            }],
        };
        let g = for_request(&request, Some(&schema), LOOSE, &cited)
            .unwrap()
            .unwrap();
        assert!(undefined(&g).is_empty(), "{:?}\n{g}", undefined(&g));
        // The quoted line is its JSON text; a run goes on with an escaped line end.
        assert_eq!(rule(&g, "j-a-rs-2"), r#""    println!(\\\"hi\\\");""#);
        assert_eq!(
            rule(&g, "j-a-rs-1-run2"),
            r#"j-a-rs-1 ( "\\n" j-a-rs-2-run1 )?"#.replace("-run1", "")
        );
        // The object for a.rs names it, takes its line numbers and its runs; b.rs keeps a
        // free excerpt.
        let alts: Vec<&str> = g
            .lines()
            .filter(|l| l.contains(r#""\"path\"" ws ":" ws"#))
            .collect();
        assert_eq!(alts.len(), 2, "{g}");
        let quoted = alts.iter().find(|l| l.contains(r#""\"a.rs\"""#)).unwrap();
        assert!(quoted.contains(r#"ws ":" ws j-a-rs-line"#), "{quoted}");
        assert!(quoted.contains(r#""\"" j-a-rs-excerpt "\"""#), "{quoted}");
        let free = alts.iter().find(|l| !l.contains("a.rs")).unwrap();
        assert!(free.contains("free-path"), "{free}");
        assert!(g.contains(r#"::= "\"b.rs\"""#), "{g}");
        // No string holds the shapes' placeholder `…`.
        assert!(rule(&g, "char").starts_with("[^\"\\\\\\x00-\\x1F…]"), "{g}");
        // Without a file to quote, the object is as the schema says.
        let g = for_request(&request, Some(&schema), LOOSE, &Cited::default())
            .unwrap()
            .unwrap();
        assert!(!g.contains("j-"), "{g}");
    }

    /// A string the runtime checks is a project file is one of the files the conversation
    /// named: the 1.5B planner filled its `scope` with `...` and a made-up folder. With none
    /// named it is a free string, and no free string opens on a dot.
    #[test]
    fn a_project_file_string_is_one_of_the_named_files() {
        let key = crate::model::PROJECT_FILE_KEYWORD;
        let schema = serde_json::json!({
            "type": "object",
            "required": ["primary", "note"],
            "properties": {
                "primary": {"type": "array", "minItems": 1,
                            "items": {"type": "string", key: true}},
                "note": {"type": "string", "minLength": 3}}
        });
        let mut c = Contract::envelope();
        c.format = ContractFormat::Json;
        let request = request_for(Some(rc(c)));
        let cited = Cited {
            files: vec!["src/cli/run.rs".to_string(), "src/a \"b\".rs".to_string()],
            quotable: Vec::new(),
        };
        let g = for_request(&request, Some(&schema), LOOSE, &cited)
            .unwrap()
            .unwrap();
        assert_eq!(
            rule(&g, "project-file"),
            r#""\"src/cli/run.rs\"" | "\"src/a \\\"b\\\".rs\"""#
        );
        assert!(undefined(&g).is_empty(), "{:?}\n{g}", undefined(&g));
        assert!(rule(&g, "primary").contains("project-file"), "{g}");
        assert!(
            rule(&g, "note").starts_with(r#""\"" first-char char{2,"#),
            "{g}"
        );
        assert!(
            rule(&g, "first-char").starts_with("[^\"\\\\\\x00-\\x1F….]"),
            "{g}"
        );
        let g = for_request(&request, Some(&schema), LOOSE, &Cited::default())
            .unwrap()
            .unwrap();
        assert!(!g.contains("project-file"), "{g}");
    }

    #[test]
    fn the_turn_after_the_report_now_note_writes_the_report_with_its_items() {
        let findings = vec![
            "### The parser\n- **Evidence**: `a.md:3`\n- **Excerpt**:\n```\nWe parse YAML.\n```"
                .to_string(),
        ];
        let mut request = request_for(None);
        let note = crate::runtime::deliver::report_now(&findings);
        request.messages.push(crate::model::Message::tool(
            "t1",
            format!("answer\n\n[runtime] {note}"),
            false,
        ));
        let g = loose_grammar(&request);
        assert!(undefined(&g).is_empty(), "{:?}", undefined(&g));
        let report = rule(&g, "report");
        assert!(
            report.starts_with(r###""## Question\n\n" report-line"###),
            "{report}"
        );
        assert!(
            report.contains(r####""\n## Findings\n\n" "### The parser\n- **Evidence**: `a.md:3`\n- **Excerpt**:\n```\nWe parse YAML.\n```\n""####),
            "{report}"
        );
        assert!(report.ends_with("report-open{1,2} )?"), "{report}");
        assert!(rule(&g, "report-open").contains("{0,160}"), "{g}");
        // An open question cannot be written as an Evidence item (`- **Evidence**: none`).
        assert!(
            rule(&g, "report-open").starts_with(r#""- " [^#`<\n \t*]"#),
            "{g}"
        );
        // Without the note, a turn with no contract and no tools is free.
        request.messages.pop();
        assert_eq!(
            for_request(&request, None, LOOSE, &Cited::default()).unwrap(),
            None
        );
    }

    #[test]
    fn line_numbers_run_from_one_to_the_files_last_line() {
        for n in [1, 7, 9, 10, 19, 60, 99, 100, 347, 1000, 1500] {
            // The GBNF expression read as a regular expression: its literals are digits only.
            let gbnf = line_numbers(n);
            let re = format!("^(?:{})$", gbnf.replace(['"', ' '], ""));
            let re = regex::Regex::new(&re).unwrap();
            for k in 0..=n + 12 {
                let admitted = re.is_match(&k.to_string());
                assert_eq!(admitted, (1..=n).contains(&k), "n={n} k={k}: {gbnf}");
            }
            assert!(!re.is_match("07"), "{gbnf}");
        }
    }

    #[test]
    fn an_excerpt_of_a_quotable_file_is_the_run_its_reference_names_copied_whole() {
        let mut c = Contract::document_analysis();
        c.excerpt_max_lines = 2;
        let request = request_for(Some(rc(c)));
        let lines = ["# Title", "", "say \"yes\"", "```", "after the fence", "},"];
        let cited = Cited {
            files: vec!["d.md".into(), "other.md".into()],
            quotable: vec![Quotable {
                path: "d.md".into(),
                lines: lines.iter().map(|l| l.to_string()).collect(),
            }],
        };
        let g = for_request(&request, None, LOOSE, &cited).unwrap().unwrap();
        assert!(undefined(&g).is_empty(), "{:?}", undefined(&g));
        // Each line is its own literal with its line end; the fence line is none.
        assert_eq!(rule(&g, "q-d-md-1"), r##""# Title\n""##);
        assert_eq!(rule(&g, "q-d-md-3"), r#""say \"yes\"\n""#);
        assert!(!g.contains("q-d-md-4 ::="), "{g}");
        // The reference and the excerpt are tied: the number names the lines, which follow
        // copied whole. A range runs at most two lines here, stops before the fence, and may
        // run on into `},` (no word: it opens none), as blank lines open none.
        let cite = expand(&g, "q-d-md-cite");
        let re = regex::Regex::new(&format!("^(?:{cite})$")).unwrap();
        let item =
            |reference: &str, lines: &str| format!("{reference}`\n- **Excerpt**:\n```\n{lines}");
        for (reference, lines) in [
            ("1", "# Title\n"),
            ("1-1", "# Title\n"),
            ("1-2", "# Title\n\n"),
            ("3", "say \"yes\"\n"),
            ("5-6", "after the fence\n},\n"),
        ] {
            assert!(re.is_match(&item(reference, lines)), "{reference}: {cite}");
        }
        for (reference, lines) in [
            ("1", "say \"yes\"\n"),
            ("3", "# Title\n"),
            ("2", "\n"),
            ("6", "},\n"),
            ("3-4", "say \"yes\"\n```\n"),
            ("1-3", "# Title\n\nsay \"yes\"\n"),
            ("1-2", "# Title\n"),
            ("7", "# Title\n"),
        ] {
            assert!(!re.is_match(&item(reference, lines)), "{reference}: {cite}");
        }
        // The sampler's guards are told the same openings.
        let (_, openings) = with_openings(&request, None, LOOSE, &cited)
            .unwrap()
            .unwrap();
        assert_eq!(
            openings,
            [Opening {
                path: "d.md".into(),
                shape: Shape::Markdown,
                lines: vec![true, false, true, false, true, false],
            }]
        );
        // The quotable file takes only its tied references; the other named file a free
        // reference and excerpt.
        let cite = rule(&g, "evidence-cite");
        assert!(
            cite.starts_with(
                r#""d.md" ":" q-d-md-cite | free-path evidence-lines excerpt-line{1,2}"#
            ),
            "{cite}"
        );
        assert_eq!(rule(&g, "free-path"), r#""other.md""#);
        // With every named file quotable there is no free excerpt at all.
        let only = Cited {
            files: vec!["d.md".into()],
            quotable: cited.quotable.clone(),
        };
        let g = for_request(&request, None, LOOSE, &only).unwrap().unwrap();
        assert!(!rule(&g, "evidence-cite").contains("excerpt-line"), "{g}");
    }

    #[test]
    fn without_allocated_ids_the_envelope_uses_the_id_patterns() {
        let mut r = rc(Contract::document_analysis());
        r.message_id.clear();
        r.correlation_id.clear();
        r.timestamp.clear();
        let g = envelope(&r);
        assert!(
            rule(&g, "message-id").starts_with(r#""thoughts" "-" date"#),
            "{g}"
        );
        assert!(
            rule(&g, "correlation-id").contains("[A-Za-z0-9._:-]"),
            "{g}"
        );
    }

    #[test]
    fn a_request_that_may_delegate_admits_the_task_call() {
        let mut request = request_for(Some(rc(Contract::envelope())));
        let without = loose_grammar(&request);
        assert_eq!(rule(&without, "root"), "envelope");
        request.tools.push(crate::model::ToolSpec {
            name: TASK_TOOL.into(),
            description: String::new(),
            parameters: json!({}),
        });
        let with = loose_grammar(&request);
        assert_eq!(rule(&with, "root"), "envelope | tool-call");
        assert_eq!(rule(&with, "tool-call"), "task-call");
        assert!(
            rule(&with, "task-call").contains("task({ subagent_type: "),
            "{with}"
        );
        // The call the grammar admits is one textual.rs reads.
        let call = "```\ntask({ subagent_type: \"finder\", description: \"find\", prompt: \"find x\" })\n```\n";
        let calls = crate::model::textual::parse_task_calls(call);
        assert_eq!(calls[0].arguments["subagent_type"], "finder");
        request.response_contract = None;
        let primary = loose_grammar(&request);
        assert_eq!(rule(&primary, "root"), "tool-call | free-answer");
        // Tools held back (`tool_choice: none`) are no call to write.
        request.tool_choice = ToolChoice::None;
        assert_eq!(
            for_request(&request, None, LOOSE, &Cited::default()).unwrap(),
            None,
            "tools only described: nothing to constrain"
        );
        request.tool_choice = ToolChoice::Auto;
        request.tools.clear();
        assert_eq!(
            for_request(&request, None, LOOSE, &Cited::default()).unwrap(),
            None,
            "nothing to constrain"
        );
    }

    #[test]
    fn every_offered_tool_is_a_fenced_json_call_and_a_required_call_is_the_only_root() {
        let mut request = request_for(Some(rc(Contract::envelope())));
        request.tools = ["grep", "read"]
            .iter()
            .map(|t| crate::tools::spec(t).unwrap())
            .collect();
        let g = loose_grammar(&request);
        assert_eq!(rule(&g, "root"), "envelope | tool-call");
        assert_eq!(rule(&g, "tool-call"), "call-grep | call-read");
        let grep = rule(&g, "call-grep");
        assert!(
            grep.starts_with(r#""```json\n{\"name\": \"grep\", \"arguments\": ""#),
            "{grep}"
        );
        assert!(grep.ends_with(r#""}\n```\n""#), "{grep}");
        // The arguments follow the tool's schema: `pattern` is required.
        assert!(g.contains(r#""\"pattern\"""#), "{g}");
        // The call the grammar admits is one the textual reader takes, and nothing else.
        let text = "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"yaml\"}}\n```\n";
        let calls = crate::model::textual::TextualTools::calls_in_answer(&request, text);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].name, "grep");
        assert_eq!(calls[0].arguments["pattern"], "yaml");
        assert!(calls[0].id.starts_with("text_call_t1"), "{calls:?}");
        assert!(undefined(&g).is_empty(), "{:?}\n{g}", undefined(&g));
        request.tool_choice = ToolChoice::Required;
        let g = loose_grammar(&request);
        assert!(undefined(&g).is_empty(), "{:?}\n{g}", undefined(&g));
        assert_eq!(rule(&g, "root"), "tool-call");
        request.response_contract = None;
        let g = loose_grammar(&request);
        assert_eq!(rule(&g, "root"), "tool-call");
    }

    #[test]
    fn a_tool_schema_the_grammar_cannot_write_takes_any_object() {
        let mut request = request_for(None);
        request.tools.push(crate::model::ToolSpec {
            name: "mcp_thing".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"x": {"type": "frob"}}}),
        });
        let g = loose_grammar(&request);
        assert_eq!(rule(&g, "root"), "tool-call | free-answer");
        assert!(rule(&g, "call-mcp-thing").contains("arguments"), "{g}");
        assert!(undefined(&g).is_empty(), "{:?}\n{g}", undefined(&g));
    }

    #[test]
    fn a_narrowed_task_tool_limits_the_call_to_the_callable_agents() {
        let mut specs = vec![crate::tools::spec("task").unwrap()];
        crate::tools::narrow_task(&mut specs, &["finder".into(), "reader".into()]);
        let request = ModelRequest {
            model: "m".into(),
            agent: "lead".into(),
            system: String::new(),
            messages: Vec::new(),
            tools: specs,
            tool_choice: Default::default(),
            temperature: None,
            top_p: None,
            max_tokens: None,
            response_contract: None,
        };
        let g = loose_grammar(&request);
        assert_eq!(
            rule(&g, "subagent-name"),
            r#""\"finder\"" | "\"reader\"""#,
            "{g}"
        );
    }
}
