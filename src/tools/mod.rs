//! The built-in tools and the registry that describes, grants and dispatches them.
//!
//! Every tool takes JSON arguments and returns text for the model; every path goes through
//! [`Project`], so confinement has one implementation. A failure (a bad argument, a path outside
//! the root, a tool the agent was not granted) is a [`ToolError`] the model sees as an error tool
//! message: tools never panic and never end the hop. `task` is described here but dispatched by the
//! runtime, which owns delegation.

use serde_json::{json, Value};

use crate::agent::Agent;
use crate::model::ToolSpec;
use crate::project::Project;
pub use crate::project::{hidden_dir, HIDDEN_DIRS};

pub mod glob;
pub mod grep;
pub mod list;
pub mod nearby;
pub mod read;
pub mod recall;
pub mod webfetch;
pub mod write;

/// Where `write` may put files unless the agent's `permission.write` grants more.
pub const WRITE_ROOT: &str = "thoughts/";

/// What a tool hands back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    /// Project-relative path of a file the tool wrote.
    pub written: Option<String>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            written: None,
        }
    }
}

/// Why a tool call did not produce a result; the message goes to the model verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("tool `{tool}` is not granted to agent `{agent}`")]
    NotGranted { tool: String, agent: String },
    /// The list is the built-in list itself, so a tool added there is named here too.
    #[error(
        "unknown tool `{0}`; available tools: {list}",
        list = crate::agent::grants::BUILTIN_TOOLS.join(", ")
    )]
    Unknown(String),
    #[error("`{tool}`: {message}")]
    BadArguments { tool: String, message: String },
    #[error("`{tool}` refused `{path}`: {reason}")]
    Refused {
        tool: String,
        path: String,
        reason: String,
    },
    #[error("`{tool}` failed: {message}")]
    Failed { tool: String, message: String },
}

/// What a tool runs against.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    pub project: &'a Project,
    pub agent: &'a Agent,
    /// Project-relative files the calling hop read or its session wrote: the only existing
    /// files `write` replaces in place (see `write::run`). Empty outside a session.
    pub known: &'a [String],
    /// Those of `known` the session wrote: a numbered copy `write` made of a name is replaced
    /// by the next write to that name only when it is one of these, not a file the hop only
    /// read (another session's `NAME-2.md`).
    pub written: &'a [String],
}

/// JSON schema descriptions of every built-in tool, in the order of `BUILTIN_TOOLS`.
pub fn spec(name: &str) -> Option<ToolSpec> {
    let (description, parameters) = match name {
        "read" => (
            "Read a text file under the project root. Lines come back numbered (`     N\\tline`) so \
             you can cite `path:N-M`.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "path relative to the project root"},
                "offset": {"type": "integer", "minimum": 1, "description": "first line (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "number of lines"}},
                "required": ["path"]}),
        ),
        "list" => (
            "List a directory under the project root: each entry as its path from the root; directories end with `/`.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "directory relative to the root; default `.`"}}}),
        ),
        "glob" => (
            "Find files whose project-relative path matches a glob such as `thoughts/**/*.md`.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "directory to search; default `.`"}},
                "required": ["pattern"]}),
        ),
        "grep" => (
            "Search file contents with a regular expression; results are `path:line:text`.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Rust regex, e.g. `(?i)event log`"},
                "path": {"type": "string", "description": "file or directory; default `.`"},
                "glob": {"type": "string", "description": "only files matching this glob"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "result lines at most; default 100"}},
                "required": ["pattern"]}),
        ),
        "write" => (
            "Write a text file under `thoughts/` (parent folders are created).",
            json!({"type": "object", "properties": {
                "path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]}),
        ),
        "webfetch" => (
            "Fetch an http(s) URL on the public web. HTML comes back as markdown; text, markdown \
             and JSON as they are. Bounded in time and size; private and local addresses are \
             refused.",
            webfetch::spec_parameters(),
        ),
        "websearch" => (
            "Search the web; results are numbered `title`, URL and a snippet. Fetch a result \
             with `webfetch` before you cite it.",
            webfetch::search::spec_parameters(),
        ),
        "analyze_file" => (
            "Read a whole text file once, with a dedicated analyzer, and keep what it learns \
             (notes, entities, relations, each with the file's checksum, git commit and lines). \
             Returns a short summary; an unchanged file is not analysed again.",
            recall::analyze_parameters(),
        ),
        "recall" => (
            "Recall knowledge stored by analyze_file: notes ranked by match, each with its file, \
             lines, checksum and commit, marked STALE when the file changed since.",
            recall::recall_parameters(),
        ),
        "task" => (
            "Delegate a task to a subagent and get its final answer back. Several task calls in one \
             turn run in parallel.",
            json!({"type": "object", "properties": {
                "subagent_type": {"type": "string", "description": "the subagent's name"},
                "description": {"type": "string", "description": "a short (3-5 word) label"},
                "prompt": {"type": "string", "description": "the full task for the subagent"}},
                "required": ["subagent_type", "prompt"]}),
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    })
}

/// Which tools this runtime provides with its configuration: every built-in, except that
/// `websearch` needs a configured search endpoint. A granted tool that is not provided is not
/// offered to the model (and lint says so: `agent/tool-not-provided`).
/// MCP tools count as provided when their server is configured (`[mcp.NAME]`); nothing is
/// started to find out, so lint stays offline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provided {
    pub websearch: bool,
    /// Names of the configured MCP servers.
    pub mcp_servers: Vec<String>,
}

