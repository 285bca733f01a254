//! A paired measurement for a shared machine: the two sides run
//! alternately, `rounds` times, each round `batch` iterations, and their
//! fastest and median rounds are compared. Load that comes and goes hits
//! both sides alike; criterion's own runs are beside it.

use std::time::Instant;

/// Per-iteration times in nanoseconds of the two sides: (fastest, median).
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// The fastest round of each side, per iteration.
    pub fastest: [f64; 2],
    /// The median round of each side, per iteration.
    pub median: [f64; 2],
}

/// Runs `a` and `b` alternately and times them.
pub fn paired(rounds: usize, batch: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> Paired {
    let mut times = [Vec::with_capacity(rounds), Vec::with_capacity(rounds)];
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..batch {
            a();
        }
        times[0].push(start.elapsed().as_nanos() as f64 / batch as f64);
        let start = Instant::now();
        for _ in 0..batch {
            b();
        }
        times[1].push(start.elapsed().as_nanos() as f64 / batch as f64);
    }
    let mut fastest = [0.0; 2];
    let mut median = [0.0; 2];
    for (i, t) in times.iter_mut().enumerate() {
        t.sort_by(f64::total_cmp);
        fastest[i] = t[0];
        median[i] = t[t.len() / 2];
    }
    Paired { fastest, median }
}
