//! The URL a probe is pointed at: parsed, and refused when not loopback unless allowed.

use crate::probe::error::ProbeError;
use std::net::{SocketAddr, ToSocketAddrs};

/// A parsed `http://host:port/path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The address connected to.
    pub addr: SocketAddr,
    /// `host:port` as written (the `Host` header).
    pub host: String,
    /// The endpoint's path.
    pub path: String,
}

/// Parses the URL and refuses a non-loopback one unless `allow_remote`.
pub fn parse_target(url: &str, allow_remote: bool) -> Result<Target, ProbeError> {
    let bad = |problem: &str| ProbeError::BadUrl { url: url.to_string(), problem: problem.to_string() };
    let rest = url.strip_prefix("http://").ok_or_else(|| bad("only http:// URLs (no TLS on loopback)"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("no host, or credentials in the URL"));
    }
    let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
        && !authority.ends_with(']')
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addrs: Vec<SocketAddr> = with_port.to_socket_addrs().map_err(|e| bad(&e.to_string()))?.collect();
    let addr = *addrs.first().ok_or_else(|| bad("resolves to no address"))?;
    if !allow_remote && !addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err(ProbeError::NotLoopback(authority.to_string()));
    }
    Ok(Target { addr, host: authority.to_string(), path: path.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_unless_allowed() {
        let t = parse_target("http://127.0.0.1:8080/mcp", false).unwrap();
        assert_eq!((t.addr.port(), t.path.as_str()), (8080, "/mcp"));
        assert!(parse_target("http://localhost:9/mcp", false).is_ok());
        assert!(parse_target("http://[::1]:9/mcp", false).is_ok());
        assert!(matches!(parse_target("http://10.1.2.3:80/mcp", false), Err(ProbeError::NotLoopback(_))));
        assert!(parse_target("http://10.1.2.3:80/mcp", true).is_ok());
        assert!(matches!(parse_target("https://127.0.0.1/mcp", false), Err(ProbeError::BadUrl { .. })));
        assert!(matches!(parse_target("http://u:p@127.0.0.1/mcp", false), Err(ProbeError::BadUrl { .. })));
    }
}
