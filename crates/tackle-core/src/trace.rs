//! A call's place in a distributed trace: the W3C Trace Context its host gave
//! ([`TraceParent`]), and the span telemetry opened for it ([`CallSpan`]), which tools read to
//! pass the trace on (the `bash` tool's `TRACEPARENT`).
//!
//! Core only carries them. Telemetry, which turns a span into something a collector receives,
//! lives in the host.

use std::any::Any;
use std::fmt;

/// A W3C `traceparent`: the trace a call belongs to and the span it continues.
///
/// Parsed and printed in the version `00` form, `00-<trace-id>-<parent-id>-<flags>`, lowercase
/// hex. A trace or span ID of all zeros is invalid, as the W3C Trace Context spec says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

/// Why a `traceparent` value was ignored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a W3C traceparent ({reason}); expected 00-<32 hex>-<16 hex>-<2 hex>")]
pub struct TraceParentError {
    /// The value as given, cut to 80 characters.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl TraceParent {
    /// The context of span `span_id` in trace `trace_id`; `None` when either is all zeros.
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], sampled: bool) -> Option<Self> {
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags: u8::from(sampled),
        })
    }

    /// Parses a `traceparent` header value. A later version's value is read by its first four
    /// fields, as the spec asks; version `ff` and malformed values are refused.
    pub fn parse(value: &str) -> Result<Self, TraceParentError> {
        let error = |reason| TraceParentError {
            value: value.chars().take(80).collect(),
            reason,
        };
        let value = value.trim();
        let bytes = value.as_bytes();
        if bytes.len() < 55 {
            return Err(error("too short"));
        }
        let version = hex_field::<1>(&bytes[0..2]).ok_or_else(|| error("bad version"))?[0];
        if version == 0xff {
            return Err(error("version ff is invalid"));
        }
        if (version == 0 && bytes.len() != 55) || (bytes.len() > 55 && bytes[55] != b'-') {
            return Err(error("wrong length"));
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return Err(error("fields must be separated by `-`"));
        }
        let trace_id = hex_field::<16>(&bytes[3..35]).ok_or_else(|| error("bad trace id"))?;
        let span_id = hex_field::<8>(&bytes[36..52]).ok_or_else(|| error("bad parent id"))?;
        let flags = hex_field::<1>(&bytes[53..55]).ok_or_else(|| error("bad flags"))?[0];
        let mut parent = Self::new(trace_id, span_id, false).ok_or_else(|| error("zero id"))?;
        parent.flags = flags;
        Ok(parent)
    }

    /// The 16-byte trace ID.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The 8-byte ID of the span this context names.
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags byte.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// True when the caller recorded its span (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

/// Decodes `N` bytes from `2 * N` lowercase hex digits.
fn hex_field<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    fn nibble(digit: u8) -> Option<u8> {
        match digit {
            b'0'..=b'9' => Some(digit - b'0'),
            b'a'..=b'f' => Some(digit - b'a' + 10),
            _ => None,
        }
    }
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        for byte in self.trace_id {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("-")?;
        for byte in self.span_id {
            write!(f, "{byte:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// The span telemetry opened for one call. Tools only read its context and add events; the
/// layer that opened it ends it.
pub trait CallSpan: Send + Sync + 'static {
    /// The context to pass on to what the call starts: this span, in its trace (`None` when
    /// the span has no valid ID).
    fn context(&self) -> Option<TraceParent>;

    /// Records that `name` happened during the call, with attributes (never content).
    fn event(&self, name: &'static str, attributes: Vec<(&'static str, String)>);

    /// For the layer that opened it, to reach its own type.
    fn as_any(&self) -> &dyn Any;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn printing_then_parsing_gives_the_same_context(
            trace_id in any::<[u8; 16]>(),
            span_id in any::<[u8; 8]>(),
            flags in any::<u8>(),
        ) {
            prop_assume!(trace_id != [0; 16] && span_id != [0; 8]);
            let mut parent = TraceParent::new(trace_id, span_id, false).unwrap();
            parent.flags = flags;
            prop_assert_eq!(TraceParent::parse(&parent.to_string()), Ok(parent));
        }

        #[test]
        fn parsing_any_text_never_panics(text in "\\PC{0,80}") {
            let _ = TraceParent::parse(&text);
        }
    }

    const VALID: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_valid_traceparent_round_trips() {
        let parent = TraceParent::parse(VALID).unwrap();
        assert!(parent.sampled());
        assert_eq!(parent.span_id()[0], 0xb7);
        assert_eq!(parent.to_string(), VALID);
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert!(TraceParent::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes";
        let parent = TraceParent::parse(later).unwrap();
        assert_eq!(parent.to_string(), VALID);
    }
}
