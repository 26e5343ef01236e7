//! Property tests for the V2 tool laws. Every law has at least one proptest citing its stable ID
//! (`// spec: LAW-...`), and the registry laws are also checked together by a model-based test
//! that drives the process placement and two Locations against a small reference model.
//!
//! Run deeper with `TACKLE_DEEP=1` (2048 cases per property instead of 64). Failing cases are
//! persisted to `proptest-regressions/laws.txt` (relative to the package root, which is cargo's
//! working directory for integration tests).

use crate::support::{law_config, runtime};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::sample::{Index, subsequence};
use proptest::test_runner::TestCaseError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use tackle::{EchoInput, Harness, Tagged, cx, tagged};
use tackle_core::{
    Arguments, CallIdentity, CancellationToken, Content, Context, Direction, LimitsOverride,
    OutcomeKind, OutputLimits, Tool, ToolFailure,
};
use tackle_registry::{
    AllTools, BatchOptions, BatchOutput, Defect, Interruption, Location, ModelErrorKind, Outcome,
    Registration, RegistrationId, Settlement, SettlementConfig, ToolCall, ToolSet, Turn,
    batch_tool,
};
use tackle_store::{MemoryJournal, MemoryOutputStore};
use tokio::sync::Notify;

// ---------------------------------------------------------------------------------------------
// Configuration and small helpers
// ---------------------------------------------------------------------------------------------

fn config() -> ProptestConfig {
    law_config("proptest-regressions/laws.txt")
}

fn count(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// The model error kind of a settlement, if it is a model error.
fn error_kind(settlement: &Settlement) -> Option<ModelErrorKind> {
    match &settlement.outcome {
        Outcome::Error(error) => Some(error.kind),
        _ => None,
    }
}

/// A context with the given call ID and an already fired (or fresh) cancellation token.
fn call_cx(call: &str, cancelled: bool) -> Context {
    let token = CancellationToken::new();
    if cancelled {
        token.cancel();
    }
    Context::new(
        CallIdentity::new("session-1", "build", "message-1", call),
        token,
    )
}

/// Valid `EchoInput` arguments, optionally with `repeat` stringified (which the codec coerces).
fn echo_args(text: &str, repeat: u32, stringified: bool) -> String {
    let repeat = if stringified {
        json!(repeat.to_string())
    } else {
        json!(repeat)
    };
    json!({ "text": text, "repeat": repeat }).to_string()
}

/// Argument strings that can never decode as `EchoInput`.
fn invalid_echo_args() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_owned()),
        Just(r#"{"text":5}"#.to_owned()),
        Just(r#"{"repeat":1}"#.to_owned()),
        Just(r#"{"text":"x","repeat":"many"}"#.to_owned()),
        Just(r#"{"text":"x","repeat":-1}"#.to_owned()),
        Just("[]".to_owned()),
        Just("null".to_owned()),
        // Without `{` the text is never a JSON object; blank text means `{}`, missing `text`.
        "[^{]{0,8}",
    ]
}

/// A tool that counts its invocations, signals `started` once running, then waits for `release`
/// and answers as `tag`.
fn gated(
    tag: &str,
) -> (
    Tool<EchoInput, Tagged>,
    Arc<AtomicUsize>,
    Arc<Notify>,
    Arc<Notify>,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (counter, on_start, gate, tag) = (
        calls.clone(),
        started.clone(),
        release.clone(),
        tag.to_owned(),
    );
    let tool = Tool::new(
        format!("Waits for the test, then answers as {tag}."),
        move |input: EchoInput, _cx| {
            counter.fetch_add(1, Ordering::SeqCst);
            let (on_start, gate, tag) = (on_start.clone(), gate.clone(), tag.clone());
            async move {
                on_start.notify_one();
                gate.notified().await;
                Ok::<_, ToolFailure>(Tagged {
                    tag,
                    text: input.text,
                })
            }
        },
    );
    (tool, calls, started, release)
}

// ---------------------------------------------------------------------------------------------
// Model-based test of the registry laws
// ---------------------------------------------------------------------------------------------

const POOL: [&str; 3] = ["a", "b", "c"];
/// Never registered; index `POOL.len()` in generated operations.
const UNKNOWN: &str = "zz";

fn name_of(index: usize) -> &'static str {
    POOL.get(index).copied().unwrap_or(UNKNOWN)
}

#[derive(Clone, Debug)]
enum ModelArgs {
    Valid {
        text: String,
        repeat: u32,
        stringified: bool,
    },
    Invalid(String),
}

impl ModelArgs {
    fn raw(&self) -> String {
        match self {
            ModelArgs::Valid {
                text,
                repeat,
                stringified,
            } => echo_args(text, *repeat, *stringified),
            ModelArgs::Invalid(raw) => raw.clone(),
        }
    }
}

fn model_args() -> impl Strategy<Value = ModelArgs> {
    prop_oneof![
        3 => ("[a-z]{0,6}", 0u32..3, any::<bool>()).prop_map(|(text, repeat, stringified)| {
            ModelArgs::Valid { text, repeat, stringified }
        }),
        1 => invalid_echo_args().prop_map(ModelArgs::Invalid),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    /// Registers one record in the process placement; each name gets its own tagged tool.
    RegisterProcess { names: Vec<usize> },
    /// Registers one record in Location `loc`.
    RegisterLocation { loc: usize, names: Vec<usize> },
    /// Drops one live registration guard.
    DropGuard { guard: Index },
    /// Materializes a turn of Location `loc`.
    Materialize { loc: usize },
    /// Settles a call of a turn.
    Settle {
        turn: TurnPick,
        name: usize,
        args: ModelArgs,
    },
    /// Settles a call whose cancellation token has already fired.
    SettleCancelled {
        turn: TurnPick,
        name: usize,
        args: ModelArgs,
    },
}

/// Which turn a call belongs to.
#[derive(Clone, Debug)]
enum TurnPick {
    /// The most recently materialized turn.
    Latest,
    /// Any earlier turn (old turns are where staleness shows).
    Any(Index),
    /// A turn of Location `loc` materialized just for this call.
    Fresh(usize),
}

fn turn_pick() -> impl Strategy<Value = TurnPick> {
    prop_oneof![
        2 => Just(TurnPick::Latest),
        3 => any::<Index>().prop_map(TurnPick::Any),
        1 => (0..2usize).prop_map(TurnPick::Fresh),
    ]
}

/// A subset of the pool, rarely empty (an empty record is legal and registers nothing).
fn names_subset() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        1 => Just(Vec::new()),
        6 => subsequence((0..POOL.len()).collect::<Vec<_>>(), 1..=POOL.len()),
    ]
}

/// A pool name most of the time, sometimes the never-registered one.
fn model_name() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 0..POOL.len(), 1 => Just(POOL.len())]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => names_subset().prop_map(|names| Op::RegisterProcess { names }),
        4 => (0..2usize, names_subset())
            .prop_map(|(loc, names)| Op::RegisterLocation { loc, names }),
        2 => any::<Index>().prop_map(|guard| Op::DropGuard { guard }),
        2 => (0..2usize).prop_map(|loc| Op::Materialize { loc }),
        6 => (turn_pick(), model_name(), model_args())
            .prop_map(|(turn, name, args)| Op::Settle { turn, name, args }),
        2 => (turn_pick(), model_name(), model_args())
            .prop_map(|(turn, name, args)| Op::SettleCancelled { turn, name, args }),
    ]
}

/// Up to ~40 operations, starting with a few registrations so that most turns advertise
/// something.
fn model_ops() -> impl Strategy<Value = Vec<Op>> {
    let register = prop_oneof![
        names_subset().prop_map(|names| Op::RegisterProcess { names }),
        (0..2usize, names_subset()).prop_map(|(loc, names)| Op::RegisterLocation { loc, names }),
    ];
    (
        prop::collection::vec(register, 0..4),
        prop::collection::vec(op(), 0..37),
    )
        .prop_map(|(mut prefix, rest)| {
            prefix.extend(rest);
            prefix
        })
}

/// One installed tool: registration `k`'s tool for one name.
struct Installed {
    tag: String,
    calls: Arc<AtomicUsize>,
    id: RegistrationId,
}

struct LiveGuard {
    contribution: u64,
    placement: usize,
    names: Vec<usize>,
    registration: Registration,
}

struct ModelTurn {
    loc: usize,
    turn: Turn,
    /// Advertised name index -> contribution that was effective at materialize time.
    advertised: BTreeMap<usize, u64>,
}

/// The reference model: per placement (0 = process, 1 + i = Location i), per name, the active
/// contributions in registration order (latest last).
#[derive(Default)]
struct Model {
    stacks: [BTreeMap<usize, Vec<u64>>; 3],
}

impl Model {
    fn effective(&self, loc: usize, name: usize) -> Option<u64> {
        let top = |placement: usize| {
            self.stacks[placement]
                .get(&name)
                .and_then(|stack| stack.last().copied())
        };
        top(1 + loc).or_else(|| top(0))
    }

    fn names(&self, placement: usize) -> Vec<String> {
        self.stacks[placement]
            .iter()
            .filter(|(_, stack)| !stack.is_empty())
            .map(|(&name, _)| name_of(name).to_owned())
            .collect()
    }
}

#[derive(Debug, PartialEq)]
enum Expected {
    Unknown,
    Stale(u64),
    Interrupted(u64),
    Invalid(u64),
    Success(u64, String),
}

