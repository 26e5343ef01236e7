//! Shared configuration for the property tests: case counts, regression files, runtimes.

use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

/// 64 cases per property by default; 2048 with `TACKLE_DEEP=1`.
pub(crate) fn cases() -> u32 {
    match std::env::var("TACKLE_DEEP") {
        Ok(deep) if deep == "1" => 2048,
        _ => 64,
    }
}

/// The config every law proptest uses, persisting failures to `file` under the top-level
/// `proptest-regressions/` (cargo runs integration tests from the package root).
pub(crate) fn law_config(file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::default()
    }
}

/// Proptest bodies are synchronous; each case drives its futures on its own runtime.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}
