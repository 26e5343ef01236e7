//! Formatters: the project's formatter applied to a file tool's new text, as OpenCode's
//! `formatter` configuration does.
//!
//! The formatter never runs on the user's file. OpenCode formats the file in place after the
//! write, which races with the user's editor and with the agent's next edit, and leaves the
//! tool's diff describing text that is no longer on disk. Here the file tool asks
//! [`Formatters::format`] for the formatted text and writes it itself, with the same
//! compare-and-swap as any other change, so a concurrent change is detected instead of
//! overwritten and the reported diff is what is on disk. The formatter works on a copy next to
//! the file, under a hidden unique name ([`TEMP_PREFIX`]), so that it finds the configuration it
//! would find for the file itself (`rustfmt.toml`, `.prettierrc`, `pyproject.toml`,
//! `.editorconfig`). The copy is created exclusively, readable by its owner only, and removed
//! however the run ends. A formatter may still write other files: given a file, rustfmt also
//! formats the modules it declares, so the built-in rustfmt passes `skip_children=true`.
//!
//! The formatter runs as the leader of its own process group with stdin on `/dev/null`. Its
//! stdout is discarded and the end of its stderr kept for the error. When the timeout passes,
//! the whole group is killed. Without a signal API among this crate's dependencies (nix,
//! rustix), the group is signalled through the `kill` builtin of `/bin/sh`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::hash::{BuildHasher as _, Hasher as _};
use std::io;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

/// The placeholder for the file in a formatter's command.
pub const FILE_PLACEHOLDER: &str = "$FILE";

/// How the names of the formatter's copies start. A file watcher may skip such names.
pub const TEMP_PREFIX: &str = ".tackle-fmt-";

/// The longest file name most file systems accept, in bytes.
const NAME_MAX: usize = 255;

/// How many names are tried when a copy's name is taken.
const NAME_ATTEMPTS: usize = 8;

/// How much of the end of the formatter's stderr is kept.
const STDERR_TAIL: usize = 64 * 1024;

/// The largest formatted file read back.
const OUTPUT_MAX: u64 = 16 * 1024 * 1024;

/// The size of each read from a pipe.
const READ_BYTES: usize = 8 * 1024;

/// How long a killed process is waited for.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// A formatter: the command that formats a file in place, and the files it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatterSpec {
    /// The name, as the configuration calls it.
    pub name: String,
    /// The program and its arguments. [`FILE_PLACEHOLDER`] stands for the file, also inside an
    /// argument (`--file=$FILE`).
    pub command: Vec<String>,
    /// The file name endings it formats, such as `.rs`. The dot is optional.
    pub extensions: Vec<String>,
    /// Variables added to the environment the formatter inherits.
    pub environment: Vec<(String, String)>,
}

/// The built-in formatters. They are off unless the configuration names them.
///
/// rustfmt runs with `skip_children=true`, so that it formats the copy and not the modules the
/// copy declares. Without an `edition` in `rustfmt.toml` it parses as Rust 2015, and fails on
/// `async` code.
pub fn builtin_formatters() -> Vec<FormatterSpec> {
    fn spec(name: &str, command: &[&str], extensions: &[&str]) -> FormatterSpec {
        FormatterSpec {
            name: name.to_owned(),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            extensions: extensions.iter().map(|s| (*s).to_owned()).collect(),
            environment: Vec::new(),
        }
    }
    vec![
        spec(
            "rustfmt",
            &[
                "rustfmt",
                "--config",
                "skip_children=true",
                FILE_PLACEHOLDER,
            ],
            &[".rs"],
        ),
        spec(
            "prettier",
            &["prettier", "--write", FILE_PLACEHOLDER],
            &[
                ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".json", ".css",
                ".scss", ".md", ".yaml", ".yml", ".html", ".vue",
            ],
        ),
        spec("gofmt", &["gofmt", "-w", FILE_PLACEHOLDER], &[".go"]),
        spec(
            "ruff",
            &["ruff", "format", FILE_PLACEHOLDER],
            &[".py", ".pyi"],
        ),
        spec(
            "clang-format",
            &["clang-format", "-i", FILE_PLACEHOLDER],
            &[".c", ".cc", ".cpp", ".cxx", ".h", ".hpp"],
        ),
        spec(
            "shfmt",
            &["shfmt", "-w", FILE_PLACEHOLDER],
            &[".sh", ".bash"],
        ),
    ]
}

