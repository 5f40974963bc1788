//! Server-sent events (`text/event-stream`), the framing both wire protocols stream answers in.
//!
//! The parser is incremental because answers arrive in network chunks that split lines (and
//! UTF-8 characters) anywhere; it keeps only the unfinished line between chunks.

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (the spec's "message").
    pub event: String,
    pub data: String,
}

/// Incremental parser for `text/event-stream`: feed it chunks as they come, in any split.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `chunk`, appending every event it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.buf.is_empty() {
            // The common case: no partial line pending, so read the chunk in place.
            let used = self.lines(chunk, out);
            self.buf.extend_from_slice(&chunk[used..]);
        } else {
            let mut buf = std::mem::take(&mut self.buf);
            buf.extend_from_slice(chunk);
            let used = self.lines(&buf, out);
            buf.drain(..used);
            self.buf = buf;
        }
    }

    /// Handles every complete line in `bytes`; returns how many bytes that used.
    fn lines(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> usize {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            let line = &bytes[start..nl];
            self.line(line.strip_suffix(b"\r").unwrap_or(line), out);
            start = nl + 1;
        }
        start
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.has_data = false;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => return, // a comment
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                match std::str::from_utf8(value) {
                    Ok(v) => self.data.push_str(v),
                    Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
                }
                self.has_data = true;
            }
            _ => {}
        }
    }

    /// At the end of the stream: an event whose blank line never came (some servers omit the
    /// last one). A partial line is dropped, as the SSE spec says.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.buf.clear();
        if self.has_data {
            self.has_data = false;
            Some(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_survive_any_split() {
        let text =
            b"event: a\ndata: one\r\n\r\n: comment\ndata: two\ndata: lines\n\ndata:[DONE]\n\n";
        for split in 0..text.len() {
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            parser.push(&text[..split], &mut out);
            parser.push(&text[split..], &mut out);
            assert_eq!(
                out,
                vec![
                    SseEvent {
                        event: "a".into(),
                        data: "one".into()
                    },
                    SseEvent {
                        event: String::new(),
                        data: "two\nlines".into()
                    },
                    SseEvent {
                        event: String::new(),
                        data: "[DONE]".into()
                    },
                ],
                "split at {split}"
            );
            assert_eq!(parser.finish(), None);
        }
    }

    #[test]
    fn sse_finish_keeps_event_without_blank_line_and_drops_partial_line() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: whole\ndata: part", &mut out);
        assert!(out.is_empty());
        assert_eq!(parser.finish().map(|e| e.data), Some("whole".to_string()));
    }
}
