//! Table-driven tests for the pure text helpers.

use super::*;
use proptest::prelude::*;

// ---- decode / encode ----

#[test]
fn decode_table() {
    let cases: &[(&[u8], &str, Encoding)] = &[
        (b"", "", Encoding::Utf8),
        (b"plain\n", "plain\n", Encoding::Utf8),
        ("caf\u{e9}\n".as_bytes(), "caf\u{e9}\n", Encoding::Utf8),
        (
            b"\xEF\xBB\xBFcaf\xC3\xA9\nx\n",
            "caf\u{e9}\nx\n",
            Encoding::Utf8Bom,
        ),
        (b"\xEF\xBB\xBF", "", Encoding::Utf8Bom),
        (b"\xFF\xFEh\x00i\x00\n\x00", "hi\n", Encoding::Utf16Le),
        (b"\xFE\xFF\x00h\x00i\x00\n", "hi\n", Encoding::Utf16Be),
        // U+1F600 as a surrogate pair, little endian.
        (b"\xFF\xFE\x3D\xD8\x00\xDE", "\u{1F600}", Encoding::Utf16Le),
        (b"\xFF\xFE", "", Encoding::Utf16Le),
    ];
    for (bytes, text, encoding) in cases {
        let d = decode(bytes).unwrap_or_else(|e| panic!("{bytes:?}: {e}"));
        assert_eq!(d.text, *text, "{bytes:?}");
        assert_eq!(d.encoding, *encoding, "{bytes:?}");
    }
}

#[test]
fn decode_round_trips_through_encode() {
    let inputs: &[&[u8]] = &[
        b"a\r\nb\n",
        b"\xEF\xBB\xBFcaf\xC3\xA9\nx\n",
        b"\xFF\xFEh\x00i\x00\r\x00\n\x00",
        b"\xFE\xFF\x00h\x00i",
        b"\xFF\xFE\x3D\xD8\x00\xDE",
        "\u{2019}quote\u{2019}".as_bytes(),
    ];
    for bytes in inputs {
        let d = decode(bytes).unwrap();
        assert_eq!(encode(&d.text, &d.encoding), *bytes, "{bytes:?}");
    }
}

#[test]
fn encode_adds_exactly_one_bom() {
    let cases: &[(&str, Encoding, &[u8])] = &[
        ("x", Encoding::Utf8, b"x"),
        ("x", Encoding::Utf8Bom, b"\xEF\xBB\xBFx"),
        ("\u{FEFF}x", Encoding::Utf8Bom, b"\xEF\xBB\xBFx"),
        ("x", Encoding::Utf16Le, b"\xFF\xFEx\x00"),
        ("\u{FEFF}x", Encoding::Utf16Le, b"\xFF\xFEx\x00"),
        ("x", Encoding::Utf16Be, b"\xFE\xFF\x00x"),
        ("", Encoding::Utf8Bom, b"\xEF\xBB\xBF"),
    ];
    for (text, enc, bytes) in cases {
        assert_eq!(encode(text, enc), *bytes, "{text:?} {enc:?}");
    }
}

#[test]
fn edit_on_bom_file_keeps_bom_and_bytes() {
    let raw = b"\xEF\xBB\xBFcaf\xC3\xA9\nx\n";
    let d = decode(raw).unwrap();
    let edited = d.text.replace("x\n", "y\n");
    let out = encode(&edited, &d.encoding);
    assert_eq!(out, b"\xEF\xBB\xBFcaf\xC3\xA9\ny\n");
    assert_eq!(decode(&out).unwrap().encoding, Encoding::Utf8Bom);
}

