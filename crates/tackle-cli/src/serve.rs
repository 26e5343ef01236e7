//! `tackle serve`: the MCP server over stdio or streamable HTTP, and the logging that keeps
//! stdout clean for the stdio protocol.

use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::{Context as _, bail};
use tackle_mcp::{BearerToken, HttpOptions, TackleServer};
use tracing_subscriber::filter::LevelFilter;

/// The variable that sets the log filter (`tracing` directives such as `debug` or
/// `tackle_mcp=debug,warn`).
const LOG_ENV: &str = "TACKLE_LOG";

/// Sends `tracing` output to `file` (appended) or else to stderr, never to stdout. Without
/// [`LOG_ENV`] the level is `error` on stderr (the command prints its own warnings) and `info`
/// in a file. ANSI colours are used only when stderr is a terminal.
pub(crate) fn init_logging(file: Option<&Path>) -> anyhow::Result<()> {
    let default = if file.is_some() {
        LevelFilter::INFO
    } else {
        LevelFilter::ERROR
    };
    // Without the variable, a plain level: an `EnvFilter` costs a one-shot call its parsing.
    match std::env::var_os(LOG_ENV) {
        Some(_) => install_logging(
            tracing_subscriber::EnvFilter::try_from_env(LOG_ENV)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default.to_string())),
            file,
        ),
        None => install_logging(default, file),
    }
}

/// Installs the subscriber that writes what `filter` lets through to `file`, else to stderr.
fn install_logging<F>(filter: F, file: Option<&Path>) -> anyhow::Result<()>
where
    F: tracing_subscriber::layer::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let registry = tracing_subscriber::registry().with(filter);
    // `try_init` fails only when a subscriber is set already (a test embedding the CLI): fine.
    let _ = match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))?;
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_ansi(false)
                        .with_writer(std::sync::Mutex::new(file)),
                )
                .try_init()
        }
        // Colour codes only for a person at a terminal, never into a pipe or a host's log.
        None => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    Ok(())
}

/// Serves `server` over streamable HTTP on `address` until Ctrl-C (or SIGTERM), then shuts down.
pub(crate) async fn serve_http(
    address: SocketAddr,
    server: TackleServer,
    options: HttpOptions,
) -> anyhow::Result<()> {
    let token = options.requires_token();
    let serving = tackle_mcp::serve_http(address, server, options)
        .await
        .with_context(|| {
            if token || address.ip().is_loopback() {
                String::from("cannot serve over HTTP")
            } else {
                format!(
                    "cannot serve over HTTP: give a token with --token-file FILE or {TOKEN_ENV}"
                )
            }
        })?;
    let bound = serving.local_addr();
    eprintln!("tackle: serving MCP over streamable HTTP at http://{bound}/mcp");
    if token {
        eprintln!("tackle: every request must carry the token as `Authorization: Bearer <token>`");
    }
    if !bound.ip().is_loopback() {
        eprintln!(
            "tackle: {} is not a loopback address: anyone who can reach it and has the token can \
             call the tools",
            bound.ip()
        );
    }
    // Dropping the serving future on a signal stops the server and ends every session.
    tokio::select! {
        () = stop_signal() => Ok(()),
        result = serving.waiting() => result.map_err(Into::into),
    }
}

/// The variable that holds the bearer token when no `--token-file` is given.
const TOKEN_ENV: &str = "TACKLE_SERVE_TOKEN";

/// The most bytes read from a token file.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The HTTP server's options: the allowed origins, and the token from `token_file` or else
/// [`TOKEN_ENV`]. A token file others can read is used, with a warning.
pub(crate) fn http_options(
    allow_origin: &[String],
    token_file: Option<&Path>,
) -> anyhow::Result<HttpOptions> {
    let mut options = HttpOptions::default();
    for origin in allow_origin {
        options = options.allow_origin(origin)?;
    }
    let secret = match token_file {
        Some(path) => Some(read_token_file(path)?),
        None => std::env::var(TOKEN_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty()),
    };
    if let Some(secret) = secret {
        let source = match token_file {
            Some(path) => format!("the token in {}", path.display()),
            None => format!("the token in {TOKEN_ENV}"),
        };
        let token =
            BearerToken::new(secret.trim()).with_context(|| format!("{source} is unusable"))?;
        options = options.with_token(token);
    }
    Ok(options)
}

/// The token in `path`, trimmed, read with a bound.
fn read_token_file(path: &Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    #[cfg(unix)]
    if let Ok(meta) = file.metadata() {
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "tackle: warning: the token file {} can be read by other users (chmod 600 it)",
                path.display()
            );
        }
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read the token file {} as text", path.display()))?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        bail!(
            "the token file {} is larger than {MAX_TOKEN_FILE_BYTES} bytes: it should hold only the token",
            path.display()
        );
    }
    if text.trim().is_empty() {
        bail!("the token file {} is empty", path.display());
    }
    Ok(text.trim().to_owned())
}

/// Ctrl-C, or SIGTERM on Unix.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The address `--http` names: `HOST:PORT`, `:PORT` or `PORT` (both on 127.0.0.1), with
/// `localhost` read as 127.0.0.1. A host name other than `localhost` is refused: binding is
/// explicit about which interface is exposed.
pub(crate) fn http_address(text: &str) -> anyhow::Result<SocketAddr> {
    let text = text.trim();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(loopback, port));
    }
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        let port = port
            .parse::<u16>()
            .with_context(|| format!("`{port}` is not a port number"))?;
        return Ok(SocketAddr::new(loopback, port));
    }
    bail!(
        "cannot read `{text}` as an address: give PORT, :PORT, localhost:PORT or IP:PORT \
         (for example 127.0.0.1:8765)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_alone_bind_loopback_and_ips_are_taken_as_given() {
        let loopback = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        assert_eq!(http_address("8765").unwrap(), loopback(8765));
        assert_eq!(http_address(":8765").unwrap(), loopback(8765));
        assert_eq!(http_address("localhost:9").unwrap(), loopback(9));
        assert_eq!(
            http_address("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            http_address("[::1]:7").unwrap(),
            "[::1]:7".parse::<SocketAddr>().unwrap()
        );
    }

    #[test]
    fn unreadable_addresses_say_what_is_accepted() {
        let error = http_address("example.com:80").unwrap_err().to_string();
        assert!(
            error.contains("PORT, :PORT, localhost:PORT or IP:PORT"),
            "{error}"
        );
        let error = http_address("localhost:http").unwrap_err().to_string();
        assert!(error.contains("not a port number"), "{error}");
        assert!(http_address("70000").is_err());
    }

    #[test]
    fn unusable_token_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let cases = [
            (write("empty", "\n"), "is empty"),
            (write("short", "abc\n"), "at least 16"),
            (write("big", &"a".repeat(5000)), "larger than 4096 bytes"),
            (dir.path().join("missing"), "cannot read the token file"),
        ];
        for (path, expected) in cases {
            let error = format!("{:#}", http_options(&[], Some(&path)).unwrap_err());
            assert!(error.contains(expected), "{error}");
        }
        let good = write("good", "0123456789abcdef0123\n");
        assert!(http_options(&[], Some(&good)).unwrap().requires_token());
        let error = format!("{:#}", http_options(&["nope".into()], None).unwrap_err());
        assert!(error.contains("cannot read `nope` as an origin"), "{error}");
    }
}
