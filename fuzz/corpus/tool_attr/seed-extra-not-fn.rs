#[tool]
/// Doc.
struct S;
