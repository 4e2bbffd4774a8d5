//! What a proxy does to the MCP exchanges, measured on raw sockets through it and set beside
//! what the lb model predicts for the same timeline (`sim/probe/fixtures/proxies/measure.py` is
//! the same measurement in Python):
//!
//! - `stream`: a `probe_work(2500, 500)` call: when the response head reached the client, before
//!   the first event or only with the end;
//! - `silent`: a `probe_work(7000, 5000)` call, its stream silent for 5 s: cut, and when;
//! - `kept-alive`: a `ping` answered on a kept-alive connection, then nothing: when the proxy
//!   closes the idle client connection (up to a bound).

use crate::probe::error::ProbeError;
use crate::probe::reality::proxies::{addr_of, start_proxy, ProxySetup};
use mcpsim_model::config::LbConfig;
use mcpsim_model::ids::ConnId;
use mcpsim_model::lb::{FrameKind, LbOutput, LoadBalancer};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long an idle kept-alive connection is watched.
pub const KEPT_ALIVE_BOUND: Duration = Duration::from_secs(8);

/// A stream's timeline as the client saw it, in ms after the request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The first byte (the head).
    pub head: Option<u64>,
    /// Each read that carried `data:` lines.
    pub events: Vec<u64>,
    /// The connection's end.
    pub end: u64,
    /// The response's last chunk (`0\r\n\r\n`) came: the response ended, not cut.
    pub complete: bool,
}

/// What one measurement found, in words both sides can be compared by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The head came before the first event.
    HeadAtOnce,
    /// The head came with the first release of a buffer, at the end here.
    HeadWithTheEnd,
    /// The stream ended normally.
    NotCut,
    /// The stream was cut, about this many seconds after the request, after a response head
    /// had reached the client (at once, or released by a buffer at the cut).
    CutAfter(u64),
    /// The stream was cut, about this many seconds after the request, before any byte of a
    /// response reached the client.
    CutBeforeHead(u64),
    /// The idle kept-alive connection was closed about this many seconds after its answer.
    ClosedAfter(u64),
    /// It was still open at the bound.
    OpenAtBound,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::HeadAtOnce => write!(f, "head at once"),
            Finding::HeadWithTheEnd => write!(f, "head held to the end"),
            Finding::NotCut => write!(f, "not cut"),
            Finding::CutAfter(s) => write!(f, "cut at {s} s"),
            Finding::CutBeforeHead(s) => write!(f, "cut at {s} s, no head"),
            Finding::ClosedAfter(s) => write!(f, "closed after {s} s"),
            Finding::OpenAtBound => write!(f, "open at {} s", KEPT_ALIVE_BOUND.as_secs()),
        }
    }
}

fn send(
    addr: std::net::SocketAddr,
    path: &str,
    body: &str,
    session: Option<&str>,
    keep: bool,
) -> Result<TcpStream, ProbeError> {
    let io = |e: std::io::Error| ProbeError::Io { path: addr.to_string(), problem: e.to_string() };
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(io)?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    if !keep {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).and_then(|_| s.write_all(body.as_bytes())).map_err(io)?;
    Ok(s)
}

/// Reads `s` to its end (at most 30 s, 1 MiB), timing each read from `t0`.
fn read_timed(s: &mut TcpStream, t0: Instant) -> (Timeline, Vec<u8>) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut all = Vec::new();
    let mut t = Timeline::default();
    let mut buf = [0u8; 65536];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 || all.len() > 1 << 20 {
            break;
        }
        let at = t0.elapsed().as_millis() as u64;
        t.head.get_or_insert(at);
        if buf[..n].windows(5).any(|w| w == b"data:") {
            t.events.push(at);
        }
        all.extend_from_slice(&buf[..n]);
    }
    t.end = t0.elapsed().as_millis() as u64;
    t.complete = all.windows(7).any(|w| w == b"\r\n0\r\n\r\n");
    (t, all)
}

