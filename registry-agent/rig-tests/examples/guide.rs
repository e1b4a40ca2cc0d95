//! The example of docs/guide/agent.md's "rig" section, compiled here (tests/rig.rs checks that
//! the guide shows exactly this file).

use std::sync::Arc;

use registry_agent::rig::{refusal, tools};
use registry_core::{Registry, Run, Subject};
use rig_agent::agent::{HookContext, InvalidToolCallAction, InvalidToolCallContext};
use rig_agent::run::InvalidToolCallReason;
use rig_agent::{AgentBuilder, AgentHook};
use rig_core::providers::openai::OpenAIConfig;

/// A call of a tool the agent was not given (hidden from the run, or unknown) answered with
/// the run's own text, instead of failing the prompt.
struct RunRefusals(Arc<Run>);

impl AgentHook for RunRefusals {
    async fn on_invalid_tool_call(
        &self,
        _: &HookContext,
        event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        match event.reason {
            InvalidToolCallReason::UnknownTool => refusal(&self.0, &event.tool_name)
                .await
                .map(|reason| InvalidToolCallAction::Skip { reason }),
            _ => None,
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::from_inventory()?;
    let subject = Subject::new("acme").with_scopes(["build:read", "deploy:write"]);
    let run = Arc::new(registry.open_run("run-1", &subject));
    let model = OpenAIConfig::new(std::env::var("AGENT_API_KEY")?)
        .with_base_url("http://127.0.0.1:8080/v1")
        .client()
        .chat("qwen2.5-0.5b-instruct");
    let agent = AgentBuilder::new(model)
        .preamble("You operate the build and deploy tools.")
        .dynamic_tools(tools(&run)?)
        .add_hook(RunRefusals(run.clone()))
        .build();
    let response = agent.prompt("Is the web build green?").max_turns(8).await?;
    println!("{}", response.output());
    Ok(())
}
