//! `abcd man [VERB…]`: one man page per command, named as clap_mangen names them
//! (`abcd-run-start(1)` for `abcd run start`). The main page's SUBCOMMANDS section lists
//! the verbs' pages, and a verb's page lists its subcommands'; each is printed by naming
//! it. Hidden commands have no page.

use clap::CommandFactory;

use super::{Cli, EXIT_OK};
use crate::command::CommandError;

/// The longest page request echoed back in a refusal.
const ECHO_MAX_CHARS: usize = 64;

/// The command tree as the pages show it: without clap's `help` subcommand (it has no page
/// of its own), built so each subcommand knows its page name and its usage line.
fn tree() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn page_name(cmd: &clap::Command) -> &str {
    cmd.get_display_name().unwrap_or(cmd.get_name())
}

/// Every page's name and command: the main page, then each verb's pages depth first, in
/// the order the pages list them.
fn pages(cmd: &clap::Command) -> Vec<(String, clap::Command)> {
    let mut all = vec![(page_name(cmd).to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        all.extend(pages(sub));
    }
    all
}

/// The page `words` ask for: joined by `-` (`run start` is `run-start`); the page's own
/// name (`abcd-run-start`, `abcd-run-start(1)`) is taken too.
fn wanted(words: &[String]) -> String {
    let joined = words.join("-");
    let joined = joined.strip_suffix("(1)").unwrap_or(&joined);
    match joined {
        "" | "abcd" => "abcd".to_string(),
        page if page.starts_with("abcd-") => page.to_string(),
        verb => format!("abcd-{verb}"),
    }
}

/// The roff of the page `words` name, or a refusal listing the pages there are.
pub(super) fn page(words: &[String]) -> Result<String, CommandError> {
    let tree = tree();
    let all = pages(&tree);
    let wanted = wanted(words);
    let Some((_, cmd)) = all.iter().find(|(name, _)| *name == wanted) else {
        let asked = words.join(" ");
        let shown = asked.chars().count() <= ECHO_MAX_CHARS
            && asked.chars().all(|c| c.is_ascii_alphanumeric() || " -()".contains(c))
            && crate::secrets::scan(&asked).is_none();
        let verbs: Vec<String> = all.iter().skip(1).map(|(name, _)| name.trim_start_matches("abcd-").replace('-', " ")).collect();
        return Err(crate::refusal::Refusal::new(
            crate::refusal::RefusalKind::NotFound,
            "man",
            format!("abcd has no man page for {}", if shown { format!("`{asked}`") } else { "that".to_string() }),
        )
        .instead(format!("`abcd man` takes nothing (the main page) or one of: {}", verbs.join(", ")))
        .into());
    };
    let mut roff = Vec::new();
    // Every page's footer names abcd and its version, as the main page's does.
    let source = format!("abcd {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(cmd.clone()).source(source).render(&mut roff).map_err(CommandError::failed)?;
    String::from_utf8(roff).map_err(CommandError::failed)
}

pub fn run(words: &[String]) -> anyhow::Result<i32> {
    out!("{}", page(words)?);
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    /// The pages a page's SUBCOMMANDS section names, as `abcd-run-start`.
    fn listed(roff: &str) -> Vec<String> {
        let lines: Vec<&str> = roff.lines().collect();
        lines.windows(2).filter(|w| w[0] == ".TP" && w[1].ends_with("(1)")).map(|w| w[1].replace("\\-", "-").replace("(1)", "")).collect()
    }

    fn title(roff: &str) -> String {
        roff.lines().find(|l| l.starts_with(".TH ")).unwrap().split(' ').nth(1).unwrap().replace("\\-", "-")
    }

    /// Every page a page lists can be printed, and is the page it names; so every page is
    /// reached from the main one.
    #[test]
    fn every_page_a_page_lists_is_printed() {
        let mut todo = vec!["abcd".to_string()];
        let mut seen = vec![];
        while let Some(name) = todo.pop() {
            let roff = page(std::slice::from_ref(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(title(&roff), name);
            assert!(roff.contains(&format!(" \"abcd {}\"", env!("CARGO_PKG_VERSION"))), "{name}: the footer names abcd");
            todo.extend(listed(&roff));
            seen.push(name);
        }
        for expected in ["abcd-checklist", "abcd-checklist-add", "abcd-run-start", "abcd-loop-drive", "abcd-journal-verify", "abcd-man"] {
            assert!(seen.iter().any(|s| s == expected), "{expected} in {seen:?}");
        }
        assert!(!seen.iter().any(|s| s.contains("help") || s.contains("__")), "no page for help or hidden commands: {seen:?}");
        assert_eq!(seen.len(), pages(&tree()).len());
    }

    #[test]
    fn a_page_is_named_by_its_words_or_its_own_name() {
        for w in [&["run", "start"][..], &["run-start"], &["abcd-run-start"], &["abcd-run-start(1)"]] {
            assert_eq!(title(&page(&words(w)).unwrap()), "abcd-run-start", "{w:?}");
        }
        assert_eq!(title(&page(&[]).unwrap()), "abcd");
        let checklist = page(&words(&["checklist"])).unwrap();
        assert!(checklist.contains("\\fBabcd checklist\\fR"), "the synopsis is the command as typed");
    }

    #[test]
    fn an_unknown_page_is_refused_with_the_list() {
        let e = page(&words(&["chekclist"])).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "refused [not-found]: man: abcd has no man page for `chekclist`; `abcd man` takes nothing (the main page) or one of: journal, journal verify,"
            ),
            "{e}"
        );
        assert!(e.contains(", checklist, checklist add,") && e.contains(", run start,"), "{e}");
        assert!(!e.contains("__") && !e.contains("help"), "{e}");
        let secret = format!("ghp_{}", "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d");
        let e = page(&words(&[&secret])).unwrap_err().to_string();
        assert!(e.contains("no man page for that;") && !e.contains("ghp_"), "{e}");
    }

    /// Every command's long help, as `--help` prints it, with the command line that asks for it.
    fn every_help() -> Vec<(String, String)> {
        let tree = tree();
        pages(&tree)
            .into_iter()
            .map(|(_, mut cmd)| {
                let name = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string();
                (name, cmd.render_long_help().to_string())
            })
            .collect()
    }

    /// Every option and positional of every command a person sees has a description.
    #[test]
    fn every_argument_has_help_text() {
        let mut missing = vec![];
        for (_, cmd) in pages(&tree()) {
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{} {}", cmd.get_bin_name().unwrap_or(cmd.get_name()), arg.get_id()));
                }
            }
            if cmd.get_about().is_none() && cmd.get_long_about().is_none() {
                missing.push(format!("{} (the command itself)", cmd.get_bin_name().unwrap_or(cmd.get_name())));
            }
        }
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }

    /// Words of abcd's insides a person has no use for in help: where a seed or a fold is
    /// meant, the help says what the person sees (a built-in prompt, the files derived
    /// from the journal).
    const INTERNAL_WORDS: &[&str] =
        &["seed", "tick", "ticks", "fold", "folds", "folded", "folding", "projection", "projections", "genesis"];

    #[test]
    fn help_never_says_an_internal_word() {
        for (command, help) in every_help() {
            // Option names are what a person types; only the prose is read.
            let prose: String =
                help.split_whitespace().filter(|w| !w.starts_with("--") && !w.starts_with("[--")).collect::<Vec<_>>().join(" ");
            for word in prose.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase) {
                assert!(!INTERNAL_WORDS.contains(&word.as_str()), "`{command} --help` says {word:?}:\n{help}");
            }
        }
    }
}
