//! Scale-out: `matrix --shard K/N` in four processes, merged by `mcpsim merge`, gives byte for
//! byte what the unsharded matrix prints and writes (table, JSON, and the compatibility document
//! with its traces).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mcpsim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsim")).current_dir(dir).args(args).output().expect("the binary starts")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpsim-shard-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

const CELLS: [&str; 8] = [
    "--clients",
    "reference,naive,ts-sdk",
    "--servers",
    "reference,silent-head",
    "--scenarios",
    "long-tool,chatty-tool",
    "--seeds",
    "2",
];

fn with(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec!["matrix".into()];
    args.extend(CELLS.iter().map(|s| s.to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run(dir: &Path, args: &[String]) -> Output {
    mcpsim(dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn four_shards_merge_into_the_unsharded_matrix_byte_for_byte() {
    let dir = scratch("merge");
    for format in ["md", "json"] {
        let whole = run(&dir, &with(&["--format", format]));
        assert_eq!(whole.status.code(), Some(1), "some cell breaks: {}", String::from_utf8_lossy(&whole.stderr));
        let mut shards = Vec::new();
        for k in 1..=4 {
            let out_dir = format!("{format}-s{k}");
            let shard = run(&dir, &with(&["--shard", &format!("{k}/4"), "--shard-out", &out_dir]));
            assert!(matches!(shard.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&shard.stderr));
            shards.push(out_dir);
        }
        let mut merge: Vec<&str> = vec!["merge", "--format", format];
        merge.extend(shards.iter().map(String::as_str));
        let merged = mcpsim(&dir, &merge);
        assert_eq!(merged.status.code(), Some(1), "{}", String::from_utf8_lossy(&merged.stderr));
        assert_eq!(
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&whole.stdout),
            "{format}: merged shards differ from the unsharded matrix"
        );
    }
    // The document and its traces, too.
    let whole = run(&dir, &with(&["--doc", "whole/doc.md", "--traces", "whole/traces"]));
    assert_eq!(whole.status.code(), Some(1));
    let merged = mcpsim(
        &dir,
        &["merge", "md-s1", "md-s2", "md-s3", "md-s4", "--doc", "merged/doc.md", "--traces", "merged/traces"],
    );
    assert_eq!(merged.status.code(), Some(1), "{}", String::from_utf8_lossy(&merged.stderr));
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).expect("written");
    // The same document but for the paths it was asked to write to.
    let (merged, whole) = (read("merged/doc.md").replace("merged/", "whole/"), read("whole/doc.md"));
    assert!(merged == whole, "the merged document differs from the unsharded one");
    let names = |p: &str| {
        let mut v: Vec<_> =
            std::fs::read_dir(dir.join(p)).expect("a traces dir").map(|e| e.unwrap().file_name()).collect();
        v.sort();
        v
    };
    assert_eq!(names("merged/traces"), names("whole/traces"));
}

#[test]
fn a_missing_a_repeated_or_a_foreign_shard_is_refused() {
    let dir = scratch("refuse");
    for k in 1..=2 {
        let out = run(&dir, &with(&["--shard", &format!("{k}/2"), "--shard-out", &format!("s{k}")]));
        assert!(matches!(out.status.code(), Some(0 | 1)));
    }
    let mut other = with(&["--shard", "1/2", "--shard-out", "other"]);
    other[8] = "1".into(); // --seeds 1: another question
    assert!(matches!(run(&dir, &other).status.code(), Some(0 | 1)));
    for (args, needle) in [
        (vec!["merge", "s1"], "2/2 missing"),
        (vec!["merge", "s1", "s1", "s2"], "given twice"),
        (vec!["merge", "s1", "other"], "another matrix"),
        (vec!["merge", "nowhere"], "nowhere"),
    ] {
        let out = mcpsim(&dir, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
    }
    for bad in ["0/2", "3/2", "1/0", "a/b", "2"] {
        let out = run(&dir, &with(&["--shard", bad]));
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}
