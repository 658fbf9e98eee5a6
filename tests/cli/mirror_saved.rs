//! Saved-aside work on the mirror (issue 22): a saved ref goes to the remote with the
//! journals, unless one of its files looks like it holds a secret; then the whole ref stays
//! on this machine and the push names the file and the kind, never the value.

use crate::common;
use crate::common::remote;

use remote::{Lab, Machine, text};

/// A saved-aside ref in `m`'s clone holding `files` on top of HEAD, made as abcd makes one
/// (a commit whose one parent is HEAD), under `refs/abcd/saved/<run>/<lane>/<time>`.
fn save_aside(m: &Machine, name: &str, files: &[(&str, &str)]) -> (String, String) {
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let env = [("GIT_INDEX_FILE", index.to_str().unwrap())];
    common::repo::git_with(&m.root, &["read-tree", "HEAD"], &env);
    for (k, (path, body)) in files.iter().enumerate() {
        let f = scratch.path().join(format!("body-{k}"));
        std::fs::write(&f, body).unwrap();
        let blob = common::repo::git(&m.root, &["hash-object", "-w", f.to_str().unwrap()]).trim().to_string();
        common::repo::git_with(&m.root, &["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{path}")], &env);
    }
    let tree = common::repo::git_with(&m.root, &["write-tree"], &env).trim().to_string();
    let commit = common::repo::git(&m.root, &["commit-tree", &tree, "-p", "HEAD", "-m", "saved aside"]).trim().to_string();
    let name = format!("refs/abcd/saved/r1/impl/{name}");
    common::repo::git(&m.root, &["update-ref", &name, &commit]);
    (name, commit)
}

#[test]
fn saved_work_goes_to_the_remote_unless_a_file_looks_like_it_holds_a_secret() {
    let lab = Lab::new();
    let (a, b) = (lab.machine("machine-a"), lab.machine("machine-b"));
    a.add("Port the parser");
    let token = format!("ghp_{}", "Zq7".repeat(12));
    let (clean_ref, clean_commit) = save_aside(&a, "20261202T070000Z", &[("src/lib.rs", "pub fn parse() {}\n")]);
    let (secret_ref, _) = save_aside(&a, "20261202T070100Z", &[("notes.md", "ok\n"), (".env", &format!("GITHUB_TOKEN={token}\n"))]);

    let out = a.run(&["mirror", "push"]);
    assert_eq!(out.status.code(), Some(1), "a held ref makes the push exit 1: {}", text(&out));
    let said = text(&out);
    assert!(said.contains(&secret_ref) && said.contains(".env") && said.contains("github_token"), "{said}");
    assert!(!said.contains(&token) && !said.contains("Zq7Zq7"), "the value is never shown: {said}");
    assert_eq!(lab.git(&["rev-parse", &clean_ref]).trim(), clean_commit, "the clean save is on the remote");
    assert!(lab.git(&["for-each-ref", &secret_ref]).trim().is_empty(), "the held save is not");

    // The other machine gets the clean save under its remote's namespace.
    let fetched = b.run(&["mirror", "fetch"]);
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched));
    let arrived = clean_ref.replace("refs/abcd/saved/", "refs/abcd/remotes/origin/saved/");
    assert_eq!(b.git(&["rev-parse", &arrived]).trim(), clean_commit);
}

/// A commit in `m`'s clone with `parents`, HEAD's tree plus `files`, and `message`, under
/// `refs/abcd/saved/r1/impl/<name>` when `name` is given.
fn commit_in(m: &Machine, parents: &[&str], files: &[(&str, &str)], message: &str, name: Option<&str>) -> (String, String) {
    let scratch = tempfile::tempdir().unwrap();
    let index = scratch.path().join("index");
    let env = [("GIT_INDEX_FILE", index.to_str().unwrap())];
    common::repo::git_with(&m.root, &["read-tree", "HEAD"], &env);
    for (k, (path, body)) in files.iter().enumerate() {
        let f = scratch.path().join(format!("body-{k}"));
        std::fs::write(&f, body).unwrap();
        let blob = common::repo::git(&m.root, &["hash-object", "-w", f.to_str().unwrap()]).trim().to_string();
        common::repo::git_with(&m.root, &["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{path}")], &env);
    }
    let tree = common::repo::git_with(&m.root, &["write-tree"], &env).trim().to_string();
    let mut args = vec!["commit-tree", tree.as_str()];
    for p in parents {
        args.extend(["-p", p]);
    }
    args.extend(["-m", message]);
    let commit = common::repo::git(&m.root, &args).trim().to_string();
    let name = name.map(|n| format!("refs/abcd/saved/r1/impl/{n}")).unwrap_or_default();
    if !name.is_empty() {
        common::repo::git(&m.root, &["update-ref", &name, &commit]);
    }
    (name, commit)
}

