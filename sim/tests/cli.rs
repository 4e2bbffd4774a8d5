//! The `mcpsim` binary's exit statuses and messages: 0 clean, 1 violated, 2 bad input (one line
//! naming the problem), 3 a replay diverged from its recording; a closed stdout ends quietly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

mod common;

use common::{assert_bad_input, code, mcpsim, path, stderr, stdout};

fn scratch(test: &str) -> TempDir {
    common::scratch("cli", test)
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
fn lb_flag_is_set_lb_by_another_name() {
    let table = r#"{ idle_timeout = "30s" }"#;
    let by_flag = mcpsim(&["run", "--client", "naive", "--lb", table, "--seed", "3"]);
    let by_set = mcpsim(&["run", "--client", "naive", "--set", &format!("lb={table}"), "--seed", "3"]);
    let plain = mcpsim(&["run", "--client", "naive", "--seed", "3"]);
    assert_eq!(code(&by_flag), code(&by_set));
    assert_eq!(stdout(&by_flag), stdout(&by_set));
    assert_ne!(stdout(&by_flag), stdout(&plain), "a 30 s idle timeout changes the run");
    assert_bad_input(&mcpsim(&["run", "--lb", "no-such-lb"]), "no-such-lb");
}

#[test]
fn check_determinism_runs_the_seed_twice_at_once() {
    let out = mcpsim(&["run", "--scenario", "chatty-tool", "--seed", "5", "--check-determinism"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("two runs of seed 5 at once gave byte-identical traces"), "{}", stdout(&out));
}

#[test]
fn bench_profiles_either_side_of_the_model_ratio_and_model_alone_needs_profile() {
    let sim = mcpsim(&["bench", "--profile", "--runs", "3"]);
    let model = mcpsim(&["bench", "--profile", "--model-alone", "--runs", "3"]);
    assert_eq!((code(&sim), code(&model)), (0, 0), "{}{}", stderr(&sim), stderr(&model));
    assert!(stdout(&sim).starts_with("reference × reference × long-tool: 3 runs"), "{}", stdout(&sim));
    assert!(
        stdout(&model).starts_with("the model alone, reference × reference × long-tool: 3 runs"),
        "{}",
        stdout(&model)
    );
    assert_bad_input(&mcpsim(&["bench", "--model-alone"]), "--profile");
}

#[test]
fn bad_flags_keys_and_values_exit_2() {
    assert_bad_input(&mcpsim(&["run", "--bogus"]), "unexpected argument '--bogus' found; see 'mcpsim run --help'");
    assert_bad_input(&mcpsim(&["sweep"]), "--vary <KEY=RANGE>; see 'mcpsim sweep --help'");
    assert_bad_input(&mcpsim(&["run", "--seed", "-1"]), "see 'mcpsim run --help'");
    assert_bad_input(&mcpsim(&["frobnicate"]), "unrecognized subcommand 'frobnicate'; see 'mcpsim --help'");
    assert_bad_input(&mcpsim(&[]), "no command given");
    // What the user typed is echoed escaped: a newline in it does not break the line.
    assert_bad_input(&mcpsim(&["run", "--set", "lb.idle_timeout=a\nb\u{1b}[31m"]), "lb.idle_timeout=a\\nb\\u{1b}[31m");
    assert_bad_input(&mcpsim(&["run", "--client", "x\ny"]), "unknown client profile \"x\\ny\"");
    let help = mcpsim(&["run", "--help"]);
    assert_eq!(code(&help), 0);
    assert!(stdout(&help).contains("--seed"), "{}", stdout(&help));
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
fn swarm_testing_needs_a_search_and_draws_the_same_cases_from_the_same_seed() {
    assert_bad_input(&mcpsim(&["explore", "--swarm", "--seeds", "1"]), "--swarm needs --search or --guided");
    let tmp = scratch("swarm");
    let dir = tmp.path();
    for mode in ["--search", "--guided"] {
        let args = [
            "explore",
            "--scenario",
            "long-tool",
            mode,
            "--swarm",
            "--within-conditions",
            "--seeds",
            "4",
            "--start-seed",
            "3",
            "--out",
            path(dir),
        ];
        let (a, b) = (mcpsim(&args), mcpsim(&args));
        assert_eq!(code(&a), 0, "{mode}: {}{}", stdout(&a), stderr(&a));
        assert!(stdout(&a).starts_with("no violation in 4 generated case(s)"), "{mode}: {}", stdout(&a));
        let coverage =
            |o: &Output| stdout(o).lines().filter(|l| l.starts_with("coverage")).collect::<Vec<_>>().join("\n");
        assert_eq!(coverage(&a), coverage(&b), "{mode}: the same seed, the same cases");
    }
}

#[test]
fn unreadable_truncated_and_foreign_traces_exit_2_with_one_line() {
    let tmp = scratch("bad-traces");
    let dir = tmp.path();
    let good = std::fs::read_to_string(recorded_trace(dir)).expect("the trace was written");
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
        (dir, "Is a directory"),
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
    let tmp = scratch("diverged");
    let dir = tmp.path();
    let file = recorded_trace(dir);
    // Identical, and the run violates an invariant: exit 1, as `run` would.
    let out = mcpsim(&["replay", "--quiet", path(&file)]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("identical: the replay is byte-identical"), "{}", stdout(&out));
    // The digest covers the steps, not the header: a changed seed parses, re-runs, and diverges.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"seed\":3,"), "the header names seed 3");
    std::fs::write(&file, text.replacen("\"seed\":3,", "\"seed\":4,", 1)).unwrap();
    let out = mcpsim(&["replay", "--quiet", path(&file)]);
    assert_eq!(code(&out), 3, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("DIVERGED"), "{}", stdout(&out));
    assert!(stdout(&out).contains("replay --rerecord"), "{}", stdout(&out));
    // --rerecord overwrites the file with the new run, which then replays identically (seed 4
    // violates too: exit 1).
    let out = mcpsim(&["replay", "--quiet", "--rerecord", path(&file)]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("re-recorded"), "{}", stdout(&out));
    assert_eq!(code(&mcpsim(&["replay", "--quiet", path(&file)])), 1);
    // A clean recording replays with exit 0.
    let clean = dir.join("clean.jsonl");
    assert_eq!(code(&mcpsim(&["run", "--seed", "1", "--trace", path(&clean)])), 0);
    assert_eq!(code(&mcpsim(&["replay", "--quiet", path(&clean)])), 0);
}

/// The steps and footer of a trace file (the header differs only in the recorded swarm).
fn body(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines().skip(1).collect::<Vec<_>>().join("\n")
}

#[test]
fn explore_search_saves_the_shrunk_trace_and_its_replay_command_reproduces_it() {
    let tmp = scratch("explore");
    let dir = tmp.path();
    let out = mcpsim(&[
        "explore",
        // An incident: explained by a broken condition, so only --all stops at it.
        "--all",
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
        path(dir),
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("found no-duplicate-execution after"), "{text}");
    assert!(text.contains("shrunk in"), "{text}");
    assert!(text.contains("coverage over"), "{text}");
    let saved: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("no-duplicate-execution--naive--reference--long-tool--"), "{name}");
    // The printed rerun command, run again, records the same steps.
    let again = dir.join("again.trace");
    let rerun = rerun_line(&text);
    assert_eq!(code(&rerun_with_trace(&rerun, &again)), 1, "{rerun}");
    assert_eq!(body(&saved[0]), body(&again), "{rerun}");
}

/// The command of the `rerun …:` line.
fn rerun_line(text: &str) -> String {
    let line = text.lines().find(|l| l.starts_with("rerun")).unwrap_or_else(|| panic!("no rerun line in {text}"));
    line.split_once(": ").expect("rerun (…): COMMAND").1.to_string()
}

/// Runs a printed `cargo run … -- ARGS` command (split as a shell would) with `--trace FILE`.
fn rerun_with_trace(command: &str, trace: &Path) -> Output {
    let words = shlex::split(command).unwrap_or_else(|| panic!("not shell words: {command}"));
    let at = words.iter().position(|w| w == "--").expect("cargo run … -- ARGS");
    let mut args: Vec<&str> = words[at + 1..].iter().map(String::as_str).collect();
    args.extend(["--trace", path(trace)]);
    mcpsim(&args)
}

#[test]
fn a_printed_rerun_command_with_a_spaced_value_is_quoted_and_replays() {
    let tmp = scratch("quoted");
    let dir = tmp.path();
    let first = dir.join("first.jsonl");
    let value = "fault.partition=70s..80s, 3m..4m";
    let args = ["run", "--client", "naive", "--scenario", "long-tool", "--set", value, "--seed", "2"];
    let out = mcpsim(&[&args[..], &["--trace", path(&first)]].concat());
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let rerun = rerun_line(&stdout(&out));
    assert!(rerun.contains("--set 'fault.partition=70s..80s, 3m..4m'"), "{rerun}");
    let again = dir.join("again.jsonl");
    assert_eq!(code(&rerun_with_trace(&rerun, &again)), 1, "{rerun}");
    assert!(std::fs::read(&first).unwrap() == std::fs::read(&again).unwrap(), "{rerun} recorded other bytes");
}

#[test]
fn explore_explains_what_ran_how_often_and_why() {
    let tmp = scratch("explain");
    let dir = tmp.path();
    let out = mcpsim(&[
        "explore",
        // An incident: explained by a broken condition, so only --all stops at it.
        "--all",
        "--client",
        "naive",
        "--server",
        "reference",
        "--scenario",
        "long-tool",
        "--out",
        path(dir),
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    let expected = [
        "the pay tool ran 6 times for call0 (non-idempotent: once was expected)",
        "why (the steps that led to no-duplicate-execution at 1m01.067s):",
        "lb: cut c3 after 1m00.000s without a byte (its idle timeout)",
        "client: call0: re-initialize",
        "server: session 0-2 created for app: a re-initialization",
        "client: sent pay call0 AGAIN (#4) in session 0-2",
        "server: ran pay call0 (non-idempotent) AGAIN in session 0-2: execution 2",
        "rerun (same seed, same steps): ",
        "replay the trace (timeline, byte-for-byte check): ",
        "0 = never reached",
    ];
    let mut at = 0;
    for needle in expected {
        let found = text[at..].find(needle).unwrap_or_else(|| panic!("{needle:?} missing or out of order in\n{text}"));
        at += found + needle.len();
    }
    // Seed 0 is the family itself: nothing to shrink, so no shrink line.
    assert!(!text.contains("shrunk"), "{text}");
    let replay = text.lines().find_map(|l| l.strip_prefix("replay the trace (timeline, byte-for-byte check): "));
    let words = shlex::split(replay.expect("the replay line")).expect("shell words");
    let at = words.iter().position(|w| w == "--").expect("cargo run … -- replay FILE");
    let args: Vec<&str> = words[at + 1..].iter().map(String::as_str).collect();
    assert_eq!(code(&mcpsim(&args)), 1, "{args:?}");
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/no-duplicate-execution--naive--reference--long-tool--88eec5a2.jsonl"
    );
    for (args, status) in [(vec!["profiles"], 0), (vec!["replay", trace], 0), (vec!["run", "--seed", "1"], 0)] {
        // The reading end is closed before the program starts: its first write fails with EPIPE.
        #[allow(clippy::incompatible_msrv)]
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("the binary starts");
        assert_eq!(out.status.code(), Some(status), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn a_run_over_its_step_budget_stops_with_one_line() {
    // Values no run may ask for are refused before anything runs ...
    let refused = [
        ("tool.event_interval=1us", "below the least allowed"),
        ("server.keepalive=1us", "below the least allowed"),
        ("tool.duration=1000000000s", "above the most a run may ask for"),
    ];
    for (set, needle) in refused {
        assert_bad_input(&mcpsim(&["run", "--set", set]), needle);
    }
    // ... and an allowed but busy one stops at the step budget.
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
        .args(["run", "--set", "tool.event_interval=1ms"])
        .env("MCPSIM_MAX_STEPS", "3000")
        .output()
        .expect("the binary starts");
    assert_bad_input(&out, "stopped at its step budget (3000 steps");
    assert!(stderr(&out).contains("MCPSIM_MAX_STEPS=N"), "{}", stderr(&out));
    let out =
        Command::new(env!("CARGO_BIN_EXE_mcpsim")).args(["run"]).env("MCPSIM_MAX_STEPS", "lots").output().unwrap();
    assert_bad_input(&out, "MCPSIM_MAX_STEPS=lots: not a positive number of steps");
}

/// A generated case that runs into the step budget is the search's, not the user's: the search
/// counts it, says so, and goes on (a `--guided --swarm` sweep of chatty-tool used to end with
/// the error after minutes of work). A seed of the user's own scenario still stops with it.
#[test]
fn generated_cases_over_the_step_budget_are_counted_and_the_search_goes_on() {
    let tmp = scratch("over-budget");
    let out_dir = tmp.path();
    for mode in ["--search", "--guided"] {
        let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
            .args(["explore", "--scenario", "chatty-tool", "--client", "reference", "--seeds", "12", mode])
            .args(["--out", path(out_dir)])
            .env("MCPSIM_MAX_STEPS", "300")
            .output()
            .expect("the binary starts");
        let printed = stdout(&out);
        assert_eq!(code(&out), 0, "{mode}: {printed}{}", stderr(&out));
        assert!(printed.contains("reached the step budget (300 steps) and were left unjudged"), "{mode}: {printed}");
        assert!(printed.contains("MCPSIM_MAX_STEPS=N runs them longer"), "{mode}: {printed}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
        .args(["explore", "--scenario", "chatty-tool", "--client", "reference", "--seeds", "2"])
        .args(["--out", path(out_dir)])
        .env("MCPSIM_MAX_STEPS", "300")
        .output()
        .expect("the binary starts");
    assert_bad_input(&out, "stopped at its step budget (300 steps");
}

#[test]
fn generated_cases_a_family_file_refuses_are_counted_and_the_search_goes_on() {
    // rolling-upgrade.toml deploys three replicas: a case drawn with fewer is refused by the
    // scenario, which used to end the whole search with that error (a swarm sweep of the family).
    let tmp = scratch("refused");
    let out_dir = tmp.path();
    let family = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/rolling-upgrade.toml");
    for mode in ["--search", "--guided"] {
        let out = Command::new(env!("CARGO_BIN_EXE_mcpsim"))
            .args(["explore", "--scenario", family, "--seeds", "80", mode, "--swarm", "--no-shrink"])
            .args(["--out", path(out_dir)])
            .output()
            .expect("the binary starts");
        let printed = stdout(&out);
        assert!(matches!(code(&out), 0 | 1), "{mode}: {printed}{}", stderr(&out));
        assert!(
            printed.contains("generated case(s) were refused by the scenario and passed over"),
            "{mode}: {printed}"
        );
        assert!(printed.contains("but lb.replicas is"), "{mode}: the first reason is named: {printed}");
    }
}

#[test]
fn explore_rejects_a_seed_range_past_the_last_seed() {
    let max = u64::MAX.to_string();
    assert_bad_input(&mcpsim(&["explore", "--start-seed", &max, "--seeds", "10"]), "at most 1 seed(s) from there");
    let tmp = scratch("last-seed");
    let dir = tmp.path();
    let out = mcpsim(&["explore", "--start-seed", &max, "--seeds", "1", "--out", path(dir)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("no violation in 1 seed(s)"), "{}", stdout(&out));
}

#[test]
fn a_trace_header_asking_the_impossible_exits_2_naming_the_file() {
    let tmp = scratch("bad-header");
    let dir = tmp.path();
    let good = std::fs::read_to_string(recorded_trace(dir)).expect("the trace was written");
    let cases = [
        ("\"clients\":1,", "\"clients\":4294967295,", "4294967295 clients"),
        ("\"tool_jitter\":0.1", "\"tool_jitter\":-2.0", "tool.jitter: -2 is not in [0, 1)"),
        ("\"liveness_grace\":\"5m\"", "\"liveness_grace\":\"10000000h\"", "is out of range"),
    ];
    for (from, to, needle) in cases {
        let (header, rest) = good.split_once('\n').expect("a header line");
        assert!(header.contains(from), "{from} not in the header");
        let file = dir.join("edited.jsonl");
        std::fs::write(&file, format!("{}\n{rest}", header.replacen(from, to, 1))).unwrap();
        let out = mcpsim(&["replay", path(&file)]);
        assert_bad_input(&out, needle);
        assert!(stderr(&out).contains(path(&file)), "{}", stderr(&out));
    }
    let out = mcpsim(&["replay", "/dev/urandom"]);
    assert_bad_input(&out, "/dev/urandom: larger than 64 MiB");
}

#[test]
fn a_close_handling_rule_is_refused_for_a_client_whose_kind_has_none() {
    for client in ["reference", "naive", "stateless-2026"] {
        let out = mcpsim(&["run", "--client", client, "--set", "client.close_handling.on_404=whatever"]);
        assert_bad_input(&out, "close_handling.on_404 applies only with close_handling.kind");
    }
    let out = mcpsim(&["run", "--client", "rmcp", "--set", "client.close_handling.on_404=whatever"]);
    assert_bad_input(&out, "on_404");
}

#[test]
fn profiles_lists_every_builtin_profile_with_the_release_it_models() {
    let out = mcpsim(&["profiles"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    let servers = text.split("servers:").nth(1).and_then(|t| t.split("scenarios:").next()).expect("a servers table");
    for (name, release) in [
        ("ts-sdk-1.29", "@modelcontextprotocol/sdk 1.29.x (npm)"),
        ("py-sdk-1.27", "mcp 1.27 (PyPI)"),
        ("rmcp-1.3", "rmcp 1.3.x (crates.io)"),
        ("rmcp-0.16", "rmcp 0.16.x (crates.io)"),
        ("rmcp", "rmcp 3.11.0 (crates.io)"),
    ] {
        let row = servers.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_else(|| {
            panic!("{name} is not listed among the servers:\n{servers}");
        });
        assert!(row.contains(release), "{name}: {row}");
    }
    let clients = text.split("clients:").nth(1).and_then(|t| t.split("servers:").next()).expect("a clients table");
    assert!(
        clients.lines().any(|l| l.contains("ts-sdk ") && l.contains("@modelcontextprotocol/sdk 1.32.2")),
        "{clients}"
    );
}

#[test]
fn profiles_columns_stay_aligned_with_long_names() {
    let out = mcpsim(&["profiles"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let header_at = lines.iter().position(|l| l.trim_start().starts_with("key ")).expect("the keys table");
    let column = lines[header_at].find("meaning").expect("a meaning column");
    let rows: Vec<&str> = lines[header_at + 1..].iter().copied().take_while(|l| l.starts_with("  ")).collect();
    assert!(rows.len() > 10, "{text}");
    for row in rows {
        let bytes: Vec<char> = row.chars().collect();
        assert!(bytes.len() > column && bytes[column - 1] == ' ' && bytes[column] != ' ', "misaligned: {row:?}");
    }
}

#[test]
fn explore_over_seeds_finds_the_second_incident_and_reports_sizes() {
    let tmp = scratch("explore-seeds");
    let dir = tmp.path();
    let out = mcpsim(&[
        "explore",
        // An incident: explained by a broken condition, so only --all stops at it.
        "--all",
        "--server",
        "silent-head",
        "--scenario",
        "chatty-tool",
        "--seeds",
        "3",
        "--out",
        path(dir),
        "--no-shrink",
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("found no-silent-event-loss after 1 seed(s)"), "{text}");
    assert!(text.contains("not shrunk (--no-shrink): 1 fault(s), 0 override(s)"), "{text}");
}

#[test]
fn a_fresh_thread_per_run_gives_the_same_trace_file() {
    let tmp = scratch("fresh-thread");
    let dir = tmp.path();
    let reused = recorded_trace(dir);
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

#[test]
fn profiles_sources_prints_the_tables_and_writes_them_between_the_markers_only() {
    let printed = stdout(&mcpsim(&["profiles", "--sources"]));
    assert!(printed.starts_with("#### client `ts-sdk`") && printed.contains("| `reconnect.max_attempts` | `2` |"));
    let tmp = scratch("profiles-sources");
    let dir = tmp.path();
    let doc = dir.join("model.md");
    let markers = "<!-- profile-sources:begin -->\nold\n<!-- profile-sources:end -->";
    std::fs::write(&doc, format!("# before\n{markers}\nafter\n")).unwrap();
    let out = mcpsim(&["profiles", "--sources", "--doc", path(&doc)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written = std::fs::read_to_string(&doc).unwrap();
    assert!(written.starts_with("# before\n<!-- profile-sources:begin -->\n#### client `ts-sdk`"), "{written}");
    assert!(written.ends_with(&format!("{}\n<!-- profile-sources:end -->\nafter\n", printed.trim())), "{written}");
    let plain = dir.join("plain.md");
    std::fs::write(&plain, "no markers\n").unwrap();
    assert_bad_input(&mcpsim(&["profiles", "--sources", "--doc", path(&plain)]), "profile-sources:begin");
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), "no markers\n");
}
