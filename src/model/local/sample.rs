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
pub struct Picker {
    penalties: LlamaSampler,
    grammar: Option<LlamaSampler>,
    pick: LlamaSampler,
    mode: GrammarMode,
    pub stats: GrammarStats,
}

impl Picker {
    /// `grammar` is GBNF text with a `root` rule; llama.cpp refusing it is an error.
    pub fn new(
        model: &LlamaModel,
        grammar: Option<&str>,
        mode: GrammarMode,
        temperature: f32,
        top_p: f32,
        seed: u32,
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
            stats: GrammarStats::default(),
        })
    }

    /// The next token from the logits of output `idx` of the last decode, accepted by every
    /// sampler (so the grammar moves on).
    pub fn next(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> Result<LlamaToken, EngineError> {
        let started = std::time::Instant::now();
        let mut all = LlamaTokenDataArray::from_iter(ctx.candidates_ith(idx), false);
        all.apply_sampler(&mut self.penalties);
        let mut chosen = match (&mut self.grammar, self.mode) {
            (None, _) => all,
            (Some(grammar), GrammarMode::Full) => all.with_sampler(grammar),
            (Some(grammar), GrammarMode::Shortlist) => {
                let mut short = LlamaTokenDataArray::new(best(&mut all.data, SHORTLIST), false);
                short.apply_sampler(grammar);
                if short.data.iter().any(admitted) {
                    short
                } else {
                    self.stats.full_checks += 1;
                    all.with_sampler(grammar)
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
