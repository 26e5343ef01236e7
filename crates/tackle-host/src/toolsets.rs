//! Which tools a host registers and which a turn offers: the built-ins minus the disabled and
//! overridden ones, `batch` over the built-ins, the custom command tools, and the turn filter
//! (agent visibility, `disabledTools`, provider needs, the model's tool set).

use std::path::Path;
use std::sync::Arc;

use tackle_builtins::tools::Skill;
use tackle_builtins::{
    CustomCatalog, CustomSource, QuestionAsker, SkillCatalog, ToolEnv, TrustMode, agent_tools,
    custom_tools, discover_custom_tools, discover_skills, file_tools, search_tools, skill_tools,
    tools::bash, web_tools,
};
use tackle_core::{AnyTool, ToolDefinition};
use tackle_permission::names::ToolName;
use tackle_permission::{Ruleset, visible_filter};
use tackle_registry::{BatchOptions, Location, Registration, ToolSet, batch_tool};

use crate::config::{Config, Model};
use crate::error::HostError;

/// A turn filter: true for the tools a turn offers.
pub(crate) type OfferFn = Arc<dyn Fn(&str, &ToolDefinition) -> bool + Send + Sync>;

/// What the tool sets need besides the environment and the configuration.
pub(crate) struct Options<'a> {
    /// Where user skills and custom tools are found; `None` reads none.
    pub(crate) home: Option<&'a Path>,
    /// Where `bash` spools output.
    pub(crate) spool_dir: &'a Path,
    /// Who answers the `question` tool; without one it is not offered.
    pub(crate) question: Option<Arc<dyn QuestionAsker>>,
    /// The language servers the `lsp` tool asks; without any it is not offered.
    pub(crate) lsp: Option<Arc<tackle_lsp::LspManager>>,
    /// Where `bash` runs background jobs; without it the job tools are not offered.
    pub(crate) jobs: Option<bash::jobs::Jobs>,
}

/// The registered tool sets; dropping them unregisters the tools.
pub(crate) struct ToolSets {
    _builtins: Registration,
    _batch: Registration,
    _custom: Registration,
    /// The built-ins that reach nothing outside the Location and this machine's session state.
    closed_world: Arc<[String]>,
    /// The skills found on disk, which plugins' skills join.
    pub(crate) skills: Vec<Skill>,
}

