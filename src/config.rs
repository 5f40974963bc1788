//! `switchboard.toml`: project-wide settings, today the model choice.
//!
//! ```toml
//! [model]
//! default = "offline/default"
//!
//! [agents.thoughts-analyzer]
//! model = "anthropic/claude-haiku-4-5"
//!
//! [aliases]
//! sonnet = "anthropic/claude-sonnet-4-5"
//!
//! [providers.anthropic]   # free-form; read by the provider itself
//! api_key_env = "ANTHROPIC_API_KEY"
//!
//! [telemetry]             # OpenTelemetry export of every session (docs/telemetry.md)
//! otlp_endpoint = "http://127.0.0.1:4318"
//! ```
//!
//! A missing file means defaults; a file that does not parse is an error located at file:line:col,
//! never silently ignored.

use serde::Deserialize;
use std::collections::BTreeMap;

pub mod foreign_mcp;
pub mod foreign_tools;

use crate::markdown::LineIndex;
use crate::problem::{Problem, Severity};
use crate::project::Project;

/// The model used when neither the command line, the agent nor the config names one.
pub const BUILTIN_DEFAULT_MODEL: &str = "offline/default";
/// The config file name, at the project root.
pub const CONFIG_FILE: &str = "switchboard.toml";

/// Claude's short names, used when the project config does not define them in `[aliases]`.
/// They live here, with the rest of name resolution, so config needs nothing from `model`.
pub const BUILTIN_ALIASES: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
    ("opus", "anthropic/claude-opus-4-1"),
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentSection>,
    /// Short model names (`sonnet`) → `provider/model`.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// Provider settings, kept as free tables so providers own their own keys.
    #[serde(default)]
    pub providers: BTreeMap<String, toml::Table>,
    /// What `webfetch` may reach and how much it reads (docs/webfetch.md).
    #[serde(default)]
    pub webfetch: WebfetchSection,
    /// The search endpoint behind `websearch`; without one the tool is not offered.
    #[serde(default)]
    pub websearch: WebsearchSection,
    /// MCP servers whose tools agents may be granted as `NAME_tool` (docs/mcp.md).
    #[serde(default)]
    pub mcp: BTreeMap<String, McpServerSection>,
    /// Where session traces go (docs/telemetry.md); absent means no export unless `--otel`.
    #[serde(default)]
    pub telemetry: TelemetrySection,
    /// Limits of `analyze_file` and `switchboard knowledge` (docs/knowledge.md).
    #[serde(default)]
    pub knowledge: KnowledgeSection,
    /// Warnings about other tools' files read for MCP servers (`config/foreign-mcp`); lint
    /// reports them.
    #[serde(skip)]
    pub problems: Vec<Problem>,
}

impl McpServerSection {
    /// Whether the server is to be started (declared and not `enabled = false`).
    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }
}

/// `[knowledge]`: how big a file `analyze_file` reads and how big a chunk the analyzer gets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeSection {
    /// Largest file analysed, in bytes (default 4 MiB); a larger one is refused with a tool error.
    pub max_file_bytes: Option<u64>,
    /// The analyzer model's context size in tokens (default 8192); chunks are budgeted from it.
    pub context_tokens: Option<usize>,
    /// `PROVIDER/MODEL` of an OpenAI-compatible embeddings endpoint. When set, a new note whose
    /// vector is close to a stored note's reinforces it; unset, text similarity alone decides.
    pub embeddings: Option<String>,
    /// Cosine similarity at or above which two notes' vectors count as the same note
    /// (default 0.9).
    pub embeddings_threshold: Option<f64>,
}

/// `[telemetry]`: an OTLP/HTTP collector (`http://127.0.0.1:4318`) every `run` exports to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    pub otlp_endpoint: Option<String>,
}

