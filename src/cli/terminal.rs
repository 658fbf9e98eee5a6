//! Text on its way to a terminal. Values abcd prints come from people, agents, payloads and
//! journals, and a terminal acts on some characters instead of showing them: C0 and C1
//! controls (escape sequences, carriage returns, bells), DEL, the bidi controls that reorder
//! what follows (U+202E makes `abc` read backwards) and the line and paragraph separators.
//! [`terminal_safe`] writes each of those as a visible `\uXXXX`. It is the one place that
//! decides; `write_out` and `write_err` (every `out!`, `outln!`, `errln!`) pass all they
//! print through it, and so do the writers that bypass them (`abcd replay`, a hook's reply).
//!
//! The form is JSON's own escape, so the same pass over JSON output keeps it valid and
//! decoding to the same values (serde already escapes C0 inside strings, and the rest only
//! ever appear inside strings). A backslash in the text is left as it is, so `\u202e` typed
//! by hand reads the same as an escaped U+202E: the text is made safe, not reversible.
//! Other invisible characters (zero-width spaces and joiners, variation selectors) are
//! printed as they are: they neither move the cursor nor reorder text, and emoji need them.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether a newline in the text is the text's own (a block of lines) or must show as an
/// escape (a value printed on one line, which a newline would let forge the next).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    One,
    Many,
}

/// Whether a terminal would act on `c` (or reorder the text after it) rather than draw it.
fn acts_on_terminal(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}'
        | '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// `text` with every character a terminal acts on written as `\uXXXX` (lower-case hex),
/// newlines kept with [`Lines::Many`]; borrowed when there is nothing to escape.
pub fn terminal_safe(text: &str, lines: Lines) -> Cow<'_, str> {
    let escaped = |c: char| acts_on_terminal(c) && !(c == '\n' && lines == Lines::Many);
    let Some(first) = text.find(escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if escaped(c) {
            write!(out, "\\u{:04x}", c as u32).expect("writing to a String cannot fail");
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_bidi_and_separators_show_as_escapes() {
        let cases = [
            ("\u{202E}evil", "\\u202eevil"),
            ("a\u{1b}[31mred", "a\\u001b[31mred"),
            ("bell\u{7}", "bell\\u0007"),
            ("cr\rlf", "cr\\u000dlf"),
            ("tab\there", "tab\\u0009here"),
            ("del\u{7F}", "del\\u007f"),
            ("c1\u{85}\u{9B}", "c1\\u0085\\u009b"),
            ("\u{061C}\u{200E}\u{200F}", "\\u061c\\u200e\\u200f"),
            ("\u{202A}\u{202B}\u{202C}\u{202D}", "\\u202a\\u202b\\u202c\\u202d"),
            ("\u{2066}\u{2067}\u{2068}\u{2069}", "\\u2066\\u2067\\u2068\\u2069"),
            ("\u{2028}\u{2029}", "\\u2028\\u2029"),
        ];
        for (text, shown) in cases {
            assert_eq!(terminal_safe(text, Lines::Many), shown, "{text:?}");
            assert_eq!(terminal_safe(text, Lines::One), shown, "{text:?}");
        }
    }

    #[test]
    fn a_newline_is_kept_only_in_a_block_of_lines() {
        assert_eq!(terminal_safe("one\ntwo\n", Lines::Many), "one\ntwo\n");
        assert_eq!(terminal_safe("one\ntwo\n", Lines::One), "one\\u000atwo\\u000a");
    }

    #[test]
    fn everything_else_is_left_as_it_is_and_borrowed() {
        for text in
            ["", "plain", "— é ✓ 日本 👨\u{200D}👩\u{200D}👧 ❤\u{FE0F}", "zero\u{200B}width", "back\\slash \\u202e", "\u{A0}\u{AD}\u{2010}"]
        {
            assert!(matches!(terminal_safe(text, Lines::One), Cow::Borrowed(t) if t == text), "{text:?}");
        }
    }

    #[test]
    fn json_stays_valid_and_decodes_to_the_same_values() {
        let value = serde_json::json!({"title": "a\u{202E}b\u{7F}c\u{85}d\u{2028}e\n\u{1b}f\\\u{2066}"});
        for json in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let safe = terminal_safe(&json, Lines::Many);
            assert!(!safe.chars().any(|c| acts_on_terminal(c) && c != '\n'), "{safe}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
        }
    }
}
