//! The bash permission scan: the commands a command line runs, and the directories outside the
//! Location it names.
//!
//! The line is parsed with tree-sitter-bash. Every simple command becomes a `bash` pattern, nested
//! ones included: those in `$(…)`, backticks, `<(…)`, pipelines, `&&`/`||`/`;` lists, subshells,
//! groups, `if`/`for`/`while`/`case` bodies and function bodies. A pattern is the command's own
//! text with its redirects, whitespace collapsed. Since the tool asks with every pattern and the
//! permission service denies when any pattern is denied, a deny on one sub-command denies the
//! line. A line that does not parse also asks for its whole text, so nothing is allowed unread.
//!
//! Threat model: the scan decides which permission prompts to show. It is not a sandbox. Aliases,
//! `eval`, `sh -c "$x"`, scripts, interpreters and programs that write files themselves can do
//! anything the user can, whatever the patterns say. Paths are judged lexically here; the caller
//! follows the symlinks of the paths found inside the root ([`Scan::paths_within`]).
//!
//! Paths: a command's name is read as the shell reads it (`"cp"`, `\cp` and `/bin/cp` are `cp`),
//! through wrappers and their options (`env`, `timeout`, `nice`, `nohup`, `time`, `exec`,
//! `command`, `xargs`, `sudo`, …). The readers and writers in [`commands`] have grammars that say
//! which options and operands are paths (`cp -t DIR`, `dd of=`, `tar -f`, `curl -o`, `wget -O`,
//! `rsync`, `tee`, `sed -i`, `cat`, `head`, `source`, …); `sh -c` and `env -S` lines are scanned
//! like the outer line, and absolute paths quoted in inline code (`python3 -c`) count. The
//! targets of redirects (`>`, `>>`, `2>`, `&>`, `>|`, `<`) are paths too. Paths resolve against
//! the working directory. A path outside the root adds `<dir>/*`: the path's parent, or the
//! directory itself for `cd` and for the part of a glob before its first wildcard component.
//! `~`, `$HOME` and `$PWD` expand; arguments built from other variables or substitutions are
//! skipped.
//!
//! `cd` tracking is best effort: a `cd` changes the directory for the commands after it in the
//! same shell, including after `||` and inside `if` bodies, but not outside a subshell,
//! substitution, pipeline element or function body. After `cd $X`, `cd -` or `popd` the directory
//! is unknown and relative paths are skipped. The caller checks the starting directory itself.

use std::path::Path;

use tackle_permission::{
    TargetKind, external_directory_pattern, is_absolute_path, is_within, normalize_path,
};
use tree_sitter::{Node, Parser};

use commands::{Arg, Grammar, Operands, Value};

mod arity;
mod commands;
#[cfg(test)]
mod tests;

/// One command found in a command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedCommand {
    /// The command's own text with its redirects: the `bash` permission pattern.
    pub text: String,
    /// The `always` pattern from the arity table, such as `git checkout *`.
    pub always: String,
    /// True for `cd` alone, which asks nothing of `bash`.
    pub cd_only: bool,
}

/// What a command line needs permission for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Every command, nested ones included, in source order.
    pub commands: Vec<ScannedCommand>,
    /// `external_directory` patterns (`<dir>/*`) for paths outside the root, deduplicated.
    pub external_directories: Vec<String>,
    /// The paths inside the root, judged lexically. The caller follows their symlinks, which
    /// may lead out of the root.
    pub paths_within: Vec<NamedPath>,
    /// True when the command line did not parse; then `bash_patterns` is the whole text.
    pub parse_failed: bool,
    /// The whole command line.
    pub source: String,
}

impl Scan {
    /// The patterns to ask `bash` for: each command's text, deduplicated, in order.
    ///
    /// A line that did not parse gives its whole text first, then the commands tree-sitter
    /// still recognized, so a deny on one of them holds. A line with no commands at all gives
    /// its whole text. A line of `cd` commands only gives nothing.
    pub fn bash_patterns(&self) -> Vec<String> {
        if self.whole_line() {
            let whole = std::iter::once(self.source.clone());
            return dedup_keep_empty(whole.chain(self.asking().map(|c| c.text.clone())));
        }
        dedup(self.asking().map(|c| c.text.clone()))
    }

