//! Calls that need a person's approval: the question put to the client's user with MCP
//! elicitation, and what the model is told when no one can be asked.
//!
//! # The question
//!
//! A form-mode `elicitation/create` whose message is [`ApprovalRequest::question`] (`Allow
//! "deploy" with {"env":"production"}? (a production deploy)`) and whose `requestedSchema` is
//! an object with one required boolean property, `approve` (titled "Allow this call", default
//! `false`). MCP restricts a form to a flat object of primitive properties, and says nothing
//! of what an empty form's "accept" means; a checkbox the person must tick makes the approval
//! explicit, and a client that submits the form with its defaults (or a person who submits
//! it unticked) approves nothing. So:
//!
//! - `accept` with `{"approve": true}`: approved; the call runs, with exactly the arguments
//!   shown, and its result answers the `tools/call`;
//! - `accept` with anything else, `decline`, `cancel`: denied, "the user declined";
//! - no answer (an error from the client, a closed connection, no answer within
//!   [`ServerOptions::approval_timeout`](crate::ServerOptions::approval_timeout), the
//!   `tools/call` cancelled): denied, the approval "could not be obtained". Nothing runs
//!   without a yes.
//!
//! On protocol 2026-07-28, which forbids requests from server to client, the same question is
//! the input request `approval` of an `input_required` result, and its `requestState` is the
//! approval request's id, sealed ([`RequestStates`](crate::RequestStates)): tamper-evident,
//! bound to the principal and to the call (its tool and arguments), valid for
//! [`ServerOptions::request_state_ttl`](crate::ServerOptions::request_state_ttl), and
//! opened once. The client retries the call with the answer; a state that does not open is
//! refused with -32602, saying why. The id is looked up among
//! the questions sent to this client, then in the shared store for one another replica asked
//! this same subject (tenant, agent and principal); a state from elsewhere, another user's
//! included, is refused with -32602, and each is answered once.
//!
//! # Clients that cannot be asked
//!
//! A client that did not declare form elicitation gets an `isError` result saying that the
//! tool needs a person's approval, which this client cannot give, and that nothing was done;
//! the approval request is **denied** ("the MCP client cannot ask a person for approval").
//! Left pending, it could be approved later by someone else and run with no one waiting for
//! its result, after the model was told nothing was done; denied, what the model was told stays
//! true, and the audit log says why.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use registry_core::approval::{ApprovalError, ApprovalRequest, Settled, Verdict};
use registry_core::call::CallOptions;
use registry_core::server::{RegistryExt, RunExt};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use crate::clients::{Client, RunSlot, Shared};
use crate::handler::call_result;
use crate::host::{can_elicit_form, failure};
use crate::request_state::RequestDigest;

/// The key of the approval question among the input requests of an `input_required` result.
const QUESTION_KEY: &str = "approval";
/// The form's one field: whether the person allows the call.
const APPROVE_FIELD: &str = "approve";

