//! Making sure a crate of tools is linked into the program.

/// Links crates of tools into the program, so that their `#[tool]` functions are registered.
///
/// A crate is linked only when the program names it somewhere. A crate that only declares
/// tools, and that no code calls into, is left out by the compiler, and its tools are then
/// silently missing from [`Registry::from_inventory`]. Naming it here is enough:
///
/// ```
/// # mod billing_tools {} mod search_tools {}
/// registry_core::link!(billing_tools, search_tools);
/// ```
///
/// It expands to `use billing_tools as _; use search_tools as _;`. Pair it with
/// [`RegistryBuilder::require`] to fail at startup, with the names, if tools are still missing.
///
/// [`Registry::from_inventory`]: crate::Registry::from_inventory
/// [`RegistryBuilder::require`]: crate::RegistryBuilder::require
#[macro_export]
macro_rules! link {
    ($($krate:ident),+ $(,)?) => {
        $(
            #[allow(unused_imports)]
            use $krate as _;
        )+
    };
}
