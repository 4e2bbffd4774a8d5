//! Server behaviours observed in the field (`sim/probe/fixtures/OBSERVED.md`, the SDKs' issues and
//! sources): each is a `ServerPolicy` or `ToolSpec` field, and each test here fails if the model
//! stops showing what the field says, end to end through client, load balancer and server.

use mcpsim::report::artifacts::{read_trace, recorded_scenario};
use mcpsim::run;
use mcpsim_model::config::{DetachedEvents, LbConfig, OnAbort, ReplayScope, SideEffectAt, ToolSpec, UnknownSession};
use mcpsim_model::http::ServerMessage;
use mcpsim_model::profiles;
use mcpsim_model::testing::Pair;
use mcpsim_model::trace::{StepKind, ToolEnd};
use mcpsim_model::Instant;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// typescript-sdk#2151, recorded: <https://github.com/modelcontextprotocol/typescript-sdk/issues/2151>.
const TS_2151_DIR: &str = "traces/field/server-typescript-sdk-2151";

fn ts_2151_trace() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(TS_2151_DIR);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries
        .map(|e| e.expect("a readable entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("the recorded typescript-sdk#2151 trace")
}

fn results_stored(steps: &[StepKind]) -> usize {
    steps
        .iter()
        .filter(|s| matches!(s, StepKind::EventStored { message: Some(ServerMessage::ToolResult { .. }), .. }))
        .count()
}

/// <https://github.com/modelcontextprotocol/typescript-sdk/issues/2151>: the server closes the
/// POST's SSE stream (`closeSSEStream`) two seconds before the tool finishes; the result is
/// produced while no stream is mapped and is never stored, so the client's resumption gets
/// nothing and the call never resolves. The same run with the events stored resolves.
#[test]
fn typescript_sdk_2151_the_result_produced_after_close_sse_stream_is_lost() {
    let path = ts_2151_trace();
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    assert_eq!(scenario.server.detached_request_events, DetachedEvents::Drop);
    assert!(scenario.server.close_request_streams.is_some());
    let outcome = run(&scenario, recorded.header.seed).expect("the re-run");
    let verdict: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
    assert_eq!(verdict, vec!["every-call-resolves"], "the call must hang, as in the issue");
    let steps: Vec<StepKind> = outcome.trace.steps.iter().map(|s| s.kind.clone()).collect();
    assert_eq!(results_stored(&steps), 0, "the result is never stored");
    assert!(steps.iter().any(|s| matches!(s, StepKind::ToolEnded { end: ToolEnd::Completed, .. })));

    let mut fixed = scenario.clone();
    fixed.server.detached_request_events = DetachedEvents::Store;
    let outcome = run(&fixed, recorded.header.seed).expect("the re-run");
    assert!(outcome.violations.is_empty(), "storing while detached (the fix, PR #2153) resolves the call");
}

fn tool(secs: u64, interval: Option<Duration>) -> ToolSpec {
    ToolSpec {
        name: "job".into(),
        duration: Duration::from_secs(secs),
        event_interval: interval,
        idempotent: false,
        ..ToolSpec::default()
    }
}

fn at(secs: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(secs)
}

/// SEP-1699 polling: the server ends every POST stream right after its priming event (with
/// `retry:`); a resuming client still gets the result, and the tool ran once.
#[test]
fn sep_1699_polling_still_delivers_the_result_once() {
    let server = mcpsim_model::config::ServerPolicy {
        close_request_streams: Some(Duration::ZERO),
        retry_ms: Some(1_000),
        ..profiles::server("reference").expect("built in")
    };
    let client = profiles::client("reference").expect("built in");
    let mut pair = Pair::with_policies(
        client,
        server,
        vec![tool(30, None)],
        LbConfig { idle_timeout: None, ..LbConfig::default() },
    )
    .expect("a pair");
    pair.call(1, "job", false).expect("called");
    let violations = pair.run_until(at(120)).expect("runs");
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(pair.side_effects(), 1);
    assert!(matches!(pair.resolutions()[..], [StepKind::AppResult { .. }]));
    assert!(pair.count(|s| matches!(s, StepKind::Resume { .. })) >= 1, "the client had to come back for it");
}

/// A side effect executed at completion is not executed by a run cancelled on `DELETE`; one at
/// the start is.
#[test]
fn a_side_effect_at_completion_is_not_done_by_a_deleted_run() {
    for (when, effects) in [(SideEffectAt::Start, 1), (SideEffectAt::Completion, 0)] {
        let spec = ToolSpec { side_effect: when, ..tool(60, None) };
        let mut pair = Pair::with_policies(
            profiles::client("reference").expect("built in"),
            profiles::server("reference").expect("built in"),
            vec![spec],
            LbConfig { idle_timeout: None, ..LbConfig::default() },
        )
        .expect("a pair");
        pair.call(1, "job", false).expect("called");
        pair.advance_to(at(10)).expect("runs");
        pair.delete_session().expect("deleted");
        pair.advance_to(at(120)).expect("runs");
        assert_eq!(pair.side_effects(), effects, "{when:?}");
    }
}

/// TypeScript `DELETE` fires the abort signal: a tool that ignores it runs to completion (its
/// side effect at completion happens although nobody gets the result), one that checks it stops.
#[test]
fn typescript_delete_runs_on_only_for_tools_that_ignore_the_abort_signal() {
    for (on_abort, effects) in [(OnAbort::Ignore, 1), (OnAbort::Stop, 0)] {
        let spec = ToolSpec { side_effect: SideEffectAt::Completion, on_abort, ..tool(60, None) };
        let mut pair = Pair::with_policies(
            profiles::client("ts-sdk").expect("built in"),
            profiles::server("ts-sdk").expect("built in"),
            vec![spec],
            LbConfig { idle_timeout: None, ..LbConfig::default() },
        )
        .expect("a pair");
        pair.call(1, "job", false).expect("called");
        pair.advance_to(at(10)).expect("runs");
        pair.delete_session().expect("deleted");
        pair.advance_to(at(120)).expect("runs");
        assert_eq!(pair.side_effects(), effects, "{on_abort:?}");
    }
}

/// The unknown-session answer reaches the client: after a server restart lost the session, the
/// next call is answered with the policy's status (the client's reaction is the client profile's).
#[test]
fn an_unknown_session_is_answered_with_the_policy_status() {
    for (rule, status) in [(UnknownSession::NotFound404, 404), (UnknownSession::BadRequest400, 400)] {
        let server = mcpsim_model::config::ServerPolicy {
            unknown_session: rule,
            ..profiles::server("ts-sdk").expect("built in")
        };
        let mut pair = Pair::with_policies(
            profiles::client("ts-sdk").expect("built in"),
            server,
            vec![tool(1, None)],
            LbConfig { idle_timeout: None, ..LbConfig::default() },
        )
        .expect("a pair");
        pair.restart_server().expect("restarted");
        pair.advance_to(at(1)).expect("runs");
        pair.call(1, "job", false).expect("called");
        pair.advance_to(at(10)).expect("runs");
        let rejected = pair.count(|s| matches!(s, StepKind::Rejected { status: st, .. } if st.0 == status));
        assert!(rejected >= 1, "{rule:?}: no {status}");
    }
}

/// servers#4087, recorded: <https://github.com/modelcontextprotocol/servers/issues/4087>.
const SERVERS_4087: &str =
    "traces/field/servers-4087/no-duplicate-delivery--ts-sdk--ts-sdk--chatty-tool--replay-every-stream.jsonl";

/// Whether the conditions judge names a resume that replayed another stream's events.
fn crossed_streams(trace: &mcpsim_model::trace::Trace) -> bool {
    use mcpsim_model::oracle::conditions::{Condition, Conditions};
    Conditions::judge(trace).breaches.iter().any(|b| b.condition == Condition::ServerCrossStream && b.is_bug())
}

/// <https://github.com/modelcontextprotocol/servers/issues/4087>: the Everything server's
/// `InMemoryEventStore` (servers@76d64c82 `src/everything/transports/streamableHttp.ts:11-37`,
/// one per session) keeps every event of the session in one `Map` and replays all those after
/// the `Last-Event-ID`, whatever their stream; it returns the last replayed event's id where the
/// SDK wants a stream id, so the resumed connection is registered under no stream and gets
/// nothing live (`after_replay = quiet`). A tool's progress on its POST stream and notifications
/// on the standalone GET, both cut at 30 s: each resume carries the other stream's events, which
/// the client already had or gets again (`no-duplicate-delivery`, read as the server's bug), and
/// the call's result is stored where nobody reads it. With the stream filter (`replay_scope =
/// stream`, PR #4099), nothing is handed twice.
#[test]
fn servers_4087_a_store_that_replays_every_stream_hands_the_client_other_streams_events() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SERVERS_4087);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    assert_eq!(scenario.server.replay_scope, ReplayScope::Store);
    for seed in [recorded.header.seed, 1, 2] {
        let outcome = run(&scenario, seed).expect("the re-run");
        let verdict: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
        assert!(verdict.contains(&"no-duplicate-delivery"), "seed {seed}: {verdict:?}");
        assert!(crossed_streams(&outcome.trace), "seed {seed}: the judge names the server's replay");

        let mut fixed = scenario.clone();
        fixed.server.replay_scope = ReplayScope::Stream;
        let outcome = run(&fixed, seed).expect("the re-run");
        let verdict: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
        assert!(!verdict.contains(&"no-duplicate-delivery"), "seed {seed}, stream filter: {verdict:?}");
        assert!(!crossed_streams(&outcome.trace), "seed {seed}, stream filter");
    }
}
