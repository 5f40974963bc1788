//! Turning a `provider/model` name into a model instance.
//!
//! The runtime asks the registry for `scripted/tests/script.yaml` or `anthropic/claude-sonnet-4-5`
//! and gets an `Arc<dyn Model>`; instances are cached per name for the registry's lifetime, so a
//! scripted model's state (which hop scripts were claimed) is shared by every hop of a session.
//! Providers plug in with [`Registry::register`]; tests and benches inject ready instances with
//! [`Registry::insert`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::adaptive::AdaptiveTools;
use super::client::ClientError;
use super::scripted::ScriptedModel;
use super::settings::{
    model_max_tokens, model_uses_tools, BuildOptions, HttpConfig, Protocol, ProviderSettings,
    SettingsError,
};
use super::Model;

/// What a provider factory may look at when building a model.
#[derive(Debug, Clone, Default)]
pub struct ProviderContext {
    pub project_root: PathBuf,
    /// `[providers.NAME]` tables from `switchboard.toml`.
    pub providers: BTreeMap<String, toml::Table>,
    /// `Some(false)` for `--no-stream`: HTTP providers ask for whole answers.
    pub stream: Option<bool>,
}

/// Builds a model from the part of the name after `provider/`.
pub type ProviderFactory =
    Arc<dyn Fn(&ProviderContext, &str) -> Result<Arc<dyn Model>, RegistryError> + Send + Sync>;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("model `{0}` is not `provider/model` (e.g. `scripted/path/to/script.yaml`, `offline/default`)")]
    Malformed(String),
    #[error("unknown model provider `{provider}` in `{spec}`; known providers: {known}")]
    UnknownProvider {
        provider: String,
        spec: String,
        known: String,
    },
    #[error("cannot build model `{spec}`: {reason}")]
    Build { spec: String, reason: String },
}

/// Splits `provider/model`; the model part may itself contain `/` (a script path).
pub fn parse_spec(spec: &str) -> Result<(&str, &str), RegistryError> {
    match spec.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p, m)),
        _ => Err(RegistryError::Malformed(spec.to_string())),
    }
}

