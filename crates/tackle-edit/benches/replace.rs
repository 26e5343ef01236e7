//! Benchmarks for `tackle_edit::replace` on a generated 20,000-line Rust-like file.
//!
//! - `replace/exact_20k`: an exact edit near the end of the file (`Strategy::Simple`).
//! - `replace/indent_shift_20k`: the same lines with every line shifted 4 spaces deeper
//!   (`Strategy::IndentationFlexible`).
//! - `replace/not_found_20k`: text that no rung of the fuzzy chain matches, so the whole ladder
//!   runs and the closest region is searched (`EditError::NotFound { closest: Some(_) }`).
//! - `replace/str_find_20k`: `content.find(&exact)` alone, a same-run reference for ratios.
//! - `replace_all/20k_every_line`: `replaceAll` of a token that occurs on every line (20,000
//!   replacements, about 1 MB), against `replace_all/str_replace_20k`, `str::replace` of the same
//!   text in the same run.
//! - `tolerant_refused/20k`: a four-line block quote with one wrong middle line, which every
//!   tolerant rung refuses (`LAW-TOLERANT-MATCH`), so the closest region is searched.
//! - `diff/replace_all_20k`: the line diff and unified text of the 20,000 replacements, built
//!   from their splices (what `edit` does after `replace`).
//! - `diff/rewrite_20k_to_50k`: the bounded diff of a 20,000-line file rewritten into 50,000
//!   other lines (what `write` does).
//!
//! Targets: at most 5 ms for each `replace` case, and `replace_all` at most 3× `str::replace`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tackle_edit::diff::LineDiff;
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

    // 20,000 replacements: a token on every line.
    let every: String = (0..LINES)
        .map(|i| format!("let item_{i} = value;\n"))
        .collect();
    let all = replace(&every, "value;", "other;", true).unwrap();
    assert_eq!(all.replacements, LINES);
    assert_eq!(all.content, every.replace("value;", "other;"));
    c.bench_function("replace_all/20k_every_line", |b| {
        b.iter(|| replace(black_box(&every), "value;", "other;", true))
    });
    c.bench_function("replace_all/str_replace_20k", |b| {
        b.iter(|| black_box(&every).replace(black_box("value;"), "other;"))
    });

    // A block quote with one misremembered middle line.
    let wrong_middle = format!(
        "    let value_{k} = input.len() * {k};\n    if value_{k} < {k} {{\n        return \
         value_{k} - 1;\n    }}\n"
    );
    assert!(matches!(
        replace(&content, &wrong_middle, "x\n", false),
        Err(EditError::NotFound { closest: Some(_) })
    ));
    c.bench_function("tolerant_refused/20k", |b| {
        b.iter(|| replace(black_box(&content), black_box(&wrong_middle), "x\n", false))
    });

    c.bench_function("diff/replace_all_20k", |b| {
        b.iter(|| {
            LineDiff::from_splices(black_box(&every), &all.content, &all.splices).unified("f", 3)
        })
    });
    let rewritten: String = (0..50_000).map(|i| format!("fresh line {i}\n")).collect();
    c.bench_function("diff/rewrite_20k_to_50k", |b| {
        b.iter(|| LineDiff::compute(black_box(&every), black_box(&rewritten)).unified("f", 3))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
