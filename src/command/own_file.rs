//! The one answer to "is this abcd's own file?", shared by every guard that keeps an agent
//! off abcd's state (the file-tool rule of the pre-tool-use hook; a shell rule asks the
//! same). abcd's own: every working copy's local tier, and everything under the home store
//! (journals, projections, anchors, checkpoints, settings, quarantine, run folders) except
//! the work trees of the lane worktrees abcd makes there
//! (`<home>/lanes/<repo>/<run>/<lane>/`): a lane's files are its agent's to write, all but
//! abcd's own paths inside it (its `.abcd/`, the committed host settings, and the local
//! settings `abcd launch` gives the lane's agent).

use std::path::{Component, Path, PathBuf};

use super::lane;
use crate::host::claude_settings::LOCAL_SETTINGS;
use crate::places;

/// Path components from the lanes folder to a lane's worktree: `<repo>/<run>/<lane>`.
pub const LANE_DEPTH: usize = 3;

/// Which of abcd's own files a path is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnFile {
    /// In a working copy's local tier (`.abcd/.work.local`), wherever that copy is.
    LocalTier,
    /// In the home store, outside every lane's work tree.
    HomeStore,
    /// abcd's own path inside a lane's worktree (relative to it).
    InLane(String),
}

impl OwnFile {
    /// What the file is, and why a direct edit is refused, for a refusal's words.
    pub fn why(&self) -> String {
        match self {
            OwnFile::LocalTier => "a working copy's abcd local tier: abcd's own state, derived from a hash-chained journal, and a direct edit is never trusted".into(),
            OwnFile::HomeStore => "the abcd home store: abcd's own state, derived from a hash-chained journal, and a direct edit is never trusted".into(),
            OwnFile::InLane(rel) => format!(
                "abcd's own file {rel} in this lane's worktree (abcd's folder, or the settings that give the lane's agent abcd's hooks), not the lane's work"
            ),
        }
    }

    /// What to run instead.
    pub fn instead(&self) -> &'static str {
        match self {
            OwnFile::LocalTier | OwnFile::HomeStore => {
                "Use `abcd checklist add|set` for the checklist (or `abcd journal repair` for a damaged journal)."
            }
            OwnFile::InLane(_) => {
                "Use `abcd checklist add|set` for the lane's plan; a change to abcd's folder or hooks is made in the person's checkout and committed there (`abcd init` installs the hooks)."
            }
        }
    }
}

/// Whether `target` (absolute, `..` folded, symlinks resolved where it exists: see
/// `resolve`) is abcd's own file, with `home` the home store.
pub fn abcd_own_file(target: &Path, home: &Path) -> Option<OwnFile> {
    if in_local_tier(target) {
        return Some(OwnFile::LocalTier);
    }
    let home = resolve(Path::new("/"), home);
    let inside = target.strip_prefix(&home).ok()?;
    let mut parts = inside.components();
    let lanes = parts.next();
    let lane_parts: Vec<Component> = parts.by_ref().take(LANE_DEPTH).collect();
    let in_lanes = lanes.is_some_and(|c| c.as_os_str() == places::LANES_DIR) && lane_parts.len() == LANE_DEPTH;
    let lane_root: std::path::PathBuf = home.join(places::LANES_DIR).join(lane_parts.iter().collect::<std::path::PathBuf>());
    // A lane's worktree is a linked git worktree: its `.git` is a file naming its gitdir.
    if !in_lanes || !lane_root.join(".git").is_file() {
        return Some(OwnFile::HomeStore);
    }
    let rel = parts.as_path();
    let rel_text = rel.to_string_lossy();
    let own_here = lane::is_abcd_own(&rel_text)
        || rel_text == LOCAL_SETTINGS
        || rel_text.strip_prefix(LOCAL_SETTINGS).is_some_and(|rest| rest.starts_with('/'));
    own_here.then(|| OwnFile::InLane(rel_text.into_owned()))
}

/// Whether `target` lies in a local tier: its components hold `.abcd/.work.local`.
fn in_local_tier(target: &Path) -> bool {
    let tier: Vec<Component> = Path::new(places::LOCAL_TIER).components().collect();
    let comps: Vec<Component> = target.components().collect();
    comps.windows(tier.len()).any(|w| w == tier.as_slice())
}

/// The path a tool would write: relative to the working copy, `..` folded, and the
/// longest existing prefix resolved through symlinks (the file itself may not exist yet).
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_path_buf() } else { base.join(path) };
    let mut lexical = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name().map(|n| n.to_owned()), existing.parent().map(Path::to_path_buf)) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_folds_dotdot_and_follows_symlinked_folders() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join(".abcd/.work.local")).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let nowhere = Path::new("/nonexistent-home");
        let via_link = resolve(dir.path(), Path::new("link/.abcd/.work.local/checklist.json"));
        assert_eq!(abcd_own_file(&via_link, nowhere), Some(OwnFile::LocalTier), "{via_link:?}");
        let via_dotdot = resolve(&real.join("src"), Path::new("../.abcd/./.work.local/journal.jsonl"));
        assert_eq!(abcd_own_file(&via_dotdot, nowhere), Some(OwnFile::LocalTier), "{via_dotdot:?}");
        assert_eq!(abcd_own_file(&resolve(&real, Path::new("src/main.rs")), nowhere), None);
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        assert_eq!(abcd_own_file(&resolve(dir.path(), Path::new("home/anchors/x")), &home), Some(OwnFile::HomeStore));
    }

    /// A lane's work tree is `LANE_DEPTH` folders under `lanes/` and holds a `.git` file:
    /// one folder less, or a folder with no `.git` file, is the home store's.
    #[test]
    fn a_lanes_work_tree_is_found_at_its_depth_and_only_with_its_git_link() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let lane_dir = home.join("lanes/wc-0123/r1/impl");
        std::fs::create_dir_all(lane_dir.join("src")).unwrap();
        let at = |rel: &str| abcd_own_file(&resolve(&home, Path::new(rel)), &home);
        // No `.git` file yet: not a worktree, so the home store's.
        assert_eq!(at("lanes/wc-0123/r1/impl/src/x.rs"), Some(OwnFile::HomeStore));
        std::fs::write(lane_dir.join(".git"), "gitdir: /nowhere\n").unwrap();
        assert_eq!(at("lanes/wc-0123/r1/impl/src/x.rs"), None);
        assert_eq!(at("lanes/wc-0123/r1/impl/README"), None);
        assert_eq!(at("lanes/wc-0123/r1/impl/.abcd/config"), Some(OwnFile::InLane(".abcd/config".into())));
        assert_eq!(at("lanes/wc-0123/r1/impl/.claude/settings.json"), Some(OwnFile::InLane(".claude/settings.json".into())));
        assert_eq!(at("lanes/wc-0123/r1/impl/.claude/settings.local.json"), Some(OwnFile::InLane(".claude/settings.local.json".into())));
        assert_eq!(at("lanes/wc-0123/r1/impl/.abcd/.work.local/journal.jsonl"), Some(OwnFile::LocalTier));
        // One level up is no lane's work tree.
        assert_eq!(at("lanes/wc-0123/r1/notes.txt"), Some(OwnFile::HomeStore));
        assert_eq!(at("lanes/notes.txt"), Some(OwnFile::HomeStore));
        assert_eq!(at("lanesx/wc-0123/r1/impl/src/x.rs"), Some(OwnFile::HomeStore));
    }
}
