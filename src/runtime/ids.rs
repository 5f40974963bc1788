//! Identifiers: UUID v7 session and hop ids, and message ids `<prefix>-YYYY-MM-DD-NNN`.
//!
//! Message ids must be unique across every session of a project, including sessions running at
//! the same time in other processes, so the counter lives on disk
//! (`.switchboard/ids/<prefix>-<date>`) and each allocation holds an exclusive lock on that file
//! while it reads, increments and writes the number. The counter is not fsynced: uniqueness between
//! processes only needs the shared page cache; after a power loss a counter could step back, which
//! the lock cannot prevent and the event log would show.

use chrono::{DateTime, Utc};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A new time-ordered id (UUID v7), as text.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Allocates message ids from per-prefix, per-UTC-day counters under one folder.
#[derive(Debug, Clone)]
pub struct MessageIds {
    dir: PathBuf,
}

impl MessageIds {
    /// Counters under `<project_root>/.switchboard/ids/`.
    pub fn for_project(root: &Path) -> Self {
        MessageIds {
            dir: root.join(".switchboard").join("ids"),
        }
    }

    /// The next id for `prefix` on `now`'s UTC day: `thoughts-2026-11-21-001`, `-002`, ...
    /// (more than 999 in a day keeps counting with more digits).
    pub fn allocate(&self, prefix: &str, now: DateTime<Utc>) -> std::io::Result<String> {
        let day = now.format("%Y-%m-%d").to_string();
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{prefix}-{day}"));
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        file.lock()?;
        let result = (|| -> std::io::Result<u64> {
            let mut text = String::new();
            file.read_to_string(&mut text)?;
            let last: u64 = text.trim().parse().unwrap_or(0);
            let next = last + 1;
            file.seek(SeekFrom::Start(0))?;
            file.set_len(0)?;
            file.write_all(next.to_string().as_bytes())?;
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

    #[test]
    fn ids_are_unique_under_threads_and_restart_per_day() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let ids = MessageIds::for_project(dir.path());
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| ids.allocate("thoughts", now).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<String> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
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
}
