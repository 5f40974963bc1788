//! What a hop does with an answer cut off at the output limit (`max_tokens`): log it, ask the
//! model for the rest, and join the pieces into one answer, or, after too many cuts in a row,
//! end the hop PARTIAL. Never a silent success.
//!
//! The pieces sit in the conversation while the rest is asked for (an assistant turn, then the
//! [`CONTINUE_PROMPT`]), which is how textual tool parsing reads a `task(` call split by the cut
//! as one call; when the rest comes, they are taken out again and the joined answer goes on as
//! if it had come whole.
//!
//! A cut answer whose end repeats one stretch of text over and over (a small model caught in a
//! loop) is not continued: continuing asks the loop for more of itself. The looping turn is kept
//! up to its first repeat and the model is asked for the whole answer again, once, without it.

use super::events::EventKind;
use crate::model::{Message, ModelResponse, CONTINUE_PROMPT};

/// Times in a row a cut-off answer is continued before the hop ends PARTIAL.
pub const MAX_CONTINUATIONS: u32 = 2;

/// What the model is told after an answer that looped until it was cut off.
pub const LOOP_PROMPT: &str = "Your previous answer repeated the same text over and over until it \
     was cut off at the output token limit (the repeats are left out above). Send the whole answer \
     again from its start, writing each part once.";

/// What the model is told after an answer that was to be one JSON object and was cut off before
/// the object began.
pub const JSON_PROMPT: &str = "Your previous answer was cut off at the output token limit before \
     its JSON object began (only its start is kept above). Answer again with only the JSON object \
     your instructions ask for: start with `{` and write nothing before or after it.";

/// How much of a cut-off answer that never began its JSON object stays in the conversation.
const JSON_KEPT_BYTES: usize = 200;

/// A repeated stretch counts as a loop from this many bytes of repeats on.
const LOOP_MIN_BYTES: usize = 400;
/// And from this many repeats on.
const LOOP_MIN_REPEATS: usize = 4;
/// Or, for a stretch longer than [`LOOP_SHORT_PERIOD`], from this many: three copies of several
/// paragraphs, byte for byte, are never an answer's own.
const LOOP_MIN_LONG_REPEATS: usize = 3;
/// The longest stretch that must come back [`LOOP_MIN_REPEATS`] times (a few lines).
const LOOP_SHORT_PERIOD: usize = 400;
/// The longest stretch looked for, in bytes: Qwen2.5-Coder-1.5B's codebase-analyzer, over
/// llama-server, wrote six paragraphs of about 1,300 bytes over and over in `<thinking>` until
/// its limit, three times in a row.
const LOOP_MAX_PERIOD: usize = 2000;

/// What the hop does next.
pub(crate) enum Next {
    /// Ask again: the conversation now ends with the request for the rest (or, after a loop,
    /// for the whole answer again).
    Continue,
    /// The answer is whole (joined if it came in pieces): go on with it.
    Proceed,
    /// Too many cuts: end PARTIAL with this answer so far and this reason.
    GiveUp { answer: String, why: String },
}

/// The cut-off pieces of the answer being assembled.
#[derive(Default)]
pub(crate) struct Pieces {
    cuts: u32,
    text: String,
    /// Where in the conversation the first piece sits.
    start: Option<usize>,
}

impl Pieces {
    /// Whether a cut-off answer waits for its rest (the conversation ends with the request).
    pub fn waiting(&self) -> bool {
        self.start.is_some()
    }

