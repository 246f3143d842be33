//! Histograms in HdrHistogram's standard interchange form: the V2 encoding, deflated, in
//! base64 — what HdrHistogram's own libraries (Java, C, Go, Python, Rust) read and write, and
//! what their interval logs hold. A run's JSON carries its histograms this way so that runs
//! on several hosts can be merged exactly afterwards (counts added, never percentiles averaged).

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Encode `h` (V2 + deflate, base64 with padding).
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail, and our histograms are in range by construction.
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("a histogram serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decode what [`encode`] (or any HdrHistogram library's compressed form) wrote.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("not an HdrHistogram (V2, compressed): {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_survives_the_round_trip_and_garbage_is_refused() {
        let mut h = crate::stats::histogram();
        for v in [1_000u64, 20_000, 20_000, 3_000_000, 3_600_000_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(decode(&encode(&crate::stats::histogram())).unwrap().len(), 0);
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err(), "base64, but not a histogram");
    }
}
