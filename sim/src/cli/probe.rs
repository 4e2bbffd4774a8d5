//! `mcpsim probe server --url URL`: probe a real server through a fault proxy.

use super::Exit;
use crate::error::SimError;
use crate::probe::{probe_server, verdict_table, ProbeOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Runs the probe, prints the table of verdicts, the fingerprint and where the files went.
/// Exit 0 no invariant violated, 1 one was, 2 bad input or the probe could not run.
pub fn cmd_probe_server(
    url: &str,
    allow_remote: bool,
    out: Option<PathBuf>,
    only: Vec<String>,
    scenario_timeout_s: u64,
) -> Result<Exit, SimError> {
    let opts = ProbeOptions {
        url: url.to_string(),
        allow_remote,
        out_dir: Some(out.unwrap_or_else(|| PathBuf::from("probe-out"))),
        only,
        scenario_timeout: Duration::from_secs(scenario_timeout_s.clamp(5, 600)),
    };
    let report = match probe_server(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcpsim probe: {e}");
            return Ok(Exit::BadInput);
        }
    };
    print!("{}", verdict_table(&report));
    println!();
    print!("{}", report.profile_toml);
    // Beside the built-in profile its event ids point at (the reference profile otherwise).
    let builtin = report.fingerprint.value("event_ids").map(|v| v.trim_matches('"').to_string());
    let builtin = builtin.as_deref().filter(|n| mcpsim_model::profiles::server(n).is_some()).unwrap_or("reference");
    if let Some(profile) = mcpsim_model::profiles::server(builtin) {
        println!("\ncompared with the built-in server profile {builtin:?}:");
        for (field, probed, theirs) in report.fingerprint.compare(&profile) {
            let mark = if probed == theirs { "same" } else { "DIFFERS" };
            println!("  {field:<28} probed {probed:<16} built-in {theirs:<16} {mark}");
        }
    }
    for s in &report.scenarios {
        if let Some(f) = &s.trace_file {
            println!("trace {}: {}", s.name, f.display());
        }
    }
    if let Some(f) = &report.profile_file {
        println!("profile: {}", f.display());
    }
    if report.scenarios.iter().any(|s| !s.violations.is_empty()) {
        Ok(Exit::Violated)
    } else {
        Ok(Exit::Clean)
    }
}
