//! The away mode is the person's act (issue 35; seed 003, fix round 1 (a)): no agent sets
//! or ends it. This is the first of two choke points: the pre-tool-use rule reads a shell
//! command the way a shell splits it and refuses every route it can see to `abcd mode
//! autonomous|back` (the binary by any path, `cargo run -- mode`, through `sh -c`, `env`,
//! `eval`, `xargs`, a script file it names), and every shell write into abcd's own files
//! (the one predicate, `command::own_file`: the away store is in the home store; a lane's
//! source files stay the lane agent's). The second is the verb itself, which refuses when
//! a host's tool started its process (`command::away::refuse_host_tool`); it catches what
//! no reading of a command line can (a copy of the binary under another name, `python
//! -c`). docs/decisions.md, "Issue 35: the mode is the person's act", lists what each can
//! and cannot see.

use std::path::{Path, PathBuf};

use crate::away::refusals::RefusedAction;
use crate::command::own_file::{OwnFile, abcd_own_file};

/// A command longer than this is not read word by word: it is refused whole when it names
/// `abcd` and `mode` anywhere (a reading cut short must not let a route through).
pub const COMMAND_MAX_BYTES: usize = 64 * 1024;
/// How deep `sh -c`, `eval`, substitutions and script files are followed; deeper nesting
/// that names `abcd` and `mode` is refused whole.
pub const NESTING_MAX: usize = 4;
/// A script file the command runs is read up to this many bytes; a longer one that names
/// `abcd` and `mode` is refused whole.
pub const SCRIPT_MAX_BYTES: u64 = 64 * 1024;
/// The `abcd mode` actions that set or end the mode.
pub const MODE_ACTIONS: [&str; 2] = ["autonomous", "back"];

/// What a command does that only the person may.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// It runs `abcd mode autonomous` or `abcd mode back` (the action named).
    ModeVerb(String),
    /// It runs `abcd decide --answer`: the answer to a trade-off is the person's, and the
    /// verb's own guard reads an environment the command can clear (`env -u CLAUDECODE`).
    AnswerVerb,
    /// It writes, moves over or removes abcd's own file at this path.
    OwnFileWrite(PathBuf, OwnFile),
    /// It names `abcd` and `mode` where the reading could not follow it (too long, too
    /// deep, or a script file that cannot be read whole).
    Unreadable,
}

impl Refused {
    /// The refusal's words: what was refused, why, and what to do instead. The command
    /// itself is never echoed (it may carry a secret).
    pub fn words(&self) -> String {
        const INSTEAD: &str = "Only the person sets or ends the away mode; queue what you need from them with `abcd mode queue '<step>'` and record your own decisions with `abcd decide`.";
        match self {
            Refused::ModeVerb(action) => {
                format!("abcd refuses this command: it runs `abcd mode {action}`, which only the person may run. {INSTEAD}")
            }
            Refused::AnswerVerb => "abcd refuses this command: it runs `abcd decide --answer`, and only the person answers a trade-off (in a terminal of their own). Record your own decisions with `abcd decide` (without --answer) and queue what you need from the person with `abcd mode queue '<step>'`.".to_string(),
            Refused::OwnFileWrite(path, own) => {
                format!("abcd refuses this command: it writes {} ({}). {} {INSTEAD}", path.display(), own.why(), own.instead())
            }
            Refused::Unreadable => format!(
                "abcd refuses this command: it names `abcd` and `mode` in a form too long or too deeply nested to read, so it could set or end the away mode. {INSTEAD}"
            ),
        }
    }
}

/// Where the command runs and how its words expand: the hook's folder, abcd's home store,
/// and the environment the shell would expand `$HOME` and `$ABCD_HOME` from.
pub struct ShellPlace<'a> {
    pub cwd: &'a Path,
    pub home_store: &'a Path,
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

/// The first thing `command` does that only the person may, if any.
pub fn refusal(command: &str, place: &ShellPlace<'_>) -> Option<Refused> {
    check(command, place, 0)
}

fn names_mode(text: &str) -> bool {
    text.contains("abcd") && text.contains("mode")
}

fn check(command: &str, place: &ShellPlace<'_>, depth: usize) -> Option<Refused> {
    if command.len() > COMMAND_MAX_BYTES || depth > NESTING_MAX {
        return names_mode(command).then_some(Refused::Unreadable);
    }
    let lexed = lex(command);
    for nested in &lexed.nested {
        if let Some(r) = check(nested, place, depth + 1) {
            return Some(r);
        }
    }
    for simple in split_simple(&lexed.tokens) {
        if let Some(r) = check_simple(&simple, place, depth) {
            return Some(r);
        }
    }
    None
}

