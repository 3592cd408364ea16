//! Capturing what diesel-occ reports: a `tracing` layer that keeps every event with its
//! fields and the fields of the spans around it, a `metrics` recorder that keeps
//! counter totals and histogram values by name and labels, and the spans
//! `tracing-opentelemetry` exports, kept by OpenTelemetry's in-memory exporter.
//!
//! Every test database is created after [`interested_everywhere`] (see `test_db!`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use diesel_occ_tests::Backend;
use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Field values as text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fields(pub(crate) BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// One captured event.
#[derive(Debug, Clone)]
pub(crate) struct CapturedEvent {
    pub(crate) level: Level,
    pub(crate) target: String,
    pub(crate) fields: Fields,
    /// The spans around it, innermost first: name and fields.
    pub(crate) spans: Vec<(String, Fields)>,
}

impl CapturedEvent {
    /// A field of the event; panics when it is missing.
    pub(crate) fn field(&self, name: &str) -> &str {
        self.fields
            .0
            .get(name)
            .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }

    /// A field of the innermost span called `span`.
    pub(crate) fn span_field(&self, span: &str, name: &str) -> String {
        self.spans
            .iter()
            .find(|(n, _)| n == span)
            .and_then(|(_, fields)| fields.0.get(name).cloned())
            .unwrap_or_else(|| panic!("no span {span} with {name} around {self:?}"))
    }
}

/// The events the layer saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<CapturedEvent>>>);

impl Captured {
    /// Makes this layer the thread's subscriber and `totals` the thread's metrics
    /// recorder until the returned guards drop (an async test holds them across its
    /// awaits on a current-thread runtime, which polls everything on this thread).
    pub(crate) fn install<'t>(
        &self,
        totals: &'t Totals,
    ) -> (
        tracing::subscriber::DefaultGuard,
        metrics::LocalRecorderGuard<'t>,
    ) {
        interested_everywhere();
        let subscriber = tracing_subscriber::registry()
            .with(self.clone())
            .with(filter(LevelFilter::TRACE));
        (
            tracing::subscriber::set_default(subscriber),
            metrics::set_default_local_recorder(totals),
        )
    }

    /// Every diesel-occ event.
    pub(crate) fn events(&self) -> Vec<CapturedEvent> {
        let events = self.0.lock().unwrap();
        let ours = events.iter().filter(|e| e.target == "diesel_occ");
        ours.cloned().collect()
    }

    /// The diesel-occ events with this message.
    pub(crate) fn named(&self, message: &str) -> Vec<CapturedEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.fields.0.get("message").map(String::as_str) == Some(message))
            .collect()
    }
}

impl<S> tracing_subscriber::Layer<S> for Captured
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = ctx.event_scope(event).into_iter().flatten();
        let spans = spans.map(|span| {
            let fields = span.extensions().get::<Fields>().cloned();
            (span.name().to_owned(), fields.unwrap_or_default())
        });
        let spans = spans.collect();
        self.0.lock().unwrap().push(CapturedEvent {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            fields,
            spans,
        });
    }
}

/// Counter totals and histogram values, each by `name{label=value,...}`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Totals(
    Arc<Mutex<BTreeMap<String, u64>>>,
    Arc<Mutex<BTreeMap<String, Vec<f64>>>>,
);

impl Totals {
    /// The counter totals so far.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }

    /// The values each histogram recorded so far, in order.
    pub(crate) fn histograms(&self) -> BTreeMap<String, Vec<f64>> {
        self.1.lock().unwrap().clone()
    }
}

/// `name{label=value,...}` of a metric's key.
fn key_name(key: &Key) -> String {
    let labels = key.labels().map(|l| format!("{}={}", l.key(), l.value()));
    let labels: Vec<_> = labels.collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

/// The values of one histogram.
struct Values(Totals, String);

impl HistogramFn for Values {
    fn record(&self, value: f64) {
        let mut histograms = self.0.1.lock().unwrap();
        histograms.entry(self.1.clone()).or_default().push(value);
    }
}

struct Handle(Totals, String);

impl CounterFn for Handle {
    fn increment(&self, value: u64) {
        *self.0.0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }

    fn absolute(&self, value: u64) {
        self.0.0.lock().unwrap().insert(self.1.clone(), value);
    }
}

impl Recorder for Totals {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Handle(self.clone(), key_name(key))))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Values(self.clone(), key_name(key))))
    }
}

/// Installs, once per process, a global subscriber that is interested in every callsite
/// and keeps nothing.
///
/// `tracing` caches each callsite's interest process-wide. Without a global subscriber,
/// a span first hit by a test that captures nothing can be cached as "never" while
/// another test's capturing subscriber is being registered, and that test then sees
/// its events outside their `occ.attempt` span. With this one installed no callsite is
/// ever "never", so each thread's scoped subscriber alone decides what it records.
pub(crate) fn interested_everywhere() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // A bare registry is interested in every callsite and enables everything. Another
        // global subscriber already keeps every callsite alive just as well.
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    });
}

