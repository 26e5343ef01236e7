//! A running proxy on real loopback sockets: tunnels, forwarding, refusals and their log,
//! malformed input, the connection bound, and curl driven through `proxy_env`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::timeout;

use super::list;
use crate::proxy::server::Limits;
use crate::proxy::{AllowList, BlockReason, NetworkProxy, Resolver, proxy_env};

const PATIENCE: Duration = Duration::from_secs(10);

/// A loopback server that hands each connection to a handler with the list of request heads
/// it saw; dropped, it stops.
struct Server {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn server<F, Fut>(handler: F) -> Server
where
    F: Fn(TcpStream, Arc<Mutex<Vec<String>>>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = heads.clone();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handler(stream, seen.clone()));
        }
    });
    Server { addr, heads, task }
}

/// Echoes every connection back.
async fn echo_server() -> Server {
    server(|mut stream, _| async move {
        let (mut read, mut write) = stream.split();
        let _ = tokio::io::copy(&mut read, &mut write).await;
    })
    .await
}

/// An HTTP origin that records each request head it gets and answers `hello`.
async fn origin_server() -> Server {
    server(|mut stream, seen| async move {
        let head = read_head(&mut stream).await;
        seen.lock().expect("lock").push(head);
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
        let _ = stream.write_all(answer).await;
    })
    .await
}

/// Reads through the blank line that ends a head.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Sends `request` to the proxy and reads until it closes.
async fn exchange(proxy: &NetworkProxy, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(proxy.addr())
        .await
        .expect("connect to proxy");
    stream.write_all(request).await.expect("send");
    let mut answer = Vec::new();
    timeout(PATIENCE, stream.read_to_end(&mut answer))
        .await
        .expect("the proxy answers in time")
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

/// Opens a tunnel and checks that bytes come back through it.
async fn tunnel_echoes(proxy: &NetworkProxy, target: &str) -> Result<(), String> {
    let mut stream = TcpStream::connect(proxy.addr())
        .await
        .expect("connect to proxy");
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let head = timeout(PATIENCE, read_head(&mut stream))
        .await
        .expect("in time");
    if !head.starts_with("HTTP/1.1 200") {
        let mut rest = String::new();
        let _ = timeout(PATIENCE, stream.read_to_string(&mut rest)).await;
        return Err(format!("{head}{rest}"));
    }
    stream
        .write_all(b"ping through the tunnel")
        .await
        .expect("write");
    let mut back = [0u8; 23];
    timeout(PATIENCE, stream.read_exact(&mut back))
        .await
        .expect("in time")
        .expect("read");
    assert_eq!(&back, b"ping through the tunnel");
    Ok(())
}

fn start(list: AllowList) -> NetworkProxy {
    NetworkProxy::start(list).expect("start the proxy")
}

#[tokio::test]
async fn connect_tunnels_to_a_listed_loopback_server_by_address_and_by_localhost() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = start(list(
        &[&format!("127.0.0.1:{port}"), &format!("localhost:{port}")],
        &[],
    ));
    tunnel_echoes(&proxy, &format!("127.0.0.1:{port}"))
        .await
        .expect("by address");
    tunnel_echoes(&proxy, &format!("localhost:{port}"))
        .await
        .expect("by name");
    tunnel_echoes(&proxy, &format!("LOCALHOST.:{port}"))
        .await
        .expect("case and dot");
    assert!(proxy.blocked_since(0).is_empty());
}

#[tokio::test]
async fn another_port_of_the_same_server_is_refused_with_403_and_logged() {
    let echo = echo_server().await;
    let other = echo_server().await;
    let proxy = start(list(&[&format!("localhost:{}", echo.addr.port())], &[]));
    let before = proxy.position();
    let target = format!("localhost:{}", other.addr.port());
    let answer = tunnel_echoes(&proxy, &target).await.expect_err("refused");
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(
        answer.contains("\r\nX-Tackle-Sandbox: blocked\r\n"),
        "{answer}"
    );
    assert!(answer.ends_with(&format!(
        "\r\n\r\ntackle sandbox: {target} is not in the network allow-list; add it to \
         sandbox.network.allow in the configuration, or ask to run with sandbox \"off\".\n"
    )));
    let blocked = proxy.blocked_since(before);
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0].host, "localhost");
    assert_eq!(blocked[0].port, other.addr.port());
    assert_eq!(blocked[0].reason, BlockReason::NotAllowed);
    assert_eq!(proxy.position(), before + 1);
}