#[test]
fn decode_errors_name_the_offset() {
    let cases: &[(&[u8], usize, &str)] = &[
        (b"ab\xFFcd", 2, "not UTF-8 text (invalid byte at offset 2)"),
        // GBK for "中文": not UTF-8.
        (b"\xD6\xD0\xCE\xC4", 0, "it may use another encoding"),
        (b"\xEF\xBB\xBFok\xC3", 5, "invalid byte at offset 5"),
        (b"\xFF\xFEa\x00b", 4, "odd length"),
        (
            b"\xFF\xFE\x00\xDCa\x00",
            2,
            "unpaired surrogate at offset 2",
        ),
        (b"\xFF\xFE\x00\x00a\x00\x00\x00", 0, "UTF-32"),
    ];
    for (bytes, offset, needle) in cases {
        let DecodeError::NotText {
            offset: got,
            reason,
        } = decode(bytes).unwrap_err();
        assert_eq!(got, *offset, "{bytes:?}");
        assert!(reason.contains(needle), "{bytes:?}: {reason}");
        assert!(!reason.contains('\u{FFFD}'));
    }
}

// ---- line endings ----

#[test]
fn detect_line_endings_table() {
    let cases: &[(&str, LineEndings)] = &[
        ("", LineEndings::None),
        ("one line", LineEndings::None),
        ("lone\rcr", LineEndings::None),
        ("a\nb\n", LineEndings::Lf),
        ("a\nb", LineEndings::Lf),
        ("a\r\nb\r\n", LineEndings::Crlf),
        ("a\r\nb", LineEndings::Crlf),
        ("a\r\nb\nc", LineEndings::Mixed { crlf: 1, lf: 1 }),
        ("a\r\nb\r\nc\n", LineEndings::Mixed { crlf: 2, lf: 1 }),
    ];
    for (text, want) in cases {
        assert_eq!(detect_line_endings(text), *want, "{text:?}");
    }
}

#[test]
fn to_lf_and_final_newline() {
    let cases: &[(&str, &str, bool)] = &[
        ("a\r\nb\r\n", "a\nb\n", true),
        ("a\r\nb", "a\nb", false),
        ("a\rb\n", "a\rb\n", true),
        ("a\r\r\n", "a\r\n", true),
        ("", "", false),
    ];
    for (text, lf, final_nl) in cases {
        assert_eq!(to_lf(text), *lf, "{text:?}");
        assert_eq!(has_final_newline(text), *final_nl, "{text:?}");
    }
}

#[test]
fn restore_after_lf_edit() {
    // Original style × final newline; the edit turns "b" into "B" in the LF view.
    let cases: &[(&str, &str)] = &[
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc", "a\nB\nc"),
        ("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),
        ("a\r\nb\r\nc", "a\r\nB\r\nc"),
        // Mixed files come back LF from a whole-file restore (documented choice).
        ("a\r\nb\nc\n", "a\nB\nc\n"),
        ("a\r\nb\nc", "a\nB\nc"),
        ("b", "B"),
        ("b\n", "B\n"),
    ];
    for (original, want) in cases {
        let style = detect_line_endings(original);
        let edited = to_lf(original).replace('b', "B");
        let out = restore(&edited, &style);
        assert_eq!(out, *want, "{original:?}");
        assert_eq!(has_final_newline(&out), has_final_newline(original));
    }
}

#[test]
fn restore_adds_crlf_to_new_lines() {
    let out = restore("a\nnew\nb\n", &LineEndings::Crlf);
    assert_eq!(out, "a\r\nnew\r\nb\r\n");
    assert_eq!(restore("x\n", &LineEndings::None), "x\n");
}

#[test]
fn dominant_newline() {
    let cases: &[(LineEndings, &str)] = &[
        (LineEndings::Lf, "\n"),
        (LineEndings::None, "\n"),
        (LineEndings::Crlf, "\r\n"),
        (LineEndings::Mixed { crlf: 3, lf: 1 }, "\r\n"),
        (LineEndings::Mixed { crlf: 1, lf: 3 }, "\n"),
        (LineEndings::Mixed { crlf: 2, lf: 2 }, "\n"),
    ];
    for (style, nl) in cases {
        assert_eq!(style.dominant(), *nl, "{style:?}");
    }
}

// ---- binary and media ----

fn with_controls(controls: usize, total: usize) -> Vec<u8> {
    let mut v = vec![0x01u8; controls];
    v.resize(total, b'a');
    v
}

#[test]
fn is_binary_table() {
    let png_header: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00";
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("a.zip", b"plain text".to_vec(), true),
        ("dir/lib.SO", b"".to_vec(), true),
        ("C:\\x\\app.exe", b"MZ".to_vec(), true),
        ("archive.tar.gz", b"x".to_vec(), true),
        ("font.woff2", b"x".to_vec(), true),
        ("song.mp3", b"x".to_vec(), true),
        ("data.dat", b"1 2 3\n".to_vec(), false),
        ("notes.txt", b"hello\n".to_vec(), false),
        ("Makefile", b"all:\n\tcc\n".to_vec(), false),
        (".gz", b"x".to_vec(), false),
        ("empty.txt", Vec::new(), false),
        ("nul.txt", b"abc\x00def".to_vec(), true),
        ("ratio29.txt", with_controls(29, 100), false),
        ("ratio30.txt", with_controls(30, 100), false),
        ("ratio31.txt", with_controls(31, 100), true),
        ("ws.txt", b"\t\t\r\n\x0c\x0c\r\n".to_vec(), false),
        ("utf16le.txt", b"\xFF\xFEh\x00i\x00".to_vec(), false),
        ("utf16be.txt", b"\xFE\xFF\x00h\x00i".to_vec(), false),
        ("image.png", png_header.to_vec(), true),
        // A multibyte character cut at the end of the sample is still text.
        ("thai.md", "\u{e01}\u{e02}".as_bytes()[..5].to_vec(), false),
    ];
    for (path, bytes, want) in cases {
        assert_eq!(is_binary(path, &bytes), want, "{path}");
    }
}

