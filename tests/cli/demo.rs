//! `abcd demo`, the README's main job: exits 0, tells the whole story, leaves nothing.

use std::process::Command;

#[test]
fn the_demo_tells_the_story_and_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("real-home-must-stay-untouched");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_abcd")).arg("demo").env("ABCD_HOME", &home).env("TMPDIR", &scratch).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for beat in [
        "abcd init",
        "additionalContext for the model",
        "torn tail",
        "Skip the release notes",
        "skipped: title carries a GitHub token",
        "CORRUPT at seq",
        "repaired the journal (corruption)",
        "DISAGREES",
        "verdict: ok",
    ] {
        assert!(stdout.contains(beat), "the demo does not show `{beat}`:\n{stdout}");
    }
    assert!(!stdout.contains("Zk3x9QvT") || stdout.matches("Zk3x9QvT").count() == 1, "the token appears only where the demo types it");
    assert!(!home.exists(), "the demo touched ABCD_HOME");
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0, "the demo left files behind");
}

/// The demo's stdout, run with a temporary folder whose path has a space in it.
fn demo_in_a_folder_with_a_space() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("with space");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_abcd"))
        .arg("demo")
        .env("ABCD_HOME", tmp.path().join("home"))
        .env("TMPDIR", &scratch)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The words `sh` makes of a command line, without running it.
fn shell_words(command: &str) -> Vec<String> {
    let out = Command::new("sh").args(["-c", &format!("set -- {command}; printf '%s\\0' \"$@\""), "sh"]).output().unwrap();
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().split('\0').filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// Issue 19: every command the demo prints is one a shell takes as it is: it parses, a
/// title or a path with a space stays one word, and no `<placeholder>` stands in a command.
#[test]
fn every_printed_command_can_be_pasted() {
    let stdout = demo_in_a_folder_with_a_space();
    let commands: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("   $ ")).collect();
    assert!(commands.len() > 20, "{stdout}");
    for command in &commands {
        let syntax = Command::new("sh").args(["-n", "-c", command]).output().unwrap();
        assert!(syntax.status.success(), "{command}: {}", String::from_utf8_lossy(&syntax.stderr));
        let placeholder = command.find('<').is_some_and(|at| {
            command[at..]
                .find('>')
                .is_some_and(|end| command[at + 1..at + end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ' '))
        });
        assert!(!placeholder, "a placeholder in {command}");
    }
    let add = commands.iter().find(|c| c.starts_with("abcd checklist add") && c.contains("login")).unwrap();
    assert_eq!(shell_words(add)[..4], ["abcd", "checklist", "add", "Fix the login bug"]);
    let launch = commands.iter().find(|c| c.starts_with("abcd launch")).unwrap();
    let words = shell_words(launch);
    let receipt = &words[words.iter().position(|w| w == "--receipt").unwrap() + 1];
    assert!(receipt.contains("with space/") && receipt.ends_with("demo-receipt.json"), "the receipt path is one word: {words:?}");
    assert_eq!(words[words.len() - 3..words.len() - 1], ["sh", "-c"], "{words:?}");
    let next = stdout.lines().find(|l| l.contains("next: ")).unwrap();
    assert!(!next.contains("<title>"), "{next}");
}

/// Issue 19: what a new reader would misread is said where it happens.
#[test]
fn the_demo_explains_what_would_be_misread() {
    let stdout = demo_in_a_folder_with_a_space();
    let at = |beat: &str| stdout.find(beat).unwrap_or_else(|| panic!("the demo does not say `{beat}`:\n{stdout}"));
    // After the repair, the item is back to working: the quarantined line was its change.
    assert!(at("a bit flips in seq 8, the line of step 5 that marked item 1, Fix the login bug, done") < at("CORRUPT at seq 8"));
    let why = at("item 1 is working again: the change that marked it done was the damaged line, now in quarantine/");
    assert!(at("salvaged: moved") < why, "said after the repair");
    assert!(at("lost seqs: 8") < why, "the repair names the lost seq");
    // The rollback is shown (the item vanished) before it is named.
    let put_back = at("(the journal file is put back to the copy taken just before that add");
    let named = at("DISAGREES");
    let listing = &stdout[put_back..named];
    assert!(listing.contains("$ abcd checklist\n") && !listing.contains("Tag the release"), "{listing}");
    assert!(listing.contains("item 4 is gone"), "{listing}");
    // Past the host's cap, abcd's answer is not called a blocked stop.
    let cap = at("the host's cap. At the next one the host ends the turn whatever abcd answers");
    let after = &stdout[cap..at("13. The person is back")];
    assert!(!after.contains("the stop is blocked"), "{after}");
    assert!(after.contains("but the host, past its cap, ends the turn anyway"), "{after}");
}
