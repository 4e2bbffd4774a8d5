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
    /// A silent black hole between the clients and the load balancer for `duration` (a NAT or a
    /// stateful firewall that forgets a flow and drops its packets, RST included): every
    /// connection crossing the edge when it starts (of `target` only, when given) is dead from
    /// then on, for good. Bytes written on it are accepted by the writer and lost, and neither end
    /// is told anything: no end, no reset, no error. New connections get no answer while it lasts
    /// (the connect's SYN is retransmitted, and gets through once it heals). Each end learns only
    /// by a timer of its own (`crate::engine::wire`).
    Blackhole {
        /// The one client whose connections it catches (`clientN`); `None`: every client's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
        /// How long new connections get no answer.
        #[serde(with = "serde_duration")]
        duration: Duration,
    },
    /// The server process restarts: every session, event log and running tool is lost.
    ServerRestart,
    /// The client process restarts: volatile state is lost, durable state kept. The application
    /// re-issues calls it has not seen resolved and the restored client does not hold. With
    /// several clients, only client 0 restarts. (Resets and partitions hit every client.)
    ClientRestart,
    /// One node restarts: a client process (as `ClientRestart`, for client N), one server
    /// replica (its sessions and event logs go with it unless the replicas share a store; then
    /// only its connections go), or one hop of the chain (every connection through it goes; the
    /// hop in front of it answers 502 where no response head had come yet; the balancer, the
    /// last hop, forgets its sticky sessions).
    Restart {
        /// The client or replica.
        target: Target,
    },
    /// Every connection of one client, every connection the load balancer holds to one
    /// replica, or every connection through one hop of the chain, is reset (both sides).
    Cut {
        /// The client or replica whose connections are cut.
        target: Target,
    },
    /// A rolling deploy: replica 0, 1, … restart one by one, `interval` apart. With `drain`, each
    /// replica is first taken out of the balancer's rotation (no new connections) and restarts
    /// `drain` later, so that open requests shorter than that finish.
    Deploy {
        /// Between one replica's restart and the next one's.
        #[serde(with = "serde_duration")]
        interval: Duration,
        /// How long a replica drains (no new connections) before it restarts; `None`: at once.
        #[serde(default, with = "mcpsim_model::time::serde_opt_duration", skip_serializing_if = "Option::is_none")]
        drain: Option<Duration>,
        /// The replicas it walks through (the scenario's `lb.replicas` when it was set).
        replicas: u32,
    },
    /// One hop of the chain (a `hopN` target; the balancer is the last) answers every new request
    /// itself with `status` for `duration`, passing none on: a proxy reloading its routes or being
    /// deployed answers 404 (or 400, 405, 503) though every session lives on. Connections already
    /// open are not touched.
    Answer {
        /// The hop.
        target: Target,
        /// The status it answers (400 to 599).
        status: u16,
        /// How long it answers by itself.
        #[serde(with = "serde_duration")]
        duration: Duration,
    },
    /// Client N's next `tools/call` POST (from this time on) reaches the server with a body that
    /// does not parse: cut short in transit by a proxy, or mangled by a client bug. The client
    /// sent a whole request; the server sees a protocol error and reacts as its
    /// `on_protocol_error` says (a 400, or its process exits).
    Malformed {
        /// The client whose POST arrives malformed.
        target: Target,
    },
    /// The first `CreateTaskResult` (a `tools/call` answered with a task, `crate::tasks`) any
    /// server writes at or after the fault's time is dropped and the connection carrying it reset
    /// (both sides): the task exists, the client never gets its id. Timed on the reply itself,
    /// whenever it comes, rather than at an instant that has to guess it.
    TaskReplyLost,
}

/// The node a targeted fault hits: `client0`, `client1`, …, `replica0`, `replica1`, …, `hop0`,
/// `hop1`, … (the chain's hops from the client's side; the balancer itself is the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Target {
    /// Logical client N.
    Client(u32),
    /// Server replica N.
    Replica(u32),
    /// Hop N of the chain in front of the replicas (`lb.hops[N]`, or the balancer for N =
    /// the number of hops).
    Hop(u32),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Client(i) => write!(f, "client{i}"),
            Target::Replica(i) => write!(f, "replica{i}"),
            Target::Hop(i) => write!(f, "hop{i}"),
        }
    }
}