#[tokio::test]
async fn a_plain_get_is_forwarded_in_origin_form_and_an_unlisted_one_refused() {
    let origin = origin_server().await;
    let port = origin.addr.port();
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let answer = exchange(
        &proxy,
        format!(
            "GET http://127.0.0.1:{port}/path?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Proxy-Connection: keep-alive\r\nUser-Agent: test\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nhello"), "{answer}");
    let heads = origin.heads.lock().expect("lock").clone();
    assert_eq!(
        heads,
        [format!(
            "GET /path?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: test\r\n\
             Connection: close\r\n\r\n"
        )]
    );
    let refused = exchange(&proxy, b"GET http://127.0.0.1:1/ HTTP/1.1\r\n\r\n").await;
    assert!(
        refused.starts_with("HTTP/1.1 403 Forbidden\r\n"),
        "{refused}"
    );
    assert!(refused.contains("127.0.0.1:1 is not in the network allow-list"));
    assert_eq!(
        origin.heads.lock().expect("lock").len(),
        1,
        "nothing reached the origin"
    );
}

#[tokio::test]
async fn a_request_body_and_bytes_sent_with_the_head_reach_the_origin() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let received = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut all = Vec::new();
        let _ = timeout(PATIENCE, stream.read_to_end(&mut all)).await;
        String::from_utf8_lossy(&all).into_owned()
    });
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let mut client = TcpStream::connect(proxy.addr()).await.expect("connect");
    let request =
        format!("POST http://127.0.0.1:{port}/up HTTP/1.1\r\nContent-Length: 10\r\n\r\nfirst");
    client.write_all(request.as_bytes()).await.expect("send");
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.write_all(b"-rest").await.expect("send");
    client.shutdown().await.expect("half-close");
    let received = timeout(PATIENCE, received)
        .await
        .expect("in time")
        .expect("task");
    assert!(
        received.ends_with("Connection: close\r\n\r\nfirst-rest"),
        "{received}"
    );
}

#[tokio::test]
async fn deny_wins_over_an_allowing_pattern_at_the_proxy() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = start(list(
        &["localhost", "127.0.0.1"],
        &[&format!("localhost:{port}")],
    ));
    let answer = tunnel_echoes(&proxy, &format!("localhost:{port}"))
        .await
        .expect_err("denied");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains(&format!(
        "refused by the pattern `localhost:{port}` in sandbox.network.deny"
    )));
    tunnel_echoes(&proxy, &format!("127.0.0.1:{port}"))
        .await
        .expect("the address is allowed");
    let blocked = proxy.blocked_since(0);
    assert_eq!(
        blocked.iter().map(|b| &b.reason).collect::<Vec<_>>(),
        [&BlockReason::Denied {
            pattern: format!("localhost:{port}")
        }]
    );
}

fn resolving(names: &[(&str, IpAddr)]) -> Resolver {
    let table: HashMap<String, Vec<IpAddr>> = names
        .iter()
        .map(|(name, ip)| (name.to_string(), vec![*ip]))
        .collect();
    Resolver::Fixed(table)
}

#[tokio::test]
async fn a_name_allowed_only_through_a_wildcard_that_resolves_to_loopback_is_refused() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let through_wildcard = NetworkProxy::start_with(
        list(&["*.dev.test"], &[]),
        resolving(&[("api.dev.test", loopback)]),
        Limits::default(),
    )
    .expect("start");
    let answer = tunnel_echoes(&through_wildcard, &format!("api.dev.test:{port}"))
        .await
        .expect_err("private");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains(&format!(
        "api.dev.test:{port} resolves to 127.0.0.1, a local or private address"
    )));
    assert_eq!(
        through_wildcard.blocked_since(0)[0].reason,
        BlockReason::PrivateAddress { address: loopback }
    );
    let named = NetworkProxy::start_with(
        list(&["*.dev.test", &format!("api.dev.test:{port}")], &[]),
        resolving(&[("api.dev.test", loopback)]),
        Limits::default(),
    )
    .expect("start");
    tunnel_echoes(&named, &format!("api.dev.test:{port}"))
        .await
        .expect("named exactly");
}

