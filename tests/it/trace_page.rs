//! The trace page in a real browser: `trace ID --html FILE` for a session the binary ran, opened in
//! headless Chromium. The DOM after the page's script ran gives the bars' count and where the
//! browser laid them out; a screenshot is taken too (copied to docs/trace-page.png when
//! SWITCHBOARD_UPDATE_SCREENSHOT=1). Chromium comes from `scripts/install-chromium.sh`, which
//! `.ci/run` calls; without it this test fails and says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fs as support_fs;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/runtime");

use crate::support::fs::sb;

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !path.is_empty() {
                return PathBuf::from(path);
            }
        }
    }
    panic!(
        "headless Chromium is not installed: run scripts/install-chromium.sh (CI's .ci/run does) \
         so that `chromium` is on PATH"
    );
}

/// Runs Chromium headless with `args` on `url`, killed after a minute; returns stdout.
fn headless(profile: &Path, args: &[&str], url: &str) -> String {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1280,720",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

#[derive(Debug)]
struct Bar {
    index: usize,
    parent: Option<usize>,
    start_ms: f64,
    duration_ms: f64,
    x: f64,
    w: f64,
}

fn bars(dom: &str) -> Vec<Bar> {
    let tag = regex::Regex::new(r#"<div class="bar [^>]*>"#).unwrap();
    let attr = |t: &str, name: &str| -> String {
        let re = regex::Regex::new(&format!(r#"\b{name}="([^"]*)""#)).unwrap();
        re.captures(t).unwrap_or_else(|| panic!("no {name} in {t}"))[1].to_string()
    };
    tag.find_iter(dom)
        .map(|m| {
            let t = m.as_str();
            Bar {
                index: attr(t, "data-index").parse().unwrap(),
                parent: attr(t, "data-parent").parse().ok(),
                start_ms: attr(t, "data-start-ms").parse().unwrap(),
                duration_ms: attr(t, "data-duration-ms").parse().unwrap(),
                x: attr(t, "data-x").parse().unwrap(),
                w: attr(t, "data-w").parse().unwrap(),
            }
        })
        .collect()
}

#[test]
fn the_trace_page_shows_one_bar_per_hop_where_the_hop_ran() {
    let dir = tempfile::tempdir().unwrap();
    support_fs::copy_tree(&Path::new(FIXTURE).join("project"), dir.path());
    std::fs::copy(
        Path::new(FIXTURE).join("scripts/research.yaml"),
        dir.path().join("research.yaml"),
    )
    .unwrap();
    let out = sb(dir.path())
        .args([
            "run",
            "researcher",
            "research the runtime <b>now</b>",
            "--json",
        ])
        .args(["--model", "scripted/research.yaml"])
        .output()
        .unwrap();
    let v = crate::support::fs::success_json(&out);
    let session = v["session_id"].as_str().unwrap();

    let page = dir.path().join("trace.html");
    let out = sb(dir.path())
        .args(["trace", session, "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<b>now</b>"), "the prompt is escaped");

    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#hop=1", page.display());
    let dom = headless(profile.path(), &["--dump-dom"], &url);
    assert!(
        dom.contains(r#"data-ready="1""#),
        "the page's script ran: {dom}"
    );
    let bars = bars(&dom);
    assert_eq!(bars.len(), 5, "one bar per hop");
    let by_index: HashMap<usize, &Bar> = bars.iter().map(|b| (b.index, b)).collect();

    // Laid out by the browser: every bar has a width, later starts sit further right, and a
    // child's bar lies inside its caller's.
    let track_px = bars[0].w;
    assert!(track_px > 400.0, "the root bar spans the track: {bars:?}");
    let px_per_ms = track_px / bars[0].duration_ms.max(0.001);
    for b in &bars {
        assert!(b.w >= 1.0, "{b:?}");
        let expected_x = bars[0].x + b.start_ms * px_per_ms;
        assert!((b.x - expected_x).abs() < 3.0, "bar {b:?} at {expected_x}");
        if let Some(p) = b.parent {
            let p = by_index[&p];
            assert!(
                b.x >= p.x - 1.0 && b.x + b.w <= p.x + p.w + 3.0,
                "{b:?} inside {p:?}"
            );
        }
    }
    assert_eq!(bars.iter().filter(|b| b.parent.is_none()).count(), 1);

    // `#hop=1` selects the second hop: its prompt and answer are in the details panel.
    let details = dom.split(r#"id="details""#).nth(1).unwrap();
    assert!(
        details.starts_with(r#" data-shown="1""#),
        "{}",
        &details[..200.min(details.len())]
    );
    assert!(details.contains("delegation prompt") && details.contains("answer"));

    let shot = dir.path().join("trace.png");
    headless(
        profile.path(),
        &[&format!("--screenshot={}", shot.display())],
        &url,
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    assert!(
        png.len() > 10_000,
        "the screenshot has content: {} bytes",
        png.len()
    );
    if std::env::var_os("SWITCHBOARD_UPDATE_SCREENSHOT").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/trace-page.png");
        std::fs::write(docs, &png).unwrap();
    }
}
