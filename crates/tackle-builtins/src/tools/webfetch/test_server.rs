//! A minimal HTTP/1.1 server for the web tools' tests: one request per connection, then close.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with a request.
pub(crate) enum Reply {
    /// Sends these bytes and closes.
    Full(Vec<u8>),
    /// Sends `head`, then `chunk` `count` times with `delay` between, then closes.
    Slow {
        head: Vec<u8>,
        chunk: Vec<u8>,
        count: usize,
        delay: Duration,
    },
    /// Never answers.
    Hang,
}

impl Reply {
    /// A complete response with `status`, `content_type` and `body`.
    pub(crate) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::with_status("200 OK", content_type, body)
    }

    /// A complete response with the status line tail `status`, such as `404 Not Found`.
    pub(crate) fn with_status(status: &str, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        let mut bytes = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        Self::Full(bytes)
    }

    /// A `302 Found` to `location`.
    pub(crate) fn redirect(location: &str) -> Self {
        Self::Full(
            format!(
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            )
            .into_bytes(),
        )
    }
}

/// A running test server.
pub(crate) struct TestServer {
    /// Where it listens, on 127.0.0.1.
    pub(crate) addr: SocketAddr,
    /// Every request received, head and body, as text.
    pub(crate) requests: Arc<Mutex<Vec<String>>>,
    /// Body bytes written so far by `Reply::Slow` replies.
    pub(crate) sent: Arc<AtomicU64>,
}

impl TestServer {
    /// `http://127.0.0.1:PORT{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Starts a server answering each request (its text) with `handler`'s reply.
pub(crate) async fn serve(handler: impl Fn(&str) -> Reply + Send + Sync + 'static) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let sent = Arc::new(AtomicU64::new(0));
    let handler = Arc::new(handler);
    let (log, counter) = (requests.clone(), sent.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (handler, log, counter) = (handler.clone(), log.clone(), counter.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&stream).await else {
                    return;
                };
                log.lock().unwrap().push(request.clone());
                let reply = handler(&request);
                respond(stream, reply, &counter).await;
            });
        }
    });
    TestServer {
        addr,
        requests,
        sent,
    }
}

async fn read_request(stream: &TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n");
        if let Some(end) = head_end {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Some(String::from_utf8_lossy(&buf).into_owned());
            }
        }
        stream.readable().await.ok()?;
        match stream.try_read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return None,
        }
    }
}

async fn respond(mut stream: TcpStream, reply: Reply, sent: &AtomicU64) {
    match reply {
        Reply::Full(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Slow {
            head,
            chunk,
            count,
            delay,
        } => {
            if stream.write_all(&head).await.is_err() {
                return;
            }
            for _ in 0..count {
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
            }
        }
        Reply::Hang => {
            // Keep the connection open, unanswered, until the client gives up.
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
    }
    let _ = stream.shutdown().await;
}
