//! The fault plan: timed faults, as data, written into every trace header.
//!
//! madsim gives no mid-stream reset and no idle timeout, so the actors carry faults out
//! themselves: the plan says *what* happens *when*, `actors` say how.

use mcpsim_model::time::{format_duration, parse_duration, serde_duration};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// One kind of fault.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "kebab-case")]
pub enum Fault {
    /// Every connection between a client and the load balancer is reset (an RST on each).
    Reset,
    /// Client and load balancer cannot reach each other for `duration`: connections crossing the
    /// link are reset when it starts (as when an interface goes down) and new ones are refused
    /// until it heals.
    Partition {
        /// How long the link stays cut.
        #[serde(with = "serde_duration")]
        duration: Duration,
    },
    /// The server process restarts: every session, event log and running tool is lost.
    ServerRestart,
    /// The client process restarts: volatile state is lost, durable state kept. The application
    /// re-issues calls it has not seen resolved and the restored client does not hold. With
    /// several clients, only client 0 restarts. (Resets and partitions hit every client.)
    ClientRestart,
}

impl Fault {
    /// Every fault kind's name, as plans and swarm tests spell them.
    pub const KINDS: &'static [&'static str] = &["reset", "partition", "server-restart", "client-restart"];

    /// The name of this fault's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Reset => "reset",
            Fault::Partition { .. } => "partition",
            Fault::ServerRestart => "server-restart",
            Fault::ClientRestart => "client-restart",
        }
    }

    /// How long the fault lasts (zero for instant ones).
    pub fn duration(&self) -> Duration {
        match self {
            Fault::Partition { duration } => *duration,
            _ => Duration::ZERO,
        }
    }
}

/// A fault at a time since the start of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedFault {
    /// When it happens, since the start of the run.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// What happens.
    #[serde(flatten)]
    pub fault: Fault,
}

impl fmt::Display for PlannedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fault {
            Fault::Partition { duration } => {
                write!(f, "partition {}..{}", format_duration(self.at), format_duration(self.at + *duration))
            }
            other => write!(f, "{} at {}", other.kind(), format_duration(self.at)),
        }
    }
}

/// Timed faults, kept sorted by time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FaultPlan {
    faults: Vec<PlannedFault>,
}

impl FaultPlan {
    /// A plan from faults in any order.
    pub fn new(mut faults: Vec<PlannedFault>) -> Self {
        faults.sort_by_key(|f| f.at);
        FaultPlan { faults }
    }

    /// The faults, in time order.
    pub fn faults(&self) -> &[PlannedFault] {
        &self.faults
    }

    /// How many faults are planned.
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    /// Whether no fault is planned (a calm run).
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Adds a fault, keeping the order.
    pub fn push(&mut self, fault: PlannedFault) {
        let at = self.faults.partition_point(|f| f.at <= fault.at);
        self.faults.insert(at, fault);
    }

    /// Removes every fault of one kind.
    pub(crate) fn remove_kind(&mut self, kind: &str) {
        self.faults.retain(|f| f.fault.kind() != kind);
    }

    /// When the last fault is over: from then on the network is healed and no fault is planned.
    pub fn heal_time(&self) -> Duration {
        self.faults.iter().map(|f| f.at + f.fault.duration()).max().unwrap_or(Duration::ZERO)
    }
}

/// Parses `START..END` (e.g. `60s..4m`) into a partition fault.
pub fn parse_partition(text: &str) -> Result<PlannedFault, String> {
    let (a, b) = text.split_once("..").ok_or_else(|| format!("partition {text:?} is not START..END (e.g. 60s..5m)"))?;
    let (start, end) = (parse_duration(a)?, parse_duration(b)?);
    if end <= start {
        return Err(format!("partition {text:?} ends before it starts"));
    }
    Ok(PlannedFault { at: start, fault: Fault::Partition { duration: end - start } })
}

/// Parses a comma-separated list of times (`30s,2m`).
pub(crate) fn parse_times(text: &str) -> Result<Vec<Duration>, String> {
    text.split(',').map(|t| parse_duration(t.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_stay_sorted_and_know_when_they_heal() {
        let mut plan = FaultPlan::new(vec![
            PlannedFault { at: Duration::from_secs(90), fault: Fault::Reset },
            parse_partition("10s..1m").unwrap(),
        ]);
        plan.push(PlannedFault { at: Duration::from_secs(20), fault: Fault::ServerRestart });
        let kinds: Vec<_> = plan.faults().iter().map(|f| f.fault.kind()).collect();
        assert_eq!(kinds, ["partition", "server-restart", "reset"]);
        assert_eq!(plan.heal_time(), Duration::from_secs(90));
        plan.remove_kind("reset");
        assert_eq!(plan.heal_time(), Duration::from_secs(60));
    }

    #[test]
    fn partitions_parse_and_reject_nonsense() {
        let p = parse_partition("60s..5m").unwrap();
        assert_eq!(p.at, Duration::from_secs(60));
        assert_eq!(p.fault, Fault::Partition { duration: Duration::from_secs(240) });
        assert!(parse_partition("5m..60s").is_err());
        assert!(parse_partition("60s").is_err());
        assert!(parse_partition("x..5m").is_err());
        assert_eq!(p.to_string(), "partition 1m..5m");
    }

    #[test]
    fn plans_round_trip_through_json() {
        let plan = FaultPlan::new(vec![parse_partition("1m..5m").unwrap()]);
        let text = serde_json::to_string(&plan).unwrap();
        assert_eq!(text, r#"[{"at":"1m","fault":"partition","duration":"4m"}]"#);
        assert_eq!(serde_json::from_str::<FaultPlan>(&text).unwrap(), plan);
    }
}