/// A new session through `url`: its id.
fn session(url: &str) -> Result<(std::net::SocketAddr, String, String), ProbeError> {
    let (addr, path) = addr_of(url)?;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpsim-proxy-measure","version":"0"}}}"#;
    let (_, bytes) = read_timed(&mut send(addr, &path, init, None, false)?, Instant::now());
    let text = String::from_utf8_lossy(&bytes);
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    let id = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")).map(|(_, v)| v.trim())
        })
        .ok_or_else(|| {
            ProbeError::Protocol(format!("initialize through {url}: no session id in {:?}", head.lines().next()))
        })?
        .to_string();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    read_timed(&mut send(addr, &path, note, Some(&id), false)?, Instant::now());
    Ok((addr, path, id))
}

/// One `probe_work(duration, interval)` call through `url` on a new session.
pub fn measure_call(url: &str, duration_ms: u64, interval_ms: u64) -> Result<Timeline, ProbeError> {
    let (addr, path, id) = session(url)?;
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"probe_work","arguments":{{"duration_ms":{duration_ms},"interval_ms":{interval_ms},"key":"proxy-measure"}},"_meta":{{"progressToken":7}}}}}}"#
    );
    let t0 = Instant::now();
    let mut s = send(addr, &path, &call, Some(&id), false)?;
    Ok(read_timed(&mut s, t0).0)
}

