//! The checks a step declares and the runtime runs itself, so their outcome does not depend on
//! the model's honesty: files named exist inside the root, plan steps stay inside the scope, the
//! verification command is safe, the complexity score is computed, and quoted evidence matches
//! the lines it cites.
//!
//! Checks select values with JSON pointers whose segments may be `*` (every item of an array or
//! object): `/steps/*/files/*`. A pointer may name another step's result: `scope:/primary/*`.

use super::file_inside;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::project::Project;

/// A check as written in a workflow file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// Every selected string is a file that exists inside the project root.
    FilesExist(Vec<String>),
    /// Every path selected by `files` is one of the paths selected by `scope`.
    InScope {
        files: Vec<String>,
        scope: Vec<String>,
    },
    /// Every selected string is a safe verification command whose program exists.
    SafeCommand(Vec<String>),
    /// Computes the complexity of the selected files and stores it in the result as
    /// `computed_complexity` (the model's own estimate is not asked for).
    Complexity { files: Vec<String> },
    /// Every selected item `{path, start, end, excerpt}` quotes exactly lines `start..=end`.
    Evidence(String),
}

impl Check {
    /// Every pointer the check reads, for lint.
    pub fn pointers(&self) -> Vec<&str> {
        match self {
            Check::FilesExist(p) | Check::SafeCommand(p) => p.iter().map(String::as_str).collect(),
            Check::InScope { files, scope } => files
                .iter()
                .chain(scope.iter())
                .map(String::as_str)
                .collect(),
            Check::Complexity { files } => files.iter().map(String::as_str).collect(),
            Check::Evidence(p) => vec![p.as_str()],
        }
    }
}

/// Splits `step:/pointer` into the step and the pointer; `None` for the current result.
pub fn split_pointer(p: &str) -> (Option<&str>, &str) {
    match p.find(":/") {
        Some(i) if i > 0 && !p[..i].contains('/') => (Some(&p[..i]), &p[i + 1..]),
        _ => (None, p),
    }
}

/// The values `pointer` selects in `root`; `*` selects every child.
pub fn select<'a>(root: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let mut current = vec![root];
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        let mut next = Vec::new();
        for v in current {
            match (v, seg.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter()),
                (Value::Object(map), "*") => next.extend(map.values()),
                (Value::Array(items), s) => {
                    next.extend(s.parse::<usize>().ok().and_then(|i| items.get(i)))
                }
                (Value::Object(map), s) => next.extend(map.get(s)),
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// [`select`], for changing what it selects.
fn select_mut<'a>(root: &'a mut Value, pointer: &str) -> Vec<&'a mut Value> {
    let mut current = vec![root];
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        let mut next = Vec::new();
        for v in current {
            match (v, seg.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter_mut()),
                (Value::Object(map), "*") => next.extend(map.values_mut()),
                (Value::Array(items), s) => {
                    next.extend(s.parse::<usize>().ok().and_then(|i| items.get_mut(i)))
                }
                (Value::Object(map), s) => next.extend(map.get_mut(s)),
                _ => {}
            }
        }
        current = next;
    }
    current
}

/// Re-cites each evidence item of `result` (the `evidence` checks' own pointers) whose excerpt
/// is not at its cited lines but stands, whole and exactly, at other lines of the same file:
/// `start` and `end` become those lines. One note per item changed, for the reply. The text was
/// right and the numbers were not (a small model counts lines badly; the contract checker makes
/// the same fix, docs/envelope.md); an excerpt found nowhere is left for the check to refuse.
pub fn relocate(checks: &[Check], project: &Project, result: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    for check in checks {
        let Check::Evidence(pointer) = check else {
            continue;
        };
        let (None, ptr) = split_pointer(pointer) else {
            continue;
        };
        for item in select_mut(result, ptr) {
            if evidence(project, item).is_ok() {
                continue;
            }
            let Some(path) = item["path"].as_str().map(str::to_string) else {
                continue;
            };
            let quoted: Vec<String> = item["excerpt"]
                .as_str()
                .unwrap_or("")
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            if quoted.is_empty() || quoted.len() > 6 || quoted.iter().all(|l| l.trim().is_empty()) {
                continue;
            }
            let Some(text) = file_inside(project, &path)
                .ok()
                .and_then(|f| std::fs::read_to_string(f).ok())
            else {
                continue;
            };
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            let Some(at) = lines
                .windows(quoted.len())
                .position(|w| w.iter().zip(&quoted).all(|(a, b)| a == b))
            else {
                continue;
            };
            let (start, end) = (at + 1, at + quoted.len());
            notes.push(format!(
                "evidence `{path}:{}-{}`: the excerpt stands at lines {start}-{end}; cited there",
                item["start"], item["end"]
            ));
            item["start"] = Value::from(start);
            item["end"] = Value::from(end);
        }
    }
    notes
}

/// What the checks work on: the project, the result being checked, accepted results by step.
pub struct Subject<'a> {
    pub project: &'a Project,
    pub result: &'a Value,
    pub accepted: &'a BTreeMap<String, Value>,
}

impl Subject<'_> {
    fn strings(&self, pointers: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for p in pointers {
            let (step, ptr) = split_pointer(p);
            let root = match step {
                None => Some(self.result),
                Some(s) => self.accepted.get(s),
            };
            if let Some(root) = root {
                out.extend(
                    select(root, ptr)
                        .into_iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string),
                );
            }
        }
        out
    }
}

