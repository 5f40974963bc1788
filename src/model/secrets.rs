//! API keys: held in a type that never prints, and scrubbed from anything a server echoes back.
//!
//! Keys must not reach logs, events, transcripts or error messages. [`ApiKey`] prints as `***`
//! so a `{:?}` of a config cannot leak it, and [`redact`] removes the key from server text
//! (some servers echo the request's headers in their error bodies) before it becomes a message.

use std::fmt;

/// An API key. Prints as `***` so it never reaches logs, events or error messages by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps `key`; `None` for an empty or blank string (local servers need no key).
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    /// The key itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// `text` with `key` replaced by `***`, wherever a server might have echoed it.
pub fn redact(text: &str, key: Option<&ApiKey>) -> String {
    match key {
        Some(key) if text.contains(key.expose()) => text.replace(key.expose(), "***"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_never_prints() {
        let key = ApiKey::new("sk-secret-123").expect("key");
        assert_eq!(format!("{key}"), "***");
        assert!(!format!("{key:?}").contains("sk-secret"));
        assert_eq!(ApiKey::new("  "), None);
    }

    #[test]
    fn redact_scrubs_the_key() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(
            redact("echo: Bearer sk-secret-123", key.as_ref()),
            "echo: Bearer ***"
        );
        assert_eq!(redact("nothing", None), "nothing");
    }
}
