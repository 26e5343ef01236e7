//! Unit tests for the codec: coercion, field paths, syntax positions.
