//! What `serve_http` checks before rmcp sees a request (the `Origin` header and the bearer
//! token), and how it keeps connections from lingering (a header read timeout, an idle
//! timeout, a cap on open connections).

use std::fmt;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::HeaderMap;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::server::ServeError;

/// How long a client may take to send a request's headers; also how long a kept-alive
/// connection may wait for its next request.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may go without a byte read or written. Open event streams carry a
/// keep-alive every 15 seconds, so only a stalled client reaches it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most connections served at once; more wait in the listen queue.
pub const MAX_CONNECTIONS: usize = 512;

/// A bearer token that every request must carry (`Authorization: Bearer <token>`).
///
/// Only its blake3 hash is kept, and a presented token is hashed and compared in constant
/// time. It is never printed: `Debug` shows nothing of it.
#[derive(Clone)]
pub struct BearerToken {
    hash: blake3::Hash,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// The token `secret`: printable ASCII without spaces (it travels in a header), at least
    /// 16 characters.
    pub fn new(secret: &str) -> Result<Self, ServeError> {
        if secret.len() < 16 || !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ServeError::new(
                "a bearer token must be at least 16 printable ASCII characters with no spaces \
                 (for example the output of `openssl rand -hex 32`)",
            ));
        }
        Ok(Self {
            hash: blake3::hash(secret.as_bytes()),
        })
    }

    /// True when `headers` carry this token.
    fn accepts(&self, headers: &HeaderMap) -> bool {
        let presented = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        // `blake3::Hash` compares in constant time.
        presented.is_some_and(|token| blake3::hash(token.as_bytes()) == self.hash)
    }
}

/// What [`serve_http`](crate::serve_http) accepts: which browser origins, whether a token is
/// required, and its timeouts.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    origins: Vec<Origin>,
    token: Option<BearerToken>,
    header_read_timeout: Duration,
    idle_timeout: Duration,
}

