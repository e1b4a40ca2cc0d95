//! Typed application state that tools reach through their context.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Values the application registers once (a database pool, an HTTP client), one per type,
/// handed to every tool through [`ToolContext::state`](crate::ToolContext::state).
#[derive(Clone, Default)]
pub(crate) struct AppState(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl AppState {
    pub(crate) fn from_map(map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>) -> Self {
        AppState(Arc::new(map))
    }

    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AppState({} values)", self.0.len())
    }
}
