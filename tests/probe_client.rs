//! `mcpsim probe client` against the real SDK fixture clients (`sim/probe/fixtures/{py,ts,rust}`,
//! installed by `install.sh`): the fields it decides from the server side must equal the
//! built-in client profile of that SDK, or be a known difference (`KNOWN_CLIENT_FIELD_DIFFERENCES`).
//!
//! Without the fixtures this skips with a message, unless `CI` or `MCPSIM_REALITY_REQUIRED` is
//! set: then a missing fixture fails. `MCPSIM_FIXTURES_DIR` points at another checkout's
//! installed fixtures. Real runs take wall-clock time (about 75 s, the three in parallel: rmcp's
//! cut-refuse run takes 36 s to show five attempts) and are not deterministic; the runs keep
//! margins of a second. The agreement of the same runs with the simulator is `tests/reality.rs`'s.
//! The opt-in `request-timeout` run (a silent tool call watched up to a bound of 72 s) runs beside
//! them in its own test, the three clients and TypeScript under a 30 s bound in parallel: about
//! as long again in CPU-idle waiting, no longer in wall time.

mod common;

use mcpsim::probe::client::runs::{
    client_field_agrees, compare, known_client_difference, probe_client, ClientProbeOptions, ClientProbeReport,
};
use mcpsim::probe::reality;
use mcpsim::probe::reality::client as client_reality;
use std::path::PathBuf;
use std::time::Duration;

fn in_ci() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    set("CI") || set("MCPSIM_REALITY_REQUIRED")
}

fn fixtures() -> PathBuf {
    std::env::var_os("MCPSIM_FIXTURES_DIR").map(PathBuf::from).unwrap_or_else(reality::fixtures_dir)
}

