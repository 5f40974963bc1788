//! Per-agent tool grants: opencode's `tools:` map and Claude Code's tool list, normalised to one
//! model. (The tools themselves live in `crate::tools`; this file only says who may use which.)
//!
//! opencode writes `tools: {read: true, "web*": false}` (glob keys, everything else allowed);
//! Claude Code writes `tools: Read, Grep` or a list (only those allowed). Both become an ordered
//! rule list with a default, so the runtime asks one question: `allows("grep")`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The tools switchboard itself provides.
/// `websearch` is among them but is offered only when a search endpoint is configured.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read",
    "list",
    "glob",
    "grep",
    "write",
    "task",
    "webfetch",
    "websearch",
    "analyze_file",
    "recall",
];

/// Tools that reach outside the machine. They are granted only by a rule that names them (exactly
/// or by a glob such as `web*`), never by a map's default or a bare `*`: an agent folder written
/// before switchboard had these tools must not gain network access by upgrading.
pub const NETWORK_TOOLS: &[&str] = &["webfetch", "websearch"];

/// Tools that keep knowledge across sessions (`.switchboard/knowledge.db`). Like
/// [`NETWORK_TOOLS`] they need a rule that names them, so existing agent folders are offered
/// exactly the tools they were offered before these existed.
pub const KNOWLEDGE_TOOLS: &[&str] = &["analyze_file", "recall"];

/// Tool names other runtimes provide; accepted in grants (so their agent files load unchanged)
/// but not provided here.
pub const FOREIGN_TOOLS: &[&str] = &[
    "bash",
    "edit",
    "patch",
    "multiedit",
    "todowrite",
    "todoread",
    "notebookedit",
    "notebookread",
    "lsp",
    "skill",
];

/// `tools:` as written.
///
/// Deserialized by looking at the value's shape once (not `#[serde(untagged)]`, which buffers the
/// value and retries each variant: a fifth of load time over 1,000 files, and vaguer errors).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolsDecl {
    /// opencode: tool (or glob) → enabled.
    Map(BTreeMap<String, bool>),
    /// Claude Code: `Read, Grep, Glob`.
    Csv(String),
    /// Claude Code: `[Read, Grep]`.
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for ToolsDecl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ToolsDecl;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a map of tool to true/false, a comma-separated string, or a list of tools",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ToolsDecl, E> {
                Ok(ToolsDecl::Csv(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<ToolsDecl, A::Error> {
                Deserialize::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(ToolsDecl::List)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ToolsDecl, A::Error> {
                Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ToolsDecl::Map)
            }
        }
        d.deserialize_any(V)
    }
}

/// One grant rule: a tool name or glob, and whether it is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolRule {
    pub pattern: String,
    pub allow: bool,
}

/// The normalised grants of one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolGrants {
    /// What a tool no rule names gets.
    pub default_allow: bool,
    pub rules: Vec<ToolRule>,
}

impl Default for ToolGrants {
    /// No `tools:` key: every tool, as in both opencode and Claude Code.
    fn default() -> Self {
        ToolGrants {
            default_allow: true,
            rules: Vec::new(),
        }
    }
}

/// Maps Claude Code's capitalised names onto ours (`LS` → `list`, `Read` → `read`).
pub fn canonical_tool_name(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    match lower.as_str() {
        "ls" => "list".to_string(),
        "agent" => "task".to_string(),
        _ => lower,
    }
}

impl ToolGrants {
    pub fn from_decl(decl: &ToolsDecl) -> Self {
        match decl {
            ToolsDecl::Map(map) => ToolGrants {
                default_allow: true,
                rules: map
                    .iter()
                    .map(|(k, v)| ToolRule {
                        pattern: canonical_tool_name(k),
                        allow: *v,
                    })
                    .collect(),
            },
            ToolsDecl::Csv(s) => Self::only(s.split(',')),
            ToolsDecl::List(list) => Self::only(list.iter().map(String::as_str)),
        }
    }

