//! Intermediary chains end to end: hops in front of the balancer (a CDN in front of an ALB), each
//! cutting by its own clocks, answering on its own, buffering responses, and failing on its own.
//! Also the why-chain (cause chain) of a loss: from its trigger to the step that made it certain.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ConnEnd, Status};
use mcpsim_model::ids::CallKey;
use mcpsim_model::trace::{Actor, StepKind};

fn scenario(overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build("long-tool", "reference", "reference").expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn steps<'a>(outcome: &'a RunOutcome, pick: impl Fn(&StepKind) -> bool + 'a) -> impl Iterator<Item = &'a StepKind> {
    outcome.trace.steps.iter().map(|s| &s.kind).filter(move |k| pick(k))
}

/// (hop, age or idle time in µs) of every cut, in order.
fn cuts(outcome: &RunOutcome) -> Vec<(&'static str, Option<u32>, u64)> {
    steps(outcome, |_| true)
        .filter_map(|k| match *k {
            StepKind::LbIdleCut { idle_us, hop, .. } => Some(("idle", hop, idle_us)),
            StepKind::LbLifetimeCut { age_us, hop, .. } => Some(("lifetime", hop, age_us)),
            _ => None,
        })
        .collect()
}

const CDN: &str = r#"[{ max_lifetime = "100s" }]"#;

#[test]
fn a_cdn_lifetime_in_front_of_an_alb_idle_timeout_cuts_where_each_predicts() {
    // Silent tool: the ALB (hop1) cuts each stream after 60 s without a byte, before the CDN's
    // 100 s lifetime comes.
    let silent = run_ok(&scenario(&[("lb.hops", CDN)]), 0);
    let c = cuts(&silent);
    assert!(!c.is_empty() && c.iter().all(|cut| *cut == ("idle", Some(1), 60_000_000)), "{c:?}");
    // Keep-alives every 15 s hold the ALB open: now the CDN (hop0) cuts at 100 s, however busy.
    let busy = run_ok(&scenario(&[("lb.hops", CDN), ("server.keepalive", "15s")]), 0);
    let c = cuts(&busy);
    assert!(!c.is_empty() && c.iter().all(|cut| *cut == ("lifetime", Some(0), 100_000_000)), "{c:?}");
    for outcome in [&silent, &busy] {
        assert!(outcome.violations.is_empty(), "{:?}", violated(outcome));
    }
    // The balancer alone names no hop (its traces keep their bytes).
    let alone = run_ok(&scenario(&[]), 0);
    assert!(cuts(&alone).iter().all(|(_, hop, _)| hop.is_none()) && !cuts(&alone).is_empty());
}

#[test]
fn a_hop_that_ignores_comments_cuts_a_stream_that_keepalives_hold_open_elsewhere() {
    let counting = run_ok(&scenario(&[("lb.hops", r#"[{ idle_timeout = "30s" }]"#), ("server.keepalive", "15s")]), 0);
    assert!(cuts(&counting).is_empty(), "{:?}", cuts(&counting));
    let strict = r#"[{ idle_timeout = "30s", comments_count = false }]"#;
    let ignoring = run_ok(&scenario(&[("lb.hops", strict), ("server.keepalive", "15s")]), 0);
    let c = cuts(&ignoring);
    assert!(!c.is_empty() && c.iter().all(|cut| *cut == ("idle", Some(0), 30_000_000)), "{c:?}");
}

#[test]
fn buffered_progress_arrives_too_late_for_the_request_timeout() {
    // Progress every 10 s restarts a 30 s request timeout; a hop flushing every 45 s holds it back.
    let base = [
        ("client.request_timeout", "30s"),
        ("client.timeout_resets_on_progress", "true"),
        ("tool.event_interval", "10s"),
        ("tool.duration", "2m"),
    ];
    // An SDK client fails the call it sent (a false failure); the reference client reports it as
    // an unknown outcome (the decision procedure: a sent request that timed out may have run).
    let with_client = |client: &str, overrides: &[(&str, &str)]| {
        let mut s = Scenario::build("long-tool", client, "reference").expect("a known scenario and profiles");
        let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        s.apply_overrides(&overrides).expect("valid overrides");
        s
    };
    for (client, seed) in [("ts-sdk", 0), ("ts-sdk", 1), ("reference", 0), ("reference", 1)] {
        let ended = |o: &RunOutcome| {
            steps(o, |k| {
                matches!(
                    k,
                    StepKind::AppError { call: CallKey(0), .. } | StepKind::AppUnknownOutcome { call: CallKey(0), .. }
                )
            })
            .count()
        };
        let plain = run_ok(&with_client(client, &base), seed);
        assert!(plain.violations.is_empty(), "{client} seed {seed}: {:?}", violated(&plain));
        assert_eq!(ended(&plain), 0, "{client} seed {seed}: progress kept the call alive");
        let mut buffered = base.to_vec();
        buffered.push(("lb.hops", r#"[{ flush_interval = "45s" }]"#));
        let outcome = run_ok(&with_client(client, &buffered), seed);
        assert!(ended(&outcome) > 0, "{client} seed {seed}: the call timed out waiting for buffered progress");
        if client == "ts-sdk" {
            let error = steps(&outcome, |k| matches!(k, StepKind::AppError { call: CallKey(0), .. })).count();
            assert!(error > 0, "{client} seed {seed}: the SDK fails the call");
            assert!(violated(&outcome).contains("no-false-failure"), "seed {seed}: {:?}", violated(&outcome));
        } else {
            let unknown =
                steps(&outcome, |k| matches!(k, StepKind::AppUnknownOutcome { call: CallKey(0), .. })).count();
            assert!(unknown > 0, "{client} seed {seed}: an unknown outcome");
        }
        assert!(steps(&outcome, |k| matches!(k, StepKind::LbFlushed { hop: Some(0), .. })).count() > 0);
    }
    // Released in bursts: frames arrive together, the first held up to the flush interval.
    let bursts = run_ok(&scenario(&[("tool.event_interval", "5s"), ("lb.hops", r#"[{ flush_interval = "20s" }]"#)]), 0);
    let held: Vec<(u32, u64)> = steps(&bursts, |_| true)
        .filter_map(|k| match *k {
            StepKind::LbFlushed { frames, held_us, .. } => Some((frames, held_us)),
            _ => None,
        })
        .collect();
    assert!(held.iter().any(|(frames, held)| *frames >= 3 && *held == 20_000_000), "{held:?}");
    // Same seed, same steps: buffered releases ride the balancer's timer, nothing else.
    let again = run_ok(&scenario(&[("tool.event_interval", "5s"), ("lb.hops", r#"[{ flush_interval = "20s" }]"#)]), 0);
    assert_eq!(format!("{:?}", again.trace.steps), format!("{:?}", bursts.trace.steps));
    // A size threshold releases without waiting.
    let sized = run_ok(&scenario(&[("tool.event_interval", "5s"), ("lb.hops", r#"[{ buffer = "1B" }]"#)]), 0);
    assert!(steps(&sized, |k| matches!(k, StepKind::LbFlushed { held_us: 1.., .. })).count() == 0);
}

#[test]
fn a_hop_answers_524_when_no_response_head_comes_in_time() {
    // The CDN holds the head until a body byte; the silent tool sends none (no priming event).
    let base = [("lb.idle_timeout", "none"), ("server.priming.post", "false")];
    let cdn = r#"[{ hold_headers = true, first_byte_timeout = "100s", timeout_status = 524 }]"#;
    let mut with = base.to_vec();
    with.push(("lb.hops", cdn));
    let outcome = run_ok(&scenario(&with), 0);
    let timed_out: Vec<u64> = steps(&outcome, |_| true)
        .filter_map(|k| match *k {
            StepKind::LbTimedOut { waited_us, hop: Some(0), .. } => Some(waited_us),
            _ => None,
        })
        .collect();
    assert_eq!(timed_out.first(), Some(&100_000_000));
    let answered = |o: &RunOutcome| {
        o.trace.steps.iter().any(|s| {
            s.actor == Actor::Client && matches!(&s.kind, StepKind::Response { head, .. } if head.status == Status(524))
        })
    };
    assert!(answered(&outcome), "the client saw the CDN's 524");
    let mut without = base.to_vec();
    without.push(("lb.hops", r#"[{ hold_headers = true }]"#));
    assert!(!answered(&run_ok(&scenario(&without), 0)));
}

#[test]
fn a_client_side_cut_at_the_cdn_leaves_the_server_its_stream() {
    let kept = |mode: &str| {
        let hops = format!(r#"[{{ max_lifetime = "100s", cut_mode = "{mode}" }}]"#);
        run_ok(&scenario(&[("lb.hops", &hops), ("server.keepalive", "15s")]), 1)
    };
    let both = kept("both");
    let client_side = kept("client-side");
    let upstream_kept =
        |o: &RunOutcome| steps(o, |k| matches!(k, StepKind::LbUpstreamKept { hop: Some(0), .. })).count();
    let lifetime_cuts =
        |o: &RunOutcome| steps(o, |k| matches!(k, StepKind::LbLifetimeCut { hop: Some(0), .. })).count();
    assert!(lifetime_cuts(&both) > 0 && upstream_kept(&both) == 0);
    assert!(lifetime_cuts(&client_side) > 0);
    assert_eq!(upstream_kept(&client_side), lifetime_cuts(&client_side), "every CDN cut keeps its upstream");
}

#[test]
fn a_fault_cuts_or_restarts_one_hop() {
    let with_cut = run_ok(&scenario(&[("lb.hops", CDN), ("tool.event_interval", "10s"), ("fault.cut", "hop0@30s")]), 0);
    let at_30s = |o: &RunOutcome| {
        o.trace.steps.iter().any(|s| {
            (30_000_000..30_100_000).contains(&s.t) && matches!(s.kind, StepKind::ConnEnd { end: ConnEnd::Reset, .. })
        })
    };
    assert!(at_30s(&with_cut), "the CDN's connections broke at 30 s");
    assert!(with_cut.violations.is_empty(), "{:?}", violated(&with_cut));
    assert!(!at_30s(&run_ok(&scenario(&[("lb.hops", CDN), ("tool.event_interval", "10s")]), 0)));
    // Restarting the balancer (hop1, behind the CDN) breaks the same connections.
    let restarted =
        run_ok(&scenario(&[("lb.hops", CDN), ("tool.event_interval", "10s"), ("fault.restart", "hop1@30s")]), 0);
    assert!(at_30s(&restarted));
    // With the CDN still holding the head (no body yet), it answers 502 when the balancer behind
    // it restarts; a cut answers nothing.
    let holding =
        [("lb.idle_timeout", "none"), ("server.priming.post", "false"), ("lb.hops", r#"[{ hold_headers = true }]"#)];
    let got_502 = |fault: (&str, &str)| {
        let mut set = holding.to_vec();
        set.push(fault);
        let outcome = run_ok(&scenario(&set), 0);
        outcome.trace.steps.iter().any(|s| {
            s.actor == Actor::Client
                && matches!(&s.kind, StepKind::Response { head, .. } if head.status == Status::BAD_GATEWAY)
        })
    };
    assert!(got_502(("fault.restart", "hop1@30s")));
    assert!(!got_502(("fault.cut", "hop1@30s")));
    // A hop the chain does not have is refused.
    let mut s = scenario(&[("lb.hops", CDN)]);
    assert!(s.apply_overrides(&[("fault.cut".into(), "hop2@30s".into())]).is_err());
    let mut s = scenario(&[]);
    assert!(s.apply_overrides(&[("fault.cut".into(), "hop1@30s".into())]).is_err());
}

#[test]
fn bad_hops_are_refused() {
    for bad in [
        r#"[{ idle_timeout = "0s" }]"#,
        r#"[{ buffer = 0 }]"#,
        r#"[{ timeout_status = 200 }]"#,
        r#"[{ flush_interval = "soon" }]"#,
        r#"[{ idle = "1m" }]"#,
        "[{}, {}, {}, {}, {}]",
    ] {
        let mut s = scenario(&[]);
        assert!(s.apply_overrides(&[("lb.hops".into(), bad.into())]).is_err(), "{bad}");
    }
}

#[test]
fn a_scenario_with_a_chain_dumps_to_a_file_that_loads_back_the_same() {
    let s = scenario(&[
        (
            "lb.hops",
            r#"[{ max_lifetime = "100s", buffer = "4KiB", flush_interval = "10s" }, { idle_timeout = "30s" }]"#,
        ),
        ("lb.max_lifetime", "5m"),
    ]);
    let text = mcpsim::scenario::family_files::dump(&s, "a chain").expect("dumps");
    // Removed when dropped (at the end of the test, also when it panics).
    let dir = tempfile::Builder::new().prefix("mcpsim-chain-").tempdir().expect("a writable temp dir");
    let path = dir.path().join("chain.toml");
    std::fs::write(&path, &text).expect("a writable temp dir");
    let path = path.display().to_string();
    let back = Scenario::build(&path, "reference", "reference").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.lb, s.lb, "{text}");
    assert_eq!(back.lb.hops[0].buffer, Some(4096));
}

/// The design note's second incident (a bounded buffer that resumes silently at the head after a
/// 4-minute cut): the oracle names the first lost event where it was stored, but the why-chain
/// runs on from the trigger (the partition) to the silent resume that made the loss certain.
#[test]
fn the_second_incidents_why_chain_runs_from_the_cut_to_the_silent_resume() {
    let s = Scenario::build("chatty-tool", "reference", "silent-head").expect("built-in names");
    let outcome = run_ok(&s, 0);
    let v = outcome.violations.iter().find(|v| v.invariant == "no-silent-event-loss").expect("incident 2");
    assert!(matches!(outcome.trace.steps[v.step].kind, StepKind::EventStored { .. }), "named where it was stored");
    let (chain, dropped) = mcpsim::report::cause::cause_chain(&outcome.trace.steps, v.step);
    assert_eq!(dropped, 0);
    let words: Vec<&str> = chain.iter().map(|c| c.text.as_str()).collect();
    let fault = words.iter().position(|w| w.starts_with("fault injected: partition")).expect("the trigger");
    let stored = chain.iter().position(|c| c.step == v.step).expect("the violating step");
    let last = chain.last().expect("a chain");
    assert!(fault < stored && stored < chain.len() - 1, "{words:#?}");
    assert!(
        matches!(outcome.trace.steps[last.step].kind, StepKind::Resume { .. })
            && last.text.contains("SILENT head")
            && last.text.ends_with("from here the loss is certain"),
        "{words:#?}"
    );
    // An empty answer to a resume settles a loss as a silent one does: the TypeScript SDK's
    // standalone stream, whose store still held what its lookup could not find.
    let ts = Scenario::build("standalone-notify", "reference", "ts-sdk").expect("built-in names");
    let outcome = run_ok(&ts, 0);
    let v = outcome.violations.iter().find(|v| v.invariant == "no-silent-event-loss").expect("the SDK's loss");
    let (chain, _) = mcpsim::report::cause::cause_chain(&outcome.trace.steps, v.step);
    let last = chain.last().expect("a chain");
    assert!(
        matches!(outcome.trace.steps[last.step].kind, StepKind::Resume { held: true, .. })
            && last.text.contains("still held")
            && last.text.ends_with("from here the loss is certain"),
        "{:#?}",
        chain.iter().map(|c| c.text.as_str()).collect::<Vec<_>>()
    );
    // A duplicate is certain at the step the oracle names: nothing follows it.
    let first = Scenario::build("long-tool", "naive", "reference").expect("built-in names");
    let outcome = run_ok(&first, 0);
    let v = outcome.violations.iter().find(|v| v.invariant == "no-duplicate-execution").expect("incident 1");
    let (chain, _) = mcpsim::report::cause::cause_chain(&outcome.trace.steps, v.step);
    assert_eq!(chain.last().map(|c| c.step), Some(v.step));
}

/// Three replicas each start their own server process at time 0 (epochs 0, 1, 2): that is no
/// restart, so the why-chain does not open with one; a restart during the run still is.
#[test]
fn replicas_starting_are_not_restarts_in_the_why_chain() {
    let mut s = Scenario::build("long-tool", "ts-sdk", "reference").expect("built-in names");
    s.apply_overrides(&[("lb.replicas".into(), "3".into())]).expect("valid");
    let outcome = run_ok(&s, 0);
    let starts = outcome.trace.steps.iter().filter(|st| matches!(st.kind, StepKind::ServerStart { .. })).count();
    assert!(starts >= 3, "each replica starts");
    let v = outcome.violations.first().expect("ts-sdk breaks long-tool");
    let (chain, _) = mcpsim::report::cause::cause_chain(&outcome.trace.steps, v.step);
    assert!(
        chain.iter().all(|c| !c.text.contains("restarted")),
        "{:#?}",
        chain.iter().map(|c| &c.text).collect::<Vec<_>>()
    );
    // A restart in the middle of a run is one.
    let mut r = Scenario::build("server-restart", "reference", "reference").expect("built-in names");
    r.apply_overrides(&[("lb.replicas".into(), "2".into()), ("lb.routing".into(), "sticky-session".into())])
        .expect("valid");
    let outcome = run_ok(&r, 0);
    let last = outcome.trace.steps.len() - 1;
    let (chain, _) = mcpsim::report::cause::cause_chain(&outcome.trace.steps, last);
    assert!(
        chain.iter().any(|c| c.text.starts_with("server process restarted (epoch")),
        "{:#?}",
        chain.iter().map(|c| &c.text).collect::<Vec<_>>()
    );
}

/// A hop that answers a resume 403 by itself ends an idempotent call's stream for good: the
/// reference client fails the call at once, and the judge finds no client bug in it (a client
/// that left the call hanging would read `a client bug … never told the application`).
#[test]
fn a_call_whose_resume_a_hop_refuses_is_failed_at_once_and_no_client_bug() {
    let s = scenario(&[
        ("tool.idempotent", "true"),
        ("lb.hops", r#"[{ idle_timeout = "none" }]"#),
        ("fault.answer", "hop0=403@55s..90s"),
        ("fault.reset", "70s"),
    ]);
    let outcome = run_ok(&s, 1);
    let refused = steps(&outcome, |k| matches!(k, StepKind::LbAnswered { status: Status(403), .. })).count();
    assert!(refused > 0, "the hop refused no resume: the test no longer reaches the rule");
    let failed: Vec<_> = steps(&outcome, |k| matches!(k, StepKind::AppError { call: CallKey(0), .. })).collect();
    assert_eq!(failed.len(), 1, "the call is failed once, at the refusal");
    let judged = mcpsim_model::oracle::conditions::Conditions::judge(&outcome.trace);
    assert!(judged.breaches.iter().all(|b| !b.is_bug()), "{:?}", judged.breaches);
}