/// One token of a command line as a shell splits it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    /// `;`, `&`, `|`, `&&`, `||`, `(`, `)`, a line feed: ends a simple command.
    Separator,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, with an optional descriptor before it: the next word
    /// is written.
    WriteRedirect,
    /// `<`, `<<`, `<<<`, `<&`, `>&`: the next word is read or duplicated, never written.
    OtherRedirect,
}

struct Lexed {
    tokens: Vec<Token>,
    /// The bodies of `$(…)` and backquotes, each a command of its own.
    nested: Vec<String>,
}

/// Splits like a POSIX shell: quotes group, a backslash escapes, operators separate;
/// substitutions are taken out whole (their text stays in the word, their command is read
/// on its own).
fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut nested = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() && matches!(chars[i + 1], '"' | '\\' | '$' | '`') {
                        word.push(chars[i + 1]);
                        i += 2;
                    } else if let Some((body, next)) = substitution(&chars, i) {
                        nested.push(body.clone());
                        word.push_str(&body);
                        i = next;
                    } else {
                        word.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            '\\' => {
                in_word = true;
                if let Some(&n) = chars.get(i + 1)
                    && n != '\n'
                {
                    word.push(n);
                }
                i += 2;
            }
            ' ' | '\t' => {
                flush(&mut word, &mut in_word, &mut tokens);
                i += 1;
            }
            '\n' | ';' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Separator);
                i += 1;
            }
            '|' | '&' => {
                flush(&mut word, &mut in_word, &mut tokens);
                if c == '&' && chars.get(i + 1) == Some(&'>') {
                    tokens.push(Token::WriteRedirect);
                    i += if chars.get(i + 2) == Some(&'>') { 3 } else { 2 };
                } else {
                    tokens.push(Token::Separator);
                    i += if chars.get(i + 1) == Some(&c) { 2 } else { 1 };
                }
            }
            '>' | '<' => {
                // A descriptor right before it (`2>`) belongs to the redirect.
                if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut tokens);
                let next = chars.get(i + 1).copied();
                if c == '>' && next == Some('&') {
                    tokens.push(Token::OtherRedirect);
                    i += 2;
                } else if c == '>' {
                    tokens.push(Token::WriteRedirect);
                    i += if matches!(next, Some('>') | Some('|')) { 2 } else { 1 };
                } else {
                    tokens.push(Token::OtherRedirect);
                    i += 1;
                    while matches!(chars.get(i), Some('<') | Some('&')) {
                        i += 1;
                    }
                }
            }
            '$' | '`' => match substitution(&chars, i) {
                Some((body, next)) => {
                    in_word = true;
                    nested.push(body.clone());
                    word.push_str(&body);
                    i = next;
                }
                None => {
                    in_word = true;
                    word.push(c);
                    i += 1;
                }
            },
            _ => {
                in_word = true;
                word.push(c);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut tokens);
    Lexed { tokens, nested }
}

/// A `$(…)` or backquoted substitution starting at `at`: its body and the index after it.
fn substitution(chars: &[char], at: usize) -> Option<(String, usize)> {
    if chars.get(at) == Some(&'`') {
        let end = chars[at + 1..].iter().position(|&c| c == '`')? + at + 1;
        return Some((chars[at + 1..end].iter().collect(), end + 1));
    }
    if chars.get(at) != Some(&'$') || chars.get(at + 1) != Some(&'(') {
        return None;
    }
    let mut depth = 0usize;
    for (j, &c) in chars.iter().enumerate().skip(at + 1) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some((chars[at + 2..j].iter().collect(), j + 1));
                }
            }
            _ => {}
        }
    }
    // Unclosed: the rest is the body.
    Some((chars[at + 2..].iter().collect(), chars.len()))
}

/// A simple command: its words, and the words its redirects write.
struct Simple {
    words: Vec<String>,
    written: Vec<String>,
}

