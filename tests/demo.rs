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
