//! The process's Prometheus recorder for the `metrics` facade, which diesel-occ's
//! counters and histograms go to (the HTTP app serves it on `/metrics`).

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Attempts per operation (`diesel_occ.attempts`): 1 is the common case.
const ATTEMPT_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0];
/// Seconds a retried operation took (`diesel_occ.retry.duration`).
const SECOND_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The recorder's handle, installing the recorder as the global one on the first call.
///
/// The facade has one global recorder per process, so it is installed once here (the
/// tests run many servers in one process). Histograms get buckets, so they render as
/// Prometheus histograms (`_bucket`, `_sum`, `_count`), not summaries; the exporter
/// renders the metric names' dots as underscores, which is what its matchers see. If
/// another recorder was installed first, this one receives nothing and renders empty.
pub fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new();
        let builder = builder
            .set_buckets_for_metric(Matcher::Full("diesel_occ_attempts".into()), ATTEMPT_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("diesel_occ_retry_duration".into()),
                    SECOND_BUCKETS,
                )
            })
            // Only an empty bucket list is refused, and these are constants.
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics stays empty");
        }
        diesel_occ::observe::describe_metrics();
        handle
    })
}
