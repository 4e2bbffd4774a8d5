//! A fleet of several kinds of client in one run (issue 21, docs/eras.md "A rolling upgrade"):
//! `sim/scenarios/rolling-upgrade-mixed.toml` gives client 1 the modern-only `stateless-2026`
//! profile and client 2 Python's auto client, client 0 runs `--client`; each client's actor runs
//! its own policy (`Scenario::client_policy`), the trace header holds them, and a study that
//! reasons about one profile refuses the fleet.

mod common;
use common::{replay, run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::report::artifacts::scenario_in_header;
use mcpsim::Scenario;
use mcpsim_model::era::{Era, Refusal};
use mcpsim_model::http::ClientMessage;
use mcpsim_model::ids::ConnId;
use mcpsim_model::trace::{Step, StepKind};
use std::collections::BTreeSet;
use std::path::Path;

const FAMILY: &str = "sim/scenarios/rolling-upgrade-mixed.toml";
const AUTO: &str = "docs/examples/py-sdk-auto.toml";
/// The deploy restarts replica 0 at 2m (then 1 at 150s, 2 at 3m).
const DEPLOY_US: u64 = 120_000_000;

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel).display().to_string()
}

fn mixed(sets: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(&repo(FAMILY), "py-sdk", "py-sdk").unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&sets).unwrap_or_else(|e| panic!("{e}"));
    s
}

/// Client `client`'s own steps (its process and its application).
fn steps_of(outcome: &RunOutcome, client: u32) -> Vec<&Step> {
    outcome.trace.steps.iter().filter(|s| s.client == Some(client)).collect()
}

/// The bodies client `client` sent, in order, each with its connection and session header.
fn sent(outcome: &RunOutcome, client: u32) -> Vec<(ConnId, &ClientMessage, bool)> {
    steps_of(outcome, client)
        .into_iter()
        .filter_map(|s| match &s.kind {
            StepKind::Send { conn, request } => request.body.as_ref().map(|b| (*conn, b, request.session.is_some())),
            _ => None,
        })
        .collect()
}

fn chosen(outcome: &RunOutcome, client: u32) -> Vec<(u64, Era, bool)> {
    steps_of(outcome, client)
        .into_iter()
        .filter_map(|s| match s.kind {
            StepKind::EraChosen { era, probed } => Some((s.t, era, probed)),
            _ => None,
        })
        .collect()
}

/// A server's answer to a request: served under an era (in a session or not), or refused.
type Answer = Result<(Era, bool), Refusal>;

/// What the servers did with client `client`'s connections.
fn server_answers(outcome: &RunOutcome, client: u32) -> Vec<(ConnId, Answer)> {
    outcome
        .trace
        .steps
        .iter()
        .filter(|s| s.conn_client == Some(client))
        .filter_map(|s| match &s.kind {
            StepKind::EraServed { conn, era, session, .. } => Some((*conn, Ok((*era, session.is_some())))),
            StepKind::EraRefused { conn, refusal } => Some((*conn, Err(*refusal))),
            _ => None,
        })
        .collect()
}

fn is_initialize(m: &ClientMessage) -> bool {
    matches!(m, ClientMessage::Initialize { .. })
}

fn is_discover(m: &ClientMessage) -> bool {
    matches!(m, ClientMessage::Discover { .. })
}

#[test]
fn the_file_gives_each_client_its_profile_and_the_others_keep_the_command_s() {
    let s = mixed(&[]);
    assert_eq!((s.clients, s.is_mixed()), (3, true));
    let names: Vec<&str> = s.client_policies().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["py-sdk", "stateless-2026", "py-sdk-auto"]);
    assert_eq!(s.client_label(), "py-sdk+stateless-2026+py-sdk-auto");
    // Another --client changes client 0 only.
    let other = Scenario::build(&repo(FAMILY), "rmcp", "py-sdk").unwrap();
    let names: Vec<&str> = other.client_policies().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["rmcp", "stateless-2026", "py-sdk-auto"]);
}