impl From<Target> for String {
    fn from(t: Target) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for Target {
    type Error = String;
    fn try_from(s: String) -> Result<Target, String> {
        s.parse()
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Target, String> {
        let number = |rest: &str| rest.parse::<u32>().map_err(|_| format!("{s:?} is not clientN, replicaN or hopN"));
        if let Some(rest) = s.strip_prefix("client") {
            Ok(Target::Client(number(rest)?))
        } else if let Some(rest) = s.strip_prefix("replica") {
            Ok(Target::Replica(number(rest)?))
        } else if let Some(rest) = s.strip_prefix("hop") {
            Ok(Target::Hop(number(rest)?))
        } else {
            Err(format!("{s:?} is not clientN, replicaN or hopN (e.g. replica1, hop0)"))
        }
    }
}

impl Fault {
    /// Every fault kind's name, as plans and swarm tests spell them.
    pub const KINDS: &'static [&'static str] = &["reset", "partition", "server-restart", "client-restart", "blackhole"];

    /// The kinds of [`Fault::KINDS`] a search draws unless told otherwise (`explore
    /// --fault-kinds`): every kind but `blackhole`, which came later, so that the cases every
    /// existing search draws from a seed (and the budgets measured on them) stay what they were.
    pub const SEARCHED_BY_DEFAULT: &'static [&'static str] =
        &["reset", "partition", "server-restart", "client-restart"];

