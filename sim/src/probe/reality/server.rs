//! The server half's mirror: each probe scenario acted out in the simulator against an SDK's
//! built-in server profile, and its simulated verdict.

use crate::engine::runner;
use crate::probe::reality::sdk::{Verdict, FIXTURE_IDLE_TTL};
use crate::scenario::faults::{Fault, FaultPlan, PlannedFault};
use crate::scenario::{BogusResume, CallSpec, DeleteBy, DeleteSpec, ResumeId, Scenario};
use mcpsim_model::config::{OnAbort, SideEffectAt, ToolSpec};
use std::time::Duration;

/// Simulated seeds per mirror: the verdict of the first, and a note when another differs.
pub const SIM_SEEDS: [u64; 3] = [1, 2, 3];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The simulator scenario that mirrors a probe scenario against `profile`, or why none can.
///
/// The client is the `reference` client made script-like: no jitter, and a first reconnection
/// delay equal to the time the probe's script waits between the cut and its resume, so that
/// its one resume happens when the script's does. Tools are the probe tool with the script's
/// duration and interval, without jitter; cuts are the script's, at the script's times.
pub fn mirror(probe_scenario: &str, profile: &str) -> Result<Scenario, &'static str> {
    let mut s = Scenario::build("resume-after-completion", "reference", profile)
        .map_err(|_| "the built-in profile does not build")?;
    s.tool_jitter = 0.0;
    s.client.reconnect.jitter = 0.0;
    // The script keeps resuming a call whose resumes come back empty; it does not settle it as
    // an unknown outcome after a few, as the reference client does.
    s.client.max_unhonoured_resumes = None;
    // The script's resumes end with the script; the mirror's client goes on resuming (at its
    // capped, steady backoff) until the run's end, which the reconnect bound's period rule would
    // read as churn the real script never shows: churn is not compared here.
    s.max_reconnects_per_hour = u32::MAX;
    s.faults = FaultPlan::default();
    s.liveness_grace = Duration::from_secs(60);
    let work = |duration: u64, interval: u64| ToolSpec {
        name: "probe_work".into(),
        duration: ms(duration),
        event_interval: Some(ms(interval)),
        idempotent: false,
        // probe_work adds to its start counter first and checks the SDK's abort signal each tick.
        side_effect: SideEffectAt::Start,
        on_abort: OnAbort::Stop,
        ..ToolSpec::default()
    };
    let call = || vec![CallSpec::new(Duration::ZERO, 0, "probe_work")];
    let reset = |at: u64| FaultPlan::new(vec![PlannedFault { at: ms(at), fault: Fault::Reset }]);
    match probe_scenario {
        "basics" => {
            s.tools = vec![work(1500, 500)];
            s.calls = call();
        }
        "cut-and-resume" => {
            // Cut at 2.2 s, resumed at 4.0 s.
            s.tools = vec![work(6000, 500)];
            s.calls = call();
            s.faults = reset(2200);
            s.client.reconnect.initial = ms(1800);
        }
        "resume-after-completion" => {
            // Cut at 0.7 s, resumed at 4.5 s: 3 s after the 1.5 s tool finished.
            s.tools = vec![work(1500, 300)];
            s.calls = call();
            s.faults = reset(700);
            s.client.reconnect.initial = ms(3800);
        }
        "delete-during-tool" => {
            s.tools = vec![work(4000, 500)];
            s.calls = call();
            s.deletes = vec![DeleteSpec { at: ms(1200), client: 0, by: Default::default() }];
        }
        "standalone" => {
            // The script's four notifications become one every 300 ms; no call, no cut.
            s.tools = vec![work(1000, 500)];
            s.calls = vec![];
            s.client.open_standalone_stream = true;
            s.notify_interval = Some(ms(300));
        }
        "standalone-cut" => {
            // probe_notify(8, 1 s): a notification a second; cut at 2.8 s, resumed at 5.5 s.
            s.tools = vec![work(1000, 500)];
            s.calls = vec![];
            s.client.open_standalone_stream = true;
            s.notify_interval = Some(ms(1000));
            s.faults = reset(2800);
            s.client.reconnect.initial = ms(2700);
        }
        "overrun" => {
            // 200 ticks in 8 s; partitioned from 1 s to 10 s; resumed at 10.5 s.
            s.tools = vec![work(8000, 40)];
            s.calls = call();
            s.faults =
                FaultPlan::new(vec![PlannedFault { at: ms(1000), fault: Fault::Partition { duration: ms(9000) } }]);
            s.client.reconnect.initial = ms(9500);
        }
        "unknown-session" => {
            // Requests naming a session the server does not know: an operator's DELETE ends the
            // session behind the client's back at 0.3 s, then its standalone GET and a call at
            // 0.6 s name it (the probe sends an id the server never minted; both meet the
            // server's unknown-session answer).
            s.tools = vec![work(1000, 500)];
            s.calls = vec![CallSpec::new(ms(600), 0, "probe_work")];
            s.client.open_standalone_stream = true;
            s.deletes = vec![DeleteSpec { at: ms(300), client: 0, by: DeleteBy::Operator }];
        }
        "made-up-id" => {
            // A session with its standalone GET, which resumes at 0.5 s with an id of the server's
            // own shape that it never minted (`[[bogus_resumes]]`); no call.
            s.tools = vec![work(1000, 500)];
            s.calls = vec![];
            s.client.open_standalone_stream = true;
            let id = crate::probe::server::scenarios::made_up_id(Some(s.server.event_ids)).to_string();
            s.bogus_resumes = vec![BogusResume { at: ms(500), client: 0, id: id.into() }];
        }
        "idle-expiry" => {
            // A session left idle past the instance's TTL, then used: a call, then one after an
            // idle gap of twice the TTL (`after_idle`), on the SDK's profile with the fixture's TTL.
            s.tools = vec![work(1000, 500)];
            s.server.idle_ttl = Some(FIXTURE_IDLE_TTL);
            let mut later = CallSpec::new(Duration::ZERO, 1, "probe_work");
            later.after_idle = Some(FIXTURE_IDLE_TTL * 2);
            s.calls = vec![CallSpec::new(Duration::ZERO, 0, "probe_work"), later];
        }
        "cross-session-id" => {
            // Two clients, a session each (the script's A and B). Client 0 calls probe_work(3000,
            // 500) at once; at 1.3 s client 1 resumes its standalone stream with the first id
            // client 0 received on its call's stream (the script takes A's earliest id at 1.3 s).
            // Unlike the script, client 0 reads its stream to the end: the script stops reading
            // A at 1.3 s and tells its application the outcome is unknown; both resolve the call.
            s.clients = 2;
            s.tools = vec![work(3000, 500)];
            s.calls = call();
            s.client.open_standalone_stream = true;
            let id = ResumeId::ReceivedBy { client: 0, nth: 1 };
            s.bogus_resumes = vec![BogusResume { at: ms(1300), client: 1, id }];
        }
        _ => return Err("no mirror written for this scenario"),
    }
    s.validate().map_err(|_| "the mirror does not validate")?;
    Ok(s)
}

