//! The server's keep-alive timeout (`keep_alive_timeout`), measured with a bounded wait: one
//! HTTP/1.1 `initialize` without `Connection: close` on its own connection, straight to the
//! server (not through the fault proxy, whose resets between scenarios would close it), the
//! whole response read, then the time until the server closes the idle connection, up to a
//! bound. It runs beside the scenarios ([`crate::probe::server::run::probe_async`] spawns it first and collects it
//! last), so it costs no time unless the scenarios end before the bound.
//!
//! | what happened | decided |
//! |---|---|
//! | closed `d` after the response's end | `keep_alive_timeout = d` (100 ms steps) |
//! | the response said `Connection: close` (and the server closed) | `"0s"`: it keeps no connection |
//! | still open at the bound | `"none"`: never, or longer than the bound (the comparison takes any profile value above the bound as agreeing) |
//! | no response head, or a body that does not end, within 10 s | left open, with what happened |

use crate::probe::error::ProbeError;
use crate::probe::fingerprint::Fingerprint;
use crate::probe::recorder::http::Endpoint;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

/// The reality check's bound on the wait for the server's close: above the SDKs' 5 s and 6 s,
/// short enough that the probe of a server that never closes (rmcp) ends with its scenarios.
pub const KEEP_ALIVE_BOUND: Duration = Duration::from_secs(10);

/// Bound on connecting, on the response head and on the response body.
const EXCHANGE_BOUND: Duration = Duration::from_secs(10);

/// What one measurement saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleClose {
    /// The response's status.
    pub status: u16,
    /// The response's `Content-Type`.
    pub content_type: String,
    /// The response carried `Connection: close`.
    pub said_close: bool,
    /// The response's `Keep-Alive` header, if any (Node's `timeout=5`).
    pub keep_alive_header: Option<String>,
    /// How long after the response's end the server closed the connection; `None`: still open
    /// at the bound.
    pub closed_after: Option<Duration>,
    /// The bound waited.
    pub bound: Duration,
}

/// Sends `initialize` to `endpoint` on a fresh connection, reads the whole answer and times the
/// server's close of the idle connection, waiting at most `bound`.
pub async fn measure(endpoint: &Endpoint, bound: Duration) -> Result<IdleClose, ProbeError> {
    let what = |e: &dyn std::fmt::Display| ProbeError::Http(format!("keep-alive measurement: {e}"));
    let tcp = timeout(EXCHANGE_BOUND, TcpStream::connect(endpoint.addr))
        .await
        .map_err(|_| ProbeError::Timeout("keep-alive measurement: connect".into()))?
        .map_err(|e| what(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| what(&e))?;
    // The connection's future ends when the connection does: the server's close of an idle
    // kept-alive connection, or hyper's own close after a `Connection: close` answer.
    let mut driver = tokio::spawn(conn);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": mcpsim_model::http::PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcpsim-probe-keep-alive", "version": "0"}}});
    let req = hyper::Request::builder()
        .method("POST")
        .uri(&endpoint.path)
        .header("host", &endpoint.host)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| what(&e))?;
    let result = async {
        let resp = timeout(EXCHANGE_BOUND, sender.send_request(req))
            .await
            .map_err(|_| ProbeError::Timeout("keep-alive measurement: no response head".into()))?
            .map_err(|e| what(&e))?;
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let status = resp.status().as_u16();
        let content_type = header("content-type").unwrap_or_default();
        let said_close = header("connection").is_some_and(|v| v.to_ascii_lowercase().contains("close"));
        let keep_alive_header = header("keep-alive");
        // Read to the end without keeping it, and no further than MAX_BODY_BYTES.
        let mut body = resp.into_body();
        let mut read = 0usize;
        let deadline = Instant::now() + EXCHANGE_BOUND;
        loop {
            let frame = tokio::time::timeout_at(deadline, body.frame()).await.map_err(|_| {
                ProbeError::Timeout(format!(
                    "keep-alive measurement: the {status} {content_type} answer did not end within {EXCHANGE_BOUND:?}"
                ))
            })?;
            match frame {
                None => break,
                Some(Err(e)) => return Err(what(&e)),
                Some(Ok(f)) => read += f.data_ref().map_or(0, |d| d.len()),
            }
            if read > crate::probe::limits::MAX_BODY_BYTES {
                return Err(ProbeError::Protocol(format!(
                    "keep-alive measurement: cap: the {status} {content_type} answer to initialize passed {} bytes",
                    crate::probe::limits::MAX_BODY_BYTES
                )));
            }
        }
        let end = Instant::now();
        let closed_after = match timeout(bound, &mut driver).await {
            Ok(_) => Some(end.elapsed()),
            Err(_) => None,
        };
        Ok(IdleClose { status, content_type, said_close, keep_alive_header, closed_after, bound })
    }
    .await;
    // Only now: a dropped sender would make hyper close the connection itself.
    drop(sender);
    driver.abort();
    result
}

/// A duration as the profiles write it, rounded to 100 ms.
pub fn literal(d: Duration) -> String {
    let tenths = (d.as_millis() as u64 + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("\"{}s\"", tenths / 10)
    } else {
        format!("\"{}ms\"", tenths * 100)
    }
}

