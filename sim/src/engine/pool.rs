//! Kept-alive connections waiting for their next request (HTTP/1.1 keep-alive): the pool of the
//! client's HTTP library (`client.http`) and the balancer's upstream pool per replica
//! (`lb.upstream_keep_alive`).
//!
//! A parked connection is held by a small watcher task, as a real pool's connection task reads
//! its idle socket: when the peer closes it (an idle cut, a server's keep-alive timeout) or it
//! expires, the watcher drops it and the pool will not hand it out. A claim made while the
//! watcher still holds the connection gets it even if the peer's close has just arrived — the
//! request then meets the close, which is the race keep-alive brings. The wire delivers a close
//! as soon as the data before it has arrived, but data after its latency, so a request written
//! onto a connection the peer closes before the request arrives is lost with it.
//!
//! The most recently parked connection is handed out first (hyper's pool does the same).

use crate::engine::net::FrameReader;
use crate::engine::wire::Stream;
use madsim::task::AbortHandle;
use mcpsim_model::Instant;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::oneshot;

/// A connection taken out of the pool, with when it was parked.
pub(crate) struct Parked {
    pub stream: Stream,
    pub since: Instant,
}

/// A pending claim on a parked connection: the watcher hands it over when it next runs, or the
/// claim fails if the watcher let the connection go meanwhile.
pub(crate) type Claim = oneshot::Receiver<Parked>;

/// One parked connection: how to ask its watcher for it.
struct Idle {
    take: oneshot::Sender<oneshot::Sender<Parked>>,
    task: AbortHandle,
}

/// Idle connections by destination (`K`: `()` for the client, the replica for the balancer).
pub(crate) struct Pool<K> {
    idle: BTreeMap<K, Vec<Idle>>,
}

impl<K: Ord> Pool<K> {
    pub(crate) fn new() -> Self {
        Pool { idle: BTreeMap::new() }
    }

    /// Parks `stream` for `key`: a watcher task on the current node holds it until it is claimed,
    /// its peer closes it, or it has been idle for `expiry`.
    pub(crate) fn park(&mut self, key: K, stream: Stream, since: Instant, expiry: Option<Duration>) {
        let (take, taken) = oneshot::channel();
        let task = madsim::task::spawn(watch(stream, since, taken, expiry));
        self.idle.entry(key).or_default().push(Idle { take, task: task.abort_handle() });
    }

    /// A claim on the most recently parked connection for `key` whose watcher still holds it.
    pub(crate) fn claim(&mut self, key: &K) -> Option<Claim> {
        let idle = self.idle.get_mut(key)?;
        while let Some(entry) = idle.pop() {
            let (give, claim) = oneshot::channel();
            // The send fails once the watcher has let the connection go.
            if entry.take.send(give).is_ok() {
                return Some(claim);
            }
        }
        None
    }

    /// Every parked connection for which `hit` holds is closed at once (a reset, a restart).
    pub(crate) fn close_where(&mut self, hit: impl Fn(&K) -> bool) {
        for (_, idle) in self.idle.iter_mut().filter(|(k, _)| hit(k)) {
            for entry in idle.drain(..) {
                entry.task.abort();
            }
        }
    }
}

/// Holds a parked connection: hands it to the first claim, or drops it (closing it) when its
/// peer closes it, something arrives on it that no idle connection should get, it expires, or
/// the pool forgets it.
async fn watch(
    mut stream: Stream,
    since: Instant,
    mut taken: oneshot::Receiver<oneshot::Sender<Parked>>,
    expiry: Option<Duration>,
) {
    let mut reader = FrameReader::new();
    let expired = async {
        match expiry {
            Some(after) => madsim::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    let give = tokio::select! {
        biased;
        claim = &mut taken => claim.ok(),
        _ = reader.next(&mut stream) => None,
        _ = expired => None,
    };
    if let Some(give) = give {
        let _ = give.send(Parked { stream, since });
    }
}
