//! `switchboard lint --watch`: a change to an agent file is re-linted and only the difference is
//! printed. Runs the real binary against a temporary project.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LEAD: &str = "---\ndescription: \"lead\"\nmode: primary\n---\nWorks alone.\n";

#[test]
fn watch_prints_what_a_save_added_and_fixed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    let file = dir.path().join("agent/lead.md");
    std::fs::write(&file, LEAD).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["lint", "--watch", "--format", "json", "--root"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .for_each(|l| drop(tx.send(l)))
    });
    std::thread::spawn(move || {
        BufReader::new(err)
            .lines()
            .map_while(Result::ok)
            .for_each(|l| drop(tx2.send(format!("stderr: {l}"))))
    });

    let wait_for = |pred: &dyn Fn(&str) -> bool, what: &str| -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                if pred(&line) {
                    return line;
                }
            }
        }
        panic!("timed out waiting for {what}");
    };
    wait_for(&|l| l.contains("watching"), "the watcher to start");

    std::fs::write(&file, LEAD.replace("Works alone.", "Delegate to `ghost`.")).unwrap();
    let added = wait_for(
        &|l| l.contains("\"added\""),
        "the re-lint after the first save",
    );
    let v: serde_json::Value = serde_json::from_str(&added).unwrap();
    assert_eq!(v["added"][0]["code"], "delegation/missing-target", "{v}");
    assert_eq!(v["fixed"].as_array().map(Vec::len), Some(0), "{v}");

    std::fs::write(&file, LEAD).unwrap();
    let fixed = wait_for(
        &|l| l.contains("\"fixed\""),
        "the re-lint after the second save",
    );
    let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(v["fixed"][0]["code"], "delegation/missing-target", "{v}");
    assert_eq!(v["added"].as_array().map(Vec::len), Some(0), "{v}");

    let _ = child.kill();
    let _ = child.wait();
}