/// `[mcp.NAME]`: one MCP server, started as a child process (`command`) or reached over
/// streamable HTTP (`url`); exactly one of the two. Servers declared in opencode.json or
/// .mcp.json become sections too ([`foreign_mcp`]). `${VAR}` in `command`, `args`, `env`, `url`
/// and `headers` is expanded from the environment when the server starts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// Program to start; it speaks MCP on stdin/stdout.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the child (the rest is inherited).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP endpoint (`http://127.0.0.1:3001/mcp`).
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url` (`Authorization = "Bearer ${TOKEN}"`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `false` keeps the server declared (grants of its tools are not unknown) but never started.
    pub enabled: Option<bool>,
    /// Claude Code's `"type": "sse"`: the legacy SSE transport, which switchboard's client does
    /// not speak; such a server is declared but fails to start with a message saying so.
    #[serde(skip)]
    pub sse: bool,
    /// The file that declared the server when it is not switchboard.toml (for messages).
    #[serde(skip)]
    pub source: Option<String>,
    /// Seconds to wait for the server to start and list its tools, and for one tool call
    /// (default 10 and 60).
    pub startup_timeout_secs: Option<f64>,
    pub call_timeout_secs: Option<f64>,
}

/// `[webfetch]`: by default only public addresses are fetched; these open named exceptions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebfetchSection {
    /// Host names or IP literals fetched whatever they resolve to (`localhost`, `127.0.0.1`).
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Networks fetched although not public (`10.20.0.0/16`).
    #[serde(default)]
    pub allow_networks: Vec<ipnet::IpNet>,
    /// Whole-request time limit in seconds (default 30).
    pub timeout_secs: Option<f64>,
    /// Most bytes of a body read (default 5 MiB); a longer body is cut and the result says so.
    pub max_bytes: Option<usize>,
    /// Most redirects followed (default 5); each one is checked like the first request.
    pub max_redirects: Option<usize>,
}

/// `[websearch]`: a SearXNG instance's base URL (its JSON format enabled).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebsearchSection {
    pub searxng_url: Option<String>,
    /// Results per search (default 8).
    pub max_results: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub default: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    pub model: Option<String>,
}

/// The stable code of every config problem (lint reports it under the same code).
pub const INVALID: &str = "config/invalid";

/// A config file that could not be read or parsed, located at file:line:col (line 0 when the
/// file could not be read at all). Displays as `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{}:{}: {}", .0.file, .0.line, .0.column, .0.message)]
pub struct Error(pub Box<Problem>);

impl Error {
    fn new(file: &str, line: usize, column: usize, message: impl Into<String>) -> Self {
        Error(Box::new(
            Problem::new(Severity::Error, INVALID, file, message).at(line, column),
        ))
    }

    /// The problem, to report beside others (lint does).
    pub fn into_problem(self) -> Problem {
        *self.0
    }
}

