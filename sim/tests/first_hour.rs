//! Where a new user gets stuck, through the `mcpsim` binary (issue 23): each test is one place
//! the first hour went wrong, with the message and exit status it has now.

use std::path::PathBuf;
use tempfile::TempDir;

mod common;

use common::{assert_bad_input, code, mcpsim, path, stderr, stdout};

fn scratch(test: &str) -> TempDir {
    common::scratch("first-hour", test)
}

/// Three replicas, round robin, each with its own sessions.
const ROUND_ROBIN: &str = "clients = [\"reference\"]\nfamilies = [\"long-tool\", \"server-restart\"]\n\
server = \"reference\"\n[lb]\nreplicas = 3\nrouting = \"round-robin\"\n";

#[test]
fn check_proposes_the_balancers_routing_and_set_tries_it() {
    let tmp = scratch("check-set");
    let dir = tmp.path();
    let file = dir.join("rr.toml");
    std::fs::write(&file, ROUND_ROBIN).unwrap();
    let out = mcpsim(&["check", path(&file), "--seeds", "2"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("  2/2  --set lb.routing=sticky-session"), "{text}");
    // Was: error: unexpected argument '--set' found.
    let out = mcpsim(&["check", path(&file), "--seeds", "2", "--set", "lb.routing=sticky-session"]);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("every cell ok"), "{}", stdout(&out));
    assert_bad_input(&mcpsim(&["check", path(&file), "--set", "lb.routing=sideways"]), "--set lb.routing=sideways");
    assert_bad_input(
        &mcpsim(&["check", path(&file), "--set", "lb.routing=sticky-session", "--shard", "1/2"]),
        "--set goes with an unsharded check",
    );
}

#[test]
fn a_dumped_balancer_is_a_template_and_an_unknown_lb_field_names_the_balancers_fields() {
    let tmp = scratch("dump");
    let dir = tmp.path();
    let out = mcpsim(&["profiles", "--dump", "lb:default"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    // Was: only idle_timeout, then [sources], so `replicas = 2` at the end was a duplicate key.
    assert!(text.contains("\nreplicas = 1\n") && text.contains("\nrouting = \"round-robin\"\n"), "{text}");
    let file = dir.join("lb.toml");
    std::fs::write(&file, text.replacen("\nreplicas = 1\n", "\n", 1) + "replicas = 2\n").unwrap();
    let run = mcpsim(&["run", "--lb", path(&file), "--scenario", "server-restart"]);
    assert!(code(&run) < 2 && stderr(&run).is_empty(), "{}", stderr(&run));
    let deployment = dir.join("d.toml");
    std::fs::write(&deployment, "server = \"reference\"\n[lb]\nreplica = 2\n").unwrap();
    let out = mcpsim(&["check", path(&deployment)]);
    assert_bad_input(&out, "d.toml:3:1: unknown field `replica` in [lb] (a balancer has: idle_timeout, max_lifetime");
    assert!(!stderr(&out).contains("fault.partition"), "{}", stderr(&out));
}

#[test]
fn matrix_prints_a_terminal_table_markdown_on_request_and_its_help_lists_every_mitigation() {
    let args = ["matrix", "--seeds", "1", "--clients", "naive", "--servers", "reference", "--scenarios", "long-tool"];
    let out = mcpsim(&args);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    // Was Markdown: `| long-tool | naive | no-duplicate-execution 1/1<br>…`.
    assert!(!text.contains("<br>") && !text.contains('|'), "{text}");
    // Was `scenario   client  reference`: nothing said the columns are servers.
    assert!(text.starts_with("scenario   client \\ server  reference\n"), "{text}");
    assert!(
        text.lines().nth(2).is_some_and(|l| l.starts_with("long-tool  naive") && l.ends_with("broken [1]")),
        "{text}"
    );
    assert!(text.contains("\n[1] long-tool × naive × reference: no-duplicate-execution 1/1"), "{text}");
    assert!(text.contains("  first failing seed 0: "), "{text}");
    let md = stdout(&mcpsim(&[&args[..], &["--format", "md"]].concat()));
    assert!(md.starts_with("| scenario | client | reference |") && md.contains("<br>"), "{md}");
    let help = stdout(&mcpsim(&["matrix", "--help"]));
    for m in mcpsim::studies::matrix::MITIGATIONS {
        assert!(help.contains(m.name), "{} not in the help:\n{help}", m.name);
    }
    assert_bad_input(&mcpsim(&["matrix", "--mitigate", "bogus"]), "invalid value 'bogus' for '--mitigate");
    assert!(!stderr(&mcpsim(&["matrix", "--mitigate", "bogus"])).contains("For more information"));
}

/// The repository's root (sim/ is one level down).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn version_names_the_commit_and_completions_print_a_script() {
    let out = mcpsim(&["--version"]);
    assert_eq!(code(&out), 0);
    let version = stdout(&out);
    assert!(version.starts_with(&format!("mcpsim {} (commit ", env!("CARGO_PKG_VERSION"))), "{version}");
    // In a git checkout it is the checkout's commit (a tarball build says unknown or MCPSIM_COMMIT).
    let head = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(root()).output();
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        if std::env::var_os("MCPSIM_COMMIT").is_none() {
            assert!(version.contains(&format!("(commit {head})")), "{version} vs HEAD {head}");
        }
    }
    for (shell, needle) in [("bash", "_mcpsim()"), ("zsh", "#compdef mcpsim"), ("fish", "complete -c mcpsim")] {
        let out = mcpsim(&["completions", shell]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(needle) && script.contains("check") && script.contains("mitigate"), "{shell}");
    }
    assert_bad_input(&mcpsim(&["completions", "cmd.exe"]), "invalid value 'cmd.exe'");
}

