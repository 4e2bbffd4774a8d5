//! What the binary-level tests of `mcpsim` share: running the binary, reading what it printed,
//! scratch directories, and the bad-input contract (exit 2, one line on stderr).

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::{Command, Output};
use tempfile::TempDir;

/// Runs the `mcpsim` binary with `args`.
pub fn mcpsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsim")).args(args).output().expect("the binary starts")
}

/// The exit status.
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("the binary exits with a status")
}

/// What it printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What it printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh directory for one test of one file, removed when dropped (at the end of the test,
/// also when it panics): keep it bound until the test is done with the directory.
pub fn scratch(file: &str, test: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("mcpsim-{file}-{test}-")).tempdir().expect("a writable temp dir")
}

/// A path as an argument.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// Asserts exit status 2 with exactly one line on stderr that contains `needle`, and no panic.
pub fn assert_bad_input(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 2, "stdout: {}\nstderr: {err}", stdout(out));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
}
