//! Deterministic journals for tests: every line is built by
//! `abcd::journal::format::encode_line` with the times, pids and sessions the caller
//! fixes, so a generated journal is the same bytes on every run and every machine.
#![allow(dead_code)]

use abcd::event::{JournalOpened, Scope};
use abcd::journal::format::{self, Actor, Hash, NewEvent};
use abcd::journal::scan::Head;
use serde_json::Value;

/// The tool every generated line names: fixed, so a version bump does not change bytes.
pub const TOOL: &str = "abcd/0.1.0";

/// A time written the journal's way (`2026-12-01T09:00:00.000Z`).
pub fn at(text: &str) -> jiff::Timestamp {
    text.parse().unwrap_or_else(|e| panic!("`{text}` is not a time: {e}"))
}

/// `t` moved by `ms` milliseconds.
pub fn plus_ms(t: jiff::Timestamp, ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(t.as_millisecond() + ms).expect("in range")
}

pub fn actor(session: Option<&str>, pid: u32) -> Actor {
    Actor { session: session.map(str::to_string), pid, tool: TOOL.into() }
}

/// A journal under construction: whole lines, each with its hash.
#[derive(Clone, Debug)]
pub struct Chain {
    lines: Vec<Vec<u8>>,
    hashes: Vec<Hash>,
}

impl Chain {
    /// A journal holding only its genesis, written as abcd writes it: no session, the
    /// creating process's pid.
    pub fn open(journal_id: &str, scope: Scope, time: jiff::Timestamp, pid: u32) -> Chain {
        let data = serde_json::to_value(JournalOpened { journal_id: journal_id.into(), scope }).expect("plain data");
        let event = NewEvent { kind: format::GENESIS_KIND.into(), actor: actor(None, pid), data };
        let (line, hash) = format::encode_line(0, time, &event, &Hash::genesis_prev()).expect("the genesis encodes");
        Chain { lines: vec![line], hashes: vec![hash] }
    }

    pub fn next_seq(&self) -> u64 {
        self.lines.len() as u64
    }

    pub fn last_seq(&self) -> u64 {
        self.next_seq() - 1
    }

    /// The hash of the last line.
    pub fn head_hash(&self) -> Hash {
        *self.hashes.last().expect("a chain starts with its genesis")
    }

    /// The last line as a reader's head: seq, hash and where it sits.
    pub fn head(&self) -> Head {
        self.head_of(self.lines.len())
    }

    /// The head of the journal made of the first `n` lines.
    pub fn head_of(&self, n: usize) -> Head {
        assert!(n >= 1 && n <= self.lines.len(), "a head needs at least the genesis");
        let offset = self.offset(n - 1);
        Head { seq: n as u64 - 1, hash: self.hashes[n - 1], offset, end: offset + self.lines[n - 1].len() as u64 }
    }

    /// The line the next event would be, without adding it.
    pub fn encode(&self, time: jiff::Timestamp, actor: &Actor, kind: &str, data: Value) -> (Vec<u8>, Hash) {
        let event = NewEvent { kind: kind.into(), actor: actor.clone(), data };
        format::encode_line(self.next_seq(), time, &event, &self.head_hash()).expect("the event encodes")
    }

    pub fn push(&mut self, time: jiff::Timestamp, actor: &Actor, kind: &str, data: Value) -> &mut Chain {
        let (line, hash) = self.encode(time, actor, kind, data);
        self.push_line(line, hash);
        self
    }

    /// Adds a line built elsewhere (a forged one, say); its hash is what the next line chains onto.
    pub fn push_line(&mut self, line: Vec<u8>, hash: Hash) {
        self.lines.push(line);
        self.hashes.push(hash);
    }

    /// Puts `line`, a gap record standing in for the lost line `index`, in its place; the
    /// chain hash there stays the lost line's, which the line after it names as prev.
    pub fn stand_in(&mut self, index: usize, line: Vec<u8>) {
        self.lines[index] = line;
    }

    /// Keeps the first `n` lines: the journal as a cut at a line boundary leaves it.
    pub fn truncate(&mut self, n: usize) {
        assert!(n >= 1, "a chain keeps its genesis");
        self.lines.truncate(n);
        self.hashes.truncate(n);
    }

    pub fn lines(&self) -> &[Vec<u8>] {
        &self.lines
    }

    /// The byte offset of line `index`.
    pub fn offset(&self, index: usize) -> u64 {
        self.lines[..index].iter().map(|l| l.len() as u64).sum()
    }

    /// The first `n` lines, as a file.
    pub fn prefix(&self, n: usize) -> Vec<u8> {
        self.lines[..n].concat()
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.lines.concat()
    }
}
