//! Tokenizing and BM25F ranking over documents whose fields are title, headings and body.
//!
//! Documents reach the ranker as the lines a search tool returned (`path:line:text`), so the
//! ranker never needs whole files: every line that holds a query term is in the tool output, and
//! lines without one contribute nothing to a term's frequency. Length normalisation is therefore
//! off (`b = 0`); what matters is which field a term appears in and how often.

use std::collections::{BTreeMap, HashMap, HashSet};

/// Words that carry no topic: English function words and the boilerplate of delegation prompts.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "every",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "may",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "there",
    "use",
    "used",
    "using",
    "get",
    "gets",
    "got",
    "one",
    "two",
    "way",
    "ways",
    "thing",
    "things",
    "kind",
    // Question and prompt boilerplate: the verbs a request is phrased with. Nouns stay terms,
    // even ones the runtime's `Correlation: …` suffix uses (that suffix is cut off before
    // tokenizing) and ones a prompt also uses (`list`, `answer`, `search`): a user asking about
    // correlation ids means them.
    "decide",
    "find",
    "document",
    "documents",
    "doc",
    "docs",
    "related",
    "relevant",
    "please",
    "locate",
    "look",
    "tell",
    "know",
    "thoughts",
    "shared",
    "md",
    "say",
    "says",
    "said",
    "happen",
    "happens",
];

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Light suffix stripping; every stem is a prefix of its word except for the `y` → `i` rule,
/// which [`grep_prefix`] undoes.
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    if !w.is_ascii() {
        return w;
    }
    if w.len() <= 3 {
        // Short plurals (`ids`, `ops`) meet their singular; `bus`, `gas`-like words are rare
        // enough in design documents that a shared stem costs nothing.
        if w.len() == 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
            w.pop();
        }
        return w;
    }
    if let Some(s) = w.strip_suffix("sses") {
        w = format!("{s}ss");
    } else if let Some(s) = w.strip_suffix("ies") {
        w = format!("{s}i");
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    // `ation` → `at`, `tion` → `t`, `ing` → ``: each drops three letters.
    let drop_three = (w.len() > 6 && w.ends_with("ation"))
        || (w.len() > 5 && (w.ends_with("tion") || w.ends_with("ing")));
    if drop_three {
        w.truncate(w.len() - 3);
    } else if w.len() > 4 && w.ends_with("ed") {
        w.truncate(w.len() - 2);
    }
    if w.len() > 4 && w.ends_with('e') {
        w.pop();
    }
    if w.len() > 3 && w.ends_with('y') {
        w.pop();
        w.push('i');
    }
    w
}

/// The part of a stem every word with that stem starts with (for a search pattern).
pub fn grep_prefix(stem: &str) -> &str {
    if stem.len() > 3 {
        stem.strip_suffix('i').unwrap_or(stem)
    } else {
        stem
    }
}

/// Lowercase words split on anything not alphanumeric, stopwords dropped, stemmed.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let lower = word.to_lowercase();
        if is_stopword(&lower) || lower.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        out.push(stem(&lower));
    }
    out
}

/// The stems of the question's participles (`propagated`, `stored`, `handling`): how the asker
/// words what happens to the topic, which documents often word differently.
pub fn predicate_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.len() > 5 && (w.ends_with("ed") || w.ends_with("ing")) && !is_stopword(w))
        .map(|w| stem(&w))
        .collect()
}

/// Query terms in first-seen order, each once.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    tokenize(text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// Where on a document a term was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The first `# ` heading, the frontmatter `topic:` or the file name.
    Title,
    /// Other headings and frontmatter `tags:`.
    Heading,
    Body,
}

impl Field {
    fn weight(self) -> f64 {
        match self {
            Field::Title => 3.0,
            Field::Heading => 2.0,
            Field::Body => 1.0,
        }
    }
}

/// Which field a line of markdown belongs to.
pub fn field_of_line(text: &str) -> Field {
    let t = text.trim_start();
    if t.starts_with("# ") || t.starts_with("topic:") || t.starts_with("title:") {
        Field::Title
    } else if t.starts_with('#') || t.starts_with("tags:") {
        Field::Heading
    } else {
        Field::Body
    }
}

/// BM25F over a fixed query: add field text per document, then score.
#[derive(Debug, Default)]
pub struct Ranker {
    terms: Vec<String>,
    term_index: HashMap<String, usize>,
    /// Per document: weighted term frequency per query term.
    docs: BTreeMap<String, Vec<f64>>,
    /// Lower bounds on document frequencies known from outside the added text.
    df_floor: Vec<f64>,
    /// Terms that came from a participle of the question (see [`predicate_terms`]).
    predicates: Vec<usize>,
}

/// A ranked document.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub path: String,
    pub score: f64,
    /// Share of the query's IDF mass the document matched (0..=1).
    pub coverage: f64,
}

const K1: f64 = 1.2;

