//! The repository around a work tree: the main worktree behind a linked one, the first
//! root commit, and the person's name as git would author a commit.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::run::{GIT_DEADLINE, GIT_OUTPUT_MAX, Git, Ran};

/// The `.git` file of a linked worktree, and its `commondir`, are read up to this many bytes.
pub const MAX_GITDIR_FILE_BYTES: u64 = 4096;

/// A linked worktree's `.git` file names its git dir, whose `commondir` leads to the
/// main repository's `.git`, whose parent is the main worktree.
pub fn main_worktree_of(dotgit_file: &Path) -> Option<PathBuf> {
    let text = crate::platform::fs::read_regular_text(dotgit_file, MAX_GITDIR_FILE_BYTES).ok()?;
    let gitdir = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
    let gitdir = if gitdir.is_absolute() { gitdir } else { dotgit_file.parent()?.join(gitdir) };
    let common = crate::platform::fs::read_regular_text(&gitdir.join("commondir"), MAX_GITDIR_FILE_BYTES).ok()?;
    let common = gitdir.join(common.trim());
    Some(common.canonicalize().ok()?.parent()?.to_path_buf())
}

/// Whether a `.git` file's link cannot be followed: it names no git dir, the git dir it
/// names is gone (the main checkout moved or deleted), or that git dir's `commondir` names
/// a folder that is gone. A submodule's git dir has no `commondir` and is not broken.
pub fn worktree_link_broken(dotgit_file: &Path) -> bool {
    let Ok(text) = crate::platform::fs::read_regular_text(dotgit_file, MAX_GITDIR_FILE_BYTES) else { return true };
    let Some(named) = text.trim().strip_prefix("gitdir:").map(|g| PathBuf::from(g.trim())) else { return true };
    let Some(parent) = dotgit_file.parent() else { return true };
    let gitdir = if named.is_absolute() { named } else { parent.join(named) };
    if !gitdir.is_dir() {
        return true;
    }
    match crate::platform::fs::read_regular_text(&gitdir.join("commondir"), MAX_GITDIR_FILE_BYTES) {
        Ok(common) => !gitdir.join(common.trim()).is_dir(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
pub fn is_commit_id(c: &str) -> bool {
    (c.len() == 40 || c.len() == 64) && c.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One bounded `git` child in `cwd`: killed at [`GIT_DEADLINE`] or past [`GIT_OUTPUT_MAX`]
/// bytes of output.
fn git(cwd: &Path, args: &[&str]) -> Result<Ran, String> {
    Git::new(cwd).run(args, None, Instant::now() + GIT_DEADLINE, GIT_OUTPUT_MAX).map_err(|e| e.to_string())
}

/// The first root commit reachable from HEAD (one `git rev-list`).
pub fn root_commit(root: &Path) -> Result<String, String> {
    let out = git(root, &["rev-list", "--max-parents=0", "HEAD"])?;
    let text = String::from_utf8_lossy(&out.out);
    // rev-list prints newest first; the first root commit is the last line.
    match text.lines().last().filter(|c| out.code == Some(0) && is_commit_id(c)) {
        Some(c) => Ok(c.to_string()),
        None => Err("the repository has no commit yet".into()),
    }
}

/// `git config user.name` in `cwd`, when git answers with one.
pub fn user_name(cwd: &Path) -> Option<String> {
    git(cwd, &["config", "user.name"]).ok().filter(|o| o.code == Some(0)).map(|o| String::from_utf8_lossy(&o.out).trim().to_string())
}
