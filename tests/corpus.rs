//! The corpus: every `traces/**/*.jsonl` is a counterexample worth keeping (both incidents among
//! them), named by invariant, profiles and a short hash. Each must still parse, re-run byte for
//! byte, and break what its footer says it breaks.

mod common;

use mcpsim::report::artifacts::{first_difference, read_trace, recorded_scenario};
use mcpsim::run;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")
}

/// The corpus files, sorted by path: `traces/` and its sub-directories (`traces/matrix/` holds
/// the traces behind the broken cells of `docs/compatibility.md`), but not `traces/found/`, where
/// `mcpsim explore` writes what a user found locally.
fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect(&corpus_dir(), &mut files);
    files.sort();
    files
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for path in entries.map(|e| e.expect("a readable directory entry").path()) {
        if path.is_dir() && path.file_name().is_some_and(|n| n != "found") {
            collect(&path, files);
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            files.push(path);
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn rerecord(path: &Path) -> String {
    format!("cargo run --release -p mcpsim -- replay --rerecord {}", path.display())
}

/// What is wrong with one corpus file, if anything.
fn check(path: &Path) -> Option<String> {
    let name = file_name(path);
    // (a) it parses, header to footer.
    let recorded = match read_trace(path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{name}: does not parse: {e}")),
    };
    let scenario = match recorded_scenario(path, &recorded) {
        Ok(s) => s,
        Err(e) => return Some(format!("{name}: {e}")),
    };
    let seed = recorded.header.seed;
    let outcome = match run(&scenario, seed) {
        Ok(o) => o,
        Err(e) => return Some(format!("{name}: the re-run failed: {e}")),
    };
    // (b) the re-run is byte-identical.
    if let Some(diff) = first_difference(&recorded, &outcome.trace) {
        return Some(format!(
            "{name}: the re-run's steps differ from the recording: {diff}\nif the model changed on purpose, \
             re-record it: {}",
            rerecord(path)
        ));
    }
    // (c) the recorded verdict still holds, and it is the one the file is named after.
    let recorded_verdict: Vec<&str> =
        recorded.footer.as_ref().map(|f| f.verdict.iter().map(|v| v.invariant.as_str()).collect()).unwrap_or_default();
    let verdict: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
    if verdict != recorded_verdict {
        return Some(format!("{name}: recorded verdict {recorded_verdict:?}, re-run's {verdict:?}"));
    }
    let named = name.split("--").next().unwrap_or_default();
    if !verdict.contains(&named) {
        return Some(format!(
            "{name}: named after {named}, which the run no longer breaks (verdict {verdict:?}); replay: {}",
            common::replay(&scenario, seed)
        ));
    }
    None
}

#[test]
fn every_corpus_trace_parses_replays_byte_for_byte_and_keeps_its_verdict() {
    let files = corpus();
    assert!(!files.is_empty(), "{} holds no trace", corpus_dir().display());
    let problems: Vec<String> = files.iter().filter_map(|p| check(p)).collect();
    assert!(problems.is_empty(), "{} of {} corpus traces:\n{}", problems.len(), files.len(), problems.join("\n\n"));
}

#[test]
fn the_corpus_holds_both_incidents() {
    let names: Vec<String> = corpus().iter().map(|p| file_name(p)).collect();
    for incident in [
        "no-duplicate-execution--naive--reference--long-tool--",
        "no-silent-event-loss--reference--silent-head--chatty-tool--",
    ] {
        assert!(names.iter().any(|n| n.starts_with(incident)), "no {incident}* in {names:?}");
    }
}