/// Materializes a turn of Location `loc` and checks it advertises exactly the model's effective
/// names, each with the registration identity of the model's winning contribution.
fn materialize_checked(
    location: &Location,
    loc: usize,
    model: &Model,
    tools: &HashMap<(u64, usize), Installed>,
    step: usize,
) -> Result<ModelTurn, TestCaseError> {
    let turn = location.materialize(AllTools);
    let advertised: BTreeMap<usize, u64> = (0..POOL.len())
        .filter_map(|name| model.effective(loc, name).map(|c| (name, c)))
        .collect();
    let got: Vec<(String, RegistrationId)> = turn
        .tools()
        .iter()
        .map(|t| (t.name().to_owned(), t.registration()))
        .collect();
    let want: Vec<(String, RegistrationId)> = advertised
        .iter()
        .map(|(&name, &c)| (name_of(name).to_owned(), tools[&(c, name)].id))
        .collect();
    prop_assert_eq!(
        got,
        want,
        "step {}: turn of location {} advertises",
        step,
        loc
    );
    Ok(ModelTurn {
        loc,
        turn,
        advertised,
    })
}

fn run_registry_model(ops: &[Op]) -> Result<(), TestCaseError> {
    let rt = runtime();
    let h = Harness::new();
    let locations = [h.location("/ws/0"), h.location("/ws/1")];
    let mut model = Model::default();
    let mut guards: Vec<LiveGuard> = Vec::new();
    let mut tools: HashMap<(u64, usize), Installed> = HashMap::new();
    let mut turns: Vec<ModelTurn> = Vec::new();
    let mut next_contribution = 0u64;

    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::RegisterProcess { names } | Op::RegisterLocation { names, .. } => {
                let (placement, registry) = match op {
                    Op::RegisterLocation { loc, .. } => (1 + loc, locations[*loc].tools()),
                    _ => (0, &h.process),
                };
                let contribution = next_contribution;
                next_contribution += 1;
                let mut record = ToolSet::new();
                let mut installed = Vec::new();
                for &name in names {
                    let tag = format!("g{contribution}:{}", name_of(name));
                    let (tool, calls) = tagged(&tag);
                    record.insert(name_of(name), tool);
                    installed.push((name, tag, calls));
                }
                let registration = registry.register(record).expect("pool names are valid");
                for (name, tag, calls) in installed {
                    let id = registration
                        .identity(name_of(name))
                        .expect("registered name");
                    tools.insert((contribution, name), Installed { tag, calls, id });
                    model.stacks[placement]
                        .entry(name)
                        .or_default()
                        .push(contribution);
                }
                guards.push(LiveGuard {
                    contribution,
                    placement,
                    names: names.clone(),
                    registration,
                });
            }
            Op::DropGuard { guard } => {
                if guards.is_empty() {
                    continue;
                }
                let dropped = guards.remove(guard.index(guards.len()));
                for name in &dropped.names {
                    if let Some(stack) = model.stacks[dropped.placement].get_mut(name) {
                        stack.retain(|&c| c != dropped.contribution);
                    }
                }
                drop(dropped.registration);
            }
            Op::Materialize { loc } => {
                turns.push(materialize_checked(
                    &locations[*loc],
                    *loc,
                    &model,
                    &tools,
                    step,
                )?);
            }
            Op::Settle { turn, name, args } | Op::SettleCancelled { turn, name, args } => {
                let t = match turn {
                    TurnPick::Fresh(loc) => {
                        turns.push(materialize_checked(
                            &locations[*loc],
                            *loc,
                            &model,
                            &tools,
                            step,
                        )?);
                        turns.last().expect("just pushed")
                    }
                    _ if turns.is_empty() => continue,
                    TurnPick::Latest => turns.last().expect("not empty"),
                    TurnPick::Any(index) => &turns[index.index(turns.len())],
                };
                let cancelled = matches!(op, Op::SettleCancelled { .. });
                let expected = match t.advertised.get(name).copied() {
                    None => Expected::Unknown,
                    Some(c) if model.effective(t.loc, *name) != Some(c) => Expected::Stale(c),
                    Some(c) if cancelled => Expected::Interrupted(c),
                    Some(c) => match args {
                        ModelArgs::Invalid(_) => Expected::Invalid(c),
                        ModelArgs::Valid { text, repeat, .. } => {
                            Expected::Success(c, text.repeat(*repeat as usize))
                        }
                    },
                };
                let before: HashMap<(u64, usize), usize> = tools
                    .iter()
                    .map(|(key, t)| (*key, count(&t.calls)))
                    .collect();
                let recorded = h.journal.records().len();

                let settlement = rt.block_on(t.turn.settle(
                    call_cx(&format!("call-{step}"), cancelled),
                    ToolCall::new(name_of(*name), args.raw()),
                ));

                let (served, expected_kind) = match &expected {
                    Expected::Unknown => (None, OutcomeKind::Unknown),
                    Expected::Stale(c) => (Some(*c), OutcomeKind::Stale),
                    Expected::Interrupted(c) => (Some(*c), OutcomeKind::Interrupted),
                    Expected::Invalid(c) => (Some(*c), OutcomeKind::Invalid),
                    Expected::Success(c, _) => (Some(*c), OutcomeKind::Success),
                };
                let ran = match &expected {
                    Expected::Success(c, _) => Some((*c, *name)),
                    _ => None,
                };
                match (&expected, &settlement.outcome) {
                    (Expected::Unknown, Outcome::Error(e)) if e.kind == ModelErrorKind::Unknown => {
                    }
                    (Expected::Stale(_), Outcome::Error(e)) if e.kind == ModelErrorKind::Stale => {}
                    (Expected::Invalid(_), Outcome::Error(e))
                        if e.kind == ModelErrorKind::Invalid => {}
                    (Expected::Interrupted(_), Outcome::Interrupted(_)) => {}
                    (Expected::Success(c, text), Outcome::Success(output)) => {
                        let tag = &tools[&(*c, *name)].tag;
                        prop_assert_eq!(
                            &output.structured,
                            &json!({ "tag": tag, "text": text }),
                            "step {}: wrong registration served",
                            step
                        );
                    }
                    (expected, got) => {
                        return Err(TestCaseError::fail(format!(
                            "step {step}: expected {expected:?}, got {got:?}"
                        )));
                    }
                }
                let served_id = served.map(|c| tools[&(c, *name)].id);
                prop_assert_eq!(settlement.registration, served_id, "step {}", step);
                for (key, installed) in &tools {
                    let want =
                        before.get(key).copied().unwrap_or(0) + usize::from(ran == Some(*key));
                    prop_assert_eq!(
                        count(&installed.calls),
                        want,
                        "step {}: executor {} ran unexpectedly (or not at all)",
                        step,
                        &installed.tag
                    );
                }
                let records = h.journal.records();
                prop_assert_eq!(
                    records.len(),
                    recorded + 1,
                    "step {}: one record per call",
                    step
                );
                let last = records.last().expect("just recorded");
                prop_assert_eq!(last.outcome, expected_kind, "step {}", step);
                prop_assert_eq!(&last.tool, name_of(*name));
                prop_assert_eq!(last.registration, served_id.map(RegistrationId::get));
            }
        }
        // The placements' own view agrees with the model after every step.
        prop_assert_eq!(
            h.process.names(),
            model.names(0),
            "step {}: process names",
            step
        );
        for (i, location) in locations.iter().enumerate() {
            prop_assert_eq!(
                location.tools().names(),
                model.names(1 + i),
                "step {}: location {} names",
                step,
                i
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-SCOPED-REGISTRATION
    // spec: LAW-LOCATION-PRECEDENCE
    // spec: LAW-STALE-REJECTION
    // spec: LAW-SINGLE-EXECUTOR
    // spec: LAW-INVALID-INPUT-NEVER-INVOKES
    // spec: LAW-INTERRUPTION-NOT-A-RESULT
    /// Model-based: random register / drop / materialize / settle sequences over the process
    /// placement and two Locations agree with a reference model of per-placement stacks
    /// (LAW-SCOPED-REGISTRATION, LAW-LOCATION-PRECEDENCE, LAW-STALE-REJECTION,
    /// LAW-SINGLE-EXECUTOR, LAW-INVALID-INPUT-NEVER-INVOKES, LAW-INTERRUPTION-NOT-A-RESULT).
    #[test]
    fn law_registry_model(ops in model_ops()) {
        run_registry_model(&ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-SINGLE-EXECUTOR
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    // spec: LAW-SINGLE-EXECUTOR
    /// LAW-SINGLE-EXECUTOR: Several tool values, each possibly registered under several names and
    /// in either placement: settling a name runs exactly the executor of the tool registered under
    /// it (its tag answers), and no other tool's counter moves.
    #[test]
    fn law_single_executor_only_the_resolved_tool_runs(
        tool_count in 1usize..=4,
        // For each of six names: absent, or (tool index, in the Location placement?).
        assignment in prop::collection::vec(prop::option::of((any::<Index>(), any::<bool>())), 6),
        calls in prop::collection::vec(any::<Index>(), 1..12),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let built: Vec<_> = (0..tool_count).map(|i| tagged(&format!("tool-{i}"))).collect();
        let (mut process_set, mut local_set) = (ToolSet::new(), ToolSet::new());
        let mut owner: Vec<(String, usize)> = Vec::new();
        for (n, slot) in assignment.iter().enumerate() {
            if let Some((tool, local)) = slot {
                let tool = tool.index(tool_count);
                let name = format!("n{n}");
                let set = if *local { &mut local_set } else { &mut process_set };
                set.insert(name.clone(), built[tool].0.clone());
                owner.push((name, tool));
            }
        }
        let _process = h.process.register(process_set).unwrap();
        let _local = location.register(local_set).unwrap();
        let turn = location.materialize(AllTools);
        let mut expected = vec![0usize; tool_count];
        for (i, pick) in calls.iter().enumerate() {
            if owner.is_empty() {
                break;
            }
            let (name, tool) = &owner[pick.index(owner.len())];
            let call = ToolCall::new(name.as_str(), r#"{"text":"x"}"#);
            let s = rt.block_on(turn.settle(cx(&format!("c{i}")), call));
            expected[*tool] += 1;
            let Outcome::Success(output) = &s.outcome else {
                return Err(TestCaseError::fail(format!("{name}: {:?}", s.outcome)));
            };
            prop_assert_eq!(&output.structured["tag"], &json!(format!("tool-{tool}")));
            let counts: Vec<usize> = built.iter().map(|(_, c)| count(c)).collect();
            prop_assert_eq!(&counts, &expected);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-CODEC-BOUNDARY
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
struct Knobs {
    n: u32,
    flag: bool,
    text: String,
}

/// An output whose encoding differs from its Rust shape: a renamed field, a skipped `None`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
struct Report {
    #[serde(rename = "countPlusOne")]
    count_plus_one: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    text: String,
}

fn report_for(input: &Knobs) -> Report {
    Report {
        count_plus_one: u64::from(input.n) + 1,
        note: input.flag.then(|| format!("flag set for {}", input.text)),
        text: input.text.clone(),
    }
}

type Seen<T> = Arc<Mutex<Vec<T>>>;

proptest! {
    #![proptest_config(config())]

    // spec: LAW-CODEC-BOUNDARY
    /// LAW-CODEC-BOUNDARY: The executor observes the decoded input (stringified numbers and
    /// booleans coerced, strings that look like numbers left alone), and the projection observes
    /// exactly the encoded output (`serde_json::to_value(output)`), which is also the settled
    /// structured output.
    #[test]
    fn law_codec_boundary_execute_sees_decoded_projection_sees_encoded(
        n in any::<u32>(),
        flag in any::<bool>(),
        text in prop_oneof!["\\PC{0,12}", Just("42".to_owned()), Just("true".to_owned())],
        n_as_string in any::<bool>(),
        flag_as_string in any::<bool>(),
        as_json_value in any::<bool>(),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let executed: Seen<Knobs> = Seen::default();
        let projected: Seen<(Knobs, Value)> = Seen::default();
        let (exec_log, project_log) = (executed.clone(), projected.clone());
        let tool = Tool::new("Reports its knobs.", move |input: Knobs, _cx| {
            exec_log.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolFailure>(report_for(&input)) }
        })
        .with_projection(move |input: &Knobs, encoded: &Value| {
            project_log.lock().unwrap().push((input.clone(), encoded.clone()));
            vec![Content::text(encoded.to_string())]
        });
        let _reg = location.register(ToolSet::new().with("knobs", tool)).unwrap();
        let turn = location.materialize(AllTools);

        let raw = json!({
            "n": if n_as_string { json!(n.to_string()) } else { json!(n) },
            "flag": if flag_as_string { json!(flag.to_string()) } else { json!(flag) },
            "text": text,
        });
        let arguments = if as_json_value {
            Arguments::Json(raw)
        } else {
            Arguments::Text(raw.to_string())
        };
        let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("knobs", arguments)));

        let decoded = Knobs { n, flag, text };
        let encoded = serde_json::to_value(report_for(&decoded)).unwrap();
        prop_assert_eq!(executed.lock().unwrap().clone(), vec![decoded.clone()]);
        prop_assert_eq!(projected.lock().unwrap().clone(), vec![(decoded, encoded.clone())]);
        let Outcome::Success(output) = &s.outcome else {
            return Err(TestCaseError::fail(format!("{:?}", s.outcome)));
        };
        prop_assert_eq!(&output.structured, &encoded);
        prop_assert_eq!(&output.content, &vec![Content::text(encoded.to_string())]);
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-DURABLE-IDENTITY
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Success,
    Failure,
    Unknown,
    Stale,
    Invalid,
    Interrupted,
    Panicked,
    InvalidOutput,
    RetentionFailed,
}

impl CallKind {
    const ALL: [CallKind; 9] = [
        CallKind::Success,
        CallKind::Failure,
        CallKind::Unknown,
        CallKind::Stale,
        CallKind::Invalid,
        CallKind::Interrupted,
        CallKind::Panicked,
        CallKind::InvalidOutput,
        CallKind::RetentionFailed,
    ];

    fn outcome(self) -> OutcomeKind {
        match self {
            CallKind::Success => OutcomeKind::Success,
            CallKind::Failure => OutcomeKind::Failure,
            CallKind::Unknown => OutcomeKind::Unknown,
            CallKind::Stale => OutcomeKind::Stale,
            CallKind::Invalid => OutcomeKind::Invalid,
            CallKind::Interrupted => OutcomeKind::Interrupted,
            CallKind::Panicked => OutcomeKind::Panicked,
            CallKind::InvalidOutput => OutcomeKind::InvalidOutput,
            CallKind::RetentionFailed => OutcomeKind::RetentionFailed,
        }
    }
}

/// An output whose schema caps `n` at 10.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
struct Capped {
    #[schemars(range(max = 10))]
    n: u32,
}

fn identity() -> impl Strategy<Value = CallIdentity> {
    (
        any::<String>(),
        any::<String>(),
        any::<String>(),
        any::<String>(),
    )
        .prop_map(|(s, a, m, c)| CallIdentity::new(s, a, m, c))
}

/// A turn offering one tool per outcome (`echo`, `fail`, `boom`, `liar`, `big`, a stale `gone`
/// and `batch`), over a failing store and a memory journal. `seen` logs `echo`'s contexts.
fn identity_turn(seen: &Seen<CallIdentity>) -> (Arc<MemoryJournal>, Turn, Vec<Registration>) {
    let journal = Arc::new(MemoryJournal::new());
    let process = tackle_registry::ToolRegistry::new();
    // A failing store: only the deliberately oversized call needs it.
    let store = Arc::new(MemoryOutputStore::failing("disk full"));
    let config = SettlementConfig::new(store, journal.clone());
    let location = Location::new("/ws", &process, config);
    let log = seen.clone();
    let echo = Tool::new("Echo.", move |input: EchoInput, cx: Context| {
        log.lock().unwrap().push(cx.identity().clone());
        async move { Ok::<_, ToolFailure>(input.text) }
    });
    let fail = Tool::new("Fails.", |_: EchoInput, _cx| async {
        Err::<String, _>(ToolFailure::new("no such file"))
    });
    let boom = Tool::new("Panics.", |_: EchoInput, _cx| async {
        if true {
            panic!("secret panic payload");
        }
        Ok::<String, ToolFailure>(String::new())
    });
    let liar = Tool::new("Breaks its schema.", |_: EchoInput, _cx| async {
        Ok::<_, ToolFailure>(Capped { n: 11 })
    });
    let big = Tool::new("Talks a lot.", |_: EchoInput, _cx| async {
        Ok::<_, ToolFailure>("line\n".repeat(50))
    })
    .with_output_limits(LimitsOverride {
        max_lines: Some(3),
        ..LimitsOverride::default()
    });
    let (gone, _) = tagged("gone");
    let tools = location
        .register(
            ToolSet::new()
                .with("echo", echo)
                .with("fail", fail)
                .with("boom", boom)
                .with("liar", liar)
                .with("big", big)
                .with("batch", batch_tool(BatchOptions::default())),
        )
        .unwrap();
    let stale = location
        .register(ToolSet::new().with("gone", gone))
        .unwrap();
    let turn = location.materialize(AllTools);
    drop(stale);
    (journal, turn, vec![tools])
}

impl CallKind {
    /// The tool name and arguments that settle as this kind on an [`identity_turn`].
    fn call(self) -> (&'static str, &'static str) {
        match self {
            CallKind::Success | CallKind::Interrupted => ("echo", r#"{"text":"hi"}"#),
            CallKind::Failure => ("fail", r#"{"text":"hi"}"#),
            CallKind::Unknown => ("nope", r#"{"text":"hi"}"#),
            CallKind::Stale => ("gone", r#"{"text":"hi"}"#),
            CallKind::Invalid => ("echo", "{"),
            CallKind::Panicked => ("boom", r#"{"text":"hi"}"#),
            CallKind::InvalidOutput => ("liar", r#"{"text":"hi"}"#),
            CallKind::RetentionFailed => ("big", r#"{"text":"hi"}"#),
        }
    }
}

/// The four host IDs of `identity`, as bytes.
fn id_bytes(identity: &CallIdentity) -> [Vec<u8>; 4] {
    [
        identity.session.as_str(),
        identity.agent.as_str(),
        identity.assistant_message.as_str(),
        identity.call.as_str(),
    ]
    .map(|s| s.as_bytes().to_vec())
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-DURABLE-IDENTITY
    /// LAW-DURABLE-IDENTITY: Every journal record (and every settlement) carries exactly the
    /// host-supplied session, agent, assistant message and call IDs, arbitrary unicode included,
    /// whatever the outcome: success, failure, unknown, stale, invalid, interrupted, panicked,
    /// invalid output and retention failure. The executor sees the same identity in its context.
    #[test]
    fn law_durable_identity_every_record_keeps_host_ids(
        calls in prop::collection::vec(
            (prop::sample::select(CallKind::ALL.to_vec()), identity()),
            1..8,
        ),
    ) {
        let rt = runtime();
        let seen: Seen<CallIdentity> = Seen::default();
        let (journal, turn, _keep) = identity_turn(&seen);

        let mut expected_seen = Vec::new();
        for (kind, id) in &calls {
            let (name, args) = kind.call();
            let token = CancellationToken::new();
            if *kind == CallKind::Interrupted {
                token.cancel();
            }
            let call = ToolCall::new(name, args).with_limits(LimitsOverride {
                max_lines: Some(3),
                ..LimitsOverride::default()
            });
            let s = rt.block_on(turn.settle(Context::new(id.clone(), token), call));
            prop_assert_eq!(&s.identity, id);
            if *kind == CallKind::Success {
                expected_seen.push(id.clone());
            }
            let records = journal.records();
            let last = records.last().expect("every settlement is recorded");
            prop_assert_eq!(last.outcome, kind.outcome(), "{:?}", s.outcome);
            prop_assert_eq!(&last.tool, name);
        }
        let records = journal.records();
        prop_assert_eq!(records.len(), calls.len());
        for (record, (_, id)) in records.iter().zip(&calls) {
            // Compared both as values and byte for byte.
            prop_assert_eq!(&record.identity, id);
            prop_assert_eq!(id_bytes(&record.identity), id_bytes(id));
        }
        prop_assert_eq!(seen.lock().unwrap().clone(), expected_seen);
    }

    // spec: LAW-DURABLE-IDENTITY
    /// LAW-DURABLE-IDENTITY through `batch`: every sub-call's record carries the batch's own
    /// host-supplied IDs, byte for byte, plus its 1-based index; no call ID is made up. Sub-calls
    /// that end in a defect are listed for the host in the batch's settlement and recorded on
    /// their own, and the model reads no defect payload (`LAW-DEFECT-NOT-A-RESULT`).
    #[test]
    fn law_durable_identity_sub_calls_keep_the_parents_ids(
        kinds in prop::collection::vec(
            prop::sample::select(
                CallKind::ALL.iter().copied().filter(|k| *k != CallKind::Interrupted).collect::<Vec<_>>()
            ),
            1..6,
        ),
        id in identity(),
    ) {
        let rt = runtime();
        let seen: Seen<CallIdentity> = Seen::default();
        let (journal, turn, _keep) = identity_turn(&seen);
        let calls: Vec<Value> = kinds
            .iter()
            .map(|kind| {
                let (name, args) = kind.call();
                // Invalid arguments must still be an object to travel in a batch.
                let parameters = serde_json::from_str::<Value>(args).unwrap_or(json!({"text": 7}));
                json!({"tool": name, "parameters": parameters})
            })
            .collect();
        let call = ToolCall::new("batch", json!({ "tool_calls": calls }));
        let s = rt.block_on(turn.settle(Context::new(id.clone(), CancellationToken::new()), call));
        prop_assert!(matches!(s.outcome, Outcome::Success(_)), "{:?}", s.outcome);
        let records = journal.records();
        prop_assert_eq!(records.len(), kinds.len() + 1);
        let mut subs: Vec<_> = records.iter().filter(|r| r.identity.sub_call.is_some()).collect();
        subs.sort_by_key(|r| r.identity.sub_call);
        for (i, (record, kind)) in subs.iter().zip(&kinds).enumerate() {
            let index = i as u32 + 1;
            prop_assert_eq!(&record.identity, &id.sub_call(index));
            prop_assert_eq!(id_bytes(&record.identity), id_bytes(&id));
            prop_assert_eq!(record.outcome, kind.outcome());
        }
        for seen in seen.lock().unwrap().iter() {
            prop_assert_eq!(id_bytes(seen), id_bytes(&id));
        }
        let for_host: Vec<(u32, OutcomeKind)> =
            s.sub_calls.iter().map(|r| (r.index, r.outcome.kind())).collect();
        let expected: Vec<(u32, OutcomeKind)> = kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| !k.outcome().is_model_visible())
            .map(|(i, k)| (i as u32 + 1, k.outcome()))
            .collect();
        prop_assert_eq!(for_host, expected);
        let sent = serde_json::to_string(&s.model_result()).unwrap();
        for secret in ["secret panic payload", "disk full", "does not match its schema"] {
            prop_assert!(!sent.contains(secret), "{} reached the model: {}", secret, sent);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-SCOPED-REGISTRATION
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum ScopeOp {
    Register(Vec<usize>),
    Drop(Index),
}

fn scope_op() -> impl Strategy<Value = ScopeOp> {
    prop_oneof![
        3 => names_subset().prop_map(ScopeOp::Register),
        2 => any::<Index>().prop_map(ScopeOp::Drop),
    ]
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-SCOPED-REGISTRATION
    /// LAW-SCOPED-REGISTRATION: Within one placement (process or Location): the latest active
    /// registration of a name wins, dropping a guard removes exactly its contributions, and
    /// dropping the winner reveals the next-latest active one. Checked after every step through
    /// `names()` and by settling every name in a fresh turn.
    #[test]
    fn law_scoped_registration_latest_active_wins(
        in_location in any::<bool>(),
        ops in prop::collection::vec(scope_op(), 1..20),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let registry = if in_location { location.tools().clone() } else { h.process.clone() };
        let mut stacks: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut guards: Vec<(usize, Vec<usize>, Registration)> = Vec::new();
        for (step, op) in ops.iter().enumerate() {
            match op {
                ScopeOp::Register(names) => {
                    let record: ToolSet = names
                        .iter()
                        .map(|&n| (name_of(n), tagged(&format!("{step}:{}", name_of(n))).0))
                        .collect();
                    guards.push((step, names.clone(), registry.register(record).unwrap()));
                    for &n in names {
                        stacks.entry(n).or_default().push(step);
                    }
                }
                ScopeOp::Drop(index) => {
                    if guards.is_empty() {
                        continue;
                    }
                    let (owner, names, guard) = guards.remove(index.index(guards.len()));
                    drop(guard);
                    for n in names {
                        stacks.get_mut(&n).unwrap().retain(|&s| s != owner);
                    }
                }
            }
            let winners: BTreeMap<usize, usize> = stacks
                .iter()
                .filter_map(|(&n, stack)| stack.last().map(|&s| (n, s)))
                .collect();
            let names: Vec<String> = winners.keys().map(|&n| name_of(n).to_owned()).collect();
            prop_assert_eq!(registry.names(), names, "step {}", step);
            let turn = location.materialize(AllTools);
            for (&n, &winner) in &winners {
                let call = ToolCall::new(name_of(n), r#"{"text":""}"#);
                let s = rt.block_on(turn.settle(cx("c"), call));
                let Outcome::Success(output) = &s.outcome else {
                    return Err(TestCaseError::fail(format!("step {step}: {:?}", s.outcome)));
                };
                prop_assert_eq!(
                    &output.structured["tag"],
                    &json!(format!("{winner}:{}", name_of(n))),
                    "step {}: {}", step, name_of(n)
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-LOCATION-PRECEDENCE
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    // spec: LAW-LOCATION-PRECEDENCE
    /// LAW-LOCATION-PRECEDENCE: A Location's registration outranks the process registration of the
    /// same name, whichever was registered first; two Locations over the same process registry
    /// never see each other's tools; dropping one Location's registration reveals the process tool
    /// there only.
    #[test]
    fn law_location_precedence_and_isolation(
        process_names in names_subset(),
        local_names in [names_subset(), names_subset()],
        process_first in any::<bool>(),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let locations = [h.location("/ws/0"), h.location("/ws/1")];
        let mut counters: HashMap<String, Arc<AtomicUsize>> = HashMap::new();
        let mut record = |prefix: &str, names: &[usize]| -> ToolSet {
            names
                .iter()
                .map(|&n| {
                    let tag = format!("{prefix}:{}", name_of(n));
                    let (tool, calls) = tagged(&tag);
                    counters.insert(tag, calls);
                    (name_of(n), tool)
                })
                .collect()
        };
        let process_record = record("p", &process_names);
        let local_records = [record("l0", &local_names[0]), record("l1", &local_names[1])];
        let mut process_guard = None;
        if process_first {
            process_guard = Some(h.process.register(process_record.clone()).unwrap());
        }
        let [r0, r1] = local_records;
        let mut local_guards = [
            Some(locations[0].register(r0).unwrap()),
            Some(locations[1].register(r1).unwrap()),
        ];
        if !process_first {
            process_guard = Some(h.process.register(process_record).unwrap());
        }
        let _process_guard = process_guard;

        // Phase 0: both Locations layered; phase 1: Location 0's registration dropped.
        for phase in 0..2 {
            if phase == 1 {
                local_guards[0] = None;
            }
            for (i, location) in locations.iter().enumerate() {
                let local: &[usize] = if local_guards[i].is_some() { &local_names[i] } else { &[] };
                let expect = |n: usize| {
                    if local.contains(&n) {
                        Some(format!("l{i}:{}", name_of(n)))
                    } else if process_names.contains(&n) {
                        Some(format!("p:{}", name_of(n)))
                    } else {
                        None
                    }
                };
                let turn = location.materialize(AllTools);
                let advertised: Vec<&str> = turn.tools().iter().map(|t| t.name()).collect();
                let want: Vec<&str> =
                    (0..POOL.len()).filter(|&n| expect(n).is_some()).map(name_of).collect();
                prop_assert_eq!(advertised, want, "phase {} location {}", phase, i);
                for n in 0..POOL.len() {
                    let before: HashMap<String, usize> =
                        counters.iter().map(|(k, c)| (k.clone(), count(c))).collect();
                    let call = ToolCall::new(name_of(n), r#"{"text":""}"#);
                    let s = rt.block_on(turn.settle(cx("c"), call));
                    match expect(n) {
                        Some(tag) => {
                            let Outcome::Success(output) = &s.outcome else {
                                return Err(TestCaseError::fail(format!("{:?}", s.outcome)));
                            };
                            prop_assert_eq!(&output.structured["tag"], &json!(tag.clone()));
                            for (k, c) in &counters {
                                let ran = usize::from(*k == tag);
                                prop_assert_eq!(count(c), before[k] + ran, "{}", k);
                            }
                        }
                        None => {
                            prop_assert_eq!(error_kind(&s), Some(ModelErrorKind::Unknown));
                            for (k, c) in &counters {
                                prop_assert_eq!(count(c), before[k], "{}", k);
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-CAPTURED-EXECUTION
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Change {
    /// Drop the running tool's registration.
    Drop,
    /// Register a replacement in the same placement, keeping the original.
    Replace,
    /// Drop the original, then register a replacement in the same placement.
    DropAndReplace,
    /// Register a replacement in the Location (shadows a process tool; replaces a local one).
    ShadowInLocation,
    /// Drop, then register the very same tool value again (a new registration identity).
    DropAndReRegisterSameValue,
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-CAPTURED-EXECUTION
    /// LAW-CAPTURED-EXECUTION: Once settlement has looked the tool up, registry changes made while
    /// it runs (drop, replace, shadow, re-register) do not affect it: the call completes with
    /// Success from the original tool and the replacement never runs. A later call of the same turn
    /// is stale.
    #[test]
    fn law_captured_execution_survives_registry_changes(
        in_location in any::<bool>(),
        change in prop::sample::select(vec![
            Change::Drop, Change::Replace, Change::DropAndReplace,
            Change::ShadowInLocation, Change::DropAndReRegisterSameValue,
        ]),
        yields in 0usize..4,
        text in "[a-z]{0,8}",
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let registry = if in_location { location.tools().clone() } else { h.process.clone() };
        let (tool, calls, started, release) = gated("original");
        let (replacement, replacement_calls) = tagged("replacement");
        let original = registry.register(ToolSet::new().with("slow", tool.clone())).unwrap();
        let original_id = original.identity("slow").unwrap();
        let turn = location.materialize(AllTools);

        let (settlement, _kept) = rt.block_on(async {
            let settle = turn.settle(cx("c1"), ToolCall::new("slow", json!({ "text": text })));
            let driver = async move {
                started.notified().await;
                let mut kept = Vec::new();
                let replacement_set = ToolSet::new().with("slow", replacement);
                match change {
                    Change::Drop => drop(original),
                    Change::Replace => {
                        kept.push(original);
                        kept.push(registry.register(replacement_set).unwrap());
                    }
                    Change::DropAndReplace => {
                        drop(original);
                        kept.push(registry.register(replacement_set).unwrap());
                    }
                    Change::ShadowInLocation => {
                        kept.push(original);
                        kept.push(location.register(replacement_set).unwrap());
                    }
                    Change::DropAndReRegisterSameValue => {
                        drop(original);
                        kept.push(registry.register(ToolSet::new().with("slow", tool)).unwrap());
                    }
                }
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
                release.notify_one();
                kept
            };
            tokio::join!(settle, driver)
        });

        let Outcome::Success(output) = &settlement.outcome else {
            return Err(TestCaseError::fail(format!("{:?}", settlement.outcome)));
        };
        prop_assert_eq!(&output.structured, &json!({ "tag": "original", "text": text }));
        prop_assert_eq!(settlement.registration, Some(original_id));
        prop_assert_eq!(count(&calls), 1);
        prop_assert_eq!(count(&replacement_calls), 0);

        // The turn advertised the original registration, which is no longer effective.
        let again = rt.block_on(turn.settle(cx("c2"), ToolCall::new("slow", r#"{"text":"x"}"#)));
        prop_assert_eq!(error_kind(&again), Some(ModelErrorKind::Stale));
        prop_assert_eq!(count(&calls), 1);
        prop_assert_eq!(count(&replacement_calls), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-STALE-REJECTION
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum StaleScenario {
    /// The advertised registration is dropped.
    Removed,
    /// A newer registration of the name in the same placement.
    Replaced,
    /// Dropped and the same tool value registered again.
    ReRegisteredSameValue,
    /// An overlay was advertised; closing it reveals the older registration.
    OverlayClosed,
    /// A process tool was advertised; a Location tool of the same name now shadows it.
    ShadowedByLocation,
    /// A Location tool shadowing a process tool was advertised; dropping it reveals the process
    /// one.
    ShadowRemoved,
    /// Control: only other names change, so the call is not stale.
    UnrelatedChurn,
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-STALE-REJECTION
    /// LAW-STALE-REJECTION: A call never executes a registration other than the one its turn
    /// advertised: whenever the effective registration changed since materialize, the outcome is
    /// `Stale`, no executor runs (not even for valid arguments), and the journal records the
    /// advertised registration. Churn of other names leaves the call valid. The same holds for a
    /// call made through `batch` on that turn: the sub-call is judged against the turn exactly as
    /// a direct call.
    #[test]
    fn law_stale_rejection_changed_registration_never_runs(
        scenario in prop::sample::select(vec![
            StaleScenario::Removed, StaleScenario::Replaced, StaleScenario::ReRegisteredSameValue,
            StaleScenario::OverlayClosed, StaleScenario::ShadowedByLocation,
            StaleScenario::ShadowRemoved, StaleScenario::UnrelatedChurn,
        ]),
        in_location in any::<bool>(),
        args in model_args(),
        through_batch in any::<bool>(),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let _batch = location
            .register(ToolSet::new().with("batch", batch_tool(BatchOptions::default())))
            .unwrap();
        let registry = if in_location { location.tools().clone() } else { h.process.clone() };
        let (older, older_calls) = tagged("older");
        let (advertised_tool, advertised_calls) = tagged("advertised");
        let (newer, newer_calls) = tagged("newer");
        let mut keep: Vec<Registration> = Vec::new();
        let advertised_reg = match scenario {
            StaleScenario::OverlayClosed => {
                keep.push(registry.register(ToolSet::new().with("t", older)).unwrap());
                registry.register(ToolSet::new().with("t", advertised_tool.clone())).unwrap()
            }
            StaleScenario::ShadowedByLocation => {
                h.process.register(ToolSet::new().with("t", advertised_tool.clone())).unwrap()
            }
            StaleScenario::ShadowRemoved => {
                keep.push(h.process.register(ToolSet::new().with("t", older)).unwrap());
                location.register(ToolSet::new().with("t", advertised_tool.clone())).unwrap()
            }
            _ => registry.register(ToolSet::new().with("t", advertised_tool.clone())).unwrap(),
        };
        let advertised_id = advertised_reg.identity("t").unwrap();
        let turn = location.materialize(AllTools);
        prop_assert_eq!(turn.get("t").map(|t| t.registration()), Some(advertised_id));

        match scenario {
            StaleScenario::Removed
            | StaleScenario::OverlayClosed
            | StaleScenario::ShadowRemoved => drop(advertised_reg),
            StaleScenario::Replaced => {
                keep.push(advertised_reg);
                keep.push(registry.register(ToolSet::new().with("t", newer)).unwrap());
            }
            StaleScenario::ReRegisteredSameValue => {
                drop(advertised_reg);
                keep.push(registry.register(ToolSet::new().with("t", advertised_tool)).unwrap());
            }
            StaleScenario::ShadowedByLocation => {
                keep.push(advertised_reg);
                keep.push(location.register(ToolSet::new().with("t", newer)).unwrap());
            }
            StaleScenario::UnrelatedChurn => {
                keep.push(advertised_reg);
                let other = registry.register(ToolSet::new().with("u", newer.clone())).unwrap();
                drop(other);
                keep.push(location.register(ToolSet::new().with("v", newer)).unwrap());
            }
        }

        // Through batch, the arguments must be an object; other text is tried directly.
        let parameters = serde_json::from_str::<Value>(&args.raw()).ok().filter(Value::is_object);
        let (record, is_error) = match parameters.filter(|_| through_batch) {
            Some(parameters) => {
                let calls = json!({"tool_calls": [{"tool": "t", "parameters": parameters}]});
                let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("batch", calls)));
                let Outcome::Success(output) = &s.outcome else {
                    return Err(TestCaseError::fail(format!("{:?}", s.outcome)));
                };
                let batch = BatchOutput::deserialize(&output.structured).unwrap();
                let sub = h.journal.records().into_iter().find(|r| r.identity.sub_call == Some(1));
                prop_assert!(sub.is_some(), "the sub-call has no journal row");
                let sub = sub.unwrap();
                prop_assert_eq!(&batch.results[0].outcome, sub.outcome.as_str());
                (sub, !batch.results[0].ok)
            }
            None => {
                let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("t", args.raw())));
                prop_assert_eq!(s.registration, Some(advertised_id));
                let is_error = s.model_result().is_some_and(|r| r.is_error);
                (h.journal.records().pop().unwrap(), is_error)
            }
        };
        prop_assert_eq!(record.registration, Some(advertised_id.get()));
        if matches!(scenario, StaleScenario::UnrelatedChurn) {
            let ran = matches!(args, ModelArgs::Valid { .. });
            prop_assert_eq!(count(&advertised_calls), usize::from(ran));
            prop_assert_ne!(record.outcome, OutcomeKind::Stale);
        } else {
            prop_assert_eq!(record.outcome, OutcomeKind::Stale);
            prop_assert!(is_error);
            prop_assert_eq!(count(&advertised_calls), 0);
        }
        prop_assert_eq!(count(&older_calls), 0);
        prop_assert_eq!(count(&newer_calls), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-STORAGE-ENCAPSULATION
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
struct Listing {
    lines: Vec<String>,
    total: usize,
}

#[derive(Clone, Copy, Debug)]
enum Projection {
    /// No projection: the structured output is what the model reads and what is measured.
    Structured,
    /// One text part per line.
    Lines,
    /// One text part with the whole listing joined.
    Joined,
}

#[derive(Clone, Copy, Debug)]
enum LimitsAt {
    Registry,
    Agent,
    Call,
}

fn limits() -> impl Strategy<Value = (usize, usize, Direction)> {
    (
        prop_oneof![0usize..=4, 0usize..=100],
        prop_oneof![0usize..=64, 0usize..=4096],
        prop::sample::select(vec![Direction::Head, Direction::Tail, Direction::HeadTail]),
    )
}

fn listing_location(
    h: &Harness,
    store: Arc<MemoryOutputStore>,
    limits: Option<(OutputLimits, LimitsAt)>,
    listing: &Listing,
    projection: Projection,
    seen: &Seen<Value>,
) -> (Location, Registration) {
    let mut config = SettlementConfig::new(store, h.journal.clone());
    match limits {
        Some((limits, LimitsAt::Registry)) => config = config.with_limits(limits),
        Some((limits, LimitsAt::Agent)) => {
            config = config.with_agent_limits(
                "build",
                LimitsOverride {
                    max_lines: Some(limits.max_lines),
                    max_bytes: Some(limits.max_bytes),
                    direction: Some(limits.direction),
                    max_media_bytes: None,
                },
            )
        }
        Some((_, LimitsAt::Call)) | None => {}
    }
    let location = Location::new("/ws", &h.process, config);
    let value = listing.clone();
    let tool = Tool::new("Lists lines.", move |_: EchoInput, _cx| {
        let value = value.clone();
        async move { Ok::<_, ToolFailure>(value) }
    });
    let record = match projection {
        Projection::Structured => ToolSet::new().with("list", tool),
        Projection::Lines => ToolSet::new().with("list", {
            let seen = seen.clone();
            tool.with_projection(move |_: &EchoInput, encoded: &Value| {
                seen.lock().unwrap().push(encoded.clone());
                encoded["lines"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(Content::text)
                    .collect()
            })
        }),
        Projection::Joined => ToolSet::new().with("list", {
            let seen = seen.clone();
            tool.with_projection(move |_: &EchoInput, encoded: &Value| {
                seen.lock().unwrap().push(encoded.clone());
                vec![Content::text(encoded.to_string())]
            })
        }),
    };
    let registration = location.register(record).unwrap();
    (location, registration)
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-STORAGE-ENCAPSULATION
    /// LAW-STORAGE-ENCAPSULATION: the domain output (the encoded output the projection receives)
    /// is the tool's output whatever the limits (tiny ones force bounding and retention) and
    /// wherever they are set (registry, agent, call). The structured value the provider receives
    /// is that output, whole, or nothing, in which case it is retained byte for byte; managed
    /// paths and IDs never appear in it. When retention fails, the call fails operationally
    /// instead of publishing a lossy success.
    #[test]
    fn law_storage_encapsulation_structured_output_ignores_bounding(
        lines in prop::collection::vec("[a-z ]{0,40}", 0..60),
        (max_lines, max_bytes, direction) in limits(),
        at in prop::sample::select(vec![LimitsAt::Registry, LimitsAt::Agent, LimitsAt::Call]),
        projection in prop::sample::select(vec![
            Projection::Structured, Projection::Lines, Projection::Joined,
        ]),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let seen = Seen::<Value>::default();
        let listing = Listing { total: lines.len(), lines };
        let encoded = serde_json::to_value(&listing).unwrap();
        let limits = OutputLimits { max_lines, max_bytes, direction, ..OutputLimits::default() };
        let call = || {
            let call = ToolCall::new("list", r#"{"text":""}"#);
            match at {
                LimitsAt::Call => call.with_limits(LimitsOverride {
                    max_lines: Some(max_lines),
                    max_bytes: Some(max_bytes),
                    direction: Some(direction),
                    max_media_bytes: None,
                }),
                _ => call,
            }
        };

        // Default limits everywhere: nothing here is large enough to be bounded.
        let (roomy, _r1) =
            listing_location(&h, h.store.clone(), None, &listing, projection, &seen);
        let plain = ToolCall::new("list", r#"{"text":""}"#);
        let reference = rt.block_on(roomy.materialize(AllTools).settle(cx("c0"), plain));
        let Outcome::Success(reference) = reference.outcome else {
            return Err(TestCaseError::fail(format!("{:?}", reference.outcome)));
        };
        prop_assert_eq!(&reference.structured, &encoded);

        // Generated (often tiny) limits.
        let (tight, _r2) = listing_location(
            &h, h.store.clone(), Some((limits, at)), &listing, projection, &seen,
        );
        let bounded = rt.block_on(tight.materialize(AllTools).settle(cx("c1"), call()));
        let Outcome::Success(output) = &bounded.outcome else {
            return Err(TestCaseError::fail(format!("{:?}", bounded.outcome)));
        };
        for received in seen.lock().unwrap().iter() {
            prop_assert_eq!(received, &encoded, "the projection saw another output");
        }
        if output.structured.is_null() {
            let pretty = serde_json::to_vec_pretty(&encoded).unwrap();
            let kept = bounded
                .managed
                .iter()
                .any(|managed| h.store.get(&managed.id).as_deref() == Some(&pretty[..]));
            prop_assert!(kept, "the structured output was neither sent nor retained");
        } else {
            prop_assert_eq!(&output.structured, &encoded);
        }
        let structured_text = serde_json::to_string(&output.structured).unwrap();
        for managed in &bounded.managed {
            let path = managed.path.to_string_lossy();
            prop_assert!(!structured_text.contains(path.as_ref()), "{} leaked", path);
            prop_assert!(!structured_text.contains(&managed.id), "{} leaked", managed.id);
            prop_assert!(h.store.get(&managed.id).is_some(), "{} not retained", managed.id);
        }
        if bounded.managed.is_empty() {
            prop_assert_eq!(output, &reference);
        }

        // The same limits with a store that cannot retain.
        let failing = Arc::new(MemoryOutputStore::failing("disk full"));
        let (broken, _r3) =
            listing_location(&h, failing, Some((limits, at)), &listing, projection, &seen);
        let s = rt.block_on(broken.materialize(AllTools).settle(cx("c2"), call()));
        if bounded.managed.is_empty() {
            prop_assert_eq!(&s.outcome, &bounded.outcome);
        } else {
            prop_assert!(
                matches!(s.outcome, Outcome::Defect(Defect::Retention(_))),
                "{:?}", s.outcome
            );
            prop_assert!(s.model_result().is_none());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-INVALID-INPUT-NEVER-INVOKES
// ---------------------------------------------------------------------------------------------

/// An input whose schema caps `n` at 10: serde alone would accept 11.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
struct CappedInput {
    #[schemars(range(max = 10))]
    n: u32,
}

fn definitely_invalid_echo_json() -> impl Strategy<Value = Value> {
    let not_a_string = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        Just(json!([])),
        Just(json!({})),
        Just(json!(["text"])),
    ];
    let bad_repeat = prop_oneof![
        (i64::MIN..0).prop_map(Value::from),
        Just(json!(4_294_967_296u64)),
        Just(json!(1.5)),
        Just(json!("1.5")),
        Just(json!("lots")),
        Just(json!(true)),
        Just(Value::Null),
        Just(json!([1])),
    ];
    prop_oneof![
        not_a_string.prop_map(|text| json!({ "text": text })),
        ("[a-z]{0,5}", bad_repeat)
            .prop_map(|(text, repeat)| json!({ "text": text, "repeat": repeat })),
        (0u32..3).prop_map(|repeat| json!({ "repeat": repeat })),
        prop_oneof![
            Just(json!([])),
            Just(json!(null)),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,5}".prop_map(Value::from),
        ],
    ]
}

/// Raw argument text that cannot decode: arbitrary text that is not JSON, or a strict prefix of
/// a valid argument object (truncated mid-stream), or a definitely invalid JSON document.
fn invalid_argument_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_filter("not JSON", |s| serde_json::from_str::<Value>(s).is_err()),
        ("[a-z]{0,8}", any::<Index>()).prop_map(|(text, cut)| {
            let full = echo_args(&text, 1, false);
            let mut end = cut.index(full.len());
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            full[..end].to_owned()
        }),
        definitely_invalid_echo_json().prop_map(|v| v.to_string()),
    ]
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-INVALID-INPUT-NEVER-INVOKES
    /// LAW-INVALID-INPUT-NEVER-INVOKES: Arguments that fail decoding (malformed or truncated JSON,
    /// wrong types, missing fields, non-objects), sent as text or as a parsed value, settle as
    /// `Invalid` and the executor's counter does not move.
    #[test]
    fn law_invalid_input_never_invokes_known_bad_arguments(
        raw in invalid_argument_text(),
        as_value in any::<bool>(),
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let (tool, calls) = tagged("t");
        let _reg = location.register(ToolSet::new().with("echo", tool)).unwrap();
        let turn = location.materialize(AllTools);
        let arguments = match serde_json::from_str::<Value>(&raw) {
            Ok(value) if as_value => Arguments::Json(value),
            _ => Arguments::Text(raw.clone()),
        };
        let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("echo", arguments)));
        prop_assert_eq!(error_kind(&s), Some(ModelErrorKind::Invalid), "{:?}", s.outcome);
        prop_assert_eq!(count(&calls), 0);
        prop_assert_eq!(h.journal.records()[0].outcome, OutcomeKind::Invalid);
    }

    // spec: LAW-INVALID-INPUT-NEVER-INVOKES
    /// LAW-INVALID-INPUT-NEVER-INVOKES: For any argument text at all, the executor runs exactly
    /// when the outcome is `Success`; otherwise the outcome is `Invalid` and the counter does not
    /// move.
    #[test]
    fn law_invalid_input_never_invokes_arbitrary_text(raw in any::<String>()) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let (tool, calls) = tagged("t");
        let _reg = location.register(ToolSet::new().with("echo", tool)).unwrap();
        let turn = location.materialize(AllTools);
        let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("echo", raw.as_str())));
        match &s.outcome {
            Outcome::Success(_) => prop_assert_eq!(count(&calls), 1),
            Outcome::Error(e) if e.kind == ModelErrorKind::Invalid => {
                prop_assert_eq!(count(&calls), 0)
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }

    // spec: LAW-INVALID-INPUT-NEVER-INVOKES
    /// LAW-INVALID-INPUT-NEVER-INVOKES: Constraints only the schema states (here `maximum: 10` on a
    /// `u32`) are part of decoding: an out-of-range value is `Invalid` and never reaches the
    /// executor.
    #[test]
    fn law_invalid_input_never_invokes_schema_range(n in 0u32..40, stringified in any::<bool>()) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let tool = Tool::new("Takes a small number.", move |input: CappedInput, _cx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolFailure>(input.n) }
        });
        let _reg = location.register(ToolSet::new().with("small", tool)).unwrap();
        let turn = location.materialize(AllTools);
        let value = if stringified { json!(n.to_string()) } else { json!(n) };
        let call = ToolCall::new("small", json!({ "n": value }).to_string());
        let s = rt.block_on(turn.settle(cx("c1"), call));
        if n <= 10 {
            prop_assert!(matches!(s.outcome, Outcome::Success(_)), "{:?}", s.outcome);
            prop_assert_eq!(count(&calls), 1);
        } else {
            prop_assert_eq!(error_kind(&s), Some(ModelErrorKind::Invalid), "{:?}", s.outcome);
            prop_assert_eq!(count(&calls), 0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-INVALID-OUTPUT-NEVER-SUCCEEDS
// ---------------------------------------------------------------------------------------------

/// Serializes to an error, always.
#[derive(Clone, Debug, JsonSchema)]
struct Unencodable {
    #[allow(dead_code)]
    n: u32,
}

impl Serialize for Unencodable {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "this value refuses to be encoded",
        ))
    }
}

/// Claims (through its schema) to be an object, but encodes as a string.
#[derive(Clone, Debug, JsonSchema)]
struct Shapeshifter {
    #[allow(dead_code)]
    n: u32,
}

impl Serialize for Shapeshifter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("not an object")
    }
}

#[derive(Clone, Copy, Debug)]
enum BadOutput {
    /// `Capped { n }`, valid only for `n <= 10`.
    Capped(u32),
    /// A `Serialize` that errors.
    Unencodable,
    /// A `Serialize` that disagrees with the schema.
    Shapeshifter,
}

fn bad_output() -> impl Strategy<Value = BadOutput> {
    prop_oneof![
        3 => (0u32..40).prop_map(BadOutput::Capped),
        1 => Just(BadOutput::Unencodable),
        1 => Just(BadOutput::Shapeshifter),
    ]
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-INVALID-OUTPUT-NEVER-SUCCEEDS
    /// LAW-INVALID-OUTPUT-NEVER-SUCCEEDS: An output that violates its schema (a `range(max = 10)`
    /// field above 10, a `Serialize` that errors, an encoding of the wrong shape) never settles as
    /// `Success`: it is `Defect::InvalidOutput`, has no model result, is journaled as
    /// `invalid_output` without one, and its projection never runs. A valid `Capped` output
    /// succeeds.
    #[test]
    fn law_invalid_output_never_succeeds(output in bad_output(), projected in any::<bool>()) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let projections = Arc::new(AtomicUsize::new(0));
        let seen = projections.clone();
        let project = move |_: &EchoInput, encoded: &Value| {
            seen.fetch_add(1, Ordering::SeqCst);
            vec![Content::text(encoded.to_string())]
        };
        let mut record = ToolSet::new();
        match output {
            BadOutput::Capped(n) => {
                let tool = Tool::new("Capped.", move |_: EchoInput, _cx| async move {
                    Ok::<_, ToolFailure>(Capped { n })
                });
                record.insert("out", if projected { tool.with_projection(project) } else { tool });
            }
            BadOutput::Unencodable => {
                let tool = Tool::new("Unencodable.", |_: EchoInput, _cx| async {
                    Ok::<_, ToolFailure>(Unencodable { n: 1 })
                });
                record.insert("out", if projected { tool.with_projection(project) } else { tool });
            }
            BadOutput::Shapeshifter => {
                let tool = Tool::new("Shapeshifter.", |_: EchoInput, _cx| async {
                    Ok::<_, ToolFailure>(Shapeshifter { n: 1 })
                });
                record.insert("out", if projected { tool.with_projection(project) } else { tool });
            }
        }
        let _reg = location.register(record).unwrap();
        let turn = location.materialize(AllTools);
        let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("out", r#"{"text":""}"#)));
        let record = h.journal.records().pop().unwrap();
        if let BadOutput::Capped(n @ 0..=10) = output {
            prop_assert_eq!(
                &s.outcome,
                &Outcome::Success(tackle_core::ToolOutput {
                    content: if projected {
                        vec![Content::text(json!({ "n": n }).to_string())]
                    } else {
                        vec![]
                    },
                    structured: json!({ "n": n }),
                })
            );
            return Ok(());
        }
        prop_assert!(
            matches!(s.outcome, Outcome::Defect(Defect::InvalidOutput(_))),
            "{:?}", s.outcome
        );
        prop_assert!(s.model_result().is_none());
        prop_assert_eq!(record.outcome, OutcomeKind::InvalidOutput);
        prop_assert_eq!(record.model_result, None);
        prop_assert_eq!(count(&projections), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-INTERRUPTION-NOT-A-RESULT
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Timing {
    /// The token fires before settlement starts.
    Before,
    /// The token fires while the executor is running.
    During,
}

#[derive(Clone, Copy, Debug)]
enum Reaction {
    /// Turns cancellation into a `ToolFailure` at once.
    Fail,
    /// Yields once, then returns a `ToolFailure`.
    FailLater,
    /// Ignores cancellation and never finishes.
    Hang,
}

fn interruption_case() -> impl Strategy<Value = (Timing, Reaction, bool)> {
    let reaction = prop::sample::select(vec![Reaction::Fail, Reaction::FailLater, Reaction::Hang]);
    prop_oneof![
        // Cancelled before: the arguments may even be invalid.
        (Just(Timing::Before), reaction.clone(), any::<bool>()),
        // Cancelled during: the executor must start, so the arguments are valid.
        (Just(Timing::During), reaction, Just(true)),
    ]
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-INTERRUPTION-NOT-A-RESULT
    /// LAW-INTERRUPTION-NOT-A-RESULT: A call whose token fires before or during execution is
    /// `Interrupted`, has no model result and is journaled without one, even when the tool reacts
    /// to cancellation by returning a `ToolFailure`. Cancelled before, the executor never runs.
    #[test]
    fn law_interruption_not_a_result((timing, reaction, valid) in interruption_case()) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let calls = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Notify::new());
        let (counter, on_start) = (calls.clone(), started.clone());
        let tool = Tool::new("Waits for cancellation.", move |_: EchoInput, cx: Context| {
            counter.fetch_add(1, Ordering::SeqCst);
            let on_start = on_start.clone();
            async move {
                on_start.notify_one();
                cx.cancellation().cancelled().await;
                match reaction {
                    Reaction::Fail => {}
                    Reaction::FailLater => tokio::task::yield_now().await,
                    Reaction::Hang => std::future::pending::<()>().await,
                }
                Err::<String, _>(ToolFailure::new("cancelled by the user").with_hint("try again"))
            }
        });
        let _reg = location.register(ToolSet::new().with("wait", tool)).unwrap();
        let turn = location.materialize(AllTools);
        let token = CancellationToken::new();
        let context = Context::new(CallIdentity::new("s", "build", "m", "c1"), token.clone());
        let call = ToolCall::new("wait", if valid { r#"{"text":"x"}"# } else { "{" });
        let s = match timing {
            Timing::Before => {
                token.cancel();
                rt.block_on(turn.settle(context, call))
            }
            Timing::During => rt.block_on(async {
                let cancel = async {
                    started.notified().await;
                    token.cancel();
                };
                tokio::join!(turn.settle(context, call), cancel).0
            }),
        };
        prop_assert_eq!(&s.outcome, &Outcome::Interrupted(Interruption::Cancelled));
        prop_assert!(s.model_result().is_none());
        let record = h.journal.records().pop().unwrap();
        prop_assert_eq!(record.outcome, OutcomeKind::Interrupted);
        prop_assert_eq!(record.model_result, None);
        let expected_calls = match timing {
            Timing::Before => 0,
            Timing::During => 1,
        };
        prop_assert_eq!(count(&calls), expected_calls);
    }
}

// ---------------------------------------------------------------------------------------------
// LAW-DEFECT-NOT-A-RESULT
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum PanicAt {
    /// In the executor, before its future is created.
    Executor,
    /// Inside the executor's future, after an await.
    AfterAwait,
    /// In the projection.
    Projection,
    /// With a payload that is not a string.
    NonStringPayload,
}

proptest! {
    #![proptest_config(config())]

    // spec: LAW-DEFECT-NOT-A-RESULT
    /// LAW-DEFECT-NOT-A-RESULT: A tool that panics (in the executor, in its future, in its
    /// projection, with any payload) settles as `Defect::Panicked`, has no model result, is
    /// journaled as `panicked` without one, and the panic message appears in nothing model-facing.
    #[test]
    fn law_defect_not_a_result(
        at in prop::sample::select(vec![
            PanicAt::Executor, PanicAt::AfterAwait, PanicAt::Projection, PanicAt::NonStringPayload,
        ]),
        secret in "[A-Za-z0-9]{6,16}",
    ) {
        let rt = runtime();
        let h = Harness::new();
        let location = h.location("/ws");
        let message = format!("SECRET-{secret}");
        let m = message.clone();
        let tool = Tool::new("Panics.", move |input: EchoInput, _cx| {
            let m = m.clone();
            if matches!(at, PanicAt::Executor) {
                panic!("{m}");
            }
            async move {
                tokio::task::yield_now().await;
                match at {
                    PanicAt::AfterAwait => panic!("{m}"),
                    PanicAt::NonStringPayload => std::panic::panic_any(m.len()),
                    _ => Ok::<_, ToolFailure>(input.text),
                }
            }
        });
        let m = message.clone();
        let tool = tool.with_projection(move |_: &EchoInput, _: &Value| {
            if matches!(at, PanicAt::Projection) {
                panic!("{m}");
            }
            vec![Content::text("fine")]
        });
        let _reg = location.register(ToolSet::new().with("boom", tool)).unwrap();
        let turn = location.materialize(AllTools);
        let s = rt.block_on(turn.settle(cx("c1"), ToolCall::new("boom", r#"{"text":"x"}"#)));
        let Outcome::Defect(Defect::Panicked(payload)) = &s.outcome else {
            return Err(TestCaseError::fail(format!("{:?}", s.outcome)));
        };
        if !matches!(at, PanicAt::NonStringPayload) {
            prop_assert!(payload.contains(&message), "{}", payload);
        }
        prop_assert!(s.model_result().is_none());
        let record = h.journal.records().pop().unwrap();
        prop_assert_eq!(record.outcome, OutcomeKind::Panicked);
        prop_assert_eq!(record.model_result, None);
        // Nothing the model could be shown mentions the panic.
        let visible = serde_json::to_string(&s.model_result()).unwrap();
        prop_assert!(!visible.contains(&message));
    }
}

// ---------------------------------------------------------------------------------------------
// Examples: one crisp case per law where it reads better than a property
// ---------------------------------------------------------------------------------------------

/// LAW-CODEC-BOUNDARY: `"2"` reaches the executor as `2`; the string field stays a string.
#[tokio::test]
async fn law_codec_boundary_example_stringified_number_is_coerced() {
    let h = Harness::new();
    let location = h.location("/ws");
    let executed: Seen<Knobs> = Seen::default();
    let log = executed.clone();
    let tool = Tool::new("Knobs.", move |input: Knobs, _cx| {
        log.lock().unwrap().push(input.clone());
        async move { Ok::<_, ToolFailure>(report_for(&input)) }
    });
    let _reg = location
        .register(ToolSet::new().with("knobs", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let s = turn
        .settle(
            cx("c1"),
            ToolCall::new("knobs", r#"{"n":"2","flag":"false","text":"2"}"#),
        )
        .await;
    let expected = Knobs {
        n: 2,
        flag: false,
        text: "2".to_owned(),
    };
    assert_eq!(executed.lock().unwrap().as_slice(), &[expected]);
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.structured, json!({ "countPlusOne": 3, "text": "2" }));
}

/// LAW-SCOPED-REGISTRATION: closing the winner reveals the next-latest; closing a middle one
/// changes nothing visible; changing the caller's record afterwards changes nothing.
#[tokio::test]
async fn law_scoped_registration_example_close_reveals_previous() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (first, _) = tagged("first");
    let (second, _) = tagged("second");
    let (third, _) = tagged("third");
    let (sneaky, sneaky_calls) = tagged("sneaky");
    let mut record = ToolSet::new().with("t", first);
    let r1 = h.process.register(record.clone()).unwrap();
    record.insert("u", sneaky);
    let r2 = h
        .process
        .register(ToolSet::new().with("t", second))
        .unwrap();
    let r3 = h.process.register(ToolSet::new().with("t", third)).unwrap();
    let answer = |turn: Turn| async move {
        let s = turn
            .settle(cx("c"), ToolCall::new("t", r#"{"text":""}"#))
            .await;
        match s.outcome {
            Outcome::Success(output) => output.structured["tag"].as_str().unwrap().to_owned(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(h.process.names(), ["t"]);
    assert_eq!(answer(location.materialize(AllTools)).await, "third");
    drop(r2);
    assert_eq!(answer(location.materialize(AllTools)).await, "third");
    drop(r3);
    assert_eq!(answer(location.materialize(AllTools)).await, "first");
    drop(r1);
    assert!(location.materialize(AllTools).tools().is_empty());
    assert_eq!(count(&sneaky_calls), 0);
}

/// LAW-STALE-REJECTION: an overlay advertised in a turn, then closed, makes that turn's call
/// stale even though an older registration of the name is effective again.
#[tokio::test]
async fn law_stale_rejection_example_closed_overlay() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (base, base_calls) = tagged("base");
    let (overlay, overlay_calls) = tagged("overlay");
    let _base = location.register(ToolSet::new().with("t", base)).unwrap();
    let top = location
        .register(ToolSet::new().with("t", overlay))
        .unwrap();
    let turn = location.materialize(AllTools);
    drop(top);
    let s = turn
        .settle(cx("c1"), ToolCall::new("t", r#"{"text":"x"}"#))
        .await;
    assert_eq!(error_kind(&s), Some(ModelErrorKind::Stale), "{s:?}");
    assert_eq!((count(&base_calls), count(&overlay_calls)), (0, 0));
}

/// LAW-CAPTURED-EXECUTION: the registration is dropped while the tool runs; the call still
/// completes with the original tool's output.
#[tokio::test]
async fn law_captured_execution_example_drop_while_running() {
    let h = Harness::new();
    let location = h.location("/ws");
    let (tool, calls, started, release) = gated("original");
    let reg = location
        .register(ToolSet::new().with("slow", tool))
        .unwrap();
    let turn = location.materialize(AllTools);
    let (s, ()) = tokio::join!(
        turn.settle(cx("c1"), ToolCall::new("slow", r#"{"text":"x"}"#)),
        async move {
            started.notified().await;
            drop(reg);
            release.notify_one();
        }
    );
    let Outcome::Success(output) = &s.outcome else {
        panic!("{s:?}")
    };
    assert_eq!(output.structured, json!({ "tag": "original", "text": "x" }));
    assert_eq!(count(&calls), 1);
}

/// LAW-INVALID-OUTPUT-NEVER-SUCCEEDS: a `Serialize` that errors is a defect, not a result.
#[tokio::test]
async fn law_invalid_output_example_serialize_error() {
    let h = Harness::new();
    let location = h.location("/ws");
    let tool = Tool::new("Unencodable.", |_: EchoInput, _cx| async {
        Ok::<_, ToolFailure>(Unencodable { n: 1 })
    });
    let _reg = location.register(ToolSet::new().with("out", tool)).unwrap();
    let turn = location.materialize(AllTools);
    let s = turn
        .settle(cx("c1"), ToolCall::new("out", r#"{"text":""}"#))
        .await;
    assert!(
        matches!(s.outcome, Outcome::Defect(Defect::InvalidOutput(_))),
        "{s:?}"
    );
    assert_eq!(s.model_result(), None);
}
