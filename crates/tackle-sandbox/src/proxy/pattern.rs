//! Host patterns of the network allow-list and deny list, and the name-level decision.

use std::net::IpAddr;

use super::{BlockReason, Host};

/// The allow-list and deny list the proxy enforces, parsed once.
#[derive(Clone, Debug, Default)]
pub struct AllowList {
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
}

/// A pattern of `sandbox.network.allow` or `sandbox.network.deny` that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` in `sandbox.network.{list}` is not a host pattern: {problem}")]
pub struct PatternError {
    /// `allow` or `deny`.
    pub list: &'static str,
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it, and how to write it instead.
    pub problem: PatternProblem,
}

/// What is wrong with a host pattern; each message says how to write it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternProblem {
    #[error("it is empty. Remove it, or write a host such as `example.com`.")]
    Empty,
    #[error(
        "a pattern is a host, not a URL. Write `{suggestion}` (add `:PORT` to allow one port only)."
    )]
    Url { suggestion: String },
    #[error(
        "it has an empty label (two dots in a row, or a leading dot). Write it like `example.com` or `*.example.com`."
    )]
    EmptyLabel,
    #[error(
        "`*` may only stand alone as the first label, as in `*.example.com` (any subdomain of example.com). To allow every host, set the network to \"on\" instead."
    )]
    Wildcard,
    #[error(
        "`{0}` cannot appear in a host name. Use letters, digits, `-` and `.`, as in `registry.npmjs.org`."
    )]
    Character(char),
    #[error(
        "the port `{0}` is not a number from 1 to 65,535. Write `host:443`, or leave the port out to allow every port."
    )]
    Port(String),
    #[error("an IPv6 address needs brackets, as in `[::1]`, or `[::1]:3000` for one port.")]
    Ipv6Brackets,
    #[error(
        "a wildcard needs a domain name after `*.`, not an IP address. List each address, as in `10.0.0.5:8080`."
    )]
    WildcardIp,
    #[error("it is longer than 253 characters, the limit of a host name.")]
    TooLong,
}

/// One parsed pattern.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    host: HostPattern,
    port: Option<u16>,
    text: String,
}

#[derive(Clone, Debug)]
enum HostPattern {
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// Exactly this address (canonical: IPv4-mapped IPv6 compares as IPv4).
    Ip(IpAddr),
    /// Any name strictly below this suffix, at any depth; not the suffix itself.
    Subdomains(String),
}

/// The name-level answer: refused, or allowed (and whether a pattern names the host exactly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NameDecision {
    Allowed { explicit: bool },
    Refused(BlockReason),
}

impl AllowList {
    /// Parses the allow and deny patterns; the first bad pattern is the error.
    pub fn parse(allow: &[String], deny: &[String]) -> Result<AllowList, PatternError> {
        let parse_all = |list: &'static str, patterns: &[String]| {
            patterns
                .iter()
                .map(|text| {
                    Pattern::parse(text).map_err(|problem| PatternError {
                        list,
                        pattern: text.clone(),
                        problem,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(AllowList {
            allow: parse_all("allow", allow)?,
            deny: parse_all("deny", deny)?,
        })
    }

    /// Deny wins over allow; a host no allow pattern matches is refused.
    pub(crate) fn decide(&self, host: &Host, port: u16) -> NameDecision {
        if let Some(denied) = self.deny.iter().find(|p| p.matches(host, port)) {
            return NameDecision::Refused(BlockReason::Denied {
                pattern: denied.text.clone(),
            });
        }
        let mut matching = self
            .allow
            .iter()
            .filter(|p| p.matches(host, port))
            .peekable();
        if matching.peek().is_none() {
            return NameDecision::Refused(BlockReason::NotAllowed);
        }
        let explicit = matching.any(|p| !matches!(p.host, HostPattern::Subdomains(_)));
        NameDecision::Allowed { explicit }
    }

    /// The deny pattern naming this resolved address, if any.
    pub(crate) fn denied_address(&self, ip: IpAddr, port: u16) -> Option<&str> {
        let host = Host::Ip(ip.to_canonical());
        self.deny
            .iter()
            .find(|p| matches!(p.host, HostPattern::Ip(_)) && p.matches(&host, port))
            .map(|p| p.text.as_str())
    }
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, PatternProblem> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(PatternProblem::Empty);
        }
        if trimmed.contains("://") || trimmed.contains('/') || trimmed.contains('@') {
            return Err(PatternProblem::Url {
                suggestion: url_suggestion(trimmed),
            });
        }
        let (host, port) = split_host_port(trimmed)?;
        let port = port
            .map(|p| parse_port(p).ok_or_else(|| PatternProblem::Port(p.to_owned())))
            .transpose()?;
        let host = host_pattern(host)?;
        Ok(Pattern {
            host,
            port,
            text: trimmed.to_owned(),
        })
    }

    fn matches(&self, host: &Host, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.host, host) {
            (HostPattern::Name(name), Host::Name(target)) => name == target,
            (HostPattern::Ip(ip), Host::Ip(target)) => *ip == target.to_canonical(),
            (HostPattern::Subdomains(suffix), Host::Name(target)) => target
                .strip_suffix(suffix.as_str())
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty()),
            _ => false,
        }
    }
}

/// Splits `host`, `host:port`, `[v6]` or `[v6]:port`. A bare IPv6 address is refused: in
/// `::1:3000` the port cannot be told from the address.
pub(crate) fn split_host_port(text: &str) -> Result<(&str, Option<&str>), PatternProblem> {
    if let Some(rest) = text.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err(PatternProblem::Ipv6Brackets);
        };
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((inside, Some(port))),
                None => Err(PatternProblem::Ipv6Brackets),
            },
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, port) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, Some(port)))
        }
        _ => Err(PatternProblem::Ipv6Brackets),
    }
}

pub(crate) fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|&p| p != 0)
}

fn host_pattern(host: &str) -> Result<HostPattern, PatternProblem> {
    if let Some(suffix) = host.strip_prefix("*.") {
        return match parse_host(suffix)? {
            Host::Name(name) => Ok(HostPattern::Subdomains(name)),
            Host::Ip(_) => Err(PatternProblem::WildcardIp),
        };
    }
    Ok(match parse_host(host)? {
        Host::Name(name) => HostPattern::Name(name),
        Host::Ip(ip) => HostPattern::Ip(ip.to_canonical()),
    })
}

/// Normalizes a host as written in a pattern or a request: lower case, one trailing dot
/// dropped, an IP literal parsed. Brackets are already removed.
pub(crate) fn parse_host(host: &str) -> Result<Host, PatternProblem> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if name.is_empty() {
        return Err(PatternProblem::Empty);
    }
    if name.len() > 253 {
        return Err(PatternProblem::TooLong);
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '*')))
    {
        return Err(PatternProblem::Character(bad));
    }
    if name.contains('*') {
        return Err(PatternProblem::Wildcard);
    }
    if name.split('.').any(str::is_empty) {
        return Err(PatternProblem::EmptyLabel);
    }
    Ok(Host::Name(name))
}

/// The host of something written as a URL, for the error's suggestion.
fn url_suggestion(text: &str) -> String {
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host.is_empty() {
        "example.com".to_owned()
    } else {
        host.to_ascii_lowercase()
    }
}
