//! Shared helpers for the integration tests (the root package exists to own `tests/`).
