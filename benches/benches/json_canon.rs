//! Canonical text of json.Value: parse + write, side by side with
//! serde_json's `from_slice::<Value>` + `to_string` of the same bytes.
//!
//! Before timing, each side's peak heap for one canonicalization is
//! measured with a counting global allocator (bytes requested and live at
//! once, the input buffer excluded) and printed next to the input size.
//! Counting is switched off while criterion times, so it costs the timed
//! runs one relaxed load per allocation.
//!
//! The machine this runs on may be shared, so before criterion's runs a
//! paired measurement alternates the two sides (limen, serde_json, limen,
//! …) and prints the ratio of their fastest runs and of their medians:
//! load that comes and goes hits both sides alike.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use limen_benches::alloc::{peak, Counting};
use limen_core::flow::decode::{canonicalize_json, Limits};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CORPORA: [&str; 3] = ["twitter", "citm_catalog", "canada"];

fn corpus(name: &str) -> Option<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/json-benchmark")
        .join(format!("{name}.json"));
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            eprintln!("skipped {name}: {} is absent", path.display());
            None
        }
    }
}

fn limen(bytes: &[u8]) -> Vec<u8> {
    canonicalize_json(bytes, &Limits::default()).expect("the corpus is valid JSON")
}

fn serde(bytes: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("the corpus is valid JSON");
    serde_json::to_string(&v).expect("writable")
}

/// Alternates the two sides `rounds` times; the fastest and median run of
/// each, in milliseconds.
fn paired(bytes: &[u8], rounds: usize) -> ([f64; 2], [f64; 2]) {
    let mut times = [Vec::with_capacity(rounds), Vec::with_capacity(rounds)];
    for _ in 0..rounds {
        let start = std::time::Instant::now();
        black_box(limen(black_box(bytes)));
        times[0].push(start.elapsed().as_secs_f64() * 1e3);
        let start = std::time::Instant::now();
        black_box(serde(black_box(bytes)));
        times[1].push(start.elapsed().as_secs_f64() * 1e3);
    }
    let mut min = [0.0; 2];
    let mut median = [0.0; 2];
    for (i, t) in times.iter_mut().enumerate() {
        t.sort_by(f64::total_cmp);
        min[i] = t[0];
        median[i] = t[t.len() / 2];
    }
    (min, median)
}

fn json_canon(c: &mut Criterion) {
    for name in CORPORA {
        let Some(bytes) = corpus(name) else { continue };
        let (min, median) = paired(&bytes, 60);
        eprintln!(
            "paired {name}: fastest limen {:.3} ms, serde_json {:.3} ms: limen {:.2}x serde_json's throughput; \
             medians {:.3} / {:.3} ms: {:.2}x",
            min[0],
            min[1],
            min[1] / min[0],
            median[0],
            median[1],
            median[1] / median[0],
        );
    }
    for name in CORPORA {
        let Some(bytes) = corpus(name) else { continue };
        let ours = peak(|| limen(&bytes));
        let theirs = peak(|| serde(&bytes));
        eprintln!(
            "peak heap {name}: input {} B; limen {} B ({:.2}x input); serde_json {} B ({:.2}x input)",
            bytes.len(),
            ours,
            ours as f64 / bytes.len() as f64,
            theirs,
            theirs as f64 / bytes.len() as f64,
        );
    }
    let mut group = c.benchmark_group("json_canon");
    for name in CORPORA {
        let Some(bytes) = corpus(name) else { continue };
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(BenchmarkId::new("limen", name), &bytes, |b, bytes| {
            b.iter(|| limen(black_box(bytes)))
        });
        group.bench_with_input(BenchmarkId::new("serde_json", name), &bytes, |b, bytes| {
            b.iter(|| serde(black_box(bytes)))
        });
    }
    group.finish();
}

criterion_group!(benches, json_canon);
criterion_main!(benches);
