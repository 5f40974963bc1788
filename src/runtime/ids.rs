//! Identifiers: UUID v7 session and hop ids, and message ids `<prefix>-YYYY-MM-DD-NNN`.
//!
//! Message ids must be unique across every session of a project, including sessions running at
//! the same time in other processes, so the counter lives on disk
//! (`.switchboard/ids/<prefix>-<date>`) and each allocation holds an exclusive lock on that file
//! while it reads, increments and writes the number. That lock (flock) belongs to the open file
//! description, so it excludes other processes (and other allocators) but not two threads that
//! share one handle: the handle therefore sits behind a mutex that is held for the whole
//! read-increment-write, and the flock is taken inside it. The counter is not fsynced: uniqueness between
//! processes only needs the shared page cache; after a power loss a counter could step back, which
//! the lock cannot prevent and the event log would show. Counter files stay open and are
//! rewritten in place at a fixed width: opening, truncating and resizing a file are journaled
//! metadata operations that cost hundreds of microseconds while the event log is being synced.

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A new time-ordered id (UUID v7), as text.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Allocates message ids from per-prefix, per-UTC-day counters under one folder.
#[derive(Debug, Clone)]
pub struct MessageIds {
    dir: PathBuf,
    /// Counter files already open, by file name; each one's mutex is held across an allocation.
    open: Arc<Mutex<HashMap<String, Arc<Mutex<std::fs::File>>>>>,
}

/// Digits the counter is stored with, so every write has the same size.
const WIDTH: usize = 20;

impl MessageIds {
    /// Counters under `<project_root>/.switchboard/ids/`.
    pub fn for_project(root: &Path) -> Self {
        MessageIds {
            dir: root.join(".switchboard").join("ids"),
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn file(&self, name: &str) -> std::io::Result<Arc<Mutex<std::fs::File>>> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| std::io::Error::other("id allocator lock poisoned"))?;
        if let Some(f) = open.get(name) {
            return Ok(f.clone());
        }
        std::fs::create_dir_all(&self.dir)?;
        let file = Arc::new(Mutex::new(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(self.dir.join(name))?,
        ));
        // One handle per day and prefix; yesterday's are dropped when the map grows.
        if open.len() > 64 {
            open.clear();
        }
        open.insert(name.to_string(), file.clone());
        Ok(file)
    }

    /// The next id for `prefix` on `now`'s UTC day: `thoughts-2026-11-21-001`, `-002`, ...
    /// (more than 999 in a day keeps counting with more digits).
    pub fn allocate(&self, prefix: &str, now: DateTime<Utc>) -> std::io::Result<String> {
        let day = now.format("%Y-%m-%d").to_string();
        let name = format!("{prefix}-{day}");
        let shared = self.file(&name)?;
        // Threads of this process queue here; the flock below queues other processes.
        let file = shared
            .lock()
            .map_err(|_| std::io::Error::other("id counter lock poisoned"))?;
        file.lock()?;
        let result = (|| -> std::io::Result<u64> {
            let mut buf = [0u8; 64];
            let n = file.read_at(&mut buf, 0)?;
            let last: u64 = std::str::from_utf8(&buf[..n])
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            let next = last + 1;
            file.write_all_at(format!("{next:0WIDTH$}").as_bytes(), 0)?;
            Ok(next)
        })();
        let unlocked = file.unlock();
        let next = result?;
        unlocked?;
        Ok(format!("{prefix}-{day}-{next:03}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// `threads` threads, each with the allocator `ids_for` gives it, allocate `each` ids for
    /// `thoughts` at `now`, all starting together; every id, in no particular order.
    fn allocate_in_threads(
        threads: usize,
        each: usize,
        now: chrono::DateTime<Utc>,
        ids_for: impl Fn() -> MessageIds,
    ) -> Vec<String> {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let ids = ids_for();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..each)
                        .map(|_| ids.allocate("thoughts", now).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    }

    #[test]
    fn ids_are_unique_under_threads_and_restart_per_day() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        // An allocator of its own per thread: only the file lock keeps them apart.
        let all = allocate_in_threads(8, 50, now, || MessageIds::for_project(dir.path()));
        let unique: HashSet<_> = all.iter().collect();
        assert_eq!(unique.len(), 400);
        let day = now.format("%Y-%m-%d");
        assert!(unique.contains(&format!("thoughts-{day}-001")));
        assert!(unique.contains(&format!("thoughts-{day}-400")));
        let ids = MessageIds::for_project(dir.path());
        let other = ids.allocate("locator", now).unwrap();
        assert_eq!(other, format!("locator-{day}-001"));
        let tomorrow = now + chrono::Duration::days(1);
        let next = ids.allocate("thoughts", tomorrow).unwrap();
        assert!(next.ends_with("-001"), "{next}");
    }

    /// One allocator shared by many threads of one process, as the hops of one session share it.
    /// flock belongs to the open file description, so a shared handle alone excludes nobody.
    #[test]
    fn one_allocator_shared_by_parallel_threads_gives_unique_ids() {
        for round in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let ids = MessageIds::for_project(dir.path());
            let now = Utc::now();
            let all = allocate_in_threads(32, 40, now, || ids.clone());
            let unique: HashSet<_> = all.iter().collect();
            assert_eq!(unique.len(), 32 * 40, "round {round}: duplicates");
            let day = now.format("%Y-%m-%d");
            assert!(unique.contains(&format!("thoughts-{day}-1280")));
        }
    }

    /// Set by `several_processes_give_unique_ids` for the copies of this test binary it starts.
    const CHILD_DIR: &str = "SWITCHBOARD_IDS_TEST_DIR";

    /// In a child process: allocates 100 ids with 4 threads sharing one allocator and writes
    /// them to `out-<pid>` in the folder. In a normal test run it does nothing.
    #[test]
    fn child_allocates_ids() {
        let Some(dir) = std::env::var_os(CHILD_DIR) else {
            return;
        };
        let ids = MessageIds::for_project(Path::new(&dir));
        let all = allocate_in_threads(4, 25, Utc::now(), || ids.clone());
        let out = Path::new(&dir).join(format!("out-{}", std::process::id()));
        std::fs::write(out, all.join("\n")).unwrap();
    }

    #[test]
    fn several_processes_give_unique_ids() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "runtime::ids::tests::child_allocates_ids",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env(CHILD_DIR, dir.path())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let mut all = Vec::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("out-")
            {
                let text = std::fs::read_to_string(path).unwrap();
                all.extend(text.lines().map(str::to_string));
            }
        }
        assert_eq!(all.len(), 400, "every child printed its ids");
        let unique: HashSet<_> = all.iter().collect();
        assert_eq!(unique.len(), 400, "duplicates across processes");
    }
}
