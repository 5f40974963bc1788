//! One file → one agent (or a skip, or errors), with every problem located in the file.

use super::definition::{
    Agent, RawFrontmatter, ReadFirst, FOREIGN_KEYS, KNOWN_KEYS, METADATA_KEYS,
};
use super::frontmatter::{self, SplitError};
use super::grants::ToolGrants;
use super::permission::Permission;
use super::references;
use super::render;
use crate::contract::Contract;
use crate::problem::{nearest, Problem, Severity};

/// What became of one file.
#[derive(Debug, Clone)]
pub enum Outcome {
    Loaded(Box<Agent>),
    /// Not an agent file (no frontmatter); the reason says so.
    Skipped(String),
    /// Could not be loaded; the diagnostics say why.
    Failed,
}

/// The result of parsing one file: its outcome and every problem seen on the way.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub outcome: Outcome,
    pub diagnostics: Vec<Problem>,
}

/// Parses `text` (the content of `file`, a root-relative path) as an agent named `name`, in a
/// project that declares no MCP server.
pub fn parse(text: &str, file: &str, name: &str) -> Parsed {
    parse_with(text, file, name, &[])
}

/// [`parse`] in a project that declares the tool names `servers` (its MCP servers and opencode
/// custom tools, `Config::declared_tool_names`): a grant of one (`context7: true`) is then no
/// unknown tool.
pub fn parse_with(text: &str, file: &str, name: &str, servers: &[String]) -> Parsed {
    let mut diags = Vec::new();
    let split = match frontmatter::split(text) {
        Ok(s) => s,
        Err(SplitError::Missing) => {
            return Parsed {
                outcome: Outcome::Skipped("no frontmatter (not an agent definition)".into()),
                diagnostics: diags,
            }
        }
        Err(e @ SplitError::Unclosed { line }) => {
            diags.push(
                Problem::new(
                    Severity::Error,
                    "agent/frontmatter-unclosed",
                    file,
                    e.to_string(),
                )
                .at_line_of(text, line, 1)
                .with_help("add a line with `---` after the last frontmatter key"),
            );
            return failed(diags);
        }
    };
    let yaml = &text[split.yaml.clone()];
    let line_offset = split.yaml_line - 1;

    let raw = match deserialize(yaml) {
        Ok(raw) => raw,
        Err(err) => match tolerate_unquoted_colons(yaml) {
            Some((fixed, lines)) if deserialize(&fixed).is_ok() => {
                for l in lines {
                    diags.push(
                        Problem::new(
                            Severity::Warning,
                            "agent/unquoted-colon",
                            file,
                            "value contains `: ` but is not quoted; strict YAML rejects this line",
                        )
                        .at_line_of(text, l + line_offset, 1)
                        .with_help("wrap the value in double quotes"),
                    );
                }
                deserialize(&fixed).unwrap_or_default()
            }
            _ => {
                let (line, col) = err
                    .location()
                    .map(|l| (l.line() as usize, l.column() as usize))
                    .unwrap_or((1, 1));
                if let Some((message, line, col, help)) =
                    super::shape::explain(yaml, &top_level_keys(yaml), line)
                {
                    diags.push(
                        Problem::new(Severity::Error, "agent/yaml", file, message)
                            .at_line_of(text, line + line_offset, col)
                            .with_help(help),
                    );
                    return failed(diags);
                }
                let (message, help) = match budget_breach(&err) {
                    Some(words) => words,
                    None => (
                        format!("invalid frontmatter: {}", yaml_message(&err)),
                        "fix the YAML; quote values that contain `: `, `#` or start with `*`, `&`, `[` or `{`".to_string(),
                    ),
                };
                diags.push(
                    Problem::new(Severity::Error, "agent/yaml", file, message)
                        .at_line_of(text, line + line_offset, col)
                        .with_help(help),
                );
                return failed(diags);
            }
        },
    };

    check_keys(yaml, text, file, line_offset, &mut diags);

    let Some(description) = raw.description.as_ref().map(|d| d.value.trim().to_string()) else {
        diags.push(
            Problem::new(
                Severity::Error,
                "agent/missing-description",
                file,
                "`description` is required",
            )
            .at_line_of(text, split.yaml_line.saturating_sub(1).max(1), 1)
            .with_help("add `description: \"what this agent does and when to use it\"`"),
        );
        return failed(diags);
    };
    if description.is_empty() {
        let l = raw
            .description
            .as_ref()
            .map_or(1, |d| d.referenced.line() as usize);
        diags.push(
            Problem::new(
                Severity::Error,
                "agent/missing-description",
                file,
                "`description` is empty",
            )
            .at_line_of(text, l + line_offset, 1),
        );
        return failed(diags);
    }

    let mut agent_name = name.to_string();
    if let Some(n) = &raw.name {
        if n.value != name {
            diags.push(
                Problem::new(
                    Severity::Warning,
                    "agent/name-mismatch",
                    file,
                    format!(
                        "frontmatter name `{}` differs from the file name `{name}`; `{}` is used",
                        n.value, n.value
                    ),
                )
                .at_line_of(
                    text,
                    n.referenced.line() as usize + line_offset,
                    n.referenced.column() as usize,
                )
                .with_help("rename the file or drop the `name` key so the two agree"),
            );
            agent_name = n.value.clone();
        }
    }

    let tools = raw
        .tools
        .as_ref()
        .map(|t| ToolGrants::from_decl(&t.value))
        .unwrap_or_default();
    if let Some(t) = &raw.tools {
        for unknown in tools.unknown_names(servers) {
            diags.push(
                Problem::new(
                    Severity::Warning,
                    "agent/unknown-tool",
                    file,
                    format!("unknown tool `{unknown}`"),
                )
                .at_line_of(text, t.referenced.line() as usize + line_offset, 1)
                .with_help(
                    match nearest(unknown, super::grants::BUILTIN_TOOLS.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "switchboard provides: {}; an MCP server's name grants its tools once \
                             the server is declared ([mcp.NAME] in switchboard.toml, `mcp` in \
                             opencode.json or `mcpServers` in .mcp.json)",
                            super::grants::BUILTIN_TOOLS.join(", ")
                        ),
                    },
                ),
            );
        }
    }

    let contract = match &raw.contract {
        None => None,
        Some(decl) => match Contract::resolve(&decl.value) {
            Ok(c) => Some(c),
            Err(e) => {
                diags.push(
                    Problem::new(
                        Severity::Error,
                        "agent/contract",
                        file,
                        format!("invalid contract: {e}"),
                    )
                    .at_line_of(
                        text,
                        decl.referenced.line() as usize + line_offset,
                        decl.referenced.column() as usize,
                    ),
                );
                return failed(diags);
            }
        },
    };

    let gate = match &raw.gate {
        None => None,
        Some(decl) => match super::gate::settle(&decl.value, line_offset) {
            Ok(g) => Some(g),
            Err(e) => {
                diags.push(
                    Problem::new(Severity::Error, "agent/gate", file, e.message)
                        .at_line_of(text, e.line, e.col)
                        .with_help(e.help),
                );
                return failed(diags);
            }
        },
    };

    // A key that does nothing for this agent (it lacks the grant the key works through): a
    // warning at the key, with what to do.
    let no_effect = |line: u64, column: u64, code: &'static str, message: &str, help: &str| {
        Problem::new(Severity::Warning, code, file, message)
            .at_line_of(text, line as usize + line_offset, column as usize)
            .with_help(help)
    };

    // A `KEY: VALUE` setting the runtime acts on with one tool, set on an agent without it;
    // `set` is where the value is written.
    let ungranted =
        |set: Option<&serde_saphyr::Location>, key: &str, tool: &str, code: &'static str| {
            set.filter(|_| !tools.allows(tool)).map(|at| {
                no_effect(
                    at.line(),
                    at.column(),
                    code,
                    &format!("`{key}` has no effect: the agent is not granted `{tool}`"),
                    &format!("grant `{tool}` in `tools:`, or remove `{key}`"),
                )
            })
        };

    let read_first = raw.read_first.as_ref().map_or(ReadFirst::None, |r| r.value);
    if let (Some(r), false) = (
        &raw.read_first,
        read_first.is_none() || tools.allows("read"),
    ) {
        diags.push(no_effect(
            r.referenced.line(),
            r.referenced.column(),
            "agent/read-first",
            "`read_first: named` has no effect: the agent is not granted `read`",
            "grant `read` in `tools:`, or remove `read_first`",
        ));
    }

    let tool_choice = raw
        .tool_choice
        .as_ref()
        .map_or_else(Default::default, |t| t.value);
    if let (Some(t), true) = (
        &raw.tool_choice,
        tool_choice == crate::model::ToolChoice::Required
            && tools.granted_builtins().is_empty()
            && !tools.rules.iter().any(|r| r.allow),
    ) {
        diags.push(no_effect(
            t.referenced.line(),
            t.referenced.column(),
            "agent/tool-choice",
            "`tool_choice: required` has no effect: the agent is granted no tool",
            "grant the tools it must call in `tools:`, or remove `tool_choice`",
        ));
    }

    let search_first = raw
        .search_first
        .as_ref()
        .map(|s| s.value.trim().trim_end_matches('/').to_string())
        .filter(|s| !s.is_empty());
    diags.extend(ungranted(
        raw.search_first.as_ref().map(|s| &s.referenced),
        "search_first",
        "grep",
        "agent/search-first",
    ));

    let mut delegate_first: Vec<String> = Vec::new();
    for name in raw.delegate_first.iter().flat_map(|s| &s.value.0) {
        let name = name.trim();
        if !name.is_empty() && !delegate_first.iter().any(|n| n == name) {
            delegate_first.push(name.to_string());
        }
    }
    diags.extend(ungranted(
        raw.delegate_first.as_ref().map(|s| &s.referenced),
        "delegate_first",
        "task",
        "agent/delegate-first",
    ));
    let analyze_found = raw.analyze_found.as_ref().is_some_and(|s| s.value);
    if let (Some(set), true) = (&raw.analyze_found, analyze_found) {
        let missing = if delegate_first.is_empty() {
            Some("`delegate_first:`, whose answers it analyzes")
        } else if raw.gate.is_none() {
            Some("`gate:`, whose plan names the analyzers")
        } else {
            None
        };
        if let Some(missing) = missing {
            let at = &set.referenced;
            diags.push(no_effect(
                at.line(),
                at.column(),
                "agent/analyze-found",
                &format!("`analyze_found` has no effect: the agent has no {missing}"),
                "declare `delegate_first:` and `gate:`, or remove `analyze_found`",
            ));
        }
    }

    let deliver = match &raw.deliver {
        None => None,
        Some(decl) => match super::deliver::Deliver::settle(&decl.value) {
            Ok(d) => Some(d),
            Err(message) => {
                diags.push(
                    Problem::new(Severity::Error, "agent/deliver", file, message)
                        .at_line_of(
                            text,
                            decl.referenced.line() as usize + line_offset,
                            decl.referenced.column() as usize,
                        )
                        .with_help(
                            "write it as `deliver: {write: \"thoughts/shared/research/*.md\", evidence: 3}`",
                        ),
                );
                return failed(diags);
            }
        },
    };

    let body = text[split.body.clone()].to_string();
    let (body_is_template, unknown_variables) = match render::parse_check(&body) {
        Ok(vars) => (true, vars),
        Err(e) => {
            let line = e
                .line()
                .map_or(split.body_line, |l| l + split.body_line - 1);
            diags.push(
                Problem::new(
                    Severity::Warning,
                    "agent/template",
                    file,
                    format!("body is not a valid template ({}); it is used as plain text", e.kind()),
                )
                .at_line_of(text, line, 1)
                .with_help("wrap literal `{{` or `{%` in `{% raw %}…{% endraw %}` to use template variables"),
            );
            (false, Vec::new())
        }
    };
    let mode = raw.mode.as_ref().map(|m| m.value).unwrap_or_default();
    let permission = raw.permission.unwrap_or_else(Permission::default);
    let tools_is_map = matches!(
        raw.tools.as_ref().map(|t| &t.value),
        Some(super::grants::ToolsDecl::Map(_))
    );
    let references = if references::are_delegations(mode, &tools, tools_is_map, &permission) {
        references::extract(&body, split.body_line)
    } else {
        Vec::new()
    };

    let agent = Agent {
        name: agent_name,
        description,
        mode,
        model_line: raw
            .model
            .as_ref()
            .map_or(0, |m| m.referenced.line() as usize + line_offset),
        model: raw.model.map(|m| m.value),
        temperature: raw.temperature,
        top_p: raw.top_p,
        tools_line: raw
            .tools
            .as_ref()
            .map_or(0, |t| t.referenced.line() as usize + line_offset),
        max_tokens: raw.max_tokens,
        tools,
        permission,
        steps: raw.steps,
        disable: raw.disable.unwrap_or(false),
        hidden: raw.hidden.unwrap_or(false),
        color: raw.color,
        contract_decl: raw.contract.map(|c| c.value),
        contract,
        budget: raw.budget.map(Into::into).unwrap_or_default(),
        gate,
        validator: raw.validator.filter(|v| !v.trim().is_empty()),
        workflow: raw.workflow,
        deliver,
        read_first,
        tool_choice,
        search_first,
        delegate_first,
        analyze_found,
        evidence_goal: raw.evidence_goal.filter(|&n| n > 0),
        file: file.to_string(),
        body,
        body_line: split.body_line,
        body_is_template,
        unknown_variables,
        references,
    };
    Parsed {
        outcome: Outcome::Loaded(Box::new(agent)),
        diagnostics: diags,
    }
}

