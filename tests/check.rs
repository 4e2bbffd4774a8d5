//! `mcpsim check`: a deployment that breaks (a naive client, a silent 5-minute payment behind a
//! 60 s-idle load balancer) exits 1 and names the invariant and the mitigation that fixes it;
//! the same deployment with that mitigation applied exits 0; the HTML report holds a section for
//! each broken cell; a bad file is exit 2 with FILE:LINE:COL.

use mcpsim::cli::{cmd_check, CheckArgs, Exit};
use mcpsim::run;
use mcpsim::studies::check::{anchor, check, render_html, render_text, Deployment};
use mcpsim::studies::pool::Silent;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A fresh directory, removed when dropped (at the end of the test, also when it panics).
fn dir(name: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("mcpsim-check-{name}-")).tempdir().expect("a writable temp dir")
}

fn write(dir: &TempDir, file: &str, text: &str) -> PathBuf {
    let path = dir.path().join(file);
    std::fs::write(&path, text).expect("a writable temp dir");
    path
}

/// The first incident as a deployment: the naive client re-sends the payment after the load
/// balancer's idle cut. Two families, so the table has a clean row beside the broken one.
const NAIVE: &str = r#"
clients = ["naive", "reference"]
families = ["long-tool"]
server = "reference"
lb = { idle_timeout = "60s" }
"#;

/// The same with the `keepalive` mitigation written into the server table.
const FIXED: &str = r#"
clients = ["naive", "reference"]
families = ["long-tool"]
lb = { idle_timeout = "60s" }

[server]
extends = "reference"
keepalive = "15s"
"#;

fn args(file: PathBuf, format: &str, output: Option<PathBuf>) -> CheckArgs {
    CheckArgs { file, seeds: 2, format: format.into(), output, jobs: 2, shard: Default::default(), sets: vec![] }
}

#[test]
fn a_breaking_deployment_exits_1_names_the_invariant_and_the_fix_and_the_fix_exits_0() {
    let d = dir("exit");
    let naive = write(&d, "naive.toml", NAIVE);
    let deployment = Deployment::load(&naive).unwrap();
    let report = check(&deployment, 2, 2, &run, &Silent).unwrap();
    let broken: Vec<_> = report.cells.iter().filter(|c| c.broken()).collect();
    assert_eq!(broken.len(), 1, "only naive × long-tool breaks:\n{}", render_text(&report));
    let cell = broken[0];
    assert_eq!((cell.client.as_str(), cell.family.as_str()), ("naive", "long-tool"));
    assert!(cell.verdict().contains("no-duplicate-execution"), "{}", cell.verdict());
    assert!(cell.fixes.iter().any(|f| f == "keepalive"), "{:?}", cell.fixes);
    let text = render_text(&report);
    assert!(text.contains("no-duplicate-execution") && text.contains("--mitigate keepalive"), "{text}");
    // The replay command rebuilds the cell: the deployment's load balancer is a --set.
    let (seed, replay) = cell.tally.first_violation.clone().unwrap();
    assert!(replay.contains("--client naive --server reference --scenario long-tool --set lb.idle_timeout=60s"));
    assert!(replay.ends_with(&format!("--seed {seed}")), "{replay}");
    assert_eq!(cmd_check(&args(naive, "text", None)).unwrap(), Exit::Violated);

    let fixed = write(&d, "fixed.toml", FIXED);
    assert_eq!(cmd_check(&args(fixed, "text", None)).unwrap(), Exit::Clean);
}

