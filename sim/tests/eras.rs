//! Both protocol eras in the simulator (issue 21, docs/eras.md): the `rolling-upgrade` family file
//! run with a modern, a legacy and an auto client against a fleet switching from legacy-only to
//! dual-era replica by replica.

use serde_json::Value;
use std::path::PathBuf;

mod common;

use common::{code, mcpsim, path, stderr, stdout};

fn repo(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    p.to_str().expect("a UTF-8 path").to_string()
}

/// Runs the family with `client` against `server` (and `--set`s), returning its trace's steps.
fn run(test: &str, client: &str, server: &str, sets: &[&str]) -> Vec<Value> {
    let dir = common::scratch("eras", test);
    let trace = dir.path().join("t.jsonl");
    let family = repo("sim/scenarios/rolling-upgrade.toml");
    let mut args = vec!["run", "--scenario", &family, "--client", client, "--server", server, "--trace", path(&trace)];
    for s in sets {
        args.extend(["--set", s]);
    }
    let out = mcpsim(&args);
    assert!(code(&out) < 2, "{}\n{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(&trace).expect("the trace was written");
    text.lines().skip(1).map(|l| serde_json::from_str(l).expect("a JSON step")).collect()
}

fn kind<'a>(steps: &'a [Value], k: &str) -> Vec<&'a Value> {
    steps.iter().filter(|s| s["kind"] == k).collect()
}

fn t(step: &Value) -> u64 {
    step["t"].as_u64().expect("a time")
}

const DEPLOY_US: u64 = 120_000_000;

#[test]
fn a_modern_client_is_refused_by_the_old_build_and_served_by_each_upgraded_replica() {
    let steps = run("modern", "stateless-2026", "py-sdk", &[]);
    let refused = kind(&steps, "era-refused");
    let served = kind(&steps, "era-served");
    assert!(!refused.is_empty() && refused.iter().all(|s| t(s) < DEPLOY_US && s["refusal"] == "legacy-no-session"));
    assert!(!served.is_empty() && served.iter().all(|s| t(s) > DEPLOY_US && s["era"] == "2026-07-28"));
    assert!(served.iter().all(|s| s.get("session").is_none()), "no session for a modern request");
    assert!(kind(&steps, "session-created").is_empty());
    let results = kind(&steps, "app-result");
    assert!(results.len() >= 3 && results.iter().all(|s| t(s) > DEPLOY_US));
    // Without the new build on restart, the fleet never serves it.
    let steps = run("modern-no-upgrade", "stateless-2026", "py-sdk", &["server.eras_after_restart=none"]);
    assert!(kind(&steps, "era-served").is_empty() && kind(&steps, "app-result").is_empty());
}

#[test]
fn a_legacy_client_keeps_its_sessions_across_the_switch_and_records_no_era() {
    let steps = run("legacy", "rmcp", "rmcp", &[]);
    assert!(kind(&steps, "era-served").is_empty() && kind(&steps, "era-refused").is_empty());
    assert!(kind(&steps, "era-chosen").is_empty());
    assert!(!kind(&steps, "session-created").is_empty());
    assert!(kind(&steps, "app-result").iter().any(|s| t(s) > DEPLOY_US), "served on after the deploy");
}

#[test]
fn an_auto_client_probes_and_settles_on_the_era_the_replica_it_reached_serves() {
    let steps = run("auto", &repo("docs/examples/py-sdk-auto.toml"), "py-sdk", &[]);
    let chosen = kind(&steps, "era-chosen");
    assert!(!chosen.is_empty() && chosen.iter().all(|s| s["probed"] == true));
    // Before the deploy every replica is legacy-only: the probe falls back.
    assert!(chosen.iter().filter(|s| t(s) < DEPLOY_US).all(|s| s["era"] == "2025-11-25"));
    assert!(kind(&steps, "era-refused").iter().all(|s| s["refusal"] == "legacy-no-session"), "only probes refused");
}

/// The README's "incident in three worlds": the same dual-era server, the legacy client (ok) and
/// the modern one (the payment charged on every re-issue); then the tasks world on rmcp (its
/// default TTL aborts the payment; the TTL `advise --tasks` gives is clean), by rmcp's own client
/// and by the modern one.
#[test]
fn the_incident_in_three_worlds() {
    let legacy = mcpsim(&["run", "--client", "py-sdk", "--server", "py-sdk", "--scenario", "long-tool"]);
    assert_eq!(code(&legacy), 0, "{}", stdout(&legacy));
    assert!(stdout(&legacy).starts_with("ok: no invariant violated"), "{}", stdout(&legacy));
    let modern = mcpsim(&["run", "--client", "stateless-2026", "--server", "py-sdk", "--scenario", "long-tool"]);
    let text = stdout(&modern);
    assert!(text.contains("no-duplicate-execution") && text.contains("non-idempotent call0 ran 6 times"), "{text}");
    assert!(!text.contains("era-consistent") && !text.contains("no-work-killed"), "{text}");
    let idempotent = mcpsim(&[
        "run",
        "--client",
        "stateless-2026",
        "--server",
        "py-sdk",
        "--scenario",
        "long-tool",
        "--set",
        "tool.idempotent=true",
    ]);
    assert_eq!(code(&idempotent), 0, "{}", stdout(&idempotent));
    for client in ["rmcp", "stateless-2026"] {
        let tasks =
            mcpsim(&["run", "--client", client, "--server", "rmcp", "--scenario", "task-long-tool", "--seed", "0"]);
        let text = stdout(&tasks);
        assert_eq!(code(&tasks), 1, "{text}");
        assert!(text.contains("no-work-killed at 5m01") && text.contains("no-false-failure at 5m01"), "{text}");
        let advised =
            mcpsim(&["advise", "--tasks", "--client", client, "--server", "rmcp", "--scenario", "task-long-tool"]);
        assert!(stdout(&advised).contains("set server.tasks.ttl=330001ms"), "{}", stdout(&advised));
        let fixed = mcpsim(&[
            "run",
            "--client",
            client,
            "--server",
            "rmcp",
            "--scenario",
            "task-long-tool",
            "--seed",
            "0",
            "--set",
            "server.tasks.ttl=330001ms",
        ]);
        assert_eq!(code(&fixed), 0, "{}", stdout(&fixed));
        assert!(stdout(&fixed).starts_with("ok: no invariant violated"), "{}", stdout(&fixed));
    }
}
