//! Picking each next token (cargo feature `local`): the repetition penalty, the contract's
//! grammar, then greedy or temperature sampling.
//!
//! llama.cpp's grammar sampler checks every candidate it is given against the grammar, and the
//! vocabulary has ~49k entries: checking all of them at every step cost several times the
//! model's own step on SmolLM2-135M. So the grammar first sees only the [`SHORTLIST`]
//! highest-scoring tokens, and the whole vocabulary only when none of those is admitted. For
//! greedy decoding that is exactly the same choice (the best admitted token of the shortlist is
//! the best admitted token of all, since the shortlist holds the best tokens); with a
//! temperature it drops only admitted tokens that lie below the shortlist, which the usual
//! top-k of 40 would drop anyway.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::error::EngineError;
use super::fresh::{excerpt_guard, number_guard, Quoting};

/// Candidates the grammar sees before it sees the whole vocabulary.
pub const SHORTLIST: usize = 64;
/// Repetition penalty over the last [`PENALTY_WINDOW`] tokens: a model this small otherwise
/// loops.
const REPEAT_PENALTY: f32 = 1.1;
const PENALTY_WINDOW: i32 = 64;

/// How the grammar is applied; `Full` is llama.cpp's own way (every token checked), kept for
/// measuring the shortlist against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrammarMode {
    Shortlist,
    Full,
}

/// Counts of one completion's grammar work, for the overhead figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GrammarStats {
    /// Steps where no shortlisted token was admitted and the whole vocabulary was checked.
    pub full_checks: u32,
    /// Seconds spent choosing tokens (penalty, grammar, pick), all steps together.
    pub sampling_seconds: f64,
}

/// The samplers of one completion.
pub struct Picker<'m> {
    model: &'m LlamaModel,
    penalties: LlamaSampler,
    grammar: Option<LlamaSampler>,
    pick: LlamaSampler,
    mode: GrammarMode,
    /// The files the grammar quotes line by line: an excerpt of one opens on a line no
    /// earlier excerpt of the answer quoted ([`super::fresh`]).
    quoted: std::sync::Arc<Quoting>,
    pub stats: GrammarStats,
}

impl<'m> Picker<'m> {
    /// `grammar` is GBNF text with a `root` rule; llama.cpp refusing it is an error.
    pub fn new(
        model: &'m LlamaModel,
        grammar: Option<&str>,
        mode: GrammarMode,
        temperature: f32,
        top_p: f32,
        seed: u32,
        quoted: std::sync::Arc<Quoting>,
    ) -> Result<Self, EngineError> {
        let grammar = match grammar {
            Some(text) => Some(
                LlamaSampler::grammar(model, text, "root")
                    .map_err(|e| EngineError::Grammar(e.to_string()))?,
            ),
            None => None,
        };
        let pick = if temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(top_p, 1),
                LlamaSampler::min_p(0.05, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(seed),
            ])
        };
        Ok(Picker {
            model,
            penalties: LlamaSampler::penalties(
                model.n_vocab(),
                PENALTY_WINDOW,
                REPEAT_PENALTY,
                0.0,
                0.0,
            ),
            grammar,
            pick,
            mode,
            quoted,
            stats: GrammarStats::default(),
        })
    }

    /// The next token from the logits of output `idx` of the last decode, accepted by every
    /// sampler (so the grammar moves on). `text` is the answer so far: under a grammar, a
    /// citation's range is kept in order ([`range_guard`]), which GBNF cannot compare.
    pub fn next(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
        text: &[u8],
    ) -> Result<LlamaToken, EngineError> {
        let started = std::time::Instant::now();
        let mut all = LlamaTokenDataArray::from_iter(ctx.candidates_ith(idx), false);
        all.apply_sampler(&mut self.penalties);
        let open = range_guard(text);
        let excerpt = excerpt_guard(text, &self.quoted);
        // A fenced excerpt is held by its number (the grammar ties the lines to it).
        let number = number_guard(text, &self.quoted);
        let fresh = |piece: &[u8]| {
            excerpt.as_ref().is_none_or(|e| e.admits(piece))
                && number.as_ref().is_none_or(|n| n.admits(piece))
        };
        let holds_fresh = excerpt.is_some() || number.is_some();
        let model = self.model;
        let guard = |data: &mut LlamaTokenDataArray, whole: bool| {
            if let Some(open) = &open {
                for t in data.data.iter_mut().filter(|t| admitted(t)) {
                    let piece = model.vocab().token_to_piece(t.id(), true, None);
                    if !open.admits(&piece) {
                        t.set_logit(f32::NEG_INFINITY);
                    }
                }
            }
            // Over the whole vocabulary, held only while some token is left: an answer that has
            // quoted every line the grammar still allows repeats one rather than stopping. Over
            // the shortlist, held always: the whole vocabulary may still hold a fresh line.
            if holds_fresh {
                let refused: Vec<usize> = (data.data.iter().enumerate())
                    .filter(|(_, t)| admitted(t))
                    .filter(|(_, t)| !fresh(&model.vocab().token_to_piece(t.id(), true, None)))
                    .map(|(i, _)| i)
                    .collect();
                if !whole || refused.len() < data.data.iter().filter(|t| admitted(t)).count() {
                    for i in refused {
                        data.data[i].set_logit(f32::NEG_INFINITY);
                    }
                }
            }
        };
        let mut chosen = match (&mut self.grammar, self.mode) {
            (None, _) => all,
            (Some(grammar), GrammarMode::Full) => {
                let mut full = all.with_sampler(grammar);
                guard(&mut full, true);
                full
            }
            (Some(grammar), GrammarMode::Shortlist) => {
                let mut short = LlamaTokenDataArray::new(best(&mut all.data, SHORTLIST), false);
                short.apply_sampler(grammar);
                guard(&mut short, false);
                if short.data.iter().any(admitted) {
                    short
                } else {
                    self.stats.full_checks += 1;
                    let mut full = all.with_sampler(grammar);
                    guard(&mut full, true);
                    full
                }
            }
        };
        if self.grammar.is_some() && !chosen.data.iter().any(admitted) {
            return Err(EngineError::NoAdmissibleToken);
        }
        chosen.apply_sampler(&mut self.pick);
        let token = chosen
            .selected_token()
            .ok_or(EngineError::NoAdmissibleToken)?;
        self.penalties.accept(token);
        if let Some(g) = &mut self.grammar {
            g.accept(token);
        }
        self.pick.accept(token);
        self.stats.sampling_seconds += started.elapsed().as_secs_f64();
        Ok(token)
    }
}