#[test]
fn each_client_speaks_its_own_era_in_one_run() {
    let s = mixed(&[]);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);

    // Client 0, legacy: initializes a session, sends every later request in it, never probes.
    let zero = sent(&outcome, 0);
    assert!(zero.first().is_some_and(|(_, m, session)| is_initialize(m) && !session), "{replay}");
    assert!(zero.iter().skip(1).all(|(_, _, session)| *session), "{replay}");
    assert!(!zero.iter().any(|(_, m, _)| is_discover(m)) && chosen(&outcome, 0).is_empty(), "{replay}");

    // Client 1, modern: no initialize, no Mcp-Session-Id, ever; refused by the old build (the
    // legacy-only replicas' own 400), served modern (in no session) by an upgraded one.
    let one = sent(&outcome, 1);
    assert!(!one.is_empty(), "{replay}");
    assert!(one.iter().all(|(_, m, session)| !is_initialize(m) && !is_discover(m) && !session), "{replay}");
    assert_eq!(chosen(&outcome, 1).iter().map(|c| (c.1, c.2)).collect::<Vec<_>>(), [(Era::Modern, false)]);
    let answers = server_answers(&outcome, 1);
    assert!(answers.contains(&(ConnId(1), Err(Refusal::LegacyNoSession))), "before the deploy: {answers:?}");
    assert!(answers.iter().any(|(_, a)| *a == Ok((Era::Modern, false))), "an upgraded replica: {answers:?}");
    assert!(answers.iter().all(|(_, a)| !matches!(a, Ok((_, true)) | Ok((Era::Legacy, _)))), "{answers:?}");

    // Client 2, auto: probes server/discover first, a legacy-only replica refuses it, it falls
    // back to initialize and holds a session from then on.
    let two = sent(&outcome, 2);
    let (probe, first, _) = two[0];
    assert!(is_discover(first), "{replay}");
    assert!(two.get(1).is_some_and(|(_, m, _)| is_initialize(m)), "{replay}");
    assert_eq!(server_answers(&outcome, 2).first(), Some(&(probe, Err(Refusal::LegacyNoSession))), "{replay}");
    let picks = chosen(&outcome, 2);
    assert!(picks.len() == 1 && picks[0].1 == Era::Legacy && picks[0].2 && picks[0].0 < DEPLOY_US, "{picks:?}");
    assert!(two.iter().skip(2).all(|(_, _, session)| *session), "{replay}");
}

#[test]
fn an_auto_client_started_after_the_upgrade_probes_again_and_goes_modern() {
    // Client 2 restarts at 200s, when every replica serves both eras: its new process probes,
    // the replica answers, and it speaks modern from then on.
    let s = mixed(&[("fault.restart", "client2@200s")]);
    let outcome = run_ok(&s, 0);
    let picks: Vec<(Era, bool)> = chosen(&outcome, 2).iter().map(|c| (c.1, c.2)).collect();
    assert_eq!(picks, [(Era::Legacy, true), (Era::Modern, true)], "{}", replay(&s, 0));
    let after: Vec<_> = steps_of(&outcome, 2)
        .into_iter()
        .filter(|s| s.t >= 200_000_000)
        .filter_map(|s| match &s.kind {
            StepKind::Send { request, .. } => request.body.clone().map(|b| (b, request.session.is_some())),
            _ => None,
        })
        .collect();
    assert!(after.first().is_some_and(|(m, _)| is_discover(m)), "{after:?}");
    assert!(after.iter().all(|(m, session)| !is_initialize(m) && !session), "{after:?}");
    // The other two clients' eras are unchanged by it.
    assert_eq!(chosen(&outcome, 1).len(), 1);
    assert!(chosen(&outcome, 0).is_empty());
}