#[test]
fn the_html_report_has_the_table_and_a_section_per_broken_cell() {
    let d = dir("html");
    let naive = write(&d, "naive.toml", NAIVE);
    let out = d.path().join("report.html");
    assert_eq!(cmd_check(&args(naive.clone(), "html", Some(out.clone()))).unwrap(), Exit::Violated);
    let page = std::fs::read_to_string(&out).expect("the report was written");
    let report = check(&Deployment::load(&naive).unwrap(), 2, 1, &run, &Silent).unwrap();
    assert_eq!(render_html(&report, &run).unwrap(), page, "the same deployment, the same bytes");
    for cell in report.cells.iter().filter(|c| c.broken()) {
        let id = anchor(cell);
        assert!(page.contains(&format!("href=\"#{id}\"")), "the table links {id}");
        assert!(page.contains(&format!("id=\"{id}\"")), "a section for {id}");
    }
    assert_eq!(page.matches("<section class=\"m-cell\"").count(), 1);
    assert_eq!(page.matches("<section class=\"m-trace\"").count(), 1, "the first failing seed's trace");
    for part in ["<svg", "Why no-duplicate-execution broke", "--mitigate keepalive", "m-check-table"] {
        assert!(page.contains(part), "{part}");
    }
}

#[test]
fn bad_deployments_are_bad_input_at_their_line_and_column() {
    let d = dir("bad");
    let err = |text: &str| {
        let f = write(&d, "bad.toml", text);
        let e = cmd_check(&args(f, "text", None)).unwrap_err();
        assert!(!matches!(e, mcpsim::SimError::Runtime(_)), "bad input, exit 2: {e}");
        e.to_string()
    };
    let at = |e: String, what: &str| assert!(e.contains(&format!("bad.toml:{what}")) && !e.contains('\n'), "{e}");
    at(err("server = \"reference\"\nclients = [\"naive\", \"nope\"]\n"), "2:21: unknown client profile \"nope\"");
    at(err("server = \"reference\"\n[lb]\nidle_timeout = \"soon\"\n"), "3:16: lb.idle_timeout=soon");
    at(err("[server]\nextends = \"py-sdk\"\nkeepalive = \"500ms\"\n"), "3:13: server.keepalive: 500ms is below");
    at(err("server = \"reference\"\nspeed = 1\n"), "2:1: unknown key `speed`");
    at(err("[server]\nkeepalive = \"15s\"\n"), "1:1: server: a table needs extends");
    at(err("server = \"reference\"\nfamilies = [\"long-tool\", \"nope\"]\n"), "2:26: unknown scenario \"nope\"");
    at(err("server = \"reference\"\n[set]\ntool.duration = \"48h\"\n"), "3:17: tool.duration");
}

#[test]
fn the_example_deployment_reads() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/deployment.toml");
    let d = Deployment::load(&example).unwrap();
    assert_eq!(d.server.0, "py-sdk");
    let s = d.scenario("ts-sdk", "chatty-tool").unwrap();
    assert_eq!(s.server.retention.window, Some(std::time::Duration::from_secs(600)));
    assert_eq!(s.server.retention.max_events, None);
    assert_eq!(s.lb.idle_timeout, Some(std::time::Duration::from_secs(60)));
}

/// Three replicas behind a round-robin balancer, each keeping its own sessions: every family
/// orphans the session it started on the replica the next connection does not reach.
const ROUND_ROBIN: &str = r#"
clients = ["reference"]
families = ["long-tool", "chatty-tool", "server-restart"]
server = "reference"

[lb]
replicas = 3
routing = "round-robin"
"#;

#[test]
fn the_deployments_own_routing_is_proposed_and_ranked_by_the_cells_it_makes_clean() {
    let d = dir("routing");
    let file = write(&d, "rr.toml", ROUND_ROBIN);
    let report = check(&Deployment::load(&file).unwrap(), 2, 2, &run, &Silent).unwrap();
    let text = render_text(&report);
    let broken: Vec<_> = report.cells.iter().filter(|c| c.broken()).collect();
    assert_eq!(broken.len(), 3, "every family breaks behind round robin:\n{text}");
    for c in &broken {
        assert!(c.fixes.iter().any(|f| f == "lb.routing=sticky-session"), "{} × {}: {:?}", c.client, c.family, c.fixes);
    }
    // Ranked: sticky sessions make all three clean, and come first with their count.
    let ranked = report.ranked();
    assert_eq!((ranked[0].0.name.as_str(), ranked[0].1), ("lb.routing=sticky-session", 3), "{text}");
    assert!(text.contains("  3/3  --set lb.routing=sticky-session: "), "{text}");
    assert!(text.contains("made clean by: --set lb.routing=sticky-session"), "{text}");
    assert!(text.contains("check ") && text.contains("rr.toml --set lb.routing=sticky-session"), "{text}");
    assert!(!text.contains("no single"), "{text}");
}

