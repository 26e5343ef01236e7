//! Unit tests of the file tools.