#[test]
fn the_mixed_run_s_verdict_is_the_deploy_s_not_the_eras() {
    let s = mixed(&[]);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);
    assert_eq!(violated(&outcome), BTreeSet::from(["no-false-failure", "no-orphaned-session"]), "{replay}");
    // The legacy client's payment across replica 0's restart and the auto client's across
    // replica 2's (it fell back to legacy before the deploy and never probes again).
    let subjects: BTreeSet<(&str, &str)> =
        outcome.violations.iter().map(|v| (v.invariant.name(), v.subject.as_str())).collect();
    assert!(subjects.contains(&("no-false-failure", "call3")) && subjects.contains(&("no-false-failure", "call5")));
    let orphaned: Vec<&str> = outcome
        .violations
        .iter()
        .filter(|v| v.invariant.name() == "no-orphaned-session")
        .map(|v| v.detail.as_str())
        .collect();
    assert_eq!(orphaned.len(), 2, "{replay}");
    assert!(orphaned.iter().any(|d| d.starts_with("client 0 ")) && orphaned.iter().any(|d| d.starts_with("client 2 ")));
    // Nothing of the modern client's: the old build refuses it before any call runs, and no
    // request of any client is judged under two eras.
    let modern_calls = ["call1", "call4", "call6", "call8"];
    assert!(outcome.violations.iter().all(|v| !modern_calls.contains(&v.subject.as_str())), "{replay}");
    assert!(!violated(&outcome).contains("era-consistent"));
}