/// A `ping` answered on a kept-alive connection through `url`, then nothing: how long until the
/// proxy closes it (`None`: still open at `bound`).
pub fn measure_kept_alive(url: &str, bound: Duration) -> Result<Option<Duration>, ProbeError> {
    let (addr, path, id) = session(url)?;
    let mut s = send(addr, &path, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, Some(&id), true)?;
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let start = Instant::now();
    let mut answered: Option<Instant> = None;
    let mut all = Vec::new();
    let mut buf = [0u8; 8192];
    while start.elapsed() < bound + Duration::from_secs(1) {
        match s.read(&mut buf) {
            Ok(0) => return Ok(Some(answered.unwrap_or(start).elapsed())),
            Ok(n) => {
                all.extend_from_slice(&buf[..n]);
                let chunked_end = all.windows(7).any(|w| w == b"\r\n0\r\n\r\n");
                let json_end =
                    all.windows(16).any(|w| w.eq_ignore_ascii_case(b"content-length: ")) && all.ends_with(b"}");
                if answered.is_none() && (chunked_end || json_end) {
                    answered = Some(Instant::now());
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if answered.is_some_and(|a| a.elapsed() >= bound) {
                    return Ok(None);
                }
            }
            Err(_) => return Ok(Some(answered.unwrap_or(start).elapsed())),
        }
    }
    Ok(None)
}

/// The head finding of a timeline.
pub fn head_finding(t: &Timeline) -> Finding {
    match (t.head, t.events.first()) {
        (Some(h), Some(e)) if h < *e => Finding::HeadAtOnce,
        (Some(_), None) if !t.complete => Finding::HeadAtOnce,
        _ => Finding::HeadWithTheEnd,
    }
}

/// The cut finding of a timeline of a call that lasts `duration_ms`.
pub fn cut_finding(t: &Timeline, duration_ms: u64) -> Finding {
    let secs = (t.end + 500) / 1000;
    match t.head {
        _ if t.complete || t.end + 200 >= duration_ms => Finding::NotCut,
        Some(_) => Finding::CutAfter(secs),
        None => Finding::CutBeforeHead(secs),
    }
}

/// The kept-alive finding.
pub fn kept_alive_finding(closed: Option<Duration>) -> Finding {
    match closed {
        Some(d) => Finding::ClosedAfter((d.as_millis() as u64 + 500) / 1000),
        None => Finding::OpenAtBound,
    }
}

fn frame(kind: FrameKind, bytes: usize) -> Vec<(FrameKind, Vec<u8>)> {
    vec![(kind, vec![b'x'; bytes])]
}

fn ms(n: u64) -> mcpsim_model::Instant {
    mcpsim_model::Instant(n * 1000)
}

/// What the lb model does with a response whose events (of `event_bytes` each) come every
/// `interval_ms` for `duration_ms`: (when the head reaches the client, when a cut comes).
pub fn model_stream(lb: &LbConfig, duration_ms: u64, interval_ms: u64, event_bytes: usize) -> (Finding, Finding) {
    let mut m = LoadBalancer::new(lb.clone());
    let conn = ConnId(1);
    m.handle_open(ms(0), conn);
    m.handle_request(ms(0), conn);
    let mut head_at: Option<u64> = None;
    let mut first_event: Option<u64> = None;
    let note = |out: &[u8], at: u64, head_at: &mut Option<u64>| {
        if !out.is_empty() && head_at.is_none() {
            *head_at = Some(at);
        }
    };
    let out = m.handle_response(ms(0), conn, frame(FrameKind::Head, 150));
    note(&out, 0, &mut head_at);
    let mut times: Vec<(u64, FrameKind)> =
        (1..).map(|k| k * interval_ms).take_while(|t| *t < duration_ms).map(|t| (t, FrameKind::Body)).collect();
    times.push((duration_ms, FrameKind::Body));
    times.push((duration_ms, FrameKind::End));
    for (t, kind) in times {
        // A cut due before this frame.
        if let Some(due) = m.poll_timeout().filter(|d| *d <= ms(t)) {
            m.handle_timeout(due);
            let cut_at = due.0 / 1000;
            while let Some(o) = m.poll_output() {
                match o {
                    // Released at the cut: a buffered head goes out before the close.
                    LbOutput::Deliver { bytes, .. } => note(&bytes, cut_at, &mut head_at),
                    LbOutput::Cut { answer, .. } => {
                        let head = match head_at {
                            Some(h) if first_event.is_none_or(|e| h < e) && h < cut_at => Finding::HeadAtOnce,
                            _ => Finding::HeadWithTheEnd,
                        };
                        let secs = (cut_at + 500) / 1000;
                        let cut = match head_at.is_some() || answer.is_some() {
                            true => Finding::CutAfter(secs),
                            false => Finding::CutBeforeHead(secs),
                        };
                        return (head, cut);
                    }
                    LbOutput::Record(_) => {}
                }
            }
        }
        first_event.get_or_insert(t);
        let out = m.handle_response(ms(t), conn, frame(kind, if kind == FrameKind::End { 5 } else { event_bytes }));
        note(&out, t, &mut head_at);
    }
    let head = match (head_at, first_event) {
        (Some(h), Some(e)) if h < e => Finding::HeadAtOnce,
        _ => Finding::HeadWithTheEnd,
    };
    (head, Finding::NotCut)
}

/// What the lb model does with a kept-alive client connection left idle after its answer.
pub fn model_kept_alive(lb: &LbConfig, bound: Duration) -> Finding {
    let mut m = LoadBalancer::new(lb.clone());
    let conn = ConnId(1);
    m.handle_open(ms(0), conn);
    m.handle_request(ms(0), conn);
    let _ = m.handle_response(ms(0), conn, vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
    m.handle_response_end(ms(0), conn);
    match m.poll_timeout() {
        Some(due) if due.0 <= bound.as_micros() as u64 => Finding::ClosedAfter((due.0 / 1000 + 500) / 1000),
        _ => Finding::OpenAtBound,
    }
}

/// One measurement beside the model's prediction.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The configuration.
    pub setup: &'static str,
    /// `stream`, `silent` or `kept-alive`.
    pub what: &'static str,
    /// What the proxy did.
    pub real: Finding,
    /// What the model of its lb profile does.
    pub model: Finding,
    /// The raw timeline.
    pub detail: String,
}

/// The approximate size of one progress event of the fixtures on the wire (id, event, data).
const EVENT_BYTES: usize = 200;

/// A wall-clock reading whose finding differs from the model's is taken once more, and the second
/// one counts: on a loaded machine a real proxy can move a cut by a second (haproxy sets a timeout
/// from the clock it cached at the start of its poll loop, so a stalled loop brings the cut
/// forward). The first reading is kept beside it, so a disagreement that holds is still reported,
/// and one that came and went is shown.
fn settled(
    model: &Finding,
    finding: impl Fn(&Timeline) -> Finding,
    take: impl Fn() -> Result<Timeline, ProbeError>,
) -> Result<(Timeline, Option<Timeline>), ProbeError> {
    let first = take()?;
    if finding(&first) == *model {
        return Ok((first, None));
    }
    Ok((take()?, Some(first)))
}

/// Measures `setup` in front of the fixture at `upstream_url`: the three measurements.
pub fn measure(setup: &ProxySetup, upstream_url: &str) -> Result<Vec<Measured>, ProbeError> {
    let proxy = start_proxy(setup, upstream_url)?;
    let lb = setup.lb()?;
    let (model_head, _) = model_stream(&lb, 2500, 500, EVENT_BYTES);
    let (_, model_cut) = model_stream(&lb, 7000, 5000, EVENT_BYTES);
    let stream = settled(&model_head, head_finding, || measure_call(&proxy.url, 2500, 500))?;
    let silent = settled(&model_cut, |t| cut_finding(t, 7000), || measure_call(&proxy.url, 7000, 5000))?;
    let kept = measure_kept_alive(&proxy.url, KEPT_ALIVE_BOUND)?;
    let show = |(t, first): &(Timeline, Option<Timeline>)| {
        let one = |t: &Timeline| {
            format!(
                "head at {} ms, events at {:?} ms, end at {} ms{}",
                t.head.unwrap_or(0),
                t.events,
                t.end,
                if t.complete { "" } else { " (no last chunk)" }
            )
        };
        match first {
            Some(f) => format!("{} (measured twice: the first reading, {}, differed)", one(t), one(f)),
            None => one(t),
        }
    };
    Ok(vec![
        Measured {
            setup: setup.name,
            what: "stream",
            real: head_finding(&stream.0),
            model: model_head,
            detail: show(&stream),
        },
        Measured {
            setup: setup.name,
            what: "silent",
            real: cut_finding(&silent.0, 7000),
            model: model_cut,
            detail: show(&silent),
        },
        Measured {
            setup: setup.name,
            what: "kept-alive",
            real: kept_alive_finding(kept),
            model: model_kept_alive(&lb, KEPT_ALIVE_BOUND),
            detail: match kept {
                Some(d) => format!("closed {} ms after the answer", d.as_millis()),
                None => format!("still open {} s after the answer", KEPT_ALIVE_BOUND.as_secs()),
            },
        },
    ])
}

/// Marks the generated measurement table in `docs/reality.md`.
pub const MEASURED_BEGIN: &str =
    "<!-- reality proxy measurements: generated by `mcpsim probe reality --doc docs/reality.md` -->";
/// Ends it.
pub const MEASURED_END: &str = "<!-- end of reality proxy measurements -->";

/// The measurement table (markdown).
pub fn measured_markdown(all: &[Measured]) -> String {
    let mut out = String::from(
        "| configuration | measurement | real | lb model | agree | timeline |\n|---|---|---|---|---|---|\n",
    );
    for m in all {
        let agree = if m.real == m.model { "yes" } else { "NO" };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {agree} | {} |\n",
            m.setup,
            m.what,
            m.real,
            m.model,
            crate::probe::reality::check::cell(&m.detail)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::reality::proxies::CONFIGURATIONS;

    fn setup(name: &str) -> &'static ProxySetup {
        CONFIGURATIONS.iter().find(|s| s.name == name).expect("a configuration of that name")
    }

    #[test]
    fn the_lb_model_of_each_configuration_predicts_what_was_measured() {
        // The measured findings of docs/reality.md ('Proxies'); tests/reality_proxies.rs
        // measures them again against the running proxies.
        let predict = |name: &str| {
            let lb = setup(name).lb().expect("a built-in profile");
            let (head, _) = model_stream(&lb, 2500, 500, EVENT_BYTES);
            let (_, cut) = model_stream(&lb, 7000, 5000, EVENT_BYTES);
            (head, cut, model_kept_alive(&lb, KEPT_ALIVE_BOUND))
        };
        assert_eq!(predict("nginx"), (Finding::HeadAtOnce, Finding::NotCut, Finding::OpenAtBound));
        assert_eq!(predict("nginx-read-3s"), (Finding::HeadAtOnce, Finding::CutAfter(3), Finding::OpenAtBound));
        assert_eq!(predict("nginx-buffered"), (Finding::HeadWithTheEnd, Finding::NotCut, Finding::OpenAtBound));
        // The read timeout while the head is buffered: the head goes out alone at the cut.
        assert_eq!(
            predict("nginx-buffered-read-3s"),
            (Finding::HeadWithTheEnd, Finding::CutAfter(3), Finding::OpenAtBound)
        );
        assert_eq!(predict("haproxy-server-3s"), (Finding::HeadAtOnce, Finding::CutAfter(3), Finding::OpenAtBound));
    }

    #[test]
    fn findings_are_read_from_a_timeline() {
        let t = Timeline { head: Some(2), events: vec![500, 1000], end: 2500, complete: true };
        assert_eq!(head_finding(&t), Finding::HeadAtOnce);
        assert_eq!(cut_finding(&t, 2500), Finding::NotCut);
        let held = Timeline { head: Some(2510), events: vec![2510], end: 2511, complete: true };
        assert_eq!(head_finding(&held), Finding::HeadWithTheEnd);
        let cut = Timeline { head: Some(1), events: vec![], end: 3003, complete: false };
        assert_eq!(cut_finding(&cut, 7000), Finding::CutAfter(3));
        assert_eq!(kept_alive_finding(None), Finding::OpenAtBound);
        assert_eq!(kept_alive_finding(Some(Duration::from_millis(4900))), Finding::ClosedAfter(5));
    }

    #[test]
    fn a_reading_that_differs_from_the_model_is_taken_once_more_and_the_first_is_kept() {
        let early = Timeline { head: Some(203), events: vec![], end: 2498, complete: false };
        let on_time = Timeline { head: Some(3), events: vec![], end: 3004, complete: false };
        let readings = std::cell::RefCell::new(vec![on_time.clone(), early.clone()]);
        let take = || Ok(readings.borrow_mut().pop().expect("at most two readings"));
        let cut = |t: &Timeline| cut_finding(t, 7000);
        let (counted, first) = settled(&Finding::CutAfter(3), cut, take).expect("two readings");
        assert_eq!((counted, first), (on_time.clone(), Some(early.clone())));
        // A reading that agrees is taken once.
        let readings = std::cell::RefCell::new(vec![early.clone(), on_time.clone()]);
        let take = || Ok(readings.borrow_mut().pop().expect("one reading"));
        assert_eq!(settled(&Finding::CutAfter(3), cut, take).expect("a reading"), (on_time, None));
        assert_eq!(readings.borrow().len(), 1);
        // A disagreement that holds is reported as measured the second time.
        let readings = std::cell::RefCell::new(vec![early.clone(), early.clone()]);
        let take = || Ok(readings.borrow_mut().pop().expect("two readings"));
        let (counted, _) = settled(&Finding::CutAfter(3), cut, take).expect("two readings");
        assert_eq!(cut(&counted), Finding::CutAfter(2));
    }
}