    /// Takes `response`; `emit` logs the `model.truncated` event. `json` says the answer is to
    /// be one JSON object (the agent's contract is JSON).
    pub fn take(
        &mut self,
        response: &mut ModelResponse,
        messages: &mut Vec<Message>,
        step: u32,
        json: bool,
        emit: impl FnOnce(EventKind),
    ) -> Next {
        if !response.truncated {
            if let Some(start) = self.start.take() {
                messages.truncate(start);
                response.content = std::mem::take(&mut self.text) + &response.content;
            }
            self.cuts = 0;
            return Next::Proceed;
        }
        self.cuts += 1;
        let give_up = self.cuts > MAX_CONTINUATIONS;
        let looped = loop_start(&response.content);
        // Qwen2.5-Coder-1.5B as the evidence-validator, over llama-server (no grammar), wrote
        // the analysis it was reviewing again instead of its verdict, three times to the limit:
        // asking for the rest of a text that is not the object only asks for more of it.
        let no_object = json && self.start.is_none() && !response.content.contains('{');
        emit(EventKind::ModelTruncated {
            step,
            output_tokens: response.usage.output_tokens,
            dropped_tool_calls: response.tool_calls.len(),
            action: match (give_up, looped, no_object) {
                (true, _, _) => "partial",
                (false, _, true) => "retry_json",
                (false, Some(_), false) => "retry_loop",
                (false, None, false) => "continue",
            }
            .into(),
        });
        if no_object && !give_up {
            let mut end = JSON_KEPT_BYTES.min(response.content.len());
            while !response.content.is_char_boundary(end) {
                end -= 1;
            }
            let kept = response.content[..end].trim_end();
            messages.push(Message::assistant(format!("{kept}…"), Vec::new()));
            messages.push(Message::user(JSON_PROMPT));
            return Next::Continue;
        }
        if let (false, Some(cut)) = (give_up, looped) {
            // Earlier pieces go too: the answer is asked for again from its start.
            if let Some(start) = self.start.take() {
                messages.truncate(start);
            }
            let kept = std::mem::take(&mut self.text) + &response.content[..cut];
            messages.push(Message::assistant(format!("{kept}…"), Vec::new()));
            messages.push(Message::user(LOOP_PROMPT));
            return Next::Continue;
        }
        self.start.get_or_insert(messages.len());
        self.text.push_str(&response.content);
        messages.push(Message::assistant(response.content.clone(), Vec::new()));
        if give_up {
            return Next::GiveUp {
                answer: std::mem::take(&mut self.text),
                why: format!(
                    "the answer was cut off at the output limit (max_tokens) {} times in a row; \
                     raise max_tokens (agent frontmatter `max_tokens:` or [providers.NAME] \
                     max_tokens) or ask for a shorter answer",
                    self.cuts
                ),
            };
        }
        messages.push(Message::user(CONTINUE_PROMPT));
        Next::Continue
    }
}

/// The text of a cut-off answer up to the end of the first stretch its loop repeats, when it
/// loops: [`loop_start`], carried on to the end of its line unless it ends one (the stretch may
/// start a few bytes early, where the text before it happens to end like the stretch).
pub(crate) fn before_loop(text: &str) -> Option<&str> {
    let cut = loop_start(text)?;
    if cut == 0 || text.as_bytes()[cut - 1] == b'\n' {
        return Some(&text[..cut]);
    }
    let end = text[cut..].find('\n').map_or(text.len(), |i| cut + i);
    Some(&text[..end])
}

/// `text` up to the end of its last closed code fence: what is whole of a text cut inside a
/// block (a loop's first stretch need not start where a block does).
pub(crate) fn through_closed_fence(text: &str) -> Option<&str> {
    let mut open = false;
    let mut end = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare.starts_with("```") {
            if open && bare == "```" {
                end = Some(at + bare.len());
            }
            open = !open || bare != "```";
        }
        at += line.len();
    }
    end.map(|e| &text[..e])
}

