//! An OpenMetrics info metric with one sample per label set (`..._info{node,
//! check} 1`): text a node reports, as labels. prometheus-client's own
//! `Info` holds one label set; in a `Family` it would need its labels at
//! construction, and its encoder then writes `{,node=...}` for an empty
//! set of its own.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use std::sync::{Arc, Mutex};

type Labels = Vec<(String, String)>;

/// Clones share their label sets, as a `Family`'s do: one is registered,
/// another filled in.
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