/// Why a formatter gave no text.
#[derive(Debug)]
pub enum FormatError {
    /// The formatter could not be started: it is not installed, say.
    Spawn {
        /// The program, as the command names it.
        program: String,
        /// Why it could not be started.
        source: io::Error,
    },
    /// The formatter exited with a failure status.
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its stderr, at most 64 KiB, with the copy's name replaced by the file's.
        stderr_tail: String,
    },
    /// The formatter did not finish in time. Its process group was killed.
    TimedOut,
    /// The copy could not be written or read back, or the formatted text was over 16 MiB or not
    /// UTF-8.
    Io(io::Error),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn { program, source } => {
                write!(f, "could not start the formatter `{program}`: {source}")
            }
            Self::Failed {
                status,
                stderr_tail,
            } => {
                write!(f, "the formatter failed ({status})")?;
                // The first line says what went wrong; the field holds the rest.
                match stderr_tail.lines().map(str::trim).find(|l| !l.is_empty()) {
                    Some(line) => write!(f, ": {}", clip(line, 200)),
                    None => Ok(()),
                }
            }
            Self::TimedOut => f.write_str("the formatter did not finish in time"),
            Self::Io(e) => write!(f, "could not format a copy of the file: {e}"),
        }
    }
}

impl std::error::Error for FormatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn { source, .. } | Self::Io(source) => Some(source),
            Self::Failed { .. } | Self::TimedOut => None,
        }
    }
}

impl From<io::Error> for FormatError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// `line` cut to at most `max` characters, with an ellipsis when cut.
fn clip(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// The configured formatters and how long one may run.
#[derive(Clone, Debug)]
pub struct Formatters {
    specs: Vec<FormatterSpec>,
    timeout: Duration,
    sandbox: Option<tackle_sandbox::Confine>,
}

impl Formatters {
    /// Formatters tried in the order of `specs`, each stopped after `timeout`.
    pub fn new(specs: Vec<FormatterSpec>, timeout: Duration) -> Self {
        Self {
            specs,
            timeout,
            sandbox: None,
        }
    }

    /// Runs the formatters under `sandbox`.
    pub fn with_sandbox(mut self, sandbox: tackle_sandbox::Confine) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The formatters, in order.
    pub fn specs(&self) -> &[FormatterSpec] {
        &self.specs
    }

    /// The formatter for `path` by extension (the first that lists it), if any.
    pub fn for_path(&self, path: &Path) -> Option<&FormatterSpec> {
        let name = path.file_name()?.as_bytes();
        self.specs.iter().find(|spec| {
            spec.extensions
                .iter()
                .any(|extension| has_extension(name, extension))
        })
    }

    /// `text` as the formatter for `path` leaves it: Ok(None) when none applies or the output
    /// equals the input.
    ///
    /// The formatter runs on a copy in the directory of `path`; `path` itself is neither read
    /// nor written, and need not exist.
    pub async fn format(&self, path: &Path, text: &str) -> Result<Option<String>, FormatError> {
        let Some(spec) = self.for_path(path) else {
            return Ok(None);
        };
        let scratch = Scratch::create(path, text).await?;
        let started = tokio::time::Instant::now();
        let (status, stderr) =
            run(spec, &scratch.path, self.timeout, self.sandbox.as_ref()).await?;
        tracing::debug!(
            formatter = %spec.name,
            path = %path.display(),
            %status,
            elapsed_ms = started.elapsed().as_millis(),
            "formatter ran",
        );
        if !status.success() {
            return Err(FormatError::Failed {
                status,
                stderr_tail: stderr_text(&stderr, &scratch.path, path),
            });
        }
        let formatted = read_back(&scratch.path).await?;
        Ok((formatted != text).then_some(formatted))
    }
}

/// Whether the file name `name` ends with `extension` (`.rs` or `rs`) after a non-empty stem.
fn has_extension(name: &[u8], extension: &str) -> bool {
    let extension = extension.strip_prefix('.').unwrap_or(extension).as_bytes();
    if extension.is_empty() || name.len() <= extension.len() + 1 {
        return false;
    }
    let dot = name.len() - extension.len() - 1;
    name[dot] == b'.' && name.ends_with(extension)
}

/// The formatter's copy of a file, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Writes `text` to a new file next to `target`, readable by its owner only.
    async fn create(target: &Path, text: &str) -> io::Result<Self> {
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} does not name a file", target.display()),
            )
        })?;
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let mut taken = None;
        for _ in 0..NAME_ATTEMPTS {
            let path = dir.join(temp_name(&random_tag(), name));
            let opened = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .await;
            match opened {
                Ok(mut file) => {
                    // From here on the copy is removed whatever happens.
                    let scratch = Self { path };
                    file.write_all(text.as_bytes()).await?;
                    file.flush().await?;
                    return Ok(scratch);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => taken = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(taken.unwrap_or_else(|| io::Error::other("no free name for the formatter's copy")))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(
                path = %self.path.display(),
                error = %e,
                "could not remove the formatter's copy",
            );
        }
    }
}