fn failed(diagnostics: Vec<Problem>) -> Parsed {
    Parsed {
        outcome: Outcome::Failed,
        diagnostics,
    }
}

fn deserialize(yaml: &str) -> Result<RawFrontmatter, serde_saphyr::Error> {
    if yaml.trim().is_empty() {
        return Ok(RawFrontmatter::default());
    }
    crate::yaml::from_str(yaml)
}

/// A YAML safety limit the frontmatter ran into, said in words: what was refused and why, and
/// what to change (serde-saphyr's own text is `budget breached: Nodes { nodes: 250001 }`).
fn budget_breach(err: &serde_saphyr::Error) -> Option<(String, String)> {
    use serde_saphyr::budget::{Budget, BudgetBreach as B};
    // Unwrap the snippet and alias-location wrappers down to the error itself.
    let mut err = err;
    while let serde_saphyr::Error::WithSnippet { error, .. }
    | serde_saphyr::Error::AliasError { error, .. } = err
    {
        err = error;
    }
    let serde_saphyr::Error::Budget { breach, .. } = err else {
        return None;
    };
    let limits = Budget::default();
    let multiply = "remove the anchors (`&name`) and aliases (`*name`) that repeat each other; an \
                    agent's frontmatter needs neither"
        .to_string();
    let words = match breach {
        B::Nodes { .. } => (
            format!(
                "the frontmatter expands to more than {} YAML nodes (aliases that repeat aliases \
                 — a \"billion laughs\" document); refused to protect memory",
                thousands(limits.max_nodes)
            ),
            multiply,
        ),
        B::Aliases { .. } | B::AliasAnchorRatio { .. } | B::RecordedAnchorEvents { .. } => (
            "the frontmatter uses aliases (`*name`) far more than any agent definition needs \
             (the shape of a \"billion laughs\" document); refused to protect memory"
                .to_string(),
            multiply,
        ),
        B::Depth { .. } => (
            format!(
                "the frontmatter nests lists and maps more than {} levels deep; refused to \
                 protect the parser",
                limits.max_depth
            ),
            "flatten the nesting; agent settings are at most a few levels deep".to_string(),
        ),
        other => (
            format!("the frontmatter exceeds a YAML safety limit ({other:?}); refused"),
            "shorten the frontmatter; agent settings are a few dozen short keys".to_string(),
        ),
    };
    Some(words)
}

