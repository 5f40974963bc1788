//! `webfetch` and `websearch` against servers this test starts on 127.0.0.1: conversion, content
//! types, bounds (time, bytes, redirects), the address guard, permissions and the session cache.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use switchboard::agent::{load, Agent, LoadOptions};
use switchboard::config::{WebfetchSection, WebsearchSection};
use switchboard::project::Project;
use switchboard::tools::webfetch::{FetchRecord, Web};
use switchboard::tools::{ToolContext, ToolError, ToolOutput};

const PAGE: &str = include_str!("../fixtures/web/rustdoc-page.html");

#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

async fn serve() -> (SocketAddr, Hits) {
    let hits = Hits::default();
    let app = Router::new()
        .route("/page.html", get(page))
        .route("/ok/page.html", get(page))
        .route(
            "/notes.txt",
            get(|| async { text("text/plain", "plain notes\n") }),
        )
        .route(
            "/doc.md",
            get(|| async { text("text/markdown", "# Title\n\nBody.\n") }),
        )
        .route(
            "/data.json",
            get(|| async { text("application/json", r#"{"a": 1}"#) }),
        )
        .route(
            "/paper.pdf",
            get(|| async { text("application/pdf", "%PDF-1.7 ...") }),
        )
        .route(
            "/image.png",
            get(|| async { text("image/png", "\u{89}PNG") }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
        .route(
            "/hang",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .route("/big", get(big))
        .route("/redirect/{n}", get(redirect))
        .route("/to", get(redirect_to))
        .route("/search", get(search))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, hits)
}

fn text(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn page(State(hits): State<Hits>) -> Response {
    hits.0.fetch_add(1, Ordering::SeqCst);
    text("text/html; charset=utf-8", PAGE)
}

/// 50 MB of text, streamed in 64 KiB chunks so the server never holds it whole.
async fn big() -> Response {
    let chunk = bytes::Bytes::from(vec![b'a'; 64 * 1024]);
    let chunks = (50 * 1024 * 1024) / chunk.len();
    let stream = futures_util::stream::iter(
        (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// `/redirect/N` → `/redirect/N-1` → … → `/redirect/0` → the page.
async fn redirect(axum::extract::Path(n): axum::extract::Path<u32>) -> Response {
    let to = if n == 0 {
        "/page.html".to_string()
    } else {
        format!("/redirect/{}", n - 1)
    };
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// `/to?url=U` redirects anywhere: how a public page would bounce a fetch to a private address.
async fn redirect_to(Query(q): Query<std::collections::HashMap<String, String>>) -> Response {
    let to = q.get("url").cloned().unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn search(
    Query(q): Query<std::collections::HashMap<String, String>>,
    _h: HeaderMap,
) -> Response {
    let query = q.get("q").cloned().unwrap_or_default();
    assert_eq!(q.get("format").map(String::as_str), Some("json"));
    axum::Json(json!({"results": [
        {"title": format!("About {query}"), "url": "https://example.invalid/a", "content": "first hit"},
        {"title": "Second", "url": "https://example.invalid/b", "content": ""}
    ]}))
    .into_response()
}

/// A project with one agent granted `webfetch`, with the given extra frontmatter.
fn project_with(extra: &str) -> (tempfile::TempDir, Project, Agent) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/fetcher.md"),
        format!(
            "---\ndescription: fetches pages\nmode: subagent\ntools: {{webfetch: true, websearch: true}}\n{extra}---\nFetch.\n"
        ),
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let set = load(&project, &LoadOptions::default());
    assert!(!set.has_errors(), "{:?}", set.diagnostics);
    let agent = set.get("fetcher").unwrap().clone();
    (dir, project, agent)
}

fn local_only() -> WebfetchSection {
    WebfetchSection {
        allow_hosts: vec!["127.0.0.1".into()],
        ..Default::default()
    }
}

async fn fetch(
    web: &Web,
    project: &Project,
    agent: &Agent,
    args: Value,
) -> (Result<ToolOutput, ToolError>, Option<FetchRecord>) {
    let ctx = ToolContext {
        project,
        agent,
        known: &[],
        written: &[],
    };
    web.invoke(ctx, "webfetch", &args).await
}

fn web(fetch: WebfetchSection) -> Web {
    Web::new(&fetch, &WebsearchSection::default()).unwrap()
}

#[tokio::test]
async fn a_real_page_becomes_markdown() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(local_only());
    let url = format!("http://{addr}/page.html");
    let (result, record) = fetch(&web, &project, &agent, json!({"url": url})).await;
    let text = result.unwrap().text;
    // The page's own words, as markdown: heading, emphasis, link, list items, code block.
    assert!(text.contains("Delegation"), "{text}");
    assert!(text.contains("**subagent**"), "{text}");
    assert!(
        text.contains("[contract](https://example.invalid/contract)"),
        "{text}"
    );
    assert!(text.contains("hops run in parallel"), "{text}");
    assert!(text.contains("assert_eq!(hops, 3);"), "{text}");
    // None of the page's machinery: scripts, styles, font preload lists.
    assert!(!text.contains("insertAdjacentHTML"), "{text}");
    assert!(!text.contains("woff2"), "{text}");
    assert!(
        text.starts_with(&format!("URL: {url}\nStatus: 200\n")),
        "{text}"
    );
    let record = record.unwrap();
    assert_eq!(record.status, Some(200));
    assert_eq!(record.bytes, PAGE.len());
    assert!(!record.cut && !record.cached);

    let (result, _) = fetch(&web, &project, &agent, json!({"url": url, "format": "raw"})).await;
    assert!(result.unwrap().text.ends_with(PAGE));
    let (result, _) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": url, "format": "text"}),
    )
    .await;
    let plain = result.unwrap().text;
    assert!(
        plain.contains("subagent") && !plain.contains("**subagent**"),
        "{plain}"
    );
}

#[tokio::test]
async fn content_types_pass_through_or_are_refused_by_name() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(local_only());
    for (path, want) in [
        ("notes.txt", "plain notes"),
        ("doc.md", "# Title\n\nBody."),
        ("data.json", r#"{"a": 1}"#),
    ] {
        let (result, _) = fetch(
            &web,
            &project,
            &agent,
            json!({"url": format!("http://{addr}/{path}")}),
        )
        .await;
        assert!(result.unwrap().text.trim_end().ends_with(want), "{path}");
    }
    for (path, mime) in [("paper.pdf", "application/pdf"), ("image.png", "image/png")] {
        let (result, record) = fetch(
            &web,
            &project,
            &agent,
            json!({"url": format!("http://{addr}/{path}")}),
        )
        .await;
        let err = result.unwrap_err().to_string();
        assert!(err.contains(mime), "{err}");
        assert!(record.unwrap().error.is_some());
    }
    let (result, _) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/missing")}),
    )
    .await;
    let err = result.unwrap_err().to_string();
    assert!(
        err.contains("HTTP 404") && err.contains("no such page"),
        "{err}"
    );
}

#[tokio::test]
async fn a_hanging_server_times_out() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(WebfetchSection {
        timeout_secs: Some(0.5),
        ..local_only()
    });
    let started = std::time::Instant::now();
    let (result, record) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/hang")}),
    )
    .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(record.unwrap().error.unwrap().contains("timed out"));
}

#[tokio::test]
async fn a_50_mb_body_is_cut_at_the_cap() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(WebfetchSection {
        max_bytes: Some(1024 * 1024),
        ..local_only()
    });
    let url = format!("http://{addr}/big");
    let (result, record) = fetch(&web, &project, &agent, json!({"url": url})).await;
    let text = result.unwrap().text;
    assert!(text.contains("cut at 1048576 bytes"), "{}", &text[..300]);
    let record = record.unwrap();
    assert!(record.cut);
    assert_eq!(record.bytes, 1024 * 1024);
    // A smaller cap asked for by the call wins, the configured one bounds it.
    let (_, record) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("{url}?small"), "max_bytes": 1000}),
    )
    .await;
    assert_eq!(record.unwrap().bytes, 1000);
}

#[tokio::test]
async fn loopback_is_refused_by_default_and_allowed_when_configured() {
    let (addr, hits) = serve().await;
    let (_d, project, agent) = project_with("");
    let url = format!("http://{addr}/page.html");
    let (result, _) = fetch(
        &web(WebfetchSection::default()),
        &project,
        &agent,
        json!({"url": url}),
    )
    .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("loopback"), "{err}");
    assert!(err.contains("allow_hosts"), "{err}");
    assert_eq!(
        hits.0.load(Ordering::SeqCst),
        0,
        "no request may reach the server"
    );

    let (result, _) = fetch(&web(local_only()), &project, &agent, json!({"url": url})).await;
    assert!(result.is_ok());
    let networks = WebfetchSection {
        allow_networks: vec!["127.0.0.0/8".parse().unwrap()],
        ..Default::default()
    };
    let (result, _) = fetch(&web(networks), &project, &agent, json!({"url": url})).await;
    assert!(result.is_ok());
}

