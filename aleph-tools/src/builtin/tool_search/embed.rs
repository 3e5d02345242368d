//! Ranking by meaning: an [`Embedder`] turns text into vectors, and the search keeps each
//! tool's vector for as long as its text stays the same.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::util::sync::lock;

/// Why an [`Embedder`] could not embed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EmbedError(pub String);

/// Turns texts into vectors whose closeness says how alike their meanings are.
///
/// A tool search given one ranks tools by the closeness of their vectors to the query's
/// instead of by shared words, so that a query finds a tool it shares no word with ("which
/// hour is it in Japan" finds `get_current_time`). [`MiniLm`](super::MiniLm) (feature
/// `embeddings`) runs a sentence-embedding model in process; an application may bring its
/// own (an embedding API, another model).
///
/// Calls may block for a while: the search runs them off the async workers.
pub trait Embedder: Send + Sync + 'static {
    /// One vector per text, in order, all of the same length. The search normalizes them to
    /// unit length.
    ///
    /// # Errors
    ///
    /// [`EmbedError`] saying why; the search then ranks by keywords, and logs the error.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

impl<F> Embedder for F
where
    F: Fn(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError> + Send + Sync + 'static,
{
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self(texts)
    }
}

/// How many texts go to the embedder at once.
const BATCH: usize = 32;

/// An embedder and the vectors it made, by text.
pub(super) struct Vectors {
    embedder: Arc<dyn Embedder>,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
}

impl fmt::Debug for Vectors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vectors")
            .field("cached", &lock(&self.cache).len())
            .finish_non_exhaustive()
    }
}

impl Vectors {
    pub(super) fn new(embedder: Arc<dyn Embedder>) -> Self {
        Self {
            embedder,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// A unit vector for each of `texts`: those seen before from the cache, the rest from
    /// the embedder. The cache keeps only `texts` afterwards, so it never outgrows the
    /// catalog; an error leaves it as it was.
    pub(super) fn catalog(&self, texts: &[&str]) -> Result<Vec<Arc<[f32]>>, EmbedError> {
        let mut cache = lock(&self.cache);
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|text| !cache.contains_key(*text))
            .collect();
        let mut made = HashMap::with_capacity(missing.len());
        for batch in missing.chunks(BATCH) {
            for (text, vector) in batch.iter().zip(self.embed(batch)?) {
                made.insert(*text, vector);
            }
        }
        let mut kept = HashMap::with_capacity(texts.len());
        let vectors = texts
            .iter()
            .map(|text| {
                let vector = cache
                    .get(*text)
                    .or_else(|| made.get(*text))
                    .map_or_else(|| Arc::from([]), Arc::clone);
                kept.insert((*text).to_owned(), Arc::clone(&vector));
                vector
            })
            .collect();
        *cache = kept;
        Ok(vectors)
    }

    /// The unit vector of one query.
    pub(super) fn query(&self, text: &str) -> Result<Arc<[f32]>, EmbedError> {
        self.embed(&[text])?
            .pop()
            .ok_or_else(|| EmbedError("the embedder gave no vector".into()))
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Arc<[f32]>>, EmbedError> {
        let vectors = self.embedder.embed(texts)?;
        if vectors.len() != texts.len() {
            return Err(EmbedError(format!(
                "the embedder gave {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        let width = vectors.first().map_or(0, Vec::len);
        if vectors
            .iter()
            .any(|v| v.len() != width || v.iter().any(|x| !x.is_finite()))
        {
            return Err(EmbedError(
                "the embedder gave vectors of different lengths, or numbers that are not finite"
                    .into(),
            ));
        }
        Ok(vectors.into_iter().map(unit).collect())
    }
}

/// `vector` scaled to length one (a zero vector stays zero).
fn unit(mut vector: Vec<f32>) -> Arc<[f32]> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    }
    Arc::from(vector)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn vectors_are_made_once_per_text_and_kept_only_for_the_catalog() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let embedder = move |texts: &[&str]| {
            counted.fetch_add(texts.len(), Ordering::SeqCst);
            #[expect(clippy::cast_precision_loss, reason = "a short test text")]
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        };
        let vectors = Vectors::new(Arc::new(embedder));
        let first = vectors.catalog(&["a", "bb"]).unwrap();
        assert!((first[1].iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-6);
        vectors.catalog(&["a", "bb", "ccc"]).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        vectors.catalog(&["ccc"]).unwrap();
        vectors.catalog(&["a"]).unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            4,
            "`a` left the catalog and came back"
        );
    }

    #[test]
    fn a_failure_keeps_the_vectors_already_made() {
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let (failing, counted) = (Arc::clone(&fail), Arc::clone(&calls));
        let embedder = move |texts: &[&str]| {
            if failing.load(Ordering::SeqCst) {
                return Err(EmbedError("down".into()));
            }
            counted.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        };
        let vectors = Vectors::new(Arc::new(embedder));
        vectors.catalog(&["a", "b"]).unwrap();
        fail.store(true, Ordering::SeqCst);
        assert!(vectors.catalog(&["a", "b", "c"]).is_err());
        fail.store(false, Ordering::SeqCst);
        vectors.catalog(&["a", "b", "c"]).unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "only `c` was embedded again"
        );
    }

    #[test]
    fn a_misbehaving_embedder_is_an_error() {
        let short = Vectors::new(Arc::new(|_: &[&str]| Ok(Vec::new())));
        assert!(short.catalog(&["a"]).is_err());
        let ragged = Vectors::new(Arc::new(|_: &[&str]| Ok(vec![vec![1.0], vec![1.0, 2.0]])));
        assert!(ragged.catalog(&["a", "b"]).is_err());
        let nan = Vectors::new(Arc::new(|_: &[&str]| Ok(vec![vec![f32::NAN]])));
        assert!(nan.query("a").is_err());
    }
}
