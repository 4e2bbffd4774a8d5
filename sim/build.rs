//! Puts the commit the binary was built from into `mcpsim --version`: `MCPSIM_COMMIT` when the
//! build sets it (a package built from a tarball, where there is no `.git`), else what git says
//! about the checkout, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=MCPSIM_COMMIT");
    let commit = std::env::var("MCPSIM_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(|| {
        // Rebuild when the checkout moves to another commit (HEAD, or the branch it points to).
        if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
            println!("cargo:rerun-if-changed={dir}/HEAD");
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                println!("cargo:rerun-if-changed={dir}/{r}");
            }
        }
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            println!("cargo:rerun-if-changed={common}/packed-refs");
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                println!("cargo:rerun-if-changed={common}/{r}");
            }
        }
        git(&["rev-parse", "--short=12", "HEAD"])
    });
    println!("cargo:rustc-env=MCPSIM_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
}
