//! `abcd init [--check]`: parses, calls `command::init`, prints.

use clap::Args;

use crate::command::CommandError;
use crate::command::init::{self, Installed};
use crate::places::PlaceError;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Only report what is installed and what is missing (exit 1 when something is)
    #[arg(long)]
    check: bool,
}

pub fn run(args: &InitArgs) -> anyhow::Result<i32> {
    let at = init::places_of(&std::env::current_dir()?).map_err(outside_a_repository)?;
    if args.check {
        let missing = init::check(&at, &mut |ok, what| outln!("{} {what}", if ok { "ok     " } else { "MISSING" }))?;
        return Ok(if missing == 0 {
            outln!("everything is installed");
            super::EXIT_OK
        } else {
            outln!("{missing} missing; run `abcd init` to install");
            super::EXIT_FAILURE
        });
    }
    let Installed { created, tier, exe, already_installed } = init::install(&at)?;
    outln!(
        "{}",
        if created {
            format!("abcd now manages {}", at.main_root.display())
        } else {
            format!("{} was already managed by abcd", at.main_root.display())
        }
    );
    outln!("local tier: {} (kept out of git by {})", tier.display(), at.exclude.display());
    outln!(
        "hooks: {} ({} events, running {exe}){}",
        at.settings.display(),
        init::hook_events(),
        if already_installed { ", already installed" } else { "" }
    );
    outln!("next: `abcd checklist add \"<title>\"`");
    Ok(super::EXIT_OK)
}

/// `init` itself is what the general hint names next, so outside a repository it says only
/// how to get one.
fn outside_a_repository(e: CommandError) -> anyhow::Error {
    match e {
        CommandError::Place(PlaceError::NotInWorkingCopy { cwd }) => CommandError::Refused(format!(
            "{} is not inside a git repository; cd into one, or make this folder one with `git init`, and run `abcd init` again",
            cwd.display()
        ))
        .into(),
        other => other.into(),
    }
}
