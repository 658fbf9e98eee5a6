//! A JSON document's values located in its text, and edits made as text splices, so a file a
//! person wrote keeps every byte abcd does not change: their spacing, key order and number
//! spellings. Parsing for meaning is serde_json's; this only finds where each value sits in
//! text serde_json already accepted.

use std::ops::Range;

/// A value and where it sits in the text (`span` covers the value itself, no whitespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub span: Range<usize>,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Scalar,
}

/// An object's member: its key (decoded) and where the key's opening quote is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub key_start: usize,
    pub value: Node,
}

impl Node {
    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn items(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(i) => Some(i),
            _ => None,
        }
    }

    /// The member named `key`; an object naming it twice is an error (which one a reader
    /// takes is the reader's choice, so abcd edits neither).
    pub fn member(&self, key: &str) -> Result<Option<&Member>, String> {
        let mut found = self.members().unwrap_or_default().iter().filter(|m| m.key == key);
        let first = found.next();
        if found.next().is_some() {
            return Err(format!("it names `{key}` twice"));
        }
        Ok(first)
    }
}

/// Parses `text`: an error (serde_json's words) when it is not JSON.
pub fn parse(text: &str) -> Result<Node, String> {
    serde_json::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())?;
    let mut s = Scanner { text: text.as_bytes(), at: 0 };
    s.skip_ws();
    s.value(text)
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while self.at < self.text.len() && matches!(self.text[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn peek(&self) -> u8 {
        self.text.get(self.at).copied().unwrap_or(0)
    }

    // The text is valid JSON (serde_json said so), so each step trusts what it finds.
    fn value(&mut self, src: &str) -> Result<Node, String> {
        let start = self.at;
        match self.peek() {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        b'}' => break,
                        b',' => self.at += 1,
                        b'"' => {
                            let key_start = self.at;
                            self.string();
                            let key = serde_json::from_str::<String>(&src[key_start..self.at]).map_err(|e| e.to_string())?;
                            self.skip_ws();
                            self.at += 1; // ':'
                            self.skip_ws();
                            let value = self.value(src)?;
                            members.push(Member { key, key_start, value });
                        }
                        other => return Err(format!("unexpected byte {other} at {}", self.at)),
                    }
                }
                self.at += 1;
                Ok(Node { span: start..self.at, kind: Kind::Object(members) })
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        b']' => break,
                        b',' => self.at += 1,
                        _ => items.push(self.value(src)?),
                    }
                }
                self.at += 1;
                Ok(Node { span: start..self.at, kind: Kind::Array(items) })
            }
            b'"' => {
                self.string();
                Ok(Node { span: start..self.at, kind: Kind::Scalar })
            }
            _ => {
                while self.at < self.text.len() && !matches!(self.text[self.at], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    self.at += 1;
                }
                Ok(Node { span: start..self.at, kind: Kind::Scalar })
            }
        }
    }

    fn string(&mut self) {
        self.at += 1;
        while self.at < self.text.len() {
            match self.text[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return;
                }
                _ => self.at += 1,
            }
        }
    }
}

/// One splice: the bytes in `range` become `with`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splice {
    pub range: Range<usize>,
    pub with: String,
}

/// `text` with every splice made; splices must not overlap.
pub fn apply(text: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| std::cmp::Reverse(s.range.start));
    let mut out = text.to_string();
    for s in splices {
        out.replace_range(s.range, &s.with);
    }
    out
}

/// The whitespace a new entry of a container takes before it: what stands before its last
/// entry (after the `[`, `{` or `,`), else a new line indented two past the container's line.
pub fn entry_lead(text: &str, container: &Node, last_entry_start: Option<usize>) -> String {
    match last_entry_start {
        Some(at) => {
            let before = &text[..at];
            let ws_from = before.trim_end_matches([' ', '\t', '\n', '\r']).len();
            text[ws_from..at].to_string()
        }
        None => format!("\n{}  ", line_indent(text, container.span.start)),
    }
}

