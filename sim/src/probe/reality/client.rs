//! The client half of the reality check: each fixture client's probe runs
//! ([`crate::probe::client::runs`]) mirrored in the simulator with that SDK's built-in client profile
//! against the `reference` server made stand-in-like (no `retry:`), the same tool and the same
//! fault at the same time; both traces seen from the server side only (the simulated one cut
//! down to the step kinds the probe's tap records) and judged by the oracles, and the requests
//! both show counted the same way.
//!
//! What may differ is listed in [`KNOWN_CLIENT_DISAGREEMENTS`], each with its reason.

use crate::engine::runner;
use crate::probe::client::runs::{
    client_field_agrees, compare, ClientProbeReport, ClientRun, EMPTY_RESUMES, RETRY_LONG_MS, RETRY_SHORT_MS,
};
use crate::probe::reality::sdk::{Sdk, Verdict};
use crate::scenario::faults::{Fault, FaultPlan, PlannedFault};
use crate::scenario::{CallSpec, DeleteBy, DeleteSpec, EmptyResumes, Scenario};
use mcpsim_model::config::{OnAbort, SideEffectAt, ToolSpec};
use mcpsim_model::http::{ClientMessage, Method};
use mcpsim_model::oracle::check_all;
use mcpsim_model::trace::{StepKind, Trace};
use std::path::Path;
use std::time::Duration;

/// The fixture client's command (`install.sh` builds or installs it), or why it is missing.
pub fn client_command(sdk: Sdk, fixtures: &Path) -> Result<Vec<String>, String> {
    let (need, cmd) = match sdk {
        Sdk::Py => {
            let py = fixtures.join("py/.venv/bin/python");
            (py.clone(), vec![py.display().to_string(), fixtures.join("py/client.py").display().to_string()])
        }
        Sdk::Ts => (
            fixtures.join("ts/node_modules/@modelcontextprotocol/sdk/package.json"),
            vec!["node".into(), fixtures.join("ts/client.mjs").display().to_string()],
        ),
        Sdk::Rust => {
            let bin = fixtures.join("rust/target/debug/probe-client");
            (bin.clone(), vec![bin.display().to_string()])
        }
    };
    if need.exists() {
        Ok(cmd)
    } else {
        Err(format!("{} is missing: run sim/probe/fixtures/install.sh {}", need.display(), sdk.name()))
    }
}

/// The built-in client profile that models the SDK's client.
pub fn client_profile(sdk: Sdk) -> &'static str {
    sdk.profile()
}

/// What the server side saw of a client within the run's limit, counted alike in a real and a
/// simulated trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// `GET`s with a `Last-Event-ID` of a request stream (not the standalone stream, `0-…`).
    pub resumes: usize,
    /// `tools/call` POSTs of `probe_work`.
    pub calls: usize,
    /// `initialize` POSTs.
    pub initializes: usize,
    /// `notifications/cancelled` POSTs (a request timeout's, in `request-timeout`).
    pub cancels: usize,
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "resumes {}, calls {}, initializes {}", self.resumes, self.calls, self.initializes)?;
        // Shown only when there were any, so the rows of runs without one read as before.
        if self.cancels > 0 {
            write!(f, ", cancels {}", self.cancels)?;
        }
        Ok(())
    }
}

/// The requests of `trace` up to `limit`.
pub fn observed(trace: &Trace, limit: Duration) -> Observed {
    let mut o = Observed::default();
    let limit = u64::try_from(limit.as_micros()).unwrap_or(u64::MAX);
    for step in trace.steps.iter().filter(|s| s.t <= limit) {
        let StepKind::Send { request, .. } = &step.kind else { continue };
        match (request.method, &request.body) {
            (Method::Get, _) if request.last_event_id.as_ref().is_some_and(|l| !l.0.starts_with("0-")) => {
                o.resumes += 1
            }
            (Method::Post, Some(ClientMessage::Initialize { .. })) => o.initializes += 1,
            (Method::Post, Some(ClientMessage::CallTool { call, .. })) if call.tool == "probe_work" => o.calls += 1,
            (Method::Post, Some(ClientMessage::Cancelled { .. })) => o.cancels += 1,
            _ => {}
        }
    }
    o
}