#[tokio::test]
async fn a_resolved_address_on_the_deny_list_is_refused_even_for_an_exact_name() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = NetworkProxy::start_with(
        list(&[&format!("db.dev.test:{port}")], &["127.0.0.1"]),
        resolving(&[("db.dev.test", IpAddr::V4(Ipv4Addr::LOCALHOST))]),
        Limits::default(),
    )
    .expect("start");
    let answer = tunnel_echoes(&proxy, &format!("db.dev.test:{port}"))
        .await
        .expect_err("denied");
    assert!(
        answer.contains("refused by the pattern `127.0.0.1`"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_malformed_request_gets_400_and_the_proxy_keeps_serving() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    for garbage in [
        &b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\n\r\n",
        b"CONNECT nowhere HTTP/1.1\r\n\r\n",
        b"HELLO\n\n",
    ] {
        let answer = exchange(&proxy, garbage).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
    }
    let mut huge = b"GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: ".to_vec();
    huge.resize(70 * 1024, b'a');
    let answer = exchange(&proxy, &huge).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    tunnel_echoes(&proxy, &format!("127.0.0.1:{port}"))
        .await
        .expect("still serving");
    assert!(
        proxy.blocked_since(0).is_empty(),
        "malformed requests are not refusals"
    );
}

#[tokio::test]
async fn a_head_that_never_ends_gets_408_when_its_time_is_up() {
    let limits = Limits {
        head_timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let proxy = NetworkProxy::start_with(list(&[], &[]), Resolver::System, limits).expect("start");
    let answer = exchange(&proxy, b"GET http://x.test/ HTTP/1.1\r\nHost: x").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn an_origin_that_refuses_the_connection_gets_502_with_the_reason() {
    let closed = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let answer = exchange(
        &proxy,
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n"),
        "{answer}"
    );
    assert!(
        answer.contains(&format!(
            "could not connect to 127.0.0.1:{port}: 127.0.0.1: Connection refused"
        )),
        "{answer}"
    );
    assert!(
        proxy.blocked_since(0).is_empty(),
        "a failed connect is not a refusal"
    );
}

/// Waits until `check` holds, for up to `PATIENCE`.
async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_connections_at_once_use_at_most_256_slots_and_the_rest_wait() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(proxy.addr()).await.expect("connect"));
    }
    assert!(
        eventually(|| proxy.busy_slots() == 256).await,
        "{} slots busy",
        proxy.busy_slots()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(proxy.busy_slots(), 256, "never more than 256");
    // A waiting connection is served once a slot frees.
    let mut waiting = idle.pop().expect("the last one waits");
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    waiting.write_all(request.as_bytes()).await.expect("send");
    drop(idle.drain(..50));
    let head = timeout(PATIENCE, read_head(&mut waiting))
        .await
        .expect("served in time");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    drop(idle);
    drop(waiting);
    assert!(
        eventually(|| proxy.busy_slots() == 0).await,
        "slots come back"
    );
}

#[tokio::test]
async fn beyond_the_waiting_room_a_connection_gets_503_at_once() {
    let limits = Limits {
        max_connections: 2,
        max_waiting: 1,
        slot_wait: Duration::from_millis(300),
        ..Limits::default()
    };
    let proxy = NetworkProxy::start_with(list(&[], &[]), Resolver::System, limits).expect("start");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(proxy.addr()).await.expect("connect"));
    }
    assert!(eventually(|| proxy.busy_slots() == 2).await);
    let turned_away = exchange(&proxy, b"").await;
    assert!(
        turned_away.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{turned_away}"
    );
    assert!(turned_away.contains("too many connections"));
    // The one that waited past its time gets 503 too.
    let mut waited = String::new();
    let mut third = held.pop().expect("third");
    timeout(PATIENCE, third.read_to_string(&mut waited))
        .await
        .expect("in time")
        .expect("read");
    assert!(waited.starts_with("HTTP/1.1 503"), "{waited}");
}

