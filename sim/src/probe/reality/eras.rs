//! The era rows of `probe reality`: each fixture server's answers to the era probe's modern
//! requests (`crate::probe::server::eras`) beside the model's answer for its built-in profile
//! (`mcpsim_model::era::answer` with the profile's `eras` and `modern_session`), and the cut of
//! a modern call beside the model's rule (a closed modern response stream cancels its request).

use crate::probe::reality::sdk::Sdk;
use crate::probe::server::eras::{expected, EraProbe, EraReport};
use mcpsim_model::era;

/// A real answer that differs from the model's, explained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownEraDifference {
    /// The SDK whose server answers so.
    pub sdk: Sdk,
    /// The request ([`EraProbe::name`]).
    pub request: &'static str,
    /// The real answer as [`crate::probe::server::eras::EraSeen::short`] prints it.
    pub real: &'static str,
    /// Why it differs, and why the model is not changed.
    pub why: &'static str,
}

/// Every known difference between a fixture's era answer and the model's.
pub const KNOWN_ERA_DIFFERENCES: &[KnownEraDifference] = &[
    KnownEraDifference {
        sdk: Sdk::Ts,
        request: "GET, modern header",
        real: "400",
        why: "a legacy-only server's answer to a modern request is left to the implementation (versioning.mdx:167); the model answers a modern GET 405 whatever the eras, while TS 1.32.2's example app checks the session first: 400 'Missing session ID' (dist/esm/examples/server/simpleStreamableHttp.js:676-679; the fixture routes the same way). No modern client sends a GET, so no run meets it",
    },
    KnownEraDifference {
        sdk: Sdk::Ts,
        request: "stale Mcp-Session-Id",
        real: "404 -32001",
        why: "left to the implementation (versioning.mdx:167); the model's legacy-only server refuses every modern request with its own 400, while TS 1.32.2's example app looks up the session first: an unknown one is 404 -32001 (simpleStreamableHttp.js:630-634). An auto client falls back on either (neither is a modern error); a modern client sends no session id",
    },
    KnownEraDifference {
        sdk: Sdk::Ts,
        request: "header/_meta mismatch",
        real: "400 -32000",
        why: "the model checks header against _meta (streamable-http.mdx:256-261) on every server, a legacy-only one too, while a 2025-11-25 server reads no _meta version: TS 1.32.2's example app answers a non-initialize POST without a session 400 -32000 'No valid session ID provided' (simpleStreamableHttp.js:636-645). Same status, another code; a legacy-only server's answers are the implementation's (versioning.mdx:167)",
    },
    KnownEraDifference {
        sdk: Sdk::Py,
        request: "header/_meta mismatch",
        real: "400 -32600, Mcp-Session-Id",
        why: "mcp 2.3.0 routes by the header alone (mcp/server/streamable_http_manager.py:187-199, 'header-only era-routing for now'): a 2025-11-25 header goes to the legacy session manager, which admits a new session for a request without Mcp-Session-Id (:289-295) and answers 400 'Missing session ID' (mcp/server/streamable_http.py:913) with the new id; the spec's -32020 (streamable-http.mdx:256-261) comes only from rmcp. Only a client that sends the two versions disagreeing meets it, and no modelled client does",
    },
];

/// How a real era answer compares with the model's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EraAgreement {
    /// The same.
    Yes,
    /// Different, as the entry explains.
    Known(&'static KnownEraDifference),
    /// Different, and no entry explains it.
    No,
    /// Nothing to compare (not sent, or no era rule decides it).
    NotApplicable,
}

/// One era row.
#[derive(Clone, Debug)]
pub struct EraRow {
    /// The SDK.
    pub sdk: Sdk,
    /// The request.
    pub request: &'static str,
    /// The real answer.
    pub real: String,
    /// The model's answer for the built-in profile.
    pub model: String,
    /// How they compare.
    pub agree: EraAgreement,
    /// The server's message or versions, or the reason.
    pub note: String,
}

/// The row name of the cut of a modern call.
pub const CUT_ROW: &str = "modern call cut";

/// The era rows of one SDK's probe, against its built-in profile.
pub fn era_rows(sdk: Sdk, report: &EraReport) -> Vec<EraRow> {
    let Some(profile) = mcpsim_model::profiles::server(sdk.profile()) else { return Vec::new() };
    let eras = era::served_eras(profile.eras.as_deref(), profile.sessions);
    let mut rows = Vec::new();
    for seen in &report.seen {
        let model = expected(eras, profile.modern_session, profile.sessions, seen.probe);
        let real = seen.short();
        let known = KNOWN_ERA_DIFFERENCES.iter().find(|k| k.sdk == sdk && k.request == seen.probe.name());
        let agree = match (&model, known) {
            (None, _) => EraAgreement::NotApplicable,
            (Some(m), _) if m.matches(seen) => EraAgreement::Yes,
            (Some(_), Some(k)) if k.real == real => EraAgreement::Known(k),
            (Some(_), _) => EraAgreement::No,
        };
        let mut note = if seen.detail.is_empty() { String::new() } else { crate::error::escape(&seen.detail) };
        if let EraAgreement::Known(k) = agree {
            note = if note.is_empty() { k.why.to_string() } else { format!("{}; {note}", k.why) };
        }
        if seen.probe == EraProbe::Call && !seen.result && model.as_ref().is_some_and(|m| m.served) {
            note.push_str("; no result");
        }
        rows.push(EraRow {
            sdk,
            request: seen.probe.name(),
            real,
            model: model.map_or("(legacy paths)".into(), |m| m.short()),
            agree,
            note,
        });
    }
    // The cut: the model cancels a modern request whose response stream closes (the modern
    // context's rule, mcpsim_model::server::era_serve::modern_policy).
    let model = if eras.modern { "cancelled" } else { "(no modern era)" };
    let (real, agree, note) = match &report.cut {
        Some(Ok(c)) => {
            let real = if c.cancelled() { "cancelled" } else { "ran on" };
            let agree = if !eras.modern {
                EraAgreement::No
            } else if c.cancelled() {
                EraAgreement::Yes
            } else {
                EraAgreement::No
            };
            let note = format!(
                "probe_work(3000 ms) cut after {} event(s); probe_count 3.5 s later: started {}, completed {}",
                c.events, c.started, c.completed
            );
            (real.to_string(), agree, note)
        }
        Some(Err(why)) => ("not made".to_string(), EraAgreement::NotApplicable, crate::error::escape(why)),
        None => (
            "not made".to_string(),
            if eras.modern { EraAgreement::No } else { EraAgreement::NotApplicable },
            "the server serves no modern request".to_string(),
        ),
    };
    rows.push(EraRow { sdk, request: CUT_ROW, real, model: model.into(), agree, note });
    rows
}

