//! Finding agent files and settling which file defines which name.
//!
//! Precedence, first to last: `agent/`, `agents/`, `.opencode/agent/`, `.opencode/agents/`,
//! `.claude/agents/` (all under the project root), then each `--agents DIR` in the order given.
//! The folders come in families, one per tool (ours, opencode's, Claude Code's). Across
//! families the earlier family wins and each shadowed file gets one note, because projects that
//! serve several tools carry the same agents in each tool's folder (decision of 2026-11-23).
//! Inside one family, two files defining one name are an error naming both: there is no silent
//! winner. A `--agents` folder is the deliberate override: its agent replaces a same-named
//! project agent, with a note saying which file lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::definition::Agent;
use super::parse::{self, Outcome};
use super::policy;
use crate::problem::{Problem, Severity};
use crate::project::Project;

/// The standard agent folders, relative to the project root, in precedence order.
pub const STANDARD_DIRS: &[&str] = &[
    "agent",
    "agents",
    ".opencode/agent",
    ".opencode/agents",
    ".claude/agents",
];

/// The tool a standard folder belongs to: one name in two folders of one family is a conflict
/// the user must settle, one name in two families is the same agent kept for two tools.
fn family(dir: &str) -> &'static str {
    if dir.starts_with(".opencode/") {
        "opencode"
    } else if dir.starts_with(".claude/") {
        "claude"
    } else {
        "switchboard"
    }
}

/// The family of every `--agents` folder: they override the project, and conflict among
/// themselves.
const EXTRA_FAMILY: &str = "--agents";

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
    /// `loaded`, `skipped`, `shadowed`, `replaced` or `error`.
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
    pub diagnostics: Vec<Problem>,
    /// Agent name as its file path gives it (`agent/x.md` → `x`) → that file, for each file that
    /// could not be read or parsed: what [`AgentSet::why_missing`] points at.
    failed: BTreeMap<String, String>,
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

    /// Why a file meant to define `name` (by its path) did not load: its first error and where
    /// it is, as a sentence for an error; `None` when no such file failed.
    ///
    /// Why: `run broken` on an `agent/broken.md` with a YAML error said only "unknown agent",
    /// which sends its author looking for a typo in the name instead of at line 5 of the file.
    pub fn load_failure(&self, name: &str) -> Option<String> {
        let file = self.failed.get(name)?;
        let what = match self
            .diagnostics_for(file)
            .find(|d| d.severity == crate::problem::Severity::Error)
        {
            Some(d) => format!("{} [{}] {}", d.location(), d.code, d.message),
            None => format!("{file} has errors"),
        };
        Some(format!(
            "agent `{name}` did not load: {what}; fix {file} (`switchboard lint {file}` shows \
             every problem)"
        ))
    }

    /// Why `name` is not an agent of this set, as a sentence for an error: its
    /// [`AgentSet::load_failure`], or else that no agent has that name.
    pub fn why_missing(&self, name: &str) -> String {
        self.load_failure(name).unwrap_or_else(|| {
            format!(
                "unknown agent `{name}`; `switchboard agents` lists the agents this project defines"
            )
        })
    }

    /// Diagnostics for one file.
    pub fn diagnostics_for<'a>(&'a self, file: &'a str) -> impl Iterator<Item = &'a Problem> {
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
    /// The declared tool names (MCP servers, opencode custom tools) the entries were parsed
    /// against: when the project declares others, every file is parsed again (its
    /// `agent/unknown-tool` findings depend on them).
    servers: Vec<String>,
}

/// Loads every agent of `project`.
pub fn load(project: &Project, options: &LoadOptions) -> AgentSet {
    load_inner(project, options, None)
}

/// Loads every agent of `project`, reusing `cache` for files that did not change.
pub fn load_cached(project: &Project, options: &LoadOptions, cache: &mut ParseCache) -> AgentSet {
    load_inner(project, options, Some(cache))
}

fn read_and_parse(
    path: &Path,
    file: &str,
    name: &str,
    servers: &[String],
) -> std::io::Result<parse::Parsed> {
    let text = std::fs::read_to_string(path)?;
    Ok(parse::parse_with(&text, file, name, servers))
}

