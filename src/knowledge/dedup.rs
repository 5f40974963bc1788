//! Which stored note a new note repeats, if any: by meaning when the note has a vector from an
//! embeddings model (cosine similarity of unit vectors), else by wording (trigram similarity of
//! normalised text over a few full-text candidates). The store reinforces the note found
//! instead of adding a copy (docs/knowledge.md, "Reinforcement").
//!
//! Vectors are stored as little-endian `f32` BLOBs, normalised to unit length when they arrive,
//! so cosine similarity is a dot product. Each vector is stored with the `PROVIDER/MODEL` that
//! made it, and only vectors of one model are compared.

use rusqlite::params;

use super::extraction::Extraction;
use super::similar::{normalise, similarity, DUPLICATE};

/// Cosine similarity at or above which two notes' vectors make them one note, when
/// `[knowledge] embeddings_threshold` does not say. Paraphrases of one statement score about
/// 0.9 and above with common embedding models; related but distinct statements score lower.
pub const DEFAULT_EMBEDDINGS_THRESHOLD: f64 = 0.9;

/// Vectors for an extraction's notes: one per note, in the notes' order, all from `model`.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteVectors {
    /// `PROVIDER/MODEL`, stored beside every vector.
    pub model: String,
    pub threshold: f32,
    vectors: Vec<Option<Vec<f32>>>,
}

impl NoteVectors {
    /// Normalises each vector to unit length; a zero or non-finite vector becomes none (that
    /// note falls back to text similarity).
    pub fn new(model: &str, threshold: f64, raw: Vec<Vec<f32>>) -> NoteVectors {
        NoteVectors {
            model: model.to_string(),
            threshold: threshold as f32,
            vectors: raw.into_iter().map(unit).collect(),
        }
    }

    /// The vector of note `i`, if it has one.
    pub fn get(&self, i: usize) -> Option<&[f32]> {
        self.vectors.get(i).and_then(|v| v.as_deref())
    }
}

fn unit(mut v: Vec<f32>) -> Option<Vec<f32>> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    v.iter_mut().for_each(|x| *x /= norm);
    Some(v)
}

/// A vector as stored: little-endian `f32`s.
pub fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector; `None` when the bytes are not a whole number of `f32`s.
pub fn decode(bytes: &[u8]) -> Option<Vec<f32>> {
    bytes.len().is_multiple_of(4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    })
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The note a new note repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// A stored note, by id.
    Stored(i64),
    /// An earlier note of the same extraction, by its index among the extraction's new notes.
    Earlier(usize),
    /// None: the note is new.
    None,
}

/// What to do with one note of an extraction.
pub(super) struct Plan {
    pub norm: String,
    pub target: Target,
    /// The note's vector, encoded, and its model: stored with a new note, or given to a matched
    /// note that has none.
    pub vector: Option<(String, Vec<u8>)>,
}

/// Decides, for every note of `extraction` in order, which note it repeats, before anything is
/// written. Looking everything up first matters for speed: FTS5 writes its pending inserts out
/// as a new index segment whenever it is queried, so interleaving one lookup and one insert
/// per note left one tiny segment per note, and every later lookup had to seek through all of
/// them (the top cost of storing; BENCHMARKS.md, "Knowledge store"). Notes of this extraction
/// are matched against each other in memory instead.
pub(super) fn plan_notes(
    tx: &rusqlite::Transaction<'_>,
    extraction: &Extraction,
    vectors: Option<&NoteVectors>,
) -> rusqlite::Result<Vec<Plan>> {
    let mut index = match vectors {
        Some(v) => Some(VectorIndex::load(tx, &v.model)?),
        None => None,
    };
    // (kind, norm) of each new note so far, by its index among the new notes.
    let mut fresh: Vec<(&str, String)> = Vec::new();
    let mut out = Vec::with_capacity(extraction.notes.len());
    for (i, note) in extraction.notes.iter().enumerate() {
        let norm = normalise(&note.text);
        let vector = vectors.and_then(|v| Some((v, v.get(i)?)));
        let by_meaning = match (vector, &index) {
            (Some((v, vector)), Some(ix)) => ix.nearest(&note.kind, vector, v.threshold),
            _ => None,
        };
        let target = match by_meaning {
            Some(t) => t,
            None => match fresh.iter().position(|(kind, other)| {
                *kind == note.kind && similarity(&norm, other) >= DUPLICATE
            }) {
                Some(j) => Target::Earlier(j),
                None => near_duplicate(tx, &note.kind, &norm)?.map_or(Target::None, Target::Stored),
            },
        };
        if let (Some(ix), Some((_, vector))) = (index.as_mut(), vector) {
            match target {
                Target::None => ix.push(Target::Earlier(fresh.len()), &note.kind, vector),
                // A stored note without a vector takes this one (see `Plan::vector`).
                Target::Stored(id) if !ix.has(id) => ix.push(target, &note.kind, vector),
                _ => {}
            }
        }
        if target == Target::None {
            fresh.push((note.kind.as_str(), norm.clone()));
        }
        out.push(Plan {
            norm,
            target,
            vector: vector.map(|(v, vector)| (v.model.clone(), encode(vector))),
        });
    }
    Ok(out)
}

/// The current notes' vectors of one model, read once per stored file and compared in memory:
/// a linear scan, which is fine for tens of thousands of notes (see docs/knowledge.md, Limits).
pub(super) struct VectorIndex {
    rows: Vec<(Target, String, Vec<f32>)>,
}

