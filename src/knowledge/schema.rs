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
