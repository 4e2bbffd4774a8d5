//! Real proxies in front of the fixture servers (`reality::proxies`): Debian's nginx 1.22.1 and
//! HAProxy 2.6.12, started on loopback by the test.
//!
//! 1. Each configuration of `CONFIGURATIONS` (the defaults, a 3 s read / server timeout, nginx's
//!    buffering forced, HTTP/1.1 upstream keep-alive) is measured on raw sockets in front of the
//!    Python fixture — when the head comes, whether a silent stream is cut, when an idle
//!    kept-alive connection closes — and the lb model of its profile must predict each.
//! 2. Each proxy's defaults, with each SDK's fixture behind, is probed (`PROXY_SCENARIOS`) and
//!    mirrored through the built-in lb profile `nginx` / `haproxy`: every real verdict must equal
//!    its mirror's or be a known disagreement, and docs/reality.md's verdict columns must be the
//!    run's.
//!
//! Skips without nginx/haproxy or the fixtures unless `CI` or `MCPSIM_REALITY_REQUIRED` is set
//! (then it fails). About 80 s.

mod common;

use mcpsim::probe::reality::proxies::{proxies_markdown, PROXIES, PROXIES_BEGIN, PROXIES_END};
use mcpsim::probe::reality::proxy_check::check_all;
use mcpsim::probe::reality::proxy_measure::{measured_markdown, MEASURED_BEGIN, MEASURED_END};
use mcpsim::probe::reality::{self, verdict_columns, Sdk};

const DOC: &str = include_str!("../docs/reality.md");

fn in_ci() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    set("CI") || set("MCPSIM_REALITY_REQUIRED")
}

#[test]
fn nginx_and_haproxy_agree_with_their_lb_profiles_and_the_simulator() {
    let fixtures = reality::fixtures_dir();
    let missing: Vec<String> = PROXIES
        .iter()
        .filter_map(|p| p.kind.installed().err())
        .chain(Sdk::ALL.iter().filter_map(|s| s.installed(&fixtures).err()))
        .collect();
    if !missing.is_empty() {
        if in_ci() {
            panic!("CI is set and a proxy or fixture is not installed: {}", missing.join("; "));
        }
        common::skipped("reality_proxies", &missing.join("; "));
        return;
    }
    let (all, measured) = check_all(&Sdk::ALL, Sdk::Py, &fixtures).unwrap_or_else(|e| panic!("{e}"));
    let measured_table = measured_markdown(&measured);
    let table = proxies_markdown(&all);
    println!("{measured_table}\n{table}");
    for m in &measured {
        assert_eq!(
            m.real, m.model,
            "{} {}: the lb model differs from the proxy ({})\n{measured_table}",
            m.setup, m.what, m.detail
        );
    }
    for p in &all {
        for row in &p.rows {
            assert!(
                !row.unexplained(),
                "{} {}: real {:?}, simulated {:?}\n{table}",
                p.system,
                row.scenario,
                row.real,
                row.sim
            );
        }
    }
    let checked_in = reality::between(DOC, PROXIES_BEGIN, PROXIES_END).expect("docs/reality.md has the proxy table");
    assert_eq!(
        verdict_columns(checked_in),
        verdict_columns(&table),
        "docs/reality.md's proxy table is stale: cargo run -p mcpsim -- probe reality --doc docs/reality.md"
    );
    let checked_in =
        reality::between(DOC, MEASURED_BEGIN, MEASURED_END).expect("docs/reality.md has the proxy measurements");
    assert_eq!(
        verdict_columns(checked_in),
        verdict_columns(&measured_table),
        "docs/reality.md's proxy measurements are stale: cargo run -p mcpsim -- probe reality --doc docs/reality.md"
    );
}