impl Provided {
    pub fn from_config(config: &crate::config::Config) -> Self {
        Provided {
            websearch: config.websearch.searxng_url.is_some(),
            mcp_servers: config
                .mcp
                .iter()
                .filter(|(_, s)| s.is_enabled())
                .map(|(name, _)| name.clone())
                .collect(),
        }
    }

    pub fn provides(&self, tool: &str) -> bool {
        if crate::mcp::names::split(tool, &self.mcp_servers).is_some() {
            return true;
        }
        // A server's own name grants its tools (opencode's `context7: true`).
        let server = tool.strip_prefix("mcp__").unwrap_or(tool);
        if self.mcp_servers.iter().any(|s| s == server) {
            return true;
        }
        crate::agent::grants::BUILTIN_TOOLS.contains(&tool)
            && (tool != "websearch" || self.websearch)
    }

    /// What to configure so that `tool` is provided, for messages.
    pub fn how_to_provide(tool: &str) -> String {
        match tool {
            "websearch" => "set [websearch] searxng_url in switchboard.toml".into(),
            t if t.starts_with("mcp__") || t.contains('_') => {
                let server = crate::mcp::names::server_part(t);
                format!(
                    "declare the MCP server `{server}`: [mcp.{server}] in switchboard.toml with \
                     `command` (stdio) or `url` (streamable HTTP), or under `mcp` in opencode.json \
                     or `mcpServers` in .mcp.json (not with `enabled: false`); see docs/mcp.md"
                )
            }
            t => format!(
                "switchboard has no `{t}` tool (it provides {}; opencode's custom tools in \
                 .opencode/tool/ are not run here); remove the grant or give the work to an \
                 agent of the runtime that has it",
                crate::agent::grants::BUILTIN_TOOLS.join(", ")
            ),
        }
    }
}

/// The tools an agent will really be offered: granted, provided, and not denied by `permission`.
pub fn offered(agent: &Agent, provided: &Provided) -> Vec<&'static str> {
    agent
        .tools
        .granted_builtins()
        .into_iter()
        .filter(|t| provided.provides(t) && check_grant(agent, t).is_ok())
        .collect()
}

/// The tool specs an agent is offered.
pub fn specs_for(agent: &Agent, provided: &Provided) -> Vec<ToolSpec> {
    offered(agent, provided)
        .into_iter()
        .filter_map(spec)
        .collect()
}

