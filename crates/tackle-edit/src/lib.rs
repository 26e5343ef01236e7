//! The pure engine behind tackle's file-editing tools: finding what the model meant to replace,
//! and applying multi-file patches, without touching the filesystem.
//!
//! Models quote code imperfectly. They drop indentation, re-wrap whitespace, escape quotes that
//! were not escaped, or copy the line-number prefixes of the read tool. The [`replace`] module
//! tries a chain of matching strategies, from exact to increasingly tolerant, and reports which
//! one matched. The [`patch`] module parses the `*** Begin Patch` grammar and applies every hunk
//! to in-memory file contents.
//!
//! The key decision of this crate is that *a tolerant match must never change lines the model did
//! not mean*. Every strategy produces candidate spans of the original text; a candidate that
//! covers far more than the model quoted is refused, several equally good candidates are an
//! ambiguity to report (with line numbers), and replacement text is inserted verbatim. When
//! nothing matches, the error carries the closest region with its line numbers and a similarity
//! score, so the model's next attempt can succeed.
//!
//! Everything here is a pure function of strings: the tools in `tackle-builtins` read files,
//! call this crate, and write the result atomically. Line endings and byte-order marks are the
//! callers' to detect and restore; this crate works on text with `\n` line endings.

#![deny(missing_docs)]

pub mod patch;
pub mod replace;