impl Default for HttpOptions {
    /// Loopback origins only, no token, [`HEADER_READ_TIMEOUT`] and [`IDLE_TIMEOUT`].
    fn default() -> Self {
        Self {
            origins: Vec::new(),
            token: None,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl HttpOptions {
    /// Also accepts requests from the browser origin `origin`: `scheme://host`, with `:port`
    /// for one port or `:*` for any (without one, the scheme's default port).
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, ServeError> {
        let parsed = Origin::parse(origin.trim().trim_end_matches('/'), true).ok_or_else(|| {
            ServeError::new(format!(
                "cannot read `{origin}` as an origin: give scheme://host, scheme://host:port \
                 or scheme://host:* (for example https://app.example.com)"
            ))
        })?;
        self.origins.push(parsed);
        Ok(self)
    }

    /// Requires `token` on every request.
    pub fn with_token(mut self, token: BearerToken) -> Self {
        self.token = Some(token);
        self
    }

    /// Whether a token is required.
    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }

    /// Replaces the header read and idle timeouts.
    pub fn with_timeouts(mut self, header_read: Duration, idle: Duration) -> Self {
        self.header_read_timeout = header_read;
        self.idle_timeout = idle;
        self
    }

    pub(super) fn header_read_timeout(&self) -> Duration {
        self.header_read_timeout
    }

    pub(super) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The answer to a request that may not reach the server: 403 for a browser origin that
    /// is not allowed (against DNS rebinding), 401 for a missing or wrong token.
    pub(super) fn refusal(
        &self,
        headers: &HeaderMap,
    ) -> Option<http::Response<BoxBody<Bytes, std::convert::Infallible>>> {
        if let Some(origin) = headers.get(http::header::ORIGIN) {
            let allowed = origin
                .to_str()
                .ok()
                .and_then(|text| Origin::parse(text, false))
                .is_some_and(|origin| {
                    origin.is_loopback() || self.origins.iter().any(|a| a.admits(&origin))
                });
            if !allowed {
                tracing::warn!(
                    ?origin,
                    "refused a request from a browser origin not allowed"
                );
                return Some(refuse(
                    http::StatusCode::FORBIDDEN,
                    "Forbidden: this Origin is not allowed. Only loopback origins are, unless \
                     the server is started with --allow-origin.\n",
                ));
            }
        }
        if let Some(token) = &self.token
            && !token.accepts(headers)
        {
            let mut response = refuse(
                http::StatusCode::UNAUTHORIZED,
                "Unauthorized: send the server's token as `Authorization: Bearer <token>`.\n",
            );
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return Some(response);
        }
        None
    }
}

/// A plain-text refusal.
fn refuse(
    status: http::StatusCode,
    text: &'static str,
) -> http::Response<BoxBody<Bytes, std::convert::Infallible>> {
    let mut response = http::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A browser origin, by RFC 6454's (scheme, host, port), the port made explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    /// `None` for any port (`:*`, only in an allowed origin).
    port: Option<u16>,
}

impl Origin {
    /// Parses `scheme://host[:port]` or, when `allowed` (an origin to allow, not one a request
    /// names), `scheme://host:*`.
    fn parse(text: &str, allowed: bool) -> Option<Self> {
        let (text, any_port) = match text.strip_suffix(":*") {
            Some(base) if allowed => (base, true),
            _ => (text, false),
        };
        let uri = http::Uri::try_from(text).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if uri.path() != "/" && !uri.path().is_empty() || uri.query().is_some() {
            return None;
        }
        if authority.as_str().contains('@') || (any_port && authority.port().is_some()) {
            return None;
        }
        let default = match scheme.as_str() {
            "https" => Some(443),
            "http" => Some(80),
            _ => None,
        };
        let port = if any_port {
            None
        } else {
            Some(authority.port_u16().or(default)?)
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        Some(Self { scheme, host, port })
    }

    /// True when this allowed origin admits the request's `origin`.
    fn admits(&self, origin: &Origin) -> bool {
        self.scheme == origin.scheme
            && self.host == origin.host
            && (self.port.is_none() || self.port == origin.port)
    }

    /// True for a page served from this machine: `localhost` or a loopback address.
    fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self.host.ends_with(".localhost")
            || self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// When a connection last moved a byte, in milliseconds since it opened.
pub(super) struct Activity {
    opened: Instant,
    last: AtomicU64,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            opened: Instant::now(),
            last: AtomicU64::new(0),
        })
    }

    fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    /// Resolves once no byte has moved for `limit`.
    pub(super) async fn idle_for(&self, limit: Duration) {
        loop {
            let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
            let quiet = self.opened.elapsed().saturating_sub(last);
            if quiet >= limit {
                return;
            }
            tokio::time::sleep(limit - quiet).await;
        }
    }
}

/// A connection's stream that records its activity.
pub(super) struct Watched<T> {
    pub(super) io: T,
    pub(super) activity: Arc<Activity>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn status(options: &HttpOptions, pairs: &[(&'static str, &str)]) -> u16 {
        options
            .refusal(&headers(pairs))
            .map_or(200, |r| r.status().as_u16())
    }

    #[test]
    fn origins_are_loopback_or_allowed() {
        let options = HttpOptions::default()
            .allow_origin("https://app.example.com")
            .unwrap()
            .allow_origin("http://dev.example.com:*")
            .unwrap();
        let rows = [
            (None, 200),
            (Some("http://localhost:3000"), 200),
            (Some("http://127.0.0.1"), 200),
            (Some("http://[::1]:8080"), 200),
            (Some("https://app.localhost"), 200),
            (Some("https://app.example.com"), 200),
            (Some("https://app.example.com:443"), 200),
            (Some("https://app.example.com:8443"), 403),
            (Some("http://app.example.com"), 403),
            (Some("http://dev.example.com:9000"), 200),
            (Some("http://dev.example.com"), 200),
            (Some("http://app.example.com:*"), 403),
            (Some("http://evil.example"), 403),
            (Some("http://localhost.evil.example"), 403),
            (Some("http://127.0.0.1.nip.io"), 403),
            (Some("null"), 403),
            (Some("garbage"), 403),
        ];
        for (origin, want) in rows {
            let got = match origin {
                Some(origin) => status(&options, &[("origin", origin)]),
                None => status(&options, &[]),
            };
            assert_eq!(got, want, "{origin:?}");
        }
    }

    #[test]
    fn unreadable_allowed_origins_are_refused() {
        for bad in [
            "app.example.com",
            "https://a.example/path",
            "https://u@a.example",
        ] {
            assert!(HttpOptions::default().allow_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_is_required_exactly() {
        let token = "0123456789abcdef0123";
        let options = HttpOptions::default().with_token(BearerToken::new(token).unwrap());
        assert_eq!(status(&options, &[]), 401);
        assert_eq!(
            status(
                &options,
                &[("authorization", "Bearer 0123456789abcdef0124")]
            ),
            401
        );
        assert_eq!(status(&options, &[("authorization", token)]), 401);
        assert_eq!(
            status(&options, &[("authorization", &format!("Bearer {token}"))]),
            200
        );
        assert_eq!(
            status(&options, &[("authorization", &format!("bearer {token}"))]),
            200
        );
        // A bad origin is refused before the token is looked at.
        let both = [
            ("authorization", &*format!("Bearer {token}")),
            ("origin", "http://evil.example"),
        ];
        assert_eq!(status(&options, &both), 403);
        assert!(!format!("{options:?}").contains(token));
    }

    #[test]
    fn short_or_spaced_tokens_are_refused() {
        assert!(BearerToken::new("short").is_err());
        assert!(BearerToken::new("has a space in it, long enough").is_err());
        assert!(BearerToken::new("0123456789abcdef").is_ok());
    }
}
