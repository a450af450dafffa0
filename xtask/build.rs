//! Build script: names the commit the tool is built from, for `--version`
//! (`xtask 0.1.0 (abc1234 2026-12-01)`), in the `XTASK_COMMIT` variable of the build.
//!
//! It asks `git rev-parse --short HEAD` and the commit's date in the workspace's own checkout;
//! outside one (a tarball, `cargo install` from a registry, no `git`) the commit is
//! `unknown commit`. It reruns when `HEAD` or the branch it points to moves.
//!
//! Must not: fail the build, use anything but std and `git`, or name a file that does not
//! exist in `rerun-if-changed` (cargo would then rerun it, and rebuild the crate, every time).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.parent().unwrap_or(&manifest).to_path_buf();
    let commit = describe(&root).unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=XTASK_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    for path in watched(&root) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `git ARGS` in `dir`, its trimmed stdout when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// `abc1234 2026-12-01` when `root` is the top of a git checkout with a commit.
fn describe(root: &Path) -> Option<String> {
    let top = git(root, &["rev-parse", "--show-toplevel"])?;
    // Built from inside some other repository (a vendored copy): not our commit.
    let same = |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| Some(a) == b.canonicalize().ok());
    if !same(Path::new(&top), root) {
        return None;
    }
    let short = git(root, &["rev-parse", "--short", "HEAD"])?;
    let date = git(root, &["log", "-1", "--format=%cd", "--date=short", "HEAD"])?;
    Some(format!("{short} {date}"))
}

/// The files whose change moves `HEAD`: `HEAD` itself, the branch file it points to (or,
/// while it has none, its folder), and `packed-refs` (where a branch lives once packed).
/// Only those that exist.
fn watched(root: &Path) -> Vec<PathBuf> {
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            root.join(p)
        }
    };
    let (Some(git_dir), Some(common)) = (
        git(root, &["rev-parse", "--git-dir"]).map(abs),
        git(root, &["rev-parse", "--git-common-dir"]).map(abs),
    ) else {
        return Vec::new();
    };
    let head = git_dir.join("HEAD");
    let mut out = vec![head.clone()];
    if let Some(branch) = std::fs::read_to_string(&head)
        .ok()
        .and_then(|h| h.trim().strip_prefix("ref:").map(|r| r.trim().to_string()))
    {
        for file in [git_dir.join(&branch), common.join(&branch)] {
            // A packed branch has no file of its own until the next commit writes one: watch
            // its folder then (cargo looks at every file in a folder it is given).
            match (file.exists(), file.parent()) {
                (false, Some(dir)) => out.push(dir.to_path_buf()),
                _ => out.push(file),
            }
        }
    }
    out.push(common.join("packed-refs"));
    out.sort();
    out.dedup();
    out.retain(|p| p.exists());
    out
}