/// An auto client that goes modern while it still holds a session of a legacy build sends its
/// calls with no `Mcp-Session-Id`, and what their streams carry belongs to no session: the
/// application is handed it under the empty session the server stored it under, not under the
/// session the client holds (a guided sweep of this family read the 25 progress events of such a
/// call as never delivered: `no-silent-event-loss`, conditions 1-4 held).
#[test]
fn a_modern_call_s_events_reach_the_application_under_no_session_while_a_legacy_one_is_held() {
    let mut s = Scenario::build(&repo(FAMILY), "reference", "reference").unwrap_or_else(|e| panic!("{e}"));
    let sets = [
        ("tool.duration", "135s"),
        ("server.retry", "14s"),
        ("client.backoff_initial", "3257ms"),
        ("client.backoff_factor", "1.0"),
        ("net.latency", "7ms..129ms"),
        ("lb.routing", "round-robin"),
        ("app.calls", "1s client=1; +466s client=2"),
        ("fault.deploy", "266s/34s"),
        ("fault.reset", "215s"),
        ("fault.server_restart", "318s"),
    ];
    let sets: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&sets).unwrap_or_else(|e| panic!("{e}"));
    let seed = 16_090_883_699_493_918_522;
    let outcome = run_ok(&s, seed);
    let replay = replay(&s, seed);
    let two = steps_of(&outcome, 2);
    let modern_at = chosen(&outcome, 2).iter().rev().find(|c| c.1 == Era::Modern).map(|c| c.0);
    let modern_at = modern_at.unwrap_or_else(|| panic!("client 2 never went modern: {replay}"));
    // It still held a session then: a response head named one before, and no restart since.
    let held = two
        .iter()
        .any(|s| s.t < modern_at && matches!(&s.kind, StepKind::Response { head, .. } if head.session.is_some()));
    assert!(held, "{replay}");
    let handed: Vec<&str> = two
        .iter()
        .filter(|s| s.t >= modern_at)
        .filter_map(|s| match &s.kind {
            StepKind::AppEvent { session, call: Some(_), .. } | StepKind::AppResult { session, .. } => {
                Some(session.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(handed.len() > 20, "the call's progress and result: {handed:?}\n{replay}");
    assert!(handed.iter().all(|s| s.is_empty()), "{handed:?}\n{replay}");
    assert!(!violated(&outcome).contains("no-silent-event-loss"), "{replay}");
}

#[test]
fn a_profile_given_to_client_1_changes_client_1_and_only_client_1() {
    // Two clients on one dual-era server; client 1 given stateless-2026 or not.
    let build = |profiles: &str| {
        let mut s = Scenario::build("two-sessions-same-request-id", "py-sdk", "py-sdk").unwrap();
        s.apply_overrides(&[("app.client_profiles".into(), profiles.into())]).unwrap();
        s
    };
    let (same, given) = (build("none"), build("1=stateless-2026"));
    assert!(!same.is_mixed() && given.is_mixed());
    let (a, b) = (run_ok(&same, 0), run_ok(&given, 0));
    let bodies = |o: &RunOutcome, c| -> Vec<String> {
        sent(o, c).iter().map(|(conn, m, session)| format!("{conn} {m:?} {session}")).collect()
    };
    // Client 0 sends the same requests in both runs.
    assert_eq!(bodies(&a, 0), bodies(&b, 0), "{}", replay(&given, 0));
    // Client 1 initializes a session with its py-sdk profile, and none with stateless-2026.
    assert!(sent(&a, 1).iter().any(|(_, m, _)| is_initialize(m)));
    assert!(sent(&b, 1).iter().all(|(_, m, session)| !is_initialize(m) && !session), "{}", replay(&given, 0));
    assert!(chosen(&a, 1).is_empty() && chosen(&b, 1).iter().all(|c| c.1 == Era::Modern));
    assert!(chosen(&a, 0).is_empty() && chosen(&b, 0).is_empty());
}

#[test]
fn a_mixed_trace_replays_from_its_header_byte_for_byte_and_single_profile_headers_are_unchanged() {
    let s = mixed(&[]);
    let outcome = run_ok(&s, 0);
    let header = &outcome.trace.header;
    let recorded = scenario_in_header(Path::new("mixed.jsonl"), header).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(recorded.client_profiles, s.client_profiles);
    let again = run_ok(&recorded, 0);
    assert_eq!(again.trace.to_jsonl(), outcome.trace.to_jsonl());
    // A scenario with one profile writes no client_profiles: its traces keep their bytes.
    let single = Scenario::build("long-tool", "py-sdk", "py-sdk").unwrap();
    let json = serde_json::to_string(&single).unwrap();
    assert!(!json.contains("client_profiles"), "{json}");
    assert!(serde_json::to_string(&s).unwrap().contains("\"client_profiles\":{\"1\":"));
}

#[test]
fn the_printed_command_rebuilds_the_fleet_or_refuses() {
    // From the family file: the command is the family's.
    let s = mixed(&[]);
    assert!(!s.cli_args().contains("client_profiles"), "{}", s.cli_args());
    // Given on the command line: the --set is recorded, and rebuilds it.
    let mut given = Scenario::build("two-sessions-same-request-id", "py-sdk", "py-sdk").unwrap();
    let auto = repo(AUTO);
    given.apply_overrides(&[("app.client_profiles".into(), format!("1={auto}"))]).unwrap();
    assert!(given.cli_args().ends_with(&format!("--set app.client_profiles=1={auto}")), "{}", given.cli_args());
    // Edited in code: the key that says it is derived.
    let mut edited = Scenario::build("two-sessions-same-request-id", "py-sdk", "py-sdk").unwrap();
    let modern = Scenario::build("long-tool", "stateless-2026", "py-sdk").unwrap().client;
    edited.client_profiles.insert(1, modern);
    assert!(edited.cli_args().ends_with("--set app.client_profiles=1=stateless-2026"), "{}", edited.cli_args());
    // A per-client field no key writes: the line refuses to run.
    edited.client_profiles.get_mut(&1).unwrap().reconnect.jitter = 0.3;
    assert!(edited.cli_args().ends_with("--set unreplayable=client_profiles"), "{}", edited.cli_args());
}

#[test]
fn bad_client_profiles_are_one_line_errors() {
    let err = |value: &str| {
        let mut s = Scenario::build("two-sessions-same-request-id", "py-sdk", "py-sdk").unwrap();
        let e = s.apply_overrides(&[("app.client_profiles".into(), value.into())]).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    };
    let e = err("1=nope");
    assert!(e.contains("client 1") && e.contains("stateless-2026"), "an unknown profile lists the known: {e}");
    let e = err("2=stateless-2026");
    assert!(e.contains("client 2 is given a profile, but the scenario has only 2 client(s)"), "{e}");
    assert!(err("stateless-2026").contains("CLIENT=PROFILE"));
    assert!(err("one=stateless-2026").contains("not a client index"));
    assert!(err("1=stateless-2026,1=py-sdk").contains("given twice"));
    assert!(err("1=./no-such-profile.toml").contains("no-such-profile.toml"));
    // Fewer clients than the profiles name, after the family gave them.
    let mut s = mixed(&[]);
    let e = s
        .apply_overrides(&[("app.calls".into(), "1s".into()), ("app.clients".into(), "2".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("client 2 is given a profile"), "{e}");
}

#[test]
fn a_family_file_s_bad_client_profiles_say_where() {
    // Removed when dropped (at the end of the test, also when it panics).
    let tmp = tempfile::Builder::new().prefix("mcpsim-mixed-fleet-").tempdir().unwrap();
    let dir = tmp.path();
    let err = |body: &str| {
        let path = dir.join("bad.toml");
        std::fs::write(&path, format!("extends = \"two-sessions-same-request-id\"\n{body}")).unwrap();
        Scenario::build(&path.display().to_string(), "py-sdk", "py-sdk").unwrap_err().to_string()
    };
    let e = err("[client_profiles]\n1 = \"nope\"\n");
    assert!(e.contains("bad.toml:3:5: client_profiles.1:") && !e.contains('\n'), "{e}");
    let e = err("[client_profiles]\nx = \"stateless-2026\"\n");
    assert!(e.contains("bad.toml:3:1: client_profiles: `x` is not a client index"), "{e}");
    let e = err("[client_profiles]\n5 = \"stateless-2026\"\n");
    assert!(e.contains("bad.toml:") && e.contains("client 5 is given a profile"), "{e}");
    let e = err("[client_profiles]\n1 = 3\n");
    assert!(e.contains("bad.toml:3:5:"), "{e}");
    // A path is read relative to the family file.
    std::fs::copy(repo(AUTO), dir.join("auto.toml")).unwrap();
    let path = dir.join("ok.toml");
    std::fs::write(&path, "extends = \"two-sessions-same-request-id\"\n[client_profiles]\n1 = \"auto.toml\"\n")
        .unwrap();
    let s = Scenario::build(&path.display().to_string(), "py-sdk", "py-sdk").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.client_policy(1).name, "py-sdk-auto");
    assert_eq!(s.client_policy(0).name, "py-sdk");
}

#[test]
fn studies_that_reason_about_one_client_profile_refuse_a_fleet() {
    let s = mixed(&[]);
    for study in ["advise", "check", "matrix"] {
        let e = s.require_one_client_profile(study).unwrap_err().to_string();
        assert!(e.starts_with(study) && e.contains("client 1") && !e.contains('\n'), "{e}");
    }
    assert!(Scenario::build("long-tool", "py-sdk", "py-sdk").unwrap().require_one_client_profile("advise").is_ok());
    // A sweep runs a fleet, but predicts no boundary for it.
    let why = mcpsim::studies::advise::predict(&s, "server.retention").unwrap().unwrap_err();
    assert!(why.contains("several client profiles"), "{why}");
    // The matrix's "cannot talk": a fleet cannot when none of its clients can.
    use mcpsim::studies::matrix::incompatibility;
    let mut modern_server = Scenario::build("two-sessions-same-request-id", "py-sdk", "stateless-2026").unwrap();
    assert!(incompatibility(&modern_server).is_some_and(|n| n.contains("400 before any call")));
    modern_server.apply_overrides(&[("app.client_profiles".into(), "1=stateless-2026".into())]).unwrap();
    assert_eq!(incompatibility(&modern_server), None);
    modern_server.apply_overrides(&[("app.client_profiles".into(), "1=rmcp".into())]).unwrap();
    assert!(incompatibility(&modern_server).is_some());
}

#[test]
fn a_dumped_fleet_loads_back_as_the_same_scenario() {
    let s = mixed(&[]);
    let text = mcpsim::scenario::family_files::dump(&s, "mixed").unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("[client_profiles]\n1 = \"stateless-2026\"\n2 = \"/"), "an absolute path:\n{text}");
    // Removed when dropped (at the end of the test, also when it panics).
    let tmp = tempfile::Builder::new().prefix("mcpsim-mixed-dump-").tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("dumped.toml");
    std::fs::write(&path, &text).unwrap();
    let back =
        Scenario::build(&path.display().to_string(), "py-sdk", "py-sdk").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.client_profiles, s.client_profiles);
    assert_eq!(run_ok(&back, 0).trace.to_jsonl(), run_ok(&s, 0).trace.to_jsonl());
    // A per-client policy edited in code is no family file's to say.
    let mut edited = s.clone();
    edited.client_profiles.get_mut(&1).unwrap().reconnect.jitter = 0.3;
    let e = mcpsim::scenario::family_files::dump(&edited, "").unwrap_err().to_string();
    assert!(e.contains("client 1's profile differs"), "{e}");
}
