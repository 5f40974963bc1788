//! The knowledge store and `analyze_file`/`recall`, end to end: the shipped file-analyzer agent
//! on the offline model, through the runtime and the CLI.

use std::path::Path;
use std::sync::Arc;

use switchboard::agent::{load, LoadOptions};
use switchboard::config::Config;
use switchboard::knowledge::extraction::{Extraction, Lines, Note};
use switchboard::knowledge::provenance::GitProbe;
use switchboard::knowledge::source::prepare;
use switchboard::knowledge::{KnowledgeError, Limits, Store};
use switchboard::model::{Model, ProviderContext, Registry, ScriptedModel};
use switchboard::project::Project;
use switchboard::runtime::analyze::{AnalyzeError, FileReport};
use switchboard::runtime::events::read_log;
use switchboard::runtime::{EventKind, RunOptions, Session};

const DESIGN: &str = "# Event log\n\nThe event log is append-only JSON lines. It is fsynced in the background.\n\n## Decisions\n\nWe chose JSON lines because every tool can read them.\n\n| term | meaning |\n| --- | --- |\n| hop | one agent working on one task |\n";

const READER: &str = "---\nname: reader\ndescription: reads\nmode: primary\nmodel: scripted/test\ntools: {analyze_file: true, recall: true}\n---\nYou read files.\n";

/// A project with the shipped analyzer, a primary that may analyse, and one note file.
fn project() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("agent")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/file-analyzer.md"),
        root.join("agent/file-analyzer.md"),
    )
    .unwrap();
    std::fs::write(root.join("agent/reader.md"), READER).unwrap();
    std::fs::write(root.join("notes/design.md"), DESIGN).unwrap();
    let p = Project::open(root).unwrap();
    (dir, p)
}

fn session(project: &Project, script: Option<&str>, agent: &str) -> Session {
    let agents = Arc::new(load(project, &LoadOptions::default()));
    assert!(!agents.has_errors(), "{:?}", agents.diagnostics);
    let registry = Registry::with_builtins(ProviderContext::default());
    if let Some(script) = script {
        let model: Arc<dyn Model> = Arc::new(ScriptedModel::from_yaml(script).unwrap());
        registry.insert("scripted/test", model);
    }
    let config = Config::load(project).unwrap();
    Session::for_agent(
        project.clone(),
        agents,
        config,
        Arc::new(registry),
        RunOptions::default(),
        agent,
        "analyse",
    )
    .unwrap()
}

async fn analyse(project: &Project, names: &[&str]) -> Vec<Result<FileReport, AnalyzeError>> {
    let s = session(project, None, "file-analyzer");
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    s.analyse_files(&names, "", &|_, _, _| {}).await.0
}