/// What came of asking.
enum Answer {
    /// The person allowed the call.
    Approved,
    /// The person said no, or did not say yes: the reason recorded.
    Declined(&'static str),
    /// No answer could be had: why.
    NotObtained(String),
    /// Someone approved outside the question (an operator, in a store shared by replicas).
    ApprovedBy(String),
    /// The request was decided elsewhere: its state.
    DecidedElsewhere(registry_core::approval::ApprovalState),
}

/// How often a question waiting for a person looks for a decision made outside it, when the
/// approval store cannot wake it ([`ApprovalStore::watch`] answers `None`: a store without
/// notifications, too many waiting, or a listener whose connection dropped).
///
/// [`ApprovalStore::watch`]: registry_core::approval::ApprovalStore::watch
const OUTSIDE_POLL: Duration = Duration::from_millis(250);

/// How often it looks anyway when the store wakes it: a slow poll, in case a wake is lost.
const OUTSIDE_FALLBACK: Duration = Duration::from_secs(5);

/// Answers a call that needs approval (`request`, made in `slot`'s run): asks the client's
/// user if the client supports form elicitation, and otherwise denies it.
pub(crate) async fn ask(
    client: &Client,
    slot: Arc<RunSlot>,
    request: &ApprovalRequest,
    context: &RequestContext<RoleServer>,
    shared: &Shared,
    call: CallOptions,
    origin: &RequestDigest,
) -> Result<CallToolResponse, ErrorData> {
    let (options, states) = (&shared.options, &shared.states);
    if !can_elicit_form(context.client_capabilities().as_ref()) {
        return cannot_ask(client, &slot, request)
            .await
            .map(CallToolResponse::from);
    }
    let modern = context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if modern {
        // No requests from server to client on 2026-07-28: the question goes back in an
        // `input_required` result, and the client retries the call with the answer.
        tracing::info!(
            client = ?client.id,
            tool = ?request.tool_name(),
            approval = ?request.id(),
            "asking the client's user for approval (input_required)"
        );
        let question = InputRequest::Elicitation(ElicitRequest::new(question(request)));
        let requests = BTreeMap::from([(QUESTION_KEY.to_owned(), question)]);
        client.remember_question(slot, request.clone());
        let state = states.seal(&principal_of(client), origin, request.id());
        let result = InputRequiredResult::new(Some(requests), Some(state));
        return Ok(result.into());
    }
    tracing::info!(
        client = ?client.id,
        tool = ?request.tool_name(),
        approval = ?request.id(),
        "asking the client's user for approval (elicitation/create)"
    );
    let left = request
        .expires_at()
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    let wait = options.approval_timeout.min(left);
    let asking = context
        .peer
        .create_elicitation_with_timeout(question(request), Some(wait));
    let answer = tokio::select! {
        answered = asking => match answered {
            Ok(result) => answer_of(&result),
            Err(error) => Answer::NotObtained(failure(&error, wait)),
        },
        outside = decided_outside(&slot, request.id()) => outside,
        () = context.ct.cancelled() => {
            Answer::NotObtained("the call was cancelled before anyone answered".to_owned())
        }
    };
    decide(client, &slot, request, answer, call)
        .await
        .map(CallToolResponse::from)
}

/// Answers the retry of a call whose approval question went back in an `input_required`
/// result (protocol 2026-07-28): `state` is the approval request's id, sealed for this
/// principal and this call.
pub(crate) async fn resume(
    client: &Client,
    mut params: CallToolRequestParams,
    state: &str,
    states: &crate::RequestStates,
    call: CallOptions,
) -> Result<CallToolResponse, ErrorData> {
    let origin = digest_of(&params);
    let id = match states.open(state, &principal_of(client), &origin) {
        Ok(id) => id,
        Err(error) => {
            tracing::info!(client = ?client.id, tool = ?params.name.as_ref(), %error, "refused a requestState");
            return Err(ErrorData::invalid_params(error.to_string(), None));
        }
    };
    let state = id.as_str();
    let asked = match client.take_question(state) {
        Some(asked) => Some(asked),
        None => asked_elsewhere(client, state).await,
    };
    let Some(asked) = asked else {
        return Err(ErrorData::invalid_params(
            "the requestState names no approval question waiting for an answer from this client (it was answered already, or it expired); call the tool again",
            None,
        ));
    };
    let answer = if params.name != asked.request.tool_name() {
        Answer::NotObtained("the retried call names another tool".to_owned())
    } else {
        let response = params
            .input_responses
            .as_mut()
            .and_then(|responses| responses.remove(QUESTION_KEY));
        match response.map(serde_json::from_value::<ElicitResult>) {
            Some(Ok(result)) => answer_of(&result),
            Some(Err(error)) => Answer::NotObtained(format!(
                "the client's answer is not an elicitation result: {error}"
            )),
            None => Answer::NotObtained(
                "the client retried the call without answering the approval question".to_owned(),
            ),
        }
    };
    decide(client, &asked.slot, &asked.request, answer, call)
        .await
        .map(CallToolResponse::from)
}

/// Who a `requestState` is bound to: the client's principal and the subject it acts as.
pub(crate) fn principal_of(client: &Client) -> String {
    let subject = &client.subject;
    format!(
        "{:?}",
        (
            client.id.as_ref(),
            subject.tenant(),
            subject.agent(),
            subject.principal()
        )
    )
}

/// The digest of a `tools/call`: its tool and arguments.
pub(crate) fn digest_of(params: &CallToolRequestParams) -> RequestDigest {
    let arguments = Value::Object(params.arguments.clone().unwrap_or_default());
    RequestDigest::of("tools/call", params.name.as_ref(), &arguments)
}

/// A question another replica sent this client's subject, found in the approval store they
/// share (protocol 2026-07-28 is stateless: the retried call may reach another replica than
/// the one that asked). It counts only while pending, for the same tenant, agent and
/// principal (another user of the same client app is another principal), and for
/// a run with the same allowed set as the one that asked; the store moves it out of pending
/// once, so of two replicas answering at once, one runs the call.
async fn asked_elsewhere(client: &Client, id: &str) -> Option<crate::clients::Asked> {
    let slot = client.current();
    let found = match slot.run.registry().approval_request(id).await {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(client = ?client.id, approval = ?id, %error, "the approval store cannot be read");
            return None;
        }
    };
    let (request, state) = found?;
    // The same person too: under OAuth the agent is the client app, shared by all its users.
    let same_subject = request.tenant() == client.subject.tenant()
        && request.agent() == client.subject.agent()
        && request.principal() == client.subject.principal()
        && request.allowed_set() == slot.run.allowed().fingerprint();
    if !state.is_pending() || !same_subject {
        return None;
    }
    tracing::info!(client = ?client.id, approval = ?id, "answering a question another replica asked");
    Some(crate::clients::Asked { slot, request })
}