/// The simulator's verdict of a mirror: (first seed's verdict, a note when seeds disagree).
pub fn sim_verdict(scenario: &Scenario) -> Result<(Verdict, Option<String>), String> {
    let mut verdicts = Vec::new();
    for seed in SIM_SEEDS {
        let out = runner::run(scenario, seed).map_err(|e| format!("simulation failed: {e}"))?;
        verdicts.push(Verdict::of(out.violations.iter().map(|v| v.invariant.name())));
    }
    let first = verdicts[0].clone();
    let note = verdicts
        .iter()
        .zip(SIM_SEEDS)
        .find(|(v, _)| **v != first)
        .map(|(v, seed)| format!("seed {seed} of the simulation says {v}"));
    Ok((first, note))
}

/// What the simulated server answered client 1's resume with client 0's id (seed 1), for the
/// note beside the real run's.
pub fn foreign_resume(scenario: &Scenario) -> Option<String> {
    use mcpsim_model::trace::{ResumeOutcome, StepKind};
    let out = runner::run(scenario, SIM_SEEDS[0]).ok()?;
    let b = out.trace.steps.iter().find_map(|st| match &st.kind {
        StepKind::SessionCreated { session, client } if client == "app-1" => Some(session.clone()),
        _ => None,
    })?;
    let outcome = out.trace.steps.iter().find_map(|st| match &st.kind {
        StepKind::Resume { session, outcome, .. } if *session == b => Some(outcome.clone()),
        _ => None,
    })?;
    let what = match outcome {
        ResumeOutcome::Replayed { replayed } => format!("200, {replayed} of client 0's events replayed"),
        ResumeOutcome::Empty { open } => format!("200, no events, {}", if open { "left open" } else { "closed" }),
        ResumeOutcome::Rejected { status, .. } => format!("{}", status.0),
        other => format!("{other:?}"),
    };
    Some(format!("simulated: client 1 resumed with client 0's first id: {what}"))
}
