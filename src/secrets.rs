//! The secret scanner: whether a piece of text holds a secret, and of which kind, so that a
//! checklist write (and every event the reader folds again) can be refused naming the field
//! and the kind. That is its one responsibility. [`scan`] returns only a [`SecretKind`]:
//! never the match, its position, its length or any part of it, so nothing downstream can
//! show one. Pure: no I/O, no regex, nothing compiled at start-up; it allocates only for
//! text holding a format character (below).
//!
//! # How it reads
//!
//! One pass over the bytes. Candidates start only at a word start (the byte before is not
//! `[A-Za-z0-9_]`, so `ghp_` inside `theghp_…` or `MY_ghp_…` is not a candidate), at a `:` or
//! `=` (assignments and `scheme://` URLs) or at a `-` (PEM markers). Every look from a
//! candidate is bounded by a named constant, or (JWT segments) confined to runs inside which
//! no other JWT candidate can start, so the pass is linear in the input. Token
//! bodies are character-class runs; a body that looks like a placeholder (a run of eight
//! identical characters such as `xxxxxxxx` or `00000000`, or containing `example`, `...`,
//! `***`, `your`, or ending `…here`) is not a secret. When several kinds occur,
//! the one earliest in the scan order (most specific first: see [`SecretKind::ALL`] for the
//! declared order and `SCAN_ORDER` below) is returned.
//!
//! # Format characters
//!
//! A format character (Unicode category Cf, such as U+200B ZERO WIDTH SPACE, U+00AD SOFT
//! HYPHEN, U+FEFF, the bidi controls) or another default-ignorable code point (variation
//! selectors, U+034F, tag characters) draws as nothing, so one inside a token hides it from
//! a byte scan but not from whoever reads or copies the text. Text holding any of
//! [`FORMAT_CHARACTERS`] is scanned twice: as written, and with them removed; the kind
//! earliest in the scan order of either scan is returned.
//!
//! # Input size
//!
//! [`MAX_SCAN_BYTES`] (1 MiB; the journal's lines are at most 64 KiB and checklist fields
//! far smaller, so no legitimate caller reaches it). Longer text is scanned up to the limit;
//! a secret found there is named by its kind, and otherwise the text is reported as
//! [`SecretKind::OversizeInput`]: the scanner fails closed rather than vouch for bytes it
//! did not read.
//!
//! # Kinds
//!
//! | kind | matches | deliberately does not match |
//! |---|---|---|
//! | `pem_private_key` | a `-----BEGIN <label>-----` or `-----END <label>-----` marker whose label ends `PRIVATE KEY` (plain, RSA, EC, DSA, OPENSSH, ENCRYPTED, …) or `PRIVATE KEY BLOCK` (PGP), or the `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----` form. The marker alone suffices: a field limit may have cut the body. | public keys, certificates, CSRs; the words `BEGIN RSA PRIVATE KEY` without the dashes |
//! | `aws_access_key_id` | `AKIA`, `ASIA`, `ABIA`, `ACCA` or `A3T?` followed by 16 `[A-Z0-9]`, exactly 20 characters, whole word | the bare prefix; the `…EXAMPLE` ids from AWS's docs; `AIDA`/`AROA`/`ANPA`… unique ids, which name users and roles but grant nothing |
//! | `aws_secret_access_key` | 40 `[A-Za-z0-9/+]` assigned to a key named like `aws_secret_access_key`, `SecretAccessKey`, `aws_secret_key`; or a whole 40-character run mixing upper case, lower case and digits within 256 bytes of an access key id | 40-hex git SHAs and other one-case runs outside such an assignment; the `…EXAMPLEKEY` from AWS's docs |
//! | `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + at least 36 `[A-Za-z0-9]`; `github_pat_` + at least 20 `[A-Za-z0-9]` + `_` + at least 50 | the bare prefixes; snake_case words after `github_pat_` |
//! | `gitlab_token` | `glpat-`, `gldt-`, `glrt-`, `glptt-`, `glft-`, `glsoat-`, `gloas-`, `glcbt-` + at least 20 `[A-Za-z0-9_.-]` with a digit or an upper-case letter (the part before the first `.` is judged on its own too: `notes/glpat-….txt`) | the bare prefix; lower-case hyphenated prose; `glpat-xxxx…` |
//! | `slack_token` | `xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`, `xoxe-`, `xapp-` + at least 20 `[A-Za-z0-9-]` holding a digit | `xoxb-your-token-here`; short fragments |
//! | `slack_webhook_url` | `hooks.slack.com/services/` (or `workflows/`, `triggers/`) + at least 40 `[A-Za-z0-9/]` with two `/` | the documented `T00000000/B00000000/XXXX…` placeholder; the bare host |
//! | `stripe_live_key` | `sk_live_`, `rk_live_` + at least 20 `[A-Za-z0-9]` | `sk_test_`/`rk_test_` test-mode keys; `pk_live_` publishable keys (public by design) |
//! | `google_api_key` | `AIza` + exactly 35 `[A-Za-z0-9_-]` | the bare prefix; truncated keys |
//! | `openai_key` | `sk-` (not `sk-ant-`) + at least 32 `[A-Za-z0-9_-]` holding upper case, lower case and a digit: legacy `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` | `sk-learn`, `risk-…`, `task-…` (no word start), lower-case hyphenated words |
//! | `anthropic_key` | `sk-ant-` + at least 32 `[A-Za-z0-9_-]` holding upper case, lower case and a digit | `sk-ant-api03-...`; `sk-ant-your-key-here` |
//! | `npm_token` | `npm_` + at least 36 `[A-Za-z0-9]` | `npm_config_…` variables |
//! | `pypi_token` | `pypi-AgEIcHlwaS5vcmc` (PyPI) or `pypi-AgENdGVzdC5weXBpLm9yZw` (TestPyPI) + at least 50 `[A-Za-z0-9_-]` | the bare prefix |
//! | `huggingface_token` | `hf_` + at least 34 `[A-Za-z0-9]` holding upper and lower case | `hf_hub_download` and other snake_case names |
//! | `jwt` | `eyJ…` `.` `eyJ…` `.` signature: three base64url segments (header at least 12, claims at least 8, signature at least 16 characters), the first two starting `eyJ` (base64url of `{"`) | a header alone, `eyJ...` in prose, unsigned two-segment tokens (`alg: none` grants nothing on a sane server) |
//! | `url_with_password` | `scheme://user:password@…`, also `scheme://:password@…`; the password is the part between the first `:` and the last `@` of the authority | `scheme://user@host` (no password); `:@` (empty); placeholders: `${VAR}`, `$VAR`, `%s`, `{…}`, `<…>`, masks (`****`, `xxx`, `...`), words such as `password`, `pass`, `secret`, `changeme`, `redacted`, `guest` (the broker default), env-style names (`DB_PASSWORD`) |
//! | `authorization_header` | an `Authorization` (or `Proxy-Authorization`) key assigned a credential: scheme word + at least 8 characters (`Basic`, `Bearer`, `token`, …), or a bare credential of at least 20; and a standalone `Bearer <credential>` of at least 20. The credential must mix letters and digits (or, after a scheme, upper and lower case) | `Bearer auth …` prose; `Bearer $TOKEN`, `Bearer <token>` |
//! | `password_assignment` | a key whose name ends in `password`, `passwd`, `passphrase`, `secret`, `token`, `apikey`, `credential(s)`, `secretkey`, `privatekey`, `accesskey`, `authkey`, `signingkey`, `encryptionkey`, `masterkey`, `secretkeybase` (case and `_`, `-`, `.` ignored: `DB_PASSWORD`, `client_secret`, `auth_token`, `apiKey`), or whose last component, after another one, is `pass` or `pwd` (`DB_PASS`, `db_pwd`); then `=`, `:`, `:=` or `=>`; then a long value: at least 8 non-space characters. `key=value` with nothing between `=` and the value, and a value in quotes that close on the same line, count as they are; `key: value` and `key = value` (read as prose as often as config) need a value that looks like a credential: a piece of at least 8 characters, between `-_./:` and spaces, holding letters and digits, not a hex literal (`0x8004400a`) or an upper-case name with a numeric suffix (`PULONG64`), and not the type in a declaration (`key: Type = …`) | values under 8 characters; `$VAR`, `${VAR}`, `%s`, `{{ … }}`, `<redacted>`, `[REDACTED]`, masks, `changeme`, `password`, `…your…`, `…_here`, `…example…`; references (`config.db.password`, `os.getenv(…)`, `Secret::load(…)`, `creds[1]`, `ENV_NAME`, `vault:…`, `arn:…`, `file:…`, any URL) and names that themselves name a secret (`token=refresh_token`); `max_tokens=4096`, `secret_name=…`, bare `PWD=…`, `PASS=…`; prose like `Reset password: customer reported lockout`; the backtick closing a code span (`` `secret=`-style ``) |
//! | `oversize_input` | text longer than [`MAX_SCAN_BYTES`] with nothing found in its first `MAX_SCAN_BYTES` | — |
//!
//! Known misses, by choice: unquoted multi-word passphrases after `password:`; a `key: value`
//! password that is a plain word or a lower-case word with digits only inside a piece shorter
//! than 8; secrets in a shape no kind above names (a random string with no key name beside
//! it); `password is hunter2`; a token glued to a word by `_` (`MY_ghp_…`). Known refusals,
//! by choice: quoting a private-key marker (`-----BEGIN OPENSSH PRIVATE KEY-----`) in prose,
//! and documentation sample tokens shaped like real ones (RFC 6749's `2YotnFZFEjr1zCsicMWpAA`).

use std::fmt;

use crate::byte_search::{byte_positions, find_byte, find_sub, rfind_byte};

/// Text longer than this is scanned only up to here; if nothing is found there it is
/// reported as [`SecretKind::OversizeInput`] (fail closed).
pub const MAX_SCAN_BYTES: usize = 1 << 20;
/// A token body is measured up to this many bytes: past every minimum and shape check.
const MAX_TOKEN_BYTES: usize = 256;
/// An assignment's key is read back at most this far from the separator.
const MAX_KEY_BYTES: usize = 64;
/// An assigned value is read at most this far.
const MAX_VALUE_BYTES: usize = 256;
/// Spaces and tabs allowed between a key, its separator and its value.
const MAX_GAP_BYTES: usize = 8;
/// A URL scheme is at most this long (`git+ssh`, `postgresql`).
const MAX_SCHEME_BYTES: usize = 32;
/// A URL authority (`user:password@host:port`) is read at most this far.
const MAX_AUTHORITY_BYTES: usize = 256;
/// A PEM label (`ENCRYPTED PRIVATE KEY`) is at most this long.
const MAX_PEM_LABEL_BYTES: usize = 48;
/// How far from an AWS access key id a bare secret access key is looked for.
const AWS_PAIR_WINDOW_BYTES: usize = 256;
const AWS_KEY_ID_BYTES: usize = 20;
const AWS_SECRET_BYTES: usize = 40;
/// "Long": an assigned value needs at least this many non-space characters.
const MIN_ASSIGNED_VALUE_CHARS: usize = 8;
/// A credential after an HTTP auth scheme word (`Basic dXNl…`) is at least this long.
const MIN_SCHEMED_CREDENTIAL_CHARS: usize = 8;
/// A credential with no scheme word, or after a standalone `Bearer`, is at least this long.
const MIN_BARE_CREDENTIAL_CHARS: usize = 20;
/// A run of this many identical characters marks a placeholder (`xxxxxxxx`, `00000000`).
const PLACEHOLDER_REPEAT: usize = 8;
const MIN_JWT_HEADER_CHARS: usize = 12;
const MIN_JWT_CLAIMS_CHARS: usize = 8;
const MIN_JWT_SIGNATURE_CHARS: usize = 16;

