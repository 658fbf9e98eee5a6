//! What the hooks read from git, without running git where a file read will do: the
//! branch checked out (HEAD), whether a branch exists (loose ref or packed-refs), and the
//! branch a shell command creates. Bounded reads only.

use std::path::{Path, PathBuf};

/// HEAD, a loose ref or packed-refs is read up to this many bytes.
const MAX_REF_FILE_BYTES: u64 = 1 << 20;
/// A branch name longer than this is not recorded.
pub use crate::ref_name::MAX_BRANCH_BYTES;
/// Commands longer than this are not parsed for branch creation.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

fn read_bounded(path: &Path) -> Option<String> {
    crate::platform::fs::read_regular_text(path, MAX_REF_FILE_BYTES).ok()
}

/// The git dir of a work tree root (`.git` itself, or where a `.git` file points).
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dotgit = root.join(".git");
    if dotgit.is_dir() {
        return Some(dotgit);
    }
    let text = read_bounded(&dotgit)?;
    let dir = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() { dir } else { root.join(dir) })
}

/// The common git dir (the main repository's), where refs live.
pub fn common_dir(git_dir: &Path) -> PathBuf {
    match read_bounded(&git_dir.join("commondir")) {
        Some(c) => git_dir.join(c.trim()),
        None => git_dir.to_path_buf(),
    }
}

/// The branch checked out in the work tree at `root`, if HEAD names one.
pub fn current_branch(root: &Path) -> Option<String> {
    let head = read_bounded(&git_dir(root)?.join("HEAD"))?;
    head.trim().strip_prefix("ref: refs/heads/").map(str::to_owned)
}

/// True when `refs/heads/<branch>` exists, loose or packed.
pub fn branch_exists(root: &Path, branch: &str) -> bool {
    let Some(gd) = git_dir(root) else { return false };
    let common = common_dir(&gd);
    if common.join("refs/heads").join(branch).is_file() {
        return true;
    }
    read_bounded(&common.join("packed-refs"))
        .is_some_and(|p| p.lines().any(|l| l.split_once(' ').is_some_and(|(_, r)| r == format!("refs/heads/{branch}"))))
}

/// True when a remote-tracking ref `refs/remotes/<remote>/<branch>` exists, loose or
/// packed: git's record that the branch was pushed or fetched (no network).
pub fn remote_tracking_exists(root: &Path, branch: &str) -> bool {
    let Some(gd) = git_dir(root) else { return false };
    let common = common_dir(&gd);
    let remotes = common.join("refs/remotes");
    let loose = std::fs::read_dir(&remotes)
        .map(|dirs| dirs.filter_map(Result::ok).any(|remote| remote.path().join(branch).is_file()))
        .unwrap_or(false);
    loose
        || read_bounded(&common.join("packed-refs")).is_some_and(|p| {
            p.lines().any(|l| {
                l.split_once(' ')
                    .and_then(|(_, r)| r.strip_prefix("refs/remotes/"))
                    .and_then(|r| r.split_once('/'))
                    .is_some_and(|(_, b)| b == branch)
            })
        })
}

/// A branch-creating git command found in a shell command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchCreation {
    pub branch: String,
    /// The command form, e.g. `git switch -c`.
    pub form: String,
    /// For a rename (`git branch -m old new`): the old name, whose record carries over.
    pub renamed_from: Option<String>,
}

/// Splits a shell command into simple commands at `;`, `&&`, `||`, `|` and newlines,
/// and each into words (quotes removed; no expansion). Good enough to find git calls.
fn simple_commands(command: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let flush = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, ';' | '\n' | '|' | '&') => {
                flush(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
                if matches!(c, '|' | '&') && chars.peek() == Some(&c) {
                    chars.next();
                }
            }
            (None, c) if c.is_whitespace() => flush(&mut word, &mut in_word, &mut words),
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut words);
    if !words.is_empty() {
        out.push(words);
    }
    out
}

/// Every branch the command would create, by the forms SPEC §5 names.
pub fn branch_creations(command: &str) -> Vec<BranchCreation> {
    // A substitution's output is known only when the shell runs it, so the command's acts
    // cannot be read from its text: it records nothing (seed 003).
    if command.len() > MAX_COMMAND_BYTES || has_substitution(command) {
        return Vec::new();
    }
    simple_commands(command).iter().filter_map(|words| creation_in(words)).collect()
}

/// Whether the command holds a command substitution the shell would run: `$(` or a
/// backtick outside single quotes (inside them both are text; inside double quotes they
/// still run; a backslash outside single quotes escapes them).
fn has_substitution(command: &str) -> bool {
    let (mut single, mut double) = (false, false);
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '\\' if !single => {
                chars.next();
            }
            '`' if !single => return true,
            '$' if !single && chars.peek() == Some(&'(') => return true,
            _ => {}
        }
    }
    false
}

