//! The single integration-test binary: one module per area, sharing `tackle` test support.

mod bounding;
mod containment;
mod dialects;
mod dropped;
mod file_tools;
mod fuzz;
mod journal;
mod laws;
mod laws_bound;
mod laws_edit;
mod laws_files;
mod laws_undo;
mod layers;
mod permission;
mod registry;
mod settlement;
mod support;
mod tidy;