impl VectorIndex {
    pub(super) fn load(tx: &rusqlite::Transaction<'_>, model: &str) -> rusqlite::Result<Self> {
        let mut stmt = tx.prepare(
            "SELECT id, kind, embedding FROM notes WHERE superseded = 0 \
             AND embedding_model = ?1 AND embedding IS NOT NULL",
        )?;
        let rows = stmt.query_map([model], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, kind, bytes) = row?;
            if let Some(v) = decode(&bytes) {
                out.push((Target::Stored(id), kind, v));
            }
        }
        Ok(VectorIndex { rows: out })
    }

    /// The most similar note of `kind` at or above `threshold`.
    pub(super) fn nearest(&self, kind: &str, v: &[f32], threshold: f32) -> Option<Target> {
        self.rows
            .iter()
            .filter(|(_, k, other)| k == kind && other.len() == v.len())
            .map(|(target, _, other)| (*target, dot(v, other)))
            .filter(|(_, score)| *score >= threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(id, _)| id)
    }

    pub(super) fn push(&mut self, target: Target, kind: &str, v: &[f32]) {
        self.rows.push((target, kind.to_string(), v.to_vec()));
    }

    fn has(&self, id: i64) -> bool {
        self.rows.iter().any(|(t, _, _)| *t == Target::Stored(id))
    }
}

/// A current note of `kind` whose normalised text is within [`DUPLICATE`] of `norm`: the
/// full-text index proposes a few candidates, the trigram similarity decides.
fn near_duplicate(
    tx: &rusqlite::Transaction<'_>,
    kind: &str,
    norm: &str,
) -> rusqlite::Result<Option<i64>> {
    let Some(fts) = duplicate_query(norm) else {
        return Ok(None);
    };
    let mut stmt = tx.prepare_cached(
        "SELECT n.id, n.norm FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid \
         WHERE notes_fts MATCH ?1 AND n.superseded = 0 AND n.kind = ?2 \
         ORDER BY bm25(notes_fts) LIMIT 8",
    )?;
    let candidates = stmt.query_map(params![fts, kind], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    for c in candidates {
        let (id, other) = c?;
        if similarity(norm, &other) >= DUPLICATE {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The candidate query for near-duplicates of `norm`: any two of its three longest words (a
/// note at [`DUPLICATE`] similarity shares nearly all its words, and long words are the rare
/// ones). Asking for all words with `OR` instead made every insert score thousands of notes
/// that share "the" (0.3 MB/s analysed and stored; see BENCHMARKS.md).
fn duplicate_query(norm: &str) -> Option<String> {
    let mut words: Vec<&str> = norm.split(' ').filter(|w| !w.is_empty()).collect();
    words.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    words.dedup();
    let q: Vec<String> = words.iter().take(3).map(|w| format!("\"{w}\"")).collect();
    match q.as_slice() {
        [] => None,
        [a] => Some(a.clone()),
        [a, b] => Some(format!("{a} AND {b}")),
        [a, b, c, ..] => Some(format!("({a} AND {b}) OR ({a} AND {c}) OR ({b} AND {c})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_candidates_need_two_of_the_three_longest_words() {
        assert_eq!(
            duplicate_query("the event log is append only"),
            Some("(\"append\" AND \"event\") OR (\"append\" AND \"only\") OR (\"event\" AND \"only\")".into())
        );
        assert_eq!(duplicate_query("a b"), Some("\"a\" AND \"b\"".into()));
        assert_eq!(duplicate_query(""), None);
    }

    #[test]
    fn vectors_are_unit_length_and_round_trip_through_bytes() {
        let v = NoteVectors::new("p/m", 0.9, vec![vec![3.0, 4.0], vec![0.0, 0.0]]);
        assert_eq!(v.get(0), Some(&[0.6f32, 0.8][..]));
        assert_eq!(v.get(1), None, "a zero vector has no direction");
        assert_eq!(v.get(2), None);
        let bytes = encode(&[0.6, -0.8]);
        assert_eq!(bytes.len(), 8);
        assert_eq!(decode(&bytes), Some(vec![0.6, -0.8]));
        assert_eq!(decode(&bytes[..7]), None);
    }

    #[test]
    fn the_nearest_note_of_the_same_kind_above_the_threshold_wins() {
        let mut ix = VectorIndex { rows: Vec::new() };
        let v = |x: f32, y: f32| unit(vec![x, y]).unwrap();
        ix.push(Target::Stored(1), "fact", &v(1.0, 0.0));
        ix.push(Target::Stored(2), "fact", &v(1.0, 0.2));
        ix.push(Target::Earlier(0), "heading", &v(1.0, 0.1));
        ix.push(Target::Stored(4), "fact", &[1.0, 0.0, 0.0]);
        assert_eq!(
            ix.nearest("fact", &v(1.0, 0.15), 0.9),
            Some(Target::Stored(2))
        );
        assert_eq!(
            ix.nearest("heading", &v(1.0, 0.15), 0.9),
            Some(Target::Earlier(0))
        );
        assert_eq!(ix.nearest("fact", &v(0.0, 1.0), 0.9), None);
        assert_eq!(ix.nearest("decision", &v(1.0, 0.0), 0.9), None);
    }
}