#[tokio::test]
async fn shutdown_closes_the_port_and_ends_open_tunnels() {
    let echo = echo_server().await;
    let port = echo.addr.port();
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let addr = proxy.addr();
    let mut open = TcpStream::connect(addr).await.expect("connect");
    open.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .expect("send");
    assert!(read_head(&mut open).await.starts_with("HTTP/1.1 200"));
    proxy.shutdown().await;
    let mut rest = Vec::new();
    let ended = timeout(PATIENCE, open.read_to_end(&mut rest))
        .await
        .expect("the tunnel ends");
    assert!(ended.is_ok_and(|n| n == 0) || rest.is_empty());
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "nothing listens any more"
    );
}

#[test]
fn start_outside_a_runtime_is_an_error_not_a_panic() {
    let error = NetworkProxy::start(list(&[], &[])).expect_err("no runtime");
    assert!(error.to_string().contains("tokio runtime"));
}

/// Runs curl with only `proxy_env` as its proxy settings.
async fn curl(proxy: &NetworkProxy, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new("/usr/bin/curl");
    command.args(["-sS", "--max-time", "10"]).args(args);
    for (name, _) in std::env::vars() {
        if name.to_ascii_lowercase().ends_with("_proxy") {
            command.env_remove(name);
        }
    }
    command.envs(proxy_env(proxy.addr()));
    tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("curl runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_with_proxy_env_reaches_a_listed_server_and_reads_the_403_of_an_unlisted_one() {
    let origin = origin_server().await;
    let other = origin_server().await;
    let port = origin.addr.port();
    let proxy = start(list(&[&format!("localhost:{port}")], &[]));
    let reached = curl(&proxy, &[&format!("http://localhost:{port}/page")]).await;
    assert_eq!(String::from_utf8_lossy(&reached.stdout), "hello");
    let tunnelled = curl(
        &proxy,
        &["--proxytunnel", &format!("http://localhost:{port}/t")],
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&tunnelled.stdout), "hello");
    let other_port = other.addr.port();
    let refused = curl(&proxy, &[&format!("http://localhost:{other_port}/")]).await;
    assert_eq!(
        String::from_utf8_lossy(&refused.stdout),
        format!(
            "tackle sandbox: localhost:{other_port} is not in the network allow-list; add it to \
             sandbox.network.allow in the configuration, or ask to run with sandbox \"off\".\n"
        )
    );
    let tunnel_refused = curl(
        &proxy,
        &["--proxytunnel", &format!("http://localhost:{other_port}/")],
    )
    .await;
    assert!(
        String::from_utf8_lossy(&tunnel_refused.stderr)
            .contains("CONNECT tunnel failed, response 403"),
        "{tunnel_refused:?}"
    );
    assert!(other.heads.lock().expect("lock").is_empty());
    assert_eq!(proxy.blocked_since(0).len(), 2);
}

#[tokio::test]
async fn a_tunnel_ends_and_frees_its_slot_when_the_origin_closes_though_the_client_stays() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let _ = stream.write_all(b"bye").await;
    });
    let proxy = start(list(&[&format!("127.0.0.1:{port}")], &[]));
    let mut client = TcpStream::connect(proxy.addr()).await.expect("connect");
    let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n");
    client.write_all(request.as_bytes()).await.expect("send");
    assert!(read_head(&mut client).await.starts_with("HTTP/1.1 200"));
    let mut rest = Vec::new();
    timeout(PATIENCE, client.read_to_end(&mut rest))
        .await
        .expect("ends")
        .expect("read");
    assert_eq!(rest, b"bye");
    assert!(
        eventually(|| proxy.busy_slots() == 0).await,
        "the slot is free while the client is still open"
    );
    drop(client);
}
