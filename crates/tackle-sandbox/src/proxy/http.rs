//! The proxy's HTTP/1 surface: finding and parsing a request head, rewriting a forwarded one,
//! and the proxy's own short answers.

use super::Host;
use super::pattern::{parse_host, parse_port, split_host_port};

/// The most headers a request head may have.
const MAX_HEADERS: usize = 128;

/// What a client asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `CONNECT host:port`: a byte tunnel.
    Connect { host: Host, port: u16 },
    /// An absolute-form `http://` request; `head` is it rewritten for the origin.
    Forward {
        host: Host,
        port: u16,
        head: Vec<u8>,
    },
}

/// An answer the proxy gives itself, then closes the connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) message: String,
    /// Marks a sandbox refusal (header `X-Tackle-Sandbox: blocked`).
    pub(crate) blocked: bool,
}

impl Answer {
    pub(crate) fn new(status: u16, message: impl Into<String>) -> Answer {
        Answer {
            status,
            message: message.into(),
            blocked: false,
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Answer {
        Answer::new(400, message)
    }

    /// The whole response: status line, headers, and the message as a one-line body.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let body = format!("{}\n", self.message);
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.status,
            reason_phrase(self.status),
            body.len()
        );
        if self.blocked {
            out.push_str("X-Tackle-Sandbox: blocked\r\n");
        }
        out.push_str("\r\n");
        out.push_str(&body);
        out.into_bytes()
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "Connection Established",
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

/// The length of the head (through its blank line) if `buf` holds a whole one. `searched` is
/// how many bytes an earlier call already looked at, so each byte is looked at about once.
pub(crate) fn head_length(buf: &[u8], searched: usize) -> Option<usize> {
    let start = searched.saturating_sub(3);
    let mut at = start;
    while let Some(offset) = buf[at..].iter().position(|&b| b == b'\n') {
        let newline = at + offset;
        let rest = &buf[newline + 1..];
        if rest.starts_with(b"\n") {
            return Some(newline + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(newline + 3);
        }
        at = newline + 1;
    }
    None
}

/// Parses a whole request head.
pub(crate) fn parse_request(head: &[u8]) -> Result<Request, Answer> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(Answer::bad_request(
                "tackle sandbox proxy: the request head ended early; send a complete HTTP/1.1 request.",
            ));
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Answer::new(
                431,
                format!("tackle sandbox proxy: the request has more than {MAX_HEADERS} headers."),
            ));
        }
        Err(error) => {
            return Err(Answer::bad_request(format!(
                "tackle sandbox proxy: the request could not be parsed ({error}); send an HTTP/1.1 request."
            )));
        }
    }
    let (Some(method), Some(target), Some(version)) =
        (request.method, request.path, request.version)
    else {
        return Err(Answer::bad_request(
            "tackle sandbox proxy: the request line is incomplete.",
        ));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Request::Connect { host, port });
    }
    let Some(rest) = strip_prefix_ignore_case(target, "http://") else {
        return Err(Answer::bad_request(
            if strip_prefix_ignore_case(target, "https://").is_some() {
                "tackle sandbox proxy: an https:// URL goes through CONNECT; set HTTPS_PROXY to this proxy and the client will use it.".to_owned()
            } else {
                format!(
                    "tackle sandbox proxy: `{method} {target}` is not a proxy request; send the absolute URL (`{method} http://host/path`), or CONNECT for HTTPS."
                )
            },
        ));
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority_text, path) = rest.split_at(split);
    let path = path.split('#').next().unwrap_or("");
    let (host, port) = authority(authority_text, Some(80))?;
    let mut head = Vec::with_capacity(head.len() + 32);
    head.extend_from_slice(method.as_bytes());
    head.push(b' ');
    if !path.starts_with('/') {
        head.push(b'/');
    }
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(format!(" HTTP/1.{version}\r\nHost: {authority_text}\r\n").as_bytes());
    let named_by_connection: Vec<&[u8]> = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .flat_map(|h| h.value.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .collect();
    for header in request.headers.iter() {
        let hop_by_hop = HOP_BY_HOP
            .iter()
            .any(|name| header.name.eq_ignore_ascii_case(name))
            || named_by_connection
                .iter()
                .any(|name| name.eq_ignore_ascii_case(header.name.as_bytes()));
        if !hop_by_hop {
            head.extend_from_slice(header.name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(header.value);
            head.extend_from_slice(b"\r\n");
        }
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request::Forward { host, port, head })
}

/// Headers that belong to one connection, and `Host`, which the proxy writes from the URL.
const HOP_BY_HOP: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "upgrade",
];

/// `host:port` (or `host` with a default port) of a request target.
fn authority(text: &str, default_port: Option<u16>) -> Result<(Host, u16), Answer> {
    let bad = |why: &str| {
        Answer::bad_request(format!(
            "tackle sandbox proxy: `{text}` is not a valid target: {why}"
        ))
    };
    if text.contains('@') {
        return Err(bad("user information is not supported; write `host:port`."));
    }
    let (host, port) = split_host_port(text).map_err(|problem| bad(&problem.to_string()))?;
    let port = match (port, default_port) {
        (Some(port), _) => {
            parse_port(port).ok_or_else(|| bad("the port is not a number from 1 to 65,535."))?
        }
        (None, Some(default)) => default,
        (None, None) => return Err(bad("CONNECT needs `host:port`.")),
    };
    let host = parse_host(host).map_err(|problem| bad(&problem.to_string()))?;
    Ok((host, port))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}
