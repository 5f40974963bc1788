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

/// CPU seconds to check `text` and render its report as `check` prints it; returns the violations.
fn check_and_render(project: &Project, text: &str) -> (f64, usize, usize) {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    // CPU time of this thread, not wall time: the other tests of this binary run beside it.
    let start = crate::support::clock::thread_cpu();
    let report = check(text, &Contract::envelope(), &ctx);
    let rendered = report.render("answer.md", text, false);
    (
        (crate::support::clock::thread_cpu() - start).as_secs_f64(),
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
            // The best of five interleaved runs of each size: a load spike on this shared,
            // noisy machine then has to hit all five runs of one size and none of the other's
            // to move the ratio (a timed ratio is this test's only way to see quadratic work).
            let (small_text, large_text) = (answer(shape, 10_000), answer(shape, 80_000));
            let mut small_runs = Vec::new();
            let mut large_runs = Vec::new();
            for _ in 0..5 {
                small_runs.push(check_and_render(&project, &small_text));
                large_runs.push(check_and_render(&project, &large_text));
            }
            let best = |runs: Vec<(f64, usize, usize)>| {
                runs.into_iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .expect("five runs")
            };
            let (small, small_violations, small_out) = best(small_runs);
            let (large, large_violations, large_out) = best(large_runs);
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
