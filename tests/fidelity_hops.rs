//! Intermediaries and servers of "Fidelity II" (issue 19) that answer or react by themselves,
//! end to end through client, load balancer and server: each test fails if the model stops
//! showing what its fault, field or rule says.

use mcpsim::report::artifacts::{read_trace, recorded_scenario};
use mcpsim::run;
use mcpsim::scenario::faults::Fault;
use mcpsim_model::http::Status;
use mcpsim_model::trace::StepKind;
use std::path::Path;

fn names(outcome: &mcpsim::engine::runner::RunOutcome) -> Vec<&'static str> {
    outcome.violations.iter().map(|v| v.invariant.name()).collect()
}

const HOP_404_TRACE: &str =
    "traces/field/proxy-own-answer/no-orphaned-session--reference--reference--long-tool--hop-404-route-reload.jsonl";

/// `fault.answer = hop0=404@61s..70s`: a proxy in front of the balancer reloads its routes and
/// answers 404 itself for 9 s, just as the balancer's idle cut sends the reference client back to
/// resume. The client takes the proxy's 404 for the server's word, re-initializes and so holds a
/// second session while the first (and its running payment) lives on: no-orphaned-session, with
/// the conditions verdict naming the hop. The same window answered 503 is a transport fact: the
/// client resumes and the run is clean.
#[test]
fn a_hops_own_404_orphans_the_live_session_and_its_503_does_not() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(HOP_404_TRACE);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    let outcome = run(&scenario, recorded.header.seed).expect("the re-run");
    assert_eq!(names(&outcome), vec!["no-orphaned-session"]);
    let footer = &outcome.trace.footer.as_ref().expect("a footer").verdict[0];
    assert!(footer.conditions.starts_with("explained by condition 4: hop0 answered 404 by itself"), "{footer:?}");
    let answered = outcome
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::LbAnswered { status: Status::NOT_FOUND, hop: Some(0), .. }));
    assert!(answered.count() >= 1);
    // No server ever refused the session: every 404 was the hop's.
    assert!(!outcome.trace.steps.iter().any(|s| matches!(s.kind, StepKind::Rejected { .. })));

    let mut unavailable = scenario.clone();
    let faults: Vec<_> = unavailable
        .faults
        .faults()
        .iter()
        .cloned()
        .map(|mut f| {
            if let Fault::Answer { status, .. } = &mut f.fault {
                *status = 503;
            }
            f
        })
        .collect();
    unavailable.faults = mcpsim::scenario::faults::FaultPlan::new(faults);
    let outcome = run(&unavailable, recorded.header.seed).expect("the re-run");
    assert!(outcome.violations.is_empty(), "{:?}", names(&outcome));
}

/// A hop answers only inside its window, only when it exists, and only with a 4xx or 5xx.
#[test]
fn a_hop_answering_by_itself_is_validated() {
    let mut s = mcpsim::Scenario::build("long-tool", "reference", "reference").expect("a built-in scenario");
    let set = |s: &mut mcpsim::Scenario, v: &str| s.apply_overrides(&[("fault.answer".to_string(), v.to_string())]);
    assert!(set(&mut s, "hop0=404@60s..90s").is_ok());
    for bad in ["hop1=404@60s..90s", "replica0=404@1m..2m", "hop0=302@1m..2m", "hop0=404@2m..1m"] {
        let mut s = mcpsim::Scenario::build("long-tool", "reference", "reference").expect("a built-in scenario");
        assert!(set(&mut s, bad).is_err(), "{bad} was accepted");
    }
}

