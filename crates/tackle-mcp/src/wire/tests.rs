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

/// Runs `input` through a transport with a `max`-byte line limit until it ends: the messages
/// it let through, and the most memory its line buffer took (its capacity).
fn drive(input: Vec<u8>, max: usize) -> (usize, usize) {
    use rmcp::transport::Transport as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mut transport = super::LineTransport::with_max_line(
            std::io::Cursor::new(input),
            tokio::io::sink(),
            max,
        );
        let mut messages = 0;
        let mut longest = 0;
        let run = async {
            while transport.receive().await.is_some() {
                messages += 1;
                longest = longest.max(transport.line.capacity());
            }
            longest = longest.max(transport.line.capacity());
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), run)
            .await
            .expect("the transport ends at the end of its input");
        (messages, longest)
    })
}

#[test]
fn whole_messages_pass_and_oversized_ones_do_not() {
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut input = ping.to_vec();
    input.push(b'\n');
    // Too long, with its id up front: answered and skipped, the next line still read.
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":""#);
    input.extend_from_slice(&[b'a'; 300]);
    input.extend_from_slice(b"\"}}\n");
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    input.push(b'\n');
    assert_eq!(drive(input, 128).0, 2);
    // Too long with no id before the cut: the connection ends there.
    let mut input = br#"{"jsonrpc":"2.0","method":"ping","params":{"x":""#.to_vec();
    input.extend_from_slice(&[b'a'; 300]);
    input.extend_from_slice(b"\"},\"id\":4}\n");
    input.extend_from_slice(ping);
    input.push(b'\n');
    assert_eq!(drive(input, 128).0, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Any bytes, in any lines: the reader ends, never panics, and its buffer never grows past
    /// twice its limit (a vector's growth).
    #[test]
    fn arbitrary_input_ends_within_the_line_limit(
        lines in proptest::collection::vec(
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..200),
                "[ -~]{0,200}".prop_map(String::into_bytes),
                Just(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.to_vec()),
            ],
            0..8,
        ),
    ) {
        let input = lines.join(&b'\n');
        let (_, longest) = drive(input, 64);
        prop_assert!(longest <= 2 * 64, "{longest}");
    }
}