/// `250000` as `250,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// serde-saphyr's message without its own snippet (we print the line ourselves).
fn yaml_message(err: &serde_saphyr::Error) -> String {
    let msg = err.without_snippet().to_string();
    let first = msg.lines().next().unwrap_or("").trim();
    // Drop a trailing " at line X column Y": the diagnostic carries the position.
    match first.find(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

/// Top-level keys as `(key, 0-based line)`, read from block-style YAML.
fn top_level_keys(yaml: &str) -> Vec<(&str, usize)> {
    yaml.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let first = line.chars().next()?;
            if first.is_whitespace() || first == '#' || first == '-' {
                return None;
            }
            let colon = line.find(':')?;
            let key = line[..colon].trim().trim_matches(|c| c == '"' || c == '\'');
            let valid = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            valid.then_some((key, i))
        })
        .collect()
}

fn check_keys(yaml: &str, text: &str, file: &str, line_offset: usize, diags: &mut Vec<Problem>) {
    for (key, i) in top_level_keys(yaml) {
        if KNOWN_KEYS.contains(&key) || METADATA_KEYS.contains(&key) {
            continue;
        }
        let line = i + 1 + line_offset;
        let d = if FOREIGN_KEYS.contains(&key) {
            Problem::new(
                Severity::Note,
                "agent/foreign-key",
                file,
                format!("`{key}` belongs to another runtime and is ignored by switchboard"),
            )
        } else {
            let d = Problem::new(
                Severity::Warning,
                "agent/unknown-key",
                file,
                format!("unknown key `{key}`"),
            );
            match nearest(key, KNOWN_KEYS.iter().copied()) {
                Some(s) => d.with_help(format!("did you mean `{s}`?")),
                None => d.with_help(format!("known keys: {}", KNOWN_KEYS.join(", "))),
            }
        };
        diags.push(d.at_line_of(text, line, 1));
    }
}

