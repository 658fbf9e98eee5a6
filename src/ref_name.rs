//! The one rule for a branch name abcd accepts, shared by the git reader and the checklist
//! domain (a promise's `branch:NAME`), which sit side by side in the layers.

/// The longest branch name accepted, in bytes.
pub const MAX_BRANCH_BYTES: usize = 200;

/// A branch name git would accept, roughly (`git check-ref-format --branch`), bounded by
/// [`MAX_BRANCH_BYTES`].
pub fn branch_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_BRANCH_BYTES
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("@{")
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
    }
}