    fn only<'a>(names: impl Iterator<Item = &'a str>) -> Self {
        ToolGrants {
            default_allow: false,
            rules: names
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| ToolRule {
                    pattern: canonical_tool_name(n),
                    allow: true,
                })
                .collect(),
        }
    }

    /// Whether `tool` is granted. An exact rule beats a glob; among globs the longest (most
    /// specific) pattern wins, so `{"*": false, read: true}` means "only read".
    /// [`NETWORK_TOOLS`] and [`KNOWLEDGE_TOOLS`] need a rule that names them.
    pub fn allows(&self, tool: &str) -> bool {
        let tool = canonical_tool_name(tool);
        if let Some(rule) = self.rules.iter().find(|r| r.pattern == tool) {
            return rule.allow;
        }
        let network =
            NETWORK_TOOLS.contains(&tool.as_str()) || KNOWLEDGE_TOOLS.contains(&tool.as_str());
        self.rules
            .iter()
            .filter(|r| !(network && r.pattern == "*"))
            .filter(|r| glob_matches(&r.pattern, &tool))
            .max_by_key(|r| r.pattern.len())
            .map_or(self.default_allow && !network, |r| r.allow)
    }

    /// Whether tool `tool` of MCP server `server` is granted. Like [`NETWORK_TOOLS`], MCP tools
    /// need a rule that names them: `server_tool` or `mcp__server__tool` (opencode's and Claude
    /// Code's spellings), exactly or by a glob such as `server_*`; a bare `*` or a map's default
    /// never grants them, so configuring a server gives no agent its tools by accident.
    /// The server's own name (`context7: true`, opencode's way of granting a server; or Claude
    /// Code's `mcp__context7`) grants or refuses every tool of it. The most specific rule
    /// decides: the tool's exact name, then the server's name, then the longest glob.
    pub fn allows_mcp(&self, server: &str, tool: &str) -> bool {
        let names = [
            canonical_tool_name(&format!("{server}_{tool}")),
            canonical_tool_name(&format!("mcp__{server}__{tool}")),
        ];
        if let Some(rule) = self.rules.iter().find(|r| names.contains(&r.pattern)) {
            return rule.allow;
        }
        let servers = [
            canonical_tool_name(server),
            canonical_tool_name(&format!("mcp__{server}")),
        ];
        if let Some(rule) = self.rules.iter().find(|r| servers.contains(&r.pattern)) {
            return rule.allow;
        }
        self.rules
            .iter()
            .filter(|r| r.pattern != "*")
            .filter(|r| names.iter().any(|n| glob_matches(&r.pattern, n)))
            .max_by_key(|r| r.pattern.len())
            .is_some_and(|r| r.allow)
    }

    /// The built-in tools this agent may use, in a stable order.
    pub fn granted_builtins(&self) -> Vec<&'static str> {
        BUILTIN_TOOLS
            .iter()
            .copied()
            .filter(|t| self.allows(t))
            .collect()
    }

    /// Names in the rules that no runtime we know provides (typos, mostly). `servers` are the
    /// names the project declares: its MCP servers (a server's name grants its tools) and
    /// opencode custom tools; those are known.
    pub fn unknown_names<'a>(&'a self, servers: &'a [String]) -> impl Iterator<Item = &'a str> {
        self.rules
            .iter()
            .map(|r| r.pattern.as_str())
            .filter(move |p| {
                !p.contains(['*', '?', '['])
                && !BUILTIN_TOOLS.contains(p)
                && !FOREIGN_TOOLS.contains(p)
                && !p.starts_with("mcp__")
                // `server_tool`: an MCP tool; lint checks the server is configured.
                && !p.contains('_')
                && !servers.iter().any(|s| canonical_tool_name(s) == *p)
            })
    }
}

