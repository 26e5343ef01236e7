//! The OS sandbox for every process tackle starts on a model's behalf.
//!
//! (essay to follow)

pub mod proxy;
