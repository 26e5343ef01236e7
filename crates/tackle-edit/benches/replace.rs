//! Benchmarks for `tackle_edit::replace` on a generated 20,000-line Rust-like file.
//!
//! - `replace/exact_20k`: an exact edit near the end of the file (`Strategy::Simple`).
//! - `replace/indent_shift_20k`: the same lines with every line shifted 4 spaces deeper
//!   (`Strategy::IndentationFlexible`).
//! - `replace/not_found_20k`: text that no rung of the fuzzy chain matches, so the whole ladder
//!   runs and the closest region is searched (`EditError::NotFound { closest: Some(_) }`).
//! - `replace/str_find_20k`: `content.find(&exact)` alone, a same-run reference for ratios.
//!
//! Target: at most 5 ms for each `replace` case.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tackle_edit::replace::{EditError, Strategy, replace};

/// Lines per generated function (including the blank line after it).
const FN_LINES: usize = 8;

/// A Rust-like file of at least `n` lines in small, distinct functions.
fn file(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n.div_ceil(FN_LINES) {
        s.push_str(&format!(
            "fn handler_{i}(input: &str) -> usize {{\n    let value_{i} = input.len() * {i};\n    \
             if value_{i} > {i} {{\n        return value_{i} - 1;\n    }}\n    value_{i}\n}}\n\n"
        ));
    }
    s
}

fn bench(c: &mut Criterion) {
    const LINES: usize = 20_000;
    let content = file(LINES);
    assert!(content.lines().count() >= LINES);
    let k = LINES / FN_LINES - 10; // a function near the end of the file
    let exact = format!(
        "    let value_{k} = input.len() * {k};\n    if value_{k} > {k} {{\n        return \
         value_{k} - 1;\n    }}\n"
    );
    // The same lines, uniformly indented 4 spaces deeper.
    let shifted: String = exact.lines().map(|l| format!("    {l}\n")).collect();
    let missing = format!(
        "    let value_{k} = input.len() * {};\n    if value_{k} >= {k} {{\n        return 0;\n",
        k + 1
    );

    assert_eq!(content.matches(exact.as_str()).count(), 1);
    assert!(!content.contains(shifted.as_str()));
    assert_eq!(
        replace(&content, &exact, "x\n", false).unwrap().strategy,
        Strategy::Simple
    );
    assert_eq!(
        replace(&content, &shifted, "x\n", false).unwrap().strategy,
        Strategy::IndentationFlexible
    );
    assert!(matches!(
        replace(&content, &missing, "x\n", false),
        Err(EditError::NotFound { closest: Some(_) })
    ));

    c.bench_function("replace/exact_20k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&exact), "x\n", false))
    });
    c.bench_function("replace/indent_shift_20k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&shifted), "x\n", false))
    });
    c.bench_function("replace/not_found_20k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&missing), "x\n", false))
    });
    c.bench_function("replace/str_find_20k", |b| {
        b.iter(|| black_box(&content).find(black_box(exact.as_str())))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