/// Waits for a decision made outside this question: an operator's approval in a shared
/// store, or the request decided elsewhere (denied from a console, say). Woken by the store
/// when it can tell ([`RegistryExt::watch_approval`]: a wait registered before the store is
/// read, so no change falls in between), with a slow poll besides; polled otherwise. Never
/// returns while nothing happens.
async fn decided_outside(slot: &RunSlot, id: &str) -> Answer {
    let registry = slot.run.registry();
    loop {
        let wake = registry.watch_approval(id);
        if let Ok(Some((_, state))) = registry.approval_request(id).await
            && !state.is_pending()
        {
            return Answer::DecidedElsewhere(state);
        }
        if let Ok(Some(by)) = registry.approved_outside(id).await {
            return Answer::ApprovedBy(by);
        }
        match wake {
            Some(wake) => {
                let _ = tokio::time::timeout(OUTSIDE_FALLBACK, wake).await;
            }
            None => tokio::time::sleep(OUTSIDE_POLL).await,
        }
    }
}

/// The approval question: the request's own question, and a form with one required checkbox.
fn question(request: &ApprovalRequest) -> ElicitRequestParams {
    let question = request.question();
    let mut properties = BTreeMap::new();
    properties.insert(
        APPROVE_FIELD.to_owned(),
        rmcp::model::PrimitiveSchemaDefinition::Boolean(
            rmcp::model::BooleanSchema::new()
                .title("Allow this call")
                .description(question.clone())
                .with_default(false),
        ),
    );
    let schema = ElicitationSchema::new(properties).with_required(vec![APPROVE_FIELD.to_owned()]);
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question,
        requested_schema: schema,
    }
}

/// What an elicitation result says.
fn answer_of(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let approve = result
                .content
                .as_ref()
                .and_then(|content| content.get(APPROVE_FIELD));
            if approve == Some(&Value::Bool(true)) {
                Answer::Approved
            } else {
                Answer::Declined("the user declined (the form was sent without allowing the call)")
            }
        }
        ElicitationAction::Decline => Answer::Declined("the user declined"),
        ElicitationAction::Cancel => Answer::Declined("the user declined (dismissed the question)"),
        // `ElicitationAction` is non-exhaustive: an action this server does not know is no yes.
        _ => Answer::NotObtained(format!(
            "the client answered with an unknown action ({:?})",
            result.action
        )),
    }
}

