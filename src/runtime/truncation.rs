//! What a hop does with an answer cut off at the output limit (`max_tokens`): log it, ask the
//! model for the rest, and join the pieces into one answer, or, after too many cuts in a row,
//! end the hop PARTIAL. Never a silent success.
//!
//! The pieces sit in the conversation while the rest is asked for (an assistant turn, then the
//! [`CONTINUE_PROMPT`]), which is how textual tool parsing reads a `task(` call split by the cut
//! as one call; when the rest comes, they are taken out again and the joined answer goes on as
//! if it had come whole.

use super::events::EventKind;
use crate::model::{Message, ModelResponse, CONTINUE_PROMPT};

/// Times in a row a cut-off answer is continued before the hop ends PARTIAL.
pub const MAX_CONTINUATIONS: u32 = 2;

/// What the hop does next.
pub(crate) enum Next {
    /// Ask again: the conversation now ends with the request for the rest.
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

    /// Takes `response`; `emit` logs the `model.truncated` event.
    pub fn take(
        &mut self,
        response: &mut ModelResponse,
        messages: &mut Vec<Message>,
        step: u32,
        emit: impl FnOnce(EventKind),
    ) -> Next {
        if !response.truncated {
            if let Some(start) = self.start.take() {
                messages.truncate(start);
                response.content = std::mem::take(&mut self.text) + &response.content;
                self.cuts = 0;
            }
            return Next::Proceed;
        }
        self.cuts += 1;
        let give_up = self.cuts > MAX_CONTINUATIONS;
        emit(EventKind::ModelTruncated {
            step,
            output_tokens: response.usage.output_tokens,
            dropped_tool_calls: response.tool_calls.len(),
            action: if give_up { "partial" } else { "continue" }.into(),
        });
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
            pieces.take(&mut r, &mut messages, 1, |e| events.push(e)),
            Next::Continue
        ));
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2].content, CONTINUE_PROMPT);
        assert!(pieces.waiting());
        let mut r = response("two", false);
        assert!(matches!(
            pieces.take(&mut r, &mut messages, 2, |e| events.push(e)),
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
                    pieces.take(&mut r, &mut messages, i, |_| {}),
                    Next::Continue
                ),
                "{i}"
            );
        }
        let mut r = response("y", true);
        match pieces.take(&mut r, &mut messages, 9, |_| {}) {
            Next::GiveUp { answer, why } => {
                assert_eq!(answer, "xxy");
                assert!(why.contains("max_tokens"), "{why}");
            }
            _ => panic!("expected to give up"),
        }
    }
}
