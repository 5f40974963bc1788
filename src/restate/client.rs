//! Talking to a Restate server over HTTP: registering a worker (admin API), submitting a session
//! and waiting for its outcome (ingress), and following the session's event log meanwhile.

use std::path::Path;
use std::time::Duration;

use super::{RestateError, SessionSpec, SESSION_SERVICE};
use crate::runtime::{Event, Observer, SessionOutcome};

/// `restate://HOST:PORT` (or an `http://` URL) → the ingress base URL.
pub fn ingress_url(address: &str) -> Result<String, RestateError> {
    let rest = address
        .strip_prefix("restate://")
        .or_else(|| address.strip_prefix("http://"))
        .ok_or_else(|| RestateError::BadAddress(address.to_string()))?;
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') || !rest.contains(':') {
        return Err(RestateError::BadAddress(address.to_string()));
    }
    Ok(format!("http://{rest}"))
}

fn http() -> reqwest::Client {
    crate::model::client::install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_default()
}

async fn checked(url: &str, sent: reqwest::RequestBuilder) -> Result<String, RestateError> {
    let response = sent.send().await.map_err(|e| RestateError::Unreachable {
        url: url.to_string(),
        error: e.to_string(),
    })?;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(RestateError::Refused {
            url: url.to_string(),
            status,
            body,
        });
    }
    Ok(body)
}

/// Registers the worker at `endpoint` (its HTTP/2 address) with the admin API at `admin`.
/// `force`: the services may change between versions of switchboard.
pub async fn register(admin: &str, endpoint: &str) -> Result<(), RestateError> {
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let body = serde_json::json!({"uri": endpoint, "force": true});
    checked(&url, http().post(&url).json(&body))
        .await
        .map(|_| ())
}

/// Starts the session workflow for `spec` (idempotent: the workflow is keyed by the session id).
pub async fn submit(ingress: &str, spec: &SessionSpec) -> Result<(), RestateError> {
    let url = format!("{ingress}/{SESSION_SERVICE}/{}/run/send", spec.session_id);
    checked(&url, http().post(&url).json(spec))
        .await
        .map(|_| ())
}

/// Waits for the outcome of session `session_id`. A server that restarts meanwhile is waited
/// for (connection errors and 5xx are retried until `patience` runs out).
pub async fn outcome(
    ingress: &str,
    session_id: &str,
    patience: Duration,
) -> Result<SessionOutcome, RestateError> {
    let url = format!("{ingress}/restate/workflow/{SESSION_SERVICE}/{session_id}/attach");
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match checked(&url, http().get(&url)).await {
            Ok(body) => {
                return serde_json::from_str(&body)
                    .map_err(|e| RestateError::BadOutcome(format!("{e}: {body:.200}")))
            }
            Err(e @ RestateError::Refused { status, .. }) if status < 500 => return Err(e),
            Err(e) => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Feeds every complete line appended to the event log at `path` to `observer`, from the start,
/// until the future is dropped: the live view of a session other processes run.
pub async fn follow(path: &Path, observer: Observer) {
    let mut offset = 0usize;
    loop {
        if let Ok(bytes) = tokio::fs::read(path).await {
            if let Some(end) = bytes.get(offset..).and_then(|b| memchr::memrchr(b'\n', b)) {
                let chunk = &bytes[offset..offset + end + 1];
                for line in chunk.split(|b| *b == b'\n') {
                    if let Ok(event) = serde_json::from_slice::<Event>(line) {
                        observer(&event);
                    }
                }
                offset += end + 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restate_addresses_become_ingress_urls_and_bad_ones_say_how_to_write_them() {
        assert_eq!(
            ingress_url("restate://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(ingress_url("http://host:9/").unwrap(), "http://host:9");
        for bad in [
            "127.0.0.1:8080",
            "restate://",
            "restate://host",
            "restate://h:1/x",
        ] {
            let e = ingress_url(bad).unwrap_err().to_string();
            assert!(e.contains("restate://HOST:PORT"), "{bad}: {e}");
        }
    }
}
