//! The single integration-test binary: one module per area, sharing `tackle` test support.

mod bounding;
mod journal;
mod laws;
mod laws_bound;
mod permission;
mod registry;
mod settlement;
mod support;
mod tidy;