/// Issue 34: a token a merge commit adds, in a file's name, or in a commit's message holds
/// the saved ref back as a token in a file's contents does; nothing of it is shown.
#[test]
fn a_token_a_merge_adds_or_in_a_file_name_or_a_commit_message_holds_the_saved_ref_back() {
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Port the parser");
    let random = "Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d";
    let token = format!("ghp_{random}");
    let head = a.git(&["rev-parse", "HEAD"]).trim().to_string();
    let (_, side) = commit_in(&a, &[&head], &[("src/side.rs", "pub fn side() {}\n")], "side work", None);
    // A merge whose tree adds `.env` beyond both parents: `git diff-tree` alone shows
    // nothing for a merge.
    let (merge_ref, _) = commit_in(
        &a,
        &[&head, &side],
        &[("src/side.rs", "pub fn side() {}\n"), (".env", &format!("GITHUB_TOKEN={token}\n"))],
        "merge side",
        Some("20261202T070000Z"),
    );
    let (name_ref, _) = commit_in(&a, &[&head], &[(&format!("notes/{token}.txt"), "nothing here\n")], "notes", Some("20261202T070100Z"));
    let (message_ref, _) = commit_in(
        &a,
        &[&head],
        &[("src/lib.rs", "pub fn parse() {}\n")],
        &format!("parser\n\nused {token} to test"),
        Some("20261202T070200Z"),
    );

    let out = a.run(&["mirror", "push"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "held refs make the push exit 1: {said}");
    for held in [&merge_ref, &name_ref, &message_ref] {
        assert!(lab.git(&["for-each-ref", held]).trim().is_empty(), "{held} reached the remote: {said}");
        assert!(said.contains(held.as_str()), "the push names {held}: {said}");
    }
    let runs: Vec<char> = random.chars().collect();
    assert!(runs.windows(8).all(|w| !said.contains(&w.iter().collect::<String>())), "the push shows part of the token: {said}");
}

/// Issue 34, acceptance 3: each token of the secret corpus, in a saved ref's file contents,
/// in a file a merge adds, in a file's name and in a commit's message, holds that ref back;
/// no token and no 8-character run of a token's random part is in the remote's objects or
/// in what the push says. A clean save pushed beside them shows the push went.
#[test]
fn the_secret_corpus_in_saved_aside_work_never_leaves_the_machine() {
    use common::secret_corpus::{corpus, leaked_run};
    let lab = Lab::new();
    let a = lab.machine("machine-a");
    a.add("Port the parser");
    let head = a.git(&["rev-parse", "HEAD"]).trim().to_string();
    let (_, side) = commit_in(&a, &[&head], &[("src/side.rs", "pub fn side() {}\n")], "side work", None);
    let (clean_ref, clean_commit) = commit_in(&a, &[&head], &[("src/lib.rs", "pub fn parse() {}\n")], "parser", Some("20261202T065900Z"));
    let mut held = Vec::new();
    for (k, (token, _)) in corpus().iter().enumerate() {
        let env = format!("TOKEN={token}\n");
        let name = format!("notes/{token}.txt");
        let message = format!("parser\n\nused {token} to test");
        let at = |shape: usize| format!("20261202T07{k}{shape}00Z");
        held.push(commit_in(&a, &[&head], &[(".env", &env)], "config", Some(&at(0))).0);
        held.push(commit_in(&a, &[&head, &side], &[("src/side.rs", "pub fn side() {}\n"), (".env", &env)], "merge side", Some(&at(1))).0);
        held.push(commit_in(&a, &[&head], &[(&name, "nothing here\n")], "notes", Some(&at(2))).0);
        held.push(commit_in(&a, &[&head], &[("src/lib.rs", "pub fn parse() {}\n")], &message, Some(&at(3))).0);
    }

    let out = a.run(&["mirror", "push"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "held refs make the push exit 1: {said}");
    assert_eq!(lab.git(&["rev-parse", &clean_ref]).trim(), clean_commit, "the clean save is on the remote: {said}");
    for r in &held {
        assert!(lab.git(&["for-each-ref", r]).trim().is_empty(), "{r} reached the remote: {said}");
    }
    let remote_objects = common::repo::git(&lab.remote, &["cat-file", "--batch-all-objects", "--batch"]);
    for (token, random) in corpus() {
        assert_eq!(leaked_run(&said, &random), None, "the push shows part of {token}: {said}");
        assert_eq!(leaked_run(&remote_objects, &random), None, "the remote holds part of {token}");
    }
}
