//! abcd's reads and writes of git: from files where a file read will do (HEAD, refs,
//! packed-refs, `commondir`), else through bounded `git` children, every one of them
//! (the owed set's batched reads in `owed/` too) started by [`run`]. Nothing here knows
//! an event, a journal or a checklist.
//!
//! - [`branch`]: the branch checked out, whether a branch exists, branch-name rules and the
//!   branch a shell command creates.
//! - [`refs`]: the default branch from git's ref files, without starting git.
//! - [`run`]: the one builder of a git child: its options, environment, deadline and
//!   output cap, and one error for a child that gave nothing usable.
//! - [`repo`]: the work tree's root, the main worktree behind a linked one, the first root
//!   commit and the person's git name.
//! - [`worktree`]: a lane's uncommitted work, saved aside under `refs/abcd/saved/` and reset
//!   path by path; the lane worktrees abcd adds and removes; base drift.

pub mod branch;
pub mod objects;
pub mod refs;
pub mod repo;
pub mod run;
pub mod worktree;