    /// The fault kinds that target one node or walk the replicas: no swarm search switches them on
    /// as a kind (the whole space draws `deploy` and `answer` as dimensions of their own).
    pub const TARGETED_KINDS: &'static [&'static str] =
        &["restart", "cut", "deploy", "answer", "malformed", "task-reply-lost"];

    /// The name of this fault's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Reset => "reset",
            Fault::Partition { .. } => "partition",
            Fault::Blackhole { .. } => "blackhole",
            Fault::ServerRestart => "server-restart",
            Fault::ClientRestart => "client-restart",
            Fault::Restart { .. } => "restart",
            Fault::Cut { .. } => "cut",
            Fault::Deploy { .. } => "deploy",
            Fault::Answer { .. } => "answer",
            Fault::Malformed { .. } => "malformed",
            Fault::TaskReplyLost => "task-reply-lost",
        }
    }

    /// How long the fault lasts (zero for instant ones).
    pub fn duration(&self) -> Duration {
        match self {
            Fault::Partition { duration } | Fault::Answer { duration, .. } | Fault::Blackhole { duration, .. } => {
                *duration
            }
            // The last replica restarts (after its drain) this long after the start.
            Fault::Deploy { interval, drain, replicas } => {
                *interval * replicas.saturating_sub(1) + drain.unwrap_or(Duration::ZERO)
            }
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
            Fault::Blackhole { target, duration } => {
                let of = target.map(|t| format!(" of {t}")).unwrap_or_default();
                write!(f, "blackhole{of} {}..{}", format_duration(self.at), format_duration(self.at + *duration))
            }
            Fault::Restart { target } => write!(f, "restart {target} at {}", format_duration(self.at)),
            Fault::Cut { target } => write!(f, "cut {target} at {}", format_duration(self.at)),
            Fault::Malformed { target } => {
                write!(f, "{target}'s next tools/call arrives malformed from {}", format_duration(self.at))
            }
            Fault::Deploy { interval, drain, replicas } => {
                write!(
                    f,
                    "deploy of {replicas} replicas at {} every {}",
                    format_duration(self.at),
                    format_duration(*interval)
                )?;
                match drain {
                    Some(d) => write!(f, ", draining up to {}", format_duration(*d)),
                    None => write!(f, ", without draining"),
                }
            }
            Fault::Answer { target, status, duration } => write!(
                f,
                "{target} answers {status} itself {}..{}",
                format_duration(self.at),
                format_duration(self.at + *duration)
            ),
            Fault::TaskReplyLost => {
                write!(f, "task-reply-lost: the first CreateTaskResult from {} is dropped", format_duration(self.at))
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

/// Parses a black hole: `START..END` (every client's connections, e.g. `1m..16m`) or
/// `CLIENT@START..END` (one client's, e.g. `client1@1m..16m`).
pub fn parse_blackhole(text: &str) -> Result<PlannedFault, String> {
    let shape = || format!("blackhole {text:?} is not START..END or CLIENT@START..END (e.g. 1m..16m, client1@1m..16m)");
    let (target, window) = match text.split_once('@') {
        Some((target, window)) => (Some(target.trim().parse::<Target>()?), window),
        None => (None, text),
    };
    let (a, b) = window.split_once("..").ok_or_else(shape)?;
    let (start, end) = (parse_duration(a.trim())?, parse_duration(b.trim())?);
    if end <= start {
        return Err(format!("blackhole {text:?} ends before it starts"));
    }
    Ok(PlannedFault { at: start, fault: Fault::Blackhole { target, duration: end - start } })
}

/// Parses `TARGET@TIME` (e.g. `replica1@2m`).
pub fn parse_targeted(text: &str) -> Result<(Target, Duration), String> {
    let (target, at) =
        text.split_once('@').ok_or_else(|| format!("{text:?} is not TARGET@TIME (e.g. replica1@2m, client0@30s)"))?;
    Ok((target.trim().parse()?, parse_duration(at.trim())?))
}

/// Parses a rolling deploy `AT/INTERVAL` or `AT/INTERVAL/DRAIN` (e.g. `2m/30s/1m`) over
/// `replicas` replicas.
pub fn parse_deploy(text: &str, replicas: u32) -> Result<PlannedFault, String> {
    let parts: Vec<&str> = text.split('/').map(str::trim).collect();
    let (at, interval, drain) = match parts.as_slice() {
        [at, interval] => (parse_duration(at)?, parse_duration(interval)?, None),
        [at, interval, drain] => (parse_duration(at)?, parse_duration(interval)?, Some(parse_duration(drain)?)),
        _ => return Err(format!("deploy {text:?} is not AT/INTERVAL or AT/INTERVAL/DRAIN (e.g. 2m/30s/1m)")),
    };
    if interval.is_zero() || drain.is_some_and(|d| d.is_zero()) {
        return Err(format!("deploy {text:?}: the interval and the drain timeout must be above 0"));
    }
    Ok(PlannedFault { at, fault: Fault::Deploy { interval, drain, replicas } })
}

/// Parses `HOP=STATUS@START..END` (e.g. `hop0=404@60s..90s`): a hop answering by itself.
pub fn parse_answer(text: &str) -> Result<PlannedFault, String> {
    let shape = || format!("{text:?} is not HOP=STATUS@START..END (e.g. hop0=404@60s..90s)");
    let (target, rest) = text.split_once('=').ok_or_else(shape)?;
    let (status, window) = rest.split_once('@').ok_or_else(shape)?;
    let target: Target = target.trim().parse()?;
    let status: u16 = status.trim().parse().map_err(|_| format!("{text:?}: {status:?} is not an HTTP status"))?;
    let (a, b) = window.split_once("..").ok_or_else(shape)?;
    let (start, end) = (parse_duration(a.trim())?, parse_duration(b.trim())?);
    if end <= start {
        return Err(format!("{text:?}: the window ends before it starts"));
    }
    Ok(PlannedFault { at: start, fault: Fault::Answer { target, status, duration: end - start } })
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
    fn targeted_faults_and_deploys_parse_show_and_round_trip() {
        assert_eq!(parse_targeted("replica1@2m").unwrap(), (Target::Replica(1), Duration::from_secs(120)));
        assert_eq!(parse_targeted("client0@30s").unwrap().0, Target::Client(0));
        assert_eq!(parse_targeted("hop1@2m").unwrap(), (Target::Hop(1), Duration::from_secs(120)));
        assert_eq!(Target::Hop(1).to_string(), "hop1");
        assert!(parse_targeted("hopx@2m").is_err());
        assert!(parse_targeted("server@2m").is_err() && parse_targeted("replica1").is_err());
        let d = parse_deploy("2m/30s/1m", 3).unwrap();
        assert_eq!(d.fault.duration(), Duration::from_secs(120));
        assert_eq!(d.to_string(), "deploy of 3 replicas at 2m every 30s, draining up to 1m");
        assert!(parse_deploy("2m", 2).is_err() && parse_deploy("2m/0s", 2).is_err());
        let plan = FaultPlan::new(vec![
            d,
            PlannedFault { at: Duration::from_secs(5), fault: Fault::Restart { target: Target::Replica(1) } },
        ]);
        let text = serde_json::to_string(&plan).unwrap();
        assert!(text.contains(r#""fault":"restart","target":"replica1""#), "{text}");
        assert_eq!(serde_json::from_str::<FaultPlan>(&text).unwrap(), plan);
    }

    #[test]
    fn a_hop_answering_by_itself_parses_shows_and_round_trips() {
        let a = parse_answer("hop0=404@60s..90s").unwrap();
        let fault = Fault::Answer { target: Target::Hop(0), status: 404, duration: Duration::from_secs(30) };
        assert_eq!((a.at, &a.fault), (Duration::from_secs(60), &fault));
        assert_eq!(a.to_string(), "hop0 answers 404 itself 1m..90s");
        assert_eq!(FaultPlan::new(vec![a.clone()]).heal_time(), Duration::from_secs(90));
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(text, r#"{"at":"1m","fault":"answer","target":"hop0","status":404,"duration":"30s"}"#);
        assert_eq!(serde_json::from_str::<PlannedFault>(&text).unwrap(), a);
        for bad in ["hop0@1m..2m", "hop0=404", "hop0=x@1m..2m", "hop0=404@2m..1m", "server=404@1m..2m"] {
            assert!(parse_answer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_lost_task_reply_shows_and_round_trips() {
        let f = PlannedFault { at: Duration::from_secs(1), fault: Fault::TaskReplyLost };
        assert_eq!(f.to_string(), "task-reply-lost: the first CreateTaskResult from 1s is dropped");
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(text, r#"{"at":"1s","fault":"task-reply-lost"}"#);
        assert_eq!(serde_json::from_str::<PlannedFault>(&text).unwrap(), f);
        assert_eq!(FaultPlan::new(vec![f]).heal_time(), Duration::from_secs(1));
    }

    #[test]
    fn black_holes_parse_show_round_trip_and_reject_nonsense() {
        let every = parse_blackhole("1m..16m").unwrap();
        assert_eq!(every.at, Duration::from_secs(60));
        assert_eq!(every.fault, Fault::Blackhole { target: None, duration: Duration::from_secs(900) });
        assert_eq!(every.to_string(), "blackhole 1m..16m");
        assert_eq!(every.fault.kind(), "blackhole");
        assert_eq!(FaultPlan::new(vec![every.clone()]).heal_time(), Duration::from_secs(960));
        let text = serde_json::to_string(&every).unwrap();
        assert_eq!(text, r#"{"at":"1m","fault":"blackhole","duration":"15m"}"#);
        assert_eq!(serde_json::from_str::<PlannedFault>(&text).unwrap(), every);
        let one = parse_blackhole("client1@30s..2m").unwrap();
        let fault = Fault::Blackhole { target: Some(Target::Client(1)), duration: Duration::from_secs(90) };
        assert_eq!((one.at, &one.fault), (Duration::from_secs(30), &fault));
        assert_eq!(one.to_string(), "blackhole of client1 30s..2m");
        let text = serde_json::to_string(&one).unwrap();
        assert_eq!(text, r#"{"at":"30s","fault":"blackhole","target":"client1","duration":"90s"}"#);
        assert_eq!(serde_json::from_str::<PlannedFault>(&text).unwrap(), one);
        for bad in ["2m..1m", "1m", "x..2m", "client1@", "server@1m..2m", "client1@2m..2m"] {
            assert!(parse_blackhole(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plans_round_trip_through_json() {
        let plan = FaultPlan::new(vec![parse_partition("1m..5m").unwrap()]);
        let text = serde_json::to_string(&plan).unwrap();
        assert_eq!(text, r#"[{"at":"1m","fault":"partition","duration":"4m"}]"#);
        assert_eq!(serde_json::from_str::<FaultPlan>(&text).unwrap(), plan);
    }
}
