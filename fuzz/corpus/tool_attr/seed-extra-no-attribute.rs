/// Doc.
pub async fn plain(a: u8, b: Option<Vec<String>>) -> Result<u8, String> { Ok(a) }