/// `trace` as the probe's tap sees a run: requests received, sessions created and ended, side
/// effects and faults; everything the client side alone knows is dropped.
pub fn server_side(trace: &Trace) -> Trace {
    let mut t = trace.clone();
    t.steps.retain(|s| {
        matches!(
            s.kind,
            StepKind::Send { .. }
                | StepKind::SessionCreated { .. }
                | StepKind::SessionEnded { .. }
                | StepKind::SideEffect { .. }
                | StepKind::Fault { .. }
        )
    });
    for (i, s) in t.steps.iter_mut().enumerate() {
        s.seq = i as u64;
    }
    t.footer = None;
    t
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The simulator scenario that mirrors a client probe run with `profile`, or why none can.
///
/// The server is `reference` without `retry:` (the stand-in's ids, priming and store); the tool
/// is `probe_work` 3000/200 called at once; the stand-in's first tick comes 200 ms in, so the
/// tap's cut "50 ms after the second event id" is a reset at 250 ms. In `request-timeout` the
/// tool runs a minute past `limit` without a single event (no priming event either): it never
/// answers within the run, so only the profile's `request_timeout` ends the call.
pub fn client_mirror(run: &str, profile: &str, limit: Duration) -> Result<Scenario, &'static str> {
    let mut s = Scenario::build("resume-after-completion", profile, "reference")
        .map_err(|_| "the built-in profile does not build")?;
    s.server.retry_ms = None;
    s.tool_jitter = 0.0;
    s.liveness_grace = Duration::from_secs(60);
    s.tools = vec![ToolSpec {
        name: "probe_work".into(),
        duration: ms(3000),
        event_interval: Some(ms(200)),
        idempotent: false,
        side_effect: SideEffectAt::Start,
        on_abort: OnAbort::Stop,
        ..ToolSpec::default()
    }];
    s.calls = vec![CallSpec::new(Duration::ZERO, 0, "probe_work")];
    let at = |t: u64, fault: Fault| PlannedFault { at: ms(t), fault };
    s.faults = match run {
        "cut-resume" => FaultPlan::new(vec![at(250, Fault::Reset)]),
        // Every resume reset before an answer until the run's end: a partition that long.
        "cut-refuse" => FaultPlan::new(vec![at(250, Fault::Partition { duration: limit })]),
        // The same refusals, the server's events carrying `retry:` (the stand-in's priming
        // event does; the reference server puts it on every event, and the client keeps the last).
        "retry-short" | "retry-long" => {
            s.server.retry_ms = Some(if run == "retry-short" { RETRY_SHORT_MS } else { RETRY_LONG_MS });
            FaultPlan::new(vec![at(250, Fault::Partition { duration: limit })])
        }
        "cut-before-id" => {
            s.server.priming.post = false;
            FaultPlan::new(vec![at(100, Fault::Reset)])
        }
        // The stand-in answers the first tools/call 404: here an operator's DELETE ends the
        // session at 100 ms, before the call (moved to 300 ms) names it.
        "not-found" => {
            s.calls = vec![CallSpec::new(ms(300), 0, "probe_work")];
            s.deletes = vec![DeleteSpec { at: ms(100), client: 0, by: DeleteBy::Operator }];
            FaultPlan::default()
        }
        // The tap answers the first resumes of the cut stream itself (200, no events, closed)
        // and forwards the later ones to the stand-in: the same cut, and as many resumes
        // answered empty in front of the server (`[[empty_resumes]]`).
        "empty-resume" => {
            s.empty_resumes = vec![EmptyResumes { at: Duration::ZERO, client: 0, count: EMPTY_RESUMES }];
            FaultPlan::new(vec![at(250, Fault::Reset)])
        }
        // The stand-in's silent call: the stream opens, then nothing until the client leaves.
        "request-timeout" => {
            s.server.priming.post = false;
            s.tools[0].duration = limit + Duration::from_secs(60);
            s.tools[0].event_interval = None;
            FaultPlan::default()
        }
        _ => return Err("no mirror written for this run"),
    };
    s.validate().map_err(|_| "the mirror does not validate")?;
    Ok(s)
}

/// A client-side disagreement explained.
#[derive(Clone, Copy, Debug)]
pub struct KnownClientDisagreement {
    /// The SDK whose client disagrees.
    pub sdk: Sdk,
    /// The probe run.
    pub run: &'static str,
    /// Why, and why it is not modelled (yet).
    pub why: &'static str,
}

/// Every known disagreement between a real client run and its mirror.
/// (None now: the one there was, ts-sdk's cut-refuse, was the model's typescript-sdk#2499 rule
/// applied to a resume refused before any answer; the rule now needs an answered resume.)
pub const KNOWN_CLIENT_DISAGREEMENTS: &[KnownClientDisagreement] = &[];

