//! The network allow-list proxy: the only way out for a sandboxed command when the policy's
//! network is a list of hosts.
//!
//! tackle runs one [`NetworkProxy`] on the host's tokio runtime, on `127.0.0.1` and a port the
//! kernel picks. Sandboxed commands get [`proxy_env`] (the usual proxy variables, plus the ones
//! npm, yarn, pip, cargo and Node read), and the kernel side of the sandbox lets them open TCP
//! connections to that port only. The proxy speaks HTTP/1: `CONNECT host:port` opens a byte
//! tunnel (HTTPS, git, anything), and an absolute-form `GET http://host/path` is forwarded to
//! the origin in origin form with `Connection: close`, the response streamed back as it
//! comes. It never decrypts anything, so it sees host names and ports, not URLs inside TLS.
//!
//! **The decision.** [`AllowList::parse`] reads patterns: `example.com` (that host),
//! `*.example.com` (any subdomain at any depth, not the apex), either with `:PORT` for one
//! port only, IP literals (`127.0.0.1:8080`, `[::1]:3000`) and `localhost`. Names compare in
//! lower case without a trailing dot; IP literals compare as addresses. For a request to
//! (host, port): a deny pattern wins; otherwise some allow pattern must match. The proxy then
//! resolves the host once and checks every address: an address a deny pattern lists is
//! refused, and so is a local or private one (loopback, RFC 1918, fc00::/7, link-local,
//! unspecified, multicast, CGNAT, and IPv6 forms embedding those) unless a matching allow
//! pattern names the host or address exactly, not through `*.`. It connects to those checked
//! addresses only, so a name cannot resolve to something else between check and use (DNS
//! rebinding).
//!
//! **Refusals** answer `403 Forbidden` with `X-Tackle-Sandbox: blocked` and a one-line body
//! that tells a model what happened and what can be done ([`Blocked`]'s `Display`); each is
//! also recorded in a ring of the last 1,000 ([`NetworkProxy::position`],
//! [`NetworkProxy::blocked_since`]), which the denial reader ([`crate::denial`]) uses as exact
//! evidence. A failed lookup or connect answers 502 with the reason; a malformed request 400;
//! a head over 64 KiB 431; a head not finished in 30 s 408. None of those is a refusal.
//!
//! **Bounds.** At most 256 connections are served at once; up to 256 more wait up to 10 s for
//! a slot, then get 503, and beyond those a connection gets 503 at once. Lookup and connect
//! share a 10 s budget. An established tunnel has no idle limit (a long download is normal);
//! it ends when the origin closes its side (a client that closed its own side first still
//! gets the rest of the answer), and every task ends when the proxy is dropped.
//!
//! **What it does not cover.** Clients that ignore the proxy variables (Go programs reaching
//! loopback, git with its own `http.proxy`, raw sockets) are not let through: the kernel side
//! refuses their connections, and the denial reader tells the model. UDP is not proxied.

mod address;
mod http;
mod log;
mod pattern;
mod server;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::task::JoinHandle;

pub use address::is_local_or_private;
pub use log::{BlockReason, Blocked};
pub use pattern::{AllowList, PatternError, PatternProblem};
use server::{Limits, Shared};

/// A host as a request or a pattern names it: a lower-case name or an IP address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// How the proxy turns names into addresses.
pub(crate) enum Resolver {
    /// The system's resolver, through tokio.
    System,
    /// A fixed table, for tests of names that must resolve to given addresses.
    #[cfg(test)]
    Fixed(std::collections::HashMap<String, Vec<IpAddr>>),
}

impl Resolver {
    async fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<IpAddr>> {
        match self {
            Resolver::System => {
                let mut found: Vec<IpAddr> = Vec::new();
                for address in tokio::net::lookup_host((name, port)).await? {
                    if !found.contains(&address.ip()) {
                        found.push(address.ip());
                    }
                }
                Ok(found)
            }
            #[cfg(test)]
            Resolver::Fixed(table) => table
                .get(name)
                .cloned()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name")),
        }
    }
}

/// The running proxy. It serves until dropped or shut down.
pub struct NetworkProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl NetworkProxy {
    /// Binds `127.0.0.1` on a free port and starts serving on the current tokio runtime.
    pub fn start(list: AllowList) -> io::Result<NetworkProxy> {
        NetworkProxy::start_with(list, Resolver::System, Limits::default())
    }

    pub(crate) fn start_with(
        list: AllowList,
        resolver: Resolver,
        limits: Limits,
    ) -> io::Result<NetworkProxy> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("the network proxy needs a tokio runtime to run on"))?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared::new(list, resolver, limits));
        let task = runtime.spawn(server::serve(listener, shared.clone()));
        Ok(NetworkProxy { addr, shared, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The number the next refusal will get: take it before a command starts, then pass it
    /// to [`NetworkProxy::blocked_since`] when the command ends.
    pub fn position(&self) -> u64 {
        self.shared.log.position()
    }

    /// The refusals since `position` that the ring still holds, oldest first.
    pub fn blocked_since(&self, position: u64) -> Vec<Blocked> {
        self.shared.log.since(position)
    }

    /// Stops serving and waits until the listener and every connection are closed.
    pub async fn shutdown(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }

    /// Connection slots in use (served, not waiting).
    #[cfg(test)]
    pub(crate) fn busy_slots(&self) -> usize {
        self.shared.limits.max_connections - self.shared.slots.available_permits()
    }
}

impl Drop for NetworkProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for NetworkProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkProxy")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// The environment that sends a command's clients through the proxy at `addr`.
///
/// curl, git, wget, Python, Ruby, Go and Rust clients read the `*_proxy` family (curl and
/// wget only the lower-case `http_proxy`); Node's own `fetch` and `http` read them only with
/// `NODE_USE_ENV_PROXY=1` (Node 24 and later); npm and yarn 1 read `npm_config_*`, yarn 2 and
/// later `YARN_HTTP(S)_PROXY`; pip `PIP_PROXY`; cargo `CARGO_HTTP_PROXY`, which also wins over
/// a project's `.cargo/config.toml`. `NO_PROXY` is emptied so loopback goes through the
/// proxy and its rules too. `YARN_NO_PROXY` is not set: yarn 2 rejects it as unknown.
pub fn proxy_env(addr: SocketAddr) -> Vec<(String, String)> {
    let url = format!("http://{addr}");
    let proxied = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
    ];
    let mut env: Vec<(String, String)> = proxied
        .iter()
        .map(|name| (name.to_string(), url.clone()))
        .collect();
    env.extend([
        ("NO_PROXY".to_owned(), String::new()),
        ("no_proxy".to_owned(), String::new()),
        ("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()),
    ]);
    env
}
