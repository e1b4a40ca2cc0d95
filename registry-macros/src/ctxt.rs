//! Collects every error found while reading one `#[tool]`, so a build shows all of them.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// The errors of one macro invocation.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanned on `tokens`.
    pub(crate) fn error_spanned_by<T: ToTokens>(&self, tokens: T, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error that syn produced.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// Ends collection: `Err` with every error, as tokens, when there was any.
    pub(crate) fn check(self) -> Result<(), TokenStream> {
        let errors = self.errors.into_inner();
        if errors.is_empty() {
            return Ok(());
        }
        Err(errors.iter().map(syn::Error::to_compile_error).collect())
    }
}