/// Eight random hex digits.
fn random_tag() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Each RandomState carries fresh keys; the counter and the clock only add variety.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    format!("{:08x}", hasher.finish() & 0xffff_ffff)
}

/// The copy's name: `.tackle-fmt-<tag>-<name>`, with `name` shortened to keep the whole within
/// [`NAME_MAX`] bytes. The extension is kept, since formatters go by it.
fn temp_name(tag: &str, name: &OsStr) -> OsString {
    let mut out = format!("{TEMP_PREFIX}{tag}-").into_bytes();
    let room = NAME_MAX.saturating_sub(out.len());
    let name = name.as_bytes();
    if name.len() <= room {
        out.extend_from_slice(name);
    } else {
        let dot = name.iter().rposition(|&b| b == b'.').filter(|&at| at > 0);
        match dot {
            Some(at) if name.len() - at < room => {
                let extension = &name[at..];
                let keep = char_floor(&name[..at], room - extension.len());
                out.extend_from_slice(&name[..keep]);
                out.extend_from_slice(extension);
            }
            _ => out.extend_from_slice(&name[..char_floor(name, room)]),
        }
    }
    OsString::from_vec(out)
}

/// The largest cut of `bytes` at or before `at` that does not split a UTF-8 character.
fn char_floor(bytes: &[u8], at: usize) -> usize {
    let mut at = at.min(bytes.len());
    while at > 0 && at < bytes.len() && bytes[at] & 0xc0 == 0x80 {
        at -= 1;
    }
    at
}

/// `arg` with [`FILE_PLACEHOLDER`] replaced by `file`.
fn substitute(arg: &str, file: &Path) -> OsString {
    let mut out = OsString::new();
    let mut parts = arg.split(FILE_PLACEHOLDER);
    if let Some(first) = parts.next() {
        out.push(first);
    }
    for part in parts {
        out.push(file.as_os_str());
        out.push(part);
    }
    out
}

/// Runs `spec` on `file`: its exit status and the end of its stderr.
async fn run(
    spec: &FormatterSpec,
    file: &Path,
    timeout: Duration,
    sandbox: Option<&tackle_sandbox::Confine>,
) -> Result<(ExitStatus, Vec<u8>), FormatError> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(FormatError::Spawn {
            program: String::new(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the formatter {} has an empty command", spec.name),
            ),
        });
    };
    let mut command = tokio::process::Command::new(substitute(program, file));
    command
        .args(args.iter().map(|arg| substitute(arg, file)))
        .envs(spec.environment.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(sandbox) = sandbox {
        sandbox
            .apply(command.as_std_mut())
            .map_err(|error| FormatError::Spawn {
                program: program.clone(),
                source: io::Error::other(error.to_string()),
            })?;
    }
    let mut child = command.spawn().map_err(|source| FormatError::Spawn {
        program: program.clone(),
        source,
    })?;
    // Declared after the child, so dropped before it: the group is signalled while the
    // leader is not yet reaped and its id cannot be reused.
    let mut group = Group::new(child.id());
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let finished = async {
        // The pipes are read to the end, or a full pipe would stall the formatter.
        let (status, tail, ()) = tokio::join!(
            child.wait(),
            read_tail(stderr, STDERR_TAIL),
            discard(stdout)
        );
        status.map(|status| (status, tail))
    };
    // A background process that keeps the pipes open counts as not finished.
    let outcome = tokio::time::timeout(timeout, finished).await;
    match outcome {
        Ok(Ok(done)) => {
            group.disarm();
            Ok(done)
        }
        // The guard stops the group.
        Ok(Err(e)) => Err(FormatError::Io(e)),
        Err(_) => {
            group.kill();
            let _ = child.start_kill();
            let _ = tokio::time::timeout(KILL_WAIT, child.wait()).await;
            Err(FormatError::TimedOut)
        }
    }
}