/// Decides (or leaves open) `keep_alive_timeout` from a measurement.
pub fn decide(fp: &mut Fingerprint, measured: Result<IdleClose, ProbeError>) {
    const FIELD: &str = "keep_alive_timeout";
    let m = match measured {
        Ok(m) => m,
        Err(e) => {
            fp.leave_open(FIELD, format!("{e}"));
            return;
        }
    };
    let hint = m.keep_alive_header.as_deref().map(|h| format!(", Keep-Alive: {h}")).unwrap_or_default();
    let answer = format!("initialize answered {} {}{hint}", m.status, m.content_type);
    match m.closed_after {
        Some(d) if m.said_close => fp.decide(
            FIELD,
            "\"0s\"",
            format!("{answer} with Connection: close; closed {} ms after its end: no kept-alive connection", d.as_millis()),
        ),
        Some(d) => fp.decide(
            FIELD,
            literal(d),
            format!("{answer}; the server closed the idle kept-alive connection {:.1} s after its end", d.as_secs_f64()),
        ),
        None => fp.decide(
            FIELD,
            "\"none\"",
            format!(
                "{answer}; the idle kept-alive connection was still open {} s after its end (the bound): never, or longer than {} s",
                m.bound.as_secs_f64(),
                m.bound.as_secs_f64()
            ),
        ),
    }
}

/// Whether a probed `keep_alive_timeout` agrees with a profile's: equal within 500 ms, or, for
/// a connection still open at `bound` (probed `"none"`), a profile of none or above the bound.
/// The client probe's bounded `request_timeout` is compared the same way
/// (`client_field_agrees` in the client probe's `runs.rs`).
pub fn agrees(probed: &str, builtin: &str, bound: Duration) -> bool {
    let dur = |v: &str| -> Option<Option<Duration>> {
        let t = v.trim_matches('"');
        if t == "none" {
            Some(None)
        } else {
            mcpsim_model::time::parse_duration(t).ok().map(Some)
        }
    };
    match (dur(probed), dur(builtin)) {
        (Some(None), Some(None)) => true,
        (Some(None), Some(Some(b))) => b > bound,
        (Some(Some(p)), Some(Some(b))) => p.abs_diff(b) <= Duration::from_millis(500),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
    }

    /// A server that answers the first request with a small JSON body (with `extra` headers)
    /// and closes the connection `close_after` later (never when `None`).
    async fn server(extra: &'static str, close_after: Option<Duration>) -> Endpoint {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            let mut buf = vec![0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.expect("read");
                got.extend_from_slice(&buf[..n]);
            }
            let body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).await.expect("write");
            s.write_all(body.as_bytes()).await.expect("write");
            match close_after {
                Some(d) => {
                    tokio::time::sleep(d).await;
                    drop(s);
                }
                None => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
            }
        });
        Endpoint { addr, host: addr.to_string(), path: "/mcp".into() }
    }

    #[test]
    fn the_idle_close_is_timed_from_the_end_of_the_response() {
        rt().block_on(async {
            let ep = server("Keep-Alive: timeout=1\r\n", Some(Duration::from_millis(700))).await;
            let m = measure(&ep, Duration::from_secs(3)).await.expect("measured");
            let d = m.closed_after.expect("closed within the bound");
            assert!(d >= Duration::from_millis(650) && d < Duration::from_millis(1200), "{d:?}");
            assert_eq!(m.keep_alive_header.as_deref(), Some("timeout=1"));
            let mut fp = Fingerprint::default();
            decide(&mut fp, Ok(m));
            assert_eq!(fp.value("keep_alive_timeout"), Some("\"700ms\""), "{fp:?}");
        });
    }

    #[test]
    fn a_connection_still_open_at_the_bound_is_none_or_longer() {
        rt().block_on(async {
            let ep = server("", None).await;
            let t0 = Instant::now();
            let m = measure(&ep, Duration::from_millis(800)).await.expect("measured");
            assert_eq!(m.closed_after, None);
            assert!(t0.elapsed() < Duration::from_secs(3), "the wait is bounded");
            let mut fp = Fingerprint::default();
            decide(&mut fp, Ok(m));
            assert_eq!(fp.value("keep_alive_timeout"), Some("\"none\""));
        });
    }

    #[test]
    fn connection_close_is_no_keep_alive() {
        rt().block_on(async {
            let ep = server("Connection: close\r\n", Some(Duration::from_secs(5))).await;
            let m = measure(&ep, Duration::from_secs(3)).await.expect("measured");
            assert!(m.said_close);
            let mut fp = Fingerprint::default();
            decide(&mut fp, Ok(m));
            assert_eq!(fp.value("keep_alive_timeout"), Some("\"0s\""));
        });
    }

    #[test]
    fn none_agrees_with_none_and_with_anything_above_the_bound() {
        let b = Duration::from_secs(10);
        assert!(agrees("\"none\"", "\"none\"", b));
        assert!(agrees("\"none\"", "\"75s\"", b));
        assert!(!agrees("\"none\"", "\"6s\"", b));
        assert!(agrees("\"6s\"", "\"6s\"", b));
        assert!(agrees("\"5100ms\"", "\"5s\"", b));
        assert!(!agrees("\"6s\"", "\"5s\"", b));
        assert!(!agrees("\"6s\"", "\"none\"", b));
    }
}