/// The second number of a citation range being written: the text ends in `` `path:N-D ``
/// with `D` the digits so far (perhaps none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRange {
    first: u64,
    digits: String,
}

impl OpenRange {
    /// Whether a token `piece` may follow: one that ends the number (anything after its
    /// leading digits) must leave it no smaller than the first, so `path:12-5` cannot be
    /// written (the model has to go on to `path:12-50`, say, and the checker judges the lines).
    pub fn admits(&self, piece: &[u8]) -> bool {
        let lead = piece.iter().take_while(|b| b.is_ascii_digit()).count();
        if lead == piece.len() {
            return true;
        }
        let mut digits = self.digits.clone();
        digits.push_str(&String::from_utf8_lossy(&piece[..lead]));
        digits.parse::<u64>().is_ok_and(|m| m >= self.first)
    }
}

/// [`OpenRange`] when `text` ends inside a backticked citation's second number.
pub fn range_guard(text: &[u8]) -> Option<OpenRange> {
    let digits_at = |end: usize| {
        text[..end]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let m = digits_at(text.len());
    let dash = text.len() - m;
    if dash == 0 || text[dash - 1] != b'-' {
        return None;
    }
    let n = digits_at(dash - 1);
    let colon = dash - 1 - n;
    if n == 0 || colon == 0 || text[colon - 1] != b':' {
        return None;
    }
    // The path runs back to the opening backtick, without spaces or line breaks.
    let path = text[..colon - 1]
        .iter()
        .rev()
        .take_while(|&&b| b != b'`' && b != b' ' && b != b'\n')
        .count();
    let tick = colon - 1 - path;
    if path == 0 || tick == 0 || text[tick - 1] != b'`' {
        return None;
    }
    let first = std::str::from_utf8(&text[dash - 1 - n..dash - 1])
        .ok()?
        .parse()
        .ok()?;
    Some(OpenRange {
        first,
        digits: String::from_utf8_lossy(&text[dash..]).into_owned(),
    })
}

fn admitted(t: &LlamaTokenData) -> bool {
    t.logit() > f32::NEG_INFINITY
}

/// The `n` highest-scoring candidates (in no particular order), moved to the front of `data`
/// and copied out.
fn best(data: &mut [LlamaTokenData], n: usize) -> Vec<LlamaTokenData> {
    if data.len() > n {
        data.select_nth_unstable_by(n - 1, |a, b| b.logit().total_cmp(&a.logit()));
        data[..n].to_vec()
    } else {
        data.to_vec()
    }
}

/// Where the first stop text begins in `bytes`, if one is there.
pub fn stop_at(bytes: &[u8], stop: &[String]) -> Option<usize> {
    stop.iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| bytes.windows(s.len()).position(|w| w == s.as_bytes()))
        .min()
}