#[tokio::test]
async fn an_agent_analyses_once_is_answered_from_the_store_next_time_and_recalls() {
    let (_dir, p) = project();
    let call = |name: &str, args: &str| {
        format!("        - tool_calls:\n            - {{name: {name}, arguments: {args}}}\n")
    };
    let script = format!(
        "agents:\n  reader:\n    - turns:\n{}{}{}        - content: done\n",
        call("analyze_file", "{path: notes/design.md, focus: fsync}"),
        call("analyze_file", "{path: notes/design.md, focus: fsync}"),
        call("recall", "{query: \"append-only event log\"}"),
    );
    let s = session(&p, Some(&script), "reader");
    let outcome = s.run().await;
    assert_eq!(outcome.error, None);
    let events = read_log(&outcome.events).unwrap();
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                output, is_error, ..
            } => Some((output.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    let (first, second, recall) = (&results[0].0, &results[1].0, &results[2].0);
    assert!(
        !results[0].1 && first.starts_with("Analyzed notes/design.md"),
        "{first}"
    );
    assert!(
        first.contains("Focus `fsync`:\n- The event log is append-only"),
        "{first}"
    );
    assert!(second.starts_with("Unchanged since"), "{second}");
    assert!(second.contains("asked for 1 time"), "{second}");
    assert!(recall.contains("notes/design.md:3-3"), "{recall}");
    assert!(!recall.contains("STALE"), "{recall}");
    // The chunk ran as a child hop of the reader, once.
    let reader_hop = events
        .iter()
        .find(|e| {
            e.agent.as_deref() == Some("reader") && matches!(e.kind, EventKind::HopStarted { .. })
        })
        .and_then(|e| e.hop_id.clone());
    let analyzer_hops: Vec<_> = events
        .iter()
        .filter(|e| {
            e.agent.as_deref() == Some("file-analyzer")
                && matches!(e.kind, EventKind::HopStarted { .. })
        })
        .collect();
    assert_eq!(analyzer_hops.len(), 1);
    assert_eq!(analyzer_hops[0].parent_hop_id, reader_hop);
}

#[tokio::test]
async fn an_unchanged_file_is_skipped_and_a_changed_one_supersedes_its_old_knowledge() {
    let (dir, p) = project();
    let r = analyse(&p, &["notes/design.md"]).await;
    let first = r[0].as_ref().unwrap();
    assert!(!first.reused);
    let o = first.outcome.clone().unwrap();
    assert!(o.notes_new >= 3, "{o:?}");
    let r = analyse(&p, &["notes/design.md"]).await;
    assert!(r[0].as_ref().unwrap().reused);

    std::fs::write(
        dir.path().join("notes/design.md"),
        DESIGN.replace("append-only JSON lines", "append-only binary frames"),
    )
    .unwrap();
    let r = analyse(&p, &["notes/design.md"]).await;
    let changed = r[0].as_ref().unwrap();
    assert!(!changed.reused);
    assert_eq!(
        changed.outcome.as_ref().unwrap().superseded,
        Some(o.source_id)
    );

    let store = Store::open(&p).unwrap();
    let hits = store
        .recall("append-only JSON lines binary frames", None, None, 10)
        .unwrap();
    assert!(
        hits.iter()
            .all(|n| !n.text.contains("append-only JSON lines")),
        "{hits:?}"
    );
    assert!(
        hits.iter()
            .any(|n| n.text.contains("append-only binary frames")),
        "{hits:?}"
    );
    assert_eq!(store.sources().unwrap().len(), 1);
    // Superseded, not deleted: the old analysis is still in the file until `gc`.
    let db = rusqlite::Connection::open(dir.path().join(".switchboard/knowledge.db")).unwrap();
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(
        count("SELECT count(*) FROM sources WHERE superseded_at IS NOT NULL"),
        1
    );
    assert!(count("SELECT count(*) FROM notes WHERE superseded = 1") >= 1);
    drop(db);
    let mut store = Store::open(&p).unwrap();
    let gc = store.gc().unwrap();
    assert_eq!(gc.sources, 1);
    assert!(gc.notes >= 1);
    assert_eq!(store.sources().unwrap().len(), 1);
}

#[test]
fn provenance_outside_git_has_no_git_fields_and_inside_names_commit_branch_and_dirty() {
    let (dir, p) = project();
    let limits = Limits::default();
    let probe = GitProbe::open(p.root());
    // Temp dirs are not inside a checkout here; if one is, the git half below still holds.
    if probe.is_none() {
        let f = prepare(&p, "notes/design.md", &limits, None).unwrap();
        assert!(f.git.is_none());
        assert!(f.checksum.starts_with("sha256:") && f.checksum.len() == 71);
    }
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .map(|o| o.status.success());
        ok.unwrap_or(false)
    };
    if !git(&["init", "-q", "-b", "trunk"]) {
        eprintln!("git is not installed: the git half of this test did not run");
        return;
    }
    assert!(git(&["add", "notes/design.md"]) && git(&["commit", "-q", "-m", "x"]));
    let probe = GitProbe::open(p.root()).expect("a checkout now");
    let clean = prepare(&p, "notes/design.md", &limits, Some(&probe)).unwrap();
    let info = clean.git.unwrap();
    assert_eq!(info.branch.as_deref(), Some("trunk"));
    assert_eq!(info.commit.as_ref().map(String::len), Some(40));
    assert!(!info.dirty);
    std::fs::write(dir.path().join("notes/design.md"), "changed\n").unwrap();
    let dirty = prepare(&p, "notes/design.md", &limits, Some(&probe)).unwrap();
    assert!(dirty.git.unwrap().dirty);
    // A file HEAD does not have is dirty too.
    std::fs::write(dir.path().join("notes/new.md"), "new\n").unwrap();
    let new = prepare(&p, "notes/new.md", &limits, Some(&probe)).unwrap();
    assert!(new.git.unwrap().dirty);
}

