//! The listener and one connection's life: read the head, decide, connect, relay.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout, timeout_at};

use super::address::is_local_or_private;
use super::http::{Answer, Request, head_length, parse_request};
use super::log::{BlockLog, host_port};
use super::pattern::{AllowList, NameDecision};
use super::{BlockReason, Host, Resolver};

/// The bounds of one proxy.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// Connections served at once.
    pub(crate) max_connections: usize,
    /// Connections accepted while all slots are busy, waiting for one.
    pub(crate) max_waiting: usize,
    /// How long a waiting connection waits for a slot before it gets 503.
    pub(crate) slot_wait: Duration,
    /// The largest request head.
    pub(crate) max_head: usize,
    pub(crate) head_timeout: Duration,
    /// For name resolution, and again for connecting to the origin.
    pub(crate) connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            max_waiting: 256,
            slot_wait: Duration::from_secs(10),
            max_head: 64 * 1024,
            head_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// What every connection task shares.
pub(crate) struct Shared {
    pub(crate) list: AllowList,
    pub(crate) log: BlockLog,
    pub(crate) resolver: Resolver,
    pub(crate) limits: Limits,
    pub(crate) slots: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
}

impl Shared {
    pub(crate) fn new(list: AllowList, resolver: Resolver, limits: Limits) -> Shared {
        Shared {
            list,
            log: BlockLog::default(),
            resolver,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            waiting: Arc::new(Semaphore::new(limits.max_waiting)),
            limits,
        }
    }
}

/// Accepts until the task is aborted; aborting drops every connection task with it.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut tasks = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of descriptors or a reset before accept: wait a moment rather than spin.
                tracing::debug!(%error, "network proxy: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while tasks.try_join_next().is_some() {}
        if let Ok(slot) = shared.slots.clone().try_acquire_owned() {
            tasks.spawn(connection(stream, shared.clone(), slot));
        } else if let Ok(place) = shared.waiting.clone().try_acquire_owned() {
            let shared = shared.clone();
            tasks.spawn(async move {
                let slot = timeout(
                    shared.limits.slot_wait,
                    shared.slots.clone().acquire_owned(),
                );
                match slot.await {
                    Ok(Ok(slot)) => {
                        drop(place);
                        connection(stream, shared, slot).await;
                    }
                    _ => answer(stream, &busy()).await,
                }
            });
        } else {
            // Nothing is queued for it: a small answer that fits the socket buffer, no wait.
            let _ = stream.try_write(&busy().to_bytes());
        }
    }
}

fn busy() -> Answer {
    Answer::new(
        503,
        "tackle sandbox proxy: too many connections are open through the proxy at once; retry when some have finished.",
    )
}

/// One client connection, holding one of the proxy's slots.
async fn connection(mut client: TcpStream, shared: Arc<Shared>, _slot: OwnedSemaphorePermit) {
    let _ = client.set_nodelay(true);
    let (head, leftover) = match timeout(
        shared.limits.head_timeout,
        read_head(&mut client, shared.limits.max_head),
    )
    .await
    {
        Ok(Ok(Some(read))) => read,
        Ok(Ok(None)) | Ok(Err(_)) => return,
        Err(_) => {
            let message = "tackle sandbox proxy: the request head did not arrive in time.";
            return answer(client, &Answer::new(408, message)).await;
        }
    };
    let request = match head {
        Head::Complete(head) => parse_request(&head),
        Head::TooLarge => Err(Answer::new(
            431,
            format!(
                "tackle sandbox proxy: the request head is larger than {} KiB.",
                shared.limits.max_head / 1024
            ),
        )),
    };
    let request = match request {
        Ok(request) => request,
        Err(refusal) => return answer(client, &refusal).await,
    };
    let (host, port) = match &request {
        Request::Connect { host, port } | Request::Forward { host, port, .. } => {
            (host.clone(), *port)
        }
    };
    let mut upstream = match open(&shared, &host, port).await {
        Ok(upstream) => upstream,
        Err(refusal) => return answer(client, &refusal).await,
    };
    let _ = upstream.set_nodelay(true);
    let greeting: &[u8] = match &request {
        Request::Connect { .. } => b"HTTP/1.1 200 Connection Established\r\n\r\n",
        Request::Forward { .. } => b"",
    };
    let first_bytes = match &request {
        Request::Connect { .. } => leftover,
        Request::Forward { head, .. } => [head.as_slice(), &leftover].concat(),
    };
    if client.write_all(greeting).await.is_err() || upstream.write_all(&first_bytes).await.is_err()
    {
        return;
    }
    relay(&mut client, &mut upstream).await;
}

