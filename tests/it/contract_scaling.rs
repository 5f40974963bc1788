//! `check` and its human rendering stay linear in the number of repeated tags: an answer with
//! 80,000 `<answer>` tags must take about 8× the time of one with 10,000, not 64×. The report
//! lists the first repeats and counts the rest, so it stays small too.

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

/// CPU seconds to check `text` and render its report as `check` prints it; returns the problems
/// counted (a problem saying "N more … are not listed" counts N) and the rendered size.
fn check_and_render(project: &Project, text: &str) -> (f64, usize, usize) {
    let files = FileCache::new();
    let ctx = CheckContext::new(project, &files);
    // CPU time of this thread, not wall time: the other tests of this binary run beside it.
    let start = crate::support::clock::thread_cpu();
    let report = check(text, &Contract::envelope(), &ctx);
    let rendered = report.render("answer.md", text, false);
    let seconds = (crate::support::clock::thread_cpu() - start).as_secs_f64();
    // Each kind is listed 100 times at most (issue #28 item 7); the rest are counted.
    assert!(report.violations.len() < 500, "{}", report.violations.len());
    let counted = report
        .violations
        .iter()
        .map(|v| {
            v.message
                .split_once(" more `")
                .and_then(|(n, _)| n.parse::<usize>().ok())
                .unwrap_or(1)
        })
        .sum();
    (seconds, counted, rendered.len())
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
        let (shape, small, large, sv, lv, so, lo) = rx.recv_timeout(left).expect(
            "checking 10k and 80k repeated tags did not finish within 120 s (or panicked, above)",
        );
        assert!(
            lv >= 80_000 && sv >= 10_000,
            "{shape}: every repeat is counted ({sv}, {lv})"
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

/// Issue #28 item 7: checking an answer and rendering its report holds at most three times the
/// answer in heap, whatever the answer repeats (before, 50 MB of `<thinking>` tags took 3 GB and
/// 50 MB of Evidence blocks 2 GB). The heap is counted by this binary's allocator on this thread
/// only, so the figure is exact and the other tests do not move it.
#[test]
fn check_holds_at_most_three_times_the_answer_in_heap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/a.md"), "one\ntwo\n").unwrap();
    let project = Project::open(dir.path()).unwrap();
    let head =
        "---\nmessage_id: x-2026-01-19-001\ncorrelation_id: c\ntimestamp: 2026-01-19T14:30:00Z\n\
                message_type: GENERIC\n---\n\n<thinking>\nt\n</thinking>\n\n<answer>\nx\n";
    let size = 8 * 1024 * 1024;
    for (shape, unit) in [
        ("thinking tags", "<thinking>\n"),
        ("thinking pairs", "<thinking>t</thinking>\n"),
        (
            "evidence blocks",
            "- **Evidence**: `docs/a.md:1-2`\n- **Excerpt**:\n  ```text\n  one\n  two\n  ```\n",
        ),
        ("one long excerpt", "  one\n"),
    ] {
        let text = match shape {
            // One Excerpt of 8 MB: a single fenced block.
            "one long excerpt" => format!(
                "{head}- **Evidence**: `docs/a.md:1-2`\n- **Excerpt**:\n  ```text\n{}  ```\n</answer>\n",
                unit.repeat(size / unit.len())
            ),
            _ => format!("{head}{}</answer>\n", unit.repeat(size / unit.len())),
        };
        let files = FileCache::new();
        let ctx = CheckContext::new(&project, &files);
        let ((listed, rendered), peak) = crate::heap::peak_of(|| {
            let report = check(&text, &Contract::envelope(), &ctx);
            let rendered = report.render("answer.md", &text, false);
            (report.violations.len(), rendered.len())
        });
        let ratio = peak as f64 / text.len() as f64;
        assert!(
            peak <= 3 * text.len(),
            "{shape}: {peak} bytes of heap for a {} byte answer ({ratio:.1}×)",
            text.len()
        );
        assert!(
            listed < 500 && rendered < 200_000,
            "{shape}: {listed} problems, {rendered} bytes"
        );
        eprintln!(
            "{shape}: {:.1} MB answer, {:.1} MB peak heap ({ratio:.2}×)",
            text.len() as f64 / 1e6,
            peak as f64 / 1e6
        );
    }
}
