//! Records the git commit the binary is built from, for `tackle --version`, and links it as a
//! position-dependent executable on Linux (see ARCHITECTURE.md, "Start-up").

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|text| !text.is_empty())
}

fn main() {
    // A position-independent `tackle` spends about 1.5 ms of every start applying 72,000
    // relocations to its own pointers (copying 1.3 MB of pages); `tackle call` is a whole
    // process per call, so that was half its budget.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    let suffix = if dirty { "-modified" } else { "" };
    println!("cargo:rustc-env=TACKLE_GIT_COMMIT={commit}{suffix}");
    // Rebuild when HEAD moves (a commit, a checkout) or the index changes.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
}