#[tokio::test]
async fn paths_outside_the_root_symlinks_out_binaries_and_big_files_are_refused() {
    let (dir, p) = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("notes/link.txt"),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes/blob.bin"), [0u8, 159, 146, 150]).unwrap();
    std::fs::write(dir.path().join("notes/big.txt"), "x".repeat(2_000)).unwrap();
    std::fs::write(
        dir.path().join("switchboard.toml"),
        "[knowledge]\nmax_file_bytes = 1000\n",
    )
    .unwrap();
    let names = [
        "../secret.txt",
        "/etc/passwd",
        "notes/link.txt",
        "notes/blob.bin",
        "notes/big.txt",
        ".switchboard/knowledge.db",
    ];
    let r = analyse(&p, &names).await;
    let err = |i: usize| match &r[i] {
        Err(AnalyzeError::Knowledge(e)) => e,
        other => panic!("{}: expected a refusal, got {other:?}", names[i]),
    };
    assert!(matches!(err(0), KnowledgeError::Refused { .. }));
    assert!(matches!(err(1), KnowledgeError::Refused { .. }));
    #[cfg(unix)]
    assert!(
        matches!(err(2), KnowledgeError::Refused { .. }),
        "{}",
        err(2)
    );
    assert!(matches!(err(3), KnowledgeError::Binary { .. }));
    assert!(matches!(
        err(4),
        KnowledgeError::TooLarge {
            size: 2000,
            max: 1000,
            ..
        }
    ));
    assert!(err(4).to_string().contains("max_file_bytes"));
    assert!(matches!(err(5), KnowledgeError::Refused { .. }));
    assert!(Store::open(&p).unwrap().sources().unwrap().is_empty());
}

fn note(kind: &str, text: &str, line: u32) -> Note {
    Note {
        kind: kind.into(),
        text: text.into(),
        lines: Lines {
            start: line,
            end: line,
        },
    }
}

/// Stores `notes` as the analysis of `path` (whose content is written first).
fn store_fixture(p: &Project, store: &mut Store, path: &str, notes: Vec<Note>) {
    let abs = p.root().join(path);
    std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
    std::fs::write(&abs, format!("{path}\n").repeat(50)).unwrap();
    let file = prepare(p, path, &Limits::default(), None).unwrap();
    let ex = Extraction {
        notes,
        ..Default::default()
    };
    store
        .record(
            &file,
            "",
            "offline/default",
            "2026-11-23T00:00:00Z",
            &ex,
            None,
            "s",
        )
        .unwrap();
}

