//! The single integration-test binary: one module per area, sharing `tackle` test support.

mod laws;
mod settlement;
