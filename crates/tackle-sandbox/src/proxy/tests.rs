//! Tests of the network proxy: patterns and the decision (with a model), addresses, the
//! request parser on any input, and the block log. `serve` drives a running proxy.

mod serve;

use std::net::IpAddr;

use proptest::prelude::*;

use super::address::is_local_or_private;
use super::http::{Request, head_length, parse_request};
use super::log::{BlockLog, LOG_CAPACITY};
use super::pattern::{NameDecision, parse_host};
use super::*;

fn deep() -> bool {
    std::env::var_os("TACKLE_DEEP").is_some()
}

fn list(allow: &[&str], deny: &[&str]) -> AllowList {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    AllowList::parse(&owned(allow), &owned(deny)).expect("valid patterns")
}

fn decide(list: &AllowList, host: &str, port: u16) -> NameDecision {
    list.decide(&parse_host(host).expect("valid host"), port)
}

fn allowed(explicit: bool) -> NameDecision {
    NameDecision::Allowed { explicit }
}

fn not_allowed() -> NameDecision {
    NameDecision::Refused(BlockReason::NotAllowed)
}

#[test]
fn every_documented_pattern_form_parses_and_matches_what_it_names() {
    let l = list(
        &[
            "example.com",
            "*.npmjs.org",
            "crates.io:443",
            "*.github.com:22",
            "127.0.0.1:8080",
            "[::1]:3000",
            "localhost",
            "Mixed.Case.ORG.",
        ],
        &[],
    );
    assert_eq!(decide(&l, "example.com", 1), allowed(true));
    assert_eq!(decide(&l, "registry.npmjs.org", 443), allowed(false));
    assert_eq!(decide(&l, "a.b.npmjs.org", 80), allowed(false));
    assert_eq!(decide(&l, "crates.io", 443), allowed(true));
    assert_eq!(decide(&l, "crates.io", 80), not_allowed());
    assert_eq!(decide(&l, "ssh.github.com", 22), allowed(false));
    assert_eq!(decide(&l, "ssh.github.com", 443), not_allowed());
    assert_eq!(decide(&l, "127.0.0.1", 8080), allowed(true));
    assert_eq!(decide(&l, "127.0.0.1", 8081), not_allowed());
    assert_eq!(decide(&l, "::1", 3000), allowed(true));
    assert_eq!(decide(&l, "::ffff:127.0.0.1", 8080), allowed(true));
    assert_eq!(decide(&l, "localhost", 5432), allowed(true));
    assert_eq!(decide(&l, "mixed.case.org", 80), allowed(true));
    assert_eq!(decide(&l, "MIXED.case.org.", 80), allowed(true));
    assert_eq!(decide(&l, "other.org", 80), not_allowed());
}

#[test]
fn a_wildcard_does_not_match_its_apex() {
    let l = list(&["*.example.com"], &[]);
    assert_eq!(decide(&l, "example.com", 443), not_allowed());
    assert_eq!(decide(&l, "www.example.com", 443), allowed(false));
    assert_eq!(decide(&l, "wwwexample.com", 443), not_allowed());
}

#[test]
fn deny_wins_over_allow_and_names_its_pattern() {
    let l = list(
        &["*.example.com", "example.com"],
        &["secret.example.com", "example.com:22"],
    );
    let denied = |pattern: &str| {
        NameDecision::Refused(BlockReason::Denied {
            pattern: pattern.to_owned(),
        })
    };
    assert_eq!(
        decide(&l, "secret.example.com", 443),
        denied("secret.example.com")
    );
    assert_eq!(decide(&l, "example.com", 22), denied("example.com:22"));
    assert_eq!(decide(&l, "example.com", 443), allowed(true));
    assert_eq!(decide(&l, "public.example.com", 443), allowed(false));
}