/// Spans as OpenTelemetry receives them: diesel-occ's `tracing` spans through
/// `tracing-opentelemetry`, kept by the SDK's in-memory exporter as each one ends.
#[derive(Debug)]
pub(crate) struct Exported {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

impl Exported {
    pub(crate) fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        Exported { exporter, provider }
    }

    /// Makes the OpenTelemetry layer the thread's subscriber until the returned guard
    /// drops, keeping what `max_level` lets through (an async test holds the guard
    /// across its awaits on a current-thread runtime, which polls everything on this
    /// thread).
    pub(crate) fn install(&self, max_level: LevelFilter) -> tracing::subscriber::DefaultGuard {
        interested_everywhere();
        let layer = tracing_opentelemetry::layer().with_tracer(self.provider.tracer("tests"));
        let subscriber = tracing_subscriber::registry()
            .with(layer)
            .with(filter(max_level));
        tracing::subscriber::set_default(subscriber)
    }

    /// Every span exported so far, in the order they ended.
    pub(crate) fn spans(&self) -> Vec<ExportedSpan> {
        self.provider.force_flush().expect("flush");
        let spans = self.exporter.get_finished_spans().expect("exported spans");
        spans.into_iter().map(ExportedSpan::from).collect()
    }

    /// The exported spans with this name.
    pub(crate) fn named(&self, name: &str) -> Vec<ExportedSpan> {
        let spans = self.spans();
        spans.into_iter().filter(|span| span.name == name).collect()
    }
}

/// An exported span, its attribute values as text.
#[derive(Debug, Clone)]
pub(crate) struct ExportedSpan {
    pub(crate) name: String,
    pub(crate) kind: SpanKind,
    pub(crate) status: Status,
    pub(crate) id: SpanId,
    pub(crate) parent: SpanId,
    pub(crate) attributes: BTreeMap<String, String>,
    /// The span's events: name and attributes.
    pub(crate) events: Vec<(String, BTreeMap<String, String>)>,
}

impl From<SpanData> for ExportedSpan {
    fn from(span: SpanData) -> Self {
        let text = |attributes: &[opentelemetry::KeyValue]| {
            attributes
                .iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect()
        };
        ExportedSpan {
            name: span.name.to_string(),
            kind: span.span_kind.clone(),
            status: span.status.clone(),
            id: span.span_context.span_id(),
            parent: span.parent_span_id,
            attributes: text(&span.attributes),
            events: span
                .events
                .iter()
                .map(|event| (event.name.to_string(), text(&event.attributes)))
                .collect(),
        }
    }
}

impl ExportedSpan {
    /// An attribute; panics when it is missing.
    pub(crate) fn attribute(&self, name: &str) -> &str {
        self.attributes
            .get(name)
            .unwrap_or_else(|| panic!("no attribute {name} in {self:#?}"))
    }

    /// True when the span's status is an error.
    pub(crate) fn failed(&self) -> bool {
        matches!(self.status, Status::Error { .. })
    }

    /// The attributes of each event with this name.
    pub(crate) fn events_named(&self, name: &str) -> Vec<&BTreeMap<String, String>> {
        self.events
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, attributes)| attributes)
            .collect()
    }
}

/// OpenTelemetry's `db.system.name` for a test backend: `mysql` for MySQL and MariaDB
/// alike, the client's name for the server, since Diesel's `Mysql` backend serves both.
pub(crate) fn system_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => "postgresql",
        Backend::Mysql => "mysql",
        Backend::Sqlite => "sqlite",
    }
}

thread_local! {
    /// Whether this thread's capturing subscribers enable diesel-occ's key-values target.
    static KEY_VALUES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the subscribers that [`Captured::install`] and [`Exported::install`] install on this
/// thread enable diesel-occ's key-values target (`on`) or not, as an application's
/// filter does, for as long as it lives.
pub(crate) struct KeyValues(());

impl KeyValues {
    pub(crate) fn set(on: bool) -> Self {
        KEY_VALUES.set(on);
        KeyValues(())
    }
}

impl Drop for KeyValues {
    fn drop(&mut self) {
        KEY_VALUES.set(false);
    }
}

/// The filter of a capturing subscriber: everything up to `max_level`, and diesel-occ's
/// key values when this thread's [`KeyValues`] says so.
fn filter(max_level: LevelFilter) -> Targets {
    let keys = if KEY_VALUES.get() {
        LevelFilter::TRACE
    } else {
        LevelFilter::OFF
    };
    Targets::new()
        .with_default(max_level)
        .with_target(diesel_occ::observe::KEY_VALUES_TARGET, keys)
}