/// The formatter's process group, killed when dropped unless disarmed.
struct Group {
    pgid: Option<u32>,
}

impl Group {
    fn new(pid: Option<u32>) -> Self {
        // Signalling group 0 or 1 would hit this process's group, or every process.
        Self {
            pgid: pid.filter(|&pid| pid > 1),
        }
    }

    /// Leaves the group alone from now on.
    fn disarm(&mut self) {
        self.pgid = None;
    }

    /// Kills the group.
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends SIGKILL to process group `pgid`.
fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if let Err(error) = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    ) && error != nix::errno::Errno::ESRCH
    {
        tracing::warn!(pgid, %error, "could not kill the formatter's process group");
    }
}

/// The last `limit` bytes of `reader`.
async fn read_tail(reader: Option<impl AsyncRead + Unpin>, limit: usize) -> Vec<u8> {
    let Some(mut reader) = reader else {
        return Vec::new();
    };
    let mut tail = Vec::new();
    let mut buf = vec![0u8; READ_BYTES];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                // Trimmed in batches, so each byte moves at most twice.
                if tail.len() > 2 * limit {
                    tail.drain(..tail.len() - limit);
                }
            }
        }
    }
    if tail.len() > limit {
        tail.drain(..tail.len() - limit);
    }
    tail
}

/// Reads `reader` to the end and drops what it gives.
async fn discard(reader: Option<impl AsyncRead + Unpin>) {
    if let Some(mut reader) = reader {
        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
    }
}

/// The stderr tail as text, with the copy's path and name replaced by the file's.
fn stderr_text(stderr: &[u8], copy: &Path, file: &Path) -> String {
    // A tail may start inside a character.
    let start = stderr
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xc0 == 0x80)
        .count();
    let mut text = String::from_utf8_lossy(&stderr[start..]).into_owned();
    text = text.replace(&*copy.to_string_lossy(), &file.to_string_lossy());
    if let (Some(copy_name), Some(file_name)) = (copy.file_name(), file.file_name()) {
        text = text.replace(&*copy_name.to_string_lossy(), &file_name.to_string_lossy());
    }
    text
}