impl ToolSets {
    /// Registers the built-ins, `batch` and the custom tools into `location`.
    pub(crate) fn register(
        location: &Location,
        env: &ToolEnv,
        config: &Config,
        options: &Options<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Self, HostError> {
        let mut catalog = discover_custom_tools(env.fs().root(), options.home);
        // A project's manifest runs only when the person trusted exactly the bytes hashed.
        catalog.tools.retain(|manifest| {
            manifest.source == CustomSource::User
                || config
                    .trust()
                    .is_some_and(|trust| trust.allows_manifest(&manifest.path, &manifest.hash))
        });
        warnings.extend(
            catalog
                .warnings
                .iter()
                .map(|warning| format!("skipped a custom tool: {warning}")),
        );
        let skills = discover_skills(env.fs().root(), options.home);
        warnings.extend(
            skills
                .warnings
                .iter()
                .map(|warning| format!("skipped a skill: {warning}")),
        );
        let found = skills.skills.clone();
        let mut builtins = builtin_tools(env, config, options, skills);
        let overridden = overridden(config, &catalog, &builtins, warnings);
        builtins.retain(|(name, _)| !overridden.contains(name));
        // Built-ins only: external tools (MCP, custom) join the allow-list deliberately.
        let batchable: Vec<String> = builtins.iter().map(|(name, _)| name.clone()).collect();
        let closed_world = batchable
            .iter()
            .filter(|name| !ToolName::OPEN_WORLD.iter().any(|t| t == name.as_str()))
            .cloned()
            .collect();
        let register = |what: &str, set: ToolSet| {
            location
                .register(set)
                .map_err(|source| HostError::Registration {
                    what: what.to_owned(),
                    source,
                })
        };
        let builtins = register("the built-in tools", builtins.into_iter().collect())?;
        let with_batch = !config.is_disabled(ToolName::BATCH.as_str())
            && !overridden.iter().any(|n| n == ToolName::BATCH.as_str());
        let batch = register(
            "batch",
            if with_batch {
                ToolSet::new().with(
                    ToolName::BATCH.as_str(),
                    batch_tool(BatchOptions {
                        allowed: Some(batchable.clone()),
                    }),
                )
            } else {
                ToolSet::new()
            },
        )?;
        // Custom tools come last: they are not batchable, and they replace a built-in only when
        // the configuration's `overrides` names it (the built-in was left out above).
        let mut taken = batchable;
        if with_batch {
            taken.push(ToolName::BATCH.as_str().to_owned());
        }
        let custom = register(
            "the custom tools",
            custom_toolset(env, &catalog, &taken, config, warnings),
        )?;
        Ok(Self {
            _builtins: builtins,
            _batch: batch,
            _custom: custom,
            closed_world,
            skills: found,
        })
    }

    pub(crate) fn closed_world(&self) -> Arc<[String]> {
        self.closed_world.clone()
    }
}

/// The filter of every turn (and of `batch`'s sub-calls): the agent's visible tools, minus the
/// disabled ones (MCP tools included), those that need another provider than the model's, and
/// those the model's tool set hides. With no model, only the agent's rules and `disabledTools`
/// apply.
pub(crate) fn offer_filter(rules: Ruleset, model: Option<&Model>, config: &Config) -> OfferFn {
    let visible = visible_filter(rules);
    let disabled = config.disabled_filter();
    let provider = model.map(|model| model.provider.clone());
    let choices = config.tool_choices(model);
    Arc::new(move |name: &str, definition: &ToolDefinition| {
        visible(name)
            && !disabled(name)
            && definition.serves_provider(provider.as_deref())
            && choices.offers(name)
    })
}

/// The built-ins that `overrides` names and a custom tool replaces. A name without a custom tool
/// of that name, or without such a built-in, is reported and changes nothing.
fn overridden(
    config: &Config,
    catalog: &CustomCatalog,
    builtins: &[(String, AnyTool)],
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for name in &config.overrides {
        let builtin = name == ToolName::BATCH.as_str() || builtins.iter().any(|(b, _)| b == name);
        if config.is_disabled(name) {
            // Both the built-in and the custom tool are left out.
        } else if !catalog.tools.iter().any(|tool| tool.name == *name) {
            warnings.push(format!(
                "`overrides` names `{name}`, but no custom tool has that name; the built-in stays"
            ));
        } else if !builtin {
            warnings.push(format!(
                "`overrides` names `{name}`, which is not a built-in tool"
            ));
        } else if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The built-in tools, minus the configuration's `disabledTools`. `question` only with an asker,
/// `skill` only with skills.
fn builtin_tools(
    env: &ToolEnv,
    config: &Config,
    options: &Options<'_>,
    skills: SkillCatalog,
) -> Vec<(String, AnyTool)> {
    let bash = bash::tool_with_options(
        env,
        bash::BashOptions {
            spool_dir: options.spool_dir.to_path_buf(),
            jobs: options.jobs.clone(),
            ..config.bash_options()
        },
    );
    file_tools(env)
        .into_iter()
        .chain(search_tools(env))
        .chain([(ToolName::BASH.as_str(), bash)])
        .chain(match &options.jobs {
            Some(jobs) => bash::job_tools(jobs),
            None => Vec::new(),
        })
        .chain(agent_tools(env, options.question.clone()))
        .chain(web_tools(env, tackle_builtins::WebSearchConfig::from_env()))
        // With no skills, `skill` has nothing to offer and is not advertised.
        .chain(if skills.skills.is_empty() {
            Vec::new()
        } else {
            skill_tools(env, skills)
        })
        .chain(match &options.lsp {
            Some(manager) => tackle_builtins::lsp_tools(env, manager.clone()),
            None => Vec::new(),
        })
        .filter(|(name, _)| !config.is_disabled(name))
        .map(|(name, tool)| (name.to_owned(), tool))
        .collect()
}

/// The custom command tools of `catalog`, minus any that would take the name of a registered
/// built-in (`taken`).
fn custom_toolset(
    env: &ToolEnv,
    catalog: &CustomCatalog,
    taken: &[String],
    config: &Config,
    warnings: &mut Vec<String>,
) -> ToolSet {
    // The catalog holds only the user's manifests and the project's trusted ones.
    custom_tools(env, catalog, TrustMode::TrustAll)
        .into_iter()
        .filter(|(name, _)| !config.is_disabled(name))
        .filter(|(name, _)| {
            let clash = taken.iter().any(|b| b == name);
            if clash {
                warnings.push(format!(
                    "skipped custom tool `{name}`: a built-in tool has that name; add \
                     \"{name}\" to `overrides` in the configuration to replace the built-in"
                ));
            }
            !clash
        })
        .collect()
}
