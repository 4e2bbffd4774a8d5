//! What sits on the path to the probed server: one `GET` of the endpoint without a session (the
//! SDKs answer it 400 or 405 and create nothing), whose response headers may name a proxy
//! (`Server: nginx/1.22.1`, `Via`). A proxy's timeouts are measured as the server's by the
//! scenarios (its keep-alive timeout, its idle cuts): `probe server` warns when it sees one.
//! HAProxy adds no header of its own and is not seen this way.

use crate::probe::error::ProbeError;
use crate::probe::target::Target;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `Server` header values that name a proxy rather than an MCP server.
const PROXY_SERVERS: &[&str] = &[
    "nginx",
    "openresty",
    "envoy",
    "cloudflare",
    "apache",
    "caddy",
    "traefik",
    "awselb",
    "haproxy",
    "varnish",
    "squid",
];

/// The hints in one response head that a proxy answered or passed it on: one line each.
pub fn proxy_hints(head: &str) -> Vec<String> {
    let mut hints = Vec::new();
    for line in head.lines().skip(1) {
        let Some((name, value)) = line.split_once(':') else { continue };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        let lower = value.to_ascii_lowercase();
        match name.as_str() {
            "server" if PROXY_SERVERS.iter().any(|p| lower.starts_with(p)) => {
                hints.push(format!("Server: {}", crate::error::escape(value)))
            }
            "via" => hints.push(format!("Via: {}", crate::error::escape(value))),
            "x-cache" | "cf-ray" | "x-amz-cf-id" => hints.push(format!("{name}: {}", crate::error::escape(value))),
            _ => {}
        }
    }
    hints
}

/// Sends one session-less `GET` to `target` and reads the proxy hints of its answer's head
/// (at most 5 s, 16 KiB).
pub fn probe_path(target: &Target) -> Result<Vec<String>, ProbeError> {
    let io = |e: std::io::Error| ProbeError::Io { path: target.addr.to_string(), problem: e.to_string() };
    let mut s = TcpStream::connect_timeout(&target.addr, Duration::from_secs(5)).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(5))).map_err(io)?;
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
        target.path, target.host
    );
    s.write_all(req.as_bytes()).map_err(io)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while head.len() < 16 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    Ok(proxy_hints(text.split("\r\n\r\n").next().unwrap_or("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_is_named_by_its_server_or_via_header_and_an_sdk_server_is_not() {
        let nginx = "HTTP/1.1 400 Bad Request\r\nServer: nginx/1.22.1\r\nContent-Type: application/json";
        assert_eq!(proxy_hints(nginx), vec!["Server: nginx/1.22.1".to_string()]);
        let via = "HTTP/1.1 405 Method Not Allowed\r\nserver: uvicorn\r\nVia: 1.1 varnish";
        assert_eq!(proxy_hints(via), vec!["Via: 1.1 varnish".to_string()]);
        assert!(proxy_hints("HTTP/1.1 400 Bad Request\r\nserver: uvicorn\r\nx-accel-buffering: no").is_empty());
        // A control character from the server is escaped.
        assert_eq!(
            proxy_hints("HTTP/1.1 200 OK\r\nServer: nginx\u{1b}[31m"),
            vec!["Server: nginx\\u{1b}[31m".to_string()]
        );
    }
}