#[test]
fn recall_ranks_the_known_answer_first_filters_and_flags_stale_notes() {
    let (dir, p) = project();
    let mut store = Store::open(&p).unwrap();
    store_fixture(
        &p,
        &mut store,
        "a/log.md",
        vec![
            note(
                "fact",
                "The event log is fsynced in the background every 100 ms.",
                3,
            ),
            note(
                "heading",
                "Retries: transient errors are retried three times with backoff.",
                9,
            ),
        ],
    );
    store_fixture(
        &p,
        &mut store,
        "b/ids.rs",
        vec![
            note(
                "symbol",
                "`fn allocate`: message ids are allocated under a file lock.",
                12,
            ),
            note(
                "decision",
                "We chose UUIDv7 for session ids because they sort by time.",
                20,
            ),
        ],
    );
    store_fixture(
        &p,
        &mut store,
        "b/retry.rs",
        vec![note(
            "symbol",
            "`fn backoff`: retry delays double from one second.",
            4,
        )],
    );
    let top =
        |q: &str, path: Option<&str>, kind: Option<&str>| store.recall(q, path, kind, 5).unwrap();
    assert!(top("when is the event log fsynced", None, None)[0]
        .text
        .contains("fsynced"));
    assert!(top("session ids sort", None, None)[0]
        .text
        .contains("UUIDv7"));
    let retry = top("retry backoff", None, None);
    assert_eq!(retry.len(), 2);
    assert_eq!(
        top("retry backoff", Some("b"), None)[0].provenance.path,
        "b/retry.rs"
    );
    assert_eq!(
        top("retry backoff", None, Some("heading"))[0]
            .provenance
            .path,
        "a/log.md"
    );
    assert!(top("retry", Some("c"), None).is_empty());
    assert!(top("zebra", None, None).is_empty());
    let hit = &top("file lock", None, None)[0];
    assert_eq!(hit.provenance.lines, "12-12");
    assert!(!hit.stale);
    std::fs::write(dir.path().join("b/ids.rs"), "changed").unwrap();
    assert!(top("file lock", None, None)[0].stale);
}

#[test]
fn a_near_duplicate_note_reinforces_the_first_instead_of_adding_a_copy() {
    let (_dir, p) = project();
    let mut store = Store::open(&p).unwrap();
    store_fixture(
        &p,
        &mut store,
        "x.md",
        vec![note("fact", "The event log is append-only.", 1)],
    );
    store_fixture(
        &p,
        &mut store,
        "y.md",
        vec![note("fact", "the event log is append only", 2)],
    );
    let hits = store
        .recall("append only event log", None, None, 10)
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].reinforced, 1);
    assert!((hits[0].importance - 0.6).abs() < 1e-9);
}

/// Notes of one extraction are matched against each other too (in memory, before anything is
/// written), and against what is stored.
#[test]
fn near_duplicates_within_one_file_reinforce_once_and_distinct_notes_stay() {
    let (_dir, p) = project();
    let mut store = Store::open(&p).unwrap();
    store_fixture(
        &p,
        &mut store,
        "x.md",
        vec![note("fact", "Hops answer in call order.", 1)],
    );
    let abs = p.root().join("y.md");
    std::fs::write(&abs, "y\n".repeat(10)).unwrap();
    let file = prepare(&p, "y.md", &Limits::default(), None).unwrap();
    let ex = Extraction {
        notes: vec![
            note("fact", "The event log is append-only.", 1),
            note("fact", "the event log is append only", 2),
            note("heading", "The event log is append-only.", 3),
            note("fact", "hops answer in call order", 4),
            note("fact", "Sessions resume from the last completed hop.", 5),
        ],
        ..Default::default()
    };
    let out = store
        .record(&file, "", "offline/default", "t", &ex, None, "")
        .unwrap();
    assert_eq!((out.notes_new, out.notes_reinforced), (3, 2), "{out:?}");
    let log = store
        .recall("append only event log", None, Some("fact"), 10)
        .unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].reinforced, 1);
    let hops = store.recall("answer call order", None, None, 10).unwrap();
    assert_eq!((hops.len(), hops[0].reinforced), (1, 1), "{hops:?}");
    assert_eq!(hops[0].provenance.path, "x.md");
}

