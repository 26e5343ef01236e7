//! Unit tests of skill discovery, frontmatter parsing and the skill tool.

use std::path::Path;

use serde_json::{Value, json};
use tackle_core::{CallIdentity, CancellationToken, Context, InvocationOutcome};

use super::{discover_skills, parse_skill_file, tool};
use crate::fs::LocationFs;
use crate::tools::ToolEnv;

fn write_skill(dir: &Path, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n")
}

fn cx() -> Context {
    Context::new(
        CallIdentity::new("s", "build", "m", "c"),
        CancellationToken::new(),
    )
}

/// Calls the skill tool of the Location `root` over the skills found there; returns
/// (is_error, text, structured output).
async fn call(root: &Path, home: Option<&Path>, args: Value) -> (bool, String, Value) {
    let env = ToolEnv::new(LocationFs::new(root).unwrap());
    let catalog = discover_skills(env.fs().root(), home);
    let outcome = tool(&env, catalog)
        .invoke(args.to_string().into(), cx())
        .await
        .outcome;
    match outcome {
        InvocationOutcome::Completed(output) => (
            false,
            output.content[0].as_text().unwrap_or_default().to_owned(),
            output.structured.clone(),
        ),
        InvocationOutcome::Failed(failure) => (true, failure.to_string(), Value::Null),
        other => panic!("unexpected outcome {other:?}"),
    }
}

#[test]
fn discovers_every_location_with_project_first_and_warns_on_duplicates() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let r = root.path();
    write_skill(
        &r.join(".tackle/skills/shared"),
        &skill_md("shared", "project", "P"),
    );
    write_skill(
        &r.join(".tackle/skills/proj"),
        &skill_md("proj", "a project skill", "p"),
    );
    write_skill(
        &home.path().join(".config/tackle/skills/shared"),
        &skill_md("shared", "user", "U"),
    );
    write_skill(
        &home.path().join(".config/tackle/skills/mine"),
        &skill_md("mine", "a user skill", "u"),
    );
    write_skill(
        &r.join(".opencode/skill/oc1"),
        &skill_md("oc-one", "opencode", "1"),
    );
    write_skill(
        &r.join(".opencode/skills/oc2"),
        &skill_md("oc-two", "opencode", "2"),
    );
    write_skill(
        &r.join(".claude/skills/cl"),
        &skill_md("claude-skill", "claude", "c"),
    );
    write_skill(
        &r.join(".claude/skills/dup"),
        &skill_md("mine", "claude copy", "x"),
    );
    // A directory without SKILL.md is not a skill and not a problem.
    std::fs::create_dir_all(r.join(".tackle/skills/empty")).unwrap();

    let catalog = discover_skills(r, Some(home.path()));
    assert_eq!(
        catalog.names(),
        ["proj", "shared", "mine", "oc-one", "oc-two", "claude-skill"]
    );
    let shared = catalog.get("shared").unwrap();
    assert_eq!(shared.description, "project");
    assert_eq!(shared.body, "P");
    assert_eq!(shared.dir, r.join(".tackle/skills/shared"));
    assert_eq!(catalog.get("mine").unwrap().description, "a user skill");

    assert_eq!(catalog.warnings.len(), 2, "{:?}", catalog.warnings);
    let user_dup = &catalog.warnings[0];
    assert_eq!(
        user_dup.path,
        home.path().join(".config/tackle/skills/shared/SKILL.md")
    );
    assert!(
        user_dup.problem.contains("`shared` is ignored"),
        "{user_dup}"
    );
    assert!(
        user_dup.problem.contains(
            &r.join(".tackle/skills/shared/SKILL.md")
                .display()
                .to_string()
        ),
        "{user_dup}"
    );
    assert_eq!(
        catalog.warnings[1].path,
        r.join(".claude/skills/dup/SKILL.md")
    );

    // Without a home, only the Location's directories count.
    let catalog = discover_skills(r, None);
    assert_eq!(
        catalog.names(),
        ["proj", "shared", "oc-one", "oc-two", "claude-skill", "mine"]
    );
    assert_eq!(catalog.get("mine").unwrap().description, "claude copy");
}

#[test]
fn frontmatter_errors_are_reported_with_the_file_and_the_skill_skipped() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join(".tackle/skills");
    write_skill(&skills.join("a-plain"), "# Just markdown\n");
    write_skill(&skills.join("b-nodesc"), "---\nname: b-nodesc\n---\nbody\n");
    write_skill(&skills.join("c-badname"), &skill_md("Bad_Name", "d", "b"));
    write_skill(
        &skills.join("d-unclosed"),
        "---\nname: d\ndescription: d\nbody\n",
    );
    write_skill(&skills.join("e-empty"), "---\n---\nbody\n");
    write_skill(&skills.join("f-good"), &skill_md("good", "fine", "ok"));

    let catalog = discover_skills(root.path(), None);
    assert_eq!(catalog.names(), ["good"]);
    let problems: Vec<String> = catalog.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 5, "{problems:#?}");
    let expect = [
        ("a-plain", "has no frontmatter"),
        ("b-nodesc", "the frontmatter has no `description`."),
        ("c-badname", "the name `Bad_Name` is invalid"),
        ("d-unclosed", "no closing `---`"),
        ("e-empty", "has no `name` and no `description`."),
    ];
    for ((dir, problem), warning) in expect.iter().zip(&catalog.warnings) {
        assert_eq!(warning.path, skills.join(dir).join("SKILL.md"));
        assert!(warning.problem.contains(problem), "{warning}");
        assert!(
            warning
                .to_string()
                .starts_with(&warning.path.display().to_string()),
            "{warning}"
        );
    }
}

