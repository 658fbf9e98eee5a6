//! The mirror's journal kind: `mirror.line_redacted`, a person's decision that the push
//! carries a redaction record in the place of a line its secret scan flags
//! (journal-format/MIRROR.md §11). Written into the journal holding the line; read by the
//! push (`mirror::build`), not folded into any state.

use serde::{Deserialize, Serialize};

/// `data` of `mirror.line_redacted`: the line of `seq` whose hash is `hash` (64 lowercase
/// hex) is mirrored as a redaction record; `secret` names the kind the scan found in it
/// (a `SecretKind` name, never the value).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineRedacted {
    pub seq: u64,
    pub hash: String,
    pub secret: String,
}
