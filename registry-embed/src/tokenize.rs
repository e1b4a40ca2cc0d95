//! Text to token ids, by the model's own `tokenizer.json` (Hugging Face `tokenizers`), read to
//! the model's `max_seq_length` and never padded.

use registry_core::search::EmbedError;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// A text is read up to this many bytes (cut at a character): the model reads at most a few
/// hundred tokens of it, which come from its first few kilobytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The model's tokenizer.
#[derive(Debug)]
pub(crate) struct Words {
    tokenizer: Tokenizer,
}

impl Words {
    /// Reads `tokenizer.json`'s bytes, cutting texts at `max_tokens` (special tokens included)
    /// and padding none: `tokenizer.json` may say otherwise (all-MiniLM-L6-v2's pads to 128),
    /// but sentence-transformers overrides both.
    pub(crate) fn new(bytes: &[u8], max_tokens: usize) -> Result<Words, EmbedError> {
        let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|error| {
            EmbedError::new(format!("tokenizer.json is not a tokenizer's file: {error}"))
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|error| EmbedError::new(format!("tokenizer.json: {error}")))?;
        tokenizer.with_padding(None);
        Ok(Words { tokenizer })
    }

    /// The size of the tokenizer's vocabulary, added tokens included.
    pub(crate) fn vocabulary(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    /// The ids of `text` (text number `index` of a batch of `count`), special tokens
    /// included; an error if it has no word.
    pub(crate) fn ids(
        &self,
        text: &str,
        index: usize,
        count: usize,
    ) -> Result<Vec<u32>, EmbedError> {
        let which = || {
            if count == 1 {
                "the text".to_owned()
            } else {
                format!("text {index} (of {count})")
            }
        };
        if text.trim().is_empty() {
            return Err(EmbedError::new(format!(
                "{} is empty{}: there is nothing to embed; leave it out",
                which(),
                if text.is_empty() {
                    ""
                } else {
                    " but for whitespace"
                }
            )));
        }
        let mut end = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let encoding = self.tokenizer.encode(&text[..end], true).map_err(|error| {
            EmbedError::new(format!("{} cannot be tokenized: {error}", which()))
        })?;
        let words = encoding
            .get_special_tokens_mask()
            .iter()
            .filter(|special| **special == 0)
            .count();
        if words == 0 {
            return Err(EmbedError::new(format!(
                "{} has no word the tokenizer reads (only control or format characters): there \
                 is nothing to embed; leave it out",
                which()
            )));
        }
        Ok(encoding.get_ids().to_vec())
    }
}
