//! What the probe's own client sees, as the simulator's trace: [`http`] sends requests and reads
//! answers item by item, [`sse`] parses event streams, [`rec`] records both (and the few
//! server-side steps inferred) in the trace schema.

pub mod http;
pub mod rec;
pub mod sse;
