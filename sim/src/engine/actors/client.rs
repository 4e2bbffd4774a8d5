//! A client node: the MCP client library (`mcpsim_model::client::Client`) and the application
//! that issues the scenario's calls through it and deletes its session when the scenario says.
//!
//! A run has `scenario.clients` of them, each a logical client with its own node (and IP), disk,
//! backoff seeds and `clientInfo.name` (`app`, `app-1`, ...); everything here takes the client's
//! index. A client numbers its connections itself, across its incarnations.
//!
//! Each `ClientOutput::Open` becomes one task: connect to the load balancer, send the request,
//! report every frame, then the end: `Clean` after `Frame::End`, `Reset` if the stream stops
//! before it, `Refused` if the connect fails.

use super::{client_backoff_seed, client_name, client_node, run_timer, TimerArm, World};
use crate::engine::addr::{client_ip, LB_ADDR};
use crate::engine::net::{self, FrameReader};
use crate::engine::pool::{Claim, Parked, Pool};
use crate::engine::recorder::lock;
use crate::engine::wire::Stream;
use crate::scenario::{DeleteBy, OnError, ResumeId};
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::AbortHandle;
use mcpsim_model::client::{Client, ClientOutput};
use mcpsim_model::config::{HttpRetry, Persistence, ReuseAfter};
use mcpsim_model::http::{ConnEnd, Frame, Request};
use mcpsim_model::ids::{CallKey, ConnId, EventId};
use mcpsim_model::trace::{Actor, StepKind};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The live client process.
pub(crate) struct ClientCore {
    /// Which logical client this is.
    index: u32,
    client: Client,
    /// Connection tasks still running, by the client's connection number.
    conns: BTreeMap<ConnId, AbortHandle>,
    /// This incarnation of the client node: connection tasks are spawned here even when the
    /// input came from the fault injector, which runs elsewhere.
    node: NodeHandle,
    timer: TimerArm,
    /// Calls that resolved during the current drain, each with whether it failed (an error or
    /// an unknown outcome): the application reacts once the drain is done.
    resolved: Vec<(CallKey, bool)>,
    /// The application is ending its session itself: the calls it settles are not re-issued.
    deleting: bool,
    /// The HTTP library's kept-alive connections to the load balancer (`client.http`).
    pool: Pool<()>,
}

impl ClientCore {
    /// Carries out the client's outputs, then lets the application react to the calls that
    /// resolved (re-issuing a failed one under its `on_error`), until nothing is left.
    fn drain(&mut self, world: &Arc<World>) {
        loop {
            self.drain_outputs(world);
            let resolved = std::mem::take(&mut self.resolved);
            if resolved.is_empty() {
                break;
            }
            for (call, failed) in resolved {
                self.react(world, call, failed);
            }
        }
        self.timer.update(self.client.poll_timeout());
    }

    /// The application's reaction to `call` resolving: re-issue it if it failed and its
    /// `on_error` has re-issues left, otherwise mark it settled for good.
    fn react(&mut self, world: &Arc<World>, call: CallKey, failed: bool) {
        let slot = world.client_slot(self.index);
        let spec = world.scenario.calls.iter().find(|c| c.call == call && c.client == self.index);
        let reissue = spec.filter(|c| failed && !self.deleting && c.on_error != OnError::GiveUp).and_then(|c| {
            let mut made = lock(&slot.reissues);
            let n = made.entry(call).or_default();
            (*n < c.max_reissues).then(|| {
                *n += 1;
                c
            })
        });
        let Some(spec) = reissue else {
            lock(&slot.settled_at).insert(call, world.rec.now());
            slot.settled.notify_one();
            return;
        };
        let now = world.rec.now();
        if spec.on_error == OnError::ReinitializeReissue {
            self.client.reinitialize(now);
        }
        let idempotent = world.scenario.tool(&spec.tool).is_some_and(|t| t.idempotent);
        self.client.call_tool(now, call, &spec.tool, idempotent);
    }

