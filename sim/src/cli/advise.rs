//! `mcpsim advise`.

use super::progress::Bar;
use super::{Exit, ScenarioArgs};
use crate::engine::runner::run;
use crate::error::SimError;

/// `mcpsim advise`: flags are the load balancer idle timeout, the event rate and the outage;
/// with `retention`, the longest outage that retention survives instead.
pub fn cmd_advise(
    args: &ScenarioArgs,
    flags: [Option<String>; 3],
    retention: Option<&str>,
    verify: bool,
    seeds: u64,
) -> Result<Exit, SimError> {
    use crate::studies::advise;
    let mut scenario = args.build()?;
    scenario.require_one_client_profile("advise")?;
    let [lb_idle, event_rate, max_outage] = flags;
    if retention.is_some() && (verify || max_outage.is_some()) {
        return Err(SimError::Usage(
            "--retention asks for the longest outage; it does not combine with --max-outage or --verify".into(),
        ));
    }
    let input = advise::AdviseInput::from_scenario(&scenario).with_flags(
        lb_idle.as_deref(),
        event_rate.as_deref(),
        max_outage.as_deref(),
    )?;
    if let Some(n) = retention {
        scenario.apply_overrides(&[("server.retention".into(), n.into())])?;
        // Outages in 100 ms steps, up to an hour: finer than any reconnect delay of the profiles.
        let (step, until) = (std::time::Duration::from_millis(100), std::time::Duration::from_secs(3600));
        let longest = advise::longest_outage(&scenario, &input, step, until);
        print!("{}", advise::render_longest(&scenario, &input, &longest));
        return Ok(Exit::Clean);
    }
    let advice = advise::advise(&scenario, &input);
    print!("{}", advise::render(&advice));
    if verify {
        let opts = advise::VerifyOptions { seeds, margin: 5, jobs: 0 };
        let report = advise::verify(&scenario, &advice, &opts, &run, &Bar::new("verify"))?;
        print!("{}", advise::render_verify(&report));
    }
    Ok(Exit::Clean)
}

/// `mcpsim advise --tasks`: the TTL a task needs (the arithmetic in `studies::advise::task_ttl`).
pub fn cmd_advise_tasks(args: &ScenarioArgs, max_outage: Option<&str>) -> Result<Exit, SimError> {
    use crate::studies::advise;
    let scenario = args.build()?;
    scenario.require_one_client_profile("advise --tasks")?;
    let input = advise::AdviseInput::from_scenario(&scenario).with_flags(None, None, max_outage)?;
    print!("{}", advise::render_task_ttl(&advise::task_ttl(&scenario, input.max_outage)));
    Ok(Exit::Clean)
}
