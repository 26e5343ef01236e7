//! What the scan knows about commands: the wrappers that run another command, the shells and
//! interpreters that run code given inline, and which arguments of the common readers and
//! writers are paths.
//!
//! Each command has a small grammar: the options that take a value (and what the value is),
//! and what its operands are. Options are read the way getopt reads them: a cluster `-xzf out`
//! gives `out` to `f`, `-oout` attaches it, `--output=out` and `--output out` both work, `--`
//! ends the options. A wrapper's options end at its first operand, which is the command it runs.

use super::Literal;

/// What an option's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Value {
    /// Not a path: a mode, a count, a URL, a name.
    Other,
    /// A file the command reads or writes.
    File,
    /// A directory the command works in or writes into.
    Dir,
    /// curl's data: a file after a leading `@` (`-d @/etc/passwd`).
    At,
    /// curl's form field: a file after `=@` or `=<` (`-F f=@/etc/passwd`).
    Form,
    /// Code in a language other than the shell (`python3 -c`); absolute paths quoted in it count.
    Code,
    /// A command line for the shell (`sh -c`, `env -S`): scanned like the outer line.
    Shell,
    /// A value only when attached to its option (`sed -i.bak`), never the next argument.
    Attached,
}

/// What a command's operands are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operands {
    /// Every operand is a file.
    Files,
    /// Every operand is a directory (`cd`, `pushd`).
    Dirs,
    /// The first operand is not a path (a mode, an owner, a script), the rest are files.
    AfterFirst,
    /// Only the first operand is a file (`source script args…`).
    FirstOnly,
    /// Operands are files, except remote ones (`host:path`, `rsync://…`).
    Remote,
    /// `dd`'s `if=` and `of=` operands.
    Assignments,
    /// No operand is a path (URLs, for example).
    NotPaths,
}

/// The grammar of one command.
pub(super) struct Grammar {
    /// The command names it applies to.
    pub names: &'static [&'static str],
    /// Short options that take a value.
    pub short: &'static [(char, Value)],
    /// Long options that take a value, without the leading `--`.
    pub long: &'static [(&'static str, Value)],
    /// What the operands are.
    pub operands: Operands,
}

/// A command that runs the command after its own options and leading operands.
pub(super) struct Wrapper {
    /// The wrapper's names.
    pub names: &'static [&'static str],
    /// Short options that take a value.
    pub short: &'static [(char, Value)],
    /// Long options that take a value.
    pub long: &'static [(&'static str, Value)],
    /// Operands before the command (`timeout`'s duration).
    pub lead: usize,
    /// Whether `NAME=VALUE` operands come before the command (`env`).
    pub assignments: bool,
}

const O: Value = Value::Other;
const F: Value = Value::File;
const D: Value = Value::Dir;

/// The wrappers.
pub(super) const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["env"],
        short: &[('u', O), ('C', D), ('S', Value::Shell)],
        long: &[("unset", O), ("chdir", D), ("split-string", Value::Shell)],
        lead: 0,
        assignments: true,
    },
    Wrapper {
        names: &["timeout"],
        short: &[('s', O), ('k', O)],
        long: &[("signal", O), ("kill-after", O)],
        lead: 1,
        assignments: false,
    },
    Wrapper {
        names: &["nice"],
        short: &[('n', O)],
        long: &[("adjustment", O)],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["time"],
        short: &[('f', O), ('o', F)],
        long: &[("format", O), ("output", F)],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["exec"],
        short: &[('a', O)],
        long: &[],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["xargs"],
        short: &[
            ('a', F),
            ('d', O),
            ('E', O),
            ('I', O),
            ('L', O),
            ('n', O),
            ('P', O),
            ('s', O),
        ],
        long: &[
            ("arg-file", F),
            ("delimiter", O),
            ("eof", O),
            ("replace", O),
            ("max-lines", O),
            ("max-args", O),
            ("max-procs", O),
            ("max-chars", O),
            ("process-slot-var", O),
        ],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["sudo", "doas"],
        short: &[
            ('u', O),
            ('g', O),
            ('C', O),
            ('D', D),
            ('h', O),
            ('p', O),
            ('r', O),
            ('t', O),
            ('U', O),
            ('T', O),
            ('R', D),
        ],
        long: &[
            ("user", O),
            ("group", O),
            ("close-from", O),
            ("chdir", D),
            ("host", O),
            ("prompt", O),
            ("role", O),
            ("type", O),
            ("other-user", O),
            ("command-timeout", O),
            ("chroot", D),
        ],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["stdbuf"],
        short: &[('i', O), ('o', O), ('e', O)],
        long: &[("input", O), ("output", O), ("error", O)],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["ionice"],
        short: &[('c', O), ('n', O), ('p', O)],
        long: &[("class", O), ("classdata", O)],
        lead: 0,
        assignments: false,
    },
    Wrapper {
        names: &["nohup", "command", "builtin", "setsid"],
        short: &[],
        long: &[],
        lead: 0,
        assignments: false,
    },
];