#[test]
fn a_bad_pattern_gets_an_error_that_says_how_to_write_it() {
    let error = |allow: &str| {
        AllowList::parse(&[allow.to_owned()], &[])
            .expect_err(allow)
            .to_string()
    };
    assert_eq!(
        error("https://registry.npmjs.org/left-pad"),
        "`https://registry.npmjs.org/left-pad` in `sandbox.network.allow` is not a host pattern: \
         a pattern is a host, not a URL. Write `registry.npmjs.org` (add `:PORT` to allow one \
         port only)."
    );
    assert!(error("github.com/org").contains("Write `github.com`"));
    assert!(error("a..b.com").contains("empty label"));
    assert!(error(".example.com").contains("empty label"));
    assert!(error("foo.*.com").contains("`*` may only stand alone as the first label"));
    assert!(error("*example.com").contains("`*` may only stand alone"));
    assert!(error("*").contains("set the network to \"on\""));
    assert!(error("example.com:http").contains("the port `http` is not a number"));
    assert!(error("example.com:0").contains("the port `0`"));
    assert!(error("example.com:65536").contains("the port `65536`"));
    assert!(error("::1:3000").contains("needs brackets"));
    assert!(error("*.10.0.0.1").contains("not an IP address"));
    assert!(error("exa mple.com").contains("` ` cannot appear"));
    assert!(error("  ").contains("it is empty"));
    let deny = AllowList::parse(&[], &["bad/path".to_owned()]).expect_err("deny checked too");
    assert_eq!(deny.list, "deny");
}

#[test]
fn local_and_private_addresses_are_recognised_in_every_form() {
    let local = [
        "127.0.0.1",
        "127.9.9.9",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "100.127.255.255",
        "192.0.0.8",
        "198.18.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fc00::1",
        "fd12:3456::1",
        "fe80::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "::8.8.8.8",
        "64:ff9b::10.0.0.1",
    ];
    let public = [
        "1.1.1.1",
        "8.8.8.8",
        "172.32.0.1",
        "100.128.0.1",
        "100.63.255.255",
        "2606:4700::1111",
        "::ffff:1.1.1.1",
        "64:ff9b::8.8.8.8",
    ];
    for text in local {
        let ip: IpAddr = text.parse().expect(text);
        assert!(is_local_or_private(ip), "{text} is local or private");
    }
    for text in public {
        let ip: IpAddr = text.parse().expect(text);
        assert!(!is_local_or_private(ip), "{text} is public");
    }
}

#[test]
fn the_block_log_keeps_the_last_thousand_and_answers_since_a_position() {
    let log = BlockLog::default();
    assert_eq!(log.position(), 0);
    let start = log.position();
    for i in 0..1_500u16 {
        log.record(format!("h{i}.test"), i, BlockReason::NotAllowed);
    }
    assert_eq!(log.position(), 1_500);
    let kept = log.since(start);
    assert_eq!(kept.len(), LOG_CAPACITY);
    assert_eq!(kept[0].seq, 500);
    assert_eq!(kept[0].host, "h500.test");
    assert_eq!(kept.last().map(|b| b.seq), Some(1_499));
    assert_eq!(log.since(1_498).len(), 2);
    assert!(log.since(1_500).is_empty());
    assert!(log.since(u64::MAX).is_empty());
}

#[test]
fn a_forwarded_request_is_rewritten_to_origin_form_without_hop_by_hop_headers() {
    let head = b"GET http://Example.COM:8080/a/b?q=1 HTTP/1.1\r\nHost: wrong\r\n\
        Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Private\r\nX-Private: 1\r\n\
        Proxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\n";
    let Ok(Request::Forward { host, port, head }) = parse_request(head) else {
        panic!("a forward request");
    };
    assert_eq!(host, Host::Name("example.com".to_owned()));
    assert_eq!(port, 8080);
    assert_eq!(
        String::from_utf8(head).expect("utf-8"),
        "GET /a/b?q=1 HTTP/1.1\r\nHost: Example.COM:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let Ok(Request::Forward { port, head, .. }) =
        parse_request(b"GET http://x.test HTTP/1.0\r\n\r\n")
    else {
        panic!("a forward request");
    };
    assert_eq!(port, 80);
    assert!(head.starts_with(b"GET / HTTP/1.0\r\nHost: x.test\r\n"));
}

#[test]
fn requests_the_proxy_cannot_serve_get_a_400_that_says_what_to_send() {
    let message = |head: &[u8]| parse_request(head).expect_err("refused").message;
    assert!(message(b"GET /index.html HTTP/1.1\r\n\r\n").contains("send the absolute URL"));
    assert!(message(b"GET https://x.test/ HTTP/1.1\r\n\r\n").contains("goes through CONNECT"));
    assert!(message(b"CONNECT x.test HTTP/1.1\r\n\r\n").contains("CONNECT needs `host:port`"));
    assert!(message(b"CONNECT x.test:99999 HTTP/1.1\r\n\r\n").contains("the port"));
    assert!(message(b"GET http://u:p@x.test/ HTTP/1.1\r\n\r\n").contains("user information"));
    assert!(message(b"\x16\x03\x01\x02\x00\r\n\r\n").contains("could not be parsed"));
    let mut many = b"GET http://x.test/ HTTP/1.1\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("X-{i}: 1\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(parse_request(&many).expect_err("too many").status, 431);
}

/// A small model of the decision: plain string operations on normalized names.
fn model(
    allow: &[(bool, String, Option<u16>)],
    deny: &[(bool, String, Option<u16>)],
    host: &str,
    port: u16,
) -> NameDecision {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let hit = |(wild, name, p): &(bool, String, Option<u16>)| {
        p.is_none_or(|p| p == port)
            && if *wild {
                host.ends_with(&format!(".{name}"))
            } else {
                host == *name
            }
    };
    if let Some((wild, name, p)) = deny.iter().find(|d| hit(d)) {
        let mut pattern = if *wild {
            format!("*.{name}")
        } else {
            name.clone()
        };
        if let Some(p) = p {
            pattern.push_str(&format!(":{p}"));
        }
        return NameDecision::Refused(BlockReason::Denied { pattern });
    }
    let matching: Vec<_> = allow.iter().filter(|a| hit(a)).collect();
    if matching.is_empty() {
        return not_allowed();
    }
    allowed(matching.iter().any(|(wild, _, _)| !wild))
}

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "cd"]), 1..4)
        .prop_map(|labels| labels.join("."))
}

