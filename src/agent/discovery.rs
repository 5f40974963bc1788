//! Finding agent files and settling which file defines which name.
//!
//! Precedence, first to last: `agent/`, `agents/`, `.opencode/agent/`, `.opencode/agents/`,
//! `.claude/agents/` (all under the project root), then each `--agents DIR` in the order given.
//! Two files in the project's own folders that define one name are an error naming both: there
//! is no silent winner. A `--agents` folder is the deliberate override: its agent replaces a
//! same-named project agent, with a note saying which file lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::definition::Agent;
use super::parse::{self, Outcome};
use super::policy;
use crate::diagnostic::{Diagnostic, Severity};
use crate::project::Project;

/// The standard agent folders, relative to the project root, in precedence order.
pub const STANDARD_DIRS: &[&str] = &[
    "agent",
    "agents",
    ".opencode/agent",
    ".opencode/agents",
    ".claude/agents",
];

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Extra folders (`--agents`), searched after the standard ones.
    pub extra_dirs: Vec<PathBuf>,
    /// Skip the standard folders.
    pub only_extra: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    pub file: String,
    /// `loaded`, `skipped`, `replaced` or `error`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Every agent of a project, with what loading found.
#[derive(Debug, Clone, Default)]
pub struct AgentSet {
    agents: BTreeMap<String, Agent>,
    pub files: Vec<FileReport>,
    pub diagnostics: Vec<Diagnostic>,
}

impl AgentSet {
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.get(name)
    }

    /// Agents sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }

    pub fn len(&self) -> usize {
        self.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Every agent by name: what [`policy::check`] decides over.
    pub fn by_name(&self) -> &policy::Agents {
        &self.agents
    }

    /// The agents `caller` may delegate to, as [`policy::callable`] decides: the prompt's
    /// `subagents` list and dispatch's "agents you may call" come from here.
    pub fn delegable_from<'a>(&'a self, caller: &Agent) -> Vec<&'a Agent> {
        policy::callable(&self.agents, caller)
    }

    /// Diagnostics for one file.
    pub fn diagnostics_for<'a>(&'a self, file: &'a str) -> impl Iterator<Item = &'a Diagnostic> {
        self.diagnostics.iter().filter(move |d| d.file == file)
    }
}

/// What a file looked like when it was parsed: modification time and length.
pub type FileStamp = (std::time::SystemTime, u64);

/// The stamp of `path` now, or `None` when it cannot be read.
pub fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Parsed files kept between loads, so `lint --watch` re-parses only what changed. A file whose
/// stamp (mtime and length) is unchanged is not read again.
#[derive(Debug, Default)]
pub struct ParseCache {
    entries: std::collections::HashMap<PathBuf, (FileStamp, parse::Parsed)>,
}

/// Loads every agent of `project`.
pub fn load(project: &Project, options: &LoadOptions) -> AgentSet {
    load_inner(project, options, None)
}

/// Loads every agent of `project`, reusing `cache` for files that did not change.
pub fn load_cached(project: &Project, options: &LoadOptions, cache: &mut ParseCache) -> AgentSet {
    load_inner(project, options, Some(cache))
}

fn read_and_parse(path: &Path, file: &str, name: &str) -> std::io::Result<parse::Parsed> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse::parse(&text, file, name))
}

fn load_inner(
    project: &Project,
    options: &LoadOptions,
    mut cache: Option<&mut ParseCache>,
) -> AgentSet {
    let mut set = AgentSet::default();
    // name → (file, from an --agents folder)
    let mut owners: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut folders: Vec<(PathBuf, bool)> = Vec::new();
    if !options.only_extra {
        folders.extend(
            STANDARD_DIRS
                .iter()
                .map(|d| (project.root().join(d), false)),
        );
    }
    folders.extend(options.extra_dirs.iter().map(|d| {
        let dir = if d.is_absolute() {
            d.clone()
        } else {
            project.root().join(d)
        };
        (dir, true)
    }));

    for (folder, is_extra) in folders {
        if is_extra && !folder.is_dir() {
            set.diagnostics.push(Diagnostic::new(
                Severity::Error,
                "agent/folder-missing",
                folder.display().to_string(),
                "agent folder given with --agents does not exist",
            ));
            continue;
        }
        for path in crate::markdown::files_under(&folder) {
            let file = display_path(project, &path);
            let name = agent_name(&folder, &path);
            let parsed = match cache.as_deref_mut() {
                None => read_and_parse(&path, &file, &name),
                Some(cache) => {
                    let now = stamp(&path);
                    match (now, cache.entries.get(&path)) {
                        (Some(now), Some((then, parsed))) if *then == now => Ok(parsed.clone()),
                        _ => read_and_parse(&path, &file, &name).inspect(|parsed| {
                            if let Some(now) = now {
                                cache.entries.insert(path.clone(), (now, parsed.clone()));
                            }
                        }),
                    }
                }
            };
            let parsed = match parsed {
                Ok(p) => p,
                Err(e) => {
                    set.diagnostics.push(Diagnostic::new(
                        Severity::Error,
                        "agent/unreadable",
                        &file,
                        format!("cannot read: {e}"),
                    ));
                    set.files
                        .push(report(&file, "error", None, Some(e.to_string())));
                    continue;
                }
            };
            set.diagnostics.extend(parsed.diagnostics);
            match parsed.outcome {
                Outcome::Skipped(reason) => {
                    set.files.push(report(&file, "skipped", None, Some(reason)))
                }
                Outcome::Failed => set.files.push(report(&file, "error", None, None)),
                Outcome::Loaded(agent) => {
                    let name = agent.name.clone();
                    match owners.get(&name).cloned() {
                        Some((other, other_extra)) if is_extra && !other_extra => {
                            set.diagnostics.push(Diagnostic::new(
                                Severity::Note,
                                "agent/overridden",
                                &other,
                                format!("agent `{name}` is replaced by {file} (from --agents)"),
                            ));
                            if let Some(r) = set.files.iter_mut().find(|r| r.file == other) {
                                r.status = "replaced";
                                r.reason = Some(format!("replaced by {file}"));
                            }
                        }
                        Some((other, _)) => {
                            set.diagnostics.push(
                                Diagnostic::new(
                                    Severity::Error,
                                    "agent/duplicate-name",
                                    &file,
                                    format!(
                                        "agent `{name}` is defined twice: in {other} and in {file}"
                                    ),
                                )
                                .help("rename one of the files, or set a distinct `name`"),
                            );
                            set.files.push(report(
                                &file,
                                "error",
                                Some(name.clone()),
                                Some(format!("duplicate of {other}")),
                            ));
                            continue;
                        }
                        None => {}
                    }
                    owners.insert(name.clone(), (file.clone(), is_extra));
                    set.files
                        .push(report(&file, "loaded", Some(name.clone()), None));
                    set.agents.insert(name, *agent);
                }
            }
        }
    }
    set
}

fn report(
    file: &str,
    status: &'static str,
    agent: Option<String>,
    reason: Option<String>,
) -> FileReport {
    FileReport {
        file: file.to_string(),
        status,
        agent,
        reason,
    }
}

/// `sub/name` for `<folder>/sub/name.md`.
fn agent_name(folder: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(folder).unwrap_or(path).with_extension("");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn display_path(project: &Project, path: &Path) -> String {
    if path.starts_with(project.root()) {
        project.relative(path)
    } else {
        path.display().to_string()
    }
}