impl Ranker {
    pub fn new(terms: Vec<String>) -> Self {
        let term_index = terms
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i))
            .collect();
        Ranker {
            df_floor: vec![0.0; terms.len()],
            predicates: Vec::new(),
            terms,
            term_index,
            docs: BTreeMap::new(),
        }
    }

    /// Declares that term `i` occurs in at least `df` documents (for a sampled term).
    pub fn set_df_floor(&mut self, i: usize, df: f64) {
        if let Some(f) = self.df_floor.get_mut(i) {
            *f = df;
        }
    }

    /// Marks the terms that stem from the question's participles (`predicate_terms`).
    pub fn set_predicates(&mut self, question: &str) {
        let predicates = predicate_terms(question);
        self.predicates = (0..self.terms.len())
            .filter(|&i| predicates.contains(&self.terms[i]))
            .collect();
    }

    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Makes `path` a known document even if nothing in it matched (for the IDF's N).
    pub fn ensure(&mut self, path: &str) {
        if !self.docs.contains_key(path) {
            self.docs
                .insert(path.to_string(), vec![0.0; self.terms.len()]);
        }
    }

    /// Counts the query terms in `text`, a piece of `path` in `field`.
    pub fn add(&mut self, path: &str, field: Field, text: &str) {
        self.ensure(path);
        let Some(tf) = self.docs.get_mut(path) else {
            return;
        };
        for token in tokenize(text) {
            if let Some(&i) = self.term_index.get(&token) {
                tf[i] += field.weight();
            }
        }
    }

    /// Documents with a positive score, best first (ties by path for determinism).
    pub fn rank(&self) -> Vec<Scored> {
        let n = self.docs.len() as f64;
        let mut df = vec![0usize; self.terms.len()];
        for tf in self.docs.values() {
            for (i, &f) in tf.iter().enumerate() {
                if f > 0.0 {
                    df[i] += 1;
                }
            }
        }
        let idf: Vec<f64> = df
            .iter()
            .zip(&self.df_floor)
            .map(|(&d, &floor)| {
                // A term no document holds weighs as much as one held by a single document:
                // it still counts against coverage (a question about something the corpus never
                // mentions finds nothing), but one unmatched verb ("propagated") no longer
                // outweighs two matched nouns ("correlation ids").
                let d = (d as f64).max(floor).max(1.0).min(n);
                (1.0 + (n - d + 0.5) / (d + 0.5)).ln()
            })
            .collect();
        // The coverage a document needs is measured against the query's IDF mass. A term no
        // document holds that came from a participle ("how are ids *propagated*") is the
        // question's predicate, worded as the asker would; documents word it their own way
        // ("passed to every hop"), so it counts half.
        let total: f64 = idf
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if df[i] == 0 && self.predicates.contains(&i) {
                    w / 2.0
                } else {
                    *w
                }
            })
            .sum();
        let mut out: Vec<Scored> = self
            .docs
            .iter()
            .filter_map(|(path, tf)| {
                let mut score = 0.0;
                let mut matched = 0.0;
                for (i, &f) in tf.iter().enumerate() {
                    if f > 0.0 {
                        score += idf[i] * f * (K1 + 1.0) / (f + K1);
                        matched += idf[i];
                    }
                }
                (score > 0.0).then(|| Scored {
                    path: path.clone(),
                    score,
                    coverage: if total > 0.0 { matched / total } else { 0.0 },
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.path.cmp(&b.path))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_are_prefixes_for_grep() {
        for (word, expect) in [
            ("decided", "decid"),
            ("decide", "decid"),
            ("delegation", "delegat"),
            ("delegate", "delegat"),
            ("policies", "polici"),
            ("policy", "polici"),
            ("messages", "messag"),
            ("repairing", "repair"),
            ("extraction", "extract"),
            ("log", "log"),
        ] {
            let s = stem(word);
            assert_eq!(s, expect, "{word}");
            assert!(word.starts_with(grep_prefix(&s)), "{word}");
        }
    }

    #[test]
    fn tokenize_drops_stopwords_and_boilerplate() {
        assert_eq!(
            tokenize("Find every document about the Event-Log, please!"),
            vec!["event", "log"]
        );
        assert_eq!(query_terms("log logs LOG event"), vec!["log", "event"]);
    }

    /// Domain nouns are query terms, even ones that also appear in prompt boilerplate
    /// (`Correlation: …`) or look short (`ids`); only the question's own words are dropped.
    #[test]
    fn query_keeps_domain_nouns_and_drops_question_words() {
        assert_eq!(
            query_terms("How are correlation ids propagated?"),
            vec!["correlat", "id", "propagat"]
        );
        assert_eq!(
            query_terms("What did we decide about the event log?"),
            vec!["event", "log"]
        );
        // The same noun in a document and in a query meets as one term.
        assert_eq!(
            tokenize("every `correlation_id` of a hop")[..2],
            ["correlat", "id"]
        );
        assert_eq!(
            predicate_terms("How are correlation ids propagated?"),
            ["propagat"]
        );
        assert_eq!(query_terms("the answer list"), vec!["answer", "list"]);
    }

    #[test]
    fn title_outweighs_body() {
        let mut r = Ranker::new(query_terms("event log"));
        r.add("a.md", Field::Title, "# The event log");
        r.add("b.md", Field::Body, "we log an event here");
        r.add("c.md", Field::Body, "nothing relevant");
        let ranked = r.rank();
        assert_eq!(ranked.len(), 2);
        assert_eq!(ranked[0].path, "a.md");
        assert!(ranked[0].score > ranked[1].score);
        assert!((ranked[0].coverage - 1.0).abs() < 1e-9);
    }
}
