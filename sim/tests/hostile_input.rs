//! Input that once gave a wrong answer or unbounded work, each refused in one line (exit 2)
//! before any run, or written out escaped: lists over their caps, endless files, values no
//! rule checked, entries given twice, control characters.

use std::time::Instant;
use tempfile::TempDir;

mod common;

use common::{assert_bad_input, code, mcpsim, path, stderr, stdout};

fn scratch(test: &str) -> TempDir {
    common::scratch("hostile", test)
}

/// Runs `args` and asserts it is refused as bad input naming `needle`, within a second.
fn refused_fast(args: &[&str], needle: &str) {
    let start = Instant::now();
    let out = mcpsim(args);
    assert_bad_input(&out, needle);
    assert!(start.elapsed().as_secs_f64() < 5.0, "{args:?} took {:?}", start.elapsed());
}

#[test]
fn lists_over_their_caps_and_endless_files_are_refused_before_any_work() {
    let tmp = scratch("caps");
    let dir = tmp.path();
    let mut calls = String::from("extends = \"long-tool\"\n");
    for i in 0..10_000 {
        calls.push_str(&format!("[[calls]]\nat = \"{}s\"\ntool = \"pay\"\ncall = {i}\n", i + 1));
    }
    let file = dir.join("calls.toml");
    std::fs::write(&file, calls).expect("writable");
    refused_fast(&["run", "--client", "reference", "--scenario", path(&file)], "calls: 10000 entries: at most 100");
    let mut tools = String::from("extends = \"long-tool\"\n");
    for i in 0..5_000 {
        tools.push_str(&format!("[[tools]]\nname = \"t{i}\"\nduration = \"1s\"\n"));
    }
    let file = dir.join("tools.toml");
    std::fs::write(&file, tools).expect("writable");
    refused_fast(&["run", "--client", "reference", "--scenario", path(&file)], "tools: 5000 entries: at most 32");
    let mut hops = String::from("hops = [\n");
    for _ in 0..10_000 {
        hops.push_str("  { idle_timeout = \"60s\" },\n");
    }
    hops.push_str("  { idle_timeout = \"0s\" },\n]\n");
    let file = dir.join("hops.toml");
    std::fs::write(&file, hops).expect("writable");
    refused_fast(&["run", "--client", "reference", "--lb", path(&file)], "hops: 10001 entries");
    let file = dir.join("zero.toml");
    std::fs::write(&file, "extends = \"/dev/zero\"\n").expect("writable");
    refused_fast(&["run", "--client", "reference", "--server", path(&file)], "larger than 1024 KiB");
    refused_fast(&["run", "--client", path(&file)], "larger than 1024 KiB");
    let script: Vec<String> = (0..101).map(|i| format!("{}s", i + 1)).collect();
    refused_fast(&["run", "--set", &format!("app.calls={}", script.join("; "))], "calls: 101 entries");
}

#[test]
fn values_and_entries_no_rule_checked_are_refused() {
    refused_fast(&["run", "--set", "server.sessionless_get_status=0"], "no HTTP status");
    refused_fast(&["run", "--set", "server.keep_alive_timeout=0s"], "write none");
    refused_fast(&["run", "--set", "app.operator_deletes=2m,2m"], "given twice");
    refused_fast(&["run", "--set", "app.clients=0"], "a scenario has 1 to 64");
    refused_fast(&["run", "--set", "app.clients=65"], "a scenario has 1 to 64");
    refused_fast(&["run", "--set", "app.calls=1s call=4; 2s call=4"], "the same key 4");
    let tmp = scratch("twice");
    let dir = tmp.path();
    let file = dir.join("twice.toml");
    std::fs::write(&file, "extends = \"long-tool\"\n[[calls]]\nat = \"1s\"\ntool = \"pay\"\ncall = 0\n[[calls]]\nat = \"2s\"\ntool = \"pay\"\ncall = 0\n").expect("writable");
    refused_fast(&["run", "--scenario", path(&file)], "the same key 0");
}

#[test]
fn a_printed_unreplayable_line_refuses_to_run() {
    refused_fast(&["run", "--set", "unreplayable=clients"], "edited in code");
}

#[test]
fn control_characters_from_input_reach_no_output_raw() {
    let tmp = scratch("control");
    let dir = tmp.path();
    let profile = dir.join("evil.toml");
    std::fs::write(&profile, "extends = \"naive\"\nname = \"evil\\u001b[31mred\\u0007\"\n").expect("writable");
    let trace = dir.join("evil.jsonl");
    let out = mcpsim(&["run", "--client", path(&profile), "--seed", "3", "--trace", path(&trace)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let raw = |text: &str| text.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    assert!(!raw(&stdout(&out)) && stdout(&out).contains("evil\\u{1b}[31mred"), "{}", stdout(&out));
    for format in ["text", "mermaid", "svg", "html"] {
        let out = mcpsim(&["show", path(&trace), "--format", format]);
        assert_eq!(code(&out), 0, "{format}: {}", stderr(&out));
        assert!(!raw(&stdout(&out)), "{format}: a raw control character");
    }
    let out = mcpsim(&["replay", path(&trace)]);
    assert!(!raw(&stdout(&out)), "replay: a raw control character");
}