/// Where the repeats begin when `text` ends in one stretch repeated at least
/// [`LOOP_MIN_REPEATS`] times (a long one [`LOOP_MIN_LONG_REPEATS`] times) over at least
/// [`LOOP_MIN_BYTES`]: the byte offset just after the
/// stretch's first occurrence (a char boundary). `None` when the end does not loop.
pub(crate) fn loop_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let n = b.len();
    for p in 1..=LOOP_MAX_PERIOD.min(n / LOOP_MIN_LONG_REPEATS) {
        let repeats = if p <= LOOP_SHORT_PERIOD {
            LOOP_MIN_REPEATS
        } else {
            LOOP_MIN_LONG_REPEATS
        };
        // The periodic tail: the longest suffix where every byte equals the one `p` before.
        let mut i = n;
        while i > p && b[i - 1] == b[i - 1 - p] {
            i -= 1;
        }
        // b[i - p..n] has period p; it holds (n - (i - p)) / p repeats.
        let from = i - p;
        let len = n - from;
        if len >= LOOP_MIN_BYTES && len / p >= repeats {
            let mut cut = from + p;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            return Some(cut);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    fn response(text: &str, truncated: bool) -> ModelResponse {
        ModelResponse {
            content: text.into(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            truncated,
        }
    }

    #[test]
    fn pieces_join_and_leave_the_conversation() {
        let mut pieces = Pieces::default();
        let mut messages = vec![Message::user("go")];
        let mut events = Vec::new();
        let mut r = response("one ", true);
        assert!(matches!(
            pieces.take(&mut r, &mut messages, 1, false, |e| events.push(e)),
            Next::Continue
        ));
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2].content, CONTINUE_PROMPT);
        assert!(pieces.waiting());
        let mut r = response("two", false);
        assert!(matches!(
            pieces.take(&mut r, &mut messages, 2, false, |e| events.push(e)),
            Next::Proceed
        ));
        assert_eq!(r.content, "one two");
        assert_eq!(messages.len(), 1, "the pieces leave the conversation");
        assert!(!pieces.waiting());
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn too_many_cuts_give_up_with_the_text_so_far() {
        let mut pieces = Pieces::default();
        let mut messages = Vec::new();
        for i in 0..MAX_CONTINUATIONS {
            let mut r = response("x", true);
            assert!(
                matches!(
                    pieces.take(&mut r, &mut messages, i, false, |_| {}),
                    Next::Continue
                ),
                "{i}"
            );
        }
        let mut r = response("y", true);
        match pieces.take(&mut r, &mut messages, 9, false, |_| {}) {
            Next::GiveUp { answer, why } => {
                assert_eq!(answer, "xxy");
                assert!(why.contains("max_tokens"), "{why}");
            }
            _ => panic!("expected to give up"),
        }
    }

    #[test]
    fn a_looping_cut_is_asked_for_again_not_continued() {
        let head = "---\nmessage_id: x\n---\n<answer>\n";
        let cycle = "- **Evidence**: `a.md:23-24`\n- **Excerpt**:\n```markdown\n";
        let looped = format!("{head}{}- **Evid", cycle.repeat(40));
        // One repeat is kept (the stretch may be found rotated, starting a byte earlier).
        let cut = loop_start(&looped).unwrap();
        assert!(cut.abs_diff(head.len() + cycle.len()) <= 1, "{cut}");
        assert_eq!(looped[..cut].matches("**Evidence**").count(), 1);
        let mut pieces = Pieces::default();
        let mut messages = vec![Message::user("go")];
        let mut actions = Vec::new();
        let mut r = response(&looped, true);
        let next = pieces.take(&mut r, &mut messages, 1, false, |e| {
            if let EventKind::ModelTruncated { action, .. } = e {
                actions.push(action);
            }
        });
        assert!(matches!(next, Next::Continue));
        assert_eq!(actions, ["retry_loop"]);
        assert_eq!(messages[1].content, format!("{}…", &looped[..cut]));
        assert_eq!(messages[2].content, LOOP_PROMPT);
        assert!(!pieces.waiting(), "the next answer is whole, not a rest");
        let mut r = response("whole", false);
        pieces.take(&mut r, &mut messages, 2, false, |_| {});
        assert_eq!(r.content, "whole", "nothing joined to it");
    }

    /// A JSON answer cut off before its object began is asked for again, object only, with just
    /// its start kept; one that began its object is continued as any other.
    #[test]
    fn a_json_answer_cut_before_its_object_is_asked_for_the_object_only() {
        let mut pieces = Pieces::default();
        let mut messages = vec![Message::user("review")];
        let mut actions = Vec::new();
        let echo = "## Analysis: thoughts/shared/decisions/a.md\n".repeat(30);
        let mut r = response(&echo, true);
        let next = pieces.take(&mut r, &mut messages, 1, true, |e| {
            if let EventKind::ModelTruncated { action, .. } = e {
                actions.push(action);
            }
        });
        assert!(matches!(next, Next::Continue));
        assert_eq!(messages.len(), 3);
        assert!(messages[1].content.len() <= JSON_KEPT_BYTES + "…".len());
        assert_eq!(messages[2].content, JSON_PROMPT);
        assert!(!pieces.waiting(), "the next answer is whole, not a rest");
        let mut r = response("{\"verdict\": \"accept\"}", false);
        pieces.take(&mut r, &mut messages, 2, true, |_| {});
        assert_eq!(
            r.content, "{\"verdict\": \"accept\"}",
            "nothing joined to it"
        );

        // Begun: continued. Not a JSON contract: continued.
        for (text, json) in [("{\"verdict\": \"acc", true), ("## Analysis", false)] {
            let mut pieces = Pieces::default();
            let mut messages = vec![Message::user("review")];
            let mut actions = Vec::new();
            let mut r = response(text, true);
            pieces.take(&mut r, &mut messages, 1, json, |e| {
                if let EventKind::ModelTruncated { action, .. } = e {
                    actions.push(action);
                }
            });
            assert_eq!(actions, ["continue"], "{text}");
            assert_eq!(messages[2].content, CONTINUE_PROMPT);
        }

        // Every cut counts towards the limit: the third in a row ends the hop.
        let mut pieces = Pieces::default();
        let mut messages = Vec::new();
        let mut actions = Vec::new();
        for step in 1..=3 {
            let mut r = response(&echo, true);
            let next = pieces.take(&mut r, &mut messages, step, true, |e| {
                if let EventKind::ModelTruncated { action, .. } = e {
                    actions.push(action);
                }
            });
            assert_eq!(matches!(next, Next::GiveUp { .. }), step == 3, "{step}");
        }
        assert_eq!(actions, ["retry_json", "retry_json", "partial"]);
    }

    /// Paragraphs that come back as a block: three copies of a stretch over 400 bytes are a
    /// loop; two are not, and neither are three copies of a short one.
    #[test]
    fn a_loop_of_whole_paragraphs_is_found() {
        let para = |what: &str| {
            format!(
                "The parser also handles the case where the agent file does not have a {what}, \
                 in which case it sets the {what} to a default. If the {what} is invalid, the \
                 parser reports an error and suggests fixing it.\n\n"
            )
        };
        let cycle: String = ["contract", "gate", "name", "description", "tools", "model"]
            .iter()
            .map(|w| para(w))
            .collect();
        assert!(
            cycle.len() > 1000 && cycle.len() <= LOOP_MAX_PERIOD,
            "{}",
            cycle.len()
        );
        let head = "<thinking>\nThe YAML parser reads an agent file.\n\n";
        let looped = format!("{head}{}The parser also", cycle.repeat(3));
        let cut = loop_start(&looped).expect("a loop");
        // The stretch is found rotated where the head ends like it does (".\n\n").
        assert!(cut.abs_diff(head.len() + cycle.len()) <= 3, "{cut}");
        assert_eq!(loop_start(&format!("{head}{}", cycle.repeat(2))), None);
        let short = "- one item\n".repeat(3);
        assert_eq!(loop_start(&format!("{head}{short}")), None);
    }

    #[test]
    fn the_text_before_a_loop_ends_with_the_first_stretch_whole() {
        let call = "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"yaml\"}}\n```\n";
        // The prose before the calls ends like a call does ("\n"), so the periodic tail starts
        // a byte early: the kept text is carried on to the end of its line.
        let text = format!("I will search.\n{}```json\n{{\"na", call.repeat(8));
        let kept = before_loop(&text).expect("a loop");
        assert!(kept.starts_with("I will search.\n```json"), "{kept:?}");
        assert!(kept.trim_end().ends_with("```"), "{kept:?}");
        assert_eq!(kept.matches("\"grep\"").count(), 1, "{kept:?}");
        assert_eq!(before_loop("no loop here"), None);
    }

    #[test]
    fn a_text_cut_inside_a_block_is_whole_up_to_its_last_closed_fence() {
        let block = "```json\n{\"name\": \"grep\"}\n```\n";
        let text = format!("{block}{block}```json\n{{\"na");
        assert_eq!(
            through_closed_fence(&text),
            Some(&text[..2 * block.len() - 1])
        );
        assert_eq!(through_closed_fence("```json\n{\"na"), None);
        assert_eq!(through_closed_fence("no code"), None);
        // A bare fence opens a block too; its partner closes it.
        let bare = "```\ntask({})\n```\n```\nx";
        assert_eq!(through_closed_fence(bare), Some("```\ntask({})\n```"));
    }

    #[test]
    fn ordinary_text_and_short_repeats_are_no_loop() {
        let prose = "The parser reads the frontmatter. It reports positions. ".repeat(3);
        assert_eq!(loop_start(&prose), None, "three repeats");
        assert_eq!(
            loop_start("| --- | --- | --- | --- | --- |"),
            None,
            "too short"
        );
        assert_eq!(loop_start(""), None);
        let varied: String = (0..200).map(|i| format!("line {i}\n")).collect();
        assert_eq!(loop_start(&varied), None);
        // Multibyte text: the cut stays on a char boundary.
        let looped = format!("é{}", "ééé—".repeat(100));
        let cut = loop_start(&looped).unwrap();
        assert!(looped.is_char_boundary(cut));
    }
}