/// One kind of secret the scanner recognizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    PemPrivateKey,
    AwsAccessKeyId,
    AwsSecretAccessKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    SlackWebhookUrl,
    StripeLiveKey,
    GoogleApiKey,
    OpenaiKey,
    AnthropicKey,
    NpmToken,
    PypiToken,
    HuggingfaceToken,
    Jwt,
    UrlWithPassword,
    AuthorizationHeader,
    PasswordAssignment,
    /// Not a secret itself: text too long to scan whole, refused because it was not read.
    OversizeInput,
}

impl SecretKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [SecretKind] = &[
        SecretKind::PemPrivateKey,
        SecretKind::AwsAccessKeyId,
        SecretKind::AwsSecretAccessKey,
        SecretKind::GithubToken,
        SecretKind::GitlabToken,
        SecretKind::SlackToken,
        SecretKind::SlackWebhookUrl,
        SecretKind::StripeLiveKey,
        SecretKind::GoogleApiKey,
        SecretKind::OpenaiKey,
        SecretKind::AnthropicKey,
        SecretKind::NpmToken,
        SecretKind::PypiToken,
        SecretKind::HuggingfaceToken,
        SecretKind::Jwt,
        SecretKind::UrlWithPassword,
        SecretKind::AuthorizationHeader,
        SecretKind::PasswordAssignment,
        SecretKind::OversizeInput,
    ];

    /// The stable snake_case name, as serialized (`"github_token"`).
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PemPrivateKey => "pem_private_key",
            SecretKind::AwsAccessKeyId => "aws_access_key_id",
            SecretKind::AwsSecretAccessKey => "aws_secret_access_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::SlackWebhookUrl => "slack_webhook_url",
            SecretKind::StripeLiveKey => "stripe_live_key",
            SecretKind::GoogleApiKey => "google_api_key",
            SecretKind::OpenaiKey => "openai_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::NpmToken => "npm_token",
            SecretKind::PypiToken => "pypi_token",
            SecretKind::HuggingfaceToken => "huggingface_token",
            SecretKind::Jwt => "jwt",
            SecretKind::UrlWithPassword => "url_with_password",
            SecretKind::AuthorizationHeader => "authorization_header",
            SecretKind::PasswordAssignment => "password_assignment",
            SecretKind::OversizeInput => "oversize_input",
        }
    }

    /// Plain words for messages (`"a GitHub token"`).
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::PemPrivateKey => "a PEM private key",
            SecretKind::AwsAccessKeyId => "an AWS access key id",
            SecretKind::AwsSecretAccessKey => "an AWS secret access key",
            SecretKind::GithubToken => "a GitHub token",
            SecretKind::GitlabToken => "a GitLab token",
            SecretKind::SlackToken => "a Slack token",
            SecretKind::SlackWebhookUrl => "a Slack webhook URL",
            SecretKind::StripeLiveKey => "a Stripe live key",
            SecretKind::GoogleApiKey => "a Google API key",
            SecretKind::OpenaiKey => "an OpenAI API key",
            SecretKind::AnthropicKey => "an Anthropic API key",
            SecretKind::NpmToken => "an npm token",
            SecretKind::PypiToken => "a PyPI token",
            SecretKind::HuggingfaceToken => "a Hugging Face token",
            SecretKind::Jwt => "a JSON Web Token",
            SecretKind::UrlWithPassword => "a URL with a password in it",
            SecretKind::AuthorizationHeader => "an HTTP authorization credential",
            SecretKind::PasswordAssignment => "a password, token or secret with its value",
            SecretKind::OversizeInput => "text too long to scan for secrets",
        }
    }

    /// Position in [`SCAN_ORDER`]: lower wins when several kinds occur.
    fn rank(self) -> usize {
        SCAN_ORDER.iter().position(|&k| k == self).unwrap_or(SCAN_ORDER.len())
    }
}

/// Shown as its [`name`](SecretKind::name).
impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which kind is reported when several occur: the most specific first, so `password=ghp_…`
/// is a GitHub token and an AWS key pair is the secret key, not the id.
const SCAN_ORDER: &[SecretKind] = &[
    SecretKind::PemPrivateKey,
    SecretKind::AwsSecretAccessKey,
    SecretKind::AwsAccessKeyId,
    SecretKind::GithubToken,
    SecretKind::GitlabToken,
    SecretKind::SlackWebhookUrl,
    SecretKind::SlackToken,
    SecretKind::StripeLiveKey,
    SecretKind::GoogleApiKey,
    SecretKind::AnthropicKey,
    SecretKind::OpenaiKey,
    SecretKind::NpmToken,
    SecretKind::PypiToken,
    SecretKind::HuggingfaceToken,
    SecretKind::Jwt,
    SecretKind::UrlWithPassword,
    SecretKind::AuthorizationHeader,
    SecretKind::PasswordAssignment,
    SecretKind::OversizeInput,
];