#[test]
fn frontmatter_accepts_quotes_block_scalars_and_extra_keys() {
    let parsed = parse_skill_file(
        "\u{feff}---\r\nname: \"quoted-name\"\r\ndescription: 'It''s: fine'\r\n\
         license: MIT\r\nmetadata:\r\n  version: 2\r\n---\r\n\r\nBody line.\r\n",
    )
    .unwrap();
    assert_eq!(parsed.name, "quoted-name");
    assert_eq!(parsed.description, "It's: fine");
    assert_eq!(parsed.body, "Body line.");

    let parsed =
        parse_skill_file("---\nname: folded\ndescription: >\n  One\n  two.\n---\nB\n").unwrap();
    assert_eq!(parsed.description, "One two.");

    let error = parse_skill_file("---\nname: x\ndescription: \"open\n---\n").unwrap_err();
    assert!(error.contains("line 3"), "{error}");
    assert!(error.contains("not closed"), "{error}");

    let long = "a".repeat(65);
    assert!(parse_skill_file(&skill_md(&long, "d", "b")).is_err());
    assert!(parse_skill_file(&skill_md(&"a".repeat(64), "d", "b")).is_ok());
    assert!(parse_skill_file(&skill_md("-lead", "d", "b")).is_err());
    assert!(parse_skill_file(&skill_md("0-ok-9", "d", "b")).is_ok());
}

#[test]
fn the_description_lists_the_skills() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        &root.path().join(".tackle/skills/pdf"),
        &skill_md("pdf", "Fill in PDF forms.", "b"),
    );
    write_skill(
        &root.path().join(".claude/skills/review"),
        &skill_md("review", "Review a change.", "b"),
    );
    let env = ToolEnv::new(LocationFs::new(root.path()).unwrap());
    let described = tool(&env, discover_skills(root.path(), None));
    let description = &described.definition().description;
    assert!(
        description
            .contains("Available skills:\n- pdf: Fill in PDF forms.\n- review: Review a change."),
        "{description}"
    );

    let none = tool(&env, super::SkillCatalog::default());
    assert!(
        none.definition()
            .description
            .contains("No skills are available."),
    );
}

#[tokio::test]
async fn calling_a_skill_returns_its_body_dir_and_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(".tackle/skills/pdf");
    write_skill(
        &dir,
        &skill_md("pdf", "Fill in PDF forms.", "Run scripts/fill.py."),
    );
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/fill.py"), "print(1)\n").unwrap();
    std::fs::write(dir.join("reference.md"), "ref\n").unwrap();
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();

    let (err, text, structured) = call(root.path(), None, json!({"name": "pdf"})).await;
    assert!(!err, "{text}");
    assert_eq!(
        text,
        "<skill name=\"pdf\" dir=\".tackle/skills/pdf\">\nRun scripts/fill.py.\n</skill>\n\
         Paths in this skill are relative to its base directory, .tackle/skills/pdf.\n\
         Files in .tackle/skills/pdf:\n- a.txt\n- reference.md\n- scripts/fill.py"
    );
    assert_eq!(structured["name"], "pdf");
    assert_eq!(structured["dir"], ".tackle/skills/pdf");
    assert_eq!(
        structured["files"],
        json!(["a.txt", "reference.md", "scripts/fill.py"])
    );
}

#[tokio::test]
async fn a_user_skill_shows_its_absolute_dir_and_a_sample_of_many_files() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/tackle/skills/big");
    write_skill(&dir, &skill_md("big", "Many files.", "Body."));
    for i in 0..25 {
        std::fs::write(dir.join(format!("f{i:02}.txt")), "x").unwrap();
    }

    let (err, text, structured) =
        call(root.path(), Some(home.path()), json!({"name": "big"})).await;
    assert!(!err, "{text}");
    let shown = dir.display().to_string();
    assert_eq!(structured["dir"], shown.as_str());
    let files = structured["files"].as_array().unwrap();
    assert_eq!(files.len(), 20);
    assert_eq!(files[0], "f00.txt");
    assert_eq!(files[19], "f19.txt");
    assert!(
        text.contains(&format!("Files in {shown} (the first 20 of 25, sorted):")),
        "{text}"
    );
}

#[tokio::test]
async fn an_unknown_name_lists_the_available_skills() {
    let root = tempfile::tempdir().unwrap();
    write_skill(
        &root.path().join(".tackle/skills/pdf"),
        &skill_md("pdf", "d", "b"),
    );
    write_skill(
        &root.path().join(".tackle/skills/xlsx"),
        &skill_md("xlsx", "d", "b"),
    );
    let (err, text, _) = call(root.path(), None, json!({"name": "docx"})).await;
    assert!(err);
    assert!(
        text.starts_with("Skill `docx` not found. Available skills: `pdf`, `xlsx`."),
        "{text}"
    );
    assert!(text.contains("Hint: Call `skill` again"), "{text}");

    let empty = tempfile::tempdir().unwrap();
    let (err, text, _) = call(empty.path(), None, json!({"name": "docx"})).await;
    assert!(err);
    assert!(text.contains("No skills are available."), "{text}");
}