#[test]
fn is_binary_only_samples_first_4k() {
    let mut bytes = vec![b'a'; SNIFF_BYTES];
    bytes.extend_from_slice(&[0u8; 100]);
    assert!(!is_binary("late_nul.txt", &bytes));
    // Korean text with the sample boundary inside a character.
    let korean = "\u{d55c}\u{ad6d}\u{c5b4} ".repeat(2000);
    assert!(!is_binary("ko.md", &korean.as_bytes()[..1000]));
}

#[test]
fn sniff_media_table() {
    let cases: &[(&[u8], Option<&str>)] = &[
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", Some("image/png")),
        (b"\xFF\xD8\xFF\xE0\x00\x10JFIF", Some("image/jpeg")),
        (b"GIF89a\x01\x00", Some("image/gif")),
        (b"GIF87a\x01\x00", Some("image/gif")),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", Some("image/webp")),
        (b"%PDF-1.7\n", Some("application/pdf")),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),
        (b"RIFF", None),
        (b"not a png, just text\n", None),
        (b"", None),
    ];
    for (bytes, want) in cases {
        assert_eq!(sniff_media(bytes), *want, "{bytes:?}");
    }
}

// ---- format_lines ----

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn read(text: &str, offset: usize, limit: usize) -> ReadWindow {
    format_lines(text, offset, limit, MAX_LINE_CHARS, MAX_READ_BYTES).unwrap()
}

#[test]
fn format_numbers_lines() {
    let w = read("alpha\nbeta\n", 0, 10);
    assert_eq!(
        w.text,
        "     1\talpha\n     2\tbeta\n\n(End of file: 2 lines total.)"
    );
    assert_eq!((w.first_line, w.last_line, w.total_lines), (1, 2, 2));
    assert_eq!(w.truncated_by, None);
    assert_eq!(w.next_offset(), None);
}

#[test]
fn format_windows_table() {
    let text = lines(10);
    // (offset, limit, first, last, truncated)
    let cases: &[(usize, usize, usize, usize, Option<LinesOrBytes>)] = &[
        (0, 3, 1, 3, Some(LinesOrBytes::Lines)),
        (1, 3, 1, 3, Some(LinesOrBytes::Lines)),
        (4, 3, 4, 6, Some(LinesOrBytes::Lines)),
        (8, 3, 8, 10, None),
        (9, 100, 9, 10, None),
        (10, 1, 10, 10, None),
        (1, 10, 1, 10, None),
        (5, 0, 5, 5, Some(LinesOrBytes::Lines)),
    ];
    for &(offset, limit, first, last, truncated) in cases {
        let w = read(&text, offset, limit);
        assert_eq!(
            (w.first_line, w.last_line, w.truncated_by),
            (first, last, truncated),
            "offset {offset} limit {limit}"
        );
        assert_eq!(w.total_lines, 10);
        let shown = w.text.lines().filter(|l| l.contains("\tline ")).count();
        assert_eq!(shown, last - first + 1);
    }
}

