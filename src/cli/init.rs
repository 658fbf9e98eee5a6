//! `abcd init`: makes the repository managed. Idempotent: a second run changes nothing.

use std::io::Write;

use crate::places;

/// The line `abcd init` keeps in `.git/info/exclude`.
const EXCLUDE_LINE: &str = "/.abcd/.work.local/";

pub fn run() -> anyhow::Result<i32> {
    let cwd = std::env::current_dir()?;
    let (root, main_root) = places::working_copy_root(&cwd)?;
    let abcd_dir = main_root.join(".abcd");
    let created = !abcd_dir.is_dir();
    std::fs::create_dir_all(&abcd_dir)?;
    let tier = root.join(places::LOCAL_TIER);
    std::fs::create_dir_all(&tier)?;
    let exclude = git_common_dir(&main_root).join("info").join("exclude");
    let excluded = std::fs::read_to_string(&exclude).unwrap_or_default().lines().any(|l| l.trim() == EXCLUDE_LINE);
    if !excluded {
        std::fs::create_dir_all(exclude.parent().expect("exclude has a folder"))?;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&exclude)?;
        let existing = std::fs::metadata(&exclude)?.len();
        let lead = if existing > 0 && !std::fs::read(&exclude)?.ends_with(b"\n") { "\n" } else { "" };
        writeln!(f, "{lead}{EXCLUDE_LINE}")?;
    }
    if created {
        println!("abcd now manages {}", main_root.display());
    } else {
        println!("{} was already managed by abcd", main_root.display());
    }
    println!("local tier: {} (kept out of git by {})", tier.display(), exclude.display());
    println!("next: `abcd checklist add \"<title>\"`");
    Ok(super::EXIT_OK)
}

/// The main repository's `.git` folder.
fn git_common_dir(main_root: &std::path::Path) -> std::path::PathBuf {
    main_root.join(".git")
}
