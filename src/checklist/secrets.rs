//! The secret scanner (being written in this change; this placeholder finds nothing).

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    GithubToken,
}

impl SecretKind {
    pub const ALL: &'static [SecretKind] = &[SecretKind::GithubToken];
    pub fn name(self) -> &'static str {
        "github_token"
    }
    pub fn describe(self) -> &'static str {
        "a GitHub token"
    }
}

pub fn scan(_text: &str) -> Option<SecretKind> {
    None
}