/// One row of the client agreement table.
#[derive(Clone, Debug)]
pub struct ClientRow {
    /// The SDK whose client ran.
    pub sdk: Sdk,
    /// The probe run.
    pub run: &'static str,
    /// The real run's verdict (oracles over the tap's trace).
    pub real: Verdict,
    /// The simulator's verdict over the same view, or why there is none.
    pub sim: Result<Verdict, String>,
    /// What the tap saw.
    pub real_seen: Observed,
    /// What the simulated server received, when there is a mirror.
    pub sim_seen: Option<Observed>,
    /// Notes.
    pub note: String,
}

impl ClientRow {
    /// `Some(true)` verdicts and requests agree, `Some(false)` not, `None` no mirror.
    pub fn agrees(&self) -> Option<bool> {
        match (&self.sim, &self.sim_seen) {
            (Ok(v), Some(seen)) => Some(*v == self.real && *seen == self.real_seen),
            _ => None,
        }
    }

    /// The known disagreement this row is, if any.
    pub fn known(&self) -> Option<&'static KnownClientDisagreement> {
        KNOWN_CLIENT_DISAGREEMENTS.iter().find(|k| k.sdk == self.sdk && k.run == self.run)
    }

    /// A disagreement nothing explains.
    pub fn unexplained(&self) -> bool {
        self.agrees() == Some(false) && self.known().is_none()
    }
}

fn verdict_of(trace: &Trace) -> Verdict {
    Verdict(check_all(trace).iter().map(|v| v.invariant.name().to_string()).collect())
}

/// One run's row.
pub fn client_row(sdk: Sdk, run: &ClientRun) -> ClientRow {
    let limit = run.ended_at;
    let real = verdict_of(&server_side(&run.trace));
    let real_seen = observed(&run.trace, limit);
    let mut sim_cancel = None;
    let (sim, sim_seen) = match client_mirror(run.name, client_profile(sdk), limit) {
        Ok(scenario) => match runner::run(&scenario, 1) {
            Ok(out) => {
                let view = server_side(&out.trace);
                sim_cancel = sim_cancel_after(&out.trace);
                (Ok(verdict_of(&view)), Some(observed(&out.trace, limit)))
            }
            Err(e) => (Err(format!("simulation failed: {e}")), None),
        },
        Err(why) => (Err(format!("no mirror: {why}")), None),
    };
    let mut row = ClientRow { sdk, run: run.name, real, sim, real_seen, sim_seen, note: String::new() };
    let mut notes = Vec::new();
    if let (Some(k), Some(false)) = (row.known(), row.agrees()) {
        notes.push(k.why.to_string());
    }
    if let Err(e) = &row.sim {
        notes.push(e.clone());
    }
    if run.name == "request-timeout" {
        let shown = |d: Option<Duration>| d.map(|d| format!("{} ms", d.as_millis())).unwrap_or_else(|| "none".into());
        notes.push(format!("simulated cancel after the call: {}", shown(sim_cancel)));
    }
    notes.push(format!(
        "{} ms, {}",
        limit.as_millis(),
        match run.exit {
            Some(c) => format!("the client exited {c}"),
            None => "the client was killed".into(),
        }
    ));
    row.note = notes.join("; ");
    row
}

/// When the simulated client cancelled its `probe_work` call, after the call's POST (the
/// `request-timeout` mirror's answer to "when does it give up?"); `None` when it did not.
pub fn sim_cancel_after(trace: &Trace) -> Option<Duration> {
    let mut call: Option<(u64, mcpsim_model::ids::RequestId)> = None;
    for step in &trace.steps {
        let StepKind::Send { request, .. } = &step.kind else { continue };
        match (&request.body, &call) {
            (Some(ClientMessage::CallTool { id, call: c }), None) if c.tool == "probe_work" => {
                call = Some((step.t, *id))
            }
            (Some(ClientMessage::Cancelled { request: r }), Some((t, id))) if r == id => {
                return Some(Duration::from_micros(step.t.saturating_sub(*t)))
            }
            _ => {}
        }
    }
    None
}