/// Why an HTTP provider could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Builds the provider for `NAME/MODEL` when `NAME` speaks an HTTP protocol: `openai`,
/// `anthropic`, or any `[providers.NAME]` with a `protocol` key. `None` for other names (the
/// registry's own providers). A model configured with `tools = false` comes wrapped in
/// [`TextualTools`](super::textual::TextualTools).
pub fn build(
    provider: &str,
    model: &str,
    settings: Option<&ProviderSettings>,
    options: &BuildOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Result<Arc<dyn Model>, BuildError>> {
    let protocol = Protocol::for_provider(provider, settings)?;
    let defaults = ProviderSettings::default();
    let settings = settings.unwrap_or(&defaults);
    Some((|| {
        let mut config = HttpConfig::resolve(provider, protocol, settings, options, env)?;
        config.max_tokens = Some(model_max_tokens(settings, model, protocol));
        // Only a server that is not OpenAI's own may lack tool support in its chat template.
        let local = config.base_url != protocol.default_base_url();
        let (inner, probe): (Arc<dyn Model>, _) = match protocol {
            Protocol::Openai => {
                let openai = Arc::new(super::openai::OpenAi::new(config)?);
                (openai.clone(), local.then_some(openai))
            }
            Protocol::Anthropic => (Arc::new(super::anthropic::Anthropic::new(config)?), None),
        };
        Ok(if model_uses_tools(settings, model) {
            Arc::new(AdaptiveTools::new(inner, probe)) as Arc<dyn Model>
        } else {
            Arc::new(super::textual::TextualTools::new(inner)) as Arc<dyn Model>
        })
    })())
}

/// `std::env::var`, as [`build`] wants it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Builds an HTTP provider (`openai`, `anthropic` or a `[providers.NAME]` with a `protocol`)
/// from its config table and the environment.
pub fn build_http(
    ctx: &ProviderContext,
    provider: &str,
    model: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, RegistryError> {
    let spec = format!("{provider}/{model}");
    let settings = match ctx.providers.get(provider) {
        Some(table) => Some(table.clone().try_into::<ProviderSettings>().map_err(|e| {
            RegistryError::Build {
                spec: spec.clone(),
                reason: format!(
                    "[providers.{provider}] in switchboard.toml: {}",
                    e.message()
                ),
            }
        })?),
        None => None,
    };
    let options = BuildOptions {
        stream: ctx.stream,
        observer: None,
    };
    match build(provider, model, settings.as_ref(), &options, env) {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(RegistryError::Build {
            spec,
            reason: e.to_string(),
        }),
        None => Err(RegistryError::Build {
            spec,
            reason: format!(
                "[providers.{provider}] names no protocol (\"openai\" or \"anthropic\")"
            ),
        }),
    }
}

/// Provider factories and the models built so far.
pub struct Registry {
    context: ProviderContext,
    factories: BTreeMap<String, ProviderFactory>,
    cache: Mutex<HashMap<String, Arc<dyn Model>>>,
}

impl Registry {
    /// A registry with the providers this build ships.
    pub fn with_builtins(context: ProviderContext) -> Self {
        let mut r = Registry {
            context,
            factories: BTreeMap::new(),
            cache: Mutex::new(HashMap::new()),
        };
        r.register(
            "scripted",
            Arc::new(|ctx: &ProviderContext, name: &str| {
                // Script paths are the user's own files (like --agents folders), relative to the
                // working directory or the project root.
                let path = PathBuf::from(name);
                let path = if path.exists() || path.is_absolute() {
                    path
                } else {
                    ctx.project_root.join(name)
                };
                ScriptedModel::from_path(&path)
                    .map(|m| Arc::new(m) as Arc<dyn Model>)
                    .map_err(|e| RegistryError::Build {
                        spec: format!("scripted/{name}"),
                        reason: e.to_string(),
                    })
            }),
        );
        // The offline provider needs nothing from the context: it reaches files only through
        // tool calls, and every model name (`offline/default`, `offline/anything`) is the same.
        r.register(
            "offline",
            Arc::new(|_ctx: &ProviderContext, _name: &str| {
                Ok(Arc::new(super::offline::OfflineModel::new()) as Arc<dyn Model>)
            }),
        );
        // GGUF models in-process (feature `local`; without it the factory says how to enable it).
        r.register("local", Arc::new(local_factory));
        // HTTP providers: `openai` and `anthropic`, plus every `[providers.NAME]` that names a
        // `protocol` (e.g. `[providers.ollama] protocol = "openai"`).
        let mut http_names = vec!["openai".to_string(), "anthropic".to_string()];
        http_names.extend(
            r.context
                .providers
                .iter()
                .filter(|(_, t)| t.contains_key("protocol"))
                .map(|(n, _)| n.clone()),
        );
        for name in http_names {
            let provider = name.clone();
            r.register(
                &name,
                Arc::new(move |ctx: &ProviderContext, model: &str| {
                    build_http(ctx, &provider, model, &process_env)
                }),
            );
        }
        r
    }

    /// Adds (or replaces) a provider.
    pub fn register(&mut self, provider: &str, factory: ProviderFactory) {
        self.factories.insert(provider.to_string(), factory);
    }

    /// The registry for a project: the built-in providers plus the config's `[providers.NAME]`
    /// tables. Building it builds no model, so lint can ask which providers exist.
    pub fn for_project(project: &crate::project::Project, config: &crate::config::Config) -> Self {
        Self::with_builtins(ProviderContext {
            project_root: project.root().to_path_buf(),
            providers: config.providers.clone(),
            ..ProviderContext::default()
        })
    }

    /// Whether `provider` (the part before `/`) has a factory; lint asks before any model is built.
    pub fn knows_provider(&self, provider: &str) -> bool {
        self.factories.contains_key(provider)
    }

    /// The registered provider names, sorted.
    pub fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.factories.keys().cloned().collect();
        names.sort();
        names
    }

    /// Puts a ready model under a full name (`scripted/bench`), for tests and benches.
    pub fn insert(&self, spec: &str, model: Arc<dyn Model>) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(spec.to_string(), model);
        }
    }

    /// The model for `provider/model`, built on first use, plus the model part of the name.
    pub fn get(&self, spec: &str) -> Result<(Arc<dyn Model>, String), RegistryError> {
        let (provider, name) = parse_spec(spec)?;
        if let Some(m) = self.cache.lock().ok().and_then(|c| c.get(spec).cloned()) {
            return Ok((m, name.to_string()));
        }
        let factory =
            self.factories
                .get(provider)
                .ok_or_else(|| RegistryError::UnknownProvider {
                    provider: provider.to_string(),
                    spec: spec.to_string(),
                    known: self
                        .factories
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        let model = factory(&self.context, name)?;
        if let Ok(mut cache) = self.cache.lock() {
            cache
                .entry(spec.to_string())
                .or_insert_with(|| model.clone());
        }
        Ok((model, name.to_string()))
    }
}

/// The `local` provider's factory: `local/NAME` built by `model::local`, its error said with the
/// model's full name.
fn local_factory(ctx: &ProviderContext, name: &str) -> Result<Arc<dyn Model>, RegistryError> {
    let table = ctx.providers.get(super::local::PROVIDER);
    super::local::build(&ctx.project_root, table, name).map_err(|e| RegistryError::Build {
        spec: format!("{}/{name}", super::local::PROVIDER),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_unknown_providers_are_named() {
        assert_eq!(
            parse_spec("scripted/a/b.yaml").unwrap(),
            ("scripted", "a/b.yaml")
        );
        assert!(parse_spec("sonnet").is_err());
        let r = Registry::with_builtins(ProviderContext::default());
        let e = r.get("nope/x").err().unwrap();
        assert!(
            e.to_string().contains("unknown model provider `nope`"),
            "{e}"
        );
        let e = r.get("scripted/does/not/exist.yaml").err().unwrap();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }
}