/// The formatted copy's text, refused over [`OUTPUT_MAX`] bytes or when not UTF-8.
async fn read_back(path: &Path) -> io::Result<String> {
    let file = tokio::fs::File::open(path).await?;
    let mut bytes = Vec::new();
    file.take(OUTPUT_MAX + 1).read_to_end(&mut bytes).await?;
    if bytes.len() as u64 > OUTPUT_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the formatted file is over {} MiB", OUTPUT_MAX >> 20),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the formatted file is not UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Instant;

    /// A fake formatter: `script` run by `sh` on the file, with `environment`.
    fn fake(
        bin: &Path,
        name: &str,
        script: &str,
        extensions: &[&str],
        environment: &[(&str, &str)],
    ) -> FormatterSpec {
        let path = bin.join(format!("{name}.sh"));
        std::fs::write(&path, script).expect("write the script");
        // Run through sh, not executed: a script just written can be busy for exec.
        FormatterSpec {
            name: name.to_owned(),
            command: vec![
                "sh".to_owned(),
                path.to_string_lossy().into_owned(),
                FILE_PLACEHOLDER.to_owned(),
            ],
            extensions: extensions.iter().map(|s| (*s).to_owned()).collect(),
            environment: environment
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// The names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read the directory")
            .map(|entry| {
                entry
                    .expect("read an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    /// Whether process `pid` is alive: present and not a zombie.
    fn alive(pid: u32) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // The state follows the command name, which is in parentheses.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        state.is_some_and(|state| state != 'Z' && state != 'X')
    }

    /// Waits up to `bound` for `pid` to be gone.
    async fn gone(pid: u32, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        while alive(pid) {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    fn read_pid(path: &Path) -> u32 {
        std::fs::read_to_string(path)
            .expect("the script wrote its pid")
            .trim()
            .parse()
            .expect("a pid")
    }

    /// Uppercases the file in place, through a scratch file outside its directory.
    const UPPERCASE: &str =
        "t=$(mktemp) && tr 'a-z' 'A-Z' < \"$1\" > \"$t\" && cat \"$t\" > \"$1\" && rm \"$t\"\n";

    #[test]
    fn builtins_cover_their_extensions() {
        let formatters = Formatters::new(builtin_formatters(), Duration::from_secs(1));
        let name = |path: &str| {
            formatters
                .for_path(Path::new(path))
                .map(|s| s.name.as_str())
        };
        assert_eq!(name("src/lib.rs"), Some("rustfmt"));
        assert_eq!(name("web/app.tsx"), Some("prettier"));
        assert_eq!(name("a/b/config.yml"), Some("prettier"));
        assert_eq!(name("main.go"), Some("gofmt"));
        assert_eq!(name("stubs.pyi"), Some("ruff"));
        assert_eq!(name("x.hpp"), Some("clang-format"));
        assert_eq!(name("run.bash"), Some("shfmt"));
        assert_eq!(name("notes.txt"), None);
        assert_eq!(name("Makefile"), None);
        for spec in builtin_formatters() {
            assert!(
                spec.command.iter().any(|arg| arg == FILE_PLACEHOLDER),
                "{spec:?}"
            );
            assert!(
                spec.extensions.iter().all(|e| e.starts_with('.')),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn the_first_formatter_listing_an_extension_wins() {
        let spec = |name: &str, extensions: &[&str]| FormatterSpec {
            name: name.to_owned(),
            command: vec!["true".to_owned()],
            extensions: extensions.iter().map(|s| (*s).to_owned()).collect(),
            environment: Vec::new(),
        };
        let formatters = Formatters::new(
            vec![
                spec("first", &[".ts", "rs"]),
                spec("second", &[".rs", ".d.ts", ".py"]),
                spec("empty", &["", "."]),
            ],
            Duration::from_secs(1),
        );
        let name = |path: &str| {
            formatters
                .for_path(Path::new(path))
                .map(|s| s.name.as_str())
        };
        assert_eq!(name("a.rs"), Some("first"), "the dot is optional");
        assert_eq!(name("a.d.ts"), Some("first"));
        assert_eq!(name("a.py"), Some("second"));
        assert_eq!(name(".rs"), None, "a dot file has no extension");
        assert_eq!(name("a.RS"), None, "extensions are case-sensitive");
        assert_eq!(name("ars"), None);
        assert_eq!(name("a."), None);
        assert_eq!(name("dir.rs/"), Some("first"));
        assert_eq!(name("/"), None);
    }

    #[test]
    fn find_on_path_finds_sh_and_not_a_missing_program() {
        let path_var = OsStr::new("/usr/bin:/bin");
        let sh = tackle_lsp::find_program("sh", path_var).expect("sh is on /usr/bin:/bin");
        assert!(sh.ends_with("sh"));
        assert!(sh.is_absolute());
        assert_eq!(
            tackle_lsp::find_program("tackle-no-such-program", path_var),
            None
        );
        assert_eq!(tackle_lsp::find_program("sh", OsStr::new("")), None);
        assert_eq!(tackle_lsp::find_program("", path_var), None);
        assert_eq!(
            tackle_lsp::find_program("/bin/sh", OsStr::new("")),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(
            tackle_lsp::find_program("/tackle/no/such/program", path_var),
            None
        );
    }

    #[test]
    fn temp_names_stay_short_and_keep_the_extension() {
        let tag = "0123abcd";
        assert_eq!(
            temp_name(tag, OsStr::new("lib.rs")),
            OsString::from(".tackle-fmt-0123abcd-lib.rs")
        );
        let long = format!("{}.rs", "a".repeat(300));
        let name = temp_name(tag, OsStr::new(&long));
        assert_eq!(name.len(), NAME_MAX);
        assert!(name.to_string_lossy().ends_with("aaa.rs"));
        // Cut before a character, not inside it.
        let wide = format!("{}.ts", "é".repeat(200));
        let name = temp_name(tag, OsStr::new(&wide));
        assert!(name.len() <= NAME_MAX);
        let name = name.into_string().expect("still UTF-8");
        assert!(name.ends_with("é.ts"), "{name}");
        // No extension, or one too long to keep: the head is kept.
        let bare = "b".repeat(300);
        assert_eq!(temp_name(tag, OsStr::new(&bare)).len(), NAME_MAX);
        let silly = format!("x.{}", "c".repeat(300));
        assert_eq!(temp_name(tag, OsStr::new(&silly)).len(), NAME_MAX);
    }

    #[test]
    fn substitution_replaces_every_placeholder() {
        let file = Path::new("/p/.tackle-fmt-x-a.rs");
        assert_eq!(
            substitute("$FILE", file),
            OsString::from("/p/.tackle-fmt-x-a.rs")
        );
        assert_eq!(
            substitute("--in=$FILE,$FILE", file),
            OsString::from("--in=/p/.tackle-fmt-x-a.rs,/p/.tackle-fmt-x-a.rs")
        );
        assert_eq!(substitute("--check", file), OsString::from("--check"));
    }

    #[tokio::test]
    async fn formats_a_copy_and_leaves_the_file_alone() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let target = project.path().join("notes.txt");
        std::fs::write(&target, "on disk\n").expect("write the target");
        let formatters = Formatters::new(
            vec![fake(bin.path(), "upper", UPPERCASE, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        let formatted = formatters
            .format(&target, "new text\n")
            .await
            .expect("formats");
        assert_eq!(formatted.as_deref(), Some("NEW TEXT\n"));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "on disk\n");
        assert_eq!(listing(project.path()), ["notes.txt"]);
    }

    #[tokio::test]
    async fn a_file_that_does_not_exist_yet_is_not_created() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let formatters = Formatters::new(
            vec![fake(bin.path(), "upper", UPPERCASE, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        let formatted = formatters
            .format(&project.path().join("new.txt"), "abc")
            .await
            .expect("formats");
        assert_eq!(formatted.as_deref(), Some("ABC"));
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn no_change_and_no_formatter_give_none() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let formatters = Formatters::new(
            vec![
                fake(bin.path(), "upper", UPPERCASE, &[".txt"], &[]),
                fake(bin.path(), "noop", "exit 0\n", &[".md"], &[]),
            ],
            Duration::from_secs(10),
        );
        let same = formatters
            .format(&project.path().join("a.txt"), "ALREADY UPPER\n")
            .await
            .expect("formats");
        assert_eq!(same, None);
        let noop = formatters
            .format(&project.path().join("a.md"), "# title\n")
            .await
            .expect("formats");
        assert_eq!(noop, None);
        let none = formatters
            .format(&project.path().join("a.rs"), "fn  main(){}")
            .await
            .expect("no formatter is no error");
        assert_eq!(none, None);
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn the_copy_sits_next_to_the_file_owner_only() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let out = bin.path().join("seen");
        let script = "printf '%s\\n' \"$1\" \"$2\" \"$(stat -c %a \"$1\")\" > \"$SEEN\"\n";
        let mut spec = fake(bin.path(), "seen", script, &[".rs"], &[]);
        spec.command.push("--file=$FILE".to_owned());
        spec.environment
            .push(("SEEN".to_owned(), out.to_string_lossy().into_owned()));
        let formatters = Formatters::new(vec![spec], Duration::from_secs(10));
        let target = project.path().join("lib.rs");
        let formatted = formatters.format(&target, "x").await.expect("formats");
        assert_eq!(formatted, None);

        let seen = std::fs::read_to_string(&out).expect("the script ran");
        let lines: Vec<&str> = seen.lines().collect();
        let copy = Path::new(lines[0]);
        assert_eq!(copy.parent(), Some(project.path()));
        let name = copy
            .file_name()
            .and_then(OsStr::to_str)
            .expect("a UTF-8 name");
        let tag = name
            .strip_prefix(TEMP_PREFIX)
            .and_then(|rest| rest.strip_suffix("-lib.rs"))
            .expect("the copy's name pattern");
        assert_eq!(tag.len(), 8);
        assert!(tag.bytes().all(|b| b.is_ascii_hexdigit()), "{tag}");
        assert_eq!(lines[1], format!("--file={}", copy.display()));
        assert_eq!(lines[2], "600");
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn the_environment_reaches_the_formatter() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let spec = fake(
            bin.path(),
            "env",
            "printf '%s|%s' \"$TACKLE_FMT_GREETING\" \"${PATH:+inherited}\" > \"$1\"\n",
            &[".txt"],
            &[("TACKLE_FMT_GREETING", "hello")],
        );
        let formatters = Formatters::new(vec![spec], Duration::from_secs(10));
        let formatted = formatters
            .format(&project.path().join("a.txt"), "x")
            .await
            .expect("formats");
        assert_eq!(formatted.as_deref(), Some("hello|inherited"));
    }

    #[tokio::test]
    async fn a_failing_formatter_reports_its_stderr() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let target = project.path().join("broken.txt");
        std::fs::write(&target, "on disk\n").expect("write the target");
        let script = "echo \"syntax error in $1 at line 3\" >&2\necho 'second line' >&2\nexit 1\n";
        let formatters = Formatters::new(
            vec![fake(bin.path(), "fail", script, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        let err = formatters
            .format(&target, "text")
            .await
            .expect_err("the formatter fails");
        let FormatError::Failed {
            status,
            stderr_tail,
        } = &err
        else {
            panic!("expected Failed, got {err:?}");
        };
        assert_eq!(status.code(), Some(1));
        assert_eq!(
            stderr_tail,
            &format!(
                "syntax error in {} at line 3\nsecond line\n",
                target.display()
            )
        );
        let message = err.to_string();
        assert!(message.starts_with("the formatter failed (exit status: 1): syntax error in"));
        assert!(!message.contains("second line"));
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "on disk\n");
        assert_eq!(listing(project.path()), ["broken.txt"]);
    }

    #[tokio::test]
    async fn stderr_is_kept_to_its_tail() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        // 200 KiB of stderr and as much stdout, then the line that matters.
        let script = concat!(
            "head -c 204800 /dev/zero | tr '\\0' x >&2\n",
            "head -c 204800 /dev/zero\n",
            "echo >&2\n",
            "echo 'the end' >&2\n",
            "exit 3\n",
        );
        let formatters = Formatters::new(
            vec![fake(bin.path(), "loud", script, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        let err = formatters
            .format(&project.path().join("a.txt"), "x")
            .await
            .expect_err("the formatter fails");
        let FormatError::Failed {
            status,
            stderr_tail,
        } = err
        else {
            panic!("expected Failed, got {err:?}");
        };
        assert_eq!(status.code(), Some(3));
        assert_eq!(stderr_tail.len(), STDERR_TAIL);
        assert!(stderr_tail.ends_with("xxx\nthe end\n"));
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn a_slow_formatter_is_killed_with_its_group() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let pids = tempfile::tempdir().expect("tempdir");
        let script = "echo $$ > \"$PIDS/leader\"\nsleep 30 &\necho $! > \"$PIDS/child\"\nwait\n";
        let pids_dir = pids.path().to_string_lossy().into_owned();
        let formatters = Formatters::new(
            vec![fake(
                bin.path(),
                "slow",
                script,
                &[".txt"],
                &[("PIDS", &pids_dir)],
            )],
            Duration::from_millis(300),
        );
        let started = Instant::now();
        let err = formatters
            .format(&project.path().join("a.txt"), "x")
            .await
            .expect_err("the formatter times out");
        assert!(matches!(err, FormatError::TimedOut), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(err.to_string(), "the formatter did not finish in time");
        assert!(listing(project.path()).is_empty());
        let leader = read_pid(&pids.path().join("leader"));
        let child = read_pid(&pids.path().join("child"));
        assert!(
            gone(leader, Duration::from_secs(2)).await,
            "the formatter {leader} still runs"
        );
        assert!(
            gone(child, Duration::from_secs(2)).await,
            "its child {child} still runs"
        );
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_group_and_removes_the_copy() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let pids = tempfile::tempdir().expect("tempdir");
        let script = "echo $$ > \"$PIDS/leader\"\nsleep 30 &\necho $! > \"$PIDS/child\"\nwait\n";
        let pids_dir = pids.path().to_string_lossy().into_owned();
        let formatters = Formatters::new(
            vec![fake(
                bin.path(),
                "slow",
                script,
                &[".txt"],
                &[("PIDS", &pids_dir)],
            )],
            Duration::from_secs(60),
        );
        let target = project.path().join("a.txt");
        let cut =
            tokio::time::timeout(Duration::from_millis(300), formatters.format(&target, "x")).await;
        assert!(cut.is_err(), "the call was still running");
        assert!(listing(project.path()).is_empty());
        let leader = read_pid(&pids.path().join("leader"));
        let child = read_pid(&pids.path().join("child"));
        assert!(
            gone(leader, Duration::from_secs(5)).await,
            "the formatter {leader} still runs"
        );
        assert!(
            gone(child, Duration::from_secs(5)).await,
            "its child {child} still runs"
        );
    }

    #[tokio::test]
    async fn oversized_or_binary_output_is_refused() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let formatters = Formatters::new(
            vec![
                fake(
                    bin.path(),
                    "big",
                    "head -c 16777217 /dev/zero > \"$1\"\n",
                    &[".big"],
                    &[],
                ),
                fake(
                    bin.path(),
                    "binary",
                    "printf '\\377' > \"$1\"\n",
                    &[".bin"],
                    &[],
                ),
            ],
            Duration::from_secs(20),
        );
        let err = formatters
            .format(&project.path().join("a.big"), "x")
            .await
            .expect_err("too large");
        assert!(
            matches!(&err, FormatError::Io(e) if e.kind() == io::ErrorKind::InvalidData),
            "{err:?}"
        );
        assert!(err.to_string().contains("over 16 MiB"), "{err}");
        let err = formatters
            .format(&project.path().join("a.bin"), "x")
            .await
            .expect_err("not UTF-8");
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn a_missing_directory_or_program_is_an_error() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let formatters = Formatters::new(
            vec![fake(bin.path(), "upper", UPPERCASE, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        let err = formatters
            .format(&project.path().join("no/such/dir/a.txt"), "x")
            .await
            .expect_err("no directory");
        assert!(
            matches!(&err, FormatError::Io(e) if e.kind() == io::ErrorKind::NotFound),
            "{err:?}"
        );

        let missing = FormatterSpec {
            name: "missing".to_owned(),
            command: vec!["tackle-no-such-formatter".to_owned(), "$FILE".to_owned()],
            extensions: vec![".txt".to_owned()],
            environment: Vec::new(),
        };
        let formatters = Formatters::new(vec![missing], Duration::from_secs(10));
        let err = formatters
            .format(&project.path().join("a.txt"), "x")
            .await
            .expect_err("no program");
        let FormatError::Spawn { program, .. } = &err else {
            panic!("expected Spawn, got {err:?}");
        };
        assert_eq!(program, "tackle-no-such-formatter");
        assert!(
            err.to_string()
                .starts_with("could not start the formatter `tackle-no-such-formatter`")
        );
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn a_long_file_name_still_formats() {
        let bin = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let formatters = Formatters::new(
            vec![fake(bin.path(), "upper", UPPERCASE, &[".txt"], &[])],
            Duration::from_secs(10),
        );
        // The longest name the file system takes; the copy's name must shrink.
        let target = project.path().join(format!("{}.txt", "n".repeat(251)));
        let formatted = formatters.format(&target, "abc").await.expect("formats");
        assert_eq!(formatted.as_deref(), Some("ABC"));
        assert!(listing(project.path()).is_empty());
    }

    #[tokio::test]
    async fn rustfmt_formats_with_the_project_config_and_skips_modules() {
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        if tackle_lsp::find_program("rustfmt", &path_var).is_none() {
            println!("skipped: rustfmt is not on PATH");
            return;
        }
        let formatters = Formatters::new(builtin_formatters(), Duration::from_secs(30));

        let plain = tempfile::tempdir().expect("tempdir");
        let formatted = formatters
            .format(&plain.path().join("main.rs"), "fn  main( ){}")
            .await
            .expect("rustfmt formats");
        assert_eq!(formatted.as_deref(), Some("fn main() {}\n"));
        assert!(listing(plain.path()).is_empty());

        // The copy finds rustfmt.toml, and the modules it declares are not formatted.
        let project = tempfile::tempdir().expect("tempdir");
        std::fs::write(project.path().join("rustfmt.toml"), "hard_tabs = true\n")
            .expect("write rustfmt.toml");
        std::fs::write(project.path().join("foo.rs"), "fn  bar( ){}\n").expect("write foo.rs");
        let formatted = formatters
            .format(
                &project.path().join("lib.rs"),
                "mod foo;\nfn main(){let x=1;}",
            )
            .await
            .expect("rustfmt formats");
        assert_eq!(
            formatted.as_deref(),
            Some("mod foo;\nfn main() {\n\tlet x = 1;\n}\n")
        );
        assert_eq!(
            std::fs::read_to_string(project.path().join("foo.rs")).expect("read foo.rs"),
            "fn  bar( ){}\n"
        );
        assert_eq!(listing(project.path()), ["foo.rs", "rustfmt.toml"]);
    }
}
