//! What the file analyzer answers for one chunk (the JSON of agent/file-analyzer.md), and the
//! merge of every chunk's answer into one extraction for the whole file.
//!
//! Every item cites the lines it came from in the whole file (`"lines": "200-214"`): the chunk
//! prompt numbers lines as `read` does, so the model never has to add an offset. An item whose
//! range lies outside its chunk is cut to the chunk, and one that misses the chunk entirely is
//! dropped: items without a true provenance are never stored.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

use super::chunk::Chunk;
use super::similar::normalise;

/// One chunk's answer, as the contract shapes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ChunkAnswer {
    #[serde(default)]
    pub purpose: String,
    #[serde(default)]
    pub language: String,
    #[serde(default)]
    pub notes: Vec<RawNote>,
    #[serde(default)]
    pub entities: Vec<RawEntity>,
    #[serde(default)]
    pub relations: Vec<RawRelation>,
    #[serde(default)]
    pub focus_points: Vec<RawNote>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct RawNote {
    #[serde(default)]
    pub kind: String,
    pub text: String,
    pub lines: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct RawEntity {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub description: String,
    pub lines: String,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct RawRelation {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub lines: String,
}

/// A 1-based inclusive line range in the whole file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Lines {
    pub start: u32,
    pub end: u32,
}

impl std::fmt::Display for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// `N` or `N-M` (also `N–M`), cut to the chunk's lines; `None` when it misses the chunk.
pub fn parse_lines(s: &str, within: Lines) -> Option<Lines> {
    let s = s.trim().trim_start_matches('L');
    let (a, b) = match s.split_once(['-', '–']) {
        Some((a, b)) => (a.trim(), b.trim().trim_start_matches('L')),
        None => (s, s),
    };
    let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
    let (a, b) = (a.min(b), a.max(b));
    if b < within.start || a > within.end {
        return None;
    }
    Some(Lines {
        start: a.max(within.start),
        end: b.min(within.end),
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    pub kind: String,
    pub text: String,
    pub lines: Lines,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entity {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub lines: Lines,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relation {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub lines: Lines,
}

/// The whole file's knowledge, merged from its chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extraction {
    pub purpose: String,
    pub language: String,
    pub notes: Vec<Note>,
    pub entities: Vec<Entity>,
    pub relations: Vec<Relation>,
    /// Items dropped because their lines missed their chunk.
    pub dropped: usize,
}

impl Extraction {
    /// Merges chunk answers in order: the first non-empty purpose and language win; notes equal
    /// after normalising are kept once (the first, so the earliest lines); entities are unique by
    /// (name, kind) and relations by (from, kind, to).
    pub fn merge(parts: &[(Chunk, ChunkAnswer)]) -> Extraction {
        let mut out = Extraction::default();
        let mut seen_notes = HashSet::new();
        let mut seen_entities = HashSet::new();
        let mut seen_relations = HashSet::new();
        for (chunk, answer) in parts {
            let within = Lines {
                start: chunk.line_start,
                end: chunk.line_end,
            };
            if out.purpose.is_empty() {
                out.purpose = answer.purpose.trim().to_string();
            }
            if out.language.is_empty() {
                out.language = answer.language.trim().to_string();
            }
            let focus = answer.focus_points.iter().map(|n| RawNote {
                kind: "focus".into(),
                ..n.clone()
            });
            for raw in answer.notes.iter().cloned().chain(focus) {
                let text = raw.text.trim();
                if text.is_empty() {
                    continue;
                }
                let Some(lines) = parse_lines(&raw.lines, within) else {
                    out.dropped += 1;
                    continue;
                };
                let kind = if raw.kind.trim().is_empty() {
                    "fact".to_string()
                } else {
                    raw.kind.trim().to_lowercase()
                };
                if seen_notes.insert(normalise(text)) {
                    out.notes.push(Note {
                        kind,
                        text: text.to_string(),
                        lines,
                    });
                }
            }
            for raw in &answer.entities {
                let Some(lines) = parse_lines(&raw.lines, within) else {
                    out.dropped += 1;
                    continue;
                };
                let key = (raw.name.trim().to_string(), raw.kind.trim().to_lowercase());
                if key.0.is_empty() || !seen_entities.insert(key.clone()) {
                    continue;
                }
                out.entities.push(Entity {
                    name: key.0,
                    kind: key.1,
                    description: raw.description.trim().to_string(),
                    lines,
                });
            }
            for raw in &answer.relations {
                let Some(lines) = parse_lines(&raw.lines, within) else {
                    out.dropped += 1;
                    continue;
                };
                let key = (
                    raw.from.trim().to_string(),
                    raw.kind.trim().to_lowercase(),
                    raw.to.trim().to_string(),
                );
                if key.0.is_empty() || key.2.is_empty() || !seen_relations.insert(key.clone()) {
                    continue;
                }
                out.relations.push(Relation {
                    from: key.0,
                    kind: key.1,
                    to: key.2,
                    lines,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(start: u32, end: u32) -> Chunk {
        Chunk {
            index: 1,
            total: 1,
            start_byte: 0,
            end_byte: 0,
            line_start: start,
            line_end: end,
            text: String::new(),
        }
    }

    #[test]
    fn line_ranges_are_cut_to_the_chunk_or_dropped() {
        let within = Lines { start: 10, end: 20 };
        assert_eq!(
            parse_lines("12-14", within),
            Some(Lines { start: 12, end: 14 })
        );
        assert_eq!(
            parse_lines("8-12", within),
            Some(Lines { start: 10, end: 12 })
        );
        assert_eq!(
            parse_lines("15", within),
            Some(Lines { start: 15, end: 15 })
        );
        assert_eq!(parse_lines("30-40", within), None);
        assert_eq!(parse_lines("x", within), None);
    }

    #[test]
    fn merging_keeps_one_copy_and_drops_items_without_provenance() {
        let a = ChunkAnswer {
            purpose: "Explains the store.".into(),
            language: "markdown".into(),
            notes: vec![
                RawNote {
                    kind: "heading".into(),
                    text: "The Store".into(),
                    lines: "1".into(),
                },
                RawNote {
                    kind: "fact".into(),
                    text: "Nowhere".into(),
                    lines: "99".into(),
                },
            ],
            ..Default::default()
        };
        let b = ChunkAnswer {
            notes: vec![RawNote {
                kind: "heading".into(),
                text: "the store!".into(),
                lines: "12".into(),
            }],
            ..Default::default()
        };
        let merged = Extraction::merge(&[(chunk(1, 10), a), (chunk(11, 20), b)]);
        assert_eq!(merged.purpose, "Explains the store.");
        assert_eq!(merged.notes.len(), 1);
        assert_eq!(merged.notes[0].lines, Lines { start: 1, end: 1 });
        assert_eq!(merged.dropped, 1);
    }
}
