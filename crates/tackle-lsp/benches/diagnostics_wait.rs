//! How long an edit waits for a warm server's diagnostics: the median of 20 edits per server,
//! each checked to be reported (or cleared), against a `hover` round trip on the same server in
//! the same run. Servers come from `scripts/install-test-servers.sh`; missing ones are skipped.
//!
//! `PATH="$(scripts/install-test-servers.sh | tail -n 1):$PATH" cargo bench -p tackle-lsp --bench diagnostics_wait`

use std::time::{Duration, Instant};

use tackle_lsp::query::Operation;
use tackle_lsp::{LspManager, ManagerOptions, WaitStatus, active_servers};

struct Case {
    server: &'static str,
    files: &'static [(&'static str, &'static str)],
    file: &'static str,
    good: &'static str,
    bad: &'static str,
    hover_at: (u32, u32),
}

const CASES: &[Case] = &[
    Case {
        server: "pyright",
        files: &[("pyproject.toml", "")],
        file: "a.py",
        good: "def f(a: int) -> int:\n    return a + 1\n",
        bad: "def f(a: int) -> int:\n    return a + \"1\"\n",
        hover_at: (1, 5),
    },
    Case {
        server: "typescript",
        files: &[("package.json", "{}\n"), ("tsconfig.json", "{}\n")],
        file: "a.ts",
        good: "export function f(a: number): number {\n  return a + 1;\n}\n",
        bad: "export function f(a: number): number {\n  return a + \"1\";\n}\n",
        hover_at: (1, 17),
    },
    Case {
        server: "clangd",
        files: &[("compile_flags.txt", "-std=c11\n")],
        file: "a.c",
        good: "int f(int a) {\n  return a + 1;\n}\n",
        bad: "int f(int a) {\n  return a + b;\n}\n",
        hover_at: (1, 5),
    },
];

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("| server | diagnostics wait (median of 20) | hover (median of 20) | ratio |");
    println!("|---|---|---|---|");
    for case in CASES {
        let servers: Vec<_> = active_servers(&[], &path_var)
            .into_iter()
            .filter(|s| s.name == case.server)
            .collect();
        if servers.is_empty() {
            println!("| {} | not installed | | |", case.server);
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (name, text) in case.files {
            std::fs::write(root.join(name), text).unwrap();
        }
        let path = root.join(case.file);
        std::fs::write(&path, case.good).unwrap();
        let options = ManagerOptions {
            diagnostics_wait: Duration::from_secs(10),
            ..ManagerOptions::default()
        };
        let manager = LspManager::new(root.clone(), servers, options);
        runtime.block_on(async {
            // Warm up: start, open, and one edit each way.
            let mut current = case.good;
            for text in [case.bad, case.good] {
                std::fs::write(&path, text).unwrap();
                manager
                    .touch_and_wait(&path, Some(current), Some(text))
                    .await;
                current = text;
            }
            let mut waits = Vec::new();
            for i in 0..20 {
                let next = if i % 2 == 0 { case.bad } else { case.good };
                std::fs::write(&path, next).unwrap();
                let started = Instant::now();
                let touched = manager
                    .touch_and_wait(&path, Some(current), Some(next))
                    .await;
                waits.push(started.elapsed());
                assert_eq!(
                    touched.servers[0].1,
                    WaitStatus::Complete,
                    "{}",
                    case.server
                );
                let errors = touched
                    .after
                    .iter()
                    .filter(|d| d.severity == tackle_lsp::Severity::Error)
                    .count();
                assert_eq!(errors > 0, next == case.bad, "{}: {touched:?}", case.server);
                current = next;
            }
            let mut hovers = Vec::new();
            for _ in 0..20 {
                let started = Instant::now();
                manager
                    .query(
                        Operation::Hover,
                        &path,
                        case.hover_at.0,
                        case.hover_at.1,
                        "",
                    )
                    .await
                    .unwrap();
                hovers.push(started.elapsed());
            }
            let (wait, hover) = (median(waits), median(hovers));
            println!(
                "| {} | {:.1} ms | {:.1} ms | {:.1}× |",
                case.server,
                wait.as_secs_f64() * 1e3,
                hover.as_secs_f64() * 1e3,
                wait.as_secs_f64() / hover.as_secs_f64()
            );
            manager.shutdown(Duration::from_secs(1)).await;
        });
    }
}