/// The first secret found in `text`, if any: the kind earliest in the scan order among
/// those present. Returns only the kind: never the match, its position or any part of it.
/// Text longer than [`MAX_SCAN_BYTES`] with nothing found in its scanned part is
/// [`SecretKind::OversizeInput`].
pub fn scan(text: &str) -> Option<SecretKind> {
    let found = scan_as_written(text);
    if found.is_some_and(|k| k.rank() == 0) || text.is_ascii() || !text.chars().any(is_format_character) {
        return found;
    }
    match (found, scan_as_written(&without_format_characters(text))) {
        (Some(a), Some(b)) => Some(if b.rank() < a.rank() { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Code points that draw as nothing: Unicode's format characters (category Cf, as of
/// Unicode 16) and its other default-ignorable code points, as inclusive ranges in order.
pub const FORMAT_CHARACTERS: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{0600}', '\u{0605}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Whether `c` is one of [`FORMAT_CHARACTERS`].
pub fn is_format_character(c: char) -> bool {
    use std::cmp::Ordering;
    let place = |&(lo, hi): &(char, char)| {
        if hi < c {
            Ordering::Less
        } else if lo > c {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    };
    FORMAT_CHARACTERS.binary_search_by(place).is_ok()
}

/// `text` without its format characters, cut once past [`MAX_SCAN_BYTES`] (enough to tell
/// that it is over).
fn without_format_characters(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SCAN_BYTES + 4));
    for c in text.chars().filter(|&c| !is_format_character(c)) {
        if out.len() > MAX_SCAN_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// [`scan`] of the text as its bytes are, format characters and all.
fn scan_as_written(text: &str) -> Option<SecretKind> {
    let bytes = text.as_bytes();
    let scanned = &bytes[..bytes.len().min(MAX_SCAN_BYTES)];
    match scan_bytes(scanned) {
        Some(kind) => Some(kind),
        None if bytes.len() > MAX_SCAN_BYTES => Some(SecretKind::OversizeInput),
        None => None,
    }
}

fn scan_bytes(text: &[u8]) -> Option<SecretKind> {
    debug_assert!(text.len() <= MAX_SCAN_BYTES);
    let mut best: Option<SecretKind> = None;
    let mut i = 0;
    while i < text.len() {
        examined(1);
        let b = text[i];
        let found = if is_word(b) {
            let found = if WORD_START_TRIGGERS[b as usize] { at_word_start(text, i) } else { None };
            // Nothing starts inside a word: skip the rest of it.
            i += 1 + run_len(text, i + 1, is_word, usize::MAX);
            found
        } else {
            i += 1;
            match b {
                b':' | b'=' => at_separator(text, i - 1),
                b'-' => pem_marker(text, i - 1).then_some(SecretKind::PemPrivateKey),
                _ => None,
            }
        };
        if let Some(kind) = found
            && best.is_none_or(|b| kind.rank() < b.rank())
        {
            best = Some(kind);
            if kind.rank() == 0 {
                break;
            }
        }
    }
    best
}

// Token shapes that are a fixed prefix and a character-class run.

#[derive(Clone, Copy)]
enum Need {
    Nothing,
    Digit,
    DigitOrUpper,
    UpperAndLower,
    UpperLowerDigit,
}

struct PrefixRule {
    kind: SecretKind,
    prefix: &'static [u8],
    body: fn(u8) -> bool,
    /// The least body length; with `exact`, the only one.
    min: usize,
    exact: bool,
    need: Need,
}

const fn rule(kind: SecretKind, prefix: &'static [u8], body: fn(u8) -> bool, min: usize, need: Need) -> PrefixRule {
    PrefixRule { kind, prefix, body, min, exact: false, need }
}

/// Where two prefixes share a start, the longer comes first: the first rule whose prefix is
/// present is the only one tried (so `sk-ant-…` is never read as `sk-…`).
const PREFIX_RULES: &[PrefixRule] = &[
    rule(SecretKind::GithubToken, b"ghp_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::GithubToken, b"gho_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::GithubToken, b"ghu_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::GithubToken, b"ghs_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::GithubToken, b"ghr_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::GitlabToken, b"glpat-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"gldt-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"glrt-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"glptt-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"glft-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"glsoat-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"gloas-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::GitlabToken, b"glcbt-", is_gitlab_body, 20, Need::DigitOrUpper),
    rule(SecretKind::SlackToken, b"xoxa-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xoxb-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xoxp-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xoxr-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xoxs-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xoxe-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::SlackToken, b"xapp-", is_slack_body, 20, Need::Digit),
    rule(SecretKind::StripeLiveKey, b"sk_live_", is_alnum, 20, Need::Nothing),
    rule(SecretKind::StripeLiveKey, b"rk_live_", is_alnum, 20, Need::Nothing),
    PrefixRule { kind: SecretKind::GoogleApiKey, prefix: b"AIza", body: is_base64url, min: 35, exact: true, need: Need::Nothing },
    rule(SecretKind::AnthropicKey, b"sk-ant-", is_base64url, 32, Need::UpperLowerDigit),
    rule(SecretKind::OpenaiKey, b"sk-", is_base64url, 32, Need::UpperLowerDigit),
    rule(SecretKind::NpmToken, b"npm_", is_alnum, 36, Need::Nothing),
    rule(SecretKind::PypiToken, b"pypi-AgEIcHlwaS5vcmc", is_base64url, 50, Need::Nothing),
    rule(SecretKind::PypiToken, b"pypi-AgENdGVzdC5weXBpLm9yZw", is_base64url, 50, Need::Nothing),
    rule(SecretKind::HuggingfaceToken, b"hf_", is_alnum, 34, Need::UpperAndLower),
];

/// The bytes a candidate can start with at a word start, so most words are dismissed by
/// one lookup: the first bytes of [`PREFIX_RULES`] and of the shapes `at_word_start` checks.
const WORD_START_TRIGGERS: [bool; 256] = {
    let mut table = [false; 256];
    let mut k = 0;
    while k < PREFIX_RULES.len() {
        table[PREFIX_RULES[k].prefix[0] as usize] = true;
        k += 1;
    }
    let others = b"AghebB";
    let mut k = 0;
    while k < others.len() {
        table[others[k] as usize] = true;
        k += 1;
    }
    table
};

/// The first two bytes of [`PREFIX_RULES`] as a 65,536-bit set, so the rules are walked only
/// for words that could start one (`sk`, `gh`, `xo`, …), not for every word starting `s`.
const PREFIX_PAIRS: [u64; 1024] = {
    let mut set = [0u64; 1024];
    let mut k = 0;
    while k < PREFIX_RULES.len() {
        let pair = (PREFIX_RULES[k].prefix[0] as usize) << 8 | PREFIX_RULES[k].prefix[1] as usize;
        set[pair >> 6] |= 1 << (pair & 63);
        k += 1;
    }
    set
};

fn at_word_start(text: &[u8], i: usize) -> Option<SecretKind> {
    let found = match text[i] {
        b'A' if aws_access_key_id(text, i) => {
            Some(if aws_secret_near(text, i) { SecretKind::AwsSecretAccessKey } else { SecretKind::AwsAccessKeyId })
        }
        b'g' if github_pat(text, i) => Some(SecretKind::GithubToken),
        b'h' if slack_webhook(text, i) => Some(SecretKind::SlackWebhookUrl),
        b'e' if jwt(text, i) => Some(SecretKind::Jwt),
        b'b' | b'B' if bearer(text, i) => Some(SecretKind::AuthorizationHeader),
        _ => None,
    };
    if found.is_some() {
        return found;
    }
    let pair = (text[i] as usize) << 8 | *text.get(i + 1)? as usize;
    if PREFIX_PAIRS[pair >> 6] & (1 << (pair & 63)) == 0 {
        return None;
    }
    let rest = &text[i..];
    let rule = PREFIX_RULES.iter().find(|r| rest.starts_with(r.prefix))?;
    prefix_rule_matches(text, i, rule).then_some(rule.kind)
}

fn prefix_rule_matches(text: &[u8], i: usize, rule: &PrefixRule) -> bool {
    // A candidate inside a body run of the same class is part of a longer token, not a
    // start; this also keeps every rule's runs disjoint, so the pass stays linear.
    if i > 0 && (rule.body)(text[i - 1]) {
        return false;
    }
    let start = i + rule.prefix.len();
    let len = run_len(text, start, rule.body, MAX_TOKEN_BYTES);
    let long_enough = if rule.exact { len == rule.min } else { len >= rule.min };
    if !long_enough {
        return false;
    }
    let body = &text[start..start + len];
    let flagged = |body: &[u8]| rule.need.met(Mix::of(body)) && !is_placeholder(body);
    // A body class holding `.` runs on into what follows a token (`glpat-….txt`, a file
    // name), and the run then reads as a dotted reference: the part before the first `.`
    // is judged on its own too.
    flagged(body) || byte_positions(b'.', body).next().is_some_and(|dot| dot >= rule.min && !rule.exact && flagged(&body[..dot]))
}

impl Need {
    fn met(self, mix: Mix) -> bool {
        match self {
            Need::Nothing => true,
            Need::Digit => mix.digit,
            Need::DigitOrUpper => mix.digit || mix.upper,
            Need::UpperAndLower => mix.upper && mix.lower,
            Need::UpperLowerDigit => mix.upper && mix.lower && mix.digit,
        }
    }
}

// Shapes with more structure than a prefix and a run.

fn aws_access_key_id(text: &[u8], i: usize) -> bool {
    const PREFIXES: [&[u8]; 4] = [b"AKIA", b"ASIA", b"ABIA", b"ACCA"];
    let Some(id) = text.get(i..i + AWS_KEY_ID_BYTES) else {
        return false;
    };
    let prefixed = PREFIXES.iter().any(|p| id.starts_with(p)) || (id.starts_with(b"A3T") && is_upper_alnum(id[3]));
    let whole_word = !text.get(i + AWS_KEY_ID_BYTES).is_some_and(|&b| is_word(b));
    prefixed && whole_word && id[4..].iter().all(|&b| is_upper_alnum(b)) && !contains_ignore_case(id, b"example")
}

/// A bare secret access key beside the access key id at `id_at`: a whole run of exactly 40
/// `[A-Za-z0-9/+]` mixing upper case, lower case and digits (which a hex digest never does).
fn aws_secret_near(text: &[u8], id_at: usize) -> bool {
    let lo = id_at.saturating_sub(AWS_PAIR_WINDOW_BYTES);
    let hi = (id_at + AWS_KEY_ID_BYTES + AWS_PAIR_WINDOW_BYTES).min(text.len());
    let mut j = lo;
    while j < hi {
        examined(1);
        if !is_aws_secret_byte(text[j]) {
            j += 1;
            continue;
        }
        let len = run_len(text, j, is_aws_secret_byte, hi - j);
        let whole = (j == 0 || !is_aws_secret_byte(text[j - 1])) && !text.get(j + len).is_some_and(|&b| is_aws_secret_byte(b) || b == b'=');
        if whole && len == AWS_SECRET_BYTES {
            let run = &text[j..j + len];
            let mix = Mix::of(run);
            if mix.upper && mix.lower && mix.digit && !is_placeholder(run) {
                return true;
            }
        }
        j += len;
    }
    false
}

fn github_pat(text: &[u8], i: usize) -> bool {
    const PREFIX: &[u8] = b"github_pat_";
    if !text[i..].starts_with(PREFIX) {
        return false;
    }
    let first_at = i + PREFIX.len();
    let first = run_len(text, first_at, is_alnum, MAX_TOKEN_BYTES);
    if first < 20 || text.get(first_at + first) != Some(&b'_') {
        return false;
    }
    let second_at = first_at + first + 1;
    let second = run_len(text, second_at, is_alnum, MAX_TOKEN_BYTES);
    second >= 50 && !is_placeholder(&text[first_at..second_at + second])
}

fn slack_webhook(text: &[u8], i: usize) -> bool {
    const HOST: &[u8] = b"hooks.slack.com/";
    let rest = &text[i..];
    if !rest.starts_with(HOST) {
        return false;
    }
    let Some(path) = [&b"services/"[..], b"workflows/", b"triggers/"].into_iter().find(|p| rest[HOST.len()..].starts_with(p)) else {
        return false;
    };
    let start = i + HOST.len() + path.len();
    let len = run_len(text, start, |b| is_alnum(b) || b == b'/', MAX_TOKEN_BYTES);
    let body = &text[start..start + len];
    len >= 40 && byte_positions(b'/', body).count() >= 2 && Need::DigitOrUpper.met(Mix::of(body)) && !is_placeholder(body)
}

/// `eyJ<header>.eyJ<claims>.<signature>`. A candidate must follow a byte that is neither
/// base64url nor `.`, so no candidate starts inside another's segments: linear without caps.
fn jwt(text: &[u8], i: usize) -> bool {
    if i > 0 && (is_base64url(text[i - 1]) || text[i - 1] == b'.') {
        return false;
    }
    let segment = |at: usize, json: bool, min: usize| -> Option<usize> {
        if json && !text[at.min(text.len())..].starts_with(b"eyJ") {
            return None;
        }
        let len = run_len(text, at, is_base64url, usize::MAX);
        (len >= min).then_some(at + len)
    };
    let Some(header_end) = segment(i, true, MIN_JWT_HEADER_CHARS) else {
        return false;
    };
    if text.get(header_end) != Some(&b'.') {
        return false;
    }
    let Some(claims_end) = segment(header_end + 1, true, MIN_JWT_CLAIMS_CHARS) else {
        return false;
    };
    text.get(claims_end) == Some(&b'.') && segment(claims_end + 1, false, MIN_JWT_SIGNATURE_CHARS).is_some()
}

fn bearer(text: &[u8], i: usize) -> bool {
    const WORD: &[u8] = b"bearer";
    if !text.get(i..i + WORD.len()).is_some_and(|w| w.eq_ignore_ascii_case(WORD)) {
        return false;
    }
    let gap = run_len(text, i + WORD.len(), is_blank, MAX_GAP_BYTES);
    if gap == 0 {
        return false;
    }
    let at = i + WORD.len() + gap;
    let len = run_len(text, at, is_token68, MAX_TOKEN_BYTES);
    credential(&text[at..at + len], MIN_BARE_CREDENTIAL_CHARS, false)
}

/// `-----BEGIN <label>-----` / `-----END <label>-----` (or the SSH2 `---- BEGIN … ----`).
fn pem_marker(text: &[u8], i: usize) -> bool {
    let rest = &text[i..];
    let label_at = if rest.starts_with(b"-----BEGIN ") || rest.starts_with(b"---- BEGIN ") {
        11
    } else if rest.starts_with(b"-----END ") || rest.starts_with(b"---- END ") {
        9
    } else {
        return false;
    };
    let len = run_len(rest, label_at, |b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ', MAX_PEM_LABEL_BYTES + 1);
    if len > MAX_PEM_LABEL_BYTES {
        return false;
    }
    let label = rest[label_at..label_at + len].trim_ascii_end();
    (label.ends_with(b"PRIVATE KEY") || label.ends_with(b"PRIVATE KEY BLOCK")) && rest.get(label_at + len) == Some(&b'-')
}

// Assignments and URLs, found from their separator.

fn at_separator(text: &[u8], i: usize) -> Option<SecretKind> {
    if text[i] == b':' && text.get(i + 1..i + 3) == Some(b"//") {
        return url_with_password(text, i).then_some(SecretKind::UrlWithPassword);
    }
    let (value_at, equals) = separator(text, i)?;
    let key = key_before(text, i)?;
    if !KeyClass::may_name_secret(key) {
        return None;
    }
    let class = KeyClass::of(key);
    if class.authorization {
        return authorization_credential(text, value_at).then_some(SecretKind::AuthorizationHeader);
    }
    if !class.secret {
        return None;
    }
    let value = value_after(text, value_at);
    if class.aws_secret && aws_secret_value(value.bytes.trim_ascii()) {
        return Some(SecretKind::AwsSecretAccessKey);
    }
    assigned_secret(&value, equals).then_some(SecretKind::PasswordAssignment)
}

/// The separator at `i`: where its value starts, and whether it is an `=` form (`=`, `:=`,
/// `=>`) rather than a `:`. `None` for `::`, `==`, `!=`, `<=`, `>=`.
fn separator(text: &[u8], i: usize) -> Option<(usize, bool)> {
    let prev = if i > 0 { text[i - 1] } else { b' ' };
    let next = text.get(i + 1).copied().unwrap_or(b' ');
    match text[i] {
        b':' if next == b':' || prev == b':' => None,
        b':' if next == b'=' => Some((i + 2, true)),
        b':' => Some((i + 1, false)),
        b'=' if matches!(prev, b'=' | b'!' | b'<' | b'>' | b':') || next == b'=' => None,
        b'=' if next == b'>' => Some((i + 2, true)),
        b'=' => Some((i + 1, true)),
        _ => None,
    }
}

/// The identifier before the separator at `sep`, past blanks and a closing quote (also a
/// JSON-escaped one, `\"`).
fn key_before(text: &[u8], sep: usize) -> Option<&[u8]> {
    let mut end = sep - run_len_back(text, sep, is_blank, MAX_GAP_BYTES);
    if end > 0 && is_quote(text[end - 1]) {
        end -= 1;
        if end > 0 && text[end - 1] == b'\\' {
            end -= 1;
        }
    }
    let len = run_len_back(text, end, |b| is_word(b) || b == b'.' || b == b'-', MAX_KEY_BYTES);
    (len > 0).then(|| &text[end - len..end])
}

#[derive(Default)]
struct KeyClass {
    aws_secret: bool,
    authorization: bool,
    secret: bool,
}

impl KeyClass {
    /// A quick filter on the key's last three letters, before the full look in [`KeyClass::of`]:
    /// every name it accepts ends in one of these (`password`, `passwd`, `pwd`, `passphrase`,
    /// `…keybase`, `secret`, `token`, `authorization`, `…key`, `credential`, `credentials`, `pass`).
    fn may_name_secret(key: &[u8]) -> bool {
        let Some(tail) = key.len().checked_sub(3).map(|k| &key[k..]) else {
            return false;
        };
        let tail = [tail[0].to_ascii_lowercase(), tail[1].to_ascii_lowercase(), tail[2].to_ascii_lowercase()];
        matches!(&tail, b"ord" | b"swd" | b"pwd" | b"ase" | b"ret" | b"ken" | b"ion" | b"key" | b"ial" | b"als" | b"ass")
    }

    fn of(key: &[u8]) -> KeyClass {
        const SECRET_ENDINGS: [&[u8]; 15] = [
            b"password",
            b"passwd",
            b"passphrase",
            b"secret",
            b"token",
            b"apikey",
            b"credential",
            b"credentials",
            b"secretkey",
            b"privatekey",
            b"accesskey",
            b"authkey",
            b"signingkey",
            b"encryptionkey",
            b"masterkey",
        ];
        let mut buffer = [0u8; MAX_KEY_BYTES];
        let squashed = squash_lower(key, &mut buffer);
        let ends = |w: &[u8]| squashed.ends_with(w);
        let last = last_component(key);
        let after_another = key[..key.len() - last.len()].iter().any(u8::is_ascii_alphanumeric);
        KeyClass {
            aws_secret: ends(b"secretaccesskey") || ends(b"awssecretkey"),
            authorization: ends(b"authorization"),
            secret: SECRET_ENDINGS.iter().any(|w| ends(w))
                || ends(b"secretkeybase")
                || ((last.eq_ignore_ascii_case(b"pass") || last.eq_ignore_ascii_case(b"pwd")) && after_another),
        }
    }
}

/// The key's last component: after the last `_`, `-` or `.`, or at the last camelCase hump.
fn last_component(key: &[u8]) -> &[u8] {
    let run = run_len_back(key, key.len(), is_alnum, key.len());
    let word = &key[key.len() - run..];
    let hump = (1..word.len()).rev().find(|&j| word[j].is_ascii_uppercase() && word[j - 1].is_ascii_lowercase()).unwrap_or(0);
    &word[hump..]
}

struct Assigned<'a> {
    bytes: &'a [u8],
    /// Between quotes that close on the line.
    quoted: bool,
    /// After a quote that does not close on the line.
    unclosed: bool,
    /// Blanks between the separator and the value.
    gap: usize,
    /// A bare value followed by `=`: the type in a declaration (`key: Type = …`).
    typed: bool,
}

fn value_after(text: &[u8], from: usize) -> Assigned<'_> {
    let gap = run_len(text, from, is_blank, MAX_GAP_BYTES);
    let mut at = from + gap;
    if text.get(at) == Some(&b'\\') && text.get(at + 1).is_some_and(|&b| is_quote(b)) {
        at += 1;
    }
    if let Some(&quote) = text.get(at).filter(|&&b| is_quote(b)) {
        let rest = &text[at + 1..];
        let limit = rest.len().min(MAX_VALUE_BYTES);
        let end = (0..limit)
            .find(|&k| matches!(rest[k], b'\n' | b'\r') || rest[k] == quote || (rest[k] == b'\\' && rest.get(k + 1) == Some(&quote)));
        examined(end.map_or(limit, |k| k + 1));
        // Quoted only when the quote closes on the line: an unclosed one (the backtick that
        // closes a Markdown code span, "`secret=`-style") is read like a bare value.
        let closed = end.is_some_and(|k| rest[k] != b'\n' && rest[k] != b'\r');
        return Assigned { bytes: &rest[..end.unwrap_or(limit)], quoted: closed, unclosed: !closed, gap, typed: false };
    }
    let len = run_len(text, at, is_bare_value_byte, MAX_VALUE_BYTES);
    let after = at + len + run_len(text, at + len, is_blank, MAX_GAP_BYTES);
    let typed = text.get(after) == Some(&b'=') && text.get(after + 1) != Some(&b'=');
    Assigned { bytes: &text[at..at + len], quoted: false, unclosed: false, gap, typed }
}

/// A long, real value: `key=value` and quoted values count as they are; `key: value` and
/// `key = value`, often prose, need a piece that looks like a credential.
fn assigned_secret(value: &Assigned<'_>, equals: bool) -> bool {
    let v = value.bytes.trim_ascii();
    if v.iter().filter(|b| !b.is_ascii_whitespace()).count() < MIN_ASSIGNED_VALUE_CHARS || is_placeholder(v) {
        return false;
    }
    let plain = value.quoted || (equals && value.gap == 0 && !value.unclosed);
    plain || (!value.typed && looks_like_credential(v))
}

/// Some piece (between `-_./:` and blanks) of at least eight characters holds letters and
/// digits, and is not a hex literal (`0x8004400a`) or an upper-case name with a numeric
/// suffix (`PULONG64`), the shapes that code puts after `key:` and `key =`.
fn looks_like_credential(v: &[u8]) -> bool {
    examined(v.len());
    v.split(|&b| matches!(b, b'-' | b'_' | b'.' | b'/' | b':') || b.is_ascii_whitespace()).any(|piece| {
        let mix = Mix::of(piece);
        let hex_literal = piece.len() > 2 && piece[..2].eq_ignore_ascii_case(b"0x") && piece[2..].iter().all(u8::is_ascii_hexdigit);
        let letters = run_len(piece, 0, |b| b.is_ascii_uppercase(), piece.len());
        let numbered_name = letters > 0 && piece[letters..].iter().all(u8::is_ascii_digit);
        piece.len() >= MIN_ASSIGNED_VALUE_CHARS && mix.digit && (mix.upper || mix.lower) && !hex_literal && !numbered_name
    })
}

fn aws_secret_value(v: &[u8]) -> bool {
    let len = run_len(v, 0, is_aws_secret_byte, AWS_SECRET_BYTES + 1);
    len == AWS_SECRET_BYTES && v.get(len) != Some(&b'=') && !is_placeholder(&v[..len])
}

/// After an `Authorization` key: a scheme word and a credential, or a bare credential.
fn authorization_credential(text: &[u8], from: usize) -> bool {
    let mut at = from + run_len(text, from, is_blank, MAX_GAP_BYTES);
    if text.get(at) == Some(&b'\\') {
        at += 1;
    }
    if text.get(at).is_some_and(|&b| is_quote(b)) {
        at += 1;
    }
    let first = run_len(text, at, is_token68, MAX_TOKEN_BYTES);
    let word = &text[at..at + first];
    let gap = run_len(text, at + first, is_blank, MAX_GAP_BYTES);
    if !word.is_empty() && word.iter().all(u8::is_ascii_alphabetic) && gap > 0 {
        let cred_at = at + first + gap;
        let len = run_len(text, cred_at, is_token68, MAX_TOKEN_BYTES);
        return credential(&text[cred_at..cred_at + len], MIN_SCHEMED_CREDENTIAL_CHARS, true);
    }
    credential(word, MIN_BARE_CREDENTIAL_CHARS, false)
}

/// Long enough, not a placeholder, and mixing letters with digits (or, when `cased_is_enough`,
/// upper with lower case, as short base64 `Basic` credentials may have no digit).
fn credential(cred: &[u8], min: usize, cased_is_enough: bool) -> bool {
    let body = cred.strip_suffix(b"==").or_else(|| cred.strip_suffix(b"=")).unwrap_or(cred);
    let mix = Mix::of(body);
    body.len() >= min && ((mix.digit && (mix.upper || mix.lower)) || (cased_is_enough && mix.upper && mix.lower)) && !is_placeholder(body)
}

/// `scheme://[user]:password@…` with a password that is not a placeholder.
fn url_with_password(text: &[u8], colon: usize) -> bool {
    let scheme = run_len_back(text, colon, |b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'), MAX_SCHEME_BYTES + 1);
    if scheme == 0 || scheme > MAX_SCHEME_BYTES || !text[colon - scheme].is_ascii_alphabetic() {
        return false;
    }
    let start = colon + 3;
    let len = run_len(text, start, is_authority_byte, MAX_AUTHORITY_BYTES);
    let authority = &text[start..start + len];
    let Some(at) = rfind_byte(b'@', authority) else {
        return false;
    };
    let userinfo = &authority[..at];
    let Some(colon) = find_byte(b':', userinfo) else {
        return false;
    };
    let password = &userinfo[colon + 1..];
    !password.is_empty() && !is_placeholder(password)
}

// Placeholders and references: values that stand for a secret without being one.

const PLACEHOLDER_WORDS: [&[u8]; 29] = [
    b"pass",
    b"passwd",
    b"password",
    b"pwd",
    b"pw",
    b"secret",
    b"token",
    b"changeme",
    b"changeit",
    b"redacted",
    b"placeholder",
    b"hidden",
    b"masked",
    b"removed",
    b"omitted",
    b"required",
    b"optional",
    b"none",
    b"null",
    b"nil",
    b"undefined",
    b"empty",
    b"unset",
    b"notset",
    b"guest",
    b"anonymous",
    b"mypassword",
    b"mysecret",
    b"mytoken",
];
const PLACEHOLDER_PREFIXES: [&[u8]; 5] = [b"dummy", b"fake", b"sample", b"insert", b"replace"];
/// Anywhere in a value, these mark it as a stand-in; none is likely inside a random key.
const PLACEHOLDER_INFIXES: [&[u8]; 6] = [b"example", b"your", b"goeshere", b"placeholder", b"redacted", b"changeme"];
const REFERENCE_PREFIXES: [&[u8]; 16] = [
    b"env:",
    b"env.",
    b"vault:",
    b"arn:",
    b"op://",
    b"ref+",
    b"ssm:",
    b"secretsmanager:",
    b"process.env",
    b"os.environ",
    b"os.getenv",
    b"!ref",
    b"!sub",
    b"!getatt",
    b"file:",
    b"keychain:",
];

fn is_placeholder(v: &[u8]) -> bool {
    examined(v.len());
    let Some(&first) = v.first() else {
        return true;
    };
    let percent_escape = v.len() >= 3 && v[1].is_ascii_hexdigit() && v[2].is_ascii_hexdigit();
    if matches!(first, b'$' | b'{' | b'<' | b'[' | b'(') || (first == b'%' && !percent_escape) || v.starts_with(b"#{") {
        return true;
    }
    if v.iter().all(|&b| matches!(b, b'*' | b'x' | b'X' | b'.' | b'#' | b'-' | b'_' | b'?')) {
        return true;
    }
    let masked = ["***", "...", "\u{2026}", "\u{2022}"].iter().any(|m| find_sub(v, m.as_bytes()).is_some());
    if masked || has_repeat_run(v, PLACEHOLDER_REPEAT) || is_reference(v) {
        return true;
    }
    let mut buffer = [0u8; MAX_VALUE_BYTES];
    let squashed = squash_lower(v, &mut buffer);
    PLACEHOLDER_WORDS.contains(&squashed)
        || PLACEHOLDER_PREFIXES.iter().any(|p| squashed.starts_with(p))
        || squashed.ends_with(b"here")
        || PLACEHOLDER_INFIXES.iter().any(|p| find_sub(squashed, p).is_some())
}

/// A name for where the secret is kept rather than the secret: `vault:…`, `config.db.password`,
/// `os.getenv(…)`, `get_password()`, `Secret::load(…)`, `creds[1]`, `DB_PASSWORD`, a URL, or
/// a name that itself names a secret (`token=refresh_token`, `private_key: "_RSAPrivateKey"`).
fn is_reference(v: &[u8]) -> bool {
    examined(v.len());
    if REFERENCE_PREFIXES.iter().any(|p| v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p)) {
        return true;
    }
    if find_sub(v, b"://").is_some() {
        return true;
    }
    if v.iter().all(|&b| is_word(b) || b == b'.' || b == b'-') && KeyClass::of(&v[v.len().saturating_sub(MAX_KEY_BYTES)..]).secret {
        return true;
    }
    let is_identifier = |s: &[u8]| s.first().is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_') && s.iter().all(|&b| is_word(b));
    if v.split(|&b| b == b'.').all(is_identifier) && v.contains(&b'.') {
        return true;
    }
    let callee = run_len(v, 0, |b| is_word(b) || b == b'.' || b == b':', v.len());
    if callee > 0 && matches!(v.get(callee), Some(b'(' | b'[')) && is_identifier(&v[..1]) {
        return true;
    }
    v.first().is_some_and(u8::is_ascii_uppercase)
        && v.contains(&b'_')
        && v.iter().all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

// Byte classes and small helpers.

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_gitlab_body(b: u8) -> bool {
    is_base64url(b) || b == b'.'
}

fn is_slack_body(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn is_aws_secret_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'/' || b == b'+'
}

/// RFC 7235 token68, the shape of an HTTP auth credential.
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_quote(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

fn is_bare_value_byte(b: u8) -> bool {
    !b.is_ascii_whitespace() && !b.is_ascii_control() && !matches!(b, b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b')' | b']' | b'}' | b'\\')
}

fn is_authority_byte(b: u8) -> bool {
    !b.is_ascii_whitespace() && !b.is_ascii_control() && !matches!(b, b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\')
}

// The work counter: the linearity test counts the bytes the scanner reads instead of timing
// it. It exists only in the crate's own unit tests; elsewhere `examined` is an empty inline
// function and the counts passed to it are dead code.

#[cfg(test)]
thread_local! {
    static EXAMINED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` read. Called where the length read is decided by the text: the main
/// loop, every run, and each pass over a delimited value.
#[cfg(test)]
fn examined(bytes: usize) {
    EXAMINED.with(|c| c.set(c.get() + bytes as u64));
}

#[cfg(not(test))]
#[inline(always)]
fn examined(_bytes: usize) {}

/// How many bytes from `from` are in `class`, counting at most `cap`.
fn run_len(text: &[u8], from: usize, class: impl Fn(u8) -> bool, cap: usize) -> usize {
    let len = text.get(from..).map_or(0, |rest| rest.iter().take(cap).take_while(|&&b| class(b)).count());
    examined(len + 1);
    len
}

/// How many bytes before `end` are in `class`, counting at most `cap`.
fn run_len_back(text: &[u8], end: usize, class: impl Fn(u8) -> bool, cap: usize) -> usize {
    let len = text[..end].iter().rev().take(cap).take_while(|&&b| class(b)).count();
    examined(len + 1);
    len
}

#[derive(Clone, Copy, Default)]
struct Mix {
    upper: bool,
    lower: bool,
    digit: bool,
}

impl Mix {
    fn of(bytes: &[u8]) -> Mix {
        examined(bytes.len());
        bytes.iter().fold(Mix::default(), |m, &b| Mix {
            upper: m.upper || b.is_ascii_uppercase(),
            lower: m.lower || b.is_ascii_lowercase(),
            digit: m.digit || b.is_ascii_digit(),
        })
    }
}

fn has_repeat_run(bytes: &[u8], n: usize) -> bool {
    examined(bytes.len());
    let mut run = 0;
    for (k, &b) in bytes.iter().enumerate() {
        run = if k > 0 && bytes[k - 1] == b { run + 1 } else { 1 };
        if run >= n {
            return true;
        }
    }
    false
}

fn contains_ignore_case(hay: &[u8], lower_needle: &[u8]) -> bool {
    examined(hay.len());
    hay.windows(lower_needle.len()).any(|w| w.eq_ignore_ascii_case(lower_needle))
}

/// The ASCII letters and digits of `v`, lower-cased, as far as `buffer` holds.
fn squash_lower<'b>(v: &[u8], buffer: &'b mut [u8]) -> &'b [u8] {
    examined(v.len());
    let mut len = 0;
    for &b in v.iter().filter(|b| b.is_ascii_alphanumeric()) {
        if len == buffer.len() {
            break;
        }
        buffer[len] = b.to_ascii_lowercase();
        len += 1;
    }
    &buffer[..len]
}

/// How much of a text is kept when it is cut for size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// At most this many characters.
    Chars(usize),
    /// At most this many bytes of UTF-8.
    Bytes(usize),
    /// At most this many characters, with no mark: for a name kept as a name (a path
    /// component, a machine name, an id), where the mark would leave its alphabet.
    CharsUnmarked(usize),
}

/// What ends a text that was cut, inside its bound.
pub const CUT_MARK: char = '…';

/// The one place a text that leaves abcd (for the journal, a notify command, a projection,
/// a terminal or the remote) is cut for size: the whole text is scanned as it arrived, and
/// only then cut, so a token across the cut is seen whole. A flagged text is `Err` with its
/// kind, and the caller leaves it out or says what was left out. The cut is scanned again:
/// a prefix can read as a token the whole did not (a placeholder's tail cut off), and that
/// prefix is left out too. A text within its bound is returned as it is; a cut one ends in
/// [`CUT_MARK`], inside the bound. `tests/structure/text_cuts.rs` holds that no other code cuts text.
pub fn cut_after_scan(text: &str, bound: Bound) -> Result<String, SecretKind> {
    if let Some(kind) = scan(text) {
        return Err(kind);
    }
    let cut = cut_to(text, bound);
    match scan(&cut) {
        Some(kind) => Err(kind),
        None => Ok(cut),
    }
}

/// [`cut_after_scan`] of `text` made one line: whitespace runs folded to one space, other
/// control characters dropped. Dropping a character can join the halves of a token, so the
/// line is scanned whole as well as the text as it arrived, both before the cut.
pub fn one_line_after_scan(text: &str, bound: Bound) -> Result<String, SecretKind> {
    if let Some(kind) = scan(text) {
        return Err(kind);
    }
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().filter(|c| !c.is_control()).collect();
    cut_after_scan(&line, bound)
}

fn cut_to(text: &str, bound: Bound) -> String {
    let mark = CUT_MARK.len_utf8();
    let keep = match bound {
        Bound::Chars(max) => match text.char_indices().nth(max) {
            None => return text.to_string(),
            Some(_) => text.char_indices().nth(max.saturating_sub(1)).map_or(text.len(), |(at, _)| at),
        },
        Bound::CharsUnmarked(max) => return text.char_indices().nth(max).map_or(text, |(at, _)| &text[..at]).to_string(),
        Bound::Bytes(max) if text.len() <= max => return text.to_string(),
        Bound::Bytes(max) if max < mark => return String::new(),
        Bound::Bytes(max) => (0..=max - mark).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0),
    };
    let mut out = text[..keep].to_string();
    if !matches!(bound, Bound::Chars(0)) {
        out.push(CUT_MARK);
    }
    out
}

/// A name (a run, lane or role) as a message may show it: quoted, or not at all when it
/// looks like a secret (a refusal never echoes one, even one the person just typed).
pub fn shown_name(name: &str) -> String {
    if scan(name).is_some() { "(a name that looks like a secret, not shown)".to_string() } else { format!("{name:?}") }
}

#[cfg(test)]
mod tests {
    use super::SecretKind::*;
    use super::*;

    // Fake secret material: realistic shapes from a deterministic generator, never real keys.

    const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
    const DIGITS: &str = "0123456789";
    const HEX: &str = "0123456789abcdef";
    /// AWS key ids are base32: upper case letters and 2–7.
    const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

    fn alnum() -> String {
        format!("{UPPER}{LOWER}{DIGITS}")
    }
    fn base64() -> String {
        format!("{UPPER}{LOWER}{DIGITS}+/")
    }
    fn base64url() -> String {
        format!("{UPPER}{LOWER}{DIGITS}-_")
    }

    /// xorshift64*, seeded per case so every run builds the same fakes.
    struct Fake(u64);

    impl Fake {
        fn new(seed: u64) -> Fake {
            Fake(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }

        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn pick(&mut self, set: &str, n: usize) -> String {
            let set = set.as_bytes();
            (0..n).map(|_| set[(self.next() % set.len() as u64) as usize] as char).collect()
        }

        /// `n` characters of `set` holding every character class `set` has (upper, lower,
        /// digit), with no character three times in a row: what a random key looks like.
        fn mixed(&mut self, set: &str, n: usize) -> String {
            let has = |s: &str, class: fn(&u8) -> bool| s.as_bytes().iter().any(class);
            loop {
                let s = self.pick(set, n);
                let classes_ok = [u8::is_ascii_uppercase as fn(&u8) -> bool, u8::is_ascii_lowercase, u8::is_ascii_digit]
                    .iter()
                    .all(|&class| !has(set, class) || has(&s, class));
                let no_runs = s.as_bytes().windows(3).all(|w| w[0] != w[1] || w[1] != w[2]);
                if classes_ok && no_runs {
                    return s;
                }
            }
        }
    }

    fn b64(bytes: &[u8], url: bool) -> String {
        let table = if url { base64url() } else { base64() };
        let table = table.as_bytes();
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
            let chars = chunk.len() + 1;
            for k in 0..4 {
                if k < chars {
                    out.push(table[(n >> (18 - 6 * k) & 63) as usize] as char);
                } else if !url {
                    out.push('=');
                }
            }
        }
        out
    }

    /// A text holding a secret, the kind it must be named as, and the secret part itself
    /// (what must never show up in anything derived from the finding).
    struct Positive {
        kind: SecretKind,
        text: String,
        secret: String,
    }

    fn pos(kind: SecretKind, text: String, secret: &str) -> Positive {
        assert!(text.contains(secret), "{kind:?}: the secret must be part of the text");
        Positive { kind, text, secret: secret.to_owned() }
    }

    fn positives() -> Vec<Positive> {
        let mut out = Vec::new();
        let mut f = Fake::new(1);

        // PEM private keys: every common label, the marker with and without the body.
        for label in ["RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PRIVATE KEY"]
        {
            let body = f.mixed(&base64(), 64);
            out.push(pos(
                PemPrivateKey,
                format!("-----BEGIN {label}-----\n{body}\n{}\n-----END {label}-----\n", f.mixed(&base64(), 44)),
                &body,
            ));
        }
        let body = f.mixed(&base64(), 64);
        out.push(pos(
            PemPrivateKey,
            format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=Ab3x\n-----END PGP PRIVATE KEY BLOCK-----"),
            &body,
        ));
        let body = f.mixed(&base64(), 60);
        out.push(pos(
            PemPrivateKey,
            format!("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"deploy\"\n{body}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"),
            &body,
        ));
        let body = f.mixed(&base64(), 40);
        out.push(pos(PemPrivateKey, format!("tail of the pasted key: {body}\n-----END PRIVATE KEY-----"), &body));
        let body = f.mixed(&base64(), 64);
        out.push(pos(PemPrivateKey, format!("{{\"key\":\"-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n\"}}"), &body));

        // AWS access key ids.
        for prefix in ["AKIA", "ASIA", "ABIA", "ACCA"] {
            let id = format!("{prefix}{}", f.mixed(BASE32, 16));
            out.push(pos(AwsAccessKeyId, format!("export AWS_ACCESS_KEY_ID={id}"), &id));
        }
        let id = format!("AKIA{}", f.mixed(BASE32, 16));
        out.push(pos(AwsAccessKeyId, format!("aws configure set aws_access_key_id {id} --profile ci"), &id));

        // AWS secret access keys: in a keyed assignment, or beside a key id.
        let key = f.mixed(&base64(), 40);
        out.push(pos(AwsSecretAccessKey, format!("[default]\naws_secret_access_key = {key}\nregion = eu-west-1"), &key));
        let key = f.mixed(&base64(), 40);
        out.push(pos(AwsSecretAccessKey, format!("export AWS_SECRET_ACCESS_KEY={key}"), &key));
        let key = f.mixed(&base64(), 40);
        let id = format!("ASIA{}", f.mixed(BASE32, 16));
        out.push(pos(AwsSecretAccessKey, format!("{{\"AccessKeyId\": \"{id}\", \"SecretAccessKey\": \"{key}\"}}"), &key));
        let key = f.mixed(&base64(), 40);
        let id = format!("AKIA{}", f.mixed(BASE32, 16));
        out.push(pos(AwsSecretAccessKey, format!("creds for the ci user: {id} {key}"), &key));
        let key = f.mixed(&base64(), 40);
        out.push(pos(AwsSecretAccessKey, format!("secretAccessKey: '{key}'"), &key));

        // GitHub tokens.
        for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
            let token = format!("{prefix}{}", f.mixed(&alnum(), 36));
            out.push(pos(GithubToken, format!("GITHUB_TOKEN={token} gh pr list"), &token));
        }
        let token = format!("ghs_{}", f.mixed(&alnum(), 36));
        out.push(pos(GithubToken, format!("git clone https://x-access-token:{token}@github.com/org/repo.git"), &token));
        let token = format!("github_pat_11{}_{}", f.mixed(&format!("{UPPER}{DIGITS}"), 20), f.mixed(&alnum(), 59));
        out.push(pos(GithubToken, format!("use {token} for the release bot"), &token));
        let token = format!("github_pat_11{}_{}", f.mixed(&alnum(), 20), f.mixed(&alnum(), 59));
        out.push(pos(GithubToken, format!("-H \"Authorization: token {token}\""), &token));

        // GitLab tokens.
        let token = format!("glpat-{}", f.mixed(&base64url(), 20));
        out.push(pos(GitlabToken, format!("git remote set-url origin https://oauth2:{token}@gitlab.com/g/p.git"), &token));
        let token = format!("glpat-{}", f.mixed(&alnum(), 20));
        out.push(pos(GitlabToken, format!("the CI variable GL_TOKEN holds {token}"), &token));
        let token = format!("gldt-{}", f.mixed(&alnum(), 20));
        out.push(pos(GitlabToken, format!("deploy token {token} (read_registry)"), &token));
        // A file name: the body's `.` runs on into the extension.
        let token = format!("glpat-{}", f.mixed(&alnum(), 20));
        out.push(pos(GitlabToken, format!("notes/{token}.txt"), &token));

        // Slack tokens.
        let token = format!("xoxb-{}-{}-{}", f.mixed(DIGITS, 12), f.mixed(DIGITS, 13), f.mixed(&alnum(), 24));
        out.push(pos(SlackToken, format!("SLACK_BOT_TOKEN={token}"), &token));
        let token = format!("xoxp-{}-{}-{}-{}", f.mixed(DIGITS, 11), f.mixed(DIGITS, 11), f.mixed(DIGITS, 13), f.mixed(HEX, 32));
        out.push(pos(SlackToken, format!("user token {token} expires never"), &token));
        let token = format!("xapp-1-A{}-{}-{}", f.mixed(&format!("{UPPER}{DIGITS}"), 10), f.mixed(DIGITS, 13), f.mixed(HEX, 64));
        out.push(pos(SlackToken, format!("socket mode app token: {token}"), &token));

        // Slack webhook URLs.
        let path =
            format!("T{}/B{}/{}", f.mixed(&format!("{UPPER}{DIGITS}"), 8), f.mixed(&format!("{UPPER}{DIGITS}"), 10), f.mixed(&alnum(), 24));
        out.push(pos(SlackWebhookUrl, format!("curl -X POST https://hooks.slack.com/services/{path} -d @msg.json"), &path));
        let path = format!(
            "T{}/B{}/{}",
            f.mixed(&format!("{UPPER}{DIGITS}"), 10),
            f.mixed(&format!("{UPPER}{DIGITS}"), 11),
            f.mixed(&alnum(), 24)
        );
        out.push(pos(SlackWebhookUrl, format!("{{\"webhook\":\"https://hooks.slack.com/services/{path}\"}}"), &path));

        // Stripe live keys.
        let key = format!("sk_live_{}", f.mixed(&alnum(), 24));
        out.push(pos(StripeLiveKey, format!("STRIPE_SECRET_KEY={key}"), &key));
        let key = format!("rk_live_51{}", f.mixed(&alnum(), 97));
        out.push(pos(StripeLiveKey, format!("restricted key {key} for the billing job"), &key));

        // Google API keys.
        let key = format!("AIza{}", f.mixed(&base64url(), 35));
        out.push(pos(GoogleApiKey, format!("https://maps.googleapis.com/maps/api/js?key={key}&callback=init"), &key));
        let key = format!("AIza{}", f.mixed(&base64url(), 35));
        out.push(pos(GoogleApiKey, format!("GOOGLE_API_KEY: {key}"), &key));

        // OpenAI keys.
        let key = format!("sk-{}", f.mixed(&alnum(), 48));
        out.push(pos(OpenaiKey, format!("OPENAI_API_KEY={key}"), &key));
        let key = format!("sk-proj-{}", f.mixed(&base64url(), 156));
        out.push(pos(OpenaiKey, format!("client = OpenAI(api_key=\"{key}\")"), &key));
        let key = format!("sk-svcacct-{}", f.mixed(&base64url(), 120));
        out.push(pos(OpenaiKey, format!("the eval runner uses {key}"), &key));

        // Anthropic keys.
        let key = format!("sk-ant-api03-{}AA", f.mixed(&base64url(), 93));
        out.push(pos(AnthropicKey, format!("ANTHROPIC_API_KEY={key}"), &key));
        let key = format!("sk-ant-admin01-{}AA", f.mixed(&base64url(), 93));
        out.push(pos(AnthropicKey, format!("x-api-key: {key}"), &key));

        // npm tokens.
        let token = format!("npm_{}", f.mixed(&alnum(), 36));
        out.push(pos(NpmToken, format!("//registry.npmjs.org/:_authToken={token}"), &token));
        let token = format!("npm_{}", f.mixed(&alnum(), 36));
        out.push(pos(NpmToken, format!("NPM_TOKEN {token} publishes @acme/*"), &token));

        // PyPI tokens.
        let token = format!("pypi-AgEIcHlwaS5vcmc{}", f.mixed(&base64url(), 140));
        out.push(pos(PypiToken, format!("TWINE_PASSWORD={token}"), &token));
        let token = format!("pypi-AgENdGVzdC5weXBpLm9yZw{}", f.mixed(&base64url(), 120));
        out.push(pos(PypiToken, format!("[testpypi]\n  username = __token__\n  password = {token}"), &token));

        // Hugging Face tokens.
        let token = format!("hf_{}", f.mixed(&format!("{UPPER}{LOWER}"), 34));
        out.push(pos(HuggingfaceToken, format!("HF_TOKEN={token} python train.py"), &token));
        let token = format!("hf_{}", f.mixed(&format!("{UPPER}{LOWER}"), 34));
        out.push(pos(HuggingfaceToken, format!("login with {token} to pull the gated model"), &token));

        // JWTs.
        let jwt = |f: &mut Fake, claims: &str| {
            format!("{}.{}.{}", b64(br#"{"alg":"HS256","typ":"JWT"}"#, true), b64(claims.as_bytes(), true), f.mixed(&base64url(), 43))
        };
        let token = jwt(&mut f, r#"{"sub":"1234567890","name":"deploy-bot","iat":1716239022}"#);
        out.push(pos(Jwt, format!("curl -H 'Authorization: Bearer {token}' https://api.internal/v1"), &token));
        let token = jwt(&mut f, r#"{"iss":"https://auth.internal","aud":"ci","exp":1893456000}"#);
        out.push(pos(Jwt, format!("session cookie was {token}; rotate it"), &token));
        let token = jwt(&mut f, r#"{"role":"admin"}"#);
        out.push(pos(Jwt, format!("id_token={token}"), &token));

        // URLs with a password.
        let pw = f.mixed(&alnum(), 16);
        out.push(pos(UrlWithPassword, format!("DATABASE_URL postgres://app:{pw}@db.internal:5432/app"), &pw));
        let pw = f.mixed(&alnum(), 20);
        out.push(pos(UrlWithPassword, format!("redis://:{pw}@cache.internal:6379/0"), &pw));
        let pw = format!("{}-{}_{}", f.mixed(&alnum(), 6), f.mixed(&alnum(), 6), f.mixed(&alnum(), 4));
        out.push(pos(UrlWithPassword, format!("pip install --index-url https://deploy:{pw}@pypi.internal/simple pkg"), &pw));
        let pw = format!("{}%40{}", f.mixed(&alnum(), 8), f.mixed(&alnum(), 6));
        out.push(pos(UrlWithPassword, format!("amqp://worker:{pw}@mq.internal/vhost"), &pw));

        // HTTP Authorization credentials.
        let cred = b64(format!("deploy:{}", f.mixed(&alnum(), 18)).as_bytes(), false);
        out.push(pos(AuthorizationHeader, format!("curl -H 'Authorization: Basic {cred}' https://registry.internal"), &cred));
        let cred = f.mixed(&format!("{}._-", alnum()), 40);
        out.push(pos(AuthorizationHeader, format!("{{\"Authorization\": \"Bearer {cred}\"}}"), &cred));
        let cred = f.mixed(&alnum(), 32);
        out.push(pos(AuthorizationHeader, format!("send Bearer {cred} with each call"), &cred));
        let cred = f.mixed(&alnum(), 32);
        out.push(pos(AuthorizationHeader, format!("Proxy-Authorization: {cred}"), &cred));

        // Password, token and secret assignments with a long value.
        let v = f.mixed(&alnum(), 14);
        out.push(pos(PasswordAssignment, format!("password={v}"), &v));
        let v = f.mixed(&alnum(), 20);
        out.push(pos(PasswordAssignment, format!("DB_PASSWORD=\"{v}\""), &v));
        let v = f.mixed(&alnum(), 32);
        out.push(pos(PasswordAssignment, format!("client_secret: {v}"), &v));
        let v = f.mixed(HEX, 40);
        out.push(pos(PasswordAssignment, format!("{{\"auth_token\": \"{v}\"}}"), &v));
        let v = f.mixed(&alnum(), 12);
        out.push(pos(PasswordAssignment, format!("mysql -u app --password={v} app"), &v));
        let v = f.mixed(&alnum(), 16);
        out.push(pos(PasswordAssignment, format!("Server=db01;User Id=app;Password={v};Encrypt=true"), &v));
        let v = f.mixed(&alnum(), 24);
        out.push(pos(PasswordAssignment, format!("apiKey: '{v}'"), &v));
        let v = f.mixed(&alnum(), 10);
        out.push(pos(PasswordAssignment, format!("db_pwd = '{v}'"), &v));
        out.push(pos(PasswordAssignment, "passphrase = \"correct horse battery staple\"".into(), "correct horse battery staple"));
        let v = f.mixed(&alnum(), 18);
        out.push(pos(PasswordAssignment, format!("secret := \"{v}\""), &v));
        out.push(pos(PasswordAssignment, "PASSWORD: Hunter2Hunter2!".into(), "Hunter2Hunter2!"));
        let v = f.mixed(&alnum(), 30);
        out.push(pos(PasswordAssignment, format!("https://api.internal/export?format=csv&access_token={v}&page=2"), &v));
        let v = f.mixed(&alnum(), 64);
        out.push(pos(PasswordAssignment, format!("SECRET_KEY_BASE={v}"), &v));
        let v = f.mixed(&alnum(), 12);
        out.push(pos(PasswordAssignment, format!("'password' => '{v}',"), &v));

        // Oversize input: fails closed (nothing here to leak; the secret is the unscanned tail).
        out.push(Positive { kind: OversizeInput, text: "a".repeat(MAX_SCAN_BYTES + 1), secret: String::new() });
        let prose = "Rotate the deploy key before Friday; the runbook is in docs/ops.md. ";
        out.push(Positive { kind: OversizeInput, text: prose.repeat(MAX_SCAN_BYTES / prose.len() + 1), secret: String::new() });
        out
    }

    /// Ordinary engineering text that mentions secrets, each near one kind. None may match.
    fn negatives() -> Vec<(SecretKind, String)> {
        let mut f = Fake::new(2);
        let sha = f.pick(HEX, 40);
        let mut out: Vec<(SecretKind, String)> = vec![
            (PemPrivateKey, "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----".into()),
            (PemPrivateKey, "put the -----BEGIN CERTIFICATE----- block in ca.pem".into()),
            (PemPrivateKey, "grep the repo for 'BEGIN RSA PRIVATE KEY' before the release".into()),
            (PemPrivateKey, "the PEM private key lives in the vault, not in this repo".into()),
            (AwsAccessKeyId, "the AWS key id starts with AKIA".into()),
            (AwsAccessKeyId, "AKIAIOSFODNN7EXAMPLE is the key id from the AWS docs".into()),
            (AwsAccessKeyId, "role id AROAJQABLZS4A3QDU576Q shows up in CloudTrail".into()),
            (AwsAccessKeyId, "XAKIAJQABLZS4A3QDU576 is part of a longer word".into()),
            (AwsSecretAccessKey, format!("fixed in {sha}, see the PR")),
            (AwsSecretAccessKey, format!("key id AKIA plus commit {sha} near it")),
            (AwsSecretAccessKey, "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}".into()),
            (AwsSecretAccessKey, "aws_secret_access_key: <redacted>".into()),
            (AwsSecretAccessKey, "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into()),
            (GithubToken, "rotate the GitHub token before Friday".into()),
            (GithubToken, "classic tokens start with ghp_ and fine-grained ones with github_pat_".into()),
            (GithubToken, "the pattern ghp_[A-Za-z0-9]{36} matches classic tokens".into()),
            (GithubToken, format!("theghp_{} is inside a longer word", f.mixed(&alnum(), 36))),
            (GithubToken, "github_pat_tokens_expire_after_ninety_days_by_default_in_this_org_policy".into()),
            (GitlabToken, "GitLab personal access tokens start with glpat-".into()),
            (GitlabToken, "glpat-tokens-are-rotated-monthly-by-the-platform-team".into()),
            (GitlabToken, "GL_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx in the example".into()),
            (GitlabToken, "docs/glpat-xxxxxxxxxxxxxxxxxxxx.md shows the shape".into()),
            (SlackToken, "the bot uses an xoxb- token from the Slack app page".into()),
            (SlackToken, "SLACK_BOT_TOKEN=xoxb-your-bot-token-goes-here".into()),
            (SlackToken, "xoxp-1234 was truncated in the log".into()),
            (SlackWebhookUrl, "post alerts to hooks.slack.com/services/... through the webhook".into()),
            (SlackWebhookUrl, "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX".into()),
            (StripeLiveKey, "never commit sk_live_ keys; CI uses test mode".into()),
            (StripeLiveKey, format!("STRIPE_KEY=sk_test_{} in CI", f.mixed(&alnum(), 24))),
            (StripeLiveKey, format!("publishable key pk_live_{} goes in the page", f.mixed(&alnum(), 24))),
            (GoogleApiKey, "restrict the AIza key to the Maps API".into()),
            (GoogleApiKey, format!("truncated in the log: AIza{}", f.mixed(&alnum(), 20))),
            (OpenaiKey, "sk-learn".into()),
            (OpenaiKey, "pip install scikit-learn (people misspell it sk-learn)".into()),
            (OpenaiKey, "the OPENAI_API_KEY starts with sk- and lives in 1Password".into()),
            (OpenaiKey, "sk-proj-abc... was pasted truncated".into()),
            (OpenaiKey, "risk-assessment-for-the-q3-migration-of-the-payment-service".into()),
            (AnthropicKey, "Anthropic keys look like sk-ant-api03-... and go in the env".into()),
            (AnthropicKey, "ANTHROPIC_API_KEY=sk-ant-your-key-goes-here-for-local-testing".into()),
            (NpmToken, "npm_config_registry=https://registry.npmjs.org npm install".into()),
            (NpmToken, "npm_ tokens are granular now; create one per package".into()),
            (PypiToken, "upload with a pypi- token scoped to the project".into()),
            (PypiToken, "PyPI tokens start with pypi-AgEIcHlwaS5vcmc and are macaroons".into()),
            (HuggingfaceToken, "hf_hub_download caches the model under ~/.cache".into()),
            (HuggingfaceToken, "set HF_TOKEN to an hf_ token with read scope".into()),
            (Jwt, "the JWT header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 says HS256".into()),
            (Jwt, "paste the token (eyJ...) into jwt.io to read it".into()),
            (Jwt, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0 has no signature part".into()),
            (UrlWithPassword, "https://user@github.com/x".into()),
            (UrlWithPassword, "postgres://app:${DB_PASSWORD}@db.internal:5432/app".into()),
            (UrlWithPassword, "redis://:****@cache:6379".into()),
            (UrlWithPassword, "the general form is scheme://user:password@host".into()),
            (UrlWithPassword, "health check on http://[::1]:8080/health and ssh://git@github.com:22/org/repo".into()),
            (UrlWithPassword, "amqp://guest:guest@localhost:5672 is the broker default".into()),
            (AuthorizationHeader, "Bearer auth is configured in nginx".into()),
            (AuthorizationHeader, "curl -H 'Authorization: Bearer $TOKEN' https://api.internal".into()),
            (AuthorizationHeader, "send Authorization: Bearer <token> on every call".into()),
            (AuthorizationHeader, "Authorization header is missing on the retry path".into()),
            (AuthorizationHeader, "Bearer tokens-are-rotated-daily-by-the-cron-job".into()),
            (PasswordAssignment, "set password= in the env file".into()),
            (PasswordAssignment, "password: ${DB_PASSWORD}".into()),
            (PasswordAssignment, "Reset password: customer reported lockout".into()),
            (PasswordAssignment, "max_tokens=4096 for the summary call".into()),
            (PasswordAssignment, "api_key: <redacted>".into()),
            (PasswordAssignment, "password=changeme is the local default".into()),
            (PasswordAssignment, "secret_name=prod-db-credentials in the chart".into()),
            (PasswordAssignment, "PWD=/home/dev/work when the hook runs".into()),
            (PasswordAssignment, "token: rotated-2024-06 per the runbook".into()),
            (PasswordAssignment, "secret: base64-encoded in the manifest".into()),
            (PasswordAssignment, "password = config.database.password".into()),
            (PasswordAssignment, "password = os.getenv(\"DB_PASSWORD\")".into()),
            (PasswordAssignment, "TOKEN=YOUR_API_TOKEN_HERE".into()),
            (PasswordAssignment, "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}".into()),
            (PasswordAssignment, "token: ******** (masked in the UI)".into()),
            (PasswordAssignment, "new token => announce-in-channel".into()),
            (PasswordAssignment, "`password=`/`token=`/`secret=`-style assignments with a long value".into()),
            (PasswordAssignment, "let token = Literal::u8_unsuffixed(0);".into()),
            (PasswordAssignment, "    Token: PULONG64,".into()),
            (PasswordAssignment, "    WBEM_E_LOCAL_CREDENTIALS = 0x80041064,".into()),
            (PasswordAssignment, "pub const InheritPrivateKey: X509RequestInheritOptions = 3i32;".into()),
            (PasswordAssignment, "self.emit(alias, original_token=alias_token)".into()),
            (PasswordAssignment, "auth = dict(Email=credentials[0], Passwd=credentials[1])".into()),
            (PasswordAssignment, "backend: \"Backend\", private_key: \"_EllipticCurvePrivateKey\", data: bytes".into()),
            (PasswordAssignment, "proxy_password=self._socks_options[\"password\"],".into()),
            (PasswordAssignment, ".. _`RFC6749#Token`: https://tools.ietf.org/html/rfc6749#section-3.2".into()),
            (PasswordAssignment, "'pass': 'The \"pass\" statement'".into()),
            (OversizeInput, "a".repeat(MAX_SCAN_BYTES)),
            (OversizeInput, "Rotate the deploy key before Friday. ".repeat(MAX_SCAN_BYTES / 40)),
        ];
        // Ordinary engineering text with no particular kind in mind.
        for text in [
            "Wait on pr:482 then bump the token bucket size in the rate limiter",
            "09:00 standup; waits on person:security-lead for the key rotation sign-off",
            "{\"field\":\"title\",\"kind\":\"password_assignment\"}",
            "checksum = \"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
            "git log --oneline: 3f78685 Fix token refresh; c7be1ed Rotate keys",
            "uuid 123e4567-e89b-12d3-a456-426614174000 and base64 aGVsbG8gd29ybGQ=",
            "The secret: we never store secrets. The password: kept in the vault.",
            "ci green on the new token => rotate the old one",
            "mailto:ops@example.com and git@github.com:org/repo.git",
        ] {
            out.push((PasswordAssignment, text.to_owned()));
        }
        out
    }

    #[test]
    fn every_kind_has_two_positives_and_two_negatives() {
        let (positives, negatives) = (positives(), negatives());
        for &kind in SecretKind::ALL {
            let p = positives.iter().filter(|p| p.kind == kind).count();
            let n = negatives.iter().filter(|(k, _)| *k == kind).count();
            assert!(p >= 2 && n >= 2, "{kind:?}: {p} positives, {n} negatives");
        }
    }

    #[test]
    fn positives_are_found_with_their_kind() {
        for p in positives() {
            assert_eq!(scan(&p.text), Some(p.kind), "{:?} not found in a {}-byte text", p.kind, p.text.len());
        }
    }

    #[test]
    fn positives_are_found_json_encoded() {
        // The fold scans event data that may still be JSON text.
        for p in positives().into_iter().filter(|p| p.kind != OversizeInput) {
            let json = serde_json::to_string(&p.text).unwrap();
            assert_eq!(scan(&json), Some(p.kind), "{:?} not found JSON-encoded", p.kind);
        }
    }

    #[test]
    fn negatives_pass() {
        for (near, text) in negatives() {
            let found = scan(&text);
            assert_eq!(found, None, "near-miss for {near:?} matched as {found:?}: {:?}", &text[..text.len().min(120)]);
        }
    }

    #[test]
    fn a_finding_never_carries_the_secret() {
        for p in positives() {
            let kind = scan(&p.text).expect("positive");
            let shown = format!(
                "{kind:?} {kind} {} {} {} {:?}",
                kind.name(),
                kind.describe(),
                serde_json::to_string(&kind).unwrap(),
                scan(&p.text)
            );
            let secret = p.secret.as_bytes();
            for window in secret.windows(8) {
                let window = std::str::from_utf8(window).unwrap();
                assert!(!shown.contains(window), "{:?}: the finding shows part of the secret", p.kind);
            }
        }
    }

    #[test]
    fn kinds_are_named_consistently() {
        let mut names = std::collections::HashSet::new();
        for &kind in SecretKind::ALL {
            let name = kind.name();
            assert!(names.insert(name), "duplicate name {name}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{name}");
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<SecretKind>(&format!("\"{name}\"")).unwrap(), kind);
            assert_eq!(kind.to_string(), name);
            assert!(!kind.describe().is_empty());
        }
        assert_eq!(names.len(), SecretKind::ALL.len());
        let mut order = SCAN_ORDER.to_vec();
        let mut all = SecretKind::ALL.to_vec();
        order.sort_by_key(|k| k.name());
        all.sort_by_key(|k| k.name());
        assert_eq!(order, all, "SCAN_ORDER must hold every kind once");
    }

    #[test]
    fn a_refusal_record_is_not_itself_a_secret() {
        // The reader scans every event again, the refusal records included.
        for &kind in SecretKind::ALL {
            for text in [
                kind.name().to_owned(),
                kind.describe().to_owned(),
                format!("{{\"field\":\"title\",\"kind\":\"{}\"}}", kind.name()),
                format!("refused: the title holds {} ({kind}); nothing was written", kind.describe()),
            ] {
                assert_eq!(scan(&text), None, "{text}");
            }
        }
    }

    #[test]
    fn the_first_kind_in_scan_order_wins() {
        let mut f = Fake::new(3);
        let ghp = format!("ghp_{}", f.mixed(&alnum(), 36));
        assert_eq!(scan(&format!("password={ghp}")), Some(GithubToken));
        let key = f.mixed(&base64(), 40);
        let id = format!("AKIA{}", f.mixed(BASE32, 16));
        assert_eq!(scan(&format!("{id}:{key} and password=hunter2hunter2")), Some(AwsSecretAccessKey));
        assert_eq!(scan("password=hunter2hunter2 then -----BEGIN EC PRIVATE KEY-----"), Some(PemPrivateKey));
    }

    #[test]
    fn size_limit_edges() {
        let mut f = Fake::new(4);
        let token = format!("ghp_{}", f.mixed(&alnum(), 36));

        // At the limit: scanned whole, nothing found.
        assert_eq!(scan(&"x".repeat(MAX_SCAN_BYTES)), None);
        assert_eq!(scan(&"x ".repeat(MAX_SCAN_BYTES / 2)), None);
        // One past: fails closed.
        assert_eq!(scan(&"x".repeat(MAX_SCAN_BYTES + 1)), Some(OversizeInput));
        // A secret ending exactly at the limit is found and named.
        let at_end = format!("{}{token}", " ".repeat(MAX_SCAN_BYTES - token.len()));
        assert_eq!(at_end.len(), MAX_SCAN_BYTES);
        assert_eq!(scan(&at_end), Some(GithubToken));
        // A secret inside the scanned part of an oversize text is named by its kind.
        assert_eq!(scan(&format!("{token} {}", "x".repeat(MAX_SCAN_BYTES))), Some(GithubToken));
        // A secret past the limit is not scanned, but the text is still refused.
        assert_eq!(scan(&format!("{} {token}", " ".repeat(MAX_SCAN_BYTES))), Some(OversizeInput));
        // The cut may fall inside a multibyte character: still no panic, still refused.
        let wide = format!("x{}", "é".repeat(MAX_SCAN_BYTES / 2));
        assert_eq!(wide.len(), MAX_SCAN_BYTES + 1);
        assert_eq!(scan(&wide), Some(OversizeInput));
        assert_eq!(scan(&"é".repeat(MAX_SCAN_BYTES / 2)), None);
        assert_eq!(scan(""), None);
    }

    /// One of each invisible class (zero-width and directional marks, the word joiner
    /// and invisible operators, the BOM, the soft hyphen, bidi embeddings and overrides, bidi
    /// isolates), and the other default-ignorables (a variation selector, a tag character).
    const SPLITTERS: &[char] = &[
        '\u{200B}',
        '\u{200C}',
        '\u{200D}',
        '\u{200E}',
        '\u{200F}',
        '\u{2060}',
        '\u{2061}',
        '\u{2062}',
        '\u{2063}',
        '\u{2064}',
        '\u{FEFF}',
        '\u{00AD}',
        '\u{202A}',
        '\u{202B}',
        '\u{202C}',
        '\u{202D}',
        '\u{202E}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}',
        '\u{FE0F}',
        '\u{E0041}',
        '\u{034F}',
    ];

    #[test]
    fn a_secret_split_by_format_characters_is_found() {
        for p in positives().into_iter().filter(|p| p.kind != OversizeInput) {
            let secret = &p.secret;
            let cut = secret.char_indices().map(|(i, _)| i).nth(secret.chars().count() / 2).unwrap();
            for &c in SPLITTERS {
                let split = format!("{}{c}{}", &secret[..cut], &secret[cut..]);
                let text = p.text.replacen(secret.as_str(), &split, 1);
                assert_eq!(scan(&text), Some(p.kind), "{:?} split by U+{:04X} was not found", p.kind, c as u32);
                let every_byte: String = text.chars().flat_map(|ch| [ch, c]).collect();
                let found = scan(&every_byte);
                assert!(
                    found.is_some_and(|k| k.rank() <= p.kind.rank()),
                    "{:?} with U+{:04X} after every char: {found:?}",
                    p.kind,
                    c as u32
                );
            }
        }
        assert_eq!(scan("pass\u{200B}word=hunter2hunter2"), Some(PasswordAssignment), "a key name split the same way");
    }

    #[test]
    fn format_characters_are_the_unicode_set_and_change_nothing_else() {
        assert!(FORMAT_CHARACTERS.windows(2).all(|w| w[0].1 < w[1].0), "sorted, apart");
        assert!(FORMAT_CHARACTERS.iter().all(|&(lo, hi)| lo <= hi));
        for &c in SPLITTERS {
            assert!(is_format_character(c), "U+{:04X}", c as u32);
        }
        for c in ['a', ' ', '\n', '\u{00AC}', '\u{00AE}', '\u{200A}', '\u{2010}', '\u{2028}', 'é', '✓', '\u{1F600}', '\u{E1000}'] {
            assert!(!is_format_character(c), "U+{:04X}", c as u32);
        }
        // Removing them never lets text past the size limit or finds what is not there.
        assert_eq!(scan(&format!("{}\u{200B}", "x".repeat(MAX_SCAN_BYTES))), Some(OversizeInput));
        assert_eq!(scan(&"x\u{200B}".repeat(MAX_SCAN_BYTES / 4)), None);
        for (near, text) in negatives().into_iter().filter(|(k, _)| *k != OversizeInput) {
            let spaced: String = text.chars().flat_map(|ch| [ch, '\u{200B}']).collect();
            assert_eq!(scan(&spaced), None, "near-miss for {near:?} matched once spaced out");
        }
    }

    #[test]
    fn truncated_positives_never_panic() {
        for p in positives().into_iter().filter(|p| p.kind != OversizeInput) {
            for (cut, _) in p.text.char_indices() {
                let _ = scan(&p.text[..cut]);
                let _ = scan(&p.text[cut..]);
            }
        }
    }

    /// Random text over an alphabet rich in the scanner's trigger bytes.
    fn noise(f: &mut Fake, max_len: u64) -> String {
        let chars: Vec<char> = format!("{} :=@/._-\"'\\{{}}<>$%*\n\tAKIAeyJghp_sk-xoxbé✓", alnum()).chars().collect();
        let len = (f.next() % max_len) as usize;
        (0..len).map(|_| chars[(f.next() % chars.len() as u64) as usize]).collect()
    }

    #[test]
    fn random_text_never_panics() {
        let mut f = Fake::new(5);
        for _ in 0..5000 {
            let text = noise(&mut f, 300);
            assert_eq!(scan(&text), scan(&text));
        }
    }

    #[test]
    fn noise_around_a_secret_never_hides_it() {
        // On lines of their own, with random text around: the secret's kind or an earlier one.
        let mut f = Fake::new(6);
        for p in positives().into_iter().filter(|p| p.kind != OversizeInput) {
            for _ in 0..20 {
                let text = format!("{}\n{}\n{}", noise(&mut f, 120), p.text, noise(&mut f, 120));
                let found = scan(&text);
                assert!(found.is_some_and(|k| k.rank() <= p.kind.rank()), "{:?} hidden by noise: found {found:?}", p.kind);
            }
        }
    }

    /// The bytes `scan` reads in `text`, by the work counter.
    fn work(text: &str) -> u64 {
        EXAMINED.with(|c| c.set(0));
        let _ = scan(text);
        EXAMINED.with(|c| c.get())
    }

    /// Each, repeated to fill the input, would cost quadratic work if a matcher rescanned a
    /// run per candidate.
    const PATHOLOGICAL_UNITS: [&str; 13] =
        ["sk-", "eyJa-", "glpat-", "=", ":", "-", "a:", "x=", "://", "-----BEGIN ", "Bearer ", "@", "AKIA"];
    /// Bytes read per input byte: a few passes. A matcher rereading a capped run per
    /// candidate reads up to `MAX_TOKEN_BYTES` per byte.
    const MAX_WORK_PER_BYTE: u64 = 8;
    /// From n/4 to n, linear work grows 4x and quadratic 16x; this allows for the ends.
    const LINEAR_GROWTH: std::ops::RangeInclusive<f64> = 3.75..=4.25;
    /// The n probed: its quarter is far above every cap on a look, so a rescan up to a cap
    /// shows as work per byte and an uncapped one as growth, and a quadratic matcher fails
    /// in seconds.
    const LINEAR_PROBE_BYTES: usize = 1 << 16;

    #[test]
    fn pathological_input_stays_linear() {
        // Counted, not timed: the bound holds whatever the machine's load.
        let n = LINEAR_PROBE_BYTES;
        let longest_look = [MAX_TOKEN_BYTES, MAX_VALUE_BYTES, MAX_AUTHORITY_BYTES, 2 * AWS_PAIR_WINDOW_BYTES + AWS_KEY_ID_BYTES];
        assert!(longest_look.iter().all(|&cap| n / 4 >= 16 * cap) && n <= MAX_SCAN_BYTES);
        for unit in PATHOLOGICAL_UNITS {
            let quarter_text = unit.repeat(n / 4 / unit.len());
            let whole_text = unit.repeat(n / unit.len());
            let (quarter, whole) = (work(&quarter_text), work(&whole_text));
            // Every byte is read at least once, so the counter sees the scan.
            assert!(whole >= whole_text.len() as u64, "{unit:?}: counted {whole} for {} bytes", whole_text.len());
            let growth = whole as f64 / quarter as f64;
            assert!(LINEAR_GROWTH.contains(&growth), "{unit:?}: n/4 read {quarter}, n read {whole}: {growth:.2}x, not linear");
            for (text, counted) in [(&quarter_text, quarter), (&whole_text, whole)] {
                let most = MAX_WORK_PER_BYTE * text.len() as u64;
                assert!(counted <= most, "{unit:?}: {counted} bytes read for {} (at most {most})", text.len());
            }
        }
    }

    /// Both sides of each bound: at it nothing is cut, one past it the text is cut inside
    /// it and ends in the mark; a byte bound never splits a character.
    #[test]
    fn a_cut_after_the_scan_keeps_to_its_bound_on_both_sides() {
        assert_eq!(cut_after_scan("abcde", Bound::Chars(5)).unwrap(), "abcde");
        assert_eq!(cut_after_scan("abcdef", Bound::Chars(5)).unwrap(), "abcd…");
        assert_eq!(cut_after_scan("ééé", Bound::Chars(3)).unwrap(), "ééé");
        assert_eq!(cut_after_scan("éééé", Bound::Chars(3)).unwrap(), "éé…");
        assert_eq!(cut_after_scan("abcdef", Bound::Bytes(6)).unwrap(), "abcdef");
        let cut = cut_after_scan("abcdefg", Bound::Bytes(6)).unwrap();
        assert_eq!((cut.as_str(), cut.len()), ("abc…", 6));
        assert_eq!(cut_after_scan("éééé", Bound::Bytes(6)).unwrap(), "é…", "no character is split");
        assert_eq!(cut_after_scan("abcd", Bound::Bytes(2)).unwrap(), "", "no room for the mark");
        assert_eq!(cut_after_scan("abcd", Bound::Chars(0)).unwrap(), "");
        assert_eq!(cut_after_scan("abcde", Bound::CharsUnmarked(5)).unwrap(), "abcde");
        assert_eq!(cut_after_scan("abcdef", Bound::CharsUnmarked(5)).unwrap(), "abcde");
    }

    /// A token across the cut is seen whole: the text is left out, not cut into a prefix
    /// the scanner no longer knows.
    #[test]
    fn a_token_across_the_cut_is_flagged_whole() {
        let token = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
        let text = format!("{} {token} more", "w".repeat(180));
        assert_eq!(scan(&cut_to(&text, Bound::Chars(200))), None, "the cut alone hides it");
        assert_eq!(cut_after_scan(&text, Bound::Chars(200)), Err(GithubToken));
        assert_eq!(cut_after_scan(&text, Bound::Bytes(200)), Err(GithubToken));
        assert_eq!(one_line_after_scan(&text, Bound::Chars(200)), Err(GithubToken));
        // A control character inside the token hides it from the text as it arrived; the
        // line it becomes is scanned whole too.
        let split = format!("{} {}\u{1}{} more", "w".repeat(180), &token[..20], &token[20..]);
        assert_eq!(scan(&split), None);
        assert_eq!(one_line_after_scan(&split, Bound::Chars(200)), Err(GithubToken));
        assert_eq!(one_line_after_scan("a\n\t b\u{7}c", Bound::Chars(200)).unwrap(), "a bc");
    }
}
