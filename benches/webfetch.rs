//! `webfetch` cost: the tool (guard, resolver, redirect policy, byte cap, conversion) against a
//! plain reqwest GET of the same page from a server on 127.0.0.1, and HTML → markdown conversion
//! of a 1 MB page on its own.
//!
//! Run: `cargo bench --bench webfetch`. Numbers go into BENCHMARKS.md under `## webfetch`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use switchboard::agent::{load, LoadOptions};
use switchboard::config::{WebfetchSection, WebsearchSection};
use switchboard::project::Project;
use switchboard::tools::webfetch::{convert, Web};
use switchboard::tools::ToolContext;

const PAGE: &str = include_str!("../tests/fixtures/web/rustdoc-page.html");

/// A page of about 1 MB: the fixture's body content repeated, inside one document.
fn big_page() -> String {
    let section = "<section><h2>Delegation</h2><p>A primary agent hands work to a <b>subagent</b> \
                   with <code>task()</code>; the runtime checks the answer against the \
                   <a href=\"https://example.invalid/contract\">contract</a>.</p><ul><li>hops run \
                   in parallel</li><li>every hop is an event</li></ul><pre><code>let hops = 3;\n\
                   assert_eq!(hops, 3);</code></pre></section>\n";
    let mut html = String::from("<!DOCTYPE html><html><head><title>big</title></head><body>");
    while html.len() < 1024 * 1024 {
        html.push_str(section);
    }
    html.push_str("</body></html>");
    html
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = rt.block_on(async {
        let app = axum::Router::new().route(
            "/page.html",
            axum::routing::get(|| async {
                (
                    [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    PAGE,
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    });

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/fetcher.md"),
        "---\ndescription: fetches\nmode: subagent\ntools: [WebFetch]\n---\nFetch.\n",
    )
    .unwrap();
    let project = Project::open(dir.path()).unwrap();
    let set = load(&project, &LoadOptions::default());
    let agent = set.get("fetcher").unwrap().clone();
    let web = Web::new(
        &WebfetchSection {
            allow_hosts: vec!["127.0.0.1".into()],
            ..Default::default()
        },
        &WebsearchSection::default(),
    )
    .unwrap();
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    // A new query string each time, so the session cache never answers.
    let n = AtomicU64::new(0);
    let url = |n: &AtomicU64| {
        format!(
            "http://{addr}/page.html?i={}",
            n.fetch_add(1, Ordering::Relaxed)
        )
    };

    let mut g = c.benchmark_group("webfetch_local_page");
    g.bench_function("plain_reqwest_get", |b| {
        b.iter(|| {
            rt.block_on(async {
                let body = plain
                    .get(url(&n))
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                black_box(body.len())
            })
        })
    });
    for format in ["raw", "markdown"] {
        g.bench_function(format!("webfetch_{format}"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let ctx = ToolContext {
                        project: &project,
                        agent: &agent,
                        known: &[],
                        written: &[],
                    };
                    let (out, _) = web
                        .invoke(ctx, "webfetch", &json!({"url": url(&n), "format": format}))
                        .await;
                    black_box(out.unwrap().text.len())
                })
            })
        });
    }
    g.finish();

    let big = big_page();
    let mut g = c.benchmark_group("webfetch_convert");
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.sample_size(10);
    g.bench_function("html_to_markdown_1mb", |b| {
        b.iter(|| black_box(convert::html_to_markdown(black_box(&big)).len()))
    });
    g.finish();
}

criterion_group!(webfetch, benches);
criterion_main!(webfetch);
