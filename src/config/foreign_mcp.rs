//! MCP servers that other tools' project files declare: opencode's `opencode.json` (key `mcp`)
//! and Claude Code's `.mcp.json` (key `mcpServers`).
//!
//! Agent files written for those tools grant these servers' tools (`context7: true`); without
//! the declarations switchboard called every such grant an unknown tool (76 warnings in
//! scameronde/rpi-qpi, #28 item 6) and could not start the servers. Each entry becomes an
//! [`McpServerSection`], exactly what `[mcp.NAME]` in switchboard.toml gives, so lint, the
//! runtime and `agents --tools` need no second path. `switchboard.toml` wins over these files
//! for one name (the project's own config is the deliberate one); among them, the first file in
//! [`FILES`] wins. `${VAR}` in values is kept as written here and expanded when the server is
//! started (`crate::mcp::client`), so secrets never sit in the config, its events or its errors.
//!
//! A file that does not parse, or an entry of a shape neither tool defines, is a
//! `config/foreign-mcp` warning and is skipped: these files belong to other tools, and one of
//! their mistakes must not stop a switchboard run.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::McpServerSection;
use crate::markdown::LineIndex;
use crate::problem::{Problem, Severity};
use crate::project::Project;

/// The files read, relative to the project root, first one winning for a name.
pub const FILES: &[&str] = &[
    "opencode.json",
    "opencode.jsonc",
    ".opencode/opencode.json",
    ".opencode/opencode.jsonc",
    ".mcp.json",
];

/// The code of every problem this module reports.
pub const CODE: &str = "config/foreign-mcp";

/// The servers the files declare, by name, and what could not be read.
#[derive(Debug, Default)]
pub struct Declared {
    pub servers: BTreeMap<String, McpServerSection>,
    pub problems: Vec<Problem>,
}

/// Reads every file of [`FILES`] that exists under `project`.
pub fn load(project: &Project) -> Declared {
    let mut out = Declared::default();
    for file in FILES {
        let path = project.root().join(file);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.problems.push(Problem::new(
                    Severity::Warning,
                    CODE,
                    *file,
                    format!("cannot read: {e}; its MCP servers are not used"),
                ));
                continue;
            }
        };
        let (servers, problems) = parse(&text, file);
        out.problems.extend(problems);
        for (name, section) in servers {
            out.servers.entry(name).or_insert(section);
        }
    }
    out
}

/// The servers `text` (the content of `file`, one of [`FILES`]) declares, in file order.
pub fn parse(text: &str, file: &str) -> (Vec<(String, McpServerSection)>, Vec<Problem>) {
    let mut problems = Vec::new();
    let index = LineIndex::new(text);
    let warn = |message: String, needle: Option<&str>| {
        let d = Problem::new(Severity::Warning, CODE, file, message).with_help(
            "fix the entry (see docs/mcp.md, \"Servers other tools declare\"), or declare the \
             server in switchboard.toml as [mcp.NAME], which wins",
        );
        match needle.and_then(|n| text.find(&format!("\"{n}\""))) {
            Some(offset) => {
                let (line, column) = index.line_col(text, offset);
                d.at_line_of(text, line, column)
            }
            None => d,
        }
    };
    let value: Value = match serde_json::from_str(&strip_jsonc(text)) {
        Ok(v) => v,
        Err(e) => {
            problems.push(
                warn(
                    format!("not valid JSON: {e}; its MCP servers are not used"),
                    None,
                )
                .at_line_of(text, e.line().max(1), e.column().max(1)),
            );
            return (Vec::new(), problems);
        }
    };
    let claude = file.ends_with(".mcp.json");
    let key = if claude { "mcpServers" } else { "mcp" };
    let Some(entries) = value.get(key) else {
        return (Vec::new(), problems);
    };
    let Some(mut entries) = entries.as_object() else {
        problems.push(warn(format!("`{key}` is not an object"), Some(key)));
        return (Vec::new(), problems);
    };
    // opencode's newer layout nests the servers one level down: `mcp: {servers: {...}}`.
    if !claude {
        // (A v1 server that happens to be called `servers` has a `type`.)
        if let Some(nested) = entries.get("servers").and_then(Value::as_object) {
            if !nested.contains_key("type") {
                entries = nested;
            }
        }
    }
    let mut servers = Vec::new();
    for (name, entry) in entries {
        let parsed = match entry.as_object() {
            None => Err("is not an object".to_string()),
            Some(o) if claude => claude_entry(o),
            Some(o) => opencode_entry(o),
        };
        match parsed {
            Ok(mut section) => {
                section.source = Some(file.to_string());
                servers.push((name.clone(), section));
            }
            Err(why) => problems.push(warn(
                format!("MCP server `{name}` {why}; it is not used"),
                Some(name),
            )),
        }
    }
    (servers, problems)
}

