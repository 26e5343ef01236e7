//! The arity table: how many leading tokens name a command, for `always` patterns.
//!
//! `git checkout main` is named by two tokens, so "always" saves `git checkout *`; `npm run dev`
//! by three, so it saves `npm run dev *`. A command missing from the table is named by its first
//! token. Flags count as tokens, so `git -C dir status` saves `git -C *`.

/// Prefixes and the number of tokens that name a command starting with them.
///
/// The longest matching prefix wins: `docker compose` (3) before `docker` (2).
const TABLE: &[(&str, usize)] = &[
    // One token: the command alone.
    ("cat", 1),
    ("cd", 1),
    ("chmod", 1),
    ("chown", 1),
    ("cp", 1),
    ("echo", 1),
    ("env", 1),
    ("export", 1),
    ("grep", 1),
    ("kill", 1),
    ("killall", 1),
    ("ln", 1),
    ("ls", 1),
    ("mkdir", 1),
    ("mv", 1),
    ("ps", 1),
    ("pwd", 1),
    ("rm", 1),
    ("rmdir", 1),
    ("sleep", 1),
    ("source", 1),
    ("tail", 1),
    ("touch", 1),
    ("unset", 1),
    ("which", 1),
    // Two tokens: the tool and its subcommand.
    ("bazel", 2),
    ("brew", 2),
    ("bun", 2),
    ("bunx", 2),
    ("cargo", 2),
    ("cdk", 2),
    ("cf", 2),
    ("cmake", 2),
    ("composer", 2),
    ("consul", 2),
    ("crictl", 2),
    ("deno", 2),
    ("docker", 2),
    ("eksctl", 2),
    ("firebase", 2),
    ("flyctl", 2),
    ("git", 2),
    ("go", 2),
    ("gradle", 2),
    ("helm", 2),
    ("heroku", 2),
    ("hugo", 2),
    ("ip", 2),
    ("kind", 2),
    ("kubectl", 2),
    ("kustomize", 2),
    ("make", 2),
    ("mc", 2),
    ("minikube", 2),
    ("mongosh", 2),
    ("mysql", 2),
    ("mvn", 2),
    ("ng", 2),
    ("npm", 2),
    ("npx", 2),
    ("nvm", 2),
    ("nx", 2),
    ("openssl", 2),
    ("pip", 2),
    ("pip3", 2),
    ("pipenv", 2),
    ("pnpm", 2),
    ("pnpx", 2),
    ("poetry", 2),
    ("podman", 2),
    ("psql", 2),
    ("pulumi", 2),
    ("pyenv", 2),
    ("python", 2),
    ("python3", 2),
    ("rake", 2),
    ("rbenv", 2),
    ("redis-cli", 2),
    ("rustup", 2),
    ("serverless", 2),
    ("skaffold", 2),
    ("sls", 2),
    ("sst", 2),
    ("swift", 2),
    ("systemctl", 2),
    ("terraform", 2),
    ("tmux", 2),
    ("turbo", 2),
    ("ufw", 2),
    ("uv", 2),
    ("vault", 2),
    ("vercel", 2),
    ("volta", 2),
    ("wp", 2),
    ("yarn", 2),
    // Three tokens: tools whose subcommands have subcommands.
    ("aws", 3),
    ("az", 3),
    ("doctl", 3),
    ("gcloud", 3),
    ("gh", 3),
    ("sfdx", 3),
    ("bun run", 3),
    ("bun x", 3),
    ("cargo add", 3),
    ("cargo run", 3),
    ("consul kv", 3),
    ("deno task", 3),
    ("docker builder", 3),
    ("docker compose", 3),
    ("docker container", 3),
    ("docker image", 3),
    ("docker network", 3),
    ("docker volume", 3),
    ("eksctl create", 3),
    ("git config", 3),
    ("git remote", 3),
    ("git stash", 3),
    ("ip addr", 3),
    ("ip link", 3),
    ("ip netns", 3),
    ("ip route", 3),
    ("kind create", 3),
    ("kubectl kustomize", 3),
    ("kubectl rollout", 3),
    ("mc admin", 3),
    ("npm exec", 3),
    ("npm init", 3),
    ("npm run", 3),
    ("npm view", 3),
    ("openssl req", 3),
    ("openssl x509", 3),
    ("pnpm dlx", 3),
    ("pnpm exec", 3),
    ("pnpm run", 3),
    ("podman container", 3),
    ("podman image", 3),
    ("pulumi stack", 3),
    ("python -m", 3),
    ("python3 -m", 3),
    ("terraform workspace", 3),
    ("uv run", 3),
    ("vault auth", 3),
    ("vault kv", 3),
    ("yarn dlx", 3),
    ("yarn run", 3),
];

/// Commands that run the command after them: `sudo make install` saves `sudo make install *`.
const WRAPPERS: &[&str] = &[
    "builtin", "command", "doas", "exec", "nice", "nohup", "sudo", "time", "xargs",
];

/// The number of tokens a prefix names, if the table knows it.
fn lookup(key: &str) -> Option<usize> {
    TABLE.iter().find(|(k, _)| *k == key).map(|&(_, n)| n)
}

/// The last path component: `/usr/bin/git` is looked up as `git`.
fn base(token: &str) -> &str {
    token.rsplit('/').next().unwrap_or(token)
}

/// True for a wrapper such as `sudo` that runs the command after it.
pub(super) fn is_wrapper(token: &str) -> bool {
    WRAPPERS.contains(&base(token))
}

/// How many of `tokens` name the command: 0 only for no tokens.
///
/// A wrapper followed by a non-flag token names itself plus the wrapped command.
pub(super) fn arity(tokens: &[&str]) -> usize {
    let Some(first) = tokens.first() else {
        return 0;
    };
    if is_wrapper(first) && tokens.get(1).is_some_and(|t| !t.starts_with('-')) {
        return 1 + arity(&tokens[1..]);
    }
    let mut key = base(first).to_owned();
    let mut best = 1;
    for (index, token) in tokens.iter().enumerate().take(3) {
        if index > 0 {
            key.push(' ');
            key.push_str(token);
        }
        if let Some(n) = lookup(&key) {
            best = n;
        }
    }
    best.min(tokens.len())
}

/// The `always` pattern for a command's tokens: its naming prefix and ` *`.
pub(super) fn always_pattern(tokens: &[&str]) -> String {
    // No tokens give an empty pattern, never a bare `*` that would grant everything.
    let n = arity(tokens);
    if n == 0 {
        return String::new();
    }
    format!("{} *", tokens[..n].join(" "))
}