/// Shells, whose `-c` operand is a command line.
pub(super) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"];

/// The options of a shell that take a value.
pub(super) const SHELL_SHORT: &[(char, Value)] = &[('o', O), ('O', O)];

/// Interpreters and the options that give them code inline.
pub(super) const INTERPRETERS: &[Grammar] = &[
    Grammar {
        names: &["python", "python3", "python2", "pypy", "pypy3"],
        short: &[('c', Value::Code), ('m', O), ('W', O), ('X', O)],
        long: &[],
        operands: Operands::NotPaths,
    },
    Grammar {
        names: &["node", "nodejs", "bun"],
        short: &[('e', Value::Code), ('p', Value::Code), ('r', O)],
        long: &[
            ("eval", Value::Code),
            ("print", Value::Code),
            ("require", O),
        ],
        operands: Operands::NotPaths,
    },
    Grammar {
        names: &["perl", "ruby"],
        short: &[('e', Value::Code), ('E', Value::Code), ('I', O), ('M', O)],
        long: &[],
        operands: Operands::NotPaths,
    },
    Grammar {
        names: &["php"],
        short: &[('r', Value::Code), ('d', O)],
        long: &[],
        operands: Operands::NotPaths,
    },
];

/// The readers and writers whose paths are checked.
pub(super) const FILE_COMMANDS: &[Grammar] = &[
    Grammar {
        names: &["cd", "pushd"],
        short: &[],
        long: &[],
        operands: Operands::Dirs,
    },
    Grammar {
        names: &[
            "rm", "rmdir", "unlink", "tee", "cat", "tac", "more", "strings", "base64",
        ],
        short: &[('w', O)],
        long: &[("wrap", O)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["cp", "mv", "ln", "install"],
        short: &[('t', D), ('S', O), ('m', O), ('o', O), ('g', O)],
        long: &[
            ("target-directory", D),
            ("suffix", O),
            ("mode", O),
            ("owner", O),
            ("group", O),
        ],
        operands: Operands::Files,
    },
    Grammar {
        names: &["mkdir"],
        short: &[('m', O)],
        long: &[("mode", O)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["touch"],
        short: &[('d', O), ('t', O), ('r', F)],
        long: &[("date", O), ("time", O), ("reference", F)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["truncate"],
        short: &[('s', O), ('r', F)],
        long: &[("size", O), ("reference", F)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["shred"],
        short: &[('n', O), ('s', O)],
        long: &[("iterations", O), ("size", O), ("random-source", F)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["chmod", "chown", "chgrp"],
        short: &[],
        long: &[("reference", F)],
        operands: Operands::AfterFirst,
    },
    Grammar {
        names: &["head", "tail"],
        short: &[('n', O), ('c', O), ('s', O)],
        long: &[
            ("lines", O),
            ("bytes", O),
            ("pid", O),
            ("sleep-interval", O),
            ("max-unchanged-stats", O),
        ],
        operands: Operands::Files,
    },
    Grammar {
        names: &["less"],
        short: &[
            ('b', O),
            ('h', O),
            ('j', O),
            ('k', F),
            ('o', F),
            ('O', F),
            ('p', O),
            ('P', O),
            ('t', O),
            ('T', F),
            ('x', O),
            ('y', O),
            ('z', O),
        ],
        long: &[("log-file", F), ("LOG-FILE", F), ("lesskey-file", F)],
        operands: Operands::Files,
    },
    Grammar {
        names: &["nl"],
        short: &[
            ('b', O),
            ('d', O),
            ('f', O),
            ('h', O),
            ('i', O),
            ('l', O),
            ('n', O),
            ('s', O),
            ('v', O),
            ('w', O),
        ],
        long: &[],
        operands: Operands::Files,
    },
    Grammar {
        names: &["od", "xxd", "hexdump"],
        short: &[
            ('A', O),
            ('j', O),
            ('N', O),
            ('S', O),
            ('t', O),
            ('w', O),
            ('c', O),
            ('g', O),
            ('l', O),
            ('o', O),
            ('s', O),
            ('n', O),
            ('e', O),
            ('f', F),
        ],
        long: &[],
        operands: Operands::Files,
    },
    Grammar {
        names: &["source", "."],
        short: &[],
        long: &[],
        operands: Operands::FirstOnly,
    },
    Grammar {
        names: &["sed"],
        short: &[('e', O), ('f', F), ('l', O), ('i', Value::Attached)],
        long: &[
            ("expression", O),
            ("file", F),
            ("line-length", O),
            ("in-place", Value::Attached),
        ],
        operands: Operands::AfterFirst,
    },
    Grammar {
        names: &["sort"],
        short: &[('o', F), ('k', O), ('t', O), ('S', O), ('T', D)],
        long: &[
            ("output", F),
            ("key", O),
            ("field-separator", O),
            ("buffer-size", O),
            ("temporary-directory", D),
            ("files0-from", F),
            ("parallel", O),
        ],
        operands: Operands::Files,
    },
    Grammar {
        names: &["dd"],
        short: &[],
        long: &[],
        operands: Operands::Assignments,
    },
    Grammar {
        names: &["tar", "bsdtar"],
        short: &[
            ('f', F),
            ('C', D),
            ('T', F),
            ('X', F),
            ('g', F),
            ('F', F),
            ('b', O),
            ('H', O),
            ('I', O),
            ('K', O),
            ('L', O),
            ('N', O),
            ('V', O),
        ],
        long: &[
            ("file", F),
            ("directory", D),
            ("files-from", F),
            ("exclude-from", F),
            ("listed-incremental", F),
            ("info-script", F),
            ("new-volume-script", F),
            ("exclude", O),
            ("transform", O),
            ("xform", O),
            ("use-compress-program", O),
            ("owner", O),
            ("group", O),
            ("mode", O),
            ("mtime", O),
            ("format", O),
            ("blocking-factor", O),
            ("label", O),
            ("newer", O),
            ("to-command", O),
        ],
        operands: Operands::Files,
    },
    Grammar {
        names: &["unzip"],
        short: &[('d', D), ('x', O)],
        long: &[],
        operands: Operands::Files,
    },
    Grammar {
        names: &["curl"],
        short: &[
            ('o', F),
            ('T', F),
            ('K', F),
            ('c', F),
            ('D', F),
            ('d', Value::At),
            ('F', Value::Form),
            ('X', O),
            ('H', O),
            ('u', O),
            ('A', O),
            ('e', O),
            ('m', O),
            ('x', O),
            ('w', O),
            ('r', O),
            ('C', O),
            ('U', O),
            ('y', O),
            ('Y', O),
            ('z', O),
            ('b', O),
            ('E', O),
            ('Q', O),
        ],
        long: &[
            ("output", F),
            ("upload-file", F),
            ("config", F),
            ("cookie-jar", F),
            ("dump-header", F),
            ("trace", F),
            ("trace-ascii", F),
            ("stderr", F),
            ("etag-save", F),
            ("libcurl", F),
            ("output-dir", D),
            ("data", Value::At),
            ("data-binary", Value::At),
            ("data-ascii", Value::At),
            ("data-raw", O),
            ("data-urlencode", Value::At),
            ("json", Value::At),
            ("form", Value::Form),
            ("url", O),
            ("request", O),
            ("header", O),
            ("user", O),
            ("user-agent", O),
            ("referer", O),
            ("max-time", O),
            ("connect-timeout", O),
            ("proxy", O),
            ("write-out", O),
            ("range", O),
            ("retry", O),
            ("cookie", O),
            ("cert", O),
            ("key", O),
            ("cacert", O),
        ],
        operands: Operands::NotPaths,
    },
    Grammar {
        names: &["wget"],
        short: &[
            ('O', F),
            ('o', F),
            ('a', F),
            ('i', F),
            ('P', D),
            ('t', O),
            ('T', O),
            ('w', O),
            ('U', O),
            ('e', O),
            ('Q', O),
            ('l', O),
            ('A', O),
            ('R', O),
            ('D', O),
            ('X', O),
            ('I', O),
            ('B', O),
        ],
        long: &[
            ("output-document", F),
            ("output-file", F),
            ("append-output", F),
            ("input-file", F),
            ("directory-prefix", D),
            ("post-file", F),
            ("body-file", F),
            ("load-cookies", F),
            ("save-cookies", F),
            ("header", O),
            ("user", O),
            ("password", O),
            ("tries", O),
            ("timeout", O),
            ("user-agent", O),
        ],
        operands: Operands::NotPaths,
    },
    Grammar {
        names: &["rsync"],
        short: &[('e', O), ('f', O), ('T', D), ('B', O), ('M', O)],
        long: &[
            ("exclude-from", F),
            ("include-from", F),
            ("files-from", F),
            ("password-file", F),
            ("log-file", F),
            ("temp-dir", D),
            ("backup-dir", D),
            ("partial-dir", D),
            ("compare-dest", D),
            ("copy-dest", D),
            ("link-dest", D),
            ("write-batch", F),
            ("read-batch", F),
            ("exclude", O),
            ("include", O),
            ("filter", O),
            ("rsh", O),
            ("rsync-path", O),
            ("port", O),
            ("timeout", O),
            ("chmod", O),
            ("chown", O),
            ("bwlimit", O),
            ("max-size", O),
            ("min-size", O),
            ("suffix", O),
            ("out-format", O),
            ("log-file-format", O),
        ],
        operands: Operands::Remote,
    },
    Grammar {
        names: &["scp"],
        short: &[
            ('P', O),
            ('l', O),
            ('c', O),
            ('o', O),
            ('S', O),
            ('J', O),
            ('D', O),
            ('X', O),
            ('i', O),
            ('F', O),
        ],
        long: &[],
        operands: Operands::Remote,
    },
];

/// The last path component: `/bin/cp` is `cp`.
pub(super) fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The wrapper named `name`, if it is one.
pub(super) fn wrapper(name: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.names.contains(&name))
}

/// The grammar of `name` in `table`, if it has one.
pub(super) fn grammar(table: &'static [Grammar], name: &str) -> Option<&'static Grammar> {
    table.iter().find(|g| g.names.contains(&name))
}

/// One argument: its literal value, or `None` when it depends on run-time values.
pub(super) type Arg = Option<Literal>;

/// The arguments of a command, sorted by getopt's rules.
#[derive(Default)]
pub(super) struct Parsed {
    /// The values of options that take one, with what they are (run-time values left out).
    pub values: Vec<(Value, Literal)>,
    /// The positions of the operands in the argument list.
    pub operands: Vec<usize>,
    /// Every option given: short letters as themselves, long ones by name.
    pub given: Vec<String>,
}

/// Sorts `args` into options and operands. With `stop_at_operand` (a wrapper), the options
/// end at the first operand, and everything from there on is an operand.
pub(super) fn parse(
    args: &[Arg],
    short: &[(char, Value)],
    long: &[(&str, Value)],
    stop_at_operand: bool,
) -> Parsed {
    let mut parsed = Parsed::default();
    let mut options_done = false;
    let mut index = 0;
    while index < args.len() {
        let at = index;
        index += 1;
        let text = match &args[at] {
            Some(literal) if !options_done => literal.text.as_str(),
            _ => {
                parsed.operands.push(at);
                if stop_at_operand {
                    options_done = true;
                }
                continue;
            }
        };
        if text == "--" {
            options_done = true;
            continue;
        }
        if text == "-" || !text.starts_with('-') {
            parsed.operands.push(at);
            if stop_at_operand {
                options_done = true;
            }
            continue;
        }
        if let Some(body) = text.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((name, _)) => (name, Some(name.len() + 3)),
                None => (body, None),
            };
            parsed.given.push(name.to_owned());
            let kind = long.iter().find(|(n, _)| *n == name).map(|&(_, k)| k);
            let literal = args[at].as_ref();
            match (kind, attached) {
                (Some(kind), Some(from)) => {
                    if let Some(literal) = literal {
                        parsed.values.push((kind, literal.tail(from)));
                    }
                }
                (Some(Value::Attached), None) => {}
                (Some(kind), None) => {
                    if let Some(Some(value)) = args.get(index) {
                        parsed.values.push((kind, value.clone()));
                    }
                    index += 1;
                }
                // An unknown option's attached absolute path still counts.
                (None, Some(from)) => {
                    if let Some(value) = literal.map(|l| l.tail(from))
                        && value.text.starts_with('/')
                    {
                        parsed.values.push((Value::File, value));
                    }
                }
                (None, None) => {}
            }
            continue;
        }
        // A cluster of short options: the first that takes a value takes the rest, or the
        // next argument.
        for (offset, letter) in text.char_indices().skip(1) {
            parsed.given.push(letter.to_string());
            let Some(&(_, kind)) = short.iter().find(|(l, _)| *l == letter) else {
                continue;
            };
            let rest = offset + letter.len_utf8();
            if rest < text.len() {
                if let Some(literal) = &args[at] {
                    parsed.values.push((kind, literal.tail(rest)));
                }
            } else if kind != Value::Attached {
                if let Some(Some(value)) = args.get(index) {
                    parsed.values.push((kind, value.clone()));
                }
                index += 1;
            }
            break;
        }
    }
    parsed
}

/// Absolute paths quoted in code: `open('/etc/passwd')` gives `/etc/passwd`.
pub(super) fn quoted_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut chars = code.char_indices();
    while let Some((start, quote)) = chars.next() {
        if !matches!(quote, '\'' | '"' | '`') {
            continue;
        }
        let mut end = None;
        let mut escaped = false;
        for (at, c) in chars.by_ref() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '\n' => break,
                c if c == quote => {
                    end = Some(at);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        let inner = &code[start + 1..end];
        if inner.len() > 1 && (inner.starts_with('/') || inner.starts_with("~/")) {
            paths.push(inner.to_owned());
        }
    }
    paths
}
