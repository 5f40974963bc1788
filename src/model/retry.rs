//! The one retry policy: which failures are worth another attempt, how long to wait, and the
//! loop that runs the attempts and reports each one.
//!
//! Providers run every request through [`RetryPolicy::run`] with the policy their config gives
//! them; the runtime's hop runs each completion through it too (with the default policy), so a
//! transient failure from any model is retried one way. A failure that is not transient, or the
//! last transient one, comes back as [`ModelError::Fatal`] (or [`ModelError::ContextOverflow`]),
//! which no layer retries, so the two layers never multiply each other's attempts.
//!
//! Classification looks at the body as well as the status: a 500 whose body says the model's
//! output did not match the requested format or grammar fails the same way on every attempt, and
//! a 400 that says the prompt does not fit the context needs the user, not a retry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ModelError;

/// How transient failures are retried: `max_retries` more attempts after the first, waiting
/// `base * 2^(n-1)` (capped at `max_delay`) plus up to `jitter` of that at random, or what the
/// server's `Retry-After` asked for (capped at `max_delay` too, so a server cannot park us).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base: Duration,
    pub max_delay: Duration,
    /// Fraction of the delay added at random, 0.0 to 1.0.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            jitter: 0.1,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) when the server named no delay.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        let delay = self.base.saturating_mul(factor).min(self.max_delay);
        let jitter = self.jitter.clamp(0.0, 1.0);
        if jitter == 0.0 {
            return delay;
        }
        delay + delay.mul_f64(jitter * unit_random())
    }

    /// The wait before retry number `retry`, honouring the server's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(after) => after.min(self.max_delay),
            None => self.backoff(retry),
        }
    }
}

/// A number in [0, 1) that is different each call; jitter needs no better randomness.
fn unit_random() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let mut x = COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ nanos;
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

impl RetryPolicy {
    /// The most attempts one request may take.
    pub fn max_attempts(&self) -> u32 {
        self.max_retries.saturating_add(1)
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries run out; every attempt
    /// is reported to `observer` (if any) and to the observer [`observe`] set for this call.
    /// After the last retry a transient error becomes fatal, so no caller retries on top.
    /// `provider` and `model` name the attempts in events and in the give-up message.
    /// Generic over the answer so completions and embeddings share one policy.
    pub async fn run<T, F, Fut>(
        &self,
        provider: &str,
        model: &str,
        observer: Option<&AttemptObserver>,
        mut attempt: F,
    ) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ModelError>>,
    {
        let max_attempts = self.max_attempts();
        let mut n = 0u32;
        loop {
            n += 1;
            let started = Instant::now();
            let result = attempt().await;
            let elapsed = started.elapsed();
            let emit = |outcome: AttemptOutcome| {
                let event = AttemptEvent {
                    provider: provider.to_string(),
                    model: model.to_string(),
                    attempt: n,
                    max_attempts,
                    outcome,
                    elapsed,
                };
                if let Some(observer) = observer {
                    observer(&event);
                }
                let _ = CALL_OBSERVER.try_with(|observer| observer(&event));
            };
            match result {
                Ok(response) => {
                    emit(AttemptOutcome::Succeeded);
                    return Ok(response);
                }
                Err(ModelError::Transient {
                    message,
                    retry_after,
                }) if n < max_attempts => {
                    let delay = self.delay(n, retry_after);
                    emit(AttemptOutcome::Retrying {
                        error: message,
                        delay,
                    });
                    tokio::time::sleep(delay).await;
                }
                Err(ModelError::Transient { message, .. }) => {
                    let error = format!(
                        "{message} (gave up after {n} attempt{}; retries are set by max_retries in [providers.{provider}])",
                        if n == 1 { "" } else { "s" },
                    );
                    emit(AttemptOutcome::Failed {
                        error: error.clone(),
                    });
                    return Err(ModelError::Fatal(error));
                }
                Err(other) => {
                    emit(AttemptOutcome::Failed {
                        error: other.to_string(),
                    });
                    return Err(other);
                }
            }
        }
    }
}

/// What happened on one attempt, for the runtime's event log (`model.attempt`, `model.retry`).
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptEvent {
    pub provider: String,
    pub model: String,
    /// 1-based.
    pub attempt: u32,
    /// The most attempts this request may take (`max_retries + 1`).
    pub max_attempts: u32,
    pub outcome: AttemptOutcome,
    /// How long the attempt took.
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    Succeeded,
    /// A transient failure; the next attempt starts after `delay`.
    Retrying {
        error: String,
        delay: Duration,
    },
    /// The request failed for good: a fatal answer, or the last attempt failed too.
    Failed {
        error: String,
    },
}

/// Receives every attempt; set by the runtime to turn attempts into events.
pub type AttemptObserver = Arc<dyn Fn(&AttemptEvent) + Send + Sync>;

tokio::task_local! {
    static CALL_OBSERVER: AttemptObserver;
}

/// Runs `call` (a `Model::complete` future) with `observer` seeing its attempts, on top of the
/// observer the provider was built with. This is how the runtime ties attempts to the hop and
/// step that made them, though one provider instance serves every hop.
pub async fn observe<F: std::future::Future>(observer: AttemptObserver, call: F) -> F::Output {
    CALL_OBSERVER.scope(observer, call).await
}

/// What a failure calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Another attempt may succeed (overload, rate limit, a server restarting).
    Transient,
    /// Another attempt fails the same way.
    Permanent,
    /// The prompt does not fit the context window: the user must change something.
    ContextOverflow,
}