    /// The patterns an "always" reply saves: each command's arity prefix and ` *`.
    ///
    /// A line that did not parse, or has no commands at all, saves its exact text.
    pub fn always_patterns(&self) -> Vec<String> {
        if self.whole_line() {
            return vec![self.source.clone()];
        }
        dedup(self.asking().map(|c| c.always.clone()))
    }

    /// True when the whole line stands for itself.
    fn whole_line(&self) -> bool {
        self.parse_failed || self.commands.is_empty()
    }

    /// The commands that ask `bash`: all but `cd` alone.
    fn asking(&self) -> impl Iterator<Item = &ScannedCommand> {
        self.commands.iter().filter(|c| !c.cd_only)
    }
}

/// Scans `command` run in `cwd`, judging paths against the Location `root`.
///
/// `home` expands `~` and `$HOME`; without it such paths are skipped. A relative `cwd` is taken
/// relative to `root`.
pub fn scan(command: &str, cwd: &Path, root: &Path, home: Option<&Path>) -> Scan {
    let root = normalize_path(&root.to_string_lossy());
    let cwd = cwd.to_string_lossy();
    let cwd = if is_absolute_path(&cwd) {
        normalize_path(&cwd)
    } else {
        normalize_path(&format!("{root}/{cwd}"))
    };
    let mut scanner = Scanner {
        src: command,
        root,
        home: home.map(|h| normalize_path(&h.to_string_lossy())),
        commands: Vec::new(),
        external: Vec::new(),
        within: Vec::new(),
        failed: false,
    };
    let mut parser = Parser::new();
    let tree = parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()
        .and_then(|()| parser.parse(command, None));
    match tree {
        Some(tree) => {
            let node = tree.root_node();
            scanner.failed = node.has_error();
            scanner.walk(node, &mut Some(cwd), &[], 0);
        }
        None => scanner.failed = true,
    }
    Scan {
        commands: scanner.commands,
        external_directories: scanner.external,
        paths_within: scanner.within,
        parse_failed: scanner.failed,
        source: command.to_owned(),
    }
}

/// Commands that change the working directory.
const CD_COMMANDS: &[&str] = &["cd", "pushd", "popd"];

/// Nodes kept verbatim when whitespace is collapsed.
const ATOMIC: &[&str] = &[
    "string",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "heredoc_body",
];

/// Nesting deeper than this is not analysed; the line then counts as unparsed.
const MAX_DEPTH: usize = 256;

/// A working directory: `None` once it can no longer be known.
type Cwd = Option<String>;

/// A path argument with its quotes removed and `~`, `$HOME` and `$PWD` expanded.
#[derive(Clone, Debug, Default)]
struct Literal {
    /// The path.
    text: String,
    /// The byte offset of the first unquoted wildcard, if any.
    glob_at: Option<usize>,
}

impl Literal {
    /// The part from byte `from` on: the value in `--output=/x` or `-o/x`.
    fn tail(&self, from: usize) -> Self {
        Self {
            text: self.text.get(from..).unwrap_or_default().to_owned(),
            glob_at: self.glob_at.and_then(|at| at.checked_sub(from)),
        }
    }
}

/// A path inside the root that the command line names, and what it is expected to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedPath {
    /// The absolute path, normalized lexically.
    pub path: String,
    /// A file, or a directory (`cd`, the fixed part of a glob).
    pub kind: TargetKind,
}

/// The walk's state.
struct Scanner<'s> {
    /// The command line.
    src: &'s str,
    /// The normalized Location root.
    root: String,
    /// The normalized home directory.
    home: Option<String>,
    /// Commands found so far.
    commands: Vec<ScannedCommand>,
    /// External directory patterns found so far.
    external: Vec<String>,
    /// Paths inside the root found so far.
    within: Vec<NamedPath>,
    /// Whether the line failed to parse or nests too deeply.
    failed: bool,
}