/// `server.disconnect_cancel_ignored`: a 2026-07-28 server says a disconnect cancels the
/// request (`disconnect_cancels`), and its client relies on it; a reset at 10 s ends the stream
/// of a 30 s tool. The honest server cancels it there; the liar's handler ignores the
/// cancellation and runs on to its result: no-abandoned-work, on the liar only.
#[test]
fn a_server_that_claims_a_disconnect_cancels_but_runs_on_abandons_work() {
    let overrides = |ignored: &str| {
        [("tool.duration", "30s"), ("fault.reset", "10s"), ("tool.idempotent", "true")]
            .into_iter()
            .chain([("server.disconnect_cancel_ignored", ignored)])
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    let build = |ignored: &str| {
        let mut s =
            mcpsim::Scenario::build("long-tool", "stateless-2026", "stateless-2026").expect("a built-in scenario");
        s.apply_overrides(&overrides(ignored)).expect("valid overrides");
        s
    };
    let honest = run(&build("false"), 0).expect("the run");
    assert!(honest.violations.is_empty(), "{:?}", names(&honest));
    let liar = run(&build("true"), 0).expect("the run");
    assert_eq!(names(&liar), vec!["no-abandoned-work"]);
    assert!(liar.trace.steps.iter().any(|s| matches!(s.kind, StepKind::CancelIgnored { .. })));
}

const BURST_TRACE: &str =
    "traces/field/burst-store-order/no-silent-event-loss--reference--ts-sdk--long-tool--burst-cut-midway.jsonl";

/// `tool.burst = 8` on the TypeScript store (ids `<stream>_<ms>_<random>`, replayed in string
/// order) behind a gateway that holds the last frame it got (`hold_tail`): the reset at 12 s cuts
/// the burst of 11 s after its 7th event, so the reference client resumes after the 7th; the 8th,
/// stored in the same millisecond with a suffix that sorts below the 7th's, is never replayed:
/// lost, not only reordered. With ids that count (`server.event_ids = reference`) the same run is
/// clean, and without the gateway the burst arrives whole (the replay only repeats events).
#[test]
fn a_burst_cut_midway_loses_the_events_the_store_order_skips_and_counting_ids_do_not() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(BURST_TRACE);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    assert_eq!(scenario.tools[0].burst, 8);
    let outcome = run(&scenario, recorded.header.seed).expect("the re-run");
    assert_eq!(names(&outcome), vec!["no-silent-event-loss"]);

    let mut counting = scenario.clone();
    counting.server.event_ids = mcpsim_model::config::EventIdScheme::Reference;
    let outcome = run(&counting, recorded.header.seed).expect("the re-run");
    assert!(outcome.violations.is_empty(), "{:?}", names(&outcome));

    let mut whole = scenario.clone();
    whole.lb.hops[0].hold_tail = false;
    let outcome = run(&whole, recorded.header.seed).expect("the re-run");
    assert!(!names(&outcome).contains(&"no-silent-event-loss"), "{:?}", names(&outcome));
}

const TAIL_TRACE: &str =
    "traces/field/gateway-holds-tail/timely-delivery--reference--reference--long-tool--final-frame-held.jsonl";

/// `lb.hops[].hold_tail`: a gateway whose compressor keeps the last frame until more output
/// comes: each progress event of a tool ticking every 10 s reaches the client only with the next
/// one, 10 s late (timely-delivery). Without it the run is clean.
#[test]
fn a_gateway_that_holds_the_final_frame_of_what_it_got_delays_each_event_until_the_next() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TAIL_TRACE);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    assert!(scenario.lb.hops[0].hold_tail);
    let outcome = run(&scenario, recorded.header.seed).expect("the re-run");
    assert_eq!(names(&outcome), vec!["timely-delivery"]);
    let mut flushing = scenario.clone();
    flushing.lb.hops[0].hold_tail = false;
    let outcome = run(&flushing, recorded.header.seed).expect("the re-run");
    assert!(outcome.violations.is_empty(), "{:?}", names(&outcome));
}

const DROPS_LAST_EVENT_ID_TRACE: &str =
    "traces/field/proxy-drops-header/every-call-resolves--reference--reference--long-tool--drops-last-event-id.jsonl";