/// The `request-timeout` run's decided `request_timeout` beside the SDK's built-in client
/// profile: (probed, built-in, agree under the run's bound), or why there is none.
pub fn request_timeout_field(sdk: Sdk, report: &ClientProbeReport) -> Result<(String, String, bool), String> {
    let profile = mcpsim_model::profiles::client(client_profile(sdk)).ok_or("no built-in client profile")?;
    let Some((probed, _)) = report.fields.get("request_timeout") else {
        let why = report.undetermined.iter().find(|(f, _)| f == "request_timeout").map(|(_, w)| w.clone());
        return Err(why.unwrap_or_else(|| "not decided".into()));
    };
    let builtin = compare(&report.fields, &profile)
        .into_iter()
        .find(|(f, _, _)| f == "request_timeout")
        .map(|(_, _, b)| b)
        .ok_or("the built-in profile has no request_timeout")?;
    let agree = client_field_agrees(report, "request_timeout", probed, &builtin);
    Ok((probed.clone(), builtin, agree))
}

/// The rows of one client probe report.
pub fn client_rows(sdk: Sdk, report: &ClientProbeReport) -> Vec<ClientRow> {
    report.runs.iter().map(|r| client_row(sdk, r)).collect()
}

/// The markers around the generated client table in `docs/reality.md`.
pub const CLIENT_BEGIN: &str = "<!-- reality clients: generated by `mcpsim probe reality --doc docs/reality.md` -->";
/// The end marker of the client table.
pub const CLIENT_END: &str = "<!-- end of reality clients -->";

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The client agreement table (markdown, between the markers).
pub fn client_table_markdown(rows: &[ClientRow]) -> String {
    let mut out = String::from(
        "| SDK | probe run | real verdict | simulated verdict | real requests | simulated requests | agree | note |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let agree = match (r.agrees(), r.known()) {
            (Some(true), _) => "yes",
            (Some(false), Some(_)) => "no (known)",
            (Some(false), None) => "NO",
            (None, _) => "n/a",
        };
        let sim = match &r.sim {
            Ok(v) => v.to_string(),
            Err(e) if e.starts_with("no mirror") => "no mirror".into(),
            Err(_) => "error".into(),
        };
        let sim_seen = r.sim_seen.map(|o| o.to_string()).unwrap_or_else(|| "–".into());
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.sdk.name(),
            r.run,
            r.real,
            sim,
            r.real_seen,
            sim_seen,
            agree,
            cell(&r.note)
        ));
    }
    out
}