impl Config {
    /// Loads `switchboard.toml` from the project root (absent means defaults), then adds the
    /// MCP servers opencode.json and .mcp.json declare under names switchboard.toml leaves free.
    pub fn load(project: &Project) -> Result<Self, Error> {
        let path = project.root().join(CONFIG_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, CONFIG_FILE)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(e) => return Err(Error::new(CONFIG_FILE, 0, 0, e.to_string())),
        };
        let declared = foreign_mcp::load(project);
        for (name, section) in declared.servers {
            config.mcp.entry(name).or_insert(section);
        }
        config.problems = declared.problems;
        Ok(config)
    }

    /// The names of every MCP server the project declares, enabled or not. A switchboard.toml
    /// that does not parse still leaves the other files' servers (its error is reported
    /// elsewhere).
    pub fn mcp_server_names(project: &Project) -> Vec<String> {
        match Self::load(project) {
            Ok(config) => config.mcp.into_keys().collect(),
            Err(_) => foreign_mcp::load(project).servers.into_keys().collect(),
        }
    }

    /// Every tool name the project declares beyond switchboard's own: its MCP servers' names
    /// (which grant their tools) and opencode's custom tools. What agent loading needs to tell a
    /// declared name granted in `tools:` from a typo (`agent/unknown-tool`).
    pub fn declared_tool_names(project: &Project) -> Vec<String> {
        let mut names = Self::mcp_server_names(project);
        names.extend(foreign_tools::opencode_custom_tools(project));
        names.sort();
        names.dedup();
        names
    }

    /// Parses config text; `file` only names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, Error> {
        let index = LineIndex::new(text);
        let config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| index.line_col(text, s.start))
                .unwrap_or((0, 0));
            Error::new(file, line, column, e.message())
        })?;
        for (name, server) in &config.mcp {
            if server.command.is_some() == server.url.is_some() {
                // Point at the section's header when it is written as one.
                let header = format!("[mcp.{name}]");
                let (line, column) = text
                    .find(&header)
                    .map_or((0, 0), |offset| index.line_col(text, offset));
                return Err(Error::new(
                    file,
                    line,
                    column,
                    format!(
                        "[mcp.{name}] needs exactly one of `command` (a program speaking MCP on \
                         stdio) and `url` (a streamable HTTP endpoint)"
                    ),
                ));
            }
        }
        Ok(config)
    }

    /// The model the config names for `agent`, else its default.
    pub fn model_for(&self, agent: &str) -> Option<&str> {
        self.agents
            .get(agent)
            .and_then(|a| a.model.as_deref())
            .or(self.model.default.as_deref())
    }

    /// Expands an alias (`sonnet`) to `provider/model`: `[aliases]` first, then Claude's
    /// built-in short names (`sonnet`, `haiku`, `opus`); other names come back unchanged.
    pub fn expand_alias<'a>(&'a self, name: &'a str) -> &'a str {
        if let Some(target) = self.aliases.get(name) {
            return target;
        }
        BUILTIN_ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, target)| target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sections_and_aliases() {
        let c = Config::parse(
            "[model]\ndefault = \"offline/default\"\n[agents.a]\nmodel = \"sonnet\"\n\
             [aliases]\nsonnet = \"anthropic/claude-sonnet-4-5\"\n[providers.openai]\nbase_url = \"x\"\n",
            CONFIG_FILE,
        )
        .unwrap();
        assert_eq!(c.model_for("a"), Some("sonnet"));
        assert_eq!(c.model_for("b"), Some("offline/default"));
        assert_eq!(c.expand_alias("sonnet"), "anthropic/claude-sonnet-4-5");
        assert!(c.providers.contains_key("openai"));
    }

    #[test]
    fn mcp_sections_parse_and_typos_are_located() {
        let c = Config::parse(
            "[mcp.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = { A = \"1\" }\n\
             [mcp.web]\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { Authorization = \"Bearer ${T}\" }\n\
             enabled = false\n",
            CONFIG_FILE,
        )
        .unwrap();
        assert_eq!(c.mcp["fs"].command.as_deref(), Some("npx"));
        assert_eq!(c.mcp["fs"].args, vec!["-y", "x"]);
        assert_eq!(c.mcp["web"].url.as_deref(), Some("http://127.0.0.1:1/mcp"));
        // Placeholders stay as written until the server starts.
        assert_eq!(c.mcp["web"].headers["Authorization"], "Bearer ${T}");
        assert!(!c.mcp["web"].is_enabled() && c.mcp["fs"].is_enabled());
        let e = Config::parse("[mcp.fs]\ncommand = \"x\"\nargz = []\n", CONFIG_FILE).unwrap_err();
        assert_eq!((e.0.line, e.0.column), (3, 1), "{e}");
        let e = Config::parse(
            "[model]\n[mcp.both]\ncommand = \"x\"\nurl = \"y\"\n",
            CONFIG_FILE,
        )
        .unwrap_err();
        assert_eq!((e.0.line, e.0.column), (2, 1), "{e}");
        assert!(e.0.message.contains("exactly one of `command`"), "{e}");
        assert!(Config::parse("[mcp.none]\nargs = []\n", CONFIG_FILE).is_err());
    }

    #[test]
    fn errors_are_located() {
        let e = Config::parse("[model]\ndefault = \n", CONFIG_FILE).unwrap_err();
        assert_eq!(e.0.line, 2, "{e}");
        assert_eq!(e.0.code, INVALID);
        let e = Config::parse("[modle]\n", CONFIG_FILE).unwrap_err();
        assert_eq!((e.0.line, e.0.column), (1, 2), "{e}");
        assert!(e.to_string().starts_with("switchboard.toml:1:2: "), "{e}");
    }

    #[test]
    fn telemetry_section_names_an_endpoint_and_refuses_unknown_keys() {
        let c = Config::parse(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
            CONFIG_FILE,
        )
        .unwrap();
        assert_eq!(
            c.telemetry.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert_eq!(Config::default().telemetry.otlp_endpoint, None);
        let err = Config::parse("[telemetry]\nendpoint = \"x\"\n", CONFIG_FILE).unwrap_err();
        assert_eq!((err.0.line, err.0.column), (2, 1), "{err}");
        assert!(err.0.message.contains("unknown field `endpoint`"), "{err}");
    }
}