/// How servers say the prompt (plus the room asked for the answer) exceeds the context:
/// llama.cpp (`exceed_context_size_error`), OpenAI and vLLM (`context_length_exceeded`,
/// "maximum context length"), Anthropic ("prompt is too long"), Ollama ("context length").
const CONTEXT_OVERFLOW: &[&str] = &[
    "exceed_context_size",
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceeds the available context size",
    "context size has been exceeded",
];

/// How servers say the model's output did not fit the requested format (a grammar, JSON schema
/// or tool-call syntax), e.g. llama.cpp's "Failed to parse input at pos …". The same request
/// produces the same mismatch, so these are not retried even under a 5xx status.
const FORMAT_MISMATCH: &[&str] = &[
    "failed to parse",
    "does not match",
    "grammar",
    "json schema",
];

/// Words in a mid-stream error (no HTTP status) that mean the server, not the request, failed.
const TRANSIENT_WORDS: &[&str] = &[
    "server_error",
    "overloaded",
    "rate_limit",
    "timeout",
    "unavailable",
];

/// Classifies a failure from its HTTP status (`None` for an error event inside a stream) and
/// its body: context overflow and format mismatches by their words, then the status (408, 409,
/// 429 and 5xx are transient), then, without a status, words that name a server-side failure.
pub fn classify(status: Option<u16>, body: &str) -> Verdict {
    let lower = body.to_ascii_lowercase();
    if CONTEXT_OVERFLOW.iter().any(|p| lower.contains(p)) {
        return Verdict::ContextOverflow;
    }
    if FORMAT_MISMATCH.iter().any(|p| lower.contains(p)) {
        return Verdict::Permanent;
    }
    let transient = match status {
        Some(code) => is_transient_status(code),
        None => TRANSIENT_WORDS.iter().any(|w| lower.contains(w)),
    };
    if transient {
        Verdict::Transient
    } else {
        Verdict::Permanent
    }
}

/// The error for `message` under `verdict`.
pub fn error_for(verdict: Verdict, message: String, retry_after: Option<Duration>) -> ModelError {
    match verdict {
        Verdict::Transient => ModelError::Transient {
            message,
            retry_after,
        },
        Verdict::Permanent => ModelError::Fatal(message),
        Verdict::ContextOverflow => ModelError::ContextOverflow { message },
    }
}

/// 408, 409, 429 and 5xx are worth another try.
pub fn is_transient_status(code: u16) -> bool {
    matches!(code, 408 | 409 | 429) || (500..600).contains(&code)
}

/// `Retry-After` as seconds (integer or decimal) or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs.max(0.0)).ok();
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let now = chrono::Utc::now();
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            max_retries: 5,
            base: Duration::from_secs(1),
            max_delay: Duration::from_secs(3),
            jitter: 0.0,
        };
        assert_eq!(p.backoff(1), Duration::from_secs(1));
        assert_eq!(p.backoff(2), Duration::from_secs(2));
        assert_eq!(p.backoff(3), Duration::from_secs(3));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(100))),
            Duration::from_secs(3)
        );
        let j = RetryPolicy {
            jitter: 0.5,
            ..p.clone()
        };
        for _ in 0..100 {
            let d = j.backoff(1);
            assert!(d >= Duration::from_secs(1) && d <= Duration::from_millis(1500));
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn transient_statuses() {
        for c in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_transient_status(c), "{c}");
        }
        for c in [400, 401, 403, 404, 422] {
            assert!(!is_transient_status(c), "{c}");
        }
    }

    #[test]
    fn bodies_override_statuses() {
        let grammar = r#"{"error":{"code":500,"message":"Failed to parse input at pos 12: <tool_call>","type":"server_error"}}"#;
        assert_eq!(classify(Some(500), grammar), Verdict::Permanent);
        assert_eq!(classify(None, grammar), Verdict::Permanent);
        assert_eq!(
            classify(Some(500), r#"{"error":{"message":"model is loading"}}"#),
            Verdict::Transient
        );
        assert_eq!(
            classify(None, r#"{"type":"server_error","message":"boom"}"#),
            Verdict::Transient
        );
        assert_eq!(classify(None, r#"{"message":"bad"}"#), Verdict::Permanent);
        for body in [
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        ] {
            assert_eq!(
                classify(Some(400), body),
                Verdict::ContextOverflow,
                "{body}"
            );
        }
        assert_eq!(classify(Some(400), "{}"), Verdict::Permanent);
    }
}