#[test]
fn logs_into_a_pipe_carry_no_colour_codes() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsim"))
        .args(["run", "--scenario", "long-tool"])
        .env("RUST_LOG", "mcpsim=debug")
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary starts");
    let err = stderr(&out);
    assert!(err.lines().count() > 3, "logs were written: {err}");
    assert!(!err.contains('\u{1b}'), "an escape sequence in piped logs: {:?}", &err[..err.len().min(300)]);
    assert!(mcpsim::engine::logging::colour(true, None) && !mcpsim::engine::logging::colour(false, None));
    assert!(!mcpsim::engine::logging::colour(true, Some("1".into())));
}

#[test]
fn the_repository_carries_its_licences_changelog_and_install_line() {
    let read = |f: &str| std::fs::read_to_string(root().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    assert!(
        read("LICENSE-MIT").starts_with("Copyright (c)") && read("LICENSE-MIT").contains("MIT")
            || read("LICENSE-MIT").contains("Permission is hereby granted")
    );
    assert!(read("LICENSE-APACHE").contains("Apache License") && read("LICENSE-APACHE").contains("Version 2.0"));
    assert!(read("Cargo.toml").contains("license = \"MIT OR Apache-2.0\""));
    assert!(read("CHANGELOG.md").starts_with("# Changelog") && read("CHANGELOG.md").contains("## Unreleased"));
    let readme = read("README.md");
    assert!(readme.contains("cargo install --path sim --locked"), "README: install with --locked");
    // Nothing the README tells a reader to open or run lies outside the repository.
    assert!(!readme.contains("../shared") && !readme.contains("shared/seeds"), "README points outside the repository");
    assert!(readme.contains("## The two incidents"), "README describes the incidents itself");
}

#[test]
fn an_unknown_field_lists_the_fields_of_the_table_it_is_in_not_the_set_shortcuts() {
    let one_line = |out: &std::process::Output, needle: &str| {
        assert_bad_input(out, needle);
        let err = stderr(out);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!err.contains("fault.partition"), "the --set shortcuts instead of the table's fields: {err}");
    };
    // Was: unknown key "lb.typo" (known: lb, lb.idle_timeout, server.retention, … 36 shortcuts).
    let out = mcpsim(&["run", "--set", "lb.typo=1"]);
    one_line(&out, "unknown key \"lb.typo\" (known: lb.cut_mode, lb.hold_headers, lb.hops, lb.idle_timeout,");
    let out = mcpsim(&["run", "--set", "client.reconnect.typo=1"]);
    one_line(&out, "(known: client.reconnect.counter_reset, client.reconnect.factor,");
    let out = mcpsim(&["run", "--set", "tool.typo=1"]);
    one_line(&out, "(known: tool.burst, tool.duration,");
    // A key outside the tables still lists the shortcuts.
    assert_bad_input(&mcpsim(&["run", "--set", "fault.typo=1"]), "fault.partition");

    let tmp = scratch("unknown-field");
    let dir = tmp.path();
    let scenario = dir.join("s.toml");
    // Was: accepted, the typo dropped and the default balancer run.
    std::fs::write(&scenario, "extends = \"long-tool\"\n[lb]\nidle_timeout = \"2m\"\ntypo = 1\n").unwrap();
    let out = mcpsim(&["run", "--scenario", path(&scenario)]);
    one_line(&out, "unknown field \"typo\" in [lb] (known: lb.cut_mode,");
    let out = mcpsim(&["run", "--set", "lb={ typo = 1 }"]);
    one_line(&out, "unknown field \"typo\" in [lb] (known: lb.cut_mode,");
    std::fs::write(&scenario, "extends = \"long-tool\"\n[server]\ntypo = 1\n").unwrap();
    let out = mcpsim(&["run", "--scenario", path(&scenario)]);
    one_line(&out, "s.toml:3:8: unknown key \"server.typo\" (known: server.after_replay,");
    assert!(!stderr(&out).contains("server.name"), "the name is not a key: {}", stderr(&out));
}

#[test]
fn a_replay_names_each_broken_invariant_once_with_its_count() {
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../traces/no-duplicate-execution--naive--reference--long-tool--88eec5a2.jsonl");
    let out = mcpsim(&["replay", "--quiet", path(&trace)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    // Was: no-orphaned-session, no-duplicate-execution, no-orphaned-session, no-orphaned-session, …
    let text = stdout(&out);
    assert!(text.contains("verdict: no-orphaned-session ×5, no-duplicate-execution, no-false-failure\n"), "{text}");
}