fn creation_in(words: &[String]) -> Option<BranchCreation> {
    // The command word: after `VAR=value` assignments and a few prefix commands, so that
    // `echo git switch -c x` is not taken for a creation.
    let git = words
        .iter()
        .position(|w| (!w.contains('=') || w.starts_with('-')) && !matches!(w.as_str(), "sudo" | "command" | "env" | "time" | "nohup"))?;
    if !(words[git] == "git" || words[git].ends_with("/git")) {
        return None;
    }
    let mut rest = &words[git + 1..];
    // Global options before the subcommand: -C <dir>, -c <k=v>, --no-pager, ...
    while let Some(first) = rest.first() {
        match first.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" => rest = rest.get(2..)?,
            w if w.starts_with('-') => rest = &rest[1..],
            _ => break,
        }
    }
    let (sub, args) = rest.split_first()?;
    let made = |branch: &str, form: &str, from: Option<&str>| {
        crate::ref_name::branch_name_ok(branch).then(|| BranchCreation {
            branch: branch.to_string(),
            form: form.to_string(),
            renamed_from: from.map(str::to_owned),
        })
    };
    let value_after = |flags: &[&str]| -> Option<(String, String)> {
        args.iter().position(|a| flags.contains(&a.as_str())).and_then(|i| args.get(i + 1).map(|b| (args[i].clone(), b.clone())))
    };
    match sub.as_str() {
        "switch" => value_after(&["-c", "-C", "--create", "--force-create"]).and_then(|(f, b)| made(&b, &format!("git switch {f}"), None)),
        "checkout" => value_after(&["-b", "-B"]).and_then(|(f, b)| made(&b, &format!("git checkout {f}"), None)),
        "branch" => {
            if let Some((f, _)) = value_after(&["-m", "-M", "--move"]) {
                let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                return match names.as_slice() {
                    [old, new] => made(new, &format!("git branch {f}"), Some(old)),
                    [new] => made(new, &format!("git branch {f}"), None),
                    _ => None,
                };
            }
            // Any other option lists, deletes, copies or configures: not a creation.
            if args.iter().any(|a| a.starts_with('-')) {
                return None;
            }
            args.first().and_then(|b| made(b, "git branch", None))
        }
        "worktree" => {
            let (verb, wargs) = args.split_first()?;
            if verb != "add" {
                return None;
            }
            if let Some(i) = wargs.iter().position(|a| a == "-b" || a == "-B") {
                return wargs.get(i + 1).and_then(|b| made(b, &format!("git worktree add {}", wargs[i]), None));
            }
            // `git worktree add <path>` with no commit-ish creates a branch named after
            // the path's last component; with `<existing>` it checks that out instead.
            let positional: Vec<&String> = wargs.iter().filter(|a| !a.starts_with('-')).collect();
            match positional.as_slice() {
                [path] => Path::new(path.as_str()).file_name().and_then(|n| n.to_str()).and_then(|b| made(b, "git worktree add", None)),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_tracking_ref_is_found_loose_or_packed_for_any_remote() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/remotes/origin/feat")).unwrap();
        std::fs::create_dir_all(git.join("refs/heads/feat")).unwrap();
        std::fs::write(git.join("refs/remotes/origin/feat/loose"), "0".repeat(40) + "\n").unwrap();
        std::fs::write(git.join("refs/heads/feat/local"), "0".repeat(40) + "\n").unwrap();
        let id = "1".repeat(40);
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs with: peeled\n{id} refs/remotes/fork/feat/packed\n{id} refs/heads/feat/only-local\n"),
        )
        .unwrap();
        assert!(remote_tracking_exists(dir.path(), "feat/loose"));
        assert!(remote_tracking_exists(dir.path(), "feat/packed"));
        for not in ["feat/local", "feat/only-local", "feat", "loose", "feat/nowhere"] {
            assert!(!remote_tracking_exists(dir.path(), not), "{not}");
        }
    }

    fn branches(cmd: &str) -> Vec<String> {
        branch_creations(cmd).into_iter().map(|c| c.branch).collect()
    }

    #[test]
    fn every_creation_form_is_found() {
        assert_eq!(branches("git switch -c feat/x"), ["feat/x"]);
        assert_eq!(branches("git switch -C feat/y main"), ["feat/y"]);
        assert_eq!(branches("git checkout -b fix-1"), ["fix-1"]);
        assert_eq!(branches("git checkout -B fix-2 origin/main"), ["fix-2"]);
        assert_eq!(branches("git branch topic"), ["topic"]);
        assert_eq!(branches("git branch topic HEAD~2"), ["topic"]);
        assert_eq!(branches("git worktree add -b wt-branch ../wt"), ["wt-branch"]);
        assert_eq!(branches("git worktree add ../lane-3"), ["lane-3"]);
        assert_eq!(branches("cd repo && git -C . switch -c 'quoted/name' && echo done"), ["quoted/name"]);
        let rename = branch_creations("git branch -m topic topic-2");
        assert_eq!(rename[0].branch, "topic-2");
        assert_eq!(rename[0].renamed_from.as_deref(), Some("topic"));
    }

    #[test]
    fn non_creations_are_ignored() {
        for cmd in [
            "git branch",
            "git branch -d old",
            "git branch --list",
            "git switch main",
            "git checkout main",
            "git worktree add ../wt existing",
            "git status",
            "echo git switch -c x",
            "git branch -a",
        ] {
            assert!(branches(cmd).is_empty(), "{cmd}: {:?}", branches(cmd));
        }
        assert_eq!(branches("GIT_TRACE=0 git checkout -b env-x"), ["env-x"]);
        assert!(branches(&format!("git switch -c {}", "a".repeat(MAX_BRANCH_BYTES + 1))).is_empty());
        assert!(branches("git switch -c 'has space'").is_empty());
    }

    #[test]
    fn a_substitution_outside_single_quotes_makes_the_command_no_act() {
        for cmd in
            ["git switch -c $(echo sub)", "git checkout -b `x`", "git switch -c a && echo \"$(date)\"", "echo \"it's\" && git branch $(x)"]
        {
            assert!(branches(cmd).is_empty(), "{cmd}: {:?}", branches(cmd));
        }
        assert_eq!(branches("git switch -c b && echo '$(text)' '`text`'"), ["b"]);
        assert_eq!(branches(r"git switch -c c && echo \$(text)"), ["c"]);
    }
}