/// Applies the answer to the request, in the run that made it, and says what the model is told.
async fn decide(
    client: &Client,
    slot: &RunSlot,
    request: &ApprovalRequest,
    answer: Answer,
    call: CallOptions,
) -> Result<CallToolResult, ErrorData> {
    let run = &slot.run;
    let id = request.id();
    let tool = request.tool_name();
    match answer {
        Answer::Approved => {
            tracing::info!(client = ?client.id, tool = ?tool, approval = ?id, "the client's user approved");
            settled(
                run.decide_with(id, Verdict::approve().by(client.approver()), call)
                    .await,
            )
        }
        Answer::Declined(reason) => {
            tracing::info!(client = ?client.id, tool = ?tool, approval = ?id, reason = ?reason, "the client's user declined");
            settled(
                run.decide(id, Verdict::deny(reason).by(client.approver()))
                    .await,
            )
        }
        Answer::ApprovedBy(by) => {
            tracing::info!(client = ?client.id, tool = ?tool, approval = ?id, by = ?by, "approved outside the question");
            settled(run.decide_with(id, Verdict::approve().by(by), call).await)
        }
        Answer::DecidedElsewhere(state) => {
            // Who decided stays in the log: the client is told how (approved, denied...),
            // not by whom.
            tracing::info!(client = ?client.id, tool = ?tool, approval = ?id, state = ?state.to_string(), "decided elsewhere");
            Ok(tool_error(format!(
                "the call to \"{tool}\" was decided elsewhere ({}); nothing was done here",
                state.kind()
            )))
        }
        Answer::NotObtained(why) => {
            tracing::warn!(client = ?client.id, tool = ?tool, approval = ?id, why = ?why, "no approval; denied");
            let reason = format!("the approval could not be obtained: {why}");
            match run.decide(id, Verdict::deny(reason)).await {
                Ok(_) => Ok(tool_error(format!(
                    "the call to \"{tool}\" needs a person's approval, which could not be obtained ({why}); nothing was done"
                ))),
                Err(error) => settled(Err(error)),
            }
        }
    }
}

/// Denies a request this client cannot ask anyone about, and says so.
async fn cannot_ask(
    client: &Client,
    slot: &RunSlot,
    request: &ApprovalRequest,
) -> Result<CallToolResult, ErrorData> {
    let tool = request.tool_name();
    tracing::info!(
        client = ?client.id,
        tool = ?tool,
        approval = ?request.id(),
        "the client cannot ask for approval (no form elicitation); denied"
    );
    let reason =
        "the MCP client cannot ask a person for approval (it does not support elicitation)";
    match slot.run.decide(request.id(), Verdict::deny(reason)).await {
        Ok(_) => Ok(tool_error(format!(
            "the call to \"{tool}\" needs a person's approval, which this MCP client cannot give (it does not support elicitation); nothing was done. Calling it again from this client will not help"
        ))),
        Err(error) => settled(Err(error)),
    }
}

/// The answer to a decided request: its observation (whatever settled the call), or the
/// error's text (nothing was settled).
fn settled(decided: Result<Settled, ApprovalError>) -> Result<CallToolResult, ErrorData> {
    match decided {
        Ok(Settled::Answered(observation)) => call_result(&observation),
        // A `tools/call` asks for no task; a request that started one was another's.
        Ok(Settled::Started(task)) => Ok(tool_error(format!(
            "the approved call started as task {}; its result comes with the task",
            task.id()
        ))),
        Err(ApprovalError::Store(error)) => {
            // The store's text (a database's error, its address) is for the operator's log,
            // never for the client.
            tracing::warn!(
                error = %crate::logging::escape(&error.to_string()),
                "the approval store failed; nothing was decided"
            );
            Ok(tool_error(
                "the approval store cannot be reached now; nothing was decided and nothing ran: \
                 try again later"
                    .to_owned(),
            ))
        }
        // The error's text names how a request was decided, never who (see
        // `ApprovalError::AlreadyDecided`); the whole error goes to the log.
        Err(error) => {
            tracing::info!(error = ?error, "an approval could not be applied");
            Ok(tool_error(error.to_string()))
        }
    }
}

/// An `isError` result with `text`.
fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
