//! Ranking what the locator's searches returned: BM25F over file names and grep lines, a
//! second, narrower grep when the first was cut off by the tool's limit, and the rule for which
//! documents are worth listing at all.

use super::bm25::{self, Field, Ranker};
use super::parse;

/// Documents listed at most.
pub const TOP_K: usize = 5;
/// The best document must match at least this share of the query's IDF mass.
pub const MIN_COVERAGE: f64 = 0.34;
/// Other documents must score at least this share of the best one.
pub const RELATIVE_FLOOR: f64 = 0.2;
/// A regex that matches every line holding a word that starts like one of the terms.
pub fn terms_pattern(terms: &[String]) -> String {
    let mut prefixes: Vec<String> = terms
        .iter()
        .map(|t| regex::escape(bm25::grep_prefix(t)))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    format!("(?i)(?:\\b|_)(?:{})", prefixes.join("|"))
}
/// The file name as words: `2026-11-08-event-log.md` → `event log`.
pub(super) fn name_words(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    stem.replace(['-', '_'], " ")
}

/// Result lines a search grep returned at most, when it says more were not shown.
fn truncation(output: &str) -> Option<usize> {
    output.lines().rev().take(3).find_map(|l| {
        let t = l.trim();
        if !(t.starts_with('(') && t.contains("more")) {
            return None;
        }
        t.trim_start_matches('(')
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<usize>().ok())
    })
}

/// How the search continues when the first grep was cut off by the tool's result limit.
#[derive(Debug, Clone, PartialEq)]
pub struct RefinePlan {
    /// The rarer terms, whose lines fit in one more grep.
    pub kept: Vec<String>,
    /// Estimated document frequency of each term left out (index into the terms).
    pub df_floor: Vec<(usize, f64)>,
}

/// Result lines a refined grep aims to stay under.
const REFINE_BUDGET: f64 = 400.0;

/// When the search grep was truncated: keep the terms whose estimated line count fits the
/// budget (rarest first), and estimate the document frequency of the common ones from the sample.
pub fn refine_plan(terms: &[String], search: &[super::Exchange]) -> Option<RefinePlan> {
    let grep = search.iter().find(|e| e.call.name == "grep")?;
    let out = grep.ok()?;
    let more = truncation(out)?;
    let hits: Vec<parse::GrepLine> = parse::grep_lines(out).collect();
    let shown = hits.len().max(1) as f64;
    let scale = (shown + more as f64) / shown;
    let mut lines = vec![0usize; terms.len()];
    let mut docs: Vec<std::collections::BTreeSet<&str>> = vec![Default::default(); terms.len()];
    for hit in &hits {
        let tokens = bm25::tokenize(hit.text);
        for (i, t) in terms.iter().enumerate() {
            if tokens.contains(t) {
                lines[i] += 1;
                docs[i].insert(hit.path);
            }
        }
    }
    let mut order: Vec<usize> = (0..terms.len()).collect();
    order.sort_by_key(|&i| (lines[i], i));
    let mut kept_idx = Vec::new();
    let mut estimate = 0.0;
    for i in order {
        let est = lines[i] as f64 * scale;
        if estimate + est <= REFINE_BUDGET {
            estimate += est;
            kept_idx.push(i);
        }
    }
    kept_idx.sort();
    let kept = kept_idx.iter().map(|&i| terms[i].clone()).collect();
    let df_floor = (0..terms.len())
        .filter(|i| !kept_idx.contains(i))
        .map(|i| (i, docs[i].len() as f64 * scale))
        .collect();
    Some(RefinePlan { kept, df_floor })
}

/// Heading, title, topic and tags lines that hold a query term (few, even in a large corpus).
pub fn headings_pattern(terms: &[String]) -> String {
    let inner = terms_pattern(terms);
    let alternatives = inner.trim_start_matches("(?i)");
    format!("(?i)^(?:#{{1,6}} |topic:|title:|tags:).*{alternatives}")
}

/// Scores every file the search saw: names from glob, lines from every search grep (each
/// `path:line` counted once), document frequencies corrected for a truncated first grep.
/// `question` is the text the terms came from (its participles weigh less in coverage).
pub fn rank(terms: &[String], question: &str, search: &[super::Exchange]) -> Vec<bm25::Scored> {
    let mut ranker = Ranker::new(terms.to_vec());
    ranker.set_predicates(question);
    let mut seen: std::collections::HashSet<(&str, usize)> = std::collections::HashSet::new();
    for ex in search {
        let Some(out) = ex.ok() else { continue };
        match ex.call.name.as_str() {
            "glob" | "list" => {
                for path in parse::path_lines(out) {
                    if path.ends_with('/') {
                        continue;
                    }
                    ranker.add(path, Field::Heading, &name_words(path));
                }
            }
            "grep" => {
                for hit in parse::grep_lines(out) {
                    if seen.insert((hit.path, hit.line)) {
                        ranker.add(hit.path, bm25::field_of_line(hit.text), hit.text);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(plan) = refine_plan(terms, search) {
        for (i, df) in plan.df_floor {
            ranker.set_df_floor(i, df);
        }
    }
    ranker.rank()
}

/// The documents worth listing: none when the best is too weak, else the top few.
pub fn keep(ranked: &[bm25::Scored]) -> Vec<bm25::Scored> {
    let Some(best) = ranked.first() else {
        return Vec::new();
    };
    if best.coverage < MIN_COVERAGE {
        return Vec::new();
    }
    ranked
        .iter()
        .filter(|s| s.score >= best.score * RELATIVE_FLOOR)
        .take(TOP_K)
        .cloned()
        .collect()
}