/// Narrows `task`'s `subagent_type` to `names`, the agents the caller may delegate to (the
/// delegation policy's static answer, the list its prompt shows). A provider that honours tool
/// schemas, and the local model's grammar, then cannot name an agent that does not exist or may
/// not be called; dispatch still decides each call with the live chain. No names: unchanged (an
/// empty `enum` would admit nothing).
pub fn narrow_task(specs: &mut [ToolSpec], names: &[String]) {
    if names.is_empty() {
        return;
    }
    if let Some(field) = specs
        .iter_mut()
        .find(|s| s.name == "task")
        .and_then(|s| s.parameters.pointer_mut("/properties/subagent_type"))
    {
        field["enum"] = json!(names);
    }
}

/// The names [`narrow_task`] narrowed `task`'s `subagent_type` to, read from the tool's
/// `parameters`; empty when it was not narrowed.
pub fn narrowed_task_names(parameters: &Value) -> Vec<String> {
    parameters
        .pointer("/properties/subagent_type/enum")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the agent's grant for `tool`: its `tools:` and a `permission:` entry that denies it.
pub fn check_grant(agent: &Agent, tool: &str) -> Result<(), ToolError> {
    if spec(tool).is_none() {
        return Err(ToolError::Unknown(tool.to_string()));
    }
    if !agent.tools.allows(tool) || agent.permission.refuses_tool(tool) {
        return Err(ToolError::NotGranted {
            tool: tool.to_string(),
            agent: agent.name.clone(),
        });
    }
    Ok(())
}

/// Runs a non-`task` built-in after the grant check.
pub fn invoke(ctx: ToolContext<'_>, tool: &str, args: &Value) -> Result<ToolOutput, ToolError> {
    check_grant(ctx.agent, tool)?;
    match tool {
        "read" => read::run(ctx, args),
        "list" => list::run(ctx, args),
        "glob" => glob::run(ctx, args),
        "grep" => grep::run(ctx, args),
        "write" => write::run(ctx, args),
        "recall" => recall::run(ctx, args),
        "task" | "webfetch" | "websearch" | "analyze_file" => Err(ToolError::Failed {
            tool: tool.into(),
            message: format!("{tool} is run by the runtime, not inline"),
        }),
        other => Err(ToolError::Unknown(other.to_string())),
    }
}

/// A string argument, required.
pub(crate) fn str_arg<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::BadArguments {
            tool: tool.to_string(),
            message: format!("missing string argument `{key}`"),
        })
}