/// Starts the SDK's fixture server and runs `basics` and the era probe alone (no keep-alive
/// wait): its era rows and the fingerprint (`eras`, `modern_session`).
pub fn check_eras(
    sdk: Sdk,
    fixtures: &std::path::Path,
) -> Result<(Vec<EraRow>, crate::probe::server::run::ProbeReport), crate::probe::error::ProbeError> {
    use crate::probe::server::run::{probe_server, ProbeOptions};
    let server = crate::probe::reality::sdk::FixtureServer::start(sdk, fixtures)?;
    let report = probe_server(&ProbeOptions {
        only: vec!["basics".into()],
        keep_alive_bound: None,
        ..ProbeOptions::new(&server.url)
    })?;
    let rows = report.eras.as_ref().map(|e| era_rows(sdk, e)).unwrap_or_default();
    Ok((rows, report))
}

/// The markers around the generated era table in `docs/reality.md`.
pub const ERAS_BEGIN: &str = "<!-- reality eras: generated by `mcpsim probe reality --doc docs/reality.md` -->";
/// The end marker of the era table.
pub const ERAS_END: &str = "<!-- end of reality eras -->";

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The era table (markdown, between the markers).
pub fn eras_markdown(rows: &[EraRow]) -> String {
    let mut out = String::from("| SDK | modern request | real answer | model | agree | note |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for r in rows {
        let agree = match r.agree {
            EraAgreement::Yes => "yes",
            EraAgreement::Known(_) => "no (known)",
            EraAgreement::No => "NO",
            EraAgreement::NotApplicable => "n/a",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {agree} | {} |\n",
            r.sdk.name(),
            r.request,
            cell(&r.real),
            cell(&r.model),
            cell(&r.note)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::server::eras::{CutSeen, EraSeen};

    fn seen(probe: EraProbe, status: u16, code: Option<i64>, result: bool, session_header: bool) -> EraSeen {
        EraSeen { probe, status, code, result, session_header, detail: String::new() }
    }

    #[test]
    fn a_legacy_only_profile_agrees_with_refusals_and_the_known_entries_explain_the_rest() {
        let report = EraReport {
            seen: vec![
                seen(EraProbe::Discover, 400, Some(-32000), false, false),
                seen(EraProbe::Get, 400, None, false, false),
                seen(EraProbe::StaleSession, 404, Some(-32001), false, false),
            ],
            cut: None,
        };
        let rows = era_rows(Sdk::Ts, &report);
        let agree: Vec<_> = rows.iter().map(|r| (r.request, r.agree.clone())).collect();
        assert_eq!(agree[0], ("server/discover", EraAgreement::Yes));
        assert!(matches!(agree[1].1, EraAgreement::Known(_)), "{agree:?}");
        assert!(matches!(agree[2].1, EraAgreement::Known(_)), "{agree:?}");
        assert_eq!(agree[3], (CUT_ROW, EraAgreement::NotApplicable));
        // A legacy-only profile with a server that serves discover: a real disagreement.
        let served = EraReport { seen: vec![seen(EraProbe::Discover, 200, None, true, false)], cut: None };
        assert_eq!(era_rows(Sdk::Ts, &served)[0].agree, EraAgreement::No);
    }

    #[test]
    fn a_dual_era_profile_wants_modern_answers_without_a_session_and_a_cancelling_cut() {
        let cut = |completed| Some(Ok(CutSeen { events: 1, started: 1, completed }));
        let report = EraReport {
            seen: vec![
                seen(EraProbe::Discover, 200, None, true, false),
                seen(EraProbe::Mismatch, 400, Some(-32020), false, false),
            ],
            cut: cut(0),
        };
        let rows = era_rows(Sdk::Rust, &report);
        assert!(rows.iter().all(|r| r.agree == EraAgreement::Yes), "{rows:?}");
        let ran_on = EraReport { cut: cut(1), ..report.clone() };
        assert_eq!(era_rows(Sdk::Rust, &ran_on).last().map(|r| r.agree.clone()), Some(EraAgreement::No));
        let minted = EraReport { seen: vec![seen(EraProbe::Discover, 200, None, true, true)], cut: cut(0) };
        assert_eq!(era_rows(Sdk::Py, &minted)[0].agree, EraAgreement::No);
    }
}
