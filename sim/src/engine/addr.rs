//! The addresses of the simulated machines: the clients, the load balancer, the server replicas.
//! A leaf: the transport (`wire`) and the frame codec (`net`)
//! both read it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The client machine.
pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
/// Logical client `index`'s machine: [`CLIENT_IP`] for client 0, `10.1.x.y` for the others.
pub fn client_ip(index: u32) -> IpAddr {
    match index {
        0 => CLIENT_IP,
        i => {
            let [_, _, hi, lo] = i.to_be_bytes();
            IpAddr::V4(Ipv4Addr::new(10, 1, hi, lo))
        }
    }
}
/// The load balancer machine.
pub const LB_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
/// The server machine.
pub const SERVER_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3));
/// Where the load balancer listens.
pub const LB_ADDR: SocketAddr = SocketAddr::new(LB_IP, 80);

/// Server replica `index`'s machine: [`SERVER_IP`] for replica 0, `10.0.1.x` for the others.
pub fn replica_ip(index: u32) -> IpAddr {
    match index {
        0 => SERVER_IP,
        i => IpAddr::V4(Ipv4Addr::new(10, 0, 1, i.min(255) as u8)),
    }
}

/// Where server replica `index` listens.
pub fn replica_addr(index: u32) -> SocketAddr {
    SocketAddr::new(replica_ip(index), 80)
}

/// A number standing for a client's address, for sticky-client routing.
pub fn address_key(addr: SocketAddr) -> u64 {
    match addr.ip() {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6) as u64,
    }
}