/// Wildcard match for tool and agent names: `*` is any run of characters (`/` included, so
/// `team/*` covers nested agents), `?` one character. Names are short and patterns simple, so a
/// two-pointer match with one backtrack point beats compiling a glob per question (which was a
/// fifth of lint time over 1,000 agents).
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_map_with_globs() {
        let mut map = BTreeMap::new();
        map.insert("*".to_string(), false);
        map.insert("read".to_string(), true);
        map.insert("web*".to_string(), true);
        let g = ToolGrants::from_decl(&ToolsDecl::Map(map));
        assert!(g.allows("read"));
        assert!(g.allows("webfetch"));
        assert!(!g.allows("write"));
        assert_eq!(g.granted_builtins(), vec!["read", "webfetch", "websearch"]);
    }

    #[test]
    fn network_tools_need_a_rule_that_names_them() {
        let map = |pairs: &[(&str, bool)]| {
            ToolGrants::from_decl(&ToolsDecl::Map(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        assert!(!map(&[("read", true)]).allows("webfetch"));
        assert!(!map(&[("*", true)]).allows("webfetch"));
        assert!(!ToolGrants::default().allows("websearch"));
        assert!(map(&[("webfetch", true)]).allows("webfetch"));
        assert!(map(&[("web*", true)]).allows("websearch"));
        assert!(!map(&[("web*", true), ("websearch", false)]).allows("websearch"));
        assert!(ToolGrants::from_decl(&ToolsDecl::Csv("Read, WebFetch".into())).allows("webfetch"));
        // Other tools keep the map's default.
        assert!(map(&[("webfetch", true)]).allows("grep"));
    }

    #[test]
    fn mcp_tools_need_a_rule_that_names_them_in_either_spelling() {
        let map = |pairs: &[(&str, bool)]| {
            ToolGrants::from_decl(&ToolsDecl::Map(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        assert!(!ToolGrants::default().allows_mcp("fs", "read_file"));
        assert!(!map(&[("*", true)]).allows_mcp("fs", "read_file"));
        assert!(map(&[("fs_read_file", true)]).allows_mcp("fs", "read_file"));
        assert!(map(&[("fs_*", true)]).allows_mcp("fs", "read_file"));
        assert!(!map(&[("fs_*", true)]).allows_mcp("git", "log"));
        assert!(map(&[("mcp__fs__*", true)]).allows_mcp("fs", "list"));
        assert!(!map(&[("fs_*", true), ("fs_write", false)]).allows_mcp("fs", "write"));
        let csv = ToolGrants::from_decl(&ToolsDecl::Csv("Read, mcp__fs__read_file".into()));
        assert!(csv.allows_mcp("fs", "read_file") && !csv.allows_mcp("fs", "write"));
        assert_eq!(map(&[("fs_read", true)]).unknown_names(&[]).count(), 0);
    }

    /// opencode grants a server by its name (`context7: true`), Claude Code by `mcp__context7`;
    /// rpi-qpi's agents do the former for servers its opencode.json declares (#28 item 6).
    #[test]
    fn a_server_name_grants_every_tool_of_it_and_is_known() {
        let map = |pairs: &[(&str, bool)]| {
            ToolGrants::from_decl(&ToolsDecl::Map(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        let g = map(&[("context7", true), ("sequential-thinking*", true)]);
        assert!(g.allows_mcp("context7", "resolve-library-id"));
        assert!(g.allows_mcp("sequential-thinking", "sequentialthinking"));
        assert!(!g.allows_mcp("searxng", "search"));
        // The tool's own rule beats the server's; the server's beats a glob.
        let g = map(&[("context7", true), ("context7_get-library-docs", false)]);
        assert!(g.allows_mcp("context7", "resolve-library-id"));
        assert!(!g.allows_mcp("context7", "get-library-docs"));
        assert!(!map(&[("context7", false), ("context7*", true)]).allows_mcp("context7", "x"));
        let csv = ToolGrants::from_decl(&ToolsDecl::Csv("Read, mcp__context7".into()));
        assert!(csv.allows_mcp("context7", "resolve-library-id"));
        // Known only when declared.
        let servers = vec!["context7".to_string()];
        assert_eq!(
            map(&[("context7", true)]).unknown_names(&servers).count(),
            0
        );
        assert_eq!(
            map(&[("context7", true)])
                .unknown_names(&[])
                .collect::<Vec<_>>(),
            vec!["context7"]
        );
    }

    #[test]
    fn claude_list_allows_only_listed() {
        let g = ToolGrants::from_decl(&ToolsDecl::Csv("Read, Grep, LS".into()));
        assert!(g.allows("read") && g.allows("grep") && g.allows("list"));
        assert!(!g.allows("task"));
        let none = ToolGrants::default();
        assert!(none.allows("task"));
    }

    #[test]
    fn wildcards() {
        assert!(glob_matches("*", "anything/at-all"));
        assert!(glob_matches("thoughts-*", "thoughts-locator"));
        assert!(!glob_matches("thoughts-*", "codebase-locator"));
        assert!(glob_matches("team/*", "team/sub/helper"));
        assert!(glob_matches("a?c*z", "abcxyz"));
        assert!(!glob_matches("a?c", "ac"));
        assert!(glob_matches("*-analyzer", "thoughts-analyzer"));
        assert!(!glob_matches("", "x"));
    }

    #[test]
    fn unknown_names_are_reported() {
        let g = ToolGrants::from_decl(&ToolsDecl::List(vec!["Reed".into(), "Bash".into()]));
        assert_eq!(g.unknown_names(&[]).collect::<Vec<_>>(), vec!["reed"]);
    }
}