#[test]
fn parallel_writers_in_threads_lose_no_write() {
    let (_dir, p) = project();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut store = Store::open(&p).unwrap();
                for i in 0..10 {
                    let text = format!("thread {t} note {i} unique words alpha{t}x{i}");
                    store_fixture(
                        &p,
                        &mut store,
                        &format!("t{t}/f{i}.md"),
                        vec![note("fact", &text, 1)],
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let store = Store::open(&p).unwrap();
    assert_eq!(store.sources().unwrap().len(), 60);
    // Similar notes reinforce each other, but every write left its provenance row.
    let db = rusqlite::Connection::open(p.root().join(".switchboard/knowledge.db")).unwrap();
    let rows: i64 = db
        .query_row("SELECT count(*) FROM note_sources", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 60);
}

#[test]
fn parallel_cli_processes_lose_no_write() {
    let (dir, _p) = project();
    for d in 0..4 {
        for f in 0..5 {
            let path = dir.path().join(format!("notes/p{d}/f{f}.md"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(
                path,
                format!("# Heading {d} {f}\n\nProcess {d} file {f} says zq{d}q{f}.\n"),
            )
            .unwrap();
        }
    }
    let children: Vec<_> = (0..4)
        .map(|d| {
            std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
                .args(["--root"])
                .arg(dir.path())
                .args(["knowledge", "analyze", &format!("notes/p{d}")])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("5 analysed, 0 unchanged, 0 skipped, 0 failed"),
            "{stdout}"
        );
    }
    let p = Project::open(dir.path()).unwrap();
    let store = Store::open(&p).unwrap();
    assert_eq!(store.sources().unwrap().len(), 20);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--root")
        .arg(dir.path())
        .args(["knowledge", "search", "zq2q3", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["provenance"]["path"], "notes/p2/f3.md");
}

#[test]
fn the_shipped_analyzer_lints_clean_and_is_no_orphan() {
    let (_dir, p) = project();
    let set = load(&p, &LoadOptions::default());
    let problems = switchboard::lint::lint(&set);
    let about_analyzer: Vec<_> = problems
        .iter()
        .filter(|d| d.file.contains("file-analyzer"))
        .collect();
    assert!(about_analyzer.is_empty(), "{about_analyzer:?}");
}

#[test]
fn cli_stale_show_forget_gc_and_export() {
    let (dir, _p) = project();
    let sb = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("--root")
            .arg(dir.path())
            .arg("knowledge")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = sb(&["analyze", "notes"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = sb(&["stale"]);
    assert_eq!((code, out.trim()), (Some(0), "0 stale of 1 analysed"));
    let (_, shown) = sb(&["show", "notes/design.md"]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown[0]["source"]["path"], "notes/design.md");
    assert!(shown[0]["notes"].as_array().unwrap().len() >= 3);
    std::fs::write(dir.path().join("notes/design.md"), "# Changed\n").unwrap();
    let (code, out) = sb(&["stale"]);
    assert_eq!(code, Some(1));
    assert!(out.starts_with("notes/design.md  analysed "), "{out}");
    let (_, export) = sb(&["export", "--json"]);
    let export: serde_json::Value = serde_json::from_str(&export).unwrap();
    assert_eq!(export["sources"].as_array().unwrap().len(), 1);
    let (code, out) = sb(&["forget", "notes"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("1 analysis(es) of `notes` superseded"),
        "{out}"
    );
    let (_, export) = sb(&["export", "--json"]);
    assert!(export.contains("\"sources\": []"), "{export}");
    let (_, out) = sb(&["gc"]);
    assert!(out.starts_with("deleted 1 superseded analyses"), "{out}");
}

/// The offline promise end to end: `knowledge analyze thoughts/` with the offline model,
/// then the shipped researcher (offline too) recalls before it locates, and what it recalled is
/// analysed like a located document. Without a store, recall says so and creates none.
#[test]
fn the_offline_researcher_recalls_what_knowledge_analyze_stored() {
    use crate::support::fs::{copy_tree, json_out, sb};
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_tree(&repo.join("agent"), &dir.path().join("agent"));
    copy_tree(
        &repo.join("tests/fixtures/runtime/project/thoughts"),
        &dir.path().join("thoughts"),
    );
    let run = |question: &str| {
        let v = json_out(sb(dir.path()).args(["run", "researcher", question, "--json"]));
        read_log(Path::new(v["events"].as_str().unwrap())).unwrap()
    };
    let recall_output = |events: &[switchboard::runtime::Event]| {
        events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::ToolResult { tool, output, .. } if tool == "recall" => {
                    Some(output.clone())
                }
                _ => None,
            })
            .expect("the researcher calls recall before it locates")
    };
    let question = "What did we decide about the event log?";
    let before = recall_output(&run(question));
    assert!(before.contains("No stored knowledge"), "{before}");
    assert!(
        !dir.path().join(".switchboard/knowledge.db").exists(),
        "a query does not create the store"
    );

    let out = sb(dir.path())
        .args(["knowledge", "analyze", "thoughts"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = run(question);
    let recalled = recall_output(&events);
    assert!(recalled.contains("note(s) for"), "{recalled}");
    let first_doc = recalled
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("from "))
        .and_then(|r| r.split(':').next())
        .expect("each note names its file")
        .to_string();
    assert!(first_doc.starts_with("thoughts/"), "{recalled}");
    // The recalled document is analysed (verified), like a located one.
    let analysed: Vec<String> = events
        .iter()
        .filter(|e| e.agent.as_deref() == Some("thoughts-analyzer"))
        .filter_map(|e| match &e.kind {
            EventKind::HopStarted { prompt, .. } => Some(prompt.clone()),
            _ => None,
        })
        .collect();
    assert!(
        analysed.iter().any(|p| p.contains(&first_doc)),
        "{first_doc} not among {analysed:?}"
    );
}

/// The progress bar is for terminals only: with stderr a pipe, `knowledge analyze` of many
/// files prints exactly the per-file lines and the total, and nothing at all on stderr, with
/// or without `--json`.
#[test]
fn analyze_many_files_off_a_terminal_draws_no_progress() {
    let (dir, _p) = project();
    for i in 0..3 {
        std::fs::write(
            dir.path().join(format!("notes/n{i}.md")),
            format!("# Note {i}\n\nNote {i} says zq{i}.\n"),
        )
        .unwrap();
    }
    let run = |json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.arg("--root")
            .arg(dir.path())
            .args(["knowledge", "analyze", "notes"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (stdout, stderr) = run(false);
    assert_eq!(stderr, "", "nothing drawn off a terminal");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    for (line, name) in lines.iter().zip(["design", "n0", "n1", "n2"]) {
        assert!(
            line.starts_with(&format!("analysed  notes/{name}.md  1 chunk(s), ")),
            "{line}"
        );
    }
    assert_eq!(lines[4], "4 analysed, 0 unchanged, 0 skipped, 0 failed");
    assert!(!stdout.contains(['\r', '\x1b']), "{stdout:?}");
    let (stdout, stderr) = run(true);
    assert_eq!(stderr, "");
    let statuses: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].to_string())
        .collect();
    assert_eq!(statuses, vec!["\"unchanged\""; 4], "{stdout}");
}

/// On a terminal (a pseudo-terminal from util-linux `script`), the bar counts the files, names
/// the one being analysed, and is cleared before the per-file lines, which are unchanged.
#[test]
fn analyze_many_files_on_a_terminal_draws_a_progress_bar() {
    let (dir, _p) = project();
    for i in 0..3 {
        std::fs::write(
            dir.path().join(format!("notes/n{i}.md")),
            format!("# Note {i}\n\nNote {i} says zq{i}.\n"),
        )
        .unwrap();
    }
    let command = format!(
        "{} --root {} knowledge analyze notes",
        env!("CARGO_BIN_EXE_switchboard"),
        dir.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("util-linux `script` gives the test a terminal");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{seen}");
    assert!(seen.contains("0/4 files"), "{seen:?}");
    assert!(seen.contains("4/4 files"), "{seen:?}");
    assert!(seen.contains("notes/n2.md"), "{seen:?}");
    let after_bar = seen.rsplit("\x1b[2K").next().unwrap();
    assert!(
        after_bar.starts_with("analysed  notes/design.md  1 chunk(s), "),
        "{after_bar:?}"
    );
    assert!(after_bar.contains("4 analysed, 0 unchanged, 0 skipped, 0 failed"));
}
