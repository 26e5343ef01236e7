//! Unit tests for the preview algorithm.