fn split_simple(tokens: &[Token]) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut current = Simple { words: Vec::new(), written: Vec::new() };
    let mut iter = tokens.iter().peekable();
    while let Some(t) = iter.next() {
        match t {
            Token::Word(w) => current.words.push(w.clone()),
            Token::Separator => out.push(std::mem::replace(&mut current, Simple { words: Vec::new(), written: Vec::new() })),
            Token::WriteRedirect => {
                if let Some(Token::Word(w)) = iter.peek() {
                    current.written.push(w.clone());
                    iter.next();
                }
            }
            Token::OtherRedirect => {
                if let Some(Token::Word(_)) = iter.peek() {
                    iter.next();
                }
            }
        }
    }
    out.push(current);
    out
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "ash"];
/// Programs that run the rest of their words as a command, after their own options.
const WRAPPERS: [&str; 9] = ["exec", "command", "nohup", "time", "nice", "sudo", "timeout", "xargs", "stdbuf"];
/// Programs whose every non-option word is a file they write or remove.
const WRITE_ALL: [&str; 5] = ["tee", "rm", "truncate", "shred", "touch"];
/// Programs whose last non-option word is the file they write.
const WRITE_LAST: [&str; 5] = ["cp", "mv", "install", "ln", "rsync"];

fn check_simple(simple: &Simple, place: &ShellPlace<'_>, depth: usize) -> Option<Refused> {
    for target in &simple.written {
        if let Some(r) = own_file_write(target, place) {
            return Some(r);
        }
    }
    let mut words: &[String] = &simple.words;
    // Assignments before the program, and the wrappers that run the rest as a command.
    loop {
        while words.first().is_some_and(|w| is_assignment(w)) {
            words = &words[1..];
        }
        let program = words.first()?;
        let name = base_name(program);
        if name == "env" {
            let mut rest = &words[1..];
            while let Some(w) = rest.first() {
                if w == "-S" || w == "--split-string" {
                    return rest.get(1).and_then(|s| check(s, place, depth + 1));
                }
                if let Some(s) = w.strip_prefix("--split-string=").or_else(|| w.strip_prefix("-S")).filter(|s| !s.is_empty()) {
                    return check(s, place, depth + 1);
                }
                if w == "-u" || w == "--unset" || w == "-C" || w == "--chdir" {
                    rest = rest.get(2..).unwrap_or(&[]);
                } else if w.starts_with('-') || is_assignment(w) {
                    rest = &rest[1..];
                } else {
                    break;
                }
            }
            words = rest;
            continue;
        }
        if WRAPPERS.contains(&name) {
            // Their options are skipped, and so is a value that is a number or a
            // duration (`nice -n 5`, `timeout 10s`), never a program's name.
            let mut rest = &words[1..];
            while let Some(w) = rest.first() {
                let number_like = w.chars().next().is_some_and(|c| c.is_ascii_digit());
                if w.starts_with('-') || number_like {
                    rest = &rest[1..];
                } else {
                    break;
                }
            }
            words = rest;
            continue;
        }
        break;
    }
    let program = words.first()?;
    let name = base_name(program);
    let args = &words[1..];
    if name == "eval" {
        return check(&args.join(" "), place, depth + 1);
    }
    if SHELLS.contains(&name) {
        // `-c SCRIPT`, `-lc SCRIPT`, `-ec SCRIPT`: the first word after the option cluster
        // holding `c` is the script.
        if let Some(at) = args.iter().position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c')) {
            return args.get(at + 1).and_then(|script| check(script, place, depth + 1));
        }
        let file = args.iter().find(|a| !a.starts_with('-'))?;
        return script_file(file, place, depth);
    }
    if name == "source" || name == "." {
        return args.first().and_then(|file| script_file(file, place, depth));
    }
    if name == "abcd" {
        return verb_refused(args);
    }
    if name == "cargo" && args.iter().any(|a| a == "run") {
        let after = args.iter().position(|a| a == "--").map_or(&[][..], |at| &args[at + 1..]);
        return verb_refused(after);
    }
    if name == "dd" {
        return args.iter().filter_map(|a| a.strip_prefix("of=")).find_map(|t| own_file_write(t, place));
    }
    if name == "sed" || name == "perl" {
        let in_place = args
            .iter()
            .any(|a| a.starts_with("-i") || a == "--in-place" || (a.starts_with('-') && !a.starts_with("--") && a.contains('i')));
        if in_place {
            return args.iter().filter(|a| !a.starts_with('-')).find_map(|t| own_file_write(t, place));
        }
        return None;
    }
    let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if WRITE_ALL.contains(&name) {
        return operands.iter().find_map(|t| own_file_write(t, place));
    }
    if WRITE_LAST.contains(&name) && operands.len() >= 2 {
        return operands.last().and_then(|t| own_file_write(t, place));
    }
    // A program named by a path is read when it is a script (`#!`): a binary is no
    // command line, and reading one on every call would cost the hook for nothing.
    if program.contains('/') && starts_with_shebang(program, place) {
        return script_file(program, place, depth);
    }
    None
}