    fn drain_outputs(&mut self, world: &Arc<World>) {
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Open { conn, request } => {
                    world.client_slot(self.index).next_conn.fetch_max(conn.0 + 1, Ordering::Relaxed);
                    // Only a kept-alive client ever parks a connection.
                    let keeps = world.scenario.client_policy(self.index).http.keep_alive;
                    let claim = if keeps { self.pool.claim(&()) } else { None };
                    // Boxed: madsim's task layers then move a pointer, not the 1.2-1.6 KB future.
                    let task = self.node.spawn(Box::pin(connection(world.clone(), self.index, conn, request, claim)));
                    self.conns.insert(conn, task.abort_handle());
                }
                ClientOutput::Abort { conn } => {
                    if let Some(task) = self.conns.remove(&conn) {
                        task.abort();
                        self.client.handle_conn_end(world.rec.now(), conn, ConnEnd::Aborted);
                    }
                }
                ClientOutput::Persist(state) => *lock(&world.client_slot(self.index).disk) = Some(state),
                ClientOutput::Record(kind) => {
                    if let Some(call) = kind.resolves() {
                        let failed = !kind.resolves_with_result();
                        self.resolved.push((call, failed));
                    }
                    let actor = if kind.is_app() { Actor::App } else { Actor::Client };
                    world.rec.record_for(actor, world.client_tag(self.index), kind);
                }
            }
        }
    }

    /// Nothing left to do: no call unresolved, no reconnect pending, nothing to send.
    pub(crate) fn is_quiet(&self) -> bool {
        self.client.is_quiet()
    }

    /// The connections whose exchanges are under way.
    pub(crate) fn in_flight(&self) -> Vec<ConnId> {
        self.conns.keys().copied().collect()
    }

    /// The session the client holds.
    pub(crate) fn session(&self) -> Option<mcpsim_model::ids::SessionId> {
        self.client.session().cloned()
    }

    /// Every open connection breaks under the client (a reset or a partition): the tasks go,
    /// taking their sockets with them, and the client hears `Reset` for each.
    pub(crate) fn reset_connections(&mut self, world: &Arc<World>) {
        self.pool.close_where(|_| true);
        for (conn, task) in std::mem::take(&mut self.conns) {
            task.abort();
            self.client.handle_conn_end(world.rec.now(), conn, ConnEnd::Reset);
            self.drain(world);
        }
    }
}

/// Client `index`'s node main task: a new client process, then the application.
pub(crate) async fn main(world: Arc<World>, index: u32) {
    let incarnation = world.client_slot(index).starts.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(index, incarnation, "client process starts");
    start_client(&world, index, incarnation);
    let bell = world.with_client(index, |core| core.timer.bell()).expect("the client was just installed");
    let arm = move |world: &Arc<World>| arm_timer(world, index);
    let fire = move |world: &Arc<World>, now| fire_timer(world, index, now);
    madsim::task::spawn(run_timer(world.clone(), "client", bell, arm, fire));
    if incarnation > 0 {
        reissue_unresolved(&world, index);
    }
    application(&world, index).await;
    // The node lives on: returning would end the process and its connections.
    std::future::pending::<()>().await
}

/// Installs a fresh client, restored from disk if its policy keeps state durably, and starts it.
/// It numbers its connections on from where its predecessor stopped.
fn start_client(world: &Arc<World>, index: u32, incarnation: u32) {
    let slot = world.client_slot(index);
    let policy = world.scenario.client_policy(index).clone();
    let restored = match policy.persistence {
        Persistence::Durable => lock(&slot.disk).clone(),
        Persistence::Volatile => None,
    };
    let seed = client_backoff_seed(world.seed, index, incarnation);
    let node = Handle::current().get_node(client_node(index)).expect("the client node exists");
    let mut client = Client::new(policy, &client_name(index), restored, seed);
    client.number_connections_from(slot.next_conn.load(Ordering::Relaxed));
    let core = ClientCore {
        index,
        client,
        conns: BTreeMap::new(),
        node,
        timer: TimerArm::new(),
        resolved: Vec::new(),
        deleting: false,
        pool: Pool::new(),
    };
    *lock(&slot.core) = Some(core);
    world.with_client(index, |core| {
        core.client.start(world.rec.now());
        core.drain(world);
    });
}

fn arm_timer(world: &Arc<World>, index: u32) -> Option<mcpsim_model::Instant> {
    world.with_client(index, |core| core.timer.arm(core.client.poll_timeout())).flatten()
}

fn fire_timer(world: &Arc<World>, index: u32, now: mcpsim_model::Instant) {
    world.with_client(index, |core| {
        core.client.handle_timeout(now);
        core.drain(world);
    });
}

// ---------------------------------------------------------------------------------------------
// The application
// ---------------------------------------------------------------------------------------------

/// What the application does at a planned time.
#[derive(Clone, Debug)]
enum Act {
    Call {
        call: CallKey,
        tool: String,
        /// Only this long after this earlier call settled for good (`after_idle`).
        after: Option<(CallKey, Duration)>,
    },
    /// The scenario's `n`-th delete (by the application or an operator).
    Delete(usize),
    /// The scenario's `n`-th bogus resume.
    BogusResume(usize),
    /// The scenario's `n`-th empty-resumes entry.
    EmptyResumes(usize),
}