/// The deterministic columns of the client table: every column but the note.
pub fn client_columns(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(2)
        .map(|l| l.trim().trim_matches('|').split(" | ").take(7).map(|c| c.trim().to_string()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_mirror_builds_for_every_sdk_client_profile() {
        for sdk in Sdk::ALL {
            for run in crate::probe::client::runs::RUNS.iter().chain(crate::probe::client::runs::OPT_IN_RUNS) {
                match client_mirror(run, client_profile(sdk), Duration::from_secs(36)) {
                    Ok(s) => assert!(runner::runnable(&s).is_ok(), "{run} {sdk:?}"),
                    Err(why) => assert!(!why.is_empty()),
                }
            }
        }
    }

    #[test]
    fn the_empty_resume_mirror_answers_the_first_resumes_empty_in_front_of_the_server() {
        // py-sdk's client resumes with the same id after an empty 200 (`same-id`): two empty
        // answers, then the server's replay: three resumes, as the tap saw the real client make.
        let s = client_mirror("empty-resume", "py-sdk", Duration::from_secs(20)).unwrap();
        let out = runner::run(&s, 1).unwrap();
        let empties = out
            .trace
            .steps
            .iter()
            .filter(
                |st| matches!(&st.kind, StepKind::Fault { fault } if fault.contains("resume answered 200, no events")),
            )
            .count();
        assert_eq!(empties, EMPTY_RESUMES as usize);
        // Of the call's stream (the standalone stream's ids are `0-…`).
        let resumes_seen_by_server = out
            .trace
            .steps
            .iter()
            .filter(
                |st| matches!(&st.kind, StepKind::Resume { last_event_id, .. } if !last_event_id.0.starts_with("0-")),
            )
            .count();
        let seen = observed(&out.trace, Duration::from_secs(20));
        assert_eq!(seen.resumes, 3, "{seen}");
        assert_eq!(resumes_seen_by_server, 1, "the server hears only the resume after the empty ones");
        assert!(verdict_of(&server_side(&out.trace)).0.is_empty());
    }

    /// What `reconnect.counter_reset` is decided from: under py-sdk's cap of 2, the empty-resume
    /// mirror resumes a third time when a 200 zeroes the count (at the 200, or when its stream
    /// ends: the same requests) and only twice when only an event does.
    #[test]
    fn the_empty_resume_mirror_tells_a_count_zeroed_by_a_200_from_one_zeroed_by_an_event() {
        use mcpsim_model::config::CounterReset;
        let resumes = |c: CounterReset| {
            let mut s = client_mirror("empty-resume", "py-sdk", Duration::from_secs(20)).unwrap();
            s.client.reconnect.counter_reset = c;
            observed(&runner::run(&s, 1).unwrap().trace, Duration::from_secs(20)).resumes
        };
        assert_eq!(resumes(CounterReset::OnSuccessfulReconnect), 3);
        assert_eq!(resumes(CounterReset::WhenSuccessfulReconnectEnds), 3);
        assert_eq!(resumes(CounterReset::OnEvent), 2);
    }

    #[test]
    fn the_retry_mirrors_resume_when_the_probed_retry_field_says() {
        // The times (ms) the real fixture clients resumed the cut stream under `retry:`
        // (docs/probe-client.md): the simulated SDK profiles must resume then too.
        let cases: [(&str, &str, &[u64]); 6] = [
            ("py-sdk", "retry-short", &[550, 850]),
            ("py-sdk", "retry-long", &[3250, 6250]),
            ("ts-sdk", "retry-short", &[550, 850]),
            ("ts-sdk", "retry-long", &[3250, 6250]),
            ("rmcp", "retry-short", &[250, 2250, 6250]),
            ("rmcp", "retry-long", &[250, 3250, 7250]),
        ];
        for (profile, run, want) in cases {
            let s = client_mirror(run, profile, Duration::from_secs(9)).unwrap();
            let out = runner::run(&s, 1).unwrap();
            let at: Vec<u64> = out
                .trace
                .steps
                .iter()
                .filter(|st| st.t <= 9_000_000)
                .filter_map(|st| match &st.kind {
                    StepKind::Send { request, .. }
                        if request.last_event_id.as_ref().is_some_and(|l| !l.0.starts_with("0-")) =>
                    {
                        Some(st.t / 1000)
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(at.len(), want.len(), "{profile} {run}: resumes at {at:?} ms, the real client's at {want:?}");
            for (got, want) in at.iter().zip(want) {
                assert!(
                    got.abs_diff(*want) < 100,
                    "{profile} {run}: resumes at {at:?} ms, the real client's at {want}"
                );
            }
        }
    }

    /// The request-timeout mirror: the built-in profiles' request timeouts against a tool that
    /// never answers within the run (ts-sdk 60 s, py-sdk and rmcp none), seen as the tap counts.
    #[test]
    fn the_request_timeout_mirror_cancels_at_the_profiles_timeout_and_not_without_one() {
        let limit = Duration::from_secs(75);
        for (profile, want) in [("ts-sdk", Some(60_000u128)), ("py-sdk", None), ("rmcp", None)] {
            let s = client_mirror("request-timeout", profile, limit).unwrap();
            let out = runner::run(&s, 1).unwrap();
            let after = sim_cancel_after(&out.trace);
            match want {
                Some(ms) => {
                    let got = after.map(|d| d.as_millis()).unwrap_or(0);
                    assert!(got.abs_diff(ms) < 100, "{profile}: cancelled {after:?} after the call");
                }
                None => assert!(after.is_none_or(|d| d > limit), "{profile}: cancelled {after:?} after the call"),
            }
            let seen = observed(&out.trace, limit);
            let cancels = usize::from(want.is_some());
            assert_eq!(
                (seen.calls, seen.initializes, seen.resumes, seen.cancels),
                (1, 1, 0, cancels),
                "{profile}: {seen}"
            );
            assert!(verdict_of(&server_side(&out.trace)).0.is_empty(), "{profile}");
        }
    }

    #[test]
    fn the_server_side_view_keeps_only_what_the_tap_records() {
        let s = client_mirror("cut-resume", "py-sdk", Duration::from_secs(20)).unwrap();
        let out = runner::run(&s, 1).unwrap();
        let view = server_side(&out.trace);
        assert!(view.steps.len() < out.trace.steps.len());
        assert!(view.steps.iter().all(|s| matches!(
            s.kind,
            StepKind::Send { .. }
                | StepKind::SessionCreated { .. }
                | StepKind::SessionEnded { .. }
                | StepKind::SideEffect { .. }
                | StepKind::Fault { .. }
        )));
        let seen = observed(&out.trace, Duration::from_secs(20));
        assert_eq!((seen.calls, seen.initializes), (1, 1), "{seen}");
        assert!(seen.resumes >= 1, "{seen}");
    }
}
