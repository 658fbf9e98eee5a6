//! The one rule for a branch name abcd accepts, shared by the git reader and the checklist
//! domain (a promise's `branch:NAME`), which sit side by side in the layers.

/// The longest branch name accepted, in bytes.
pub const MAX_BRANCH_BYTES: usize = 200;

/// A branch name `git check-ref-format --branch` accepts, bounded by [`MAX_BRANCH_BYTES`]:
/// its rules in Rust, so a hook spawns no git for them. Not `HEAD` (git's own refusal: every
/// clone has `refs/remotes/origin/HEAD`) and not `@` (git reads it as HEAD); no component
/// empty, starting with `.` or ending in `.lock`; no `..`, `@{`, trailing `/` or `.`, leading
/// `-` or `/`; no space, control character, DEL or `~ ^ : ? * [ \`.
pub fn branch_name_ok(name: &str) -> bool {
    name.len() <= MAX_BRANCH_BYTES && name != "HEAD" && !name.starts_with('-') && refname_ok(name)
}

/// git's rules for a ref name (`check_refname_format`): not `@`; no component empty,
/// starting with `.` or ending in `.lock`; no `..`, `@{`, trailing `.`; no space, control
/// character, DEL or `~ ^ : ? * [ \`.
pub fn refname_ok(name: &str) -> bool {
    !name.is_empty()
        && name != "@"
        && !name.ends_with('.')
        && !name.contains("..")
        && !name.contains("@{")
        && name.split('/').all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
        && !name.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_name_is_bounded_and_shaped_as_git_accepts() {
        assert!(branch_name_ok("feat/parser") && branch_name_ok(&"a".repeat(MAX_BRANCH_BYTES)));
        assert!(!branch_name_ok(&"a".repeat(MAX_BRANCH_BYTES + 1)));
        for bad in ["", "-x", "/x", "x/", "x.lock", "a..b", "a@{1}", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a\u{7}"] {
            assert!(!branch_name_ok(bad), "{bad:?}");
        }
        // The rest of `git check-ref-format --branch` (git 2.47 run on each): `HEAD`, `@`,
        // empty components, a component starting with `.` or ending in `.lock`, a trailing
        // `.`, DEL.
        for bad in ["HEAD", "@", "a//b", "a/.b", ".a", "a.", "a/b.", "x.lock/y", "a\u{7f}"] {
            assert!(!branch_name_ok(bad), "{bad:?}");
        }
        for good in ["head", "feat/HEAD", "HEAD/x", "a@b", "a/-b", "é", "FETCH_HEAD", "refs/heads/x"] {
            assert!(branch_name_ok(good), "{good:?}");
        }
    }
}
