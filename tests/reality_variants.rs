//! Fixture servers in other configurations than their SDK's defaults (`reality::variants`):
//! the Python fixture without an event store, probed and mirrored with `py-sdk` and
//! `event_store = "none"`. Its fingerprint must say so, no event that reached the application
//! may be judged lost, every real verdict must equal its mirror's (or name no mirror), and the
//! table in docs/reality.md must be what the run produces.
//!
//! Skips without the Python fixture unless `CI` or `MCPSIM_REALITY_REQUIRED` is set.

mod common;

use mcpsim::probe::reality::variants::{check_variant, variants_markdown, VARIANTS, VARIANTS_BEGIN, VARIANTS_END};
use mcpsim::probe::reality::{self, verdict_columns};

const DOC: &str = include_str!("../docs/reality.md");

fn in_ci() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    set("CI") || set("MCPSIM_REALITY_REQUIRED")
}

#[test]
fn a_server_without_an_event_store_agrees_with_its_profile_and_the_simulator() {
    let fixtures = reality::fixtures_dir();
    let mut all = Vec::new();
    for v in VARIANTS {
        match v.sdk.installed(&fixtures) {
            Ok(()) => all.push(check_variant(v, &fixtures).unwrap_or_else(|e| panic!("{}: {e}", v.name))),
            Err(why) if in_ci() => panic!("CI is set and a real-SDK fixture is not installed: {why}"),
            Err(why) => common::skipped("reality_variants", &format!("{}: {why}", v.name)),
        }
    }
    let table = variants_markdown(&all);
    println!("{table}");
    for v in &all {
        let fp = &v.report.fingerprint;
        if v.name == "py-no-store" {
            assert_eq!(fp.value("event_store"), Some("\"none\""), "{table}");
            assert_eq!(fp.value("resume_without_store"), Some("\"error500\""), "{table}");
        }
        for s in &v.report.scenarios {
            assert!(
                !s.violations.iter().any(|x| x.invariant == "no-silent-event-loss"),
                "{} {}: a false loss\n{}",
                v.name,
                s.name,
                mcpsim::probe::verdict_table(&v.report)
            );
        }
        assert!(v.differing.is_empty(), "{}: fields differ from the adjusted profile: {:?}", v.name, v.differing);
        for row in &v.rows {
            assert!(
                !row.unexplained(),
                "{} {}: real {:?}, simulated {:?}\n{table}",
                v.name,
                row.scenario,
                row.real,
                row.sim
            );
        }
    }
    if all.len() == VARIANTS.len() {
        let checked_in =
            reality::between(DOC, VARIANTS_BEGIN, VARIANTS_END).expect("docs/reality.md has the variant table");
        assert_eq!(
            verdict_columns(checked_in),
            verdict_columns(&table),
            "docs/reality.md's variant table is stale: cargo run -p mcpsim -- probe reality --doc docs/reality.md"
        );
    }
}