/// Copies both ways until the origin's side ends; a client that finished sending still gets
/// the rest of the answer.
async fn relay(client: &mut TcpStream, upstream: &mut TcpStream) {
    let (mut client_read, mut client_write) = client.split();
    let (mut upstream_read, mut upstream_write) = upstream.split();
    let upload = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let download = async {
        let _ = tokio::io::copy(&mut upstream_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    tokio::pin!(upload, download);
    tokio::select! {
        () = &mut download => {}
        () = &mut upload => download.await,
    }
}

enum Head {
    Complete(Vec<u8>),
    TooLarge,
}

/// Reads up to the blank line ending the head; `None` when the client left first. Bytes read
/// past the head are returned too: they belong to the body or the tunnel.
async fn read_head(client: &mut TcpStream, max: usize) -> io::Result<Option<(Head, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let mut searched = 0;
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_length(&buf, searched) {
            if end > max {
                return Ok(Some((Head::TooLarge, Vec::new())));
            }
            let leftover = buf.split_off(end);
            return Ok(Some((Head::Complete(buf), leftover)));
        }
        if buf.len() > max {
            return Ok(Some((Head::TooLarge, Vec::new())));
        }
        searched = buf.len();
    }
}

/// Decides, resolves once, checks every address, and connects to a checked one.
async fn open(shared: &Shared, host: &Host, port: u16) -> Result<TcpStream, Answer> {
    let explicit = match shared.list.decide(host, port) {
        NameDecision::Allowed { explicit } => explicit,
        NameDecision::Refused(reason) => return Err(block(shared, host, port, reason)),
    };
    let deadline = Instant::now() + shared.limits.connect_timeout;
    let addresses: Vec<IpAddr> = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => match timeout_at(deadline, shared.resolver.resolve(name, port)).await {
            Ok(Ok(found)) if !found.is_empty() => found,
            Ok(Ok(_)) => return Err(unresolved(host, "no address was found")),
            Ok(Err(error)) => return Err(unresolved(host, &error.to_string())),
            Err(_) => return Err(unresolved(host, "the lookup timed out")),
        },
    };
    for &ip in &addresses {
        if let Some(pattern) = shared.list.denied_address(ip, port) {
            let pattern = pattern.to_owned();
            return Err(block(shared, host, port, BlockReason::Denied { pattern }));
        }
        if !explicit && is_local_or_private(ip) {
            let reason = BlockReason::PrivateAddress { address: ip };
            return Err(block(shared, host, port, reason));
        }
    }
    let mut last_error = String::from("no address was tried");
    for ip in addresses {
        match timeout_at(deadline, TcpStream::connect(SocketAddr::new(ip, port))).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last_error = format!("{ip}: {error}"),
            Err(_) => {
                last_error = format!(
                    "no answer within {} s",
                    shared.limits.connect_timeout.as_secs()
                );
                break;
            }
        }
    }
    Err(Answer::new(
        502,
        format!(
            "tackle sandbox proxy: could not connect to {}: {last_error}.",
            host_port(&host.to_string(), port)
        ),
    ))
}

fn block(shared: &Shared, host: &Host, port: u16, reason: BlockReason) -> Answer {
    let blocked = shared.log.record(host.to_string(), port, reason);
    tracing::debug!(%blocked, "network proxy: refused");
    Answer {
        status: 403,
        message: blocked.to_string(),
        blocked: true,
    }
}

fn unresolved(host: &Host, why: &str) -> Answer {
    Answer::new(
        502,
        format!("tackle sandbox proxy: could not resolve {host}: {why}."),
    )
}

/// Sends the proxy's own answer, then lets the client read it before the socket closes:
/// closing with unread input would reset the connection and could lose the answer.
async fn answer(mut client: TcpStream, answer: &Answer) {
    const LINGER: Duration = Duration::from_secs(1);
    const DRAIN_LIMIT: usize = 256 * 1024;
    let sent = timeout(LINGER, client.write_all(&answer.to_bytes())).await;
    if !matches!(sent, Ok(Ok(()))) {
        return;
    }
    let _ = client.shutdown().await;
    let deadline = Instant::now() + LINGER;
    let mut drained = 0;
    let mut sink = [0u8; 8192];
    while drained < DRAIN_LIMIT {
        match timeout_at(deadline, client.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}