/// One opencode entry: `{type: "local", command: [..], environment}` or
/// `{type: "remote", url, headers}`; `enabled: false` (or the newer `disabled: true`) keeps it
/// declared but not started; `timeout` is in milliseconds.
fn opencode_entry(o: &Map<String, Value>) -> Result<McpServerSection, String> {
    let mut s = McpServerSection::default();
    match o.get("type").and_then(Value::as_str) {
        Some("local") => {
            let parts = strings(o.get("command"), "`command`")?;
            let (first, rest) = parts.split_first().ok_or("has an empty `command` array")?;
            s.command = Some(first.clone());
            s.args = rest.to_vec();
            s.env = string_map(o.get("environment"), "`environment`")?;
        }
        Some("remote") => {
            s.url = Some(string(o.get("url"), "`url`")?);
            s.headers = string_map(o.get("headers"), "`headers`")?;
        }
        Some(other) => return Err(format!("has `type: {other}`, not `local` or `remote`")),
        None => return Err("has no `type` (`local` or `remote`)".into()),
    }
    let off = o.get("enabled").and_then(Value::as_bool) == Some(false)
        || o.get("disabled").and_then(Value::as_bool) == Some(true);
    s.enabled = off.then_some(false);
    if let Some(ms) = o.get("timeout").and_then(Value::as_f64) {
        s.startup_timeout_secs = Some(ms / 1000.0);
    }
    Ok(s)
}

/// One Claude Code entry: `{command, args, env}` (`type` absent or `stdio`) or
/// `{type: "http" | "sse", url, headers}`.
fn claude_entry(o: &Map<String, Value>) -> Result<McpServerSection, String> {
    let mut s = McpServerSection::default();
    match o.get("type").and_then(Value::as_str) {
        None | Some("stdio") => {
            s.command = Some(string(o.get("command"), "`command`")?);
            s.args = match o.get("args") {
                None => Vec::new(),
                some => strings(some, "`args`")?,
            };
            s.env = string_map(o.get("env"), "`env`")?;
        }
        Some(kind @ ("http" | "sse")) => {
            s.url = Some(string(o.get("url"), "`url`")?);
            s.headers = string_map(o.get("headers"), "`headers`")?;
            s.sse = kind == "sse";
        }
        Some(other) => return Err(format!("has `type: {other}`, not `stdio`, `http` or `sse`")),
    }
    Ok(s)
}

fn string(v: Option<&Value>, what: &str) -> Result<String, String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(format!("has a {what} that is not a non-empty string")),
        None => Err(format!("has no {what}")),
    }
}

fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    let bad = || format!("has a {what} that is not a list of strings");
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(bad))
            .collect(),
        Some(_) => Err(bad()),
        None => Err(format!("has no {what}")),
    }
}

fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, String> {
    let bad = || format!("has {what} that are not an object of strings");
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or_else(bad)?.to_string())))
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// JSONC (opencode accepts `//` and `/* */` comments and trailing commas) as plain JSON, with
/// every removed character replaced by a space so line and column numbers stay those of the file.
fn strip_jsonc(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            // A string, escapes included, is copied as it is.
            out.push(c);
            i += 1;
            while i < chars.len() {
                out.push(chars[i]);
                if chars[i] == '\\' && i + 1 < chars.len() {
                    out.push(chars[i + 1]);
                    i += 2;
                    continue;
                }
                i += 1;
                if chars[i - 1] == '"' {
                    break;
                }
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            out.push(' ');
            out.push(' ');
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                out.push(blank(chars[i]));
                i += 1;
            }
            if i < chars.len() {
                out.push(' ');
                out.push(' ');
                i += 2;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    // A comma followed (after white space) by `}` or `]` is a trailing comma.
    let mut k = 0;
    while k < out.len() {
        if out[k] == ',' {
            let next = out[k + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                out[k] = ' ';
            }
        }
        k += 1;
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENCODE: &str = r#"{
  "$schema": "https://opencode.ai/config.json",
  // a comment, as opencode.jsonc allows
  "mcp": {
    "context7": {
      "type": "remote",
      "url": "https://mcp.context7.com/mcp",
      "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
    },
    "sequential-thinking": {
      "type": "local",
      "command": ["npx", "-y", "@modelcontextprotocol/server-sequential-thinking"],
      "environment": {"LOG": "quiet"},
      "timeout": 2500
    },
    "off": {"type": "local", "command": ["x"], "enabled": false},
    "broken": {"type": "pipe", "command": ["x"]}
  }
}"#;

    #[test]
    fn opencode_local_and_remote_entries_become_sections() {
        let (servers, problems) = parse(OPENCODE, "opencode.jsonc");
        let by: BTreeMap<_, _> = servers.into_iter().collect();
        let c7 = &by["context7"];
        assert_eq!(c7.url.as_deref(), Some("https://mcp.context7.com/mcp"));
        assert_eq!(c7.headers["CONTEXT7_API_KEY"], "${CONTEXT7_API_KEY}");
        assert_eq!(c7.source.as_deref(), Some("opencode.jsonc"));
        let st = &by["sequential-thinking"];
        assert_eq!(st.command.as_deref(), Some("npx"));
        assert_eq!(
            st.args,
            vec!["-y", "@modelcontextprotocol/server-sequential-thinking"]
        );
        assert_eq!(st.env["LOG"], "quiet");
        assert_eq!(st.startup_timeout_secs, Some(2.5));
        assert_eq!(by["off"].enabled, Some(false));
        assert!(!by.contains_key("broken"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].code, CODE);
        assert!(problems[0].message.contains("`broken`"), "{problems:?}");
        assert_eq!(problems[0].line, 17, "{problems:?}");
    }

    #[test]
    fn claude_code_entries_become_sections() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "fs-server"], "env": {"ROOT": "."}},
            "web": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "https://x.example/sse"},
            "bad": {"type": "http"}
        }}"#;
        let (servers, problems) = parse(text, ".mcp.json");
        let by: BTreeMap<_, _> = servers.into_iter().collect();
        assert_eq!(by["fs"].command.as_deref(), Some("npx"));
        assert_eq!(by["fs"].args, vec!["-y", "fs-server"]);
        assert_eq!(by["fs"].env["ROOT"], ".");
        assert_eq!(by["web"].headers["Authorization"], "Bearer ${TOKEN}");
        assert!(!by["web"].sse && by["old"].sse);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("`bad` has no `url`"),
            "{problems:?}"
        );
    }

    #[test]
    fn the_newer_nested_layout_and_bad_json_are_handled() {
        let text = r#"{"mcp": {"servers": {"s": {"type": "local", "command": ["a", "b"], "disabled": true}}}}"#;
        let (servers, problems) = parse(text, "opencode.json");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(servers[0].0, "s");
        assert_eq!(servers[0].1.enabled, Some(false));
        let (servers, problems) = parse("{\n  \"mcp\": {\"a\" 1}\n}", "opencode.json");
        assert!(servers.is_empty());
        assert_eq!(
            (problems[0].line, problems[0].severity),
            (2, Severity::Warning)
        );
        // No `mcp` key: nothing, and nothing to report.
        assert_eq!(parse("{\"model\": \"x\"}", "opencode.json").0.len(), 0);
    }

    #[test]
    fn jsonc_keeps_strings_and_positions() {
        let text = "{\"a\": \"// not a comment\", /* c\n */ \"b\": [1,],}";
        let plain = strip_jsonc(text);
        assert_eq!(plain.len(), text.len());
        let v: Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v["a"], "// not a comment");
        assert_eq!(v["b"], serde_json::json!([1]));
        assert_eq!(plain.lines().count(), 2);
    }
}
