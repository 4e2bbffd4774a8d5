//! A fault-injecting TCP proxy on loopback, in the manner of toxiproxy: the probe's client talks
//! to the proxy, the proxy to the server under test, and named toxics break connections.
//!
//! | toxic | what the client sees | what the server sees |
//! |---|---|---|
//! | [`Toxic::Reset`] (now) | RST | RST |
//! | [`Toxic::ResetAfterBytes`] (each new connection) | RST after `n` bytes from the server | RST |
//! | [`Toxic::IdleCut`] (each new connection) | RST after `d` with no bytes either way | RST |
//! | [`Toxic::Partition`] | RST on every open connection, new ones accepted and reset until it heals | RST |
//! | [`Toxic::Latency`] | every chunk from the server `d` late | nothing |
//! | [`Toxic::ClientSideClose`] (now) | RST | nothing: the upstream half stays open and is drained |
//!
//! The simulator's fault vocabulary ([`crate::scenario::faults`]) drives it on a wall-clock
//! schedule ([`Proxy::run_plan`]): `reset` and `partition` map onto the toxics of the same name;
//! the process restarts have no proxy equivalent and are refused.
//!
//! Every connection task is bounded in time ([`MAX_CONN_LIFE`]) and in loop rounds.

use crate::scenario::faults::{Fault, FaultPlan};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// No proxied connection lives longer than this.
pub const MAX_CONN_LIFE: Duration = Duration::from_secs(600);

/// A named toxic.
#[derive(Clone, Debug, PartialEq)]
pub enum Toxic {
    /// Reset every open connection now.
    Reset,
    /// From now on, reset a connection once the server has sent it `n` bytes.
    ResetAfterBytes(u64),
    /// From now on, reset a connection that carried no bytes either way for this long.
    IdleCut(Duration),
    /// Reset every open connection and refuse new ones for this long.
    Partition(Duration),
    /// From now on, delay every chunk from the server by this much.
    Latency(Duration),
    /// Reset the client side of every open connection, keep the upstream half open and drained.
    ClientSideClose,
}

