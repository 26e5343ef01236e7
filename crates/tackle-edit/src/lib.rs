//! The pure engine behind tackle's file-editing tools: finding what the model meant to replace,
//! and applying multi-file patches, without touching the filesystem.
//!
//! Models quote code imperfectly. They drop indentation, re-wrap whitespace, escape quotes that
//! were not escaped, or copy the line-number prefixes of the read tool. The [`replace`] module
//! tries a chain of matching strategies, from exact to increasingly tolerant, and reports which
//! one matched. The [`patch`] module parses the `*** Begin Patch` grammar and applies every hunk
//! to in-memory file contents.
//!
//! The key decision of this crate is that *a tolerant match may change only text the model
//! quoted*. Each strategy accepts a span only when every one of its lines equals the quoted line
//! under one stated normalisation (trimming, an indentation shift, collapsed whitespace, escapes,
//! typographic quotes, a trailing `;` or `,`), never because lines are "similar enough". A
//! whole-line match then applies the model's change line by line, so a line the model left alone
//! keeps the file's exact bytes, and what the normalisation ignored is given back on the lines
//! the model changed (or the edit is refused). Several equally good candidates are an ambiguity to report (with line numbers).
//! When nothing matches, the error carries the closest region with its line numbers, a
//! similarity score and a diff, so the model's next attempt can succeed.
//!
//! The [`diff`] module builds the line diffs the tools show and record from the spans the engine
//! replaced, so a diff costs what the change costs, not what the file costs.
//!
//! Everything here is a pure function of strings: the tools in `tackle-builtins` read files,
//! call this crate, and write the result atomically. Line endings and byte-order marks are the
//! callers' to detect and restore; this crate works on text with `\n` line endings.

#![deny(missing_docs)]

pub mod diff;
pub mod patch;
pub mod replace;
