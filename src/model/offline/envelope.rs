//! Writing answers in the envelope a [`ResponseContract`] asks for: frontmatter with the ids the
//! runtime allocated, one `<thinking>`, one `<answer>`.

use crate::contract::FieldRule;
use crate::model::ResponseContract;

/// Frontmatter, thinking and answer of one envelope.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    /// Extra frontmatter fields in the order they are written (after the four standard ones).
    pub fields: Vec<(String, String)>,
    pub thinking: String,
    pub answer: String,
}

/// The message type to write: the contract's first, or a generic one when it allows any.
pub fn message_type(rc: &ResponseContract) -> String {
    rc.contract
        .message_types
        .first()
        .cloned()
        .unwrap_or_else(|| "AGENT_RESPONSE".to_string())
}

/// A YAML scalar: plain when it cannot be misread, double-quoted (JSON escapes) otherwise.
pub fn yaml_scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+:".contains(c))
        && !value.starts_with(['-', ':', '.'])
        && !value.ends_with(':')
        && !value.contains(": ")
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        );
    if plain {
        value.to_string()
    } else {
        serde_json::to_string(value).unwrap_or_else(|_| format!("\"{value}\""))
    }
}

impl Envelope {
    /// The full answer text. With no contract there is no envelope: the answer alone.
    pub fn render(&self, rc: Option<&ResponseContract>) -> String {
        let Some(rc) = rc else {
            return self.answer.trim_end().to_string() + "\n";
        };
        let mut out = String::from("---\n");
        out.push_str(&format!("message_id: {}\n", yaml_scalar(&rc.message_id)));
        out.push_str(&format!(
            "correlation_id: {}\n",
            yaml_scalar(&rc.correlation_id)
        ));
        out.push_str(&format!("timestamp: {}\n", yaml_scalar(&rc.timestamp)));
        out.push_str(&format!("message_type: {}\n", message_type(rc)));
        for (key, value) in &self.fields {
            out.push_str(&format!("{key}: {}\n", yaml_scalar(value)));
        }
        // Fields the contract declares that the role did not fill: the honest "unknown".
        for (key, rule) in &rc.contract.fields {
            if self.fields.iter().any(|(k, _)| k == key) {
                continue;
            }
            let value = match rule {
                FieldRule::OneOf { one_of } => one_of.last().cloned().unwrap_or_default(),
                FieldRule::Kind(crate::contract::FieldKind::Date) => {
                    rc.timestamp.get(..10).unwrap_or("1970-01-01").to_string()
                }
                FieldRule::Kind(crate::contract::FieldKind::Timestamp) => rc.timestamp.clone(),
                FieldRule::Kind(_) => "unknown".to_string(),
            };
            out.push_str(&format!("{key}: {}\n", yaml_scalar(&value)));
        }
        out.push_str("---\n\n<thinking>\n");
        out.push_str(self.thinking.trim());
        out.push_str("\n</thinking>\n\n<answer>\n");
        out.push_str(self.answer.trim());
        out.push_str("\n</answer>\n");
        out
    }
}

/// A fence long enough that no line of `lines` closes it.
pub fn fence_for<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let longest = lines
        .into_iter()
        .map(|l| {
            let t = l.trim_start();
            t.len() - t.trim_start_matches('`').len()
        })
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;

    #[test]
    fn renders_ids_and_declared_fields() {
        let rc = ResponseContract {
            contract: Contract::document_analysis(),
            message_id: "thoughts-2026-11-21-001".into(),
            correlation_id: "corr-1".into(),
            timestamp: "2026-11-21T10:00:00Z".into(),
        };
        let env = Envelope {
            fields: vec![("source_document".into(), "thoughts/a.md".into())],
            thinking: "t".into(),
            answer: "a".into(),
        };
        let text = env.render(Some(&rc));
        assert!(text.starts_with("---\nmessage_id: thoughts-2026-11-21-001\n"));
        assert!(text.contains("message_type: DOCUMENT_ANALYSIS_RESPONSE\n"));
        assert!(text.contains("document_date: 2026-11-21\n"));
        assert!(text.contains("reliability: Low\n"));
        assert!(text.ends_with("<answer>\na\n</answer>\n"));
        assert_eq!(yaml_scalar("a b"), "\"a b\"");
        assert_eq!(fence_for(["x", "```rust"]), "````");
    }
}