impl<'s> Scanner<'s> {
    /// The source text of `node`.
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or_default()
    }

    /// Walks a statement, recording commands and paths. `extra` are redirects that tree-sitter
    /// hung on an enclosing list or pipeline but that belong to its last command.
    fn walk(&mut self, node: Node<'_>, cwd: &mut Cwd, extra: &[Node<'_>], depth: usize) {
        if depth > MAX_DEPTH {
            self.failed = true;
            return;
        }
        let depth = depth + 1;
        match node.kind() {
            "command" => self.command(node, None, extra, cwd, depth),
            "redirected_statement" => self.redirected(node, extra, cwd, depth),
            "declaration_command"
            | "unset_command"
            | "variable_assignment"
            | "variable_assignments" => self.other_statement(node, cwd, depth),
            "comment" => {}
            // These run in a subshell, or later: a `cd` inside does not last.
            "subshell"
            | "command_substitution"
            | "process_substitution"
            | "function_definition" => {
                let mut inner = cwd.clone();
                for child in named_children(node) {
                    self.walk(child, &mut inner, &[], depth);
                }
            }
            "pipeline" => {
                let children = named_children(node);
                let last = children.len().saturating_sub(1);
                for (index, child) in children.into_iter().enumerate() {
                    let mut inner = cwd.clone();
                    let extra = if index == last { extra } else { &[] };
                    self.walk(child, &mut inner, extra, depth);
                }
            }
            "list" | "negated_command" => {
                let children = named_children(node);
                let last = children.len().saturating_sub(1);
                for (index, child) in children.into_iter().enumerate() {
                    let extra = if index == last { extra } else { &[] };
                    self.walk(child, cwd, extra, depth);
                }
            }
            // The loop's `i=0` is arithmetic, not a statement.
            "c_style_for_statement" => {
                for child in named_children(node) {
                    if child.kind() == "variable_assignment" {
                        self.nested(child, cwd, depth);
                    } else {
                        self.walk(child, cwd, &[], depth);
                    }
                }
            }
            _ => {
                for child in named_children(node) {
                    self.walk(child, cwd, &[], depth);
                }
            }
        }
    }

    /// Walks a statement with redirects: their targets first, then the body, then any
    /// substitutions inside the redirects.
    fn redirected(&mut self, node: Node<'_>, extra: &[Node<'_>], cwd: &mut Cwd, depth: usize) {
        let redirects = field_children(node, "redirect");
        for redirect in &redirects {
            self.redirect_target(*redirect, cwd);
        }
        match node.child_by_field_name("body") {
            Some(body) if body.kind() == "command" => {
                self.command(body, Some(node), extra, cwd, depth);
            }
            // `a | b > f` and `a && b > f`: the redirect belongs to `b`.
            Some(body) if matches!(body.kind(), "list" | "pipeline" | "negated_command") => {
                let mut attached = redirects.clone();
                attached.extend_from_slice(extra);
                self.walk(body, cwd, &attached, depth);
            }
            Some(body) => self.walk(body, cwd, &[], depth),
            None => {}
        }
        for redirect in redirects {
            self.nested(redirect, cwd, depth);
        }
    }

    /// Records a simple command, walks its substitutions, checks its paths and follows `cd`.
    ///
    /// `redirected` is the enclosing redirected statement whose text includes the redirects.
    fn command(
        &mut self,
        node: Node<'_>,
        redirected: Option<Node<'_>>,
        extra: &[Node<'_>],
        cwd: &mut Cwd,
        depth: usize,
    ) {
        let words: Vec<Node<'_>> = node
            .child_by_field_name("name")
            .into_iter()
            .chain(field_children(node, "argument"))
            .collect();
        let tokens: Vec<String> = words.iter().map(|w| self.normalized(*w)).collect();
        let token_refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
        let mut text = self.normalized(redirected.unwrap_or(node));
        for redirect in extra {
            text.push(' ');
            text.push_str(&self.normalized(*redirect));
        }
        // The name as the shell reads it: `"cd"` and `\\cd` are `cd`.
        let name = words.first().and_then(|w| self.literal(*w, cwd));
        let first = name.as_ref().map_or("", |n| n.text.as_str());
        let is_cd = CD_COMMANDS.contains(&first);
        let mut redirects = redirected.map_or_else(Vec::new, |r| field_children(r, "redirect"));
        redirects.extend_from_slice(extra);
        let writes = redirects.iter().any(|r| self.writes_file(*r));
        self.commands.push(ScannedCommand {
            text,
            always: arity::always_pattern(&token_refs),
            cd_only: is_cd && !writes,
        });
        // Substitutions in assignments and arguments run before the command.
        self.nested(node, cwd, depth);

        if is_cd {
            self.change_dir(first, &words[1..], cwd);
        } else {
            let args: Vec<Arg> = words.iter().map(|w| self.literal(*w, cwd)).collect();
            self.check_command(&args, cwd, depth);
        }
    }

    /// Records a declaration, `unset` or plain assignment: not a command, but it can change
    /// what later commands do (`PATH=…`), so it asks too.
    fn other_statement(&mut self, node: Node<'_>, cwd: &mut Cwd, depth: usize) {
        let text = self.normalized(node);
        let always = match node.kind() {
            "declaration_command" | "unset_command" => {
                format!("{} *", text.split(' ').next().unwrap_or_default())
            }
            _ => match text.split_once('=') {
                Some((name, _)) => format!("{name}=*"),
                None => text.clone(),
            },
        };
        self.commands.push(ScannedCommand {
            text,
            always,
            cd_only: false,
        });
        self.nested(node, cwd, depth);
    }

    /// Walks the substitutions anywhere inside `node`, each in its own subshell.
    fn nested(&mut self, node: Node<'_>, cwd: &Cwd, depth: usize) {
        if depth > MAX_DEPTH {
            self.failed = true;
            return;
        }
        for child in named_children(node) {
            if matches!(
                child.kind(),
                "command_substitution" | "process_substitution"
            ) {
                self.walk(child, &mut cwd.clone(), &[], depth + 1);
            } else {
                self.nested(child, cwd, depth + 1);
            }
        }
    }

    /// Follows `cd`, `pushd` or `popd`, checking the new directory.
    fn change_dir(&mut self, name: &str, args: &[Node<'_>], cwd: &mut Cwd) {
        if name == "popd" {
            *cwd = None;
            return;
        }
        let mut options_done = false;
        let mut target = None;
        for arg in args {
            let Some(literal) = self.literal(*arg, cwd) else {
                *cwd = None;
                return;
            };
            if !options_done && literal.text == "--" {
                options_done = true;
                continue;
            }
            if !options_done && literal.text.starts_with('-') && literal.text != "-" {
                continue;
            }
            target = Some(literal);
            break;
        }
        let literal = match target {
            Some(literal) => literal,
            // `pushd` alone swaps the stack; `cd` alone goes home.
            None if name == "pushd" => {
                *cwd = None;
                return;
            }
            None => match &self.home {
                Some(home) => Literal {
                    text: home.clone(),
                    glob_at: None,
                },
                None => {
                    *cwd = None;
                    return;
                }
            },
        };
        if literal.text == "-" || (name == "pushd" && literal.text.starts_with('+')) {
            *cwd = None;
            return;
        }
        self.check_path(&literal, TargetKind::Directory, cwd);
        *cwd = if literal.glob_at.is_some() {
            None
        } else {
            resolve(cwd, &literal.text)
        };
    }

    /// Checks the paths a command touches, looking through wrappers (`env`, `timeout`, `sudo`,
    /// …) to the command they run, into the command lines of `sh -c` and `env -S`, and into the
    /// quoted absolute paths of inline code (`python3 -c`).
    fn check_command(&mut self, args: &[Arg], cwd: &Cwd, depth: usize) {
        let mut at = 0;
        // Each round moves past at least one argument, so this ends.
        while let Some(Some(name)) = args.get(at) {
            if name.glob_at.is_some() {
                return;
            }
            let name = commands::base(&name.text);
            let rest = &args[at + 1..];
            if let Some(wrapper) = commands::wrapper(name) {
                let parsed = commands::parse(rest, wrapper.short, wrapper.long, true);
                self.check_values(&parsed.values, cwd, depth);
                if name == "sudo" && parsed.given.iter().any(|g| g == "e" || g == "edit") {
                    self.check_operands(rest, &parsed.operands, TargetKind::File, cwd);
                    return;
                }
                let next = parsed
                    .operands
                    .iter()
                    .skip(wrapper.lead)
                    .find(|&&i| !(wrapper.assignments && is_assignment(&rest[i])));
                match next {
                    Some(&next) => at += 1 + next,
                    None => return,
                }
                continue;
            }
            if commands::SHELLS.contains(&name) {
                let parsed = commands::parse(rest, commands::SHELL_SHORT, &[], true);
                let first = parsed.operands.first().and_then(|&i| rest[i].as_ref());
                match first {
                    Some(line) if parsed.given.iter().any(|g| g == "c") => {
                        self.inline_shell(&line.text, cwd, depth);
                    }
                    // `sh script.sh`: the script is read.
                    Some(script) => self.check_path(script, TargetKind::File, cwd),
                    None => {}
                }
                return;
            }
            if let Some(grammar) = commands::grammar(commands::INTERPRETERS, name) {
                let parsed = commands::parse(rest, grammar.short, grammar.long, true);
                self.check_values(&parsed.values, cwd, depth);
                return;
            }
            if name == "sudoedit" {
                let parsed = commands::parse(rest, &[], &[], false);
                self.check_operands(rest, &parsed.operands, TargetKind::File, cwd);
                return;
            }
            if let Some(grammar) = commands::grammar(commands::FILE_COMMANDS, name) {
                self.file_arguments(name, grammar, rest, cwd, depth);
            }
            return;
        }
    }

    /// Checks the paths among the arguments of a reader or writer, by its grammar.
    fn file_arguments(
        &mut self,
        name: &str,
        grammar: &Grammar,
        args: &[Arg],
        cwd: &Cwd,
        depth: usize,
    ) {
        if grammar.operands == Operands::Assignments {
            for literal in args.iter().flatten() {
                if literal.text.starts_with("if=") || literal.text.starts_with("of=") {
                    self.check_path(&literal.tail(3), TargetKind::File, cwd);
                }
            }
            return;
        }
        let mut args = args.to_vec();
        if let Some(Some(first)) = args.first_mut() {
            // `tar cf out.tar dir`: the first argument is a cluster without its dash.
            let old_tar = name.ends_with("tar")
                && first.text.chars().all(|c| c.is_ascii_alphabetic())
                && !first.text.is_empty();
            // `chmod -x file`: a mode, not an option.
            let negative_mode = name == "chmod"
                && first.text.len() > 1
                && first.text[1..].chars().all(|c| "rwxXst".contains(c));
            if old_tar {
                first.text.insert(0, '-');
            } else if negative_mode {
                first.text.replace_range(..1, "=");
            }
        }
        let parsed = commands::parse(&args, grammar.short, grammar.long, false);
        self.check_values(&parsed.values, cwd, depth);
        let operands: &[usize] = match grammar.operands {
            Operands::AfterFirst => {
                let first_is_path = parsed.given.iter().any(|g| {
                    matches!(
                        (name, g.as_str()),
                        ("chmod" | "chown" | "chgrp", "reference")
                            | ("sed", "e" | "f" | "expression" | "file")
                    )
                });
                if first_is_path {
                    &parsed.operands
                } else {
                    parsed.operands.get(1..).unwrap_or_default()
                }
            }
            Operands::FirstOnly => parsed.operands.get(..1).unwrap_or(&parsed.operands),
            Operands::NotPaths | Operands::Assignments => &[],
            Operands::Files | Operands::Dirs | Operands::Remote => &parsed.operands,
        };
        let operands: Vec<usize> = if grammar.operands == Operands::Remote {
            operands
                .iter()
                .copied()
                .filter(|&i| args[i].as_ref().is_none_or(|l| !is_remote(&l.text)))
                .collect()
        } else {
            operands.to_vec()
        };
        let kind = if grammar.operands == Operands::Dirs {
            TargetKind::Directory
        } else {
            TargetKind::File
        };
        self.check_operands(&args, &operands, kind, cwd);
    }

    /// Checks the operands at `positions` as paths of `kind`; run-time values and `-` are skipped.
    fn check_operands(&mut self, args: &[Arg], positions: &[usize], kind: TargetKind, cwd: &Cwd) {
        for &at in positions {
            if let Some(Some(literal)) = args.get(at)
                && literal.text != "-"
            {
                self.check_path(literal, kind, cwd);
            }
        }
    }

    /// Checks option values that are paths, or that hold paths or command lines.
    fn check_values(&mut self, values: &[(Value, Literal)], cwd: &Cwd, depth: usize) {
        for (kind, literal) in values {
            match kind {
                Value::File => self.check_path(literal, TargetKind::File, cwd),
                Value::Dir => self.check_path(literal, TargetKind::Directory, cwd),
                // `-d @file`; `@-` is stdin.
                Value::At => {
                    if literal.text.starts_with('@') && literal.text != "@-" {
                        self.check_path(&literal.tail(1), TargetKind::File, cwd);
                    }
                }
                // `-F name=@file;type=text/plain` or `name=<file`.
                Value::Form => {
                    if let Some(at) = literal.text.find("=@").or_else(|| literal.text.find("=<")) {
                        let mut path = literal.tail(at + 2);
                        if let Some(end) = path.text.find(';') {
                            path.text.truncate(end);
                        }
                        if path.text != "-" {
                            self.check_path(&path, TargetKind::File, cwd);
                        }
                    }
                }
                Value::Code => {
                    for path in commands::quoted_paths(&literal.text) {
                        let text = match path.strip_prefix('~') {
                            Some(rest) => match &self.home {
                                Some(home) => format!("{home}{rest}"),
                                None => continue,
                            },
                            None => path,
                        };
                        let literal = Literal {
                            text,
                            glob_at: None,
                        };
                        self.check_path(&literal, TargetKind::File, cwd);
                    }
                }
                Value::Shell => self.inline_shell(&literal.text, cwd, depth),
                Value::Other | Value::Attached => {}
            }
        }
    }

    /// Scans a command line given as an argument (`sh -c '…'`, `env -S '…'`) like the outer
    /// one: its commands ask `bash` too, and its paths count, from the same directory.
    fn inline_shell(&mut self, line: &str, cwd: &Cwd, depth: usize) {
        if depth > MAX_DEPTH {
            self.failed = true;
            return;
        }
        let mut parser = Parser::new();
        let Some(tree) = parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()
            .and_then(|()| parser.parse(line, None))
        else {
            return;
        };
        let mut inner = Scanner {
            src: line,
            root: self.root.clone(),
            home: self.home.clone(),
            commands: Vec::new(),
            external: std::mem::take(&mut self.external),
            within: std::mem::take(&mut self.within),
            failed: false,
        };
        inner.walk(tree.root_node(), &mut cwd.clone(), &[], depth + 1);
        self.commands.extend(inner.commands);
        self.external = inner.external;
        self.within = inner.within;
    }

    /// Checks the target of a redirect that writes or reads a file.
    fn redirect_target(&mut self, redirect: Node<'_>, cwd: &Cwd) {
        match redirect.kind() {
            "file_redirect" if self.writes_file(redirect) || reads_file(redirect) => {
                for target in field_children(redirect, "destination") {
                    if let Some(literal) = self.literal(target, cwd)
                        && !is_device(&literal.text)
                    {
                        self.check_path(&literal, TargetKind::File, cwd);
                    }
                }
            }
            "heredoc_redirect" => {
                for child in named_children(redirect) {
                    self.redirect_target(child, cwd);
                }
            }
            _ => {}
        }
    }

    /// True when a redirect writes to a file: not a read, a descriptor copy or a device.
    fn writes_file(&self, redirect: Node<'_>) -> bool {
        match redirect.kind() {
            "file_redirect" => {
                let children = all_children(redirect);
                let writing = children.iter().any(|c| {
                    !c.is_named() && matches!(c.kind(), ">" | ">>" | "&>" | "&>>" | ">|" | ">&")
                });
                writing
                    && field_children(redirect, "destination").iter().any(|d| {
                        let text = self.text(*d);
                        !(d.kind() == "number" || text == "-" || is_device(text))
                    })
            }
            "heredoc_redirect" => named_children(redirect)
                .iter()
                .any(|c| self.writes_file(*c)),
            _ => false,
        }
    }

    /// Adds the external directory pattern for a path outside the root, or records a path
    /// inside it. Devices (`/dev/null`, `/dev/urandom`) are not files to guard.
    fn check_path(&mut self, literal: &Literal, kind: TargetKind, cwd: &Cwd) {
        if is_device(&literal.text) {
            return;
        }
        let (path, kind) = match literal.glob_at {
            Some(at) => {
                let prefix = &literal.text[..at];
                let dir = match prefix.rfind('/') {
                    Some(0) => "/",
                    Some(index) => &prefix[..index],
                    None => "",
                };
                (dir, TargetKind::Directory)
            }
            None => (literal.text.as_str(), kind),
        };
        let Some(absolute) = resolve(cwd, path) else {
            return;
        };
        if is_within(&self.root, &absolute) {
            let named = NamedPath {
                path: absolute,
                kind,
            };
            if !self.within.contains(&named) {
                self.within.push(named);
            }
        } else {
            let pattern = external_directory_pattern(&absolute, kind);
            if !self.external.contains(&pattern) {
                self.external.push(pattern);
            }
        }
    }

    /// The literal value of an argument, or `None` when it depends on run-time values.
    fn literal(&self, node: Node<'_>, cwd: &Cwd) -> Option<Literal> {
        let mut literal = Literal::default();
        self.append_literal(node, cwd, &mut literal, true)?;
        Some(literal)
    }

    /// Appends the literal value of `node`; `first` allows a leading `~`.
    fn append_literal(
        &self,
        node: Node<'_>,
        cwd: &Cwd,
        out: &mut Literal,
        first: bool,
    ) -> Option<()> {
        let text = self.text(node);
        match node.kind() {
            "word" => {
                let mut rest = text;
                if first && (rest == "~" || rest.starts_with("~/")) {
                    out.text.push_str(self.home.as_deref()?);
                    rest = &rest[1..];
                } else if first && rest.starts_with('~') {
                    // `~user` needs the user database.
                    return None;
                }
                let mut chars = rest.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some('\n') | None => {}
                            Some(escaped) => out.text.push(escaped),
                        },
                        '$' | '`' => return None,
                        '*' | '?' | '[' => {
                            out.glob_at.get_or_insert(out.text.len());
                            out.text.push(c);
                        }
                        _ => out.text.push(c),
                    }
                }
            }
            "number" => out.text.push_str(text),
            "command_name" => {
                for child in named_children(node) {
                    self.append_literal(child, cwd, out, first)?;
                }
            }
            "raw_string" => {
                out.text
                    .push_str(text.strip_prefix('\'')?.strip_suffix('\'')?);
            }
            "string" => {
                text.strip_prefix('"')?.strip_suffix('"')?;
                let mut pos = node.start_byte() + 1;
                for child in named_children(node) {
                    let gap = self.src.get(pos..child.start_byte())?;
                    out.text.push_str(&unescape_double(gap));
                    match child.kind() {
                        "string_content" => out.text.push_str(&unescape_double(self.text(child))),
                        "simple_expansion" | "expansion" => {
                            out.text.push_str(&self.variable(child, cwd)?);
                        }
                        _ => return None,
                    }
                    pos = child.end_byte();
                }
                let tail = self.src.get(pos..node.end_byte() - 1)?;
                out.text.push_str(&unescape_double(tail));
            }
            "concatenation" => {
                for (index, child) in all_children(node).into_iter().enumerate() {
                    if !child.is_named() {
                        return None;
                    }
                    self.append_literal(child, cwd, out, first && index == 0)?;
                }
            }
            "simple_expansion" | "expansion" => out.text.push_str(&self.variable(node, cwd)?),
            _ => return None,
        }
        Some(())
    }

    /// The value of `$HOME` or `$PWD`; other variables are unknown.
    fn variable(&self, node: Node<'_>, cwd: &Cwd) -> Option<String> {
        match self.text(node) {
            "$HOME" | "${HOME}" => self.home.clone(),
            "$PWD" | "${PWD}" => cwd.clone(),
            _ => None,
        }
    }

    /// The text of `node` with each run of whitespace between tokens (line continuations
    /// included) collapsed to one space. Quoted strings and heredoc bodies stay verbatim.
    fn normalized(&self, node: Node<'_>) -> String {
        let mut spans = Vec::new();
        leaf_spans(node, &mut spans);
        let mut out = String::new();
        let mut pos = node.start_byte();
        for (start, end) in spans {
            out.push_str(&collapse(self.src.get(pos..start).unwrap_or_default()));
            out.push_str(self.src.get(start..end).unwrap_or_default());
            pos = pos.max(end);
        }
        out.push_str(&collapse(
            self.src.get(pos..node.end_byte()).unwrap_or_default(),
        ));
        out.trim().to_owned()
    }
}