/// Runs `checks`; returns the problems (for an INVALID reply) and what the runtime computed
/// (merged into the stored result).
pub fn run(checks: &[Check], subject: &Subject) -> (Vec<String>, serde_json::Map<String, Value>) {
    let mut errors = Vec::new();
    let mut computed = serde_json::Map::new();
    for check in checks {
        match check {
            Check::FilesExist(pointers) => {
                for path in subject.strings(pointers) {
                    if let Err(e) = file_inside(subject.project, &path) {
                        errors.push(e.to_string());
                    }
                }
            }
            Check::InScope { files, scope } => {
                let allowed: Vec<String> =
                    subject.strings(scope).iter().map(|s| normal(s)).collect();
                for path in subject.strings(files) {
                    if !allowed.contains(&normal(&path)) {
                        errors.push(format!(
                            "`{path}` is not in the scope ({}); add it to the scope step or \
                             change the plan",
                            if allowed.is_empty() {
                                "empty".to_string()
                            } else {
                                allowed.join(", ")
                            }
                        ));
                    }
                }
            }
            Check::SafeCommand(pointers) => {
                let commands = subject.strings(pointers);
                if commands.is_empty() {
                    errors.push("no verification command was given".into());
                }
                for c in commands {
                    if let Err(e) = super::command::check_command(&c, subject.project) {
                        errors.extend(e);
                    }
                }
            }
            Check::Complexity { files } => {
                let files = subject.strings(files);
                match super::complexity::measure(subject.project, &files) {
                    Ok(c) => {
                        computed.insert(
                            "computed_complexity".into(),
                            serde_json::to_value(c).unwrap_or(Value::Null),
                        );
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Check::Evidence(pointer) => {
                let (step, ptr) = split_pointer(pointer);
                let root = match step {
                    None => Some(subject.result),
                    Some(s) => subject.accepted.get(s),
                };
                for item in root.map(|r| select(r, ptr)).unwrap_or_default() {
                    if let Err(e) = evidence(subject.project, item) {
                        errors.push(e.to_string());
                    }
                }
            }
        }
    }
    (errors, computed)
}

fn normal(path: &str) -> String {
    path.trim().trim_start_matches("./").to_string()
}

/// Why one evidence item does not hold (the step check reports it to the model).
#[derive(Debug, thiserror::Error)]
enum EvidenceError {
    #[error("evidence for `{0}` needs numeric `start` and `end` lines")]
    NoLines(String),
    #[error("evidence `{path}:{start}-{end}`: cite 1 to 6 lines, `start` ≤ `end`, 1-based")]
    Range { path: String, start: u64, end: u64 },
    #[error(transparent)]
    Scope(#[from] super::ScopeFileError),
    #[error("evidence `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "evidence `{path}:{start}-{end}`: the excerpt does not match the file; lines there \
         now: {actual:?}"
    )]
    Mismatch {
        path: String,
        start: u64,
        end: u64,
        actual: String,
    },
}

/// One evidence item: the excerpt is exactly the cited lines (trailing blanks aside).
fn evidence(project: &Project, item: &Value) -> Result<(), EvidenceError> {
    let path = item["path"].as_str().unwrap_or("");
    let (Some(start), Some(end)) = (item["start"].as_u64(), item["end"].as_u64()) else {
        return Err(EvidenceError::NoLines(path.to_string()));
    };
    let excerpt = item["excerpt"].as_str().unwrap_or("");
    if start == 0 || end < start || end - start >= 6 {
        return Err(EvidenceError::Range {
            path: path.to_string(),
            start,
            end,
        });
    }
    let file = file_inside(project, path)?;
    let text = std::fs::read_to_string(&file).map_err(|source| EvidenceError::Read {
        path: path.to_string(),
        source,
    })?;
    let actual: Vec<&str> = text
        .lines()
        .skip(start as usize - 1)
        .take((end - start + 1) as usize)
        .map(str::trim_end)
        .collect();
    let quoted: Vec<&str> = excerpt.lines().map(str::trim_end).collect();
    if actual == quoted {
        Ok(())
    } else {
        Err(EvidenceError::Mismatch {
            path: path.to_string(),
            start,
            end,
            actual: actual.join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_select_with_wildcards_and_other_steps() {
        let v = json!({"steps": [{"files": ["a", "b"]}, {"files": ["c"]}]});
        let got: Vec<&str> = select(&v, "/steps/*/files/*")
            .into_iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(got, vec!["a", "b", "c"]);
        assert_eq!(
            split_pointer("scope:/primary/*"),
            (Some("scope"), "/primary/*")
        );
        assert_eq!(split_pointer("/primary/*"), (None, "/primary/*"));
    }

    #[test]
    fn in_scope_names_the_stray_file() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        let mut accepted = BTreeMap::new();
        accepted.insert("scope".to_string(), json!({"primary": ["src/a.rs"]}));
        let result = json!({"steps": [{"files": ["./src/a.rs", "src/b.rs"]}]});
        let subject = Subject {
            project: &project,
            result: &result,
            accepted: &accepted,
        };
        let check = Check::InScope {
            files: vec!["/steps/*/files/*".into()],
            scope: vec!["scope:/primary/*".into()],
        };
        let (errors, _) = run(&[check], &subject);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("src/b.rs"));
    }
}
