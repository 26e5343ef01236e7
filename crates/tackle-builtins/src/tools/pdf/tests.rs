//! Unit tests of PDF reading: PDFs made here with lopdf's writer, read through the read tool.

use pdf_extract::content::{Content as PdfContent, Operation};
use pdf_extract::{Document, Object, Stream, dictionary};
use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Content, Context, InvocationOutcome};

use super::PageRange;
use crate::fs::LocationFs;
use crate::tools::{ToolEnv, file_tools};

/// A PDF with one page per entry: `Some(text)` draws the text in Courier, `None` draws only a
/// rectangle (a page with no text layer, as a scan has).
fn pdf(pages: &[Option<&str>]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids = Vec::new();
    for page in pages {
        let operations = match page {
            Some(text) => vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 24.into()]),
                Operation::new("Td", vec![72.into(), 700.into()]),
                Operation::new("Tj", vec![Object::string_literal(*text)]),
                Operation::new("ET", vec![]),
            ],
            None => vec![
                Operation::new("re", vec![10.into(), 10.into(), 100.into(), 100.into()]),
                Operation::new("f", vec![]),
            ],
        };
        let content = PdfContent { operations };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

/// Reads `file` (holding `bytes`) with `extra` arguments: (is_error, text, media parts).
async fn read(bytes: &[u8], file: &str, extra: Value) -> (bool, String, usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    let env = ToolEnv::new(LocationFs::new(dir.path()).unwrap());
    let tool = file_tools(&env)
        .into_iter()
        .find(|(n, _)| *n == "read")
        .unwrap()
        .1;
    let mut args = json!({ "filePath": file });
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    let cx = Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    );
    match tool.invoke(args.to_string().into(), cx).await.outcome {
        InvocationOutcome::Completed(output) => {
            let media = output
                .content
                .iter()
                .filter(|part| matches!(part, Content::Media { mime_type, .. } if mime_type == "application/pdf"))
                .count();
            (
                false,
                output.content[0].as_text().unwrap().to_owned(),
                media,
            )
        }
        InvocationOutcome::Failed(failure) => (true, failure.to_string(), 0),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[tokio::test]
async fn a_two_page_pdf_reads_as_text_with_page_markers_and_is_attached() {
    let bytes = pdf(&[Some("Hello from page one"), Some("Goodbye on page two")]);
    let (err, text, media) = read(&bytes, "doc.pdf", json!({})).await;
    assert!(!err, "{text}");
    assert!(
        text.starts_with("PDF doc.pdf: 2 pages,") && text.contains("The PDF itself is attached as media.\n\n--- page 1 ---\nHello from page one\n--- page 2 ---\nGoodbye on page two\n\n(End of PDF: 2 pages.)"),
        "{text}"
    );
    assert_eq!(media, 1, "the PDF is attached too");
}

#[tokio::test]
async fn pages_picks_a_range() {
    let bytes = pdf(&[Some("first"), Some("second"), Some("third")]);
    let (err, text, _) = read(&bytes, "doc.pdf", json!({"pages": "2-3"})).await;
    assert!(!err, "{text}");
    assert!(
        !text.contains("first") && text.contains("--- page 2 ---\nsecond\n--- page 3 ---\nthird\n"),
        "{text}"
    );
    assert!(text.ends_with("(Showing pages 2-3 of 3.)"), "{text}");
    let (err, text, _) = read(&bytes, "doc.pdf", json!({"pages": "4-5"})).await;
    assert!(err);
    assert_eq!(
        text,
        "pages starts at 4 but `doc.pdf` has 3 pages. Give pages within 1-3."
    );
}

#[tokio::test]
async fn a_pdf_without_text_says_it_has_no_text_layer() {
    let bytes = pdf(&[None, None]);
    let (err, text, media) = read(&bytes, "scan.pdf", json!({})).await;
    assert!(!err, "{text}");
    assert!(
        text.contains("--- page 1 ---\n(No text on this page.)"),
        "{text}"
    );
    assert!(
        text.contains("No text layer was found on pages 1-2: the PDF is probably scanned"),
        "{text}"
    );
    assert_eq!(media, 1);
}

#[tokio::test]
async fn one_read_returns_at_most_twenty_pages_and_says_how_to_continue() {
    let texts: Vec<String> = (1..=25).map(|n| format!("Page number {n}")).collect();
    let pages: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
    let (err, text, _) = read(&pdf(&pages), "long.pdf", json!({})).await;
    assert!(!err, "{text}");
    assert!(text.contains("--- page 20 ---\nPage number 20\n"));
    assert!(!text.contains("--- page 21 ---"));
    assert!(
        text.ends_with(
            "(Showing pages 1-20 of 25 (one read returns at most 20 pages). Use pages=\"21-25\" \
             to continue.)"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_malformed_pdf_fails_the_call_and_nothing_panics_out() {
    let (err, text, _) = read(
        b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\ntrailer",
        "bad.pdf",
        json!({}),
    )
    .await;
    assert!(err);
    assert!(
        text.starts_with("The text of `bad.pdf` could not be read"),
        "{text}"
    );
}

#[tokio::test]
async fn pages_on_another_file_is_refused() {
    let (err, text, _) = read(b"hello\n", "a.txt", json!({"pages": "1"})).await;
    assert!(err);
    assert!(
        text.starts_with("pages applies only to PDFs, and `a.txt` is not one"),
        "{text}"
    );
}

#[test]
fn page_ranges_parse_or_say_what_to_give() {
    assert_eq!(
        PageRange::parse("3").unwrap(),
        PageRange {
            first: 3,
            last: Some(3)
        }
    );
    assert_eq!(
        PageRange::parse("3-5").unwrap(),
        PageRange {
            first: 3,
            last: Some(5)
        }
    );
    assert_eq!(
        PageRange::parse(" 3 - ").unwrap(),
        PageRange {
            first: 3,
            last: None
        }
    );
    for bad in ["0", "5-3", "a", "-2", ""] {
        let error = PageRange::parse(bad).unwrap_err().to_string();
        assert!(error.contains("is not a page range"), "{bad}: {error}");
    }
}
