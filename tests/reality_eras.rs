//! The era probe against the three SDK fixture servers (`probe::server::eras`): which eras each
//! serves and how it answers each modern request, beside the model's answer for its built-in
//! profile (`probe::reality::eras`). Every answer must agree with the model or be a documented
//! known difference, the fingerprint's `eras` and `modern_session` must equal the profile's, a
//! cut modern call must be cancelled on the dual-era servers, and the era table of
//! docs/reality.md must be what the run produces. About 10 s (the three in parallel).
//!
//! Skips without the fixtures unless `CI` or `MCPSIM_REALITY_REQUIRED` is set.

mod common;

use mcpsim::probe::reality::eras::{check_eras, eras_markdown, EraAgreement, CUT_ROW, ERAS_BEGIN, ERAS_END};
use mcpsim::probe::reality::{
    self, compare_fields, tasks_markdown, verdict_columns, FieldStatus, Sdk, TASKS_BEGIN, TASKS_END,
};

const DOC: &str = include_str!("../docs/reality.md");

fn in_ci() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    set("CI") || set("MCPSIM_REALITY_REQUIRED")
}

#[test]
fn each_fixture_serves_the_eras_its_profile_says_and_answers_modern_requests_as_the_model_does() {
    let fixtures = reality::fixtures_dir();
    let mut sdks = Vec::new();
    for sdk in Sdk::ALL {
        match sdk.installed(&fixtures) {
            Ok(()) => sdks.push(sdk),
            Err(why) if in_ci() => panic!("CI is set and a real-SDK fixture is not installed: {why}"),
            Err(why) => common::skipped("reality_eras", &format!("{} not installed: {why}", sdk.name())),
        }
    }
    let handles: Vec<_> = sdks
        .iter()
        .map(|&sdk| {
            let fixtures = fixtures.clone();
            std::thread::spawn(move || check_eras(sdk, &fixtures))
        })
        .collect();
    let mut rows = Vec::new();
    let mut task_fields = Vec::new();
    for (sdk, h) in sdks.iter().zip(handles) {
        let (r, report) = h.join().expect("no panic").unwrap_or_else(|e| panic!("{}: {e}", sdk.name()));
        let fp = &report.fingerprint;
        let fields = compare_fields(*sdk, &report);
        // rmcp 3.11.0's TaskManager, through the fixture's probe_task: every field the task probe
        // decides, equal to the rmcp profile's.
        if *sdk == Sdk::Rust {
            for f in [
                "tasks.ttl",
                "tasks.poll_interval",
                "tasks.expiry.working_at_ttl",
                "tasks.expiry.sweep",
                "tasks.expiry.terminal_kept_ttls",
            ] {
                let row = fields.iter().find(|r| r.field == f);
                assert!(
                    row.is_some_and(|r| r.status == FieldStatus::Same),
                    "rmcp {f}: {row:?} (open: {:?})",
                    fp.open.get(f)
                );
            }
        }
        task_fields.push((*sdk, fields));
        let profile = mcpsim_model::profiles::server(sdk.profile()).expect("built-in profile");
        let eras = serde_json::to_string(&profile.eras.clone().expect("every SDK profile states its eras")).unwrap();
        assert_eq!(fp.value("eras"), Some(eras.as_str()), "{}: {:?}", sdk.name(), fp.fields.get("eras"));
        if eras.contains("2026-07-28") {
            assert_eq!(fp.value("modern_session"), Some("\"sessionless\""), "{}", sdk.name());
            let cut = r.iter().find(|x| x.request == CUT_ROW).expect("a cut row");
            assert_eq!((cut.real.as_str(), &cut.agree), ("cancelled", &EraAgreement::Yes), "{}: {cut:?}", sdk.name());
        }
        rows.extend(r);
    }
    let table = eras_markdown(&rows);
    println!("{table}");
    for r in &rows {
        assert!(
            r.agree != EraAgreement::No,
            "{} {}: real {}, model {} ({})\n{table}",
            r.sdk.name(),
            r.request,
            r.real,
            r.model,
            r.note
        );
    }
    let ran: Vec<&str> = sdks.iter().map(|s| s.name()).collect();
    let tasks = tasks_markdown(&task_fields);
    println!("{tasks}");
    let checked_tasks = reality::between(DOC, TASKS_BEGIN, TASKS_END).expect("docs/reality.md has the task table");
    let keep_tasks = |t: &str| -> Vec<Vec<String>> {
        t.lines()
            .skip(2)
            .map(|l| l.trim().trim_matches('|').split(" | ").take(6).map(|c| c.trim().to_string()).collect::<Vec<_>>())
            .filter(|r| r.first().is_some_and(|s| ran.contains(&s.as_str())))
            .collect()
    };
    assert_eq!(keep_tasks(checked_tasks), keep_tasks(&tasks), "docs/reality.md's task table is stale\n{tasks}");
    let checked_in = reality::between(DOC, ERAS_BEGIN, ERAS_END).expect("docs/reality.md has the era table");
    let keep = |t: &str| -> Vec<Vec<String>> {
        verdict_columns(t).into_iter().filter(|r| r.first().is_some_and(|s| ran.contains(&s.as_str()))).collect()
    };
    assert_eq!(
        keep(checked_in),
        keep(&table),
        "docs/reality.md's era table is stale: regenerate it with `cargo run -p mcpsim -- probe reality --doc docs/reality.md`\n{table}"
    );
}