/// A string argument, optional.
pub(crate) fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A positive integer argument, optional (numbers written as strings are accepted).
pub(crate) fn opt_usize(tool: &str, args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    let bad = || ToolError::BadArguments {
        tool: tool.to_string(),
        message: format!("`{key}` must be a positive integer"),
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .filter(|&v| v > 0)
            .map(|v| Some(v as usize))
            .ok_or_else(bad),
        Some(Value::String(s)) => s.trim().parse::<usize>().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

/// Resolves an existing path through the project, as a tool error when refused (outside the
/// root, or inside a folder no tool may touch, however it was named).
pub(crate) fn resolve(
    ctx: ToolContext<'_>,
    tool: &str,
    name: &str,
) -> Result<std::path::PathBuf, ToolError> {
    resolve_with(ctx, tool, name, Project::resolve)
}

/// Resolves a path about to be written (it may not exist yet), under the same policy as
/// [`resolve`].
pub(crate) fn resolve_new(
    ctx: ToolContext<'_>,
    tool: &str,
    name: &str,
) -> Result<std::path::PathBuf, ToolError> {
    resolve_with(ctx, tool, name, Project::resolve_new)
}

/// The parts of `name` that exist, when it is several paths joined with commas, semicolons,
/// colons or blanks (at least one existing), each relative to the project root.
/// Qwen2.5-Coder-1.5B, as codebase-locator, called `grep` and `list` with `path` set to four
/// files joined with commas, four times over, reading only "does not exist"; it also joined
/// them after the project's absolute root (`/tmp/…/src/a.rs,src/b.rs`), and in later sessions
/// with `:` (as `PATH` is) and with `;`.
fn joined_paths(project: &Project, name: &str) -> Option<Vec<String>> {
    if !name.trim().contains(JOINS) {
        return None;
    }
    split_joined(project, name).map(|parts| parts.iter().map(|p| format!("`{p}`")).collect())
}

/// Where a `path` that names several is cut (see [`joined_paths`]).
const JOINS: [char; 6] = [',', ';', ':', ' ', '\t', '\n'];

/// The parts of a joined `name` that exist (see [`joined_paths`]), as written, relative to
/// the root (a part written after a `/` that the project holds is read as the project's);
/// `None` when `name` has no separator and no leading `/`, or no part exists. Only a `name` that is not
/// itself there is cut (the callers check), so a file whose name holds one of them is found.
pub(crate) fn split_joined(project: &Project, name: &str) -> Option<Vec<String>> {
    if !name.trim().contains(JOINS) && !name.trim().starts_with('/') {
        return None;
    }
    let root = project.root().display().to_string();
    let parts: Vec<String> = name
        .split(JOINS)
        .map(|p| p.trim().trim_matches(['`', '"', '\'']).trim())
        .map(|p| match p.strip_prefix(root.as_str()) {
            Some(rest) if rest.starts_with('/') || rest.is_empty() => rest.trim_start_matches('/'),
            // `/thoughts/shared/`: the project's path after a `/` (see `inside_after_slash`).
            _ if inside_after_slash(project, p).is_some() => p.trim_start_matches('/'),
            _ => p,
        })
        .filter(|p| !p.is_empty() && project.resolve_visible(p).is_ok())
        .map(str::to_string)
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// The error for a `path` that is several joined (see [`joined_paths`]).
fn joined_error(tool: &str, e: impl std::fmt::Display, parts: &[String]) -> ToolError {
    ToolError::Failed {
        tool: tool.to_string(),
        message: format!(
            "{e}: `path` names one file or folder, and this is several joined together; \
             make one `{tool}` call for each of {}",
            parts.join(", ")
        ),
    }
}

/// The policy both share: the project's resolution, then the folders tools never touch.
fn resolve_with(
    ctx: ToolContext<'_>,
    tool: &str,
    name: &str,
    how: fn(&Project, &str) -> Result<std::path::PathBuf, crate::project::PathError>,
) -> Result<std::path::PathBuf, ToolError> {
    let path = how(ctx.project, name).map_err(|e| match e {
        // A path that is not there is a mistake the model can fix (list the folder), not an
        // attempt to leave the project: a tool error it reads, never a refusal that blocks.
        crate::project::PathError::NotFound(_) => match joined_paths(ctx.project, name) {
            Some(parts) => joined_error(tool, e, &parts),
            None => ToolError::Failed {
                tool: tool.to_string(),
                message: match nearby::hint(ctx.project, name) {
                    Some(hint) => format!("{e}; {hint}"),
                    None => format!("{e}; `list` or `glob` its folder to see what is there"),
                },
            },
        },
        // The project's own absolute path (the prompt shows the root): a slip, not an escape.
        // It is still refused, as a tool error that names the relative path to use.
        crate::project::PathError::Absolute(_)
            if std::path::Path::new(name).starts_with(ctx.project.root()) =>
        {
            if let Some(parts) = joined_paths(ctx.project, name) {
                return joined_error(tool, e, &parts);
            }
            let relative = std::path::Path::new(name)
                .strip_prefix(ctx.project.root())
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            ToolError::Failed {
                tool: tool.to_string(),
                message: format!(
                    "{e}: call it again with `{}`",
                    if relative.is_empty() { "." } else { &relative }
                ),
            }
        }
        // `/thoughts/shared/decisions/`: a project path written after a `/` (the 1.5B
        // thoughts-locator, its hop BLOCKED for it). Nothing outside is touched, and the path
        // to use is a project's own, so it is a tool error naming it, not a refusal.
        e @ crate::project::PathError::Absolute(_) => match inside_after_slash(ctx.project, name) {
            Some(relative) => ToolError::Failed {
                tool: tool.to_string(),
                message: format!("{e}: call it again with `{relative}`"),
            },
            None => refused(tool, name, e),
        },
        e => refused(tool, name, e),
    })?;
    open_to_tools(ctx.project, tool, name, &path)?;
    Ok(path)
}

/// `name` without its leading `/`s, when that names a visible file or folder of the project.
fn inside_after_slash(project: &Project, name: &str) -> Option<String> {
    let rest = name.trim().strip_prefix('/')?.trim_start_matches('/');
    (!rest.is_empty() && project.resolve_visible(rest).is_ok()).then(|| rest.to_string())
}

fn refused(tool: &str, name: &str, reason: impl ToString) -> ToolError {
    ToolError::Refused {
        tool: tool.to_string(),
        path: name.to_string(),
        reason: reason.to_string(),
    }
}

/// Refuses a resolved path that lies in a [`HIDDEN_DIRS`] folder.
fn open_to_tools(
    project: &Project,
    tool: &str,
    name: &str,
    path: &std::path::Path,
) -> Result<(), ToolError> {
    project
        .refuse_hidden(name, path)
        .map_err(|e| refused(tool, name, e))
}

/// The files (and symlinks) under `dir` a tool may see, with their project-relative paths: walked
/// with `ignore` so `.gitignore`d files stay out, and without [`HIDDEN_DIRS`] or symlinks that
/// lead outside the root.
pub(crate) fn walk_files<'a>(
    project: &'a Project,
    dir: &std::path::Path,
) -> impl Iterator<Item = (String, ignore::DirEntry)> + 'a {
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .build()
        .flatten()
        .filter(|entry| {
            entry
                .file_type()
                .is_some_and(|t| t.is_file() || t.is_symlink())
        })
        .filter_map(move |entry| {
            let rel = project.relative(entry.path());
            visible(project, entry.path()).then_some((rel, entry))
        })
}

/// Whether `list`, `glob` and `grep` show an entry: not in a [`HIDDEN_DIRS`] folder, not a
/// regular file with more than one hard link (its other names may be outside the root; `read`
/// refuses it too), and a symlink only if its target exists, stays inside the root and is not
/// hidden either.
pub(crate) fn visible(project: &Project, path: &std::path::Path) -> bool {
    if hidden_dir(&project.relative(path)).is_some() {
        return false;
    }
    if crate::project::refuse_hard_link("", path).is_err() {
        return false;
    }
    if !path.is_symlink() {
        return true;
    }
    std::fs::canonicalize(path).is_ok_and(|target| {
        target.starts_with(project.root()) && hidden_dir(&project.relative(&target)).is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_tool_is_narrowed_to_the_callable_agents_only_when_there_are_some() {
        let mut specs = vec![spec("read").unwrap(), spec("task").unwrap()];
        let before = specs[1].parameters.clone();
        narrow_task(&mut specs, &[]);
        assert_eq!(
            specs[1].parameters, before,
            "an empty enum would admit nothing"
        );
        narrow_task(&mut specs, &["finder".into()]);
        assert_eq!(
            specs[1].parameters["properties"]["subagent_type"]["enum"],
            json!(["finder"])
        );
        assert!(specs[0]
            .parameters
            .pointer("/properties/subagent_type")
            .is_none());
    }

    #[test]
    fn a_path_of_several_joined_with_commas_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/cli")).unwrap();
        std::fs::write(dir.path().join("src/cli/run.rs"), "fn run() {}\n").unwrap();
        let project = Project::open(dir.path()).unwrap();
        assert_eq!(
            joined_paths(&project, "src/cli/run.rs, `src/cli`,src/nope.rs,"),
            Some(vec![
                "`src/cli/run.rs`".to_string(),
                "`src/cli`".to_string()
            ])
        );
        assert_eq!(joined_paths(&project, "src/a.rs,src/b.rs"), None);
        assert_eq!(joined_paths(&project, "src/nope.rs"), None);
    }

    #[test]
    fn unknown_tool_lists_every_builtin() {
        let text = ToolError::Unknown("raed".into()).to_string();
        assert!(
            text.starts_with("unknown tool `raed`; available tools: read, "),
            "{text}"
        );
        for tool in crate::agent::grants::BUILTIN_TOOLS {
            assert!(text.contains(tool), "`{tool}` missing from: {text}");
        }
        assert!(
            text.contains("analyze_file") && text.contains("recall"),
            "{text}"
        );
    }
}
