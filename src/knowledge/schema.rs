//! The knowledge store's schema, as an ordered list of migrations. `PRAGMA user_version` holds how
//! many have run; opening a store runs the missing ones in one immediate transaction, so two
//! processes opening a new store at once cannot both migrate it.

use rusqlite::{Connection, TransactionBehavior};

use super::KnowledgeError;

/// Migration `i` brings the store from version `i` to `i + 1`. Never edit a released one; append.
const MIGRATIONS: &[&str] = &[
    // 1: sources, notes (with every source that saw them), entities, relations, full-text index.
    r#"
    CREATE TABLE sources (
        id            INTEGER PRIMARY KEY,
        path          TEXT NOT NULL,
        checksum      TEXT NOT NULL,
        focus         TEXT NOT NULL DEFAULT '',
        size          INTEGER NOT NULL,
        lines         INTEGER NOT NULL,
        language      TEXT NOT NULL DEFAULT '',
        purpose       TEXT NOT NULL DEFAULT '',
        git_commit    TEXT,
        git_branch    TEXT,
        git_dirty     INTEGER,
        analysed_at   TEXT NOT NULL,
        model         TEXT NOT NULL,
        summary       TEXT NOT NULL,
        hits          INTEGER NOT NULL DEFAULT 0,
        superseded_at TEXT,
        superseded_by INTEGER REFERENCES sources(id)
    );
    CREATE INDEX sources_lookup ON sources(path, focus, checksum);
    CREATE UNIQUE INDEX sources_current ON sources(path, focus) WHERE superseded_at IS NULL;

    CREATE TABLE notes (
        id         INTEGER PRIMARY KEY,
        source_id  INTEGER NOT NULL REFERENCES sources(id),
        kind       TEXT NOT NULL,
        text       TEXT NOT NULL,
        norm       TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end   INTEGER NOT NULL,
        importance REAL NOT NULL DEFAULT 0.5,
        reinforced INTEGER NOT NULL DEFAULT 0,
        superseded INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX notes_source ON notes(source_id);

    CREATE TABLE note_sources (
        note_id    INTEGER NOT NULL REFERENCES notes(id),
        source_id  INTEGER NOT NULL REFERENCES sources(id),
        line_start INTEGER NOT NULL,
        line_end   INTEGER NOT NULL,
        PRIMARY KEY (note_id, source_id)
    );
    CREATE INDEX note_sources_source ON note_sources(source_id);

    CREATE TABLE entities (
        id          INTEGER PRIMARY KEY,
        source_id   INTEGER NOT NULL REFERENCES sources(id),
        name        TEXT NOT NULL,
        kind        TEXT NOT NULL,
        description TEXT NOT NULL,
        line_start  INTEGER NOT NULL,
        line_end    INTEGER NOT NULL
    );
    CREATE INDEX entities_source ON entities(source_id);

    CREATE TABLE relations (
        id         INTEGER PRIMARY KEY,
        source_id  INTEGER NOT NULL REFERENCES sources(id),
        from_name  TEXT NOT NULL,
        to_name    TEXT NOT NULL,
        kind       TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end   INTEGER NOT NULL
    );
    CREATE INDEX relations_source ON relations(source_id);

    CREATE VIRTUAL TABLE notes_fts USING fts5(
        text, content='notes', content_rowid='id', tokenize='porter unicode61'
    );
    CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts(notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    "#,
    // 2: a vector per note from an embeddings model, and the model that made it
    // (docs/knowledge.md, "Reinforcement"). Older notes keep NULL and are matched by text.
    r#"
    ALTER TABLE notes ADD COLUMN embedding BLOB;
    ALTER TABLE notes ADD COLUMN embedding_model TEXT;
    CREATE INDEX notes_embedding ON notes(embedding_model) WHERE embedding IS NOT NULL;
    "#,
];

/// The schema version this build writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Runs the migrations `conn` lacks; refuses a store written by a newer build.
pub fn migrate(conn: &mut Connection) -> Result<(), KnowledgeError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > VERSION {
        return Err(KnowledgeError::NewerSchema {
            found: current,
            supported: VERSION,
        });
    }
    for sql in &MIGRATIONS[current as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_store_migrates_and_keeps_its_notes() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
            "INSERT INTO sources (path, checksum, size, lines, analysed_at, model, summary) \
             VALUES ('a.md', 'sha256:x', 1, 1, 't', 'offline/default', '');
             INSERT INTO notes (source_id, kind, text, norm, line_start, line_end) \
             VALUES (1, 'fact', 'Old note', 'old note', 1, 1);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, VERSION);
        const { assert!(VERSION >= 2) };
        let (text, embedding): (String, Option<Vec<u8>>) = conn
            .query_row("SELECT text, embedding FROM notes", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((text.as_str(), embedding), ("Old note", None));
        // Opening again runs nothing more.
        migrate(&mut conn).unwrap();
    }

    #[test]
    fn a_store_from_a_newer_build_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", VERSION + 1)
            .unwrap();
        let e = migrate(&mut conn).unwrap_err();
        assert!(matches!(e, KnowledgeError::NewerSchema { .. }), "{e}");
    }
}