/// Hands the answer's text on as it is decoded: whole UTF-8 characters only, and never the
/// bytes that could still turn out to begin a stop text (those are cut, not shown).
pub struct Streamer<'a> {
    sent: usize,
    hold: usize,
    sink: Option<&'a mut dyn FnMut(&str)>,
}

impl<'a> Streamer<'a> {
    pub fn new(stop: &[String], sink: Option<&'a mut dyn FnMut(&str)>) -> Self {
        let hold = stop.iter().map(String::len).max().unwrap_or(0);
        Streamer {
            sent: 0,
            hold: hold.saturating_sub(1),
            sink,
        }
    }

    /// Sends what of `bytes` is safe to show.
    pub fn feed(&mut self, bytes: &[u8]) {
        let safe = bytes.len().saturating_sub(self.hold);
        self.send(bytes, safe);
    }

    /// Sends the rest of the final answer.
    pub fn finish(&mut self, bytes: &[u8]) {
        let end = bytes.len();
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if self.sent < end {
            sink(&String::from_utf8_lossy(&bytes[self.sent..end]));
            self.sent = end;
        }
    }

    fn send(&mut self, bytes: &[u8], upto: usize) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if upto <= self.sent {
            return;
        }
        let fresh = &bytes[self.sent..upto];
        let valid = match std::str::from_utf8(fresh) {
            Ok(s) => s,
            Err(e) => std::str::from_utf8(&fresh[..e.valid_up_to()]).unwrap_or_default(),
        };
        if !valid.is_empty() {
            sink(valid);
            self.sent += valid.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citation_range_cannot_close_below_its_first_line() {
        let open = range_guard(b"- **Evidence**: `src/a.rs:12-5").unwrap();
        assert!(!open.admits(b"`"), "12-5 would close reversed");
        assert!(!open.admits(b"`\n"));
        assert!(open.admits(b"0"), "12-50 is still being written");
        assert!(open.admits(b"0`"), "12-50 closes in order");
        assert!(open.admits(b"1`"), "12-51");
        let open = range_guard(b"`a.md:7-").unwrap();
        assert!(open.admits(b"7`") && open.admits(b"12") && !open.admits(b"3`"));
        // Not a citation: a date in prose, a number range in prose, an unticked path.
        assert_eq!(range_guard(b"on 2026-11"), None);
        assert_eq!(range_guard(b"lines 12-5"), None);
        assert_eq!(range_guard(b"see a.rs:12-5"), None);
        assert_eq!(range_guard(b"`a.rs:12"), None);
    }

    #[test]
    fn stop_texts_cut_at_the_earliest() {
        let stop = vec!["END".to_string(), "\n\n".to_string()];
        assert_eq!(stop_at(b"abc\n\nxEND", &stop), Some(3));
        assert_eq!(stop_at(b"abc", &stop), None);
        assert_eq!(stop_at(b"abc", &[String::new()]), None);
    }

    #[test]
    fn the_shortlist_holds_the_best_candidates() {
        let mut data: Vec<LlamaTokenData> = (0..100)
            .map(|i| LlamaTokenData::new(LlamaToken(i), ((i * 37) % 100) as f32, 0.0))
            .collect();
        let mut got: Vec<f32> = best(&mut data, 5).iter().map(|t| t.logit()).collect();
        got.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(got, vec![99.0, 98.0, 97.0, 96.0, 95.0]);
        assert_eq!(best(&mut data[..3], 5).len(), 3);
    }

    #[test]
    fn streaming_sends_whole_characters_and_holds_back_a_possible_stop() {
        let mut got: Vec<String> = Vec::new();
        {
            let mut sink = |s: &str| got.push(s.to_string());
            let stop = vec!["END".to_string()];
            let mut s = Streamer::new(&stop, Some(&mut sink));
            let text = "héllo END".as_bytes();
            // `h` and half of `é`, of which two bytes may begin "END": nothing to send yet.
            s.feed(&text[..2]);
            s.feed(&text[..3]);
            // "héllo EN" may end in the start of "END": its last two bytes wait.
            s.feed(&text[..9]);
            // The stop text arrived: the answer is cut before it, and the rest is sent.
            let cut = stop_at(text, &stop).unwrap();
            s.finish(&text[..cut]);
        }
        assert_eq!(got.concat(), "héllo ");
        assert_eq!(got[0], "h");
        assert!(got.iter().all(|p| !p.contains('E')), "{got:?}");
    }
}