/// The spaces and tabs that start the line holding byte `at`.
pub fn line_indent(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

/// Splices that append `entry` to a container (an array item, or an object member written
/// `"key": value`): after its last entry with a comma and that entry's lead, or first
/// inside an empty one. [`removals`] undoes it byte for byte.
pub fn append(text: &str, container: &Node, entry: &str) -> Splice {
    let last = match &container.kind {
        Kind::Object(m) => m.last().map(|m| (m.key_start, m.value.span.end)),
        Kind::Array(i) => i.last().map(|n| (n.span.start, n.span.end)),
        Kind::Scalar => None,
    };
    let lead = entry_lead(text, container, last.map(|l| l.0));
    match last {
        Some((_, end)) => Splice { range: end..end, with: format!(",{lead}{entry}") },
        None => {
            let at = container.span.start + 1;
            Splice { range: at..at, with: format!("{lead}{entry}") }
        }
    }
}

/// Splices that remove the entries at `drop` (indexes, ascending) from a container whose
/// entries span `entries` (start..end each). A run of entries after a kept one goes with
/// the comma before it; a run at the start goes with what follows it up to the next kept
/// entry; all of them go with everything between the brackets but what followed the last.
pub fn removals(container: &Node, entries: &[Range<usize>], drop: &[usize]) -> Vec<Splice> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < drop.len() {
        let first = drop[i];
        let mut last = first;
        while i + 1 < drop.len() && drop[i + 1] == last + 1 {
            i += 1;
            last = drop[i];
        }
        i += 1;
        let range = if first > 0 {
            entries[first - 1].end..entries[last].end
        } else if last + 1 < entries.len() {
            entries[first].start..entries[last + 1].start
        } else {
            container.span.start + 1..entries[last].end
        };
        out.push(Splice { range, with: String::new() });
    }
    out
}

/// Each member's extent: its key's quote to its value's end.
pub fn member_extents(members: &[Member]) -> Vec<Range<usize>> {
    members.iter().map(|m| m.key_start..m.value.span.end).collect()
}

/// Each item's extent.
pub fn item_extents(items: &[Node]) -> Vec<Range<usize>> {
    items.iter().map(|n| n.span.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_each_value_and_key() {
        let text = r#" { "a" : [1, "x\"]" ,{"b":null}], "c\u0064": true } "#;
        let root = parse(text).unwrap();
        assert_eq!(&text[root.span.clone()], r#"{ "a" : [1, "x\"]" ,{"b":null}], "c\u0064": true }"#);
        let m = root.members().unwrap();
        assert_eq!(m[1].key, "cd");
        assert_eq!(&text[m[1].key_start..m[1].value.span.end], r#""c\u0064": true"#);
        let items = m[0].value.items().unwrap();
        assert_eq!(items.iter().map(|n| &text[n.span.clone()]).collect::<Vec<_>>(), ["1", r#""x\"]""#, r#"{"b":null}"#]);
        assert!(parse("{").is_err());
        assert_eq!(parse(r#"{"a":1,"a":2}"#).unwrap().member("a").unwrap_err(), "it names `a` twice");
    }

    #[test]
    fn an_append_then_its_removal_gives_back_the_same_bytes() {
        for text in ["[]", "[ ]", "[\n  1,\n  2\n]", "[1]", "{}", "{\n    \"x\": 1\n}", "{\"x\":1,\"y\":[]}"] {
            let node = parse(text).unwrap();
            let entry = if node.items().is_some() { "9" } else { "\"k\": 9" };
            let grown = apply(text, vec![append(text, &node, entry)]);
            let after = parse(&grown).unwrap();
            let (extents, n) = match &after.kind {
                Kind::Array(i) => (item_extents(i), i.len()),
                Kind::Object(m) => (member_extents(m), m.len()),
                Kind::Scalar => unreachable!(),
            };
            assert_eq!(apply(&grown, removals(&after, &extents, &[n - 1])), text, "{grown}");
        }
    }

    #[test]
    fn removals_leave_valid_json_whichever_entries_go() {
        let text = "[1, 2, 3, 4]";
        let node = parse(text).unwrap();
        let ext = item_extents(node.items().unwrap());
        for (drop, want) in [(&[0][..], "[2, 3, 4]"), (&[0, 1], "[3, 4]"), (&[1, 3], "[1, 3]"), (&[0, 1, 2, 3], "[]"), (&[2, 3], "[1, 2]")]
        {
            assert_eq!(apply(text, removals(&node, &ext, drop)), want);
        }
    }
}
