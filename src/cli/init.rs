//! `abcd init [--check]`: parses, calls `command::init`, prints.

use std::path::Path;

use clap::Args;

use super::shell_word;

use crate::command::CommandError;
use crate::command::init::{self, InGit, Installed, StatusLineInstall};
use crate::places::PlaceError;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Only report what is installed and what is missing (exit 1 when something is)
    #[arg(long)]
    check: bool,
}

pub fn run(args: &InitArgs) -> anyhow::Result<i32> {
    let at = init::places_of(&crate::places::Place::here()?).map_err(outside_a_repository)?;
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
    let Installed { created, tier, hook, already_installed, settings_relative, in_git, status_line } = init::install(&at)?;
    outln!(
        "{}",
        if created {
            format!("abcd now manages {}", at.main_root.display())
        } else {
            format!("{} was already managed by abcd", at.main_root.display())
        }
    );
    outln!("local tier: {} (kept out of git by {})", tier.display(), at.exclude.display());
    let runs = if hook.from_path {
        format!("running `abcd` from PATH, which is {}", hook.exe.display())
    } else {
        format!("running {}, since no `abcd` on PATH is this binary", hook.exe.display())
    };
    outln!(
        "hooks: {} ({} events, {runs}){}",
        at.settings.display(),
        init::hook_events(),
        if already_installed { ", already installed" } else { "" }
    );
    outln!("{}", commit_advice(&at.main_root, &settings_relative, &in_git, hook.from_path));
    outln!("{}", status_line_said(&status_line));
    outln!("next: write the plan down, one item at a time, e.g. `abcd checklist add \"Fix the login bug\"`");
    Ok(super::EXIT_OK)
}

/// `init` itself is what the general hint names next, so outside a repository it says only
/// how to get one.
fn outside_a_repository(e: CommandError) -> anyhow::Error {
    match e {
        CommandError::Place(PlaceError::NotInWorkingCopy { cwd }) => CommandError::from(
            crate::refusal::Refusal::new(
                crate::refusal::RefusalKind::NotInRepository,
                "init",
                format!("{} is not inside a git repository", cwd.display()),
            )
            .instead("cd into one, or make this folder one with `git init`, and run `abcd init` again"),
        )
        .into(),
        other => other.into(),
    }
}

/// Whether to commit the settings file, and the command that does it. A lane runs in a git
/// worktree of its own, which holds only committed files, so the hooks reach a lane's agent
/// only from a committed settings file.
fn commit_advice(root: &Path, settings: &Path, in_git: &InGit, from_path: bool) -> String {
    let name = settings.display();
    let git = format!("git -C {}", shell_word(&root.display().to_string()));
    let file = shell_word(&name.to_string());
    // `commit -- FILE` commits that file alone, whatever else is staged.
    let commit = |add: &str| format!("{git} add {add}-- {file} && {git} commit -m 'Install abcd hooks' -- {file}");
    let portable = if from_path {
        ""
    } else {
        " (it names this binary's path: put abcd on PATH and run `abcd init` again first, so it names no folder of this machine)"
    };
    match in_git {
        InGit::Committed => format!("{name} is committed as it is, so a lane's worktree has the hooks too"),
        InGit::Uncommitted => format!(
            "commit {name}: a lane runs in a git worktree of its own, which holds only committed files, so the hooks reach a lane's agent only once it is committed{portable}: {}",
            commit("")
        ),
        InGit::Ignored => format!(
            "git ignores {name}, so a lane's worktree (which holds only committed files) never has the hooks; to give lanes the hooks, commit it anyway{portable}: {}",
            commit("-f ")
        ),
        InGit::Unknown(why) => format!(
            "whether {name} is committed could not be read ({why}); a lane's worktree holds only committed files, so the hooks reach a lane's agent only once it is committed{portable}: {}",
            commit("")
        ),
    }
}

/// What `init` says of the status line.
fn status_line_said(done: &StatusLineInstall) -> String {
    match done {
        StatusLineInstall::Installed { path, command } => {
            format!("status line: {} runs `{command}` (the uncommitted layer, kept out of git)", path.display())
        }
        StatusLineInstall::Present(f) if f.abcds => {
            format!("status line: {} ({}) already runs abcd's (`{}`)", f.layer.describe(), f.path.display(), f.command)
        }
        StatusLineInstall::Present(f) => format!(
            "status line: left as it is: {} ({}) set their own (`{}`); abcd installs its own only where no settings file sets one (`abcd status-line` prints the line for a command of yours)",
            f.layer.describe(),
            f.path.display(),
            f.command
        ),
        StatusLineInstall::Unknown { path, why } => format!(
            "status line: not installed: {} cannot be read ({why}), so whether it sets one is unknown; fix it and run `abcd init` again",
            path.display()
        ),
    }
}