#[test]
fn check_set_tries_a_what_if_and_a_bad_one_is_bad_input() {
    let d = dir("what-if");
    let file = write(&d, "rr.toml", ROUND_ROBIN);
    let with = |sets: &[&str]| CheckArgs {
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..args(file.clone(), "text", None)
    };
    assert_eq!(cmd_check(&with(&[])).unwrap(), Exit::Violated);
    assert_eq!(cmd_check(&with(&["lb.routing=sticky-session"])).unwrap(), Exit::Clean);
    // The what-if is in every replay command, after the file's own settings.
    let deployment = Deployment::load(&file).unwrap().with_sets(&["lb.replicas=2".into()]).unwrap();
    let report = check(&deployment, 1, 1, &run, &Silent).unwrap();
    let (_, replay) = report.cells[0].tally.first_violation.clone().expect("still round robin");
    assert!(replay.contains("--set lb.replicas=3 --set lb.routing=round-robin --set lb.replicas=2"), "{replay}");
    for (set, message) in [
        ("lb.routing=sideways", "--set lb.routing=sideways: "),
        ("lb.nope=1", "--set lb.nope=1: unknown key"),
        ("routing", "--set routing: expected KEY=VALUE"),
    ] {
        let e = cmd_check(&with(&[set])).unwrap_err();
        assert!(matches!(e, mcpsim::SimError::Usage(_) | mcpsim::SimError::Invalid { .. }), "exit 2: {e}");
        assert!(e.to_string().contains(message) && !e.to_string().contains('\n'), "{e}");
    }
}

/// A gateway in front of the balancer that does not pass `Last-Event-ID` on.
const DROPS_LAST_EVENT_ID: &str = r#"
clients = ["reference"]
families = ["long-tool", "chatty-tool"]
server = "reference"
lb = { idle_timeout = "60s", hops = [{ drop_request_headers = ["last-event-id"] }] }
"#;

/// Every resume reaches the server as a fresh stream: both families break, and the same hops passing every header on make both clean. Its
/// `--set` is quoted so that a shell reads it back, and with it the deployment checks clean.
#[test]
fn a_hop_that_drops_last_event_id_is_fixed_by_passing_it_on_and_the_what_if_reads_back() {
    let d = dir("drops");
    let file = write(&d, "drops.toml", DROPS_LAST_EVENT_ID);
    let report = check(&Deployment::load(&file).unwrap(), 2, 2, &run, &Silent).unwrap();
    let text = render_text(&report);
    assert_eq!(report.cells.iter().filter(|c| c.broken()).count(), 2, "{text}");
    let ranked = report.ranked();
    let (pass_on, clean) = ranked.iter().find(|(f, _)| f.sets[0].0 == "lb.hops").expect("the hops passing headers on");
    assert_eq!(*clean, 2, "{text}");
    assert!(!pass_on.sets[0].1.contains("drop_request_headers"), "{:?}", pass_on.sets);
    // One single-quoted word, as a POSIX shell reads it (the TOML inside has no single quote).
    let args = pass_on.set_args();
    let word = args.strip_prefix("--set '").and_then(|w| w.strip_suffix('\'')).expect("one quoted word");
    assert!(word.starts_with("lb.hops=[{") && !word.contains('\''), "{word}");
    let deployment = Deployment::load(&file).unwrap().with_sets(&[word.to_string()]).expect("the what-if applies");
    let fixed = check(&deployment, 2, 2, &run, &Silent).unwrap();
    assert!(fixed.cells.iter().all(|c| !c.broken()), "{}", render_text(&fixed));
}
