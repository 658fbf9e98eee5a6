//! `abcd init [--check]`: parses, calls `command::init`, prints.

use std::path::Path;

use clap::Args;

use crate::host::Host;

use super::shell_word;

use crate::command::CommandError;
use crate::command::init::{self, InGit, Installed, StatusLineInstall};
use crate::command::init_codex::{self, HookState};
use crate::places::PlaceError;

#[derive(Args, Debug)]
#[command(after_help = "With --host codex, abcd's hooks go to the user layer, $CODEX_HOME/hooks.json ($CODEX_HOME is ~/.codex \
unless set), and their trust hashes to $CODEX_HOME/config.toml; every other setting, comment and hook in both is kept. \
Codex runs a hook only while its definition is trusted: run `abcd init --host codex` again after changing it, or after \
moving abcd when the hooks name its path. `abcd init --host codex --uninstall` takes out exactly what it added.")]
pub struct InitArgs {
    /// Only report what is installed and what is missing (exit 1 when something is)
    #[arg(long)]
    check: bool,
    /// The agent host to install for: claude (the repository's .claude/settings.json) or
    /// codex (the user's $CODEX_HOME/hooks.json, trusted in $CODEX_HOME/config.toml)
    #[arg(long, default_value = "claude", value_parser = super::host_arg())]
    host: Host,
    /// With --host codex: remove abcd's hooks and their trust (what init added), leaving
    /// every other byte of both files as it was
    #[arg(long, conflicts_with = "check")]
    uninstall: bool,
}

pub fn run(args: &InitArgs) -> anyhow::Result<i32> {
    match args.host {
        Host::Codex if args.check => return codex_check(),
        Host::Codex if args.uninstall => return codex_uninstall(),
        Host::Codex => return codex_install(),
        Host::Claude if args.uninstall => {
            return Err(CommandError::from(
                crate::refusal::Refusal::new(
                    crate::refusal::RefusalKind::BadValue,
                    "init --uninstall",
                    "it takes out abcd's Codex hooks; abcd's Claude hooks are in the repository's .claude/settings.json",
                )
                .instead(
                    "run `abcd init --host codex --uninstall`, or delete the handlers that run `abcd hook` from .claude/settings.json",
                ),
            )
            .into());
        }
        Host::Claude => {}
    }
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

/// `abcd init --host codex`: the hooks and their trust at the user layer, and, inside a
/// repository, the repository managed (the hooks do nothing outside a managed checkout).
fn codex_install() -> anyhow::Result<i32> {
    let places = init_codex::codex_places()?;
    let managed = match init::places_of(&crate::places::Place::here()?) {
        Ok(at) => Some((init::manage(&at)?, at)),
        Err(CommandError::Place(PlaceError::NotInWorkingCopy { .. })) => None,
        Err(e) => return Err(e.into()),
    };
    let done = init_codex::install(&places)?;
    match &managed {
        Some(((created, tier), at)) => {
            outln!(
                "{}",
                if *created {
                    format!("abcd now manages {}", at.main_root.display())
                } else {
                    format!("{} was already managed by abcd", at.main_root.display())
                }
            );
            outln!("local tier: {} (kept out of git by {})", tier.display(), at.exclude.display());
        }
        None => outln!("not inside a git repository: the hooks do nothing until `abcd init --host codex` runs inside one"),
    }
    let runs = if done.hook.from_path {
        format!("running `abcd` from PATH, which is {}", done.hook.exe.display())
    } else {
        format!("running {}, since no `abcd` on PATH is this binary", done.hook.exe.display())
    };
    outln!("codex hooks: {} ({} events, {runs}){}", places.hooks.display(), done.trusted.len(), said(done.hooks));
    outln!(
        "codex trust: {} trusts each of them{}; Codex skips a hook whose definition changes, so run `abcd init --host codex` again after changing one{}",
        places.config.display(),
        said(done.config),
        if done.hook.from_path { "" } else { " or moving this binary (or put abcd on PATH and run it again, so the hooks name no path)" }
    );
    outln!("check: `abcd init --host codex --check`; remove: `abcd init --host codex --uninstall`");
    Ok(super::EXIT_OK)
}

/// How a file's change is told after its name.
fn said(change: init_codex::Change) -> &'static str {
    match change {
        init_codex::Change::Unchanged => ", already as it is",
        init_codex::Change::Written => ", written",
        init_codex::Change::Created => ", made",
    }
}

fn codex_check() -> anyhow::Result<i32> {
    let places = init_codex::codex_places()?;
    let checked = init_codex::check(&places)?;
    let mut bad = 0;
    for c in &checked {
        let command = c.command.as_deref().unwrap_or_default();
        let (label, what) = match &c.state {
            HookState::Ok => ("ok          ", format!("`{command}` (trusted)")),
            HookState::Missing => ("MISSING     ", format!("no abcd handler in {}", places.hooks.display())),
            HookState::Untrusted => {
                ("UNTRUSTED   ", format!("`{command}`: {} holds no trusted hash for it, so Codex skips it", places.config.display()))
            }
            HookState::Modified => ("MODIFIED    ", format!("`{command}`: changed since it was trusted, so Codex skips it")),
            HookState::NotRunnable(why) => ("NOT RUNNABLE", format!("`{command}`: {why}")),
        };
        bad += usize::from(c.state != HookState::Ok);
        outln!("{label} {} {what}", c.event.name);
    }
    Ok(if bad == 0 {
        outln!("every abcd hook is installed and trusted for Codex");
        super::EXIT_OK
    } else {
        outln!("{bad} of {} not ok; run `abcd init --host codex` to install and trust them", checked.len());
        super::EXIT_FAILURE
    })
}

fn codex_uninstall() -> anyhow::Result<i32> {
    let places = init_codex::codex_places()?;
    let done = init_codex::uninstall(&places)?;
    if done.removed == 0 {
        outln!("no abcd hook in {}; nothing to remove", places.hooks.display());
    } else {
        outln!("codex hooks: {} abcd handlers taken out of {}{}", done.removed, places.hooks.display(), said(done.hooks));
        outln!("codex trust: their trust taken out of {}{}", places.config.display(), said(done.config));
    }
    outln!("each repository's .abcd/ (its journal) is kept; abcd's Claude hooks, if any, are untouched");
    Ok(super::EXIT_OK)
}
