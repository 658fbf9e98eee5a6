//! Checklist items and the rules every field obeys (SPEC §3). Validation is pure and
//! never echoes the value it refuses: a refusal names the field and the rule.

pub use crate::event::checklist::{BlockerKind, ChangeSet, Credential, ItemFields, ItemState};

/// Title length in characters, inclusive bounds.
pub const TITLE_MIN_CHARS: usize = 1;
pub const TITLE_MAX_CHARS: usize = 200;
/// An id is a slug of at most this many bytes.
pub const ID_MAX_BYTES: usize = 48;
/// `waits_on`, each owner ref, and each side of a promise: at most this many characters.
pub const REF_MAX_CHARS: usize = 200;
pub const PROMISE_MAX_CHARS: usize = 400;
/// Owner refs per item.
pub const OWNER_REFS_MAX: usize = 32;
/// Items the working state holds: every open item and the newest [`CLOSED_ITEMS_KEPT`]
/// closed ones (retired items are not counted: they live in the journal only). A write is
/// never refused for the list's size in render; this bounds memory of the fold.
pub const ITEMS_MAX: usize = 10_000;
/// Closed (done or dropped) items the working state keeps. When one more closes, the one
/// that closed longest ago is retired: it leaves the fold, so the projections and
/// checkpoints, and stays in the journal (`abcd checklist --all`). docs/decisions.md says
/// why 30.
pub const CLOSED_ITEMS_KEPT: usize = 30;

/// What kind of credential an item is about. Fixed list: nothing else is stored.
pub const CREDENTIAL_KINDS: &[&str] =
    &["github_token", "gitlab_token", "cloud_key", "api_key", "ssh_key", "oauth_token", "database_password", "signing_key", "other"];
/// What the credential may do. Fixed list.
pub const CREDENTIAL_SCOPES: &[&str] = &["read", "write", "admin", "repo", "org", "deploy", "ci", "publish", "personal"];

/// Why a field's value is refused; `field` is the field's name, `rule` plain words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct FieldError {
    pub field: &'static str,
    pub rule: String,
}

fn refuse(field: &'static str, rule: impl Into<String>) -> FieldError {
    FieldError { field, rule: rule.into() }
}

fn one_line_text(field: &'static str, text: &str, max_chars: usize) -> Result<(), FieldError> {
    let chars = text.chars().count();
    if chars == 0 {
        return Err(refuse(field, "must not be empty"));
    }
    if chars > max_chars {
        return Err(refuse(field, format!("must be at most {max_chars} characters (it has {chars})")));
    }
    if text.chars().any(|c| c == '\n' || c == '\r') {
        return Err(refuse(field, "must be one line (no newline)"));
    }
    if text.chars().any(char::is_control) {
        return Err(refuse(field, "must not contain control characters"));
    }
    if text.trim() != text {
        return Err(refuse(field, "must not start or end with white space"));
    }
    Ok(())
}

pub fn validate_title(title: &str) -> Result<(), FieldError> {
    let chars = title.chars().count();
    if chars < TITLE_MIN_CHARS {
        return Err(refuse("title", format!("must be {TITLE_MIN_CHARS} to {TITLE_MAX_CHARS} characters on one line (it is empty)")));
    }
    one_line_text("title", title, TITLE_MAX_CHARS)
}

/// A slug: lowercase ASCII letters, digits and single hyphens inside.
pub fn validate_id(id: &str) -> Result<(), FieldError> {
    let ok = !id.is_empty()
        && id.len() <= ID_MAX_BYTES
        && id.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--");
    if ok {
        Ok(())
    } else {
        Err(refuse("id", format!("must be a slug of lowercase letters, digits and hyphens, at most {ID_MAX_BYTES} bytes")))
    }
}