/// Client `index`'s part of the scenario, in time order (at one instant, calls before deletes
/// before bogus resumes before empty resumes). A call after an idle gap is placed at its `at`, its earliest time.
fn agenda(world: &World, index: u32) -> Vec<(Duration, Act)> {
    let scenario = &world.scenario;
    let mut previous: Option<CallKey> = None;
    let mut calls = Vec::new();
    for c in scenario.calls.iter().filter(|c| c.client == index) {
        let after = c.after_idle.map(|gap| (previous.unwrap_or(c.call), gap));
        calls.push((c.at, Act::Call { call: c.call, tool: c.tool.clone(), after }));
        previous = Some(c.call);
    }
    let deletes =
        scenario.deletes.iter().enumerate().filter(|(_, d)| d.client == index).map(|(n, d)| (d.at, Act::Delete(n)));
    let resumes = scenario
        .bogus_resumes
        .iter()
        .enumerate()
        .filter(|(_, b)| b.client == index)
        .map(|(n, b)| (b.at, Act::BogusResume(n)));
    let empties = scenario
        .empty_resumes
        .iter()
        .enumerate()
        .filter(|(_, e)| e.client == index)
        .map(|(n, e)| (e.at, Act::EmptyResumes(n)));
    let mut acts: Vec<(Duration, Act)> = calls.into_iter().chain(deletes).chain(resumes).chain(empties).collect();
    acts.sort_by_key(|(at, _)| *at);
    acts
}

/// When an act is due: its time, or for a call after an idle gap, its gap after the call it
/// follows settled (`None` while that call has not settled).
fn due(world: &World, index: u32, at: Duration, act: &Act) -> Option<Duration> {
    match act {
        Act::Call { after: Some((prev, gap)), call, .. } if prev != call => {
            let settled = lock(&world.client_slot(index).settled_at).get(prev).copied()?;
            Some(at.max(Duration::from_micros(settled.as_micros()) + *gap))
        }
        Act::Call { after: Some((_, gap)), .. } => Some(at.max(*gap)),
        _ => Some(at),
    }
}

/// Issues client `index`'s calls, makes its deletes and bogus resumes at their times, skipping
/// any an earlier incarnation already made. A call after an idle gap waits for the call before
/// it to settle; without one the acts go strictly in time order.
async fn application(world: &Arc<World>, index: u32) {
    let slot = world.client_slot(index);
    let mut acts = agenda(world, index);
    acts.retain(|(_, act)| match act {
        Act::Call { call, .. } => !lock(&slot.issued).contains(call),
        Act::Delete(n) => !lock(&slot.deleted).contains(n),
        Act::BogusResume(n) => !lock(&slot.bogus_resumed).contains(n),
        Act::EmptyResumes(n) => !lock(&slot.empty_armed).contains(n),
    });
    while !acts.is_empty() {
        // The first act (in agenda order) with the earliest known time.
        let next = acts
            .iter()
            .enumerate()
            .filter_map(|(i, (at, act))| due(world, index, *at, act).map(|t| (t, i)))
            .min_by_key(|(t, _)| *t);
        let waiting = acts.iter().any(|(at, act)| due(world, index, *at, act).is_none());
        let Some((t, i)) = next else {
            // Every act left waits for a call to settle.
            slot.settled.notified().await;
            continue;
        };
        let at = mcpsim_model::Instant(mcpsim_model::time::micros(t));
        if at > world.rec.now() {
            let deadline = world.rec.deadline(at);
            if waiting {
                // A call settling may make a waiting act due earlier.
                tokio::select! {
                    biased;
                    _ = slot.settled.notified() => continue,
                    _ = madsim::time::sleep_until(deadline) => {}
                }
            } else {
                madsim::time::sleep_until(deadline).await;
            }
        }
        let (_, act) = acts.remove(i);
        match act {
            Act::Call { call, tool, .. } => {
                lock(&slot.issued).push(call);
                issue(world, index, call, &tool);
            }
            Act::Delete(n) => {
                lock(&slot.deleted).push(n);
                match world.scenario.deletes[n].by {
                    DeleteBy::App => delete_session(world, index),
                    DeleteBy::Operator => operator_delete(world, index),
                }
            }
            Act::BogusResume(n) => {
                lock(&slot.bogus_resumed).push(n);
                bogus_resume(world, index, &world.scenario.bogus_resumes[n].id);
            }
            Act::EmptyResumes(n) => {
                lock(&slot.empty_armed).push(n);
                let count = world.scenario.empty_resumes[n].count;
                slot.empty_resumes.fetch_add(count, Ordering::Relaxed);
                let what = format!("client {index}'s next {count} resume(s) will be answered 200, no events, closed");
                world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
            }
        }
    }
}

