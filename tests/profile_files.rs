//! Profiles as files: every built-in profile, dumped to a file and loaded back by its path, runs
//! byte for byte like the built-in name; a file that extends a built-in changes only what it
//! says; a bad file is one line naming the file, the line, the column and what was expected.

use mcpsim::report::artifacts::first_difference;
use mcpsim::scenario::ScenarioArgs;
use mcpsim::{run, Scenario, SimError};
use mcpsim_model::profiles::{self, Role};
use tempfile::TempDir;

/// A fresh directory for this test's files, removed when dropped (at the end of the test, also
/// when it panics).
fn dir(name: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("mcpsim-profile-files-{name}-")).tempdir().expect("a writable temp dir")
}

fn write(dir: &TempDir, file: &str, text: &str) -> String {
    let path = dir.path().join(file);
    std::fs::write(&path, text).expect("a writable temp dir");
    path.display().to_string()
}

fn build(client: &str, server: &str, family: &str, sets: &[&str]) -> Result<Scenario, SimError> {
    ScenarioArgs {
        client: client.into(),
        server: server.into(),
        scenario: family.into(),
        sets: sets.iter().map(|s| s.to_string()).collect(),
    }
    .build()
}

/// Runs both scenarios with one seed and asserts their traces are the same bytes (header and
/// all when `whole`; the steps and verdict when the header records a different `--set`).
fn same_trace(by_name: &Scenario, by_file: &Scenario, what: &str, whole: bool) {
    let (a, b) = (run(by_name, 3).expect("runs"), run(by_file, 3).expect("runs"));
    assert_eq!(first_difference(&a.trace, &b.trace), None, "{what}");
    let lines = |t: &mcpsim_model::trace::Trace| {
        t.to_jsonl().lines().skip(usize::from(!whole)).map(String::from).collect::<Vec<_>>()
    };
    assert!(lines(&a.trace) == lines(&b.trace), "{what}: the traces differ");
    assert!(a.trace.steps.len() > 10, "{what}: the run did something");
}

#[test]
fn every_builtin_profile_dumped_and_loaded_back_runs_byte_for_byte_the_same() {
    let d = dir("dump");
    for name in profiles::CLIENT_NAMES {
        let text = profiles::dump(Role::Client, name).expect("listed").expect("valid");
        let path = write(&d, &format!("client-{name}.toml"), &text);
        let by_name = build(name, "reference", "long-tool", &[]).expect("builds");
        let by_file = build(&path, "reference", "long-tool", &[]).expect("the dump loads");
        assert_eq!(by_file.client, by_name.client, "client {name}");
        assert!(by_file.cli_args().contains(&format!("--client {path}")), "the replay command names the file");
        same_trace(&by_name, &by_file, &format!("client {name}"), true);
    }
    for name in profiles::SERVER_NAMES {
        let text = profiles::dump(Role::Server, name).expect("listed").expect("valid");
        let path = write(&d, &format!("server-{name}.toml"), &text);
        let by_name = build("reference", name, "server-restart", &[]).expect("builds");
        let by_file = build("reference", &path, "server-restart", &[]).expect("the dump loads");
        assert_eq!(by_file.server, by_name.server, "server {name}");
        same_trace(&by_name, &by_file, &format!("server {name}"), true);
    }
    let text = profiles::dump(Role::Lb, "default").expect("listed").expect("valid");
    let path = write(&d, "lb.toml", &text);
    let by_name = build("naive", "reference", "long-tool", &[]).expect("builds");
    let by_file = build("naive", "reference", "long-tool", &[&format!("lb={path}")]).expect("the dump loads");
    assert_eq!(by_file.lb, by_name.lb);
    same_trace(&by_name, &by_file, "lb default", false);
}

