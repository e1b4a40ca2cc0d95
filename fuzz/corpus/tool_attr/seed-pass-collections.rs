#[tool(public)]
/// Sum the values, per key and of the list.
fn total(values: Vec<i64>, weights: HashMap<String, i64>, tags: Option<Vec<String>>) -> i64 {
    values.iter().sum::<i64>() + weights.values().sum::<i64>() + tags.map_or(0, |t| t.len() as i64)
}
