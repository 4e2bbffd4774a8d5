//! `--lb NAME|FILE` of `probe server` and `probe reality`: every probe scenario mirrored in the
//! simulator once more, through the user's own proxy description instead of the built-in
//! `default` balancer, and the verdicts set side by side (real, simulated as the mirrors are,
//! simulated through the user's lb).

use crate::probe::reality::check::{cell, real_verdict, short};
use crate::probe::reality::sdk::Verdict;
use crate::probe::reality::server::{mirror, sim_verdict};
use crate::probe::server::run::ProbeReport;
use crate::scenario::Scenario;
use mcpsim_model::config::LbConfig;

/// Reads `--lb`: a built-in lb profile's name or a profile file, as `--set lb=` reads it.
pub fn lb_from_arg(v: &str) -> Result<LbConfig, String> {
    let mut s = Scenario::build("resume-after-completion", "reference", "reference").map_err(|e| e.to_string())?;
    s.apply_overrides(&[("lb".to_string(), v.to_string())]).map_err(|e| e.to_string())?;
    Ok(s.lb)
}

/// One scenario's verdicts: real, mirrored behind the built-in `default` balancer, mirrored
/// behind the user's lb.
#[derive(Clone, Debug)]
pub struct LbRow {
    /// The system probed (`ts`, or the URL's host).
    pub system: String,
    /// The probe scenario.
    pub scenario: &'static str,
    /// The real verdict.
    pub real: Result<Verdict, String>,
    /// The mirror's verdict as the agreement table has it.
    pub sim: Result<Verdict, String>,
    /// The mirror's verdict through the user's lb.
    pub through: Result<Verdict, String>,
}

/// The mirror of probe scenario `name` against `profile`, behind `lb` when given.
fn mirrored(name: &str, profile: &str, lb: Option<&LbConfig>) -> Result<Scenario, String> {
    let mut s = mirror(name, profile).map_err(|why| format!("no mirror: {why}"))?;
    if let Some(lb) = lb {
        s.lb = lb.clone();
    }
    Ok(s)
}

fn simulate(name: &str, profile: &str, lb: Option<&LbConfig>) -> Result<Verdict, String> {
    sim_verdict(&mirrored(name, profile, lb)?).map(|(v, _)| v)
}

/// The rows of `report`'s scenarios, mirrored with the built-in server `profile`.
pub fn lb_rows(system: &str, profile: &str, report: &ProbeReport, lb: &LbConfig) -> Vec<LbRow> {
    report
        .scenarios
        .iter()
        .map(|s| LbRow {
            system: system.to_string(),
            scenario: s.name,
            real: real_verdict(s),
            sim: simulate(s.name, profile, None),
            through: simulate(s.name, profile, Some(lb)),
        })
        .collect()
}

/// The rows of an agreement table's rows (the real verdict and the default mirror's are there
/// already), mirrored once more behind `lb`.
pub fn lb_rows_of(
    system: &str,
    profile: &str,
    rows: &[crate::probe::reality::check::Row],
    lb: &LbConfig,
) -> Vec<LbRow> {
    rows.iter()
        .map(|r| LbRow {
            system: system.to_string(),
            scenario: r.scenario,
            real: r.real.clone(),
            sim: r.sim.clone(),
            through: simulate(r.scenario, profile, Some(lb)),
        })
        .collect()
}

/// The side-by-side table (markdown); `lb_name` heads the last verdict column.
pub fn lb_markdown(rows: &[LbRow], lb_name: &str) -> String {
    let mut out = format!(
        "| system | probe scenario | real verdict | simulated (default lb) | simulated (lb {}) | through the lb |\n|---|---|---|---|---|---|\n",
        cell(lb_name)
    );
    for r in rows {
        let change = match (&r.sim, &r.through) {
            (Ok(a), Ok(b)) if a == b => "same".to_string(),
            (Ok(_), Ok(b)) => format!("differs: {b}"),
            _ => "n/a".to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&r.system),
            r.scenario,
            cell(&short(&r.real)),
            cell(&short(&r.sim)),
            cell(&short(&r.through)),
            cell(&change)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_lb_is_read_by_name_and_changes_the_mirror_it_is_put_in() {
        let nginx = lb_from_arg("nginx").expect("the built-in nginx profile");
        assert_eq!(nginx.idle_timeout, Some(Duration::from_secs(60)));
        assert!(lb_from_arg("no-such-lb-profile").is_err());
        // A balancer cutting every stream silent for 300 ms cuts the call's stream (ticks every
        // 500 ms) in the mirror; the default balancer (60 s) does not.
        let tight = LbConfig { idle_timeout: Some(Duration::from_millis(300)), ..nginx };
        let cuts = |lb: Option<&LbConfig>| {
            let s = mirrored("basics", "py-sdk", lb).expect("basics has a mirror");
            let out = crate::engine::runner::run(&s, 1).expect("the mirror runs");
            out.trace
                .steps
                .iter()
                .filter(|st| matches!(st.kind, mcpsim_model::trace::StepKind::LbIdleCut { .. }))
                .count()
        };
        assert_eq!(cuts(None), 0);
        assert!(cuts(Some(&tight)) > 0);
        assert!(simulate("basics", "py-sdk", Some(&tight)).is_ok());
    }
}
