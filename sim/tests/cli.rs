//! The `mcpsim` binary's exit statuses and messages: 0 clean, 1 violated, 2 bad input (one line
//! naming the problem), 3 a replay diverged from its recording.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mcpsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsim")).args(args).output().expect("the binary starts")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("the binary exits with a status")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpsim-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a writable temp dir");
    dir
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// Asserts exit status 2 with exactly one line on stderr that contains `needle`.
fn assert_bad_input(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(code(out), 2, "stdout: {}\nstderr: {err}", stdout(out));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
}

/// Writes the trace of a violated first-incident run and returns its path.
fn recorded_trace(dir: &Path) -> PathBuf {
    let file = dir.join("incident.jsonl");
    let out = mcpsim(&["run", "--client", "naive", "--scenario", "long-tool", "--seed", "3", "--trace", path(&file)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    file
}

#[test]
fn a_clean_run_exits_0_and_a_violated_one_1_with_its_replay_command() {
    let ok = mcpsim(&["run", "--client", "reference", "--server", "reference", "--scenario", "long-tool"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(stdout(&ok).starts_with("ok: no invariant violated"), "{}", stdout(&ok));
    let bad = mcpsim(&["run", "--client", "naive", "--server", "reference", "--scenario", "long-tool", "--seed", "7"]);
    assert_eq!(code(&bad), 1);
    let text = stdout(&bad);
    assert!(text.contains("no-duplicate-execution"), "{text}");
    assert!(text.contains("run --client naive --server reference --scenario long-tool --seed 7"), "{text}");
}

#[test]
fn check_determinism_runs_the_seed_twice_at_once() {
    let out = mcpsim(&["run", "--scenario", "chatty-tool", "--seed", "5", "--check-determinism"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("two runs of seed 5 at once gave byte-identical traces"), "{}", stdout(&out));
}

#[test]
fn bad_flags_keys_and_values_exit_2() {
    let out = mcpsim(&["run", "--bogus"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--bogus"), "{}", stderr(&out));
    assert_bad_input(&mcpsim(&["run", "--set", "nope=1"]), "unknown key \"nope\"");
    assert_bad_input(&mcpsim(&["run", "--set", "lb.idle_timeout=soon"]), "lb.idle_timeout=soon");
    assert_bad_input(&mcpsim(&["run", "--set", "lb.idle_timeout"]), "is not key=value");
    assert_bad_input(&mcpsim(&["run", "--client", "nobody"]), "unknown client profile \"nobody\"");
    assert_bad_input(&mcpsim(&["run", "--scenario", "nothing"]), "unknown scenario \"nothing\"");
    assert_bad_input(&mcpsim(&["explore", "--invariant", "nope", "--seeds", "1"]), "unknown invariant \"nope\"");
    let out = mcpsim(&["explore", "--within-conditions"]);
    assert_eq!(code(&out), 2, "--within-conditions needs --search: {}", stderr(&out));
}

#[test]
fn unreadable_truncated_and_foreign_traces_exit_2_with_one_line() {
    let dir = scratch("bad-traces");
    let good = std::fs::read_to_string(recorded_trace(&dir)).expect("the trace was written");
    let missing = dir.join("missing.jsonl");
    let truncated = dir.join("truncated.jsonl");
    let lines: Vec<&str> = good.lines().collect();
    std::fs::write(&truncated, lines[..lines.len() - 1].join("\n")).unwrap();
    let foreign = dir.join("foreign.jsonl");
    std::fs::write(&foreign, "{\"name\":\"not a trace\"}\n").unwrap();
    let binary = dir.join("binary.jsonl");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let edited = dir.join("edited.jsonl");
    let mut steps_edited = lines.clone();
    let step = steps_edited[1].replacen("\"epoch\":0", "\"epoch\":7", 1);
    assert_ne!(step, steps_edited[1], "the first step starts the server");
    steps_edited[1] = &step;
    std::fs::write(&edited, steps_edited.join("\n")).unwrap();
    let cases: [(&Path, &str); 6] = [
        (&missing, "No such file"),
        (&dir, "Is a directory"),
        (&truncated, "no footer line (truncated?)"),
        (&foreign, "not an mcpsim trace header"),
        (&binary, "valid UTF-8"),
        (&edited, "the file was edited or damaged"),
    ];
    for (file, needle) in cases {
        for command in [vec!["replay", path(file)], vec!["show", path(file)]] {
            let out = mcpsim(&command);
            assert_bad_input(&out, needle);
            assert!(stderr(&out).contains(path(file)), "{command:?} does not name the file: {}", stderr(&out));
        }
    }
}

#[test]
fn a_replay_is_identical_and_an_edited_seed_diverges_with_exit_3() {
    let dir = scratch("diverged");
    let file = recorded_trace(&dir);
    let out = mcpsim(&["replay", "--quiet", path(&file)]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("identical: the replay is byte-identical"), "{}", stdout(&out));
    // The digest covers the steps, not the header: a changed seed parses, re-runs, and diverges.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"seed\":3,"), "the header names seed 3");
    std::fs::write(&file, text.replacen("\"seed\":3,", "\"seed\":4,", 1)).unwrap();
    let out = mcpsim(&["replay", "--quiet", path(&file)]);
    assert_eq!(code(&out), 3, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("DIVERGED"), "{}", stdout(&out));
    assert!(stdout(&out).contains("replay --rerecord"), "{}", stdout(&out));
    // --rerecord overwrites the file with the new run, which then replays identically.
    let out = mcpsim(&["replay", "--quiet", "--rerecord", path(&file)]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(stdout(&out).contains("re-recorded"), "{}", stdout(&out));
    assert_eq!(code(&mcpsim(&["replay", "--quiet", path(&file)])), 0);
}

/// The steps and footer of a trace file (the header differs only in the recorded swarm).
fn body(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines().skip(1).collect::<Vec<_>>().join("\n")
}

#[test]
fn explore_search_saves_the_shrunk_trace_and_its_replay_command_reproduces_it() {
    let dir = scratch("explore");
    let out = mcpsim(&[
        "explore",
        "--client",
        "naive",
        "--scenario",
        "long-tool",
        "--search",
        "--invariant",
        "no-duplicate-execution",
        "--seeds",
        "16",
        "--out",
        path(&dir),
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("found no-duplicate-execution after"), "{text}");
    assert!(text.contains("shrunk in"), "{text}");
    assert!(text.contains("coverage over"), "{text}");
    let saved: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("no-duplicate-execution--naive--reference--long-tool--"), "{name}");
    // The printed replay command, run again, records the same steps.
    let replay = text.lines().find_map(|l| l.strip_prefix("replay: ")).expect("a replay line");
    let args: Vec<&str> = replay.split(" -- ").nth(1).expect("cargo run … -- ARGS").split_whitespace().collect();
    let again = dir.join("again.trace");
    let mut with_trace = args.clone();
    with_trace.extend(["--trace", path(&again)]);
    assert_eq!(code(&mcpsim(&with_trace)), 1, "{replay}");
    assert_eq!(body(&saved[0]), body(&again), "{replay}");
}

#[test]
fn explore_over_seeds_finds_the_second_incident_and_reports_sizes() {
    let dir = scratch("explore-seeds");
    let out = mcpsim(&[
        "explore",
        "--server",
        "silent-head",
        "--scenario",
        "chatty-tool",
        "--seeds",
        "3",
        "--out",
        path(&dir),
        "--no-shrink",
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("found no-silent-event-loss after 1 seed(s)"), "{text}");
    assert!(text.contains("not shrunk (--no-shrink): 1 fault(s), 0 override(s)"), "{text}");
}

#[test]
fn a_fresh_thread_per_run_gives_the_same_trace_file() {
    let dir = scratch("fresh-thread");
    let reused = recorded_trace(&dir);
    let fresh = dir.join("fresh.jsonl");
    let args = ["run", "--client", "naive", "--scenario", "long-tool", "--seed", "3", "--trace", path(&fresh)];
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
        .args(args)
        .env("MCPSIM_FRESH_THREAD", "1")
        .output()
        .expect("the binary starts");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let read = |p: &Path| std::fs::read(p).expect("the trace was written");
    assert!(read(&reused) == read(&fresh), "MCPSIM_FRESH_THREAD=1 changed the trace");
}
