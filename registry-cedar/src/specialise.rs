//! A policy set specialised to what one decision already knows (Cedar's partial evaluation):
//! for `list`, the subject (the tool unknown); for `call`, the subject and the tool (the
//! arguments unknown). What the known parts decide is kept; what is left, the residual
//! policies, is all a decision evaluates, so a call's cost follows the policies its arguments
//! can still change, not the size of the set.

use std::borrow::Borrow;

use cedar_policy::{Authorizer, Effect, Entities, Policy, PolicySet, Request};
use serde_json::Value;

/// What a set's satisfied policies are for one request: every satisfied permit and every
/// satisfied forbid (Cedar allows when there is a permit and no forbid).
#[derive(Debug, Default)]
pub(crate) struct Satisfied {
    pub(crate) permits: Vec<String>,
    pub(crate) forbids: Vec<String>,
}

/// A set specialised to a partial request.
#[derive(Debug)]
pub(crate) struct Specialised {
    /// What the known parts satisfied already.
    known: Satisfied,
    /// The policies the unknown can still change, with the unknown turned back into the
    /// variable it stands for; `None` when there are none.
    residual_permits: Option<PolicySet>,
    residual_forbids: Option<PolicySet>,
    /// A policy errored, or a residual could not be made: decide without the shortcut (the
    /// whole set, concretely), which also says what went wrong.
    unusable: bool,
}

impl Specialised {
    /// `policies` specialised to `request`, whose one unknown is the variable `unknown`
    /// (`context` or `resource`).
    pub(crate) fn of(
        authorizer: &Authorizer,
        request: &Request,
        policies: &PolicySet,
        entities: &Entities,
        unknown: &str,
    ) -> Specialised {
        let response = authorizer.is_authorized_partial(request, policies, entities);
        let mut specialised = Specialised {
            known: Satisfied::default(),
            residual_permits: None,
            residual_forbids: None,
            unusable: response.definitely_errored().next().is_some(),
        };
        for policy in response.definitely_satisfied() {
            let id = policy.id().to_string();
            match policy.effect() {
                Effect::Permit => specialised.known.permits.push(id),
                Effect::Forbid => specialised.known.forbids.push(id),
            }
        }
        for residual in response.nontrivial_residuals() {
            let Some(policy) = restored(&residual, unknown) else {
                specialised.unusable = true;
                continue;
            };
            let into = match policy.effect() {
                Effect::Permit => &mut specialised.residual_permits,
                Effect::Forbid => &mut specialised.residual_forbids,
            };
            if into.get_or_insert_with(PolicySet::new).add(policy).is_err() {
                specialised.unusable = true;
            }
        }
        specialised
    }

    /// A specialisation that could not be made: every decision evaluates the whole set.
    pub(crate) fn unusable_one() -> Specialised {
        Specialised {
            known: Satisfied::default(),
            residual_permits: None,
            residual_forbids: None,
            unusable: true,
        }
    }

    /// What is satisfied for a request: what the known parts satisfied when they decided
    /// everything (the request is then never made); otherwise the residual policies on the
    /// whole request, or, when this specialisation is unusable, the whole set (`whole`: its
    /// permits and its forbids), which also names the error.
    pub(crate) fn decide<E: Borrow<Entities>>(
        &self,
        authorizer: &Authorizer,
        whole: [Option<&PolicySet>; 2],
        request: impl FnOnce() -> Result<(Request, E), String>,
    ) -> Result<Satisfied, String> {
        if !self.unusable && self.residual_permits.is_none() && self.residual_forbids.is_none() {
            return Ok(Satisfied {
                permits: self.known.permits.clone(),
                forbids: self.known.forbids.clone(),
            });
        }
        let (request, entities) = request()?;
        if self.unusable {
            return satisfied(authorizer, &request, whole[0], whole[1], entities.borrow());
        }
        self.judge(authorizer, &request, entities.borrow())
    }

    /// Everything satisfied for the whole `request`: what the known parts satisfied and what
    /// the residual policies satisfy. An evaluation error is an error (fail closed).
    fn judge(
        &self,
        authorizer: &Authorizer,
        request: &Request,
        entities: &Entities,
    ) -> Result<Satisfied, String> {
        let mut satisfied = satisfied(
            authorizer,
            request,
            self.residual_permits.as_ref(),
            self.residual_forbids.as_ref(),
            entities,
        )?;
        satisfied.permits.extend(self.known.permits.iter().cloned());
        satisfied.forbids.extend(self.known.forbids.iter().cloned());
        Ok(satisfied)
    }
}

/// Every satisfied permit of `permits` and forbid of `forbids` for `request`, each set
/// evaluated apart (Cedar names the satisfied permits only when it allows, the forbids only
/// when it denies). An evaluation error is an error: a forbid that could not be evaluated
/// must not let a call through.
fn satisfied(
    authorizer: &Authorizer,
    request: &Request,
    permits: Option<&PolicySet>,
    forbids: Option<&PolicySet>,
    entities: &Entities,
) -> Result<Satisfied, String> {
    let mut found = Satisfied::default();
    for (set, into) in [(permits, &mut found.permits), (forbids, &mut found.forbids)] {
        let Some(set) = set else { continue };
        let response = authorizer.is_authorized(request, set, entities);
        if let Some(error) = response.diagnostics().errors().next() {
            return Err(error.to_string());
        }
        into.extend(response.diagnostics().reason().map(ToString::to_string));
    }
    Ok(found)
}

/// A residual policy with `unknown("NAME")` turned back into the variable `NAME`, so that it
/// evaluates against a whole request; `None` if it cannot be rebuilt.
fn restored(residual: &Policy, unknown: &str) -> Option<Policy> {
    let mut json = residual.to_json().ok()?;
    restore(&mut json, unknown);
    Policy::from_json(Some(residual.id().clone()), json).ok()
}

/// Replaces every `{"unknown": [{"Value": NAME}]}` of an EST with `{"Var": NAME}`.
fn restore(value: &mut Value, unknown: &str) {
    match value {
        Value::Object(object) => {
            let is_unknown = object.len() == 1
                && object
                    .get("unknown")
                    .and_then(Value::as_array)
                    .is_some_and(|arguments| {
                        arguments.len() == 1
                            && arguments[0].get("Value").and_then(Value::as_str) == Some(unknown)
                    });
            if is_unknown {
                *value = serde_json::json!({ "Var": unknown });
                return;
            }
            object
                .values_mut()
                .for_each(|value| restore(value, unknown));
        }
        Value::Array(items) => items.iter_mut().for_each(|value| restore(value, unknown)),
        _ => {}
    }
}
