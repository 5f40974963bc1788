//! `.switchboard/knowledge.db`: sources (one analysed file version each), notes, entities and
//! relations, every one tied to its source and line range.
//!
//! Concurrency: WAL lets readers run beside one writer; every write is one `BEGIN IMMEDIATE`
//! transaction (it takes the write lock up front, so two writers never deadlock upgrading a read
//! lock), and a busy timeout makes the second writer wait instead of failing. Nothing is deleted
//! when a file changes: the old source is marked superseded (and its notes, unless a current
//! source still backs them); `gc` deletes what is superseded, `forget` supersedes a path.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::dedup::{plan_notes, NoteVectors, Target};
use super::extraction::Extraction;
use super::similar::normalise;
use super::source::SourceFile;
use super::{schema, KnowledgeError, DB_PATH};
use crate::project::Project;

/// How long a writer waits for another's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Importance of a new note, and what each reinforcement adds (capped at 1).
const NEW_IMPORTANCE: f64 = 0.5;
const REINFORCE_STEP: f64 = 0.1;

/// An open knowledge store.
pub struct Store {
    /// Shared with `export.rs`, which reads the store back as JSON.
    pub(super) conn: Connection,
    project: Project,
}

/// The provenance of a stored item: the file version and the lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    pub path: String,
    pub checksum: String,
    pub lines: String,
    pub git_commit: Option<String>,
    pub git_branch: Option<String>,
    pub git_dirty: Option<bool>,
    pub analysed_at: String,
    pub focus: String,
    pub model: String,
}

/// A stored analysis of one file version (a row of `sources`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stored {
    pub id: i64,
    pub path: String,
    pub checksum: String,
    pub focus: String,
    pub size: u64,
    pub lines: u64,
    pub language: String,
    pub purpose: String,
    pub analysed_at: String,
    pub model: String,
    pub summary: String,
    pub hits: u64,
    pub git_commit: Option<String>,
    pub git_branch: Option<String>,
    pub git_dirty: Option<bool>,
}

/// What storing one extraction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StoreOutcome {
    pub source_id: i64,
    pub notes_new: usize,
    pub notes_reinforced: usize,
    pub entities: usize,
    pub relations: usize,
    /// The source this one replaced (same path and focus, other checksum).
    pub superseded: Option<i64>,
}

/// One recalled note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recalled {
    pub id: i64,
    pub kind: String,
    pub text: String,
    pub importance: f64,
    pub reinforced: u32,
    pub provenance: Provenance,
    /// The file's current checksum differs from the analysed one (or the file is gone).
    pub stale: bool,
}

/// How much `gc` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    pub sources: usize,
    pub notes: usize,
}

impl Store {
    /// Opens (creating and migrating) the project's store.
    pub fn open(project: &Project) -> Result<Store, KnowledgeError> {
        Store::open_at(project, &project.root().join(DB_PATH))
    }