/// After a restart: the application asks again for every call it issued that it has not seen
/// resolved and that the restored client does not carry on by itself.
fn reissue_unresolved(world: &Arc<World>, index: u32) {
    let issued = lock(&world.client_slot(index).issued).clone();
    let carried: Vec<CallKey> = world.with_client(index, |core| core.client.unresolved_calls()).unwrap_or_default();
    for call in issued {
        if world.rec.resolutions(call) == 0 && !carried.contains(&call) {
            let tool = world.scenario.calls.iter().find(|c| c.call == call).map(|c| c.tool.clone());
            issue(world, index, call, tool.as_deref().unwrap_or_default());
        }
    }
}

fn issue(world: &Arc<World>, index: u32, call: CallKey, tool: &str) {
    let idempotent = world.scenario.tool(tool).is_some_and(|t| t.idempotent);
    world.with_client(index, |core| {
        core.client.call_tool(world.rec.now(), call, tool, idempotent);
        core.drain(world);
    });
}

/// The application ends its session: the client settles its calls and sends `DELETE`.
fn delete_session(world: &Arc<World>, index: u32) {
    world.with_client(index, |core| {
        core.deleting = true;
        core.client.delete_session(world.rec.now());
        core.drain(world);
        core.deleting = false;
    });
}

/// An operator ends client `index`'s session from outside it: the server holding the session
/// ends it, and the client is told nothing. Recorded as the fault injector's step.
fn operator_delete(world: &Arc<World>, index: u32) {
    let session = world.with_client(index, |core| core.session()).flatten();
    let ended = session.as_ref().is_some_and(|session| {
        world
            .stores()
            .any(|store| world.with_store(store, |core| core.operator_delete(world, session)).unwrap_or(false))
    });
    let what = match (&session, ended) {
        (Some(s), true) => format!("an operator deletes session {s} of client {index}"),
        (Some(s), false) => format!("an operator deletes session {s} of client {index}: no server holds it"),
        (None, _) => format!("an operator deletes client {index}'s session: it holds none"),
    };
    world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
}

/// Client `index` resumes a stream with a `Last-Event-ID` it was never given (one borrowed from
/// another client's events: not made while that client has received no such event).
fn bogus_resume(world: &Arc<World>, index: u32, id: &ResumeId) {
    let id = match id {
        ResumeId::Given(id) => id.clone(),
        ResumeId::ReceivedBy { client, nth } => match world.rec.received_event_id(world.client_tag(*client), *nth) {
            Some(borrowed) => borrowed.0.to_string(),
            None => {
                let what = format!("client {index} would resume with {id}: none received yet, no resume made");
                world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
                return;
            }
        },
    };
    let what = format!("client {index} resumes with a Last-Event-ID it was never given: {id}");
    world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
    world.with_client(index, |core| {
        core.client.resume_with_unissued_id(world.rec.now(), EventId::from(id.clone()));
        core.drain(world);
    });
}

// ---------------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------------

/// One HTTP exchange of client `index`, from connect (or a kept-alive connection claimed from
/// the pool) to end.
async fn connection(world: Arc<World>, index: u32, conn: ConnId, request: Request, claim: Option<Claim>) {
    if let Some(end) = exchange(&world, index, conn, request, claim).await {
        world.with_client(index, |core| {
            if core.conns.remove(&conn).is_some() {
                core.client.handle_conn_end(world.rec.now(), conn, end);
                core.drain(&world);
            }
        });
    }
}

/// How the exchange's request went out.
enum Sent {
    /// It is on its way; the response is read from this connection.
    Out(Stream),
    /// It could not go out: the end to report.
    Failed(ConnEnd),
}

