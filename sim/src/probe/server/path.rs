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

/// Whose a probed field is, from a probe through the proxy and one straight to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Both probes decided the same value: the server's (the proxy passes it through).
    Server,
    /// The values differ: what the probe through the proxy saw is the proxy's.
    Proxy,
    /// One probe left it undetermined.
    CannotTell,
}

/// One field of the two probes.
#[derive(Clone, Debug)]
pub struct Attribution {
    /// The fingerprint field.
    pub field: String,
    /// Its value through the proxy, if decided.
    pub through: Option<String>,
    /// Its value straight from the server, if decided.
    pub direct: Option<String>,
    /// Whose it is.
    pub owner: Owner,
}

/// Every field either probe decided, with its owner.
pub fn attribute(
    through: &crate::probe::fingerprint::Fingerprint,
    direct: &crate::probe::fingerprint::Fingerprint,
) -> Vec<Attribution> {
    let names: std::collections::BTreeSet<&String> = through.fields.keys().chain(direct.fields.keys()).collect();
    names
        .into_iter()
        .map(|f| {
            let (t, d) = (through.value(f).map(String::from), direct.value(f).map(String::from));
            let owner = match (&t, &d) {
                (Some(a), Some(b)) if a == b => Owner::Server,
                (Some(_), Some(_)) => Owner::Proxy,
                _ => Owner::CannotTell,
            };
            Attribution { field: f.clone(), through: t, direct: d, owner }
        })
        .collect()
}

/// Fields of a server profile a proxy can change, and the `[[lb.hops]]` field each becomes.
const HOP_FIELDS: &[(&str, &str)] = &[("keep_alive_timeout", "keep_alive_timeout")];

/// A `[[lb.hops]]` entry for what belongs to the proxy, with a comment for each field it cannot
/// tell. An idle cut of an open response is not measured by the probe's scenarios (none leaves
/// a stream silent long enough), so `idle_timeout` is always "cannot tell".
pub fn hop_entry(url: &str, all: &[Attribution]) -> String {
    let mut out = format!(
        "# The proxy in front of the server, as `mcpsim probe server --url {} --direct` told it apart.\n[[lb.hops]]\n",
        crate::error::escape(url)
    );
    for (field, hop_field) in HOP_FIELDS {
        match all.iter().find(|a| a.field == *field) {
            Some(Attribution { owner: Owner::Proxy, through: Some(v), direct, .. }) => {
                let direct = direct.as_deref().unwrap_or("?");
                let bound = if v == "\"none\"" { " (still open at the probe's bound: never, or longer)" } else { "" };
                out.push_str(&format!(
                    "{hop_field} = {v}  # through the proxy {v}{bound}, the server alone {direct}\n"
                ));
            }
            Some(Attribution { owner: Owner::Server, .. }) => {
                out.push_str(&format!("# {hop_field}: the same through the proxy and alone, the server's\n"))
            }
            _ => out.push_str(&format!("# {hop_field}: cannot tell (one probe left it undetermined)\n")),
        }
    }
    out.push_str("# idle_timeout: cannot tell (no probe scenario leaves an open stream silent long enough)\n");
    out
}

#[cfg(test)]
mod attribution_tests {
    use super::*;
    use crate::probe::fingerprint::Fingerprint;

    #[test]
    fn a_field_that_differs_through_the_proxy_goes_into_the_hop_entry() {
        let mut through = Fingerprint::default();
        let mut direct = Fingerprint::default();
        through.decide("keep_alive_timeout", "\"none\"", "open at 10 s");
        direct.decide("keep_alive_timeout", "\"5s\"", "closed at 5.0 s");
        through.decide("second_get", "\"reject409\"", "409");
        direct.decide("second_get", "\"reject409\"", "409");
        through.decide("keepalive", "\"15s\"", "comments");
        let all = attribute(&through, &direct);
        let owner = |f: &str| all.iter().find(|a| a.field == f).map(|a| a.owner.clone());
        assert_eq!(owner("keep_alive_timeout"), Some(Owner::Proxy));
        assert_eq!(owner("second_get"), Some(Owner::Server));
        assert_eq!(owner("keepalive"), Some(Owner::CannotTell));
        let entry = hop_entry("http://127.0.0.1:8080/mcp", &all);
        assert!(entry.contains("[[lb.hops]]\nkeep_alive_timeout = \"none\""), "{entry}");
        assert!(entry.contains("idle_timeout: cannot tell"), "{entry}");
        // A server that closes as it did alone: nothing of the proxy's.
        let same = attribute(&direct, &direct);
        assert!(hop_entry("u", &same).contains("# keep_alive_timeout: the same"));
    }
}
