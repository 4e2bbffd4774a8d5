//! The load balancer: proxies connections and cuts those that stay silent too long.
//!
//! It sees each proxied connection only as "bytes went by at `now`" — SSE comments count, which
//! is why keep-alives shorter than the idle timeout save a stream. It owns no sockets: the actor
//! tells it what passed and carries out the cuts it asks for.
//!
//! Call order: `handle_open`/`handle_bytes`/`handle_close` as things pass, then drain
//! `poll_output`; sleep until `poll_timeout`, then `handle_timeout(now)` and drain again.

use crate::config::LbConfig;
use crate::ids::{ConnId, SessionId};
use crate::time::{micros, Instant};
use crate::trace::StepKind;
use std::collections::{BTreeMap, VecDeque};

/// A backend the load balancer can route to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Backend(pub u32);

/// Something the load balancer asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum LbOutput {
    /// Cut the connection on both sides, as an abrupt close.
    Cut {
        /// The connection.
        conn: ConnId,
    },
    /// Record a step.
    Record(StepKind),
}

/// The load balancer's state.
#[derive(Debug)]
pub struct LoadBalancer {
    config: LbConfig,
    /// Last time bytes passed on each open connection.
    last_bytes: BTreeMap<ConnId, Instant>,
    outputs: VecDeque<LbOutput>,
}

impl LoadBalancer {
    /// A load balancer with no connections.
    pub fn new(config: LbConfig) -> Self {
        LoadBalancer { config, last_bytes: BTreeMap::new(), outputs: VecDeque::new() }
    }

    /// The backend a request goes to. One replica for now; a session-sticky rule over several
    /// replicas would read `session` here.
    pub fn route(&self, _session: Option<&SessionId>) -> Backend {
        Backend(0)
    }

    /// A client opened a connection through the balancer.
    pub fn handle_open(&mut self, now: Instant, conn: ConnId) {
        self.last_bytes.insert(conn, now);
    }

    /// Bytes passed on `conn`, in either direction.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId) {
        if let Some(last) = self.last_bytes.get_mut(&conn) {
            *last = now;
        }
    }

    /// One side closed `conn`; the balancer forgets it.
    pub fn handle_close(&mut self, _now: Instant, conn: ConnId) {
        self.last_bytes.remove(&conn);
    }

    /// Cuts every connection silent for the idle timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(idle) = self.config.idle_timeout else { return };
        let expired: Vec<(ConnId, Instant)> =
            self.last_bytes.iter().filter(|(_, last)| **last + idle <= now).map(|(c, l)| (*c, *l)).collect();
        for (conn, last) in expired {
            self.last_bytes.remove(&conn);
            self.outputs.push_back(LbOutput::Record(StepKind::LbIdleCut { conn, idle_us: micros(now - last) }));
            self.outputs.push_back(LbOutput::Cut { conn });
        }
    }

    /// When the next idle cut is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let idle = self.config.idle_timeout?;
        self.last_bytes.values().min().map(|last| *last + idle)
    }

    /// The next output, if any; drain it after every input.
    pub fn poll_output(&mut self) -> Option<LbOutput> {
        self.outputs.pop_front()
    }

    /// Connections currently proxied.
    pub fn open_connections(&self) -> usize {
        self.last_bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lb(idle: Option<u64>) -> LoadBalancer {
        LoadBalancer::new(LbConfig { idle_timeout: idle.map(Duration::from_secs) })
    }

    fn drain(lb: &mut LoadBalancer) -> Vec<LbOutput> {
        std::iter::from_fn(|| lb.poll_output()).collect()
    }

    #[test]
    fn a_silent_connection_is_cut_at_the_idle_timeout() {
        let mut lb = lb(Some(60));
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(Instant::ZERO + Duration::from_secs(60)));
        lb.handle_timeout(Instant::ZERO + Duration::from_secs(59));
        assert!(drain(&mut lb).is_empty());
        lb.handle_timeout(Instant::ZERO + Duration::from_secs(60));
        let out = drain(&mut lb);
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1) }));
        assert_eq!(lb.open_connections(), 0);
        assert_eq!(lb.poll_timeout(), None);
    }

    #[test]
    fn bytes_such_as_keepalive_comments_hold_a_connection_open() {
        let mut lb = lb(Some(60));
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (15..=300).step_by(15) {
            let now = Instant::ZERO + Duration::from_secs(s);
            lb.handle_timeout(now);
            lb.handle_bytes(now, ConnId(1));
        }
        assert!(drain(&mut lb).is_empty());
        assert_eq!(lb.open_connections(), 1);
    }

    #[test]
    fn without_an_idle_timeout_nothing_is_ever_cut() {
        let mut lb = lb(None);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.poll_timeout(), None);
        lb.handle_timeout(Instant(u64::MAX / 2));
        assert!(drain(&mut lb).is_empty());
    }
}