/// `lb.hops[].drop_request_headers`: a gateway that rebuilds each request from an allowlist
/// without `Last-Event-ID` turns every resume of the reference client into a fresh `GET`. The
/// server opens a new stream (its own priming event, from the head) and replays nothing; the
/// client takes it for its resumed stream, and the payment's result, stored on the first stream,
/// never reaches it: every-call-resolves, explained by condition 3 naming the hop (the server
/// could not refuse an id it never saw). Without the drop the same run is clean; a hop that drops
/// `Mcp-Session-Id` instead sends the client into new sessions, explained by condition 4.
#[test]
fn a_hop_that_drops_a_request_header_is_named_for_what_follows() {
    use mcpsim_model::config::RequestHeader;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DROPS_LAST_EVENT_ID_TRACE);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    let seed = recorded.header.seed;
    let outcome = run(&scenario, seed).expect("the re-run");
    assert_eq!(names(&outcome), vec!["every-call-resolves"]);
    let footer = &outcome.trace.footer.as_ref().expect("a footer").verdict[0];
    assert!(footer.conditions.starts_with("explained by condition 3: hop0 dropped Last-Event-ID"), "{footer:?}");
    let steps = &outcome.trace.steps;
    let resumes_sent = steps
        .iter()
        .filter(|s| matches!(&s.kind, StepKind::Send { request, .. } if request.last_event_id.is_some()))
        .count();
    let dropped = steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::LbHeaderDropped { header: RequestHeader::LastEventId, hop: 0, .. }))
        .count();
    assert!(resumes_sent >= 2 && dropped == resumes_sent, "{resumes_sent} resumes, {dropped} dropped");
    // The server never saw a resume.
    assert!(!steps.iter().any(|s| matches!(s.kind, StepKind::Resume { .. })));

    let mut passes = scenario.clone();
    passes.lb.hops[0].drop_request_headers.clear();
    let clean = run(&passes, seed).expect("the run");
    assert!(clean.violations.is_empty(), "{:?}", names(&clean));
    assert!(clean.trace.steps.iter().any(|s| matches!(s.kind, StepKind::Resume { .. })));

    let mut session = scenario.clone();
    session.lb.hops[0].drop_request_headers = vec![RequestHeader::McpSessionId];
    let outcome = run(&session, seed).expect("the run");
    assert!(names(&outcome).contains(&"no-orphaned-session"), "{:?}", names(&outcome));
    let verdicts = &outcome.trace.footer.as_ref().expect("a footer").verdict;
    assert!(
        verdicts.iter().all(|v| v.conditions.starts_with("explained by condition 4: hop0 dropped Mcp-Session-Id")),
        "{verdicts:?}"
    );
}

const DROPS_SESSION_IN_RESPONSE_TRACE: &str =
    "traces/field/proxy-drops-header/every-call-resolves--ts-sdk--reference--long-tool--drops-session-in-response.jsonl";

/// `lb.hops[].drop_response_headers = ["mcp-session-id"]`: a gateway that rebuilds each answer
/// from its body, status and content type. Each `initialize` answer reaches the TypeScript
/// client without the session the server created, so its `notifications/initialized` goes
/// without one and is refused: the client never gets a session and its call fails, while the
/// server keeps every session it created. every-call-resolves (the client was never served),
/// explained by condition 4 naming the hop; passing the header on, the client is served.
#[test]
fn a_hop_that_drops_the_session_from_answers_leaves_the_client_never_served() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DROPS_SESSION_IN_RESPONSE_TRACE);
    let recorded = read_trace(&path).expect("the trace parses");
    let scenario = recorded_scenario(&path, &recorded).expect("its scenario");
    let seed = recorded.header.seed;
    let outcome = run(&scenario, seed).expect("the re-run");
    assert_eq!(names(&outcome), vec!["every-call-resolves"]);
    let verdict = &outcome.trace.footer.as_ref().expect("a footer").verdict[0];
    assert!(verdict.detail.contains("came without the session the server created"), "{verdict:?}");
    assert!(verdict.conditions.starts_with("explained by condition 4: hop0 dropped Mcp-Session-Id"), "{verdict:?}");
    let created = outcome.trace.steps.iter().filter(|s| matches!(s.kind, StepKind::SessionCreated { .. })).count();
    let dropped =
        outcome.trace.steps.iter().filter(|s| matches!(s.kind, StepKind::LbResponseHeaderDropped { .. })).count();
    assert!(created >= 2 && dropped == created, "{created} sessions created, {dropped} dropped");

    let mut passes = scenario.clone();
    passes.lb.hops[0].drop_response_headers.clear();
    let served = run(&passes, seed).expect("the run");
    // (The TypeScript client still times the long call out, as the matrix shows: no-false-failure.)
    assert!(!served.violations.iter().any(|v| v.detail.contains("never got a session")), "{:?}", served.violations);
    assert!(!served.trace.steps.iter().any(|s| matches!(s.kind, StepKind::LbResponseHeaderDropped { .. })));
}