#[tokio::test]
async fn a_host_name_resolving_to_loopback_is_refused() {
    let (addr, hits) = serve().await;
    let (_d, project, agent) = project_with("");
    // `localhost` goes through the resolver; allowing the literal 127.0.0.1 does not allow it.
    let url = format!("http://localhost:{}/page.html", addr.port());
    let (result, _) = fetch(&web(local_only()), &project, &agent, json!({"url": url})).await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("`localhost` resolves to"), "{err}");
    assert!(err.contains("loopback"), "{err}");
    assert_eq!(hits.0.load(Ordering::SeqCst), 0);
    // Naming the host opens it.
    let named = WebfetchSection {
        allow_hosts: vec!["localhost".into()],
        ..Default::default()
    };
    let (result, _) = fetch(&web(named), &project, &agent, json!({"url": url})).await;
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(local_only());
    // A chain of allowed hops is followed.
    let (result, record) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/redirect/3")}),
    )
    .await;
    assert!(result.is_ok());
    assert_eq!(
        record.unwrap().final_url.unwrap(),
        format!("http://{addr}/page.html")
    );
    // Too many hops are not.
    let (result, _) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/redirect/9")}),
    )
    .await;
    assert!(result.unwrap_err().to_string().contains("redirects"));
    // A chain that ends on a private or metadata address is refused at that hop.
    for target in [
        "http://10.0.0.7/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://192.168.1.1/",
    ] {
        let url = format!("http://{addr}/to?url={}", urlencode(target));
        let (result, _) = fetch(&web, &project, &agent, json!({"url": url})).await;
        let err = result.unwrap_err().to_string();
        assert!(err.contains("refused"), "{target}: {err}");
        assert!(
            err.contains("webfetch only reaches public addresses"),
            "{target}: {err}"
        );
    }
    // And a redirect to another scheme is not followed.
    let url = format!("http://{addr}/to?url={}", urlencode("file:///etc/passwd"));
    let (result, _) = fetch(&web, &project, &agent, json!({"url": url})).await;
    assert!(result.unwrap_err().to_string().contains("file:"));
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn permission_patterns_decide_per_url() {
    let (addr, hits) = serve().await;
    let (_d, project, agent) = project_with(
        "permission:\n  webfetch:\n    \"http://127.0.0.1:*/ok/**\": allow\n    \"*\": deny\n",
    );
    let web = web(local_only());
    let (result, _) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/ok/page.html")}),
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    let (result, record) = fetch(
        &web,
        &project,
        &agent,
        json!({"url": format!("http://{addr}/page.html")}),
    )
    .await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains("permission.webfetch denies"), "{err}");
    assert!(record.is_none(), "a refused URL is never requested");
    assert_eq!(hits.0.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_same_url_twice_is_served_from_the_cache() {
    let (addr, hits) = serve().await;
    let (_d, project, agent) = project_with("");
    let web = web(local_only());
    let url = format!("http://{addr}/page.html");
    let (first, r1) = fetch(&web, &project, &agent, json!({"url": url})).await;
    let (second, r2) = fetch(&web, &project, &agent, json!({"url": url})).await;
    assert_eq!(first.unwrap().text, second.unwrap().text);
    assert!(!r1.unwrap().cached);
    assert!(r2.unwrap().cached);
    assert_eq!(hits.0.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_urls_are_tool_errors() {
    let (_d, project, agent) = project_with("");
    let web = web(WebfetchSection::default());
    for (url, want) in [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.invalid/x", "only http and https"),
        ("not a url", "not a URL"),
        ("http://0.0.0.0:9/", "unspecified"),
        ("http://[fd00::1]/", "unique-local"),
    ] {
        let (result, _) = fetch(&web, &project, &agent, json!({"url": url})).await;
        let err = result.unwrap_err().to_string();
        assert!(err.contains(want), "{url}: {err}");
    }
    let (result, _) = fetch(&web, &project, &agent, json!({})).await;
    assert!(result.unwrap_err().to_string().contains("url"));
}

#[tokio::test]
async fn websearch_needs_a_configured_endpoint() {
    let (addr, _) = serve().await;
    let (_d, project, agent) = project_with("");
    let ctx = ToolContext {
        project: &project,
        agent: &agent,
        known: &[],
        written: &[],
    };
    let none = web(WebfetchSection::default());
    assert!(!none.has_search());
    let (result, _) = none.invoke(ctx, "websearch", &json!({"query": "x"})).await;
    assert!(result
        .unwrap_err()
        .to_string()
        .contains("[websearch] searxng_url"));

    let search = WebsearchSection {
        searxng_url: Some(format!("http://{addr}/")),
        max_results: None,
    };
    let with = Web::new(&WebfetchSection::default(), &search).unwrap();
    let (result, _) = with
        .invoke(ctx, "websearch", &json!({"query": "event logs"}))
        .await;
    let text = result.unwrap().text;
    assert!(
        text.contains("1. About event logs\n   https://example.invalid/a\n   first hit"),
        "{text}"
    );
    assert!(text.contains("2. Second"), "{text}");
}

/// A session whose primary fetches a page: the tool is offered, the fetch reaches the server the
/// config allows, and the log has a `web.fetch` event with what happened.
#[tokio::test]
async fn a_session_logs_each_fetch() {
    use switchboard::config::Config;

    use switchboard::runtime::EventKind;

    let (addr, hits) = serve().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/lead.md"),
        "---\ndescription: looks things up\nmode: primary\ntools: [WebFetch, WebSearch, Read]\n---\nLook it up.\n",
    )
    .unwrap();
    let config = Config::parse(
        "[webfetch]\nallow_hosts = [\"127.0.0.1\"]\n",
        "switchboard.toml",
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let _agents = Arc::new(load(&project, &LoadOptions::default()));
    let url = format!("http://{addr}/page.html");
    let script = format!(
        "agents:\n  lead:\n    - turns:\n        - tool_calls:\n            - name: webfetch\n              arguments: {{url: \"{url}\"}}\n            - name: webfetch\n              arguments: {{url: \"{url}\"}}\n            - name: webfetch\n              arguments: {{url: \"http://169.254.169.254/latest/meta-data/\"}}\n        - content: done\n"
    );
    let (_outcome, events) =
        crate::support::scripted::run_agent(&project, config, &script, "lead", "x").await;
    let fetches: Vec<&FetchRecord> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WebFetch(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(fetches.len(), 3, "{fetches:#?}");
    assert_eq!((fetches[0].status, fetches[0].cached), (Some(200), false));
    assert_eq!(fetches[0].bytes, PAGE.len());
    assert!(fetches[1].cached);
    assert!(fetches[2].error.as_deref().unwrap().contains("link-local"));
    assert_eq!(hits.0.load(Ordering::SeqCst), 1);
    let results: Vec<(bool, &str)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                is_error,
                output,
                tool,
                ..
            } if tool == "webfetch" => Some((*is_error, output.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(!results[0].0 && results[0].1.contains("Delegation"));
    assert!(results[2].0 && results[2].1.contains("refused"));
    // Offered: webfetch and read; websearch is granted but has no endpoint, so it is not.
    let offered = events.iter().find_map(|e| match &e.kind {
        EventKind::ModelRequest { tools, .. } => Some(*tools),
        _ => None,
    });
    assert_eq!(offered, Some(2));
}

/// `agents --json` says per agent what the model will really be offered.
#[test]
fn agents_json_lists_the_tools_really_offered() {
    let (dir, _project, _agent) = project_with("");
    let run = |dir: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["--root", dir.to_str().unwrap(), "agents", "--json"])
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let agent = &json["agents"][0];
        let offered: Vec<String> = serde_json::from_value(agent["offered_tools"].clone()).unwrap();
        offered
    };
    // `{webfetch: true, websearch: true}` is an opencode map: everything else stays allowed too.
    let offered = run(dir.path());
    assert!(offered.contains(&"webfetch".to_string()), "{offered:?}");
    assert!(!offered.contains(&"websearch".to_string()), "{offered:?}");
    std::fs::write(
        dir.path().join("switchboard.toml"),
        "[websearch]\nsearxng_url = \"http://127.0.0.1:9/\"\n",
    )
    .unwrap();
    let offered = run(dir.path());
    assert!(offered.contains(&"websearch".to_string()), "{offered:?}");
}

/// A server on `ip` (any 127.0.0.x binds on Linux) with `/go?url=U` redirecting to `U` and
/// `/secret`, whose body must never reach an agent the redirect target is denied to.
async fn serve_on(ip: &str) -> (SocketAddr, Hits) {
    let hits = Hits::default();
    let app = Router::new()
        .route("/go", get(redirect_to))
        .route(
            "/secret",
            get(|State(hits): State<Hits>| async move {
                hits.0.fetch_add(1, Ordering::SeqCst);
                text("text/plain", "the denied page's secret\n")
            }),
        )
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind(format!("{ip}:0"))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, hits)
}

/// Issue #28 item 2: `permission.webfetch` is checked at every redirect, not only on the URL the
/// model asked for, and a cached chain is checked again for the agent it is served to.
#[tokio::test]
async fn permission_is_checked_at_every_redirect() {
    let (a, _) = serve_on("127.0.0.2").await;
    let (b, secret_hits) = serve_on("127.0.0.3").await;
    let (_d, project, agent) = project_with(
        "permission:\n  webfetch:\n    \"http://127.0.0.2:*/*\": allow\n    \"*\": deny\n",
    );
    let web = web(WebfetchSection {
        allow_hosts: vec!["127.0.0.2".into(), "127.0.0.3".into()],
        ..Default::default()
    });
    let secret = format!("http://{b}/secret");
    let go = format!("http://{a}/go?url={}", urlencode(&secret));
    let (result, record) = fetch(&web, &project, &agent, json!({"url": go})).await;
    let err = result.unwrap_err();
    assert!(matches!(err, ToolError::Refused { .. }), "{err:?}");
    let err = err.to_string();
    assert!(err.contains(&format!("redirects to `{secret}`")), "{err}");
    assert!(err.contains(r#"rule `"*": deny`"#), "{err}");
    assert!(!err.contains("secret\n"), "{err}");
    assert!(record.unwrap().error.is_some());
    assert_eq!(secret_hits.0.load(Ordering::SeqCst), 0, "never requested");

    // An agent allowed everywhere follows the same redirect; its response is cached, and the
    // cache does not hand it to the restricted agent either.
    let (_d2, project2, open) = project_with("");
    let (result, _) = fetch(&web, &project2, &open, json!({"url": go})).await;
    assert!(result.unwrap().text.contains("the denied page's secret"));
    assert_eq!(secret_hits.0.load(Ordering::SeqCst), 1);
    let (result, record) = fetch(&web, &project, &agent, json!({"url": go})).await;
    let err = result.unwrap_err().to_string();
    assert!(err.contains(&format!("redirects to `{secret}`")), "{err}");
    assert!(!err.contains("the denied page's secret"), "{err}");
    assert!(!record.unwrap().cached);

    // A redirect the pattern allows is followed.
    let inside = format!(
        "http://{a}/go?url={}",
        urlencode(&format!("http://{a}/secret"))
    );
    let (result, record) = fetch(&web, &project, &agent, json!({"url": inside})).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        record.unwrap().final_url.unwrap(),
        format!("http://{a}/secret")
    );
}