fn is_slug_word(text: &str) -> bool {
    !text.is_empty() && text.len() <= REF_MAX_CHARS && text.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `waits_on`: a record id (a slug), `pr:<n>`, `person:<role>` or `slot:<kind>`.
pub fn validate_waits_on(text: &str) -> Result<(), FieldError> {
    const RULE: &str = "must be a record id (a slug), pr:<number>, person:<role> or slot:<kind>";
    let ok = match text.split_once(':') {
        Some(("pr", n)) => !n.is_empty() && n.len() <= 12 && n.bytes().all(|c| c.is_ascii_digit()) && !n.starts_with('0'),
        Some(("person" | "slot", word)) => is_slug_word(word),
        Some(_) => false,
        None => validate_id(text).is_ok(),
    };
    if ok { Ok(()) } else { Err(refuse("waits_on", RULE)) }
}

/// `promise`: `<trigger> => <act>`, both sides non-empty, one line.
pub fn validate_promise(text: &str) -> Result<(), FieldError> {
    one_line_text("promise", text, PROMISE_MAX_CHARS)?;
    match text.split_once("=>") {
        Some((trigger, act)) if !trigger.trim().is_empty() && !act.trim().is_empty() && !act.contains("=>") => Ok(()),
        _ => Err(refuse("promise", "must read \"<trigger> => <act>\" with both sides filled in")),
    }
}

/// An owner ref: a branch name, `pr:<n>`, or a record id; no white space.
pub fn validate_owner_ref(text: &str) -> Result<(), FieldError> {
    one_line_text("owner_refs", text, REF_MAX_CHARS)?;
    if text.chars().any(char::is_whitespace) || text.contains("..") || text.starts_with('-') {
        return Err(refuse("owner_refs", "each must be a branch name, pr:<number> or a record id, without spaces"));
    }
    Ok(())
}

pub fn validate_credential(c: &Credential) -> Result<(), FieldError> {
    if !CREDENTIAL_KINDS.contains(&c.kind.as_str()) {
        return Err(refuse("credential.kind", format!("must be one of: {}", CREDENTIAL_KINDS.join(", "))));
    }
    if !CREDENTIAL_SCOPES.contains(&c.scope.as_str()) {
        return Err(refuse("credential.scope", format!("must be one of: {}", CREDENTIAL_SCOPES.join(", "))));
    }
    Ok(())
}

/// Every rule on every field of an item.
pub fn validate_item(item: &ItemFields) -> Result<(), FieldError> {
    validate_id(&item.id)?;
    validate_title(&item.title)?;
    if let Some(w) = &item.waits_on {
        validate_waits_on(w)?;
    }
    if let Some(p) = &item.promise {
        validate_promise(p)?;
    }
    if item.owner_refs.len() > OWNER_REFS_MAX {
        return Err(refuse("owner_refs", format!("at most {OWNER_REFS_MAX} refs")));
    }
    for r in &item.owner_refs {
        validate_owner_ref(r)?;
    }
    if let Some(c) = &item.credential {
        validate_credential(c)?;
    }
    Ok(())
}

/// The text of every field that could carry a secret, with the field's name.
pub fn scannable_fields(item: &ItemFields) -> Vec<(&'static str, &str)> {
    let mut out = vec![("id", item.id.as_str()), ("title", item.title.as_str())];
    if let Some(w) = &item.waits_on {
        out.push(("waits_on", w));
    }
    if let Some(p) = &item.promise {
        out.push(("promise", p));
    }
    out.extend(item.owner_refs.iter().map(|r| ("owner_refs", r.as_str())));
    if let Some(c) = &item.credential {
        out.push(("credential.kind", &c.kind));
        out.push(("credential.scope", &c.scope));
    }
    out
}

/// A slug from a title: lowercase words joined by hyphens, cut at a word boundary.
pub fn slug_from_title(title: &str) -> String {
    let mut slug = String::new();
    for word in title.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let word = word.to_ascii_lowercase();
        let extra = if slug.is_empty() { word.len() } else { word.len() + 1 };
        if slug.len() + extra > ID_MAX_BYTES - 4 {
            if slug.is_empty() {
                slug.push_str(&word[..ID_MAX_BYTES - 4]);
            }
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() { "item".to_string() } else { slug }
}

/// The slug, or the slug with the smallest `-<n>` suffix no existing id has.
pub fn unique_id(title: &str, taken: impl Fn(&str) -> bool) -> String {
    let base = slug_from_title(title);
    if !taken(&base) {
        return base;
    }
    (2..).map(|n| format!("{base}-{n}")).find(|id| !taken(id)).expect("some suffix is free")
}

/// Why a checklist event was not folded: the field and the rule or pattern kind, never
/// the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub field: Option<String>,
    pub reason: String,
}

/// Validation and the secret scan of a whole item, as the fold and the verbs apply them.
/// The scan runs first, so a secret is reported as a secret, not as a malformed value.
pub fn check_item(fields: &ItemFields) -> Result<(), Rejection> {
    if let Some((field, kind)) = scannable_fields(fields).into_iter().find_map(|(f, t)| crate::secrets::scan(t).map(|k| (f, k))) {
        return Err(Rejection { field: Some(field.into()), reason: format!("carries {} ({})", kind.describe(), kind.name()) });
    }
    validate_item(fields).map_err(|e| Rejection { field: Some(e.field.into()), reason: e.rule })
}

/// A refusal record names a verb, a field and a kind as short lowercase words, nothing
/// else: anything longer could be a value and is never shown.
pub fn refusal_is_clean(refused: &crate::event::WriteRefused) -> bool {
    refusal_words_are_clean(&refused.verb, &refused.field, &refused.kind)
}

pub fn refusal_words_are_clean(verb: &str, field: &str, kind: &str) -> bool {
    let clean = |t: &str| !t.is_empty() && t.len() <= 64 && t.bytes().all(|c| c.is_ascii_lowercase() || matches!(c, b'_' | b'.'));
    clean(field) && clean(kind) && clean(verb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(title: &str) -> ItemFields {
        ItemFields::working(&slug_from_title(title), title)
    }

    #[test]
    fn title_length_holds_on_both_sides() {
        assert!(validate_title("").is_err());
        assert!(validate_title("x").is_ok());
        assert!(validate_title(&"é".repeat(TITLE_MAX_CHARS)).is_ok());
        let err = validate_title(&"é".repeat(TITLE_MAX_CHARS + 1)).unwrap_err();
        assert_eq!(err.field, "title");
        assert!(validate_title("two\nlines").is_err());
        assert!(validate_title("tab\tinside").is_err());
    }

    #[test]
    fn waits_on_forms() {
        for ok in ["fix-login", "pr:12", "person:reviewer", "slot:ci"] {
            assert!(validate_waits_on(ok).is_ok(), "{ok}");
        }
        for bad in ["pr:", "pr:01", "pr:x", "team:x", "Fix Login", "person:", "slot:a b"] {
            assert!(validate_waits_on(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn promise_needs_both_sides() {
        assert!(validate_promise("CI green => merge").is_ok());
        for bad in ["CI green", " => merge", "CI => ", "a => b => c"] {
            assert!(validate_promise(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn credentials_hold_only_listed_kinds_and_scopes() {
        let mut c = Credential { kind: "github_token".into(), scope: "repo".into(), expiry: None };
        assert!(validate_credential(&c).is_ok());
        c.scope = "everything".into();
        let e = validate_credential(&c).unwrap_err();
        assert_eq!(e.field, "credential.scope");
        assert!(!e.to_string().contains("everything"), "a refusal never echoes the value");
        let extra: Result<Credential, _> = serde_json::from_str(r#"{"kind":"api_key","scope":"read","expiry":null,"value":"x"}"#);
        assert!(extra.is_err(), "nothing but kind, scope and expiry");
    }

    #[test]
    fn slugs_are_unique_and_valid() {
        assert_eq!(slug_from_title("Fix the login bug!"), "fix-the-login-bug");
        assert_eq!(slug_from_title("!!!"), "item");
        let long = slug_from_title(&"word ".repeat(50));
        assert!(validate_id(&long).is_ok() && long.len() <= ID_MAX_BYTES);
        let id = unique_id("Fix it", |id| id == "fix-it" || id == "fix-it-2");
        assert_eq!(id, "fix-it-3");
        assert!(validate_item(&item("Fix it")).is_ok());
    }
}