    /// Opens the store at `path` for `project` (tests and benches use temporary files).
    pub fn open_at(project: &Project, path: &Path) -> Result<Store, KnowledgeError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|error| KnowledgeError::Open {
                path: PathBuf::from(dir),
                error,
            })?;
        }
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching to WAL takes an exclusive lock, and SQLite may answer BUSY at once instead
        // of calling the busy handler when another connection opens the file at the same
        // moment (six threads opening one new store did, in CI): retry for the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(e.into()),
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&mut conn)?;
        Ok(Store {
            conn,
            project: project.clone(),
        })
    }

    /// The current analysis of `path` with `focus`, if its checksum is `checksum`; counts the
    /// hit. This is what makes re-analysing an unchanged file free.
    pub fn hit(
        &self,
        path: &str,
        checksum: &str,
        focus: &str,
    ) -> Result<Option<Stored>, KnowledgeError> {
        let found = self
            .conn
            .query_row(
                &format!(
                    "{SELECT_SOURCE} WHERE path = ?1 AND focus = ?2 AND checksum = ?3 \
                     AND superseded_at IS NULL"
                ),
                params![path, focus, checksum],
                stored_row,
            )
            .optional()?;
        if let Some(s) = &found {
            self.conn
                .execute("UPDATE sources SET hits = hits + 1 WHERE id = ?1", [s.id])?;
        }
        Ok(found.map(|s| Stored {
            hits: s.hits + 1,
            ..s
        }))
    }

    /// Stores one file version's extraction in one transaction: supersedes the previous version
    /// of the same path and focus, then adds notes (reinforcing near-duplicates), entities and
    /// relations. `vectors`, when given, holds one embedding per note: a note close in meaning
    /// to a stored note of the same model reinforces it, and the vector is stored with the note.
    /// Notes without a vector, or whose vector matches nothing, are matched by text.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        file: &SourceFile,
        focus: &str,
        model: &str,
        analysed_at: &str,
        extraction: &Extraction,
        vectors: Option<&NoteVectors>,
        summary: &str,
    ) -> Result<StoreOutcome, KnowledgeError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let previous: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, checksum FROM sources WHERE path = ?1 AND focus = ?2 \
                 AND superseded_at IS NULL",
                params![file.path, focus],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let mut out = StoreOutcome::default();
        if let Some((old, _)) = &previous {
            tx.execute(
                "UPDATE sources SET superseded_at = ?2 WHERE id = ?1",
                params![old, analysed_at],
            )?;
            supersede_notes(&tx, *old)?;
            out.superseded = Some(*old);
        }
        let git = file.git.as_ref();
        tx.execute(
            "INSERT INTO sources (path, checksum, focus, size, lines, language, purpose, \
             git_commit, git_branch, git_dirty, analysed_at, model, summary) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                file.path,
                file.checksum,
                focus,
                file.size as i64,
                file.lines as i64,
                if extraction.language.is_empty() {
                    &file.language
                } else {
                    &extraction.language
                },
                extraction.purpose,
                git.and_then(|g| g.commit.clone()),
                git.and_then(|g| g.branch.clone()),
                git.map(|g| g.dirty),
                analysed_at,
                model,
                summary,
            ],
        )?;
        let source = tx.last_insert_rowid();
        out.source_id = source;
        if let Some((old, _)) = previous {
            tx.execute(
                "UPDATE sources SET superseded_by = ?2 WHERE id = ?1",
                params![old, source],
            )?;
        }
        let planned = plan_notes(&tx, extraction, vectors)?;
        let mut new_ids: Vec<i64> = Vec::new();
        for (note, plan) in extraction.notes.iter().zip(planned) {
            let lines = (note.lines.start, note.lines.end);
            let existing = match plan.target {
                Target::Stored(id) => id,
                Target::Earlier(j) => new_ids[j],
                Target::None => {
                    tx.prepare_cached(
                        "INSERT INTO notes (source_id, kind, text, norm, line_start, line_end, \
                         importance, embedding, embedding_model) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    )?
                    .execute(params![
                        source,
                        note.kind,
                        note.text,
                        plan.norm,
                        lines.0,
                        lines.1,
                        NEW_IMPORTANCE,
                        plan.vector.as_ref().map(|(_, b)| b),
                        plan.vector.as_ref().map(|(m, _)| m),
                    ])?;
                    let id = tx.last_insert_rowid();
                    tx.prepare_cached(
                        "INSERT INTO note_sources (note_id, source_id, line_start, line_end) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![id, source, lines.0, lines.1])?;
                    new_ids.push(id);
                    out.notes_new += 1;
                    continue;
                }
            };
            tx.prepare_cached(
                "UPDATE notes SET importance = min(1.0, importance + ?2), \
                 reinforced = reinforced + 1 WHERE id = ?1",
            )?
            .execute(params![existing, REINFORCE_STEP])?;
            tx.prepare_cached(
                "INSERT OR IGNORE INTO note_sources (note_id, source_id, line_start, line_end) \
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![existing, source, lines.0, lines.1])?;
            // A note stored before embeddings were configured gets this vector, so the next
            // paraphrase finds it by meaning.
            if let Some((model, bytes)) = &plan.vector {
                tx.prepare_cached(
                    "UPDATE notes SET embedding = ?2, embedding_model = ?3 \
                     WHERE id = ?1 AND embedding IS NULL",
                )?
                .execute(params![existing, bytes, model])?;
            }
            out.notes_reinforced += 1;
        }
        for e in &extraction.entities {
            tx.prepare_cached(
                "INSERT INTO entities (source_id, name, kind, description, line_start, line_end) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                source,
                e.name,
                e.kind,
                e.description,
                e.lines.start,
                e.lines.end
            ])?;
            out.entities += 1;
        }
        for r in &extraction.relations {
            tx.prepare_cached(
                "INSERT INTO relations (source_id, from_name, to_name, kind, line_start, \
                 line_end) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                source,
                r.from,
                r.to,
                r.kind,
                r.lines.start,
                r.lines.end
            ])?;
            out.relations += 1;
        }
        tx.commit()?;
        Ok(out)
    }

    /// Sets the summary `analyze_file` returned for `source`, which a later hit returns again.
    pub fn set_summary(&self, source: i64, summary: &str) -> Result<(), KnowledgeError> {
        self.conn.execute(
            "UPDATE sources SET summary = ?2 WHERE id = ?1",
            params![source, summary],
        )?;
        Ok(())
    }

    /// Notes matching `query`, best first: full-text rank (BM25) weighted by importance,
    /// superseded notes left out, optionally only under `path` (a file or folder) and of `kind`.
    pub fn recall(
        &self,
        query: &str,
        path: Option<&str>,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Recalled>, KnowledgeError> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let path = path.map(|p| p.trim_end_matches('/').to_string());
        let mut stmt = self.conn.prepare_cached(
            "SELECT n.id, n.kind, n.text, n.importance, n.reinforced, n.line_start, n.line_end, \
             s.path, s.checksum, s.git_commit, s.git_branch, s.git_dirty, s.analysed_at, \
             s.focus, s.model \
             FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid \
             JOIN sources s ON s.id = n.source_id \
             WHERE notes_fts MATCH ?1 AND n.superseded = 0 \
             AND (?2 IS NULL OR s.path = ?2 OR substr(s.path, 1, length(?2) + 1) = ?2 || '/') \
             AND (?3 IS NULL OR n.kind = ?3) \
             ORDER BY bm25(notes_fts) * (1.0 + n.importance) LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![fts, path, kind, limit as i64], |r| {
            Ok(Recalled {
                id: r.get(0)?,
                kind: r.get(1)?,
                text: r.get(2)?,
                importance: r.get(3)?,
                reinforced: r.get(4)?,
                provenance: Provenance {
                    lines: format!("{}-{}", r.get::<_, i64>(5)?, r.get::<_, i64>(6)?),
                    path: r.get(7)?,
                    checksum: r.get(8)?,
                    git_commit: r.get(9)?,
                    git_branch: r.get(10)?,
                    git_dirty: r.get(11)?,
                    analysed_at: r.get(12)?,
                    focus: r.get(13)?,
                    model: r.get(14)?,
                },
                stale: false,
            })
        })?;
        let mut out = rows.collect::<Result<Vec<_>, _>>()?;
        let mut current: HashMap<String, Option<String>> = HashMap::new();
        for note in &mut out {
            let now = current
                .entry(note.provenance.path.clone())
                .or_insert_with(|| {
                    super::source::current_checksum(&self.project, &note.provenance.path)
                });
            note.stale = now.as_deref() != Some(note.provenance.checksum.as_str());
        }
        Ok(out)
    }

    /// Every current (not superseded) analysis, by path.
    pub fn sources(&self) -> Result<Vec<Stored>, KnowledgeError> {
        let mut stmt = self.conn.prepare(&format!(
            "{SELECT_SOURCE} WHERE superseded_at IS NULL ORDER BY path, focus"
        ))?;
        let rows = stmt.query_map([], stored_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Current analyses whose file changed or disappeared since.
    pub fn stale(&self) -> Result<Vec<Stored>, KnowledgeError> {
        Ok(self
            .sources()?
            .into_iter()
            .filter(|s| {
                super::source::current_checksum(&self.project, &s.path).as_deref()
                    != Some(s.checksum.as_str())
            })
            .collect())
    }

    /// Supersedes every current analysis of `path` (a file, or a folder and what is under it).
    /// Returns how many analyses were superseded.
    pub fn forget(&mut self, path: &str, now: &str) -> Result<usize, KnowledgeError> {
        let path = path.trim_end_matches('/');
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ids: Vec<i64> = {
            let mut stmt = tx.prepare(
                "SELECT id FROM sources WHERE superseded_at IS NULL AND (path = ?1 OR \
                 substr(path, 1, length(?1) + 1) = ?1 || '/')",
            )?;
            let rows = stmt.query_map([path], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        for id in &ids {
            tx.execute(
                "UPDATE sources SET superseded_at = ?2 WHERE id = ?1",
                params![id, now],
            )?;
            supersede_notes(&tx, *id)?;
        }
        tx.commit()?;
        Ok(ids.len())
    }

    /// Deletes superseded analyses and notes for good, then compacts the file.
    pub fn gc(&mut self) -> Result<GcReport, KnowledgeError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let notes = tx.execute(
            "DELETE FROM note_sources WHERE note_id IN (SELECT id FROM notes WHERE superseded = 1)",
            [],
        )?;
        let _ = notes;
        let notes = tx.execute("DELETE FROM notes WHERE superseded = 1", [])?;
        let old = "SELECT id FROM sources WHERE superseded_at IS NOT NULL";
        tx.execute(
            &format!("DELETE FROM note_sources WHERE source_id IN ({old})"),
            [],
        )?;
        // A current note first seen in an old source keeps a current source as its home.
        tx.execute(
            &format!(
                "UPDATE notes SET source_id = (SELECT max(source_id) FROM note_sources ns \
                 WHERE ns.note_id = notes.id) WHERE source_id IN ({old})"
            ),
            [],
        )?;
        tx.execute(
            &format!("DELETE FROM entities WHERE source_id IN ({old})"),
            [],
        )?;
        tx.execute(
            &format!("DELETE FROM relations WHERE source_id IN ({old})"),
            [],
        )?;
        tx.execute(
            "UPDATE sources SET superseded_by = NULL WHERE superseded_by IN \
             (SELECT id FROM sources WHERE superseded_at IS NOT NULL)",
            [],
        )?;
        let sources = tx.execute("DELETE FROM sources WHERE superseded_at IS NOT NULL", [])?;
        tx.commit()?;
        self.conn.execute_batch("VACUUM")?;
        Ok(GcReport { sources, notes })
    }
}

const SELECT_SOURCE: &str = "SELECT id, path, checksum, focus, size, lines, language, purpose, \
     analysed_at, model, summary, hits, git_commit, git_branch, git_dirty FROM sources";

fn stored_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    Ok(Stored {
        id: r.get(0)?,
        path: r.get(1)?,
        checksum: r.get(2)?,
        focus: r.get(3)?,
        size: r.get::<_, i64>(4)? as u64,
        lines: r.get::<_, i64>(5)? as u64,
        language: r.get(6)?,
        purpose: r.get(7)?,
        analysed_at: r.get(8)?,
        model: r.get(9)?,
        summary: r.get(10)?,
        hits: r.get::<_, i64>(11)? as u64,
        git_commit: r.get(12)?,
        git_branch: r.get(13)?,
        git_dirty: r.get(14)?,
    })
}

/// Marks the notes of superseded `source` superseded, except those a current source still backs.
fn supersede_notes(tx: &rusqlite::Transaction<'_>, source: i64) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE notes SET superseded = 1 WHERE superseded = 0 \
         AND id IN (SELECT note_id FROM note_sources WHERE source_id = ?1) \
         AND NOT EXISTS (SELECT 1 FROM note_sources ns JOIN sources s ON s.id = ns.source_id \
             WHERE ns.note_id = notes.id AND s.superseded_at IS NULL)",
        [source],
    )
}

/// A safe FTS5 query from free text: its words, each quoted, any of them (`OR`). `None` when
/// the text has no words. Quoting keeps FTS syntax (`NEAR`, `-`, `:`) in user text inert.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = normalise(text)
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts5_is_compiled_in() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(x); INSERT INTO t VALUES ('hello world');",
        )
        .unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t WHERE t MATCH 'hello'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn user_text_cannot_inject_fts_syntax() {
        assert_eq!(
            fts_query("NEAR(a b) -x: \"y"),
            Some("\"near\" OR \"a\" OR \"b\" OR \"x\" OR \"y\"".into())
        );
        assert_eq!(fts_query("  ?! "), None);
    }
}