/// Probes each installed fixture client (in parallel), skipping or failing on a missing one.
fn probe(sdks: &[&'static str]) -> Vec<(&'static str, ClientProbeReport)> {
    let cases: Vec<_> = sdks.iter().map(|&sdk| (sdk, None)).collect();
    probe_cases(&cases).into_iter().map(|(sdk, _, r)| (sdk, r)).collect()
}

/// [`probe`], each client with its `request-timeout` bound: with one, that run alone.
fn probe_cases(cases: &[(&'static str, Option<Duration>)]) -> Vec<(&'static str, Option<Duration>, ClientProbeReport)> {
    let mut handles = Vec::new();
    for &(sdk, bound) in cases {
        let kind = reality::Sdk::parse(sdk).expect("a fixture SDK");
        match client_reality::client_command(kind, &fixtures()) {
            Ok(cmd) => handles.push((
                (sdk, bound),
                std::thread::spawn(move || {
                    let mut opts = ClientProbeOptions::new(cmd);
                    opts.name = format!("probed-{sdk}");
                    if bound.is_some() {
                        opts.request_timeout_bound = bound;
                        opts.only = vec!["request-timeout".into()];
                    }
                    probe_client(&opts)
                }),
            )),
            Err(why) if in_ci() => panic!("CI is set and a real-SDK fixture client is not installed: {why}"),
            Err(why) => common::skipped("probe_client", &format!("{sdk} not installed: {why}")),
        }
    }
    handles
        .into_iter()
        .map(|((sdk, bound), h)| {
            let r = h.join().expect("the probe thread does not panic");
            (sdk, bound, r.unwrap_or_else(|e| panic!("{sdk}: the probe could not run: {e}")))
        })
        .collect()
}

/// The opt-in `request-timeout` run: the tool's event stream opens and stays silent. TypeScript
/// (sdk 1.32.2, 60 s default) cancels the call at 60 s, inside a 72 s bound; Python (mcp 2.3.0)
/// and rmcp (3.11.0) have no request timeout and send nothing by the bound ("none": no timeout,
/// or one longer than the bound). Under a 30 s bound TypeScript too shows nothing ("none", which
/// agrees with a 60 s profile only because 60 s is past that bound). Each decided value agrees
/// with the SDK's built-in client profile, and the run's simulated mirror agrees with the real one.
#[test]
fn request_timeout_is_decided_within_the_bound_and_agrees_with_the_builtin_profiles() {
    let (long, short) = (Duration::from_secs(72), Duration::from_secs(30));
    let started = std::time::Instant::now();
    let all = probe_cases(&[("ts", Some(long)), ("py", Some(long)), ("rust", Some(long)), ("ts", Some(short))]);
    if all.is_empty() {
        common::skipped("probe_client", "no real-SDK fixture client installed (run sim/probe/fixtures/install.sh)");
        return;
    }
    eprintln!("request-timeout: {} probes in parallel took {} s", all.len(), started.elapsed().as_secs());
    for (sdk, bound, r) in &all {
        let bound = bound.expect("every case has a bound");
        eprintln!(
            "{sdk} (bound {} s):\n{}\n{}",
            bound.as_secs(),
            mcpsim::probe::client::runs::run_table(r),
            r.profile_toml
        );
        assert_eq!(r.runs.len(), 1, "{sdk}: the request-timeout run alone");
        let run = &r.runs[0];
        assert_eq!((run.name, run.bound), ("request-timeout", Some(bound)), "{sdk}");
        assert!(run.violations.is_empty(), "{sdk}: {:?}", run.violations);
        let kind = reality::Sdk::parse(sdk).expect("a fixture SDK");
        let (probed, builtin, agree) =
            client_reality::request_timeout_field(kind, r).unwrap_or_else(|e| panic!("{sdk}: undecided: {e}"));
        let why = &r.fields["request_timeout"].1;
        let call = run.seen.iter().find(|s| s.tool.as_deref() == Some("probe_work")).expect("the call was made");
        match (*sdk, bound == long) {
            ("ts", true) => {
                // Cancelled at 60 s: the notification names the call's id, then the client left.
                assert_eq!((probed.as_str(), builtin.as_str()), ("\"1m\"", "\"1m\""), "{why}");
                let cancel = run.seen.iter().find(|s| s.cancels.is_some()).expect("a notifications/cancelled");
                assert_eq!(cancel.cancels, call.id, "{why}");
                let after = cancel.at - call.at;
                assert!(after.abs_diff(Duration::from_secs(60)) < Duration::from_millis(500), "{after:?}: {why}");
                // The run ended with the client (exit after the cancel), well before the bound.
                assert!(run.ended_at < call.at + Duration::from_secs(63), "{:?}", run.ended_at);
                // "none" would not agree with ts-sdk's 60 s under a bound past it.
                assert!(!client_field_agrees(r, "request_timeout", "\"none\"", &builtin));
            }
            ("ts", false) => {
                // The same client under a 30 s bound: nothing by the bound, which a 60 s profile
                // agrees with (longer than the bound), and a 60 s decision would not be.
                assert_eq!((probed.as_str(), builtin.as_str()), ("\"none\"", "\"1m\""), "{why}");
                assert!(why.contains("longer than 30 s"), "{why}");
                assert!(run.seen.iter().all(|s| s.cancels.is_none()), "{why}");
                assert!(run.ended_at >= call.at + bound, "the run waited out the bound: {:?}", run.ended_at);
            }
            _ => {
                assert_eq!((probed.as_str(), builtin.as_str()), ("\"none\"", "\"none\""), "{sdk}: {why}");
                assert!(run.seen.iter().all(|s| s.cancels.is_none()), "{sdk}: {why}");
                assert!(run.ended_at >= call.at + bound, "{sdk}: the run waited out the bound: {:?}", run.ended_at);
                assert_eq!(run.exit, None, "{sdk}: still waiting for its call when killed");
            }
        }
        assert!(agree, "{sdk}: probed {probed} disagrees with the built-in {builtin} (bound {bound:?}): {why}");
        // The simulated mirror (the built-in profile against a tool that never answers): the same
        // verdict and the same requests, a cancel included, up to the real run's end.
        let rows = client_reality::client_rows(kind, r);
        assert_eq!(rows[0].agrees(), Some(true), "{sdk}: {:?}", rows[0]);
    }
}

fn field<'a>(r: &'a ClientProbeReport, name: &str) -> &'a str {
    r.fields.get(name).map(|(v, _)| v.as_str()).unwrap_or("(undetermined)")
}

#[test]
fn real_sdk_clients_behave_as_their_builtin_profiles_say() {
    let all = probe(&["py", "ts", "rust"]);
    if all.is_empty() {
        common::skipped("probe_client", "no real-SDK fixture client installed (run sim/probe/fixtures/install.sh)");
        return;
    }
    for (sdk, r) in &all {
        eprintln!("{sdk}:\n{}\n{}", mcpsim::probe::client::runs::run_table(r), r.profile_toml);
        let profile = match *sdk {
            "py" => "py-sdk",
            "ts" => "ts-sdk",
            _ => "rmcp",
        };
        let builtin = mcpsim_model::profiles::client(profile).expect("a built-in profile");
        // The fields the brief names, decided and equal to the built-in profile.
        for must in [
            "reconnect.max_attempts",
            "close_handling.on_404",
            "close_handling.on_empty_resume",
            "close_handling.resume_post_needs_event_id",
            "close_handling.on_unresumable_post",
            "reconnect.retry_field",
            "http.keep_alive",
        ] {
            assert!(r.fields.contains_key(must), "{sdk}: {must} undetermined: {:?}", r.undetermined);
        }
        let differs: Vec<_> = compare(&r.fields, &builtin)
            .into_iter()
            .filter(|(f, p, b)| p != b && known_client_difference(profile, f, p, b).is_none())
            .collect();
        assert!(differs.is_empty(), "{sdk}: probed fields differ from {profile}: {differs:?}");
        // Connection reuse through the tap: ts and py send a request on a connection that carried
        // a complete JSON answer (py only after JSON answers: `reuse_after = "json-body"`), rmcp
        // never.
        let want = if *sdk == "rust" { "false" } else { "true" };
        assert_eq!(field(r, "http.keep_alive"), want, "{sdk}: {:?}", r.fields.get("http.keep_alive"));
        // Which answers leave a connection reusable: any (ts: after a 202 too), a JSON body only
        // (py, which stops reading event streams early and leaves 202s unread); rmcp never reuses.
        let reuse = match *sdk {
            "ts" => Some("\"any\""),
            "py" => Some("\"json-body\""),
            _ => None,
        };
        if let Some(want) = reuse {
            assert_eq!(field(r, "http.reuse_after"), want, "{sdk}: {:?}", r.fields.get("http.reuse_after"));
        }
        if *sdk == "rust" {
            // rmcp: an immediate first attempt, then 1 s doubling without end or jitter; on 404
            // a new session and the call once more.
            assert_eq!(field(r, "reconnect.max_attempts"), "\"none\"", "{sdk}");
            assert_eq!(field(r, "reconnect.first_immediate"), "true", "{sdk}");
            assert_eq!(field(r, "reconnect.factor"), "2.0", "{sdk}");
            assert_eq!(field(r, "reconnect.jitter"), "0.0", "{sdk}");
            assert_eq!(field(r, "close_handling.on_404"), "\"reinitialize-resend-once\"", "{sdk}");
            // retry: 3 s after a 2 s own delay waits 3 s, before a 4 s one 4 s: the larger.
            assert_eq!(field(r, "reconnect.retry_field"), "\"at-least\"", "{sdk}");
        } else {
            assert_eq!(field(r, "reconnect.max_attempts"), "2", "{sdk}");
            assert_eq!(field(r, "close_handling.on_404"), "\"fail-keep-session\"", "{sdk}");
            // retry: 300 ms where its own delay is 1 s: the field's, not the larger.
            assert_eq!(field(r, "reconnect.retry_field"), "\"replaces\"", "{sdk}");
            // On 404: no re-initialize, no re-sent call, the dead session id kept.
            let nf = r.runs.iter().find(|x| x.name == "not-found").expect("the not-found run");
            let i = nf.seen.iter().position(|s| s.answer == "404").expect("a 404 was answered");
            assert_eq!(nf.seen.iter().filter(|s| s.rpc.as_deref() == Some("initialize")).count(), 1, "{sdk}");
            assert!(nf.seen[i + 1..].iter().all(|s| s.session == nf.seen[i].session), "{sdk}: kept the session id");
        }
        // Resumed the cut stream with the last event id it had.
        let cut = r.runs.iter().find(|x| x.name == "cut-resume").expect("the cut-resume run");
        let resume = cut.seen.iter().find(|s| s.method == "GET" && s.last_event_id.is_some());
        assert_eq!(resume.and_then(|s| s.last_event_id.clone()), cut.cut_after, "{sdk}: resumed with Last-Event-ID");
        // The oracles found nothing: the call ran once per session.
        for run in &r.runs {
            assert!(run.violations.is_empty(), "{sdk} {}: {:?}", run.name, run.violations);
        }
    }
}

/// curl as the client: two initializes in one curl (`--next`: one connection, reused after a
/// complete answer) and in two curls (two connections): the tap tells them apart.
#[test]
fn a_client_that_reuses_a_kept_alive_connection_is_told_from_one_that_does_not() {
    if std::process::Command::new("curl").arg("--version").output().is_err() {
        common::skipped("probe_client", "no curl");
        return;
    }
    let one = r#"curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' "$MCPSIM_PROBE_URL""#;
    let body = one.split_once("curl ").map(|(_, rest)| rest).expect("a curl command");
    let keep = |script: String| -> (String, String, ClientProbeReport) {
        let mut opts = ClientProbeOptions::new(vec!["sh".into(), "-c".into(), script]);
        opts.only = vec!["cut-resume".into()];
        let r = probe_client(&opts).expect("the probe runs");
        let (v, why) = r
            .fields
            .get("http.keep_alive")
            .cloned()
            .unwrap_or_else(|| ("(undetermined)".into(), format!("{:?}", r.undetermined)));
        (v, why, r)
    };
    let (v, why, r) = keep(format!("{one} --next {body}"));
    assert_eq!(v, "true", "{why}\n{}", mcpsim::probe::client::runs::run_table(&r));
    let run = &r.runs[0];
    assert_eq!((run.seen.len(), run.tcp_connections), (2, 1), "{why}");
    assert_eq!(run.seen[1].reused_after.as_deref(), Some("initialize: 200 application/json"), "{why}");
    let (v, why, r) = keep(format!("{one}; {one}"));
    assert_eq!(v, "false", "{why}\n{}", mcpsim::probe::client::runs::run_table(&r));
    assert_eq!((r.runs[0].seen.len(), r.runs[0].tcp_connections), (2, 2), "{why}");
}

#[test]
fn an_empty_command_is_refused() {
    assert!(probe_client(&ClientProbeOptions::new(Vec::new())).is_err());
    let mut opts = ClientProbeOptions::new(vec!["true".into()]);
    opts.only = vec!["no-such-run".into()];
    assert!(probe_client(&opts).is_err());
}

/// OAuth discovery before the MCP requests (as mcp-remote and FastMCP's client do): the tap
/// answers it 404 and counts only the MCP endpoint's requests and connections.
#[test]
fn requests_for_other_paths_than_the_mcp_endpoint_are_not_counted() {
    if std::process::Command::new("curl").arg("--version").output().is_err() {
        common::skipped("probe_client", "no curl");
        return;
    }
    let discover = r#"curl -s -o /dev/null "${MCPSIM_PROBE_URL%/mcp}/.well-known/oauth-protected-resource""#;
    let init = r#"curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' "$MCPSIM_PROBE_URL""#;
    let mut opts = ClientProbeOptions::new(vec!["sh".into(), "-c".into(), format!("{discover}; {discover}; {init}")]);
    opts.only = vec!["cut-resume".into()];
    let r = probe_client(&opts).expect("the probe runs");
    let run = &r.runs[0];
    let table = mcpsim::probe::client::runs::run_table(&r);
    assert_eq!((run.seen.len(), run.tcp_connections, run.other_count), (1, 1, 2), "{table}");
    assert_eq!(run.seen[0].rpc.as_deref(), Some("initialize"), "{table}");
    assert!(run.other_requests[0].starts_with("GET /.well-known/oauth-protected-resource"), "{table}");
}

/// Without the fixtures, plain `cargo test` (output captured) shows the real-SDK test as
/// skipped, on its own line, instead of a silent `ok`; with `MCPSIM_REALITY_REQUIRED` (CI) it
/// fails. Runs this test binary again on the real test, with the fixtures pointed at nothing.
#[test]
fn without_the_fixtures_the_real_sdk_test_says_skipped_and_fails_when_required() {
    let test = "real_sdk_clients_behave_as_their_builtin_profiles_say";
    let nowhere = std::env::temp_dir().join(format!("mcpsim-no-fixtures-{}", std::process::id()));
    let child = |required: bool| {
        let mut c = std::process::Command::new(std::env::current_exe().expect("the test binary"));
        c.args([test, "--exact", "--test-threads", "1"]).env("MCPSIM_FIXTURES_DIR", &nowhere);
        c.env_remove("CI").env_remove("MCPSIM_REALITY_REQUIRED");
        if required {
            c.env("MCPSIM_REALITY_REQUIRED", "1");
        }
        c.output().expect("the test binary runs")
    };
    let skipped = child(false);
    let err = String::from_utf8_lossy(&skipped.stderr);
    let out = String::from_utf8_lossy(&skipped.stdout);
    assert!(skipped.status.success(), "{out}\n{err}");
    assert!(err.contains(&"SKIPPED probe_client: no real-SDK fixture client installed".to_string()), "{err}");
    assert!(out.contains("1 passed"), "{out}");
    let required = child(true);
    assert!(!required.status.success(), "MCPSIM_REALITY_REQUIRED makes a missing fixture a failure");
}
