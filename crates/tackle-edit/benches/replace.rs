//! Benchmarks for `tackle_edit::replace` on a 10,000-line file: exact, fuzzy and not-found.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tackle_edit::replace::{EditError, Strategy, replace};

/// A Rust-like file of `n` lines in small, distinct functions.
fn file(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.lines().count() < n {
        s.push_str(&format!(
            "fn handler_{i}(input: &str) -> usize {{\n    let value_{i} = input.len() * {i};\n    \
             if value_{i} > {i} {{\n        return value_{i} - 1;\n    }}\n    value_{i}\n}}\n\n"
        ));
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let content = file(10_000);
    let k = 1240; // a function near the end of the file
    let exact = format!("    let value_{k} = input.len() * {k};\n    if value_{k} > {k} {{\n");
    let fuzzy = format!("let value_{k} = input.len() * {k};\nif value_{k} > {k} {{\n");
    let missing = format!(
        "    let value_{k} = input.len() * {};\n    if value_{k} >= {k} {{\n        return 0;\n",
        k + 1
    );
    assert_eq!(
        replace(&content, &exact, "x\n", false).unwrap().strategy,
        Strategy::Simple
    );
    assert_eq!(
        replace(&content, &fuzzy, "x\n", false).unwrap().strategy,
        Strategy::IndentationFlexible
    );
    assert!(matches!(
        replace(&content, &missing, "x\n", false),
        Err(EditError::NotFound { closest: Some(_) })
    ));

    c.bench_function("replace/exact_10k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&exact), "x\n", false))
    });
    c.bench_function("replace/fuzzy_indent_10k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&fuzzy), "x\n", false))
    });
    c.bench_function("replace/not_found_10k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&missing), "x\n", false))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
