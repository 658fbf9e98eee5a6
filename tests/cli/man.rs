//! `abcd man VERB` through the binary (issue 19): the pages the main page lists are there
//! to print, and an unknown one is refused with the list.

use std::process::{Command, Output};

fn abcd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_abcd")).args(args).output().expect("abcd runs")
}

#[test]
fn abcd_man_checklist_prints_the_page_the_main_page_lists() {
    let main = String::from_utf8(abcd(&["man"]).stdout).unwrap();
    assert!(main.contains(".TP\nabcd\\-checklist(1)\n"), "the main page lists it:\n{main}");
    let out = abcd(&["man", "checklist"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(&format!(".TH abcd-checklist 1  \"abcd {}\"", env!("CARGO_PKG_VERSION"))), "{page}");
    assert!(page.contains("abcd\\-checklist \\- The working copy\\*(Aqs checklist"), "{page}");
    assert!(page.contains("\\fBabcd checklist\\fR"), "the synopsis is the command as typed: {page}");
    assert!(page.contains(".TP\nabcd\\-checklist\\-add(1)\n"), "it lists its subcommands' pages: {page}");
    let add = String::from_utf8(abcd(&["man", "checklist", "add"]).stdout).unwrap();
    assert!(add.contains(".TH abcd-checklist-add 1 ") && add.contains("\\-\\-next\\-look"), "{add}");
}

#[test]
fn an_unknown_verb_is_refused_with_the_pages_there_are() {
    let out = abcd(&["man", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(
        said.starts_with(
            "abcd: refused [not-found]: man: abcd has no man page for `nonsense`; `abcd man` takes nothing (the main page) or one of: journal,"
        ),
        "{said}"
    );
    assert!(said.contains(", checklist, checklist add,"), "{said}");
}