#[test]
fn format_offset_zero_equals_one() {
    let text = lines(5);
    assert_eq!(read(&text, 0, 2), read(&text, 1, 2));
}

#[test]
fn format_footers() {
    let text = lines(10);
    let cases: &[(usize, usize, &str)] = &[
        (1, 3, "(Showing lines 1-3 of 10. Use offset=4 to continue.)"),
        (4, 3, "(Showing lines 4-6 of 10. Use offset=7 to continue.)"),
        (8, 5, "(End of file: 10 lines total.)"),
    ];
    for &(offset, limit, footer) in cases {
        let w = read(&text, offset, limit);
        assert!(w.text.ends_with(&format!("\n\n{footer}")), "{}", w.text);
    }
    assert!(
        read("x", 0, 5)
            .text
            .ends_with("(End of file: 1 line total.)")
    );
    assert_eq!(read(&text, 4, 3).next_offset(), Some(7));
}

#[test]
fn format_line_counting() {
    let cases: &[(&str, usize)] = &[
        ("", 0),
        ("\n", 1),
        ("a", 1),
        ("a\n", 1),
        ("a\nb", 2),
        ("a\n\n", 2),
        ("a\r\nb\r\n", 2),
    ];
    for (text, n) in cases {
        assert_eq!(count_lines(text), *n, "{text:?}");
    }
    let w = read("a\n\n", 0, 10);
    assert_eq!(
        w.text,
        "     1\ta\n     2\t\n\n(End of file: 2 lines total.)"
    );
}

#[test]
fn format_strips_cr_of_crlf() {
    let w = read("a\r\nb\r\n", 0, 10);
    assert!(w.text.starts_with("     1\ta\n     2\tb\n"), "{:?}", w.text);
    assert!(!w.text.contains('\r'));
}

#[test]
fn format_cuts_long_lines_at_char_boundary() {
    let long = "\u{e9}".repeat(30) + "\n" + "short\n";
    let w = format_lines(&long, 0, 10, 10, MAX_READ_BYTES).unwrap();
    let first = w.text.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "     1\t{}... (line truncated to 10 of 30 characters)",
            "\u{e9}".repeat(10)
        )
    );
    assert!(w.text.contains("     2\tshort\n"));
    // A line exactly at the cap is not cut.
    let w = format_lines("abcdefghij", 0, 10, 10, MAX_READ_BYTES).unwrap();
    assert!(!w.text.contains("truncated"));
    // 4-byte characters.
    let w = format_lines(&"\u{1F600}".repeat(5), 0, 10, 3, MAX_READ_BYTES).unwrap();
    assert!(
        w.text
            .starts_with(&format!("     1\t{}...", "\u{1F600}".repeat(3)))
    );
}

#[test]
fn format_byte_cap() {
    // Each row "     N\tline N\n" is 14 bytes for N < 10.
    let text = lines(9);
    let w = format_lines(&text, 0, 100, MAX_LINE_CHARS, 14 * 3 + 5).unwrap();
    assert_eq!((w.first_line, w.last_line), (1, 3));
    assert_eq!(w.truncated_by, Some(LinesOrBytes::Bytes));
    assert!(w.text.ends_with(
        "(Output capped at 47 bytes. Showing lines 1-3 of 9. Use offset=4 to continue.)"
    ));
    // At least one row, even when it alone exceeds the budget.
    let w = format_lines(&text, 2, 100, MAX_LINE_CHARS, 1).unwrap();
    assert_eq!((w.first_line, w.last_line), (2, 2));
    assert_eq!(w.next_offset(), Some(3));
    // KiB labelling, and the default budget holds 2000 short lines.
    let big = lines(100_000);
    let w = read(&big, 0, 100_000);
    assert_eq!(w.truncated_by, Some(LinesOrBytes::Bytes));
    assert!(
        w.text.contains("(Output capped at 50 KiB."),
        "{}",
        &w.text[w.text.len() - 120..]
    );
    let body = w.text.len() - w.text.lines().last().unwrap().len() - 1;
    assert!(body <= MAX_READ_BYTES + 1);
}