/// What of abcd's arguments only the person may run: `mode autonomous|back`, or
/// `decide --answer`.
fn verb_refused(args: &[String]) -> Option<Refused> {
    mode_action(args).map(Refused::ModeVerb).or_else(|| answers(args).then_some(Refused::AnswerVerb))
}

/// `decide … --answer` among abcd's arguments (flags before the verb skipped).
fn answers(args: &[String]) -> bool {
    args.iter().find(|a| !a.starts_with('-')).is_some_and(|verb| verb == "decide")
        && args.iter().any(|a| a == "--answer" || a.starts_with("--answer="))
}

/// `mode autonomous|back` among abcd's arguments (flags before it skipped): the action.
fn mode_action(args: &[String]) -> Option<String> {
    let mut plain = args.iter().filter(|a| !a.starts_with('-'));
    if plain.next().map(String::as_str) != Some("mode") {
        return None;
    }
    let action = plain.next()?;
    MODE_ACTIONS.iter().find(|m| *m == action).map(|m| m.to_string())
}

/// Whether the file a word names starts with `#!`.
fn starts_with_shebang(word: &str, place: &ShellPlace<'_>) -> bool {
    const SHEBANG: &[u8] = b"#!";
    run_path(word, place)
        .is_some_and(|path| crate::platform::fs::read_regular(&path, SHEBANG.len() as u64).is_ok_and(|head| head == SHEBANG))
}

/// The file a word names for the shell to run, relative to where the command runs.
fn run_path(word: &str, place: &ShellPlace<'_>) -> Option<PathBuf> {
    let path = expand(word, place)?;
    Some(if path.is_absolute() { path } else { place.cwd.join(path) })
}

/// A script file the command runs: read and checked as a command of its own; one that
/// cannot be read whole and names `abcd` and `mode` is refused.
fn script_file(word: &str, place: &ShellPlace<'_>, depth: usize) -> Option<Refused> {
    let path = run_path(word, place)?;
    // A path that is no readable regular file runs nothing this reading could follow.
    let bytes = crate::platform::fs::read_regular(&path, SCRIPT_MAX_BYTES + 1).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    if bytes.len() as u64 > SCRIPT_MAX_BYTES {
        return names_mode(&text).then_some(Refused::Unreadable);
    }
    check(&text, place, depth + 1)
}

/// A written word that names abcd's own file.
fn own_file_write(word: &str, place: &ShellPlace<'_>) -> Option<Refused> {
    let path = expand(word, place)?;
    let target = crate::command::own_file::resolve(place.cwd, &path);
    abcd_own_file(&target, place.home_store).map(|own| Refused::OwnFileWrite(target, own))
}

/// The word as a path, with `~`, `$HOME` and `$ABCD_HOME` expanded as the shell would; a
/// word holding any other expansion cannot be known here and is no path (docs say so).
fn expand(word: &str, place: &ShellPlace<'_>) -> Option<PathBuf> {
    let mut text = word.to_string();
    if text == "~" || text.starts_with("~/") {
        text = format!("{}{}", (place.var)("HOME")?, &text[1..]);
    }
    for name in ["ABCD_HOME", "HOME"] {
        for form in [format!("${{{name}}}"), format!("${name}")] {
            if text.contains(&form) {
                let value = match name {
                    "ABCD_HOME" => (place.var)(name).unwrap_or_else(|| place.home_store.display().to_string()),
                    _ => (place.var)(name)?,
                };
                text = text.replace(&form, &value);
            }
        }
    }
    (!text.contains('$') && !text.contains('`') && !text.is_empty()).then(|| PathBuf::from(text))
}

/// What the shell rule refused, as the record names it; none for `abcd decide --answer`,
/// which sets or ends no mode (its verb's refusal is not recorded either).
pub fn action_of(refused: &Refused) -> Option<RefusedAction> {
    match refused {
        Refused::ModeVerb(a) => Some(RefusedAction::of_mode_verb(a)),
        Refused::OwnFileWrite(..) => Some(RefusedAction::OwnFileWrite),
        Refused::Unreadable => Some(RefusedAction::Unreadable),
        Refused::AnswerVerb => None,
    }
}
