//! What `switchboard mcp` reads from its client, checked before the MCP service sees it.
//!
//! The service drops a line it cannot use without a word, and a client waiting for the answer to
//! that line waits forever. So every line is read here first, bounded, and judged by JSON-RPC
//! 2.0's own rules: bytes that are not UTF-8 or not JSON get a parse error (-32700), JSON that is
//! not a request or notification an invalid request (-32600), `params` that are not an object
//! (every MCP method takes named parameters) invalid params (-32602). The error goes back with
//! the request's `id` when one can be read, `null` otherwise; a notification (no `id`) gets no
//! reply, as JSON-RPC says. Only lines that pass go on to the service.

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line read; a longer one is answered with an error and skipped to its end without
/// being held in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// One line read from the client.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A valid JSON-RPC message, as read (newline not included): for the service.
    Pass(Vec<u8>),
    /// What to answer instead (one JSON line), or nothing (a bad notification).
    Reply(Option<String>),
}

/// Reads the next line (`None` at the end of input), at most [`MAX_LINE`] bytes of it held.
pub async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if line.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Some(Line::Reply(Some(error(
            &Value::Null,
            -32600,
            &format!("the line is longer than {MAX_LINE} bytes (16 MiB); it was not read"),
        )))));
    }
    Ok(Some(judge(line)))
}

/// Judges one complete line.
pub fn judge(line: Vec<u8>) -> Line {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Line::Reply(None);
    }
    let Ok(text) = std::str::from_utf8(trimmed) else {
        return Line::Reply(Some(error(
            &Value::Null,
            -32700,
            "parse error: the line is not valid UTF-8",
        )));
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Line::Reply(Some(error(
                &Value::Null,
                -32700,
                &format!("parse error: {e}"),
            )))
        }
    };
    let Value::Object(msg) = &value else {
        return Line::Reply(Some(error(
            &Value::Null,
            -32600,
            "invalid request: a message is one JSON object (batches are not part of MCP)",
        )));
    };
    // An id that is neither a string nor an integer that fits 64 bits cannot be echoed safely.
    let id = match msg.get("id") {
        None => None,
        Some(v @ Value::String(_)) => Some(v.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n.clone())),
        Some(_) => {
            return Line::Reply(Some(error(
                &Value::Null,
                -32600,
                "invalid request: `id` must be a string or an integer of at most 64 bits",
            )))
        }
    };
    let reply = |code: i64, message: &str| match &id {
        Some(id) => Line::Reply(Some(error(id, code, message))),
        // A notification is never answered, not even with an error.
        None => Line::Reply(None),
    };
    if msg.get("jsonrpc") != Some(&json!("2.0")) {
        return match &id {
            Some(_) => reply(-32600, "invalid request: `jsonrpc` must be \"2.0\""),
            None => Line::Reply(Some(error(
                &Value::Null,
                -32600,
                "invalid request: `jsonrpc` must be \"2.0\"",
            ))),
        };
    }
    let is_response = msg.contains_key("result") || msg.contains_key("error");
    if !is_response {
        if !matches!(msg.get("method"), Some(Value::String(_))) {
            return reply(-32600, "invalid request: `method` must be a string");
        }
        if let Some(params) = msg.get("params") {
            if !params.is_object() {
                return reply(
                    -32602,
                    "invalid params: MCP methods take named parameters (`params` is an object)",
                );
            }
        }
    }
    Line::Pass(trimmed.to_vec())
}

/// A JSON-RPC error response, as one line.
fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(line: &[u8]) -> Option<(i64, Value)> {
        match judge(line.to_vec()) {
            Line::Reply(Some(text)) => {
                let v: Value = serde_json::from_str(&text).expect("json");
                Some((v["error"]["code"].as_i64().expect("code"), v["id"].clone()))
            }
            _ => None,
        }
    }

    #[test]
    fn bad_lines_get_the_json_rpc_error_with_the_id_when_it_can_be_read() {
        let cases: [(&[u8], i64, Value); 8] = [
            (b"not json", -32700, Value::Null),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
                -32700,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"ping","x":"\ud800"}"#,
                -32700,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}"#,
                -32602,
                json!(3),
            ),
            (
                br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#,
                -32600,
                json!(4),
            ),
            (br#"{"id":5,"method":"ping"}"#, -32600, json!(5)),
            (
                br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#,
                -32600,
                Value::Null,
            ),
            (
                br#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#,
                -32600,
                Value::Null,
            ),
        ];
        for (line, code, id) in cases {
            assert_eq!(
                code_and_id(line),
                Some((code, id)),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn good_messages_pass_and_bad_notifications_are_not_answered() {
        let ok = br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#;
        assert_eq!(judge(ok.to_vec()), Line::Pass(ok.to_vec()));
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(judge(note.to_vec()), Line::Pass(note.to_vec()));
        let bad_note = br#"{"jsonrpc":"2.0","method":"x","params":[1]}"#;
        assert_eq!(judge(bad_note.to_vec()), Line::Reply(None));
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_answered_and_skipped_and_the_next_one_read() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.push(b'\n');
        input.extend_from_slice(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        input.push(b'\n');
        let mut reader = tokio::io::BufReader::new(&input[..]);
        match next_line(&mut reader).await.expect("read") {
            Some(Line::Reply(Some(text))) => assert!(text.contains("16 MiB"), "{text}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            next_line(&mut reader).await.expect("read"),
            Some(Line::Pass(_))
        ));
        assert_eq!(next_line(&mut reader).await.expect("read"), None);
    }
}