/// What the proxy did, for the scenario's trace and report.
#[derive(Clone, Debug, PartialEq)]
pub struct ProxyEvent {
    /// Since the proxy started.
    pub at: Duration,
    /// What happened.
    pub what: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kill {
    Live,
    Reset,
    ClientSide,
}

#[derive(Debug, Default)]
struct Toxics {
    reset_after_bytes: Option<u64>,
    idle_cut: Option<Duration>,
    latency: Duration,
}

#[derive(Debug)]
struct State {
    conns: BTreeMap<u64, watch::Sender<Kill>>,
    next: u64,
    refuse_until: Option<Instant>,
    toxics: Toxics,
    log: Vec<ProxyEvent>,
    start: Instant,
}

/// The proxy: listening on a loopback port, forwarding to `upstream`.
pub struct Proxy {
    /// Where the proxy listens.
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Connection tasks end on their own (kill, EOF, or MAX_CONN_LIFE); reset them now.
        for tx in self.lock().conns.values() {
            let _ = tx.send(Kill::Reset);
        }
    }
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            conns: BTreeMap::new(),
            next: 0,
            refuse_until: None,
            toxics: Toxics::default(),
            log: Vec::new(),
            start: Instant::now(),
        }));
        let st = state.clone();
        let accept = tokio::spawn(async move {
            // Bounded: the proxy of one probe run never accepts more than this.
            for _ in 0..100_000u32 {
                let Ok((client, _)) = listener.accept().await else { break };
                let refused = {
                    let s = lock(&st);
                    s.refuse_until.is_some_and(|until| Instant::now() < until)
                };
                if refused {
                    reset(client);
                    note(&st, "refused a connection (partition)".into());
                    continue;
                }
                let (tx, rx) = watch::channel(Kill::Live);
                let (id, toxics) = {
                    let mut s = lock(&st);
                    s.next += 1;
                    let id = s.next;
                    s.conns.insert(id, tx);
                    (id, (s.toxics.reset_after_bytes, s.toxics.idle_cut, s.toxics.latency))
                };
                let st2 = st.clone();
                tokio::spawn(async move {
                    let why = pipe(client, upstream, rx, toxics).await;
                    let mut s = lock(&st2);
                    s.conns.remove(&id);
                    if let Some(why) = why {
                        let at = s.start.elapsed();
                        s.log.push(ProxyEvent { at, what: format!("connection {id}: {why}") });
                    }
                });
            }
        });
        Ok(Proxy { addr, state, accept })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Applies a toxic now.
    pub fn apply(&self, toxic: &Toxic) {
        let mut s = self.lock();
        match toxic {
            Toxic::Reset => {
                for tx in s.conns.values() {
                    let _ = tx.send(Kill::Reset);
                }
            }
            Toxic::ClientSideClose => {
                for tx in s.conns.values() {
                    let _ = tx.send(Kill::ClientSide);
                }
            }
            Toxic::Partition(d) => {
                for tx in s.conns.values() {
                    let _ = tx.send(Kill::Reset);
                }
                s.refuse_until = Some(Instant::now() + *d);
            }
            Toxic::ResetAfterBytes(n) => s.toxics.reset_after_bytes = Some(*n),
            Toxic::IdleCut(d) => s.toxics.idle_cut = Some(*d),
            Toxic::Latency(d) => s.toxics.latency = *d,
        }
        let at = s.start.elapsed();
        let what = format!("{toxic:?} ({} open connections)", s.conns.len());
        s.log.push(ProxyEvent { at, what });
    }

    /// Maps a planned fault of the simulator's vocabulary onto a toxic.
    pub fn toxic_for(fault: &Fault) -> Option<Toxic> {
        match fault {
            Fault::Reset => Some(Toxic::Reset),
            Fault::Partition { duration } => Some(Toxic::Partition(*duration)),
            Fault::ServerRestart
            | Fault::ClientRestart
            | Fault::Restart { .. }
            | Fault::Cut { .. }
            | Fault::Deploy { .. }
            | Fault::Answer { .. }
            | Fault::Malformed { .. }
            | Fault::Blackhole { .. }
            | Fault::TaskReplyLost => None,
        }
    }

    /// Ends every fault in force: no more refusals (a partition heals now) and no toxic for new
    /// connections. Open connections are left as they are.
    pub fn heal(&self) {
        let mut s = self.lock();
        let active = s.refuse_until.is_some_and(|until| Instant::now() < until)
            || s.toxics.reset_after_bytes.is_some()
            || s.toxics.idle_cut.is_some()
            || s.toxics.latency > Duration::ZERO;
        s.refuse_until = None;
        s.toxics = Toxics::default();
        if active {
            let at = s.start.elapsed();
            s.log.push(ProxyEvent { at, what: "healed: the faults still in force were ended".into() });
        }
    }

    /// Runs a fault plan on the wall clock from now: returns at once; the faults fire from a
    /// task. The returned guard ends the plan when dropped, whatever the path out of its
    /// owner: faults not yet fired never fire, and the ones in force are healed.
    pub fn run_plan(self: &Arc<Self>, plan: &FaultPlan) -> Result<FaultGuard, String> {
        let mut timed = Vec::new();
        for f in plan.faults() {
            let toxic = Self::toxic_for(&f.fault)
                .ok_or_else(|| format!("{} has no proxy equivalent (only reset and partition)", f.fault.kind()))?;
            timed.push((f.at, toxic));
        }
        let me = Arc::clone(self);
        let t0 = Instant::now();
        let task = tokio::spawn(async move {
            for (at, toxic) in timed {
                tokio::time::sleep_until(t0 + at).await;
                me.apply(&toxic);
            }
        });
        Ok(FaultGuard { task, proxy: Arc::clone(self) })
    }

    /// What happened so far.
    pub fn log(&self) -> Vec<ProxyEvent> {
        self.lock().log.clone()
    }

    /// Open connections.
    pub fn open_connections(&self) -> usize {
        self.lock().conns.len()
    }
}

/// A running fault plan ([`Proxy::run_plan`]); dropping it ends the plan and heals the proxy.
pub struct FaultGuard {
    task: JoinHandle<()>,
    proxy: Arc<Proxy>,
}