/// The byte ranges of the leaves of `node`, treating [`ATOMIC`] nodes as leaves, in order.
/// Without recursion: a command may nest `$(` thousands deep.
fn leaf_spans(node: Node<'_>, out: &mut Vec<(usize, usize)>) {
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        if node.child_count() == 0 || ATOMIC.contains(&node.kind()) {
            out.push((node.start_byte(), node.end_byte()));
            continue;
        }
        pending.extend(all_children(node).into_iter().rev());
    }
}

/// A gap between tokens: one space for whitespace, kept as is otherwise.
fn collapse(gap: &str) -> String {
    if gap.is_empty() {
        String::new()
    } else if gap.replace("\\\n", " ").chars().all(char::is_whitespace) {
        " ".to_owned()
    } else {
        gap.to_owned()
    }
}

/// Removes the backslashes that escape characters inside double quotes.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(&next @ ('$' | '`' | '"' | '\\'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Resolves `path` against the working directory; `None` when a relative path meets an unknown
/// directory.
fn resolve(cwd: &Cwd, path: &str) -> Option<String> {
    if is_absolute_path(path) {
        Some(normalize_path(path))
    } else if path.is_empty() {
        cwd.clone()
    } else {
        cwd.as_ref()
            .map(|dir| normalize_path(&format!("{dir}/{path}")))
    }
}

/// True when a redirect reads a file: `< file`, not a descriptor copy (`<&3`).
fn reads_file(redirect: Node<'_>) -> bool {
    all_children(redirect)
        .iter()
        .any(|c| !c.is_named() && c.kind() == "<")
}

/// True for a `NAME=VALUE` argument, as `env` reads its operands.
fn is_assignment(arg: &Arg) -> bool {
    arg.as_ref().is_some_and(|literal| {
        literal.text.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

/// True for a remote `rsync` or `scp` operand: `host:path`, `user@host:path`, `rsync://…`.
fn is_remote(text: &str) -> bool {
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// True for the devices redirects commonly name, which are not files to guard.
fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/tty"
            | "/dev/zero"
            | "/dev/random"
            | "/dev/urandom"
    ) || path.starts_with("/dev/fd/")
}

/// The children of `node`, named or not.
fn all_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// The named children of `node`.
fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The children of `node` in the field `field`.
fn field_children<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor).collect()
}

/// `items` without repeats, in first-seen order, empty ones dropped.
fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    dedup_keep_empty(items.filter(|item| !item.is_empty()))
}

/// `items` without repeats, in first-seen order.
fn dedup_keep_empty(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}
