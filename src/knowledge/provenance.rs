//! Where a piece of knowledge came from: the file's sha256 and, in a git checkout, the commit
//! `HEAD` pointed to, its branch, and whether the file differed from that commit.
//!
//! Git is read with `gix` (no `git` process). The dirty flag compares the blob id `HEAD`'s tree
//! records for the path with the blob id of the bytes on disk: one tree walk and one hash, no
//! index or status machinery. Files git would filter on checkout (`autocrlf`, LFS) therefore
//! read as dirty even when `git status` calls them clean; docs/knowledge.md says so.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The hex sha256 digest of `bytes`, prefixed `sha256:` as stored and shown.
pub fn checksum(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// What git knows about one file version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GitInfo {
    /// The commit `HEAD` pointed to (hex); absent in a repository with no commit yet.
    pub commit: Option<String>,
    /// `HEAD`'s branch (`main`), absent when detached.
    pub branch: Option<String>,
    /// Whether the file's bytes differ from `HEAD`'s version (or `HEAD` has no such file).
    pub dirty: bool,
}

/// What `HEAD` says, read once per analysis run. It holds plain data (not the repository
/// handle, which is not `Send` in gix's single-threaded build), so it may live across awaits;
/// each file's lookup opens the repository briefly.
#[derive(Debug, Clone)]
pub struct GitProbe {
    git_dir: PathBuf,
    workdir: PathBuf,
    commit: Option<String>,
    branch: Option<String>,
    tree: Option<gix::ObjectId>,
}

impl GitProbe {
    /// The repository containing `root`, if any. Outside a git checkout (or in a bare one) this
    /// is `None` and knowledge is stored without git fields.
    pub fn open(root: &Path) -> Option<GitProbe> {
        let repo = gix::discover(root).ok()?;
        let workdir = repo.workdir()?.canonicalize().ok()?;
        let branch = repo
            .head_name()
            .ok()
            .flatten()
            .map(|n| n.shorten().to_string());
        let (commit, tree) = match repo.head_commit() {
            Ok(c) => (
                Some(c.id.to_string()),
                c.tree_id().ok().map(|id| id.detach()),
            ),
            Err(_) => (None, None),
        };
        Some(GitProbe {
            git_dir: repo.git_dir().to_path_buf(),
            workdir,
            commit,
            branch,
            tree,
        })
    }

    /// Git facts for the file at `abs` (canonical) whose content is `bytes`.
    pub fn info(&self, abs: &Path, bytes: &[u8]) -> GitInfo {
        GitInfo {
            commit: self.commit.clone(),
            branch: self.branch.clone(),
            dirty: !self.matches_head(abs, bytes),
        }
    }

    /// Whether `HEAD`'s tree holds exactly these bytes at this path.
    fn matches_head(&self, abs: &Path, bytes: &[u8]) -> bool {
        let Some(tree) = self.tree else {
            return false;
        };
        let Ok(rel) = abs.strip_prefix(&self.workdir) else {
            return false;
        };
        let Ok(repo) = gix::open(&self.git_dir) else {
            return false;
        };
        let Ok(tree) = repo.find_tree(tree) else {
            return false;
        };
        let Ok(Some(entry)) = tree.lookup_entry_by_path(rel) else {
            return false;
        };
        match gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, bytes) {
            Ok(id) => id == entry.object_id(),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_prefixed_hex_sha256() {
        // The digest of the empty string is a published constant.
        assert_eq!(
            checksum(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_ne!(checksum(b"a"), checksum(b"b"));
    }

    #[test]
    fn outside_a_repository_there_is_no_probe() {
        let dir = tempfile::tempdir().unwrap();
        // A temp dir may sit under a checkout on some machines; only assert when it does not.
        if gix::discover(dir.path()).is_err() {
            assert!(GitProbe::open(dir.path()).is_none());
        }
    }
}
