//! The head scanner on cut messages and arbitrary bytes.

use proptest::prelude::*;
use rmcp::model::RequestId;
use serde_json::json;

use super::{Head, scan_head};

fn number(id: i64) -> Option<RequestId> {
    Some(RequestId::Number(id))
}

#[test]
fn the_id_and_method_before_the_cut_are_read() {
    let head = scan_head(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"re"#);
    assert_eq!(head.id, number(7));
    assert_eq!(head.method.as_deref(), Some("tools/call"));
    let head = scan_head(br#" { "method" : "tools/call" , "id" : "a\"b" , "params": {"#);
    assert_eq!(head.id, Some(RequestId::String("a\"b".into())));
}

#[test]
fn values_before_the_id_are_skipped_whole() {
    let head = scan_head(
        br#"{"params":{"x":[1,{"id":3}],"s":"}\"]"},"jsonrpc":"2.0","method":"m","id":9,"more":"#,
    );
    assert_eq!(head.id, number(9));
    assert_eq!(head.method.as_deref(), Some("m"));
}

#[test]
fn an_id_after_the_cut_or_a_cut_id_is_not_read() {
    let head = scan_head(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"a":"xxxxx"#);
    assert_eq!(head.id, None);
    assert_eq!(head.method.as_deref(), Some("tools/call"));
    // `12` may be the start of `123`.
    assert_eq!(scan_head(br#"{"method":"m","id":12"#).id, None);
    assert_eq!(scan_head(br#"{"method":"m","id":"ab"#).id, None);
    assert_eq!(scan_head(b"[1,2,3]"), Head::default());
    assert_eq!(scan_head(b""), Head::default());
}

#[test]
fn nested_ids_are_not_the_message_id() {
    let head = scan_head(br#"{"method":"m","params":{"id":4},"x":"#);
    assert_eq!(head.id, None);
}

fn cases() -> u32 {
    if std::env::var_os("TACKLE_DEEP").is_some() {
        1_000_000
    } else {
        256
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Any bytes: no panic, and whatever is read is a real top-level key of the text.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = scan_head(&bytes);
    }

    /// A request cut anywhere yields its real id and method, or nothing: never a wrong one.
    #[test]
    fn cut_requests_yield_the_real_id_or_nothing(
        id in any::<i64>(),
        method in "[a-z/]{1,12}",
        filler in "[ -~]{0,40}",
        cut in 0usize..200,
        id_first in any::<bool>(),
    ) {
        let message = if id_first {
            json!({"id": id, "method": method, "params": {"id": 1, "text": filler}})
        } else {
            json!({"params": {"id": 1, "text": filler}, "method": method, "id": id})
        };
        let text = serde_json::to_vec(&message).unwrap();
        let cut = cut.min(text.len());
        let head = scan_head(&text[..cut]);
        if let Some(found) = head.id {
            prop_assert_eq!(found, RequestId::Number(id));
        }
        if let Some(found) = head.method {
            prop_assert_eq!(found, method.clone());
        }
        let whole = scan_head(&text);
        prop_assert_eq!(whole.id, number(id));
        prop_assert_eq!(whole.method, Some(method));
    }
}