fn load_inner(
    project: &Project,
    options: &LoadOptions,
    mut cache: Option<&mut ParseCache>,
) -> AgentSet {
    let mut set = AgentSet::default();
    let servers = crate::config::Config::declared_tool_names(project);
    if let Some(cache) = cache.as_deref_mut() {
        if cache.servers != servers {
            cache.entries.clear();
            cache.servers = servers.clone();
        }
    }
    // name → (file, family, from an --agents folder)
    let mut owners: BTreeMap<String, (String, &'static str, bool)> = BTreeMap::new();
    // (family, name) → the first file of that family defining it
    let mut in_family: BTreeMap<(&'static str, String), String> = BTreeMap::new();
    let extra: Vec<PathBuf> = options
        .extra_dirs
        .iter()
        .map(|d| extra_dir(project, d))
        .collect();
    let same_dir = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let mut folders: Vec<(PathBuf, &'static str, &str)> = Vec::new();
    if !options.only_extra {
        // A standard folder also given with `--agents` is read once, as the override it was
        // named to be (`--agents .opencode/agent` makes opencode's copies win).
        folders.extend(
            STANDARD_DIRS
                .iter()
                .map(|d| (project.root().join(d), family(d), *d))
                .filter(|(dir, _, _)| !extra.iter().any(|e| same_dir(dir, e))),
        );
    }
    folders.extend(extra.into_iter().map(|dir| (dir, EXTRA_FAMILY, "")));

    for (folder, fam, rel_dir) in folders {
        let is_extra = fam == EXTRA_FAMILY;
        if is_extra {
            if let Some(why) = not_a_folder(&folder) {
                set.diagnostics.push(Problem::new(
                    Severity::Error,
                    "agent/folder-missing",
                    folder.display().to_string(),
                    format!("agent folder given with --agents {why}"),
                ));
                continue;
            }
        }
        for path in crate::markdown::files_under(&folder) {
            let file = display_path(project, &path);
            let name = agent_name(&folder, &path);
            let parsed = match cache.as_deref_mut() {
                None => read_and_parse(&path, &file, &name, &servers),
                Some(cache) => {
                    let now = stamp(&path);
                    match (now, cache.entries.get(&path)) {
                        (Some(now), Some((then, parsed))) if *then == now => Ok(parsed.clone()),
                        _ => read_and_parse(&path, &file, &name, &servers).inspect(|parsed| {
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
                    set.diagnostics.push(Problem::new(
                        Severity::Error,
                        "agent/unreadable",
                        &file,
                        format!("cannot read: {e}"),
                    ));
                    set.files
                        .push(report(&file, "error", None, Some(e.to_string())));
                    set.failed.entry(name).or_insert(file);
                    continue;
                }
            };
            set.diagnostics.extend(parsed.diagnostics);
            match parsed.outcome {
                Outcome::Skipped(reason) => {
                    set.files.push(report(&file, "skipped", None, Some(reason)))
                }
                Outcome::Failed => {
                    set.files.push(report(&file, "error", None, None));
                    set.failed.entry(name).or_insert(file);
                }
                Outcome::Loaded(agent) => {
                    let name = agent.name.clone();
                    let twin = in_family.get(&(fam, name.clone())).cloned();
                    let owner = match twin {
                        // One family, two files: the conflict is between these two.
                        Some(first) => Some((first, fam, is_extra)),
                        None => owners.get(&name).cloned(),
                    };
                    match owner {
                        Some((other, other_fam, false)) if !is_extra && other_fam != fam => {
                            set.diagnostics
                                .push(shadowed_note(&name, &file, &other, rel_dir));
                            in_family.insert((fam, name.clone()), file.clone());
                            set.files.push(report(
                                &file,
                                "shadowed",
                                Some(name),
                                Some(format!("shadowed by {other}")),
                            ));
                            continue;
                        }
                        Some((other, _, other_extra)) if is_extra && !other_extra => {
                            set.diagnostics.push(Problem::new(
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
                        Some((other, _, _)) => {
                            set.diagnostics.push(
                                Problem::new(
                                    Severity::Error,
                                    "agent/duplicate-name",
                                    &file,
                                    format!(
                                        "agent `{name}` is defined twice: in {other} and in {file}"
                                    ),
                                )
                                .with_help("rename one of the files, or set a distinct `name`"),
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
                    in_family.insert((fam, name.clone()), file.clone());
                    owners.insert(name.clone(), (file.clone(), fam, is_extra));
                    set.files
                        .push(report(&file, "loaded", Some(name.clone()), None));
                    set.agents.insert(name, *agent);
                }
            }
        }
    }
    set
}

/// Where loading reads an `--agents` folder: an absolute path as given, a relative one from the
/// project root (not the working directory), so one project reads the same folders from anywhere.
pub fn extra_dir(project: &Project, dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        project.root().join(dir)
    }
}

/// Why `folder` cannot be an agent folder (`does not exist`, `is not a folder`), or `None`.
fn not_a_folder(folder: &Path) -> Option<&'static str> {
    match std::fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some("is not a folder"),
        Err(_) => Some("does not exist"),
    }
}

/// One `--agents` folder that cannot be read: as given, where it was looked for, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFolder {
    pub given: PathBuf,
    pub resolved: PathBuf,
    pub why: &'static str,
}

/// The `--agents` folders of `options` that are missing or not folders. The command line refuses
/// to run with one (a mistyped folder must not silently leave the agents out: `mcp --agents NAME`
/// used to serve every agent); library callers get `agent/folder-missing` from [`load`] instead.
pub fn missing_extra_dirs(project: &Project, options: &LoadOptions) -> Vec<MissingFolder> {
    options
        .extra_dirs
        .iter()
        .filter_map(|given| {
            let resolved = extra_dir(project, given);
            not_a_folder(&resolved).map(|why| MissingFolder {
                given: given.clone(),
                resolved,
                why,
            })
        })
        .collect()
}

/// The one note for a file whose agent an earlier folder family already defines.
fn shadowed_note(name: &str, file: &str, winner: &str, rel_dir: &str) -> Problem {
    Problem::new(
        Severity::Note,
        "agent/shadowed",
        file,
        format!("agent `{name}` is also defined in {winner}, which comes first; this file is not used"),
    )
    .with_help(format!(
        "folders are read in the order agent/, agents/, .opencode/agent/, .opencode/agents/, .claude/agents/; to use this folder's agents instead, pass `--agents {rel_dir}` (add `--only-agents` to use nothing else)"
    ))
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
