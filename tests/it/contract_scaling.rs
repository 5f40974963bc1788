//! `check` and its human rendering stay linear in the number of repeated tags: an answer with
//! 80,000 `<answer>` tags must take about 8× the time of one with 10,000, not 64×.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use switchboard::contract::{check, CheckContext, Contract, FileCache};
use switchboard::project::Project;

/// The answer shapes: every tag on one line, one tag per line, and closed pairs per line.
fn answer(shape: &str, n: usize) -> String {
    let head = "---\nmessage_id: x-2026-01-19-001\ncorrelation_id: c\ntimestamp: 2026-01-19T14:30:00Z\n\
                message_type: GENERIC\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\nx\n</answer>\n";
    let body = match shape {
        "one line" => "<answer>".repeat(n) + "\n",
        "one per line" => "<answer>\n".repeat(n),
        _ => "<answer>x</answer>\n".repeat(n),
    };
    format!("{head}{body}")
}

/// Seconds to check `text` and render its report as `check` prints it; returns the violations.
fn check_and_render(project: &Project, text: &str) -> (f64, usize, usize) {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    let clock = Instant::now();
    let report = check(text, &Contract::envelope(), &ctx);
    let rendered = report.render("answer.md", text, false);
    (
        clock.elapsed().as_secs_f64(),
        report.violations.len(),
        rendered.len(),
    )
}

#[test]
fn repeated_answer_tags_check_and_render_in_linear_time() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::open(dir.path()).unwrap();
        for shape in ["one line", "one per line", "pairs"] {
            // The best of two runs, so one scheduling hiccup on a busy machine does not decide.
            let best = |n: usize| {
                let text = answer(shape, n);
                let a = check_and_render(&project, &text);
                let b = check_and_render(&project, &text);
                if a.0 <= b.0 {
                    a
                } else {
                    b
                }
            };
            let (small, small_violations, small_out) = best(10_000);
            let (large, large_violations, large_out) = best(80_000);
            tx.send((
                shape,
                small,
                large,
                small_violations,
                large_violations,
                small_out,
                large_out,
            ))
            .unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    for _ in 0..3 {
        let left = deadline.saturating_duration_since(Instant::now());
        let (shape, small, large, sv, lv, so, lo) = rx
            .recv_timeout(left)
            .expect("checking 10k and 80k repeated tags did not finish within 120 s");
        assert!(
            lv >= 80_000 && sv >= 10_000,
            "{shape}: every repeat is reported ({sv}, {lv})"
        );
        // Output grows with the violations, not with violations × line length.
        assert!(lo < so * 16, "{shape}: rendered {so} then {lo} bytes");
        let ratio = large / small.max(1e-4);
        assert!(
            ratio < 16.0,
            "{shape}: 8× the tags took {ratio:.1}× the time ({small:.3} s → {large:.3} s)"
        );
    }
}
