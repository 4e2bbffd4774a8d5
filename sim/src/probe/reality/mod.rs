//! `mcpsim probe reality`: each SDK's fixtures ([`sdk`]) probed, and what the probes saw set
//! beside the simulator: the server scenarios mirrored ([`server`]), the client runs mirrored
//! ([`client`]), and the whole check with its tables ([`check`]).

pub mod check;
pub mod client;
pub mod eras;
pub mod lb_mirror;
pub mod proxies;
pub mod proxy_check;
pub mod proxy_measure;
pub mod sdk;
pub mod server;
pub mod variants;

pub use check::*;
pub use sdk::*;
pub use server::{mirror, sim_verdict, SIM_SEEDS};
