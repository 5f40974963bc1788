//! The verification-command judge against a judged corpus (issue #28 item 1):
//! `tests/data/verification-commands.tsv`, one `expected<TAB>family<TAB>command` a line, where
//! `expected` is `safe` (only reads or tests) or `unsafe` (writes, deletes, publishes, restarts,
//! or runs code the judge cannot see). The judgement is measured without the "is the program
//! installed" check, so the figures do not depend on the machine.

use std::collections::BTreeMap;

use switchboard::workflow::command::judge_command;

const CORPUS: &str = include_str!("../data/verification-commands.tsv");
/// Written after the judge, and run once before any change to it (figures in the decision
/// record `thoughts/shared/decisions/2026-11-23-checkpoint-workflows.md`).
const HELD_OUT: &str = include_str!("../data/verification-commands-heldout.tsv");

#[test]
fn the_judge_accepts_no_unsafe_command_and_agrees_on_95_percent() {
    measure(CORPUS, 300);
}

#[test]
fn the_judge_holds_on_commands_written_after_it() {
    measure(HELD_OUT, 80);
}

fn measure(corpus: &str, at_least: usize) {
    let mut total = 0usize;
    let mut unsafe_accepted = Vec::new();
    let mut safe_refused = Vec::new();
    let mut families: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (n, line) in corpus.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut cols = line.splitn(3, '\t');
        let (Some(expected), Some(family), Some(command)) = (cols.next(), cols.next(), cols.next())
        else {
            panic!("line {}: not `expected<TAB>family<TAB>command`", n + 1);
        };
        assert!(
            expected == "safe" || expected == "unsafe",
            "line {}: expected `safe` or `unsafe`, found `{expected}`",
            n + 1
        );
        total += 1;
        let verdict = judge_command(command);
        let fam = families.entry(family).or_default();
        fam.0 += 1;
        match (expected, verdict) {
            ("unsafe", Ok(())) => unsafe_accepted.push(format!("{family}: {command}")),
            ("safe", Err(why)) => safe_refused.push(format!("{family}: {command} — {why:?}")),
            _ => fam.1 += 1,
        }
    }
    let agree = total - unsafe_accepted.len() - safe_refused.len();
    let report = format!(
        "{total} commands, {agree} agree ({:.1} %); unsafe accepted: {}; safe refused: {}\n\
         per family (rows, agree): {families:?}\n\
         UNSAFE ACCEPTED:\n  {}\nSAFE REFUSED:\n  {}",
        100.0 * agree as f64 / total as f64,
        unsafe_accepted.len(),
        safe_refused.len(),
        unsafe_accepted.join("\n  "),
        safe_refused.join("\n  "),
    );
    println!("{report}");
    assert!(total >= at_least, "{report}");
    assert!(unsafe_accepted.is_empty(), "{report}");
    assert!(agree * 100 >= total * 95, "{report}");
}

/// Bad input gets an answer, never a panic: every prefix of every command in both sets (cut
/// quotes, dangling operators and redirections, half-written `if`s) is judged.
#[test]
fn every_prefix_of_every_command_is_judged_without_panicking() {
    let mut judged = 0usize;
    for line in CORPUS.lines().chain(HELD_OUT.lines()) {
        let Some(command) = line.splitn(3, '\t').nth(2) else {
            continue;
        };
        for (cut, _) in command.char_indices() {
            let _ = judge_command(&command[..cut]);
            judged += 1;
        }
    }
    for odd in [
        "", " ", "&", ";;", ">", "2>", "&>", "\\", "'", "\"", "((", "))", "|", "!", "}",
    ] {
        assert!(judge_command(odd).is_err(), "{odd:?}");
    }
    assert!(judged > 10_000, "{judged}");
}