/// Runs the exchange; the end to report, or `None` if the client let go of the connection.
///
/// On a kept-alive connection the HTTP library may send the request again, once, on a fresh
/// connection (`client.http.retry`): always when the request could not be written (the
/// connection was closed as it was sent), and under `reused-before-response` also when it was
/// written and the connection ended before any byte of the response came back.
async fn exchange(
    world: &Arc<World>,
    index: u32,
    conn: ConnId,
    request: Request,
    claim: Option<Claim>,
) -> Option<ConnEnd> {
    let http = &world.scenario.client_policy(index).http;
    let reused = match claim {
        Some(claim) => claim.await.ok(),
        None => None,
    };
    let mut on_reused = reused.is_some();
    let mut stream = match send_on(world, index, conn, &request, reused).await {
        Sent::Out(stream) => stream,
        Sent::Failed(end) => return Some(end),
    };
    let mut reader = FrameReader::new();
    let mut answered = false;
    // Whether the response had a JSON body (`http.reuse_after = json-body`).
    let mut json = false;
    loop {
        let frame: Frame = match reader.next(&mut stream).await {
            Ok(Some(bytes)) => net::decode(bytes).expect("the server encodes every frame it sends"),
            Ok(None) | Err(_) if on_reused && !answered && http.retry == HttpRetry::ReusedBeforeResponse => {
                record(world, index, StepKind::HttpResent { conn, written: true });
                on_reused = false;
                stream = match send_on(world, index, conn, &request, None).await {
                    Sent::Out(stream) => stream,
                    Sent::Failed(end) => return Some(end),
                };
                reader = FrameReader::new();
                continue;
            }
            Ok(None) | Err(_) => return Some(ConnEnd::Reset),
        };
        answered = true;
        json |= matches!(frame, Frame::Json(_));
        let end = matches!(frame, Frame::End);
        if end && http.keep_alive && (http.reuse_after == ReuseAfter::Any || json) {
            // The response is complete: the connection goes back to the pool before the client
            // hears the end, so a request the end sets off can go out on it.
            let now = world.rec.now();
            world.with_client(index, |core| core.pool.park((), stream, now, http.idle_expiry));
            deliver(world, index, conn, frame);
            return Some(ConnEnd::Clean);
        }
        if !deliver(world, index, conn, frame) {
            return None;
        }
        if end {
            return Some(ConnEnd::Clean);
        }
    }
}

/// Sends `request` on the kept-alive connection `reused`, or on a fresh one. A kept-alive
/// connection found closed as the request is written is given up for a fresh one (every
/// library does that much).
async fn send_on(world: &Arc<World>, index: u32, conn: ConnId, request: &Request, reused: Option<Parked>) -> Sent {
    if let Some(parked) = reused {
        let idle_us = world.rec.now().as_micros().saturating_sub(parked.since.as_micros());
        record(world, index, StepKind::ConnReused { conn, idle_us });
        let mut stream = parked.stream;
        world.name_client_link(stream.local_addr(), index, conn);
        if net::send_message(&mut stream, request).await.is_ok() {
            return Sent::Out(stream);
        }
        record(world, index, StepKind::HttpResent { conn, written: false });
    }
    // A black hole swallows the SYN: the connect waits for a retransmission to get through, and
    // the exchange is the hole's too (recorded as what it caught: nobody is told).
    if world.net.swallows(client_ip(index), LB_ADDR) {
        let caught = StepKind::BlackHoled { conns: vec![conn], idle: 0, connect: true };
        world.rec.record_for(Actor::Fault, world.client_tag(index), caught);
    }
    let mut stream = match world.net.dial(client_ip(index), LB_ADDR).await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(%conn, error = %e, "connect failed");
            return Sent::Failed(ConnEnd::Refused);
        }
    };
    // Named before the balancer can accept it: the connect does not yield.
    world.name_client_link(stream.local_addr(), index, conn);
    match net::send_message(&mut stream, request).await {
        Ok(()) => Sent::Out(stream),
        Err(_) => Sent::Failed(ConnEnd::Reset),
    }
}

/// The client process `core` dies: the task ids it held only in memory are forgotten
/// (`client.tasks.persist_ids`).
pub(crate) fn record_lost_task_ids(world: &Arc<World>, core: &ClientCore) {
    for task in core.client.task_ids_lost_in_crash() {
        record(world, core.index, StepKind::TaskIdForgotten { task });
    }
}

/// Records a step of client `index` (its library's, or its process's).
fn record(world: &Arc<World>, index: u32, kind: StepKind) {
    world.rec.record_for(Actor::Client, world.client_tag(index), kind);
}

/// Hands a frame to the client; false once the client no longer holds the connection.
fn deliver(world: &Arc<World>, index: u32, conn: ConnId, frame: Frame) -> bool {
    world
        .with_client(index, |core| {
            if !core.conns.contains_key(&conn) {
                return false;
            }
            core.client.handle_frame(world.rec.now(), conn, frame);
            core.drain(world);
            core.conns.contains_key(&conn)
        })
        .unwrap_or(false)
}