/// Quotes top-level plain scalars that hold `: ` (as other runtimes tolerate), returning the
/// rewritten YAML and the 1-based lines changed. Line count is unchanged, so positions hold.
fn tolerate_unquoted_colons(yaml: &str) -> Option<(String, Vec<usize>)> {
    let mut changed = Vec::new();
    let mut out = String::with_capacity(yaml.len() + 16);
    for (i, line) in yaml.split_inclusive('\n').enumerate() {
        let (content, ending) = match line.strip_suffix("\r\n") {
            Some(c) => (c, "\r\n"),
            None => match line.strip_suffix('\n') {
                Some(c) => (c, "\n"),
                None => (line, ""),
            },
        };
        let fixed = top_level_keys(content).first().and_then(|(key, _)| {
            let colon = content.find(':')?;
            let value = content[colon + 1..].trim();
            let plain = !value.is_empty()
                && !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!']);
            (plain && value.contains(": ")).then(|| {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                format!("{key}: \"{escaped}\"")
            })
        });
        match fixed {
            Some(f) => {
                changed.push(i + 1);
                out.push_str(&f);
            }
            None => out.push_str(content),
        }
        out.push_str(ending);
    }
    (!changed.is_empty()).then_some((out, changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::SchemaSource;

    /// `search_first` and `delegate_first` each need one tool; set without it they warn, at
    /// their line, with the same words.
    #[test]
    fn a_first_step_without_its_tool_warns() {
        for (key, value, tool, code) in [
            ("search_first", "src", "grep", "agent/search-first"),
            (
                "delegate_first",
                "codebase-locator",
                "task",
                "agent/delegate-first",
            ),
        ] {
            let text = format!(
                "---\ndescription: d\ntools: {{{tool}: false}}\n{key}: {value}\n---\nbody\n"
            );
            let warned = parse(&text, "agent/a.md", "a").diagnostics;
            let d = warned
                .iter()
                .find(|d| d.code == code)
                .unwrap_or_else(|| panic!("{key}: {warned:?}"));
            assert_eq!(d.line, 4, "{d:?}");
            assert_eq!(
                d.message,
                format!("`{key}` has no effect: the agent is not granted `{tool}`")
            );
            let granted = text.replace(&format!("{{{tool}: false}}"), &format!("{{{tool}: true}}"));
            assert_ne!(granted, text);
            let quiet = parse(&granted, "agent/a.md", "a").diagnostics;
            assert!(!quiet.iter().any(|d| d.code == code), "{key}: {quiet:?}");
        }
    }

    /// A contract schema may name properties `on`, `n` or `yes` and list `yes`/`no` as values:
    /// YAML 1.2 reads them as strings (`crate::yaml`). Read the YAML 1.1 way, the agent did not
    /// load at all ("did not match any variant of untagged enum SchemaSource").
    #[test]
    fn a_schema_with_yaml_1_1_boolean_words_loads_as_written() {
        let text = "---\ndescription: d\ncontract:\n  name: c\n  format: json\n  schema:\n    \
                    type: object\n    required: [on, n]\n    properties:\n      on: {type: integer}\n      \
                    n: {enum: [yes, no]}\n---\nbody\n";
        let parsed = parse(text, "agent/a.md", "a");
        let Outcome::Loaded(agent) = parsed.outcome else {
            panic!("did not load: {:?}", parsed.diagnostics);
        };
        let json = agent
            .contract
            .and_then(|c| c.json)
            .expect("a JSON contract");
        let SchemaSource::Inline(schema) = json.schema else {
            panic!("an inline schema");
        };
        assert_eq!(schema["required"], serde_json::json!(["on", "n"]));
        assert_eq!(
            schema["properties"]["n"]["enum"],
            serde_json::json!(["yes", "no"])
        );
    }

    /// `delegate_first:` is one name or a list; blanks and repeats go, the order stays.
    #[test]
    fn delegate_first_takes_one_name_or_a_list() {
        let names = |value: &str| {
            let text = format!("---\ndescription: d\ndelegate_first: {value}\n---\nbody\n");
            let parsed = parse(&text, "agent/a.md", "a");
            assert!(
                parsed
                    .diagnostics
                    .iter()
                    .all(|d| d.severity != Severity::Error),
                "{value}: {:?}",
                parsed.diagnostics
            );
            match parsed.outcome {
                Outcome::Loaded(agent) => agent.delegate_first,
                other => panic!("{value}: {other:?}"),
            }
        };
        assert_eq!(names("finder"), ["finder"]);
        assert_eq!(names("[finder, seeker, finder, ' ']"), ["finder", "seeker"]);
        assert!(names("[]").is_empty());
        let text = "---\ndescription: d\ndelegate_first: {a: b}\n---\nbody\n";
        let parsed = parse(text, "agent/a.md", "a");
        assert!(
            parsed
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error && d.line == 3),
            "{:?}",
            parsed.diagnostics
        );
    }

    /// `analyze_found: true` needs `delegate_first:` (whose answers it analyzes) and `gate:`
    /// (whose plan names the readers); missing either, it warns at its line and stays off.
    #[test]
    fn analyze_found_without_a_first_delegation_or_a_gate_warns() {
        let first = "delegate_first: finder\n";
        let gate = "gate: {plan: analyst, sources: {doc: [finder]}}\n";
        for (lines, missing) in [
            (String::new(), Some("`delegate_first:`")),
            (first.to_string(), Some("`gate:`")),
            (format!("{first}{gate}"), None),
        ] {
            let text = format!(
                "---\ndescription: d\ntools: {{task: true}}\n{lines}analyze_found: true\n---\nbody\n"
            );
            let parsed = parse(&text, "agent/a.md", "a");
            let warned = parsed
                .diagnostics
                .iter()
                .find(|d| d.code == "agent/analyze-found");
            let Outcome::Loaded(agent) = parsed.outcome else {
                panic!("{text}: {:?}", parsed.diagnostics);
            };
            assert!(agent.analyze_found, "{text}");
            match (warned, missing) {
                (Some(d), Some(missing)) => {
                    assert_eq!(d.line, 4 + lines.lines().count(), "{d:?}");
                    assert!(d.message.contains(missing), "{d:?}");
                }
                (None, None) => {}
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
