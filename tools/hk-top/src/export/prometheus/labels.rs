//! Label values as the text format needs them, and the info metric that
//! carries a node's text as labels.

use base64::Engine;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use std::sync::{Arc, Mutex};

pub type Labels = Vec<(String, String)>;

/// `[("node", address)]`: every series has it.
pub fn node_labels(address: &str) -> Labels {
    vec![("node".to_string(), label_value(address))]
}

/// `name="text"` for bytes that are UTF-8, else `name_base64="..."`: a
/// key or a prefix may be any bytes, a label value may not.
pub fn bytes_label(name: &str, bytes: &[u8]) -> (String, String) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (name.to_string(), label_value(text)),
        Err(_) => (
            format!("{name}_base64"),
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ),
    }
}

/// A label value as the text format needs it: the encoder writes values as
/// given, so backslashes, quotes and line breaks are escaped here.
pub fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// An OpenMetrics info metric with one sample per label set (`..._info{node,
/// check} 1`): text a node reports, as labels. prometheus-client's own
/// `Info` holds one label set; in a `Family` it would need its labels at
/// construction, and its encoder then writes `{,node=...}` for an empty
/// set of its own. Clones share their label sets, as a `Family`'s do:
/// one is registered, another filled in.
#[derive(Clone, Debug, Default)]
pub struct InfoSet(Arc<Mutex<Vec<Labels>>>);

impl InfoSet {
    pub fn add(&self, labels: Labels) {
        // A poisoned lock still holds the label sets added before.
        let mut sets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        sets.push(labels);
    }
}

impl EncodeMetric for InfoSet {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let sets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for labels in sets.iter() {
            encoder.encode_info(labels)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Info
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(label_value("user:1"), "user:1");
    }

    #[test]
    fn bytes_that_are_not_utf8_go_base64() {
        let label = |name: &str, value: &str| (name.to_string(), value.to_string());
        assert_eq!(
            bytes_label("prefix", b"tenant:7:*"),
            label("prefix", "tenant:7:*")
        );
        assert_eq!(bytes_label("key", b"\xff"), label("key_base64", "/w=="));
    }

    #[test]
    fn one_sample_per_label_set_under_one_family() {
        let set = InfoSet::default();
        let mut registry = Registry::default();
        registry.register("hk_check", "How", set.clone());
        for node in ["a:1", "a:2"] {
            set.add(vec![
                ("node".into(), node.into()),
                ("check".into(), "per-slot".into()),
            ]);
        }
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert_eq!(
            text,
            "# HELP hk_check How.\n# TYPE hk_check info\n\
             hk_check_info{node=\"a:1\",check=\"per-slot\"} 1\n\
             hk_check_info{node=\"a:2\",check=\"per-slot\"} 1\n# EOF\n"
        );
    }
}
