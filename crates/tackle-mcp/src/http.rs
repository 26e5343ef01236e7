//! Serves a [`TackleServer`] over MCP's streamable HTTP transport, one session per client.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Bytes;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::server::{ServeError, TackleServer};

mod guard;

use guard::{Activity, Watched};
pub use guard::{BearerToken, HEADER_READ_TIMEOUT, HttpOptions, IDLE_TIMEOUT, MAX_CONNECTIONS};

/// How long an open HTTP connection may take to finish after shutdown before it is dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// A streamable HTTP MCP server started by [`serve_http`].
///
/// Dropping it stops the server, like [`HttpServing::shutdown`] without waiting.
pub struct HttpServing {
    local_addr: SocketAddr,
    server: TackleServer,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), ServeError>>,
    _stop_on_drop: DropGuard,
}

impl fmt::Debug for HttpServing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServing")
            .field("local_addr", &self.local_addr)
            .field("stopped", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl HttpServing {
    /// The address the server listens on; with port 0 in [`serve_http`], the port picked.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The served handler: call [`TackleServer::notify_tools_changed`] on it (or clone it to
    /// do so later) when the Location's registrations change.
    pub fn server(&self) -> &TackleServer {
        &self.server
    }

    /// Sends `notifications/tools/list_changed` to every client with an open session.
    pub async fn notify_tools_changed(&self) {
        self.server.notify_tools_changed().await;
    }

    /// Stops accepting connections, ends every session, and waits until the server is down.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        if let Err(error) = self.wait().await {
            tracing::warn!("{error}");
        }
    }

    /// Serves until the server fails; it does not stop otherwise. Dropping this future (in a
    /// `select!` with a signal, say) stops the server like dropping the handle.
    pub async fn waiting(self) -> Result<(), ServeError> {
        self.wait().await
    }

    async fn wait(self) -> Result<(), ServeError> {
        let Self {
            task,
            _stop_on_drop,
            ..
        } = self;
        match task.await {
            Ok(result) => result,
            Err(error) => Err(ServeError::new(format!(
                "the HTTP server task failed: {error}"
            ))),
        }
    }
}

/// Serves `server` over streamable HTTP on `addr` until the returned handle is shut down or
/// dropped.
///
/// Every path answers MCP (clients usually use `http://<addr>/mcp`). Each client session gets
/// its own [`TackleServer::for_connection`] handle, so one client's listing never decides
/// what another client's calls settle against; `tools/list_changed` reaches all of them.
///
/// Before a request reaches MCP, `options` are checked: a request with an `Origin` header must
/// come from a loopback origin or one allowed ([`HttpOptions::allow_origin`]), else 403; with a
/// token ([`HttpOptions::with_token`]), a request without it gets 401. A token is required when
/// `addr` is not a loopback address. The `Host` header is checked against loopback names
/// (`localhost`, `127.0.0.1`, `::1`), as protection against DNS rebinding. When `addr` is a
/// specific address that is not loopback, that address is allowed too. When it is unspecified
/// (`0.0.0.0` or `::`), which names the clients will use is unknown, so the `Host` check is
/// off. A client has [`HEADER_READ_TIMEOUT`] to send each request's headers, a connection that
/// moves no byte for [`IDLE_TIMEOUT`] is closed, and at most [`MAX_CONNECTIONS`] are served at
/// once.
pub async fn serve_http(
    addr: SocketAddr,
    server: TackleServer,
    options: HttpOptions,
) -> Result<HttpServing, ServeError> {
    if !addr.ip().is_loopback() && !options.requires_token() {
        return Err(ServeError::new(format!(
            "{} is not a loopback address, so anyone who can reach it could call the tools: \
             serving there needs a bearer token",
            addr.ip()
        )));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|error| ServeError::new(format!("cannot listen on {addr}: {error}")))?;
    let local_addr = listener
        .local_addr()
        .map_err(|error| ServeError::new(format!("cannot listen on {addr}: {error}")))?;

    let cancel = CancellationToken::new();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    config = allow_bound_host(config, local_addr.ip());
    let sessions = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(sessions.for_connection()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let task = tokio::spawn(accept(listener, service, Arc::new(options), cancel.clone()));
    Ok(HttpServing {
        local_addr,
        server,
        _stop_on_drop: cancel.clone().drop_guard(),
        cancel,
        task,
    })
}

/// rmcp's loopback `Host` allow-list, widened for a server bound elsewhere.
fn allow_bound_host(config: StreamableHttpServerConfig, ip: IpAddr) -> StreamableHttpServerConfig {
    if ip.is_loopback() {
        config
    } else if ip.is_unspecified() {
        config.disable_allowed_hosts()
    } else {
        let mut hosts = config.allowed_hosts.clone();
        hosts.push(ip.to_string());
        config.with_allowed_hosts(hosts)
    }
}

/// rmcp's answer to `request`, except that a session ended by `DELETE` answers 204 No Content
/// rather than rmcp's 202 Accepted: the session is closed by then, and clients (the official
/// Python SDK among them) expect 200 or 204 and report anything else as a failed termination.
///
/// A request the options refuse (its origin, its token) never reaches rmcp.
async fn answer(
    service: &StreamableHttpService<TackleServer, LocalSessionManager>,
    options: &HttpOptions,
    request: http::Request<hyper::body::Incoming>,
) -> http::Response<BoxBody<Bytes, std::convert::Infallible>> {
    if let Some(refusal) = options.refusal(request.headers()) {
        return refusal;
    }
    let delete = request.method() == http::Method::DELETE;
    let mut response = service.handle(request).await;
    if delete && response.status() == http::StatusCode::ACCEPTED {
        *response.status_mut() = http::StatusCode::NO_CONTENT;
        *response.body_mut() = Full::new(Bytes::new()).boxed();
    }
    response
}

/// Accepts connections until `cancel` fires, then lets open ones finish within the grace
/// period. At most [`MAX_CONNECTIONS`] are served at once; each is closed when its headers
/// come too slowly or it moves no byte for the idle timeout.
async fn accept(
    listener: TcpListener,
    service: StreamableHttpService<TackleServer, LocalSessionManager>,
    options: Arc<HttpOptions>,
    cancel: CancellationToken,
) -> Result<(), ServeError> {
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            () = cancel.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Usually out of file descriptors: wait rather than spin.
                    tracing::warn!("MCP HTTP server: cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let service = service.clone();
        let answering = options.clone();
        let service = hyper::service::service_fn(move |request| {
            let service = service.clone();
            let options = answering.clone();
            async move { Ok::<_, std::convert::Infallible>(answer(&service, &options, request).await) }
        });
        let cancel = cancel.clone();
        let activity = Activity::new();
        let idle_timeout = options.idle_timeout();
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_read_timeout());
        connections.spawn(async move {
            let io = Watched {
                io: stream,
                activity: activity.clone(),
            };
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!("MCP HTTP connection ended: {error}");
                    }
                }
                // Dropping the connection closes it.
                () = activity.idle_for(idle_timeout) => {
                    tracing::debug!("MCP HTTP connection closed after {idle_timeout:?} idle");
                }
                () = cancel.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
                }
            }
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
    Ok(())
}