fn pattern() -> impl Strategy<Value = (bool, String, Option<u16>)> {
    (
        any::<bool>(),
        name(),
        prop::option::of(prop::sample::select(vec![80u16, 443, 8080])),
    )
}

fn written((wild, name, port): &(bool, String, Option<u16>)) -> String {
    let host = if *wild {
        format!("*.{name}")
    } else {
        name.clone()
    };
    match port {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if deep() { 20_000 } else { 256 }))]

    /// Deny wins, ports narrow, a wildcard matches any depth below its suffix and never the
    /// suffix, names compare in lower case without a trailing dot: as the model says.
    #[test]
    fn the_decision_agrees_with_a_model(
        allow in prop::collection::vec(pattern(), 0..5),
        deny in prop::collection::vec(pattern(), 0..3),
        host in name(),
        upper in any::<bool>(),
        trailing_dot in any::<bool>(),
        port in prop::sample::select(vec![80u16, 443, 8080, 22]),
    ) {
        let list = AllowList::parse(
            &allow.iter().map(written).collect::<Vec<_>>(),
            &deny.iter().map(written).collect::<Vec<_>>(),
        ).expect("generated patterns are valid");
        let mut asked = if upper { host.to_ascii_uppercase() } else { host.clone() };
        if trailing_dot {
            asked.push('.');
        }
        prop_assert_eq!(decide(&list, &asked, port), model(&allow, &deny, &asked, port));
    }

    /// The parser never panics, whatever bytes arrive, and finding the head in pieces finds
    /// the same end as finding it at once.
    #[test]
    fn any_bytes_are_parsed_or_refused_without_panicking(
        bytes in prop::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a'), Just(b' '), any::<u8>()], 0..512),
        split in 0usize..512,
    ) {
        let split = split.min(bytes.len());
        if head_length(&bytes[..split], 0).is_none() {
            prop_assert_eq!(head_length(&bytes, split), head_length(&bytes, 0));
        }
        let _ = parse_request(&bytes);
        let _ = AllowList::parse(&[String::from_utf8_lossy(&bytes).into_owned()], &[]);
    }
}

#[test]
fn proxy_env_points_every_variable_at_the_proxy_and_empties_no_proxy() {
    let addr: std::net::SocketAddr = "127.0.0.1:4321".parse().expect("addr");
    let env: std::collections::HashMap<_, _> = proxy_env(addr).into_iter().collect();
    for name in [
        "HTTP_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "npm_config_https_proxy",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
    ] {
        assert_eq!(
            env.get(name).map(String::as_str),
            Some("http://127.0.0.1:4321"),
            "{name}"
        );
    }
    assert_eq!(env.get("NO_PROXY").map(String::as_str), Some(""));
    assert_eq!(env.get("no_proxy").map(String::as_str), Some(""));
    assert_eq!(env.get("NODE_USE_ENV_PROXY").map(String::as_str), Some("1"));
    assert!(!env.contains_key("YARN_NO_PROXY"));
}
