//! The store read back as JSON: one file's analyses (`knowledge show`), everything current
//! (`knowledge export --json`).

use super::store::{Store, Stored};
use super::{schema, KnowledgeError};

impl Store {
    /// The current analyses of `path` with their notes, entities and relations, as JSON.
    pub fn show(&self, path: &str) -> Result<Vec<serde_json::Value>, KnowledgeError> {
        let sources: Vec<Stored> = self
            .sources()?
            .into_iter()
            .filter(|s| s.path == path)
            .collect();
        sources.iter().map(|s| self.items_of(s)).collect()
    }

    /// Everything current, as one JSON document (`switchboard knowledge export --json`).
    pub fn export(&self) -> Result<serde_json::Value, KnowledgeError> {
        let sources = self
            .sources()?
            .iter()
            .map(|s| self.items_of(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(serde_json::json!({"schema_version": schema::VERSION, "sources": sources}))
    }

    pub(super) fn items_of(&self, s: &Stored) -> Result<serde_json::Value, KnowledgeError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT n.id, n.kind, n.text, ns.line_start, ns.line_end, n.importance, \
             n.reinforced FROM note_sources ns JOIN notes n ON n.id = ns.note_id \
             WHERE ns.source_id = ?1 ORDER BY ns.line_start, n.id",
        )?;
        let notes = stmt
            .query_map([s.id], |r| {
                Ok(serde_json::json!({
                    "id": r.get::<_, i64>(0)?, "kind": r.get::<_, String>(1)?,
                    "text": r.get::<_, String>(2)?,
                    "lines": format!("{}-{}", r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
                    "importance": r.get::<_, f64>(5)?, "reinforced": r.get::<_, i64>(6)?,
                }))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT name, kind, description, line_start, line_end FROM entities \
             WHERE source_id = ?1 ORDER BY line_start, id",
        )?;
        let entities = stmt
            .query_map([s.id], |r| {
                Ok(serde_json::json!({
                    "name": r.get::<_, String>(0)?, "kind": r.get::<_, String>(1)?,
                    "description": r.get::<_, String>(2)?,
                    "lines": format!("{}-{}", r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
                }))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT from_name, kind, to_name, line_start, line_end FROM relations \
             WHERE source_id = ?1 ORDER BY line_start, id",
        )?;
        let relations = stmt
            .query_map([s.id], |r| {
                Ok(serde_json::json!({
                    "from": r.get::<_, String>(0)?, "kind": r.get::<_, String>(1)?,
                    "to": r.get::<_, String>(2)?,
                    "lines": format!("{}-{}", r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
                }))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(serde_json::json!({
            "source": s, "notes": notes, "entities": entities, "relations": relations,
        }))
    }
}