#[test]
fn format_limit_on_large_file() {
    let big = "x\n".repeat(100_000);
    let w = read(&big, 0, DEFAULT_READ_LIMIT);
    assert_eq!(
        (w.first_line, w.last_line, w.total_lines),
        (1, 2000, 100_000)
    );
    assert!(
        w.text
            .ends_with("(Showing lines 1-2000 of 100000. Use offset=2001 to continue.)")
    );
}

#[test]
fn format_offset_past_end() {
    let text = lines(120);
    let err = format_lines(&text, 500, 10, MAX_LINE_CHARS, MAX_READ_BYTES).unwrap_err();
    assert_eq!(
        err,
        ReadError::OffsetPastEnd {
            offset: 500,
            total: 120
        }
    );
    assert_eq!(
        err.to_string(),
        "offset 500 is past the end of the file (120 lines). Use an offset from 1 to 120."
    );
    assert!(format_lines(&text, 121, 10, MAX_LINE_CHARS, MAX_READ_BYTES).is_err());
    assert!(format_lines(&text, 120, 10, MAX_LINE_CHARS, MAX_READ_BYTES).is_ok());
}

#[test]
fn format_empty_file() {
    for offset in [0, 1, 7] {
        let w = read("", offset, 10);
        assert_eq!(w.text, EMPTY_FILE_NOTE);
        assert_eq!((w.first_line, w.last_line, w.total_lines), (0, 0, 0));
        assert_eq!(w.truncated_by, None);
    }
}

#[test]
fn encoding_labels() {
    let cases = [
        (Encoding::Utf8, "UTF-8", false),
        (Encoding::Utf8Bom, "UTF-8 with BOM", true),
        (Encoding::Utf16Le, "UTF-16 LE", true),
        (Encoding::Utf16Be, "UTF-16 BE", true),
    ];
    for (enc, label, bom) in cases {
        assert_eq!((enc.label(), enc.has_bom()), (label, bom));
    }
}

#[test]
fn utf16_crlf_file_survives_an_lf_edit() {
    let raw = encode("one\r\ntwo\r\n", &Encoding::Utf16Be);
    let d = decode(&raw).unwrap();
    let style = detect_line_endings(&d.text);
    assert_eq!(style, LineEndings::Crlf);
    let edited = to_lf(&d.text).replace("two", "2\nextra");
    let out = encode(&restore(&edited, &style), &d.encoding);
    assert_eq!(out, encode("one\r\n2\r\nextra\r\n", &Encoding::Utf16Be));
    assert_eq!(&out[..2], b"\xFE\xFF");
}

#[test]
fn decode_keeps_line_endings_and_curly_quotes() {
    let raw = "it\u{2019}s\r\n".as_bytes();
    let d = decode(raw).unwrap();
    assert_eq!(d.text, "it\u{2019}s\r\n");
    assert_eq!(encode(&d.text, &d.encoding), raw);
}

