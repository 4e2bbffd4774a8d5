//! The real SDKs against the simulator: each fixture server of `sim/probe/fixtures` (installed
//! by `install.sh`) is probed; its fingerprint must equal the built-in server profile except
//! for the documented known differences, and every probe scenario's real verdict must equal
//! the simulator's verdict of its mirror (or be a documented known disagreement). The verdict
//! columns of docs/reality.md must be what the run produces.
//!
//! Without the fixtures this skips with a message, unless `CI` or `MCPSIM_REALITY_REQUIRED` is set: then a missing fixture
//! fails. Real runs take wall-clock time (about two minutes, the three SDKs in parallel) and
//! are not deterministic; the probe keeps margins of seconds and probes a disagreement twice.

mod common;

use mcpsim::probe::reality::client as client_reality;
use mcpsim::probe::reality::{self, FieldStatus, Sdk, SdkReality};

const DOC: &str = include_str!("../docs/reality.md");

/// CI (or `.ci/run`, which sets `MCPSIM_REALITY_REQUIRED=1`): a missing fixture fails.
fn in_ci() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    set("CI") || set("MCPSIM_REALITY_REQUIRED")
}

#[test]
fn real_sdk_servers_agree_with_their_profiles_and_the_simulator() {
    let fixtures = reality::fixtures_dir();
    let mut sdks = Vec::new();
    for sdk in Sdk::ALL {
        match sdk.installed(&fixtures) {
            Ok(()) => sdks.push(sdk),
            Err(why) if in_ci() => panic!("CI is set and a real-SDK fixture is not installed: {why}"),
            Err(why) => common::skipped("reality", &format!("{} not installed: {why}", sdk.name())),
        }
    }
    if sdks.is_empty() {
        common::skipped("reality", "no real-SDK fixture installed (run sim/probe/fixtures/install.sh)");
        return;
    }
    let handles: Vec<_> = sdks
        .iter()
        .map(|&sdk| {
            let fixtures = fixtures.clone();
            std::thread::spawn(move || reality::check_sdk(sdk, &fixtures))
        })
        .collect();
    let all: Vec<SdkReality> = sdks
        .iter()
        .zip(handles)
        .map(|(sdk, h)| {
            h.join()
                .expect("the probe thread does not panic")
                .unwrap_or_else(|e| panic!("{}: the probe could not run: {e}", sdk.name()))
        })
        .collect();
    let table = reality::table_markdown(&all);
    let fields = reality::fields_markdown(&all);
    eprintln!("{table}\n{fields}\n{}", reality::keep_alive_markdown(&all));

    let mut problems = Vec::new();
    // What the scenarios are there to decide, on every fixture (a scenario that quietly stops
    // deciding would otherwise pass as "nothing differs").
    for r in &all {
        for must in [
            "idle_ttl",
            "idle_rule",
            "second_get",
            "fresh_get",
            "keepalive_timer",
            "unknown_session",
            "delete_running_tool",
            "retention.max_events",
            "keep_alive_timeout",
        ] {
            if !r.fields.iter().any(|f| f.field == must) {
                problems.push(format!("{}: {must} was not decided (undetermined: {:?})", r.sdk.name(), r.undetermined));
            }
        }
    }
    for r in &all {
        for f in &r.fields {
            match &f.status {
                FieldStatus::New => problems.push(format!(
                    "{}: field {} probed {} but the built-in profile {} says {}, and no known difference explains it ({})",
                    r.sdk.name(),
                    f.field,
                    f.probed,
                    r.sdk.profile(),
                    f.builtin,
                    f.why
                )),
                FieldStatus::Stale(k) => eprintln!(
                    "reality: {} {} is now the same as probed; its KNOWN_FIELD_DIFFERENCES entry can go",
                    k.profile, k.field
                ),
                _ => {}
            }
        }
        match &r.client_keep_alive {
            None => problems.push(format!("{}: the client's http.keep_alive was not decided", r.sdk.name())),
            Some(f) if f.status == FieldStatus::New => problems.push(format!(
                "{}: the client's http.keep_alive probed {} but the built-in client profile says {}, and no known difference explains it ({})",
                r.sdk.name(),
                f.probed,
                f.builtin,
                f.why
            )),
            Some(_) => {}
        }
        // `http.reuse_after` may stay undetermined (a client that never reuses); decided, it must agree.
        if let Ok(f) = &r.client_reuse_after {
            if f.status == FieldStatus::New {
                problems.push(format!(
                    "{}: the client's http.reuse_after probed {} but the built-in client profile says {} ({})",
                    r.sdk.name(),
                    f.probed,
                    f.builtin,
                    f.why
                ));
            }
        }
        for row in r.rows.iter().filter(|row| row.unexplained()) {
            problems.push(format!(
                "{} {}: real verdict {:?}, simulated {:?}, even when probed again; not a known disagreement ({})",
                r.sdk.name(),
                row.scenario,
                row.real,
                row.sim,
                row.note
            ));
        }
    }

    // The checked-in table: only the verdict columns (the notes carry wall-clock detail), and
    // only the rows of the SDKs that ran.
    let checked_in = reality::between(DOC, reality::TABLE_BEGIN, reality::TABLE_END)
        .expect("docs/reality.md has the generated table between its markers");
    let ran: Vec<&str> = sdks.iter().map(|s| s.name()).collect();
    let keep = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
        rows.into_iter()
            .filter(|r| r.first().is_some_and(|s| ran.contains(&s.as_str())))
            .map(|mut r| {
                // A row whose real verdict goes either way: only its simulated verdict is compared.
                if r.len() == 5 && reality::varies(&r[0], &r[1]) {
                    r[2] = "(varies)".into();
                    r[4] = "(varies)".into();
                }
                r
            })
            .collect()
    };
    let (was, now) = (keep(reality::verdict_columns(checked_in)), keep(reality::verdict_columns(&table)));
    if was != now {
        let diff = common::first_row_difference(&now, &was);
        problems.push(format!(
            "docs/reality.md's verdicts differ from this run:{diff}\n  regenerate: cargo run -p mcpsim -- probe reality --doc docs/reality.md"
        ));
    }
    // The client half: no unexplained disagreement, and the checked-in client table's columns
    // (all but the note) are this run's.
    let clients: Vec<_> = all.iter().flat_map(|r| r.clients.iter().cloned()).collect();
    for row in clients.iter().filter(|r| r.unexplained()) {
        problems.push(format!(
            "{} client {}: real {} ({}), simulated {:?} ({:?}); not a known disagreement ({})",
            row.sdk.name(),
            row.run,
            row.real,
            row.real_seen,
            row.sim,
            row.sim_seen,
            row.note
        ));
    }
    let client_table = client_reality::client_table_markdown(&clients);
    eprintln!("{client_table}");
    let checked_in = reality::between(DOC, client_reality::CLIENT_BEGIN, client_reality::CLIENT_END)
        .expect("docs/reality.md has the generated client table between its markers");
    let only_ran = |rows: Vec<Vec<String>>| -> Vec<Vec<String>> {
        rows.into_iter().filter(|r| r.first().is_some_and(|s| ran.contains(&s.as_str()))).collect()
    };
    let (was, now) =
        (only_ran(client_reality::client_columns(checked_in)), only_ran(client_reality::client_columns(&client_table)));
    if was != now {
        let diff = common::first_row_difference(&now, &was);
        problems.push(format!(
            "docs/reality.md's client rows differ from this run:{diff}\n  regenerate: cargo run -p mcpsim -- probe reality --doc docs/reality.md"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