#[test]
fn a_file_that_extends_a_builtin_changes_only_what_it_says() {
    let d = dir("extends");
    write(&d, "base.toml", "extends = \"rmcp\"\nkeepalive = \"none\"\n");
    // A path relative to the file that names it, over a file over a built-in.
    let mine = write(&d, "mine.toml", "extends = \"./base.toml\"\n\n[retention]\nmax_events = 50\n");
    let s = build("reference", &mine, "long-tool", &[]).expect("loads");
    let rmcp = profiles::server("rmcp").expect("listed");
    assert_eq!(s.server.name, "mine", "a file without a name is named after itself");
    assert_eq!((s.server.keepalive, s.server.retention.max_events), (None, Some(50)));
    assert_eq!(s.server.retention.drop_on_response, rmcp.retention.drop_on_response);
    assert_eq!(
        (s.server.replay, s.server.evicted_id, s.server.retry_ms),
        (rmcp.replay, rmcp.evicted_id, rmcp.retry_ms)
    );
    // The same as the built-in with the two fields set on the command line.
    let by_set = build("reference", "rmcp", "long-tool", &["server.keepalive=none", "server.retention.max_events=50"])
        .expect("builds");
    assert_eq!(s.server, mcpsim_model::config::ServerPolicy { name: "mine".into(), ..by_set.server.clone() });
    let client = write(&d, "jittery.toml", "extends = \"ts-sdk\"\nname = \"jittery\"\n[reconnect]\njitter = 0.25\n");
    let c = build(&client, "reference", "long-tool", &[]).expect("loads").client;
    assert_eq!((c.name.as_str(), c.reconnect.jitter, c.reconnect.factor), ("jittery", 0.25, 1.5));
}

/// The one-line error a file gets (the binary prints it and exits 2: not an internal error).
fn error_of(client: &str, server: &str) -> String {
    let e = build(client, server, "long-tool", &[]).expect_err("a bad file is refused");
    assert!(!matches!(e, SimError::Runtime(_)), "bad input, not an internal error: {e}");
    let text = e.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    text
}

#[test]
fn bad_files_are_one_line_with_file_line_column_and_what_was_expected() {
    let d = dir("bad");
    let f = write(&d, "syntax.toml", "extends = \"rmcp\"\nkeepalive = = \"15s\"\n");
    let e = error_of("reference", &f);
    assert!(e.starts_with(&format!("{f}:2:")), "{e}");

    let f = write(&d, "unknown.toml", "extends = \"rmcp\"\n[priming]\npost = true\nprime_time = true\n");
    assert_eq!(
        error_of("reference", &f).split(" (").next(),
        Some(format!("{f}:4:1: unknown key `priming.prime_time`").as_str())
    );

    let f = write(&d, "variant.toml", "extends = \"rmcp\"\nsecond_get = \"maybe\"\n");
    let e = error_of("reference", &f);
    assert!(
        e.starts_with(&format!("{f}:2:14: second_get: unknown variant `maybe`, expected one of `reject409`, `accept`, `reject400`, `replace`, `shadow`, `empty-closed`, `end-session`, `restart-process`")),
        "{e}"
    );

    let f = write(&d, "type.toml", "extends = \"reference\"\n[reconnect]\nmax_attempts = \"often\"\n");
    let e = error_of(&f, "reference");
    assert!(
        e.starts_with(&format!("{f}:3:16: reconnect.max_attempts: invalid type: string \"often\", expected u32")),
        "{e}"
    );

    // The validation rules, at the value that breaks them.
    let f = write(&d, "zero.toml", "extends = \"ts-sdk\"\nkeepalive = \"0s\"\n");
    let e = error_of("reference", &f);
    assert!(e.starts_with(&format!("{f}:2:13: keepalive: 0 does not mean no keep-alives: write none")), "{e}");
    let f = write(&d, "shrink.toml", "extends = \"reference\"\n\n[reconnect]\nfactor = 0.5\n");
    assert!(error_of(&f, "reference").starts_with(&format!("{f}:4:10: reconnect.factor: 0.5 is below 1")));
    let f = write(&d, "cap.toml", "extends = \"reference\"\n[reconnect]\nmax = \"100ms\"\n");
    assert!(error_of(&f, "reference").starts_with(&format!("{f}:3:7: reconnect.max: the cap 100ms is below")));

    let f = write(&d, "incomplete.toml", "name = \"x\"\npersistence = \"durable\"\n");
    let e = error_of(&f, "reference");
    assert!(e.starts_with(&format!("{f}:1:1: missing field")) && e.contains("extends"), "{e}");

    let a = write(&d, "a.toml", "extends = \"./b.toml\"\n");
    write(&d, "b.toml", "extends = \"./a.toml\"\n");
    assert!(error_of(&a, "reference").contains("a cycle"));

    let missing = d.path().join("nope.toml").display().to_string();
    assert!(error_of(&missing, "reference").starts_with(&missing));
    assert!(error_of("nope", "reference").contains("or a path to a .toml file"));
}
