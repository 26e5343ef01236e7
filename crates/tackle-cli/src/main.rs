//! The `tackle` command: settle one tool call, list the advertised tools, or serve them over MCP.
//!
//! This is the only place in the workspace that parses argv and uses `anyhow`. Exit codes:
//! 0 for success, 1 for a result the model would see as an error, 2 for an operational error.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand};
use tackle_core::{CallIdentity, CancellationToken, Context};
use tackle_registry::ToolCall;

mod approve;
mod render;
mod serve;
mod serve_trust;
mod trust;

use tackle_host::config;
use tackle_host::{Approvals, Host, HostBuilder, JournalOpening, TurnSpec};

/// The version and the commit the binary was built from (`-modified` when the work tree had
/// uncommitted changes).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("TACKLE_GIT_COMMIT"),
    ")"
);

/// Exit code for a model-visible error result.
const EXIT_MODEL_ERROR: u8 = 1;
/// Exit code for an operational error.
const EXIT_OPERATIONAL: u8 = 2;

/// Settle tool calls through tackle's registry, permissions and journal.
#[derive(Debug, Parser)]
#[command(name = "tackle", version = VERSION, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Flags every subcommand accepts, before or after it.
#[derive(Debug, Args)]
struct Global {
    /// The workspace root (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The agent whose permissions apply.
    #[arg(long, global = true, value_name = "NAME", default_value = "build")]
    agent: String,
    /// The session ID; read tracking is kept per session across runs (default: `cli`; `serve`
    /// gives each connection a fresh session unless this is set).
    #[arg(long, global = true, value_name = "ID")]
    session: Option<String>,
    /// Where the journal and managed outputs live (default: $TACKLE_DATA_DIR, else the
    /// platform data directory joined with `tackle`).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A configuration file read after the user's and the project's (`.tackle/config.json`
    /// format, or a bare permission value).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The model the turns are for, as PROVIDER/MODEL (such as `openai/gpt-5.1`): it picks the
    /// model's tool set and leaves out tools for other providers (default: $TACKLE_MODEL, else
    /// none, which offers every tool).
    #[arg(long, global = true, value_name = "PROVIDER/MODEL", value_parser = config::Model::parse)]
    model: Option<config::Model>,
    /// Append logs to FILE instead of stderr; stdout never gets logs. The level comes from
    /// $TACKLE_LOG (`tracing` directives such as `debug` or `tackle_mcp=debug`; default `error`,
    /// or `info` with a log file).
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

/// A front end whose tool list `tackle tools` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum FrontEnd {
    /// `tackle call`: one call per process, so no background-job tools.
    Call,
    /// `tackle serve`: a long-lived server, with the background-job tools.
    Serve,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Settle one call and print what the model would see.
    Call {
        /// The tool name.
        name: String,
        /// The arguments as JSON; `-` reads them from stdin; absent means `{}`.
        args: Option<String>,
        /// Print the whole settlement as JSON instead.
        #[arg(long)]
        json: bool,
        /// Approve every permission question once.
        #[arg(long)]
        yes: bool,
        /// Read the arguments as PROVIDER's API sends them (openai: `null` for an optional field
        /// means the field is absent). A tool the provider cannot express is unknown.
        #[arg(long, value_name = "PROVIDER")]
        provider: Option<tackle_core::Provider>,
        /// The assistant message the call belongs to (default: a fresh one per run). Calls of
        /// one message share a doom-loop streak: the third identical call in a row asks first.
        #[arg(long, value_name = "ID")]
        message: Option<String>,
    },
    /// Serve the agent's tools to an MCP client over stdin and stdout, or over streamable HTTP.
    Serve {
        /// Approve every permission question the client cannot be asked (by elicitation) once;
        /// without it, such questions are refused.
        #[arg(long)]
        yes: bool,
        /// Serve streamable HTTP on ADDR instead of stdio: PORT or :PORT (on 127.0.0.1),
        /// localhost:PORT, or IP:PORT to choose the interface (not loopback: a token is needed).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// With --http, also accept requests from this browser origin (scheme://host,
        /// scheme://host:port or scheme://host:*); loopback origins always are. Repeatable.
        #[arg(long, value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// With --http, require the bearer token in FILE on every request (otherwise the one in
        /// TACKLE_SERVE_TOKEN, if set). The token is never printed.
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
    },
    /// List the tools the agent is offered.
    Tools {
        /// Print a JSON array of `{name, description, inputSchema}`.
        #[arg(long)]
        json: bool,
        /// Print the tools as one provider's tool definitions: openai, anthropic, gemini or mcp.
        /// A tool the provider cannot express is reported on stderr and left out.
        #[arg(long, value_name = "PROVIDER", conflicts_with = "json")]
        provider: Option<tackle_core::Provider>,
        /// Whose tools: `call` (default: exactly what `tackle call` accepts) or `serve` (what
        /// `tackle serve` offers its clients, with the background-job tools).
        #[arg(long = "for", value_name = "FRONT_END", default_value = "call")]
        front_end: FrontEnd,
    },
    /// Work with the configuration files.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Revert what calls changed (recorded when snapshots are on: `serve`, embedders, or
    /// `"snapshot": true`): the last N changes of a session, one call's, or one message's. All
    /// or nothing: if a path changed since, nothing is done unless --force. Without --session,
    /// the session of the Location's most recent change. An undo can itself be undone.
    Undo {
        /// The provider call ID whose change to revert (see `tackle history`).
        #[arg(long, conflicts_with_all = ["message", "last", "since"])]
        call: Option<String>,
        /// Revert this call's change and every later one of the session.
        #[arg(long, conflicts_with_all = ["message", "last"])]
        since: Option<String>,
        /// The assistant message whose changes to revert.
        #[arg(long, conflicts_with = "last")]
        message: Option<String>,
        /// Revert the last N changes (default 1).
        #[arg(long)]
        last: Option<usize>,
        /// Print the per-file plan without changing anything.
        #[arg(long)]
        dry_run: bool,
        /// Overwrite paths that changed since the reverted changes (the same target again).
        #[arg(long)]
        force: bool,
    },
    /// List the Location's recent changes across sessions, newest first, with each path's
    /// diffstat; with --session, that session's changes, oldest first.
    History {
        /// How many changes to list without --session.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// List the sessions that changed this Location, the most recent first.
    Sessions,
    /// Show what trusting this project's configuration enables (its hooks, custom tools, MCP
    /// servers, language server and formatter commands, shell, allow rules) and record the
    /// trust in the data directory. A change to the configuration asks again.
    Trust,
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Read and validate every configuration file that applies; exit 1 when one is invalid.
    Check {
        /// Print `{ok, files, errors, mcp, models, overrides, lsp, formatters, hooks, trust}` as
        /// JSON; `trust.ignored` lists the project's settings that are ignored, and why.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the configuration file (point `"$schema"` or an editor at it).
    Schema,
}

fn main() -> ExitCode {
    let mut cli = Cli::try_parse().unwrap_or_else(|error| error.exit());
    // Resolved once; every command below reads it from here.
    cli.global.data_dir = cli
        .global
        .data_dir
        .take()
        .or_else(tackle_host::default_data_dir);
    // A one-shot call: the host finds its journal open.
    let journal = match &cli.command {
        Command::Call { .. } => cli.global.data_dir.as_deref().map(JournalOpening::start),
        _ => None,
    };
    if let Err(error) = serve::init_logging(cli.global.log_file.as_deref()) {
        return operational(error);
    }
    let root = match cli.global.root.take() {
        Some(root) => root,
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(error) => {
                return operational(
                    anyhow::Error::new(error).context("cannot read the current directory"),
                );
            }
        },
    };
    let trust = trust::store(cli.global.data_dir.as_deref());
    if let Command::Trust = &cli.command {
        return trust::trust_command(&root, cli.global.config.as_deref(), &trust)
            .unwrap_or_else(operational);
    }
    if let Command::Config { action } = &cli.command {
        let done = match action {
            ConfigAction::Check { json } => config_check(
                &root,
                cli.global.config.as_deref(),
                cli.global.data_dir.as_deref(),
                &trust,
                *json,
            ),
            ConfigAction::Schema => serde_json::to_string_pretty(&config::schema())
                .map_err(Into::into)
                .and_then(|text| print_stdout(&text))
                .map(|()| ExitCode::SUCCESS),
        };
        return done.unwrap_or_else(operational);
    }
    let config = match config::load(&root, cli.global.config.as_deref(), &trust) {
        Ok(config) => config,
        Err(problems) => {
            return operational(anyhow::Error::new(problems).context("invalid configuration"));
        }
    };
    // An interactive call asks once whether to trust the project's configuration.
    let config = match &cli.command {
        Command::Call { args, .. }
            if args.as_deref() != Some("-") && std::io::stdin().is_terminal() =>
        {
            match trust::ask_on_terminal(config, &root, cli.global.config.as_deref(), &trust) {
                Ok(config) => config,
                Err(error) => return operational(error),
            }
        }
        _ => config,
    };
    // A server settles calls from its clients at the same time, so it gets a worker per core;
    // one-shot commands need one thread.
    let serving = matches!(cli.command, Command::Serve { .. });
    let mut builder = if serving {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return operational(anyhow::Error::new(error).context("cannot start")),
    };
    let result = runtime.block_on(run(cli, root, config, journal));
    if serving {
        // `serve` has stopped and released everything it started; what is left is a thread
        // blocked reading stdin (when a signal ended it), which must not delay the exit.
        runtime.shutdown_background();
    } else {
        runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    }
    match result {
        Ok(code) => code,
        Err(error) => operational(error),
    }
}

/// The longest a stopping server waits for the calls its closed connections cancelled (it
/// usually takes a few milliseconds; a loaded machine may need more, and a host that escalates
/// after 500 ms must still not have to).
const CALLS_SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

/// Reports an operational error on stderr.
fn operational(error: anyhow::Error) -> ExitCode {
    eprintln!("tackle: {error:#}");
    ExitCode::from(EXIT_OPERATIONAL)
}

/// `tackle config check`: reads every file that applies and reports, never opening the journal.
fn config_check(
    root: &std::path::Path,
    flag: Option<&std::path::Path>,
    data_dir: Option<&std::path::Path>,
    trust: &tackle_host::TrustStore,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let result = config::load(root, flag, trust);
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let text = match (&result, json) {
        (Ok(config), true) => serde_json::to_string_pretty(&serde_json::json!({
            "ok": true,
            "files": config.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            "errors": [],
            "mcp": config.mcp.iter().map(config::McpServer::to_json).collect::<Vec<_>>(),
            "models": config.models.iter().map(config::ModelTools::to_json).collect::<Vec<_>>(),
            "overrides": config.overrides,
            "lsp": tackle_host::servers_json(config, &path_var),
            "formatters": tackle_host::formatters_json(config, &path_var),
            "hooks": config.hooks().iter().map(config::CommandHook::to_json).collect::<Vec<_>>(),
            "trust": trust::check_json(config),
            "sandbox": tackle_host::sandbox::summary_json(config),
            "index": tackle_host::index_summary(config, data_dir, root).1,
        }))?,
        (Err(problems), true) => serde_json::to_string_pretty(&serde_json::json!({
            "ok": false,
            "errors": problems.0.iter().map(config::Problem::to_json).collect::<Vec<_>>(),
        }))?,
        (Ok(config), false) => {
            let files = if config.files.is_empty() {
                "ok: no configuration files".to_owned()
            } else {
                format!(
                    "ok: {}",
                    config
                        .files
                        .iter()
                        .map(|f| f.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            std::iter::once(files)
                .chain(tackle_host::code_summary(config, &path_var))
                .chain(tackle_host::sandbox::summary_lines(config))
                .chain([tackle_host::index_summary(config, data_dir, root).0])
                .chain(trust::check_lines(config))
                .collect::<Vec<_>>()
                .join("\n")
        }
        (Err(problems), false) => problems.to_string(),
    };
    print_stdout(&text)?;
    Ok(match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(EXIT_MODEL_ERROR),
    })
}

/// Opens the host of the command: the Location, its data, the configuration already read.
fn open_host(
    root: PathBuf,
    data_dir: PathBuf,
    config: config::Config,
    approvals: Approvals,
    calls: Option<tackle_mcp::ClientCalls>,
    long_lived: bool,
    journal: Option<JournalOpening>,
) -> anyhow::Result<Host> {
    // A host that ends with one call keeps no background jobs and, unless the configuration
    // asks for them, takes no snapshots.
    let mut builder = HostBuilder::new(root)
        .data_dir(data_dir)
        .config(config)
        .approvals(approvals)
        .background_jobs(long_lived)
        .snapshots(long_lived)
        .search_index(long_lived);
    if let Some(calls) = calls {
        builder = builder.elicit_from(calls);
    }
    if let Some(journal) = journal {
        builder = builder.journal_opening(journal);
    }
    let host = builder.build()?;
    print_warnings(&host);
    Ok(host)
}

/// Reports what the host skipped, on stderr.
fn print_warnings(host: &Host) {
    for warning in host.take_warnings() {
        eprintln!("tackle: {warning}");
    }
}

async fn run(
    cli: Cli,
    root: PathBuf,
    config: config::Config,
    journal: Option<JournalOpening>,
) -> anyhow::Result<ExitCode> {
    let Global {
        root: _,
        agent,
        session,
        data_dir,
        config: config_file,
        model,
        log_file: _,
    } = cli.global;
    let model = match model {
        Some(model) => Some(model),
        None => model_from_env()?,
    };
    let data_dir = data_dir.ok_or_else(|| {
        anyhow::anyhow!("no data directory is known; pass --data-dir or set TACKLE_DATA_DIR")
    })?;
    let spec = |dialect| {
        TurnSpec::agent(agent.clone())
            .with_model(model.clone())
            .with_dialect(dialect)
    };
    match cli.command {
        Command::Config { .. } | Command::Trust => {
            bail!("`config` and `trust` run before the runtime starts")
        }
        Command::Serve {
            yes,
            http,
            allow_origin,
            token_file,
        } => {
            // The token and origins matter only over HTTP (stdio has no other clients).
            let http = match http.as_deref() {
                Some(text) => Some((
                    serve::http_address(text)?,
                    serve::http_options(&allow_origin, token_file.as_deref())?,
                )),
                None => None,
            };
            let calls = tackle_mcp::ClientCalls::new();
            let running = calls.clone();
            let approvals = if yes {
                Approvals::AllowOnce
            } else {
                // The model cannot restart its own server: the user can.
                approve::no_one_to_ask_unless(
                    "the MCP client cannot show permission questions",
                    "restart `tackle serve` with --yes",
                )
            };
            let structured = if config.structured_content() {
                tackle_mcp::StructuredContent::Declared
            } else {
                tackle_mcp::StructuredContent::WithoutText
            };
            let reopen = serve_trust::Reopen {
                root: root.clone(),
                data_dir: data_dir.clone(),
                config_file,
                approvals: approvals.clone(),
                calls: calls.clone(),
                spec: spec(None),
            };
            tracing::info!(pid = std::process::id(), "tackle serve started");
            let host = open_host(
                root,
                data_dir,
                config,
                approvals,
                Some(calls.clone()),
                true,
                None,
            )?;
            host.supervise_mcp().await;
            print_warnings(&host);
            host.turn(&reopen.spec)?;
            let changes = host.location().changes();
            // The host is replaced once if the person trusts the project through the client.
            let host = serve_trust::LiveHost::new(host, reopen);
            let mut server = host
                .server()
                .with_agent(agent.clone())
                .with_client_calls(calls)
                .with_structured_content(structured);
            // Without `--session`, every connection is a session of its own.
            if let Some(session) = session {
                server = server.with_session(session);
            }
            host.notify_through(&server);
            let watcher = server.notify_on(changes);
            let logger = serve_trust::LiveHost::log_warnings(&server, &host.current());
            let served = match http {
                // Ctrl-C or SIGTERM ends the server like a closed stdin, so the shutdown below
                // still stops the background jobs and language servers.
                None => tokio::select! {
                    served = tackle_mcp::serve_stdio(server) => served.map_err(Into::into),
                    () = serve::stop_signal() => Ok(()),
                },
                Some((address, options)) => serve::serve_http(address, server, options).await,
            };
            tracing::info!(pid = std::process::id(), "tackle serve stopping");
            watcher.abort();
            logger.abort();
            let _ = logger.await;
            // The watcher's handle is the last one of the stdio connection: once it is gone,
            // the connection's session ends.
            let _ = watcher.await;
            // Jobs get SIGTERM and language servers `shutdown` and `exit`, briefly, before
            // their groups are killed; a signal meanwhile (codex sends SIGTERM and kills about
            // 10 ms later) kills them at once.
            tokio::select! {
                () = host.shutdown(tackle_host::SHUTDOWN_GRACE) => {}
                () = serve::stop_signal() => host.shutdown(std::time::Duration::ZERO).await,
            }
            // Calls still running (cancelled with their connection) settle and journal their
            // interruption; a journal row is committed before its call returns.
            let deadline = tokio::time::Instant::now() + CALLS_SETTLE;
            while !running.is_idle() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            for host in host.all() {
                host.persist();
            }
            // The configured MCP servers' groups, which their dropped tasks may not have killed.
            tackle_mcp::kill_child_servers();
            // Last: a host's log shows whether a server finished stopping or was killed.
            tracing::info!(pid = std::process::id(), "tackle serve stopped");
            let code = match served {
                Ok(()) => 0,
                Err(error) => {
                    eprintln!("tackle: {error:#}");
                    i32::from(EXIT_OPERATIONAL)
                }
            };
            // Exit now rather than wait for the connection's tasks to let go of the host (a
            // host that sends SIGTERM kills ~10 ms later): everything is committed, and closing
            // the databases or freeing memory would only take time.
            std::process::exit(code)
        }
        Command::Undo {
            call,
            since,
            message,
            last,
            dry_run,
            force,
        } => {
            let approvals = approve::no_one_to_ask("`undo` asks nothing");
            let host = open_host(root, data_dir, config, approvals, None, false, None)?;
            let target = match (call, since, message) {
                (Some(call), ..) => tackle_host::UndoTarget::Call(call),
                (None, Some(since), _) => tackle_host::UndoTarget::Since(since),
                (None, None, Some(message)) => tackle_host::UndoTarget::Message(message),
                (None, None, None) => tackle_host::UndoTarget::Last(last.unwrap_or(1)),
            };
            let report = host
                .undo(session.as_deref(), target, dry_run, force)
                .await?;
            print_stdout(&report.render())?;
            Ok(match report.outcome {
                tackle_host::UndoOutcome::Refused => ExitCode::from(EXIT_MODEL_ERROR),
                tackle_host::UndoOutcome::RolledBack(_) | tackle_host::UndoOutcome::Partial(_) => {
                    ExitCode::from(EXIT_OPERATIONAL)
                }
                _ => ExitCode::SUCCESS,
            })
        }
        Command::History { limit } => {
            let approvals = approve::no_one_to_ask("`history` asks nothing");
            let host = open_host(root, data_dir, config, approvals, None, false, None)?;
            let entries = match &session {
                Some(session) => host.history(session)?,
                None => host.recent_history(limit)?,
            };
            let mut lines = Vec::new();
            for entry in entries {
                let change = &entry.change;
                let mut line = format!(
                    "#{} session `{}` {} `{}` (message {})",
                    change.seq, change.session, change.tool, change.call, change.message
                );
                if !change.overlap.is_empty() {
                    line.push_str(&format!("; overlapped by {}", change.overlap.join("; ")));
                }
                lines.push(line);
                for (letter, path, added, removed) in &entry.files {
                    lines.push(format!("  {letter} {path} (+{added} -{removed})"));
                }
                if !change.shadowed.is_empty() {
                    lines.push(format!(
                        "  ({} ignored path{} changed, never undone)",
                        change.shadowed.len(),
                        if change.shadowed.len() == 1 { "" } else { "s" }
                    ));
                }
            }
            if lines.is_empty() {
                lines.push(match &session {
                    Some(session) => format!("no changes recorded for session `{session}`"),
                    None => "no changes recorded in this Location".to_owned(),
                });
            }
            print_stdout(&lines.join("\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sessions => {
            let approvals = approve::no_one_to_ask("`sessions` asks nothing");
            let host = open_host(root, data_dir, config, approvals, None, false, None)?;
            let mut lines: Vec<String> = host
                .sessions()?
                .into_iter()
                .map(|s| {
                    format!(
                        "{}  {} change{}, last at {}",
                        s.session,
                        s.changes,
                        if s.changes == 1 { "" } else { "s" },
                        render::timestamp(s.last_at_ms)
                    )
                })
                .collect();
            if lines.is_empty() {
                lines.push("no session changed this Location".to_owned());
            }
            print_stdout(&lines.join("\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools {
            json,
            provider,
            front_end,
        } => {
            let approvals = approve::no_one_to_ask("`tools` asks nothing");
            // The same host `call` or `serve` opens, so the list is what that front end takes.
            let long_lived = front_end == FrontEnd::Serve;
            let host = open_host(root, data_dir, config, approvals, None, long_lived, None)?;
            host.connect_mcp().await;
            print_warnings(&host);
            let turn = host.turn(&spec(provider))?;
            let text = match provider {
                Some(_) => render::tools_provider(&turn)?,
                None if json => render::tools_json(&turn)?,
                None => render::tools_plain(&turn),
            };
            print_stdout(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            name,
            args,
            json,
            yes,
            provider,
            message,
        } => {
            let from_stdin = args.as_deref() == Some("-");
            let arguments = match args {
                Some(args) if args == "-" => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .context("cannot read the arguments from stdin")?;
                    text
                }
                Some(args) => args,
                None => "{}".to_owned(),
            };
            let approvals = if yes {
                Approvals::AllowOnce
            } else if !from_stdin && std::io::stdin().is_terminal() {
                approve::terminal()
            } else {
                approve::no_one_to_ask("this run is non-interactive")
            };
            let host = open_host(root, data_dir, config, approvals, None, false, journal)?;
            host.connect_mcp().await;
            print_warnings(&host);
            let turn = host.turn(&spec(provider))?;
            if let Some(tool) = turn.get(&name) {
                tool.definition().prepare_for_call();
            }
            // Ctrl-C cancels the call: it settles as interrupted, never as a result.
            let cancel = CancellationToken::new();
            let on_interrupt = cancel.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_interrupt.cancel();
                }
            });
            let session = session.unwrap_or_else(|| "cli".to_owned());
            let mut cx = Context::new(identity(&session, &agent, message.as_deref()), cancel);
            // A caller that traces (a command run by another tackle's `bash`) is continued.
            if let Some(parent) = trace_parent_from_env() {
                cx = cx.with_trace_parent(parent);
            }
            let settlement = host.settle(&turn, cx, ToolCall::new(name, arguments)).await;
            let text = if json {
                render::settlement_json(&settlement)?
            } else {
                render::model_text(&settlement).unwrap_or_default()
            };
            // Once per session, the first result says which settings were ignored.
            let notice = (!json).then(|| host.trust_notice(&session)).flatten();
            let text = match notice {
                Some(notice) => format!("{notice}\n\n{text}"),
                None => text,
            };
            if json {
                print_stdout(&text)?;
            } else if settlement.model_result().is_some() {
                print_model_text(&text)?;
            }
            if let Some(problem) = render::operational_problem(&settlement) {
                eprintln!("tackle: {problem}");
                return Ok(ExitCode::from(EXIT_OPERATIONAL));
            }
            match settlement.model_result() {
                Some(result) if result.is_error => Ok(ExitCode::from(EXIT_MODEL_ERROR)),
                Some(_) => Ok(ExitCode::SUCCESS),
                None => bail!("the call produced no result"),
            }
        }
    }
}

/// The model of `$TACKLE_MODEL`, when it is set and not empty.
fn model_from_env() -> anyhow::Result<Option<config::Model>> {
    match std::env::var("TACKLE_MODEL") {
        Ok(text) if !text.trim().is_empty() => config::Model::parse(&text)
            .map(Some)
            .map_err(|message| anyhow::anyhow!("TACKLE_MODEL: {message}")),
        _ => Ok(None),
    }
}

/// The W3C trace context of `$TRACEPARENT`, when it is set and valid (an invalid one is
/// ignored, as the W3C spec asks).
fn trace_parent_from_env() -> Option<tackle_core::TraceParent> {
    let value = std::env::var("TRACEPARENT").ok()?;
    tackle_core::TraceParent::parse(&value)
        .inspect_err(|error| tracing::debug!(%error, "ignored TRACEPARENT"))
        .ok()
}

/// The call's identity: the given session, agent and message (else a fresh message), with a
/// generated call ID.
fn identity(session: &str, agent: &str, message: Option<&str>) -> CallIdentity {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let pid = std::process::id();
    CallIdentity::new(
        session,
        agent,
        message.map_or_else(|| format!("cli-{ms}-{pid}"), str::to_owned),
        format!("cli-call-{ms}-{pid}"),
    )
}

/// Writes `text` to stdout, ending it with one newline; empty text prints nothing.
/// Prints `text` as the model reads it, byte for byte; a line end is added only for a person at
/// a terminal, so piped output is exactly what an MCP client receives.
fn print_model_text(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if stdout.is_terminal() && !text.is_empty() && !text.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    stdout.flush().context("cannot write to stdout")
}

fn print_stdout(text: &str) -> anyhow::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    stdout.flush().context("cannot write to stdout")
}