#[test]
fn media_is_sniffed_whatever_the_extension() {
    // A PNG named .txt is still a PNG; a .png holding text is not.
    assert_eq!(sniff_media(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
    assert_eq!(sniff_media("just words in a .png file".as_bytes()), None);
    assert!(!is_binary("fake.png", b"just words"));
}

#[test]
fn next_offset_is_none_at_end() {
    let text = lines(4);
    assert_eq!(read(&text, 3, 10).next_offset(), None);
    assert_eq!(read(&text, 1, 2).next_offset(), Some(3));
}

// ---- properties ----

proptest! {
    #[test]
    fn restore_round_trips_pure_styles(
        parts in proptest::collection::vec("[^\n]{0,12}", 0..8),
        final_nl in any::<bool>(),
    ) {
        // Pure LF: no CR may sit before a LF.
        let lf_parts: Vec<String> = parts.iter().map(|p| p.replace('\r', "")).collect();
        let mut lf = lf_parts.join("\n");
        let mut crlf = parts.join("\r\n");
        if final_nl {
            lf.push('\n');
            crlf.push_str("\r\n");
        }
        for t in [lf, crlf] {
            let style = detect_line_endings(&t);
            let mixed = matches!(style, LineEndings::Mixed { .. });
            prop_assert!(!mixed, "mixed: {:?}", style);
            prop_assert_eq!(restore(&to_lf(&t), &style), t);
        }
    }

    #[test]
    fn decode_encode_round_trip(s in "\\PC{0,40}", enc in 0usize..4) {
        let encoding = [Encoding::Utf8, Encoding::Utf8Bom, Encoding::Utf16Le, Encoding::Utf16Be][enc];
        let s = s.trim_start_matches('\u{FEFF}').to_owned();
        let bytes = encode(&s, &encoding);
        let d = decode(&bytes).unwrap();
        prop_assert_eq!(d.text, s);
        prop_assert_eq!(d.encoding, encoding);
    }
}

/// Splices a change given as two LF texts, diffed the way `write` diffs them.
fn splice(raw: &str, old: &str, new: &str) -> String {
    splice_line_endings(raw, new, &tackle_edit::diff::LineDiff::compute(old, new))
}

#[test]
fn splice_keeps_untouched_endings_of_a_mixed_file() {
    let raw = "a\r\nb\nc\r\nd\n";
    let old = to_lf(raw);
    let new = old.replace("c\n", "C\nC2\n");
    // The rewritten line keeps its CRLF; the added line takes the dominant LF (2 vs 2 is no
    // CRLF majority); untouched lines keep theirs.
    assert_eq!(splice(raw, &old, &new), "a\r\nb\nC\r\nC2\nd\n");
    let raw = "a\r\nb\r\nc\nd\r\n";
    let new = to_lf(raw).replace("b\n", "B\n");
    assert_eq!(splice(raw, &to_lf(raw), &new), "a\r\nB\r\nc\nd\r\n");
}

#[test]
fn splice_restores_pure_styles_and_keeps_a_missing_final_newline() {
    assert_eq!(splice("a\r\nb", "a\nb", "a\nB"), "a\r\nB");
    assert_eq!(splice("a\nb\n", "a\nb\n", "x\nb\n"), "x\nb\n");
    assert_eq!(splice("ab", "ab", "a\nb"), "a\nb");
}

#[test]
fn text_change_counts_lines_and_names_the_path() {
    let change = text_change("src/a.rs", "a\nb\nc\n", "a\nB\nc\nd\n");
    assert_eq!((change.additions, change.deletions), (2, 1));
    assert!(change.diff.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n"));
    assert!(change.diff.contains("-b\n+B\n"));
    assert_eq!(text_change("x", "same\n", "same\n").diff, "");
}

proptest! {
    /// Splicing any line edit into any mixed file changes nothing but the edited lines.
    #[test]
    fn splice_round_trips_the_lf_view(
        lines in proptest::collection::vec(("[a-c]{0,3}", proptest::bool::ANY), 1..12),
        edit_at in 0usize..12,
        replacement in "[x-z]{1,3}",
    ) {
        let raw: String = lines.iter().map(|(t, crlf)| format!("{t}{}", if *crlf { "\r\n" } else { "\n" })).collect();
        let old = to_lf(&raw);
        let mut new_lines: Vec<String> = old.split_inclusive('\n').map(str::to_owned).collect();
        let at = edit_at % new_lines.len();
        new_lines[at] = format!("{replacement}\n");
        let new: String = new_lines.concat();
        let spliced = splice(&raw, &old, &new);
        prop_assert_eq!(to_lf(&spliced), new);
        let raw_lines: Vec<&str> = raw.split_inclusive('\n').collect();
        let out_lines: Vec<&str> = spliced.split_inclusive('\n').collect();
        prop_assert_eq!(raw_lines.len(), out_lines.len());
        for (i, (a, b)) in raw_lines.iter().zip(&out_lines).enumerate() {
            if i != at && to_lf(a) == to_lf(b) {
                prop_assert_eq!(a, b);
            }
        }
    }
}