impl Drop for FaultGuard {
    fn drop(&mut self) {
        self.task.abort();
        self.proxy.heal();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn note(state: &Mutex<State>, what: String) {
    let mut s = lock(state);
    let at = s.start.elapsed();
    s.log.push(ProxyEvent { at, what });
}

/// Drops a socket with an RST (zero linger).
fn reset(sock: TcpStream) {
    let _ = sock.set_zero_linger();
    drop(sock);
}

/// Forwards bytes both ways until one side ends or a toxic fires; returns why it was cut.
async fn pipe(
    client: TcpStream,
    upstream: SocketAddr,
    mut kill: watch::Receiver<Kill>,
    (reset_after, idle, latency): (Option<u64>, Option<Duration>, Duration),
) -> Option<String> {
    let Ok(server) = TcpStream::connect(upstream).await else {
        reset(client);
        return Some("upstream refused".into());
    };
    let (mut client, mut server) = (client, server);
    let mut from_client = vec![0u8; 16 * 1024];
    let mut from_server = vec![0u8; 16 * 1024];
    let mut down_bytes = 0u64;
    let life_end = Instant::now() + MAX_CONN_LIFE;
    let mut last_activity = Instant::now();
    let (mut client_open, mut server_open) = (true, true);
    // Bounded: every round moves bytes, ends a side, or fires a toxic; MAX_CONN_LIFE caps time.
    for _ in 0..10_000_000u64 {
        let idle_at = idle.map(|d| last_activity + d).unwrap_or(life_end).min(life_end);
        tokio::select! {
            r = client.read(&mut from_client), if client_open => match r {
                Ok(0) | Err(_) => {
                    client_open = false;
                    let _ = server.shutdown().await;
                }
                Ok(n) => {
                    last_activity = Instant::now();
                    if server.write_all(&from_client[..n]).await.is_err() {
                        reset(client);
                        return Some("upstream write failed".into());
                    }
                }
            },
            r = server.read(&mut from_server), if server_open => match r {
                Ok(0) | Err(_) => {
                    server_open = false;
                    let _ = client.shutdown().await;
                    if !client_open {
                        return None;
                    }
                }
                Ok(n) => {
                    last_activity = Instant::now();
                    if !latency.is_zero() {
                        tokio::time::sleep(latency).await;
                    }
                    if let Some(limit) = reset_after {
                        if down_bytes + n as u64 >= limit {
                            let keep = (limit - down_bytes) as usize;
                            let _ = client.write_all(&from_server[..keep]).await;
                            reset(client);
                            reset(server);
                            return Some(format!("reset after {limit} bytes"));
                        }
                    }
                    down_bytes += n as u64;
                    if client.write_all(&from_server[..n]).await.is_err() {
                        reset(server);
                        return Some("client write failed".into());
                    }
                }
            },
            _ = tokio::time::sleep_until(idle_at) => {
                reset(client);
                reset(server);
                return Some(if Instant::now() >= life_end { "lifetime cap".into() } else { "idle cut".into() });
            }
            changed = kill.changed() => {
                let k = if changed.is_ok() { *kill.borrow() } else { Kill::Reset };
                match k {
                    Kill::Live => {}
                    Kill::Reset => {
                        reset(client);
                        reset(server);
                        return Some("reset".into());
                    }
                    Kill::ClientSide => {
                        reset(client);
                        drain(server, life_end).await;
                        return Some("client side closed; upstream drained to its end".into());
                    }
                }
            }
        }
        if !client_open && !server_open {
            return None;
        }
    }
    Some("round cap".into())
}

/// Reads and discards what the server sends until it ends (or the lifetime cap).
async fn drain(mut server: TcpStream, until: Instant) {
    let mut buf = vec![0u8; 16 * 1024];
    for _ in 0..10_000_000u64 {
        match tokio::time::timeout_at(until, server.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// An upstream that writes `chunk` every 50 ms and reports whether a write ever failed.
    async fn chatty_upstream() -> (SocketAddr, tokio::sync::oneshot::Receiver<bool>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut failed = false;
            for _ in 0..30 {
                if s.write_all(&[b'x'; 64]).await.is_err() {
                    failed = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = tx.send(failed);
        });
        (addr, rx)
    }

    #[test]
    fn reset_after_bytes_cuts_the_client_off_at_the_limit() {
        rt().block_on(async {
            let (up, _) = chatty_upstream().await;
            let proxy = Proxy::start(up).await.unwrap();
            proxy.apply(&Toxic::ResetAfterBytes(100));
            let mut c = TcpStream::connect(proxy.addr).await.unwrap();
            let mut got = 0;
            let mut buf = [0u8; 1024];
            let ended = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    match c.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got += n,
                    }
                }
            })
            .await;
            assert!(ended.is_ok(), "the connection was cut");
            assert_eq!(got, 100);
        });
    }

    #[test]
    fn a_client_side_close_leaves_the_server_writing_undisturbed() {
        rt().block_on(async {
            let (up, upstream_failed) = chatty_upstream().await;
            let proxy = Proxy::start(up).await.unwrap();
            let mut c = TcpStream::connect(proxy.addr).await.unwrap();
            let mut buf = [0u8; 64];
            let _ = c.read(&mut buf).await.unwrap();
            proxy.apply(&Toxic::ClientSideClose);
            let r = tokio::time::timeout(Duration::from_secs(2), async {
                loop {
                    match c.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            })
            .await;
            assert!(r.is_ok(), "the client side was closed");
            let failed = tokio::time::timeout(Duration::from_secs(5), upstream_failed).await.unwrap().unwrap();
            assert!(!failed, "the server never noticed");
        });
    }

    #[test]
    fn a_partition_refuses_new_connections_until_it_heals() {
        rt().block_on(async {
            let (up, _) = chatty_upstream().await;
            let proxy = Proxy::start(up).await.unwrap();
            proxy.apply(&Toxic::Partition(Duration::from_millis(500)));
            let mut c = TcpStream::connect(proxy.addr).await.unwrap();
            let mut buf = [0u8; 64];
            let first = tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf)).await.unwrap();
            assert!(matches!(first, Ok(0) | Err(_)), "refused during the partition: {first:?}");
            tokio::time::sleep(Duration::from_millis(700)).await;
            let mut c = TcpStream::connect(proxy.addr).await.unwrap();
            let n = tokio::time::timeout(Duration::from_secs(2), c.read(&mut buf)).await.unwrap().unwrap();
            assert!(n > 0, "healed");
        });
    }
}
