//! Fewer points for drawing, without hiding a peak.
//!
//! A one-hour run sampled at 10 Hz has 36,000 points per series, far more than a plot is pixels
//! wide. LTTB keeps the points that best preserve the line's *shape*, which can drop a one-sample
//! spike, and a latency spike is exactly what a reader looks for. So each of `buckets` equal
//! slices of the x range keeps its lowest and its highest point, in x order: the drawn line
//! passes through every extreme, and at one or two pixels per bucket it is indistinguishable
//! from the full series.
//!
//! Lines are also cut where data is missing (a probe's lost link, a dead interval), so that a
//! straight segment never bridges a gap as if it had been measured.

/// At most `2 × buckets` points of `points` (sorted by x): the minimum and maximum of each bucket.
pub fn min_max(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    let buckets = buckets.max(1);
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let (x0, width) = (first.0, (last.0 - first.0).max(f64::MIN_POSITIVE));
    let bucket_of = |x: f64| (((x - x0) / width * buckets as f64) as usize).min(buckets - 1);
    let mut out = Vec::with_capacity(2 * buckets);
    let mut start = 0;
    while start < points.len() {
        let bucket = bucket_of(points[start].0);
        let mut end = start + 1;
        while end < points.len() && bucket_of(points[end].0) == bucket {
            end += 1;
        }
        let slice = &points[start..end];
        let (mut low, mut high) = (0, 0);
        for (i, p) in slice.iter().enumerate() {
            if p.1 < slice[low].1 {
                low = i;
            }
            if p.1 > slice[high].1 {
                high = i;
            }
        }
        let (a, b) = if low <= high {
            (low, high)
        } else {
            (high, low)
        };
        out.push(slice[a]);
        if b != a {
            out.push(slice[b]);
        }
        start = end;
    }
    out
}

/// The pieces of a line to draw: `points` cut at its gaps (judged on the full series, before
/// any point is dropped), each piece reduced to its share of `buckets`.
pub fn for_drawing(points: &[(f64, f64)], buckets: usize) -> Vec<Vec<(f64, f64)>> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let width = (last.0 - first.0).max(f64::MIN_POSITIVE);
    segments(points, typical_gap(points))
        .into_iter()
        .map(|piece| {
            let share = (piece[piece.len() - 1].0 - piece[0].0) / width;
            min_max(piece, ((buckets as f64 * share).ceil() as usize).max(1))
        })
        .collect()
}

/// A band's pieces to draw (x, low, high): cut at its gaps, and where a piece has more than
/// `2 × buckets` points, each bucket's lowest low and highest high at its first and last x, so
/// that the drawn band covers every point it stands for.
pub fn envelope(points: &[(f64, f64, f64)], buckets: usize) -> Vec<Vec<(f64, f64, f64)>> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let xs: Vec<(f64, f64)> = points.iter().map(|&(x, lo, _)| (x, lo)).collect();
    let max_gap = typical_gap(&xs);
    let width = (last.0 - first.0).max(f64::MIN_POSITIVE);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=points.len() {
        if i < points.len() && points[i].0 - points[i - 1].0 <= max_gap {
            continue;
        }
        let piece = &points[start..i];
        start = i;
        let share = (piece[piece.len() - 1].0 - piece[0].0) / width;
        let n = ((buckets as f64 * share).ceil() as usize).max(1);
        if piece.len() <= 2 * n {
            out.push(piece.to_vec());
            continue;
        }
        let (x0, span) = (
            piece[0].0,
            (piece[piece.len() - 1].0 - piece[0].0).max(f64::MIN_POSITIVE),
        );
        let bucket_of = |x: f64| (((x - x0) / span * n as f64) as usize).min(n - 1);
        let mut drawn = Vec::with_capacity(2 * n);
        let mut j = 0;
        while j < piece.len() {
            let b = bucket_of(piece[j].0);
            let mut k = j;
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            while k < piece.len() && bucket_of(piece[k].0) == b {
                lo = lo.min(piece[k].1);
                hi = hi.max(piece[k].2);
                k += 1;
            }
            drawn.push((piece[j].0, lo, hi));
            if k - 1 > j {
                drawn.push((piece[k - 1].0, lo, hi));
            }
            j = k;
        }
        out.push(drawn);
    }
    out
}

/// `points` split into runs with no gap wider than `max_gap` between neighbours.
pub fn segments(points: &[(f64, f64)], max_gap: f64) -> Vec<&[(f64, f64)]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=points.len() {
        if i == points.len() || points[i].0 - points[i - 1].0 > max_gap {
            if i > start {
                out.push(&points[start..i]);
            }
            start = i;
        }
    }
    out
}

/// The gap beyond which a series counts as broken: three times its median spacing, so that
/// one lost sample shows while the jitter of a fixed-rate sampler does not.
pub fn typical_gap(points: &[(f64, f64)]) -> f64 {
    let mut steps: Vec<f64> = points.windows(2).map(|w| w[1].0 - w[0].0).collect();
    if steps.is_empty() {
        return f64::INFINITY;
    }
    steps.sort_by(f64::total_cmp);
    3.0 * steps[steps.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize) -> Vec<(f64, f64)> {
        (0..n).map(|i| (i as f64, (i % 7) as f64)).collect()
    }

    #[test]
    fn short_series_are_kept_whole() {
        let s = series(100);
        assert_eq!(min_max(&s, 50), s);
    }

    #[test]
    fn a_one_sample_spike_survives() {
        let mut s = series(36_000);
        s[20_017].1 = 1e6;
        s[31_001].1 = -5.0;
        let d = min_max(&s, 300);
        assert!(d.len() <= 600, "{} points", d.len());
        assert!(d.contains(&(20_017.0, 1e6)));
        assert!(d.contains(&(31_001.0, -5.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "x order is kept");
        assert_eq!(
            d.first(),
            Some(&(0.0, 0.0)),
            "the first bucket's minimum is its first point"
        );
    }

    #[test]
    fn pieces_are_cut_before_they_are_reduced() {
        // 10 Hz for 100 s, a 30 s hole, 10 Hz for 100 s more.
        let mut s: Vec<(f64, f64)> = (0..1000).map(|i| (i as f64 / 10.0, 1.0)).collect();
        s.extend((0..1000).map(|i| (130.0 + i as f64 / 10.0, 2.0)));
        let pieces = for_drawing(&s, 100);
        assert_eq!(pieces.len(), 2, "one hole, two pieces");
        let drawn: usize = pieces.iter().map(Vec::len).sum();
        assert!(drawn <= 2 * 100 + 4, "{drawn} points");
        assert!(for_drawing(&[], 10).is_empty());
    }

    #[test]
    fn an_envelope_covers_every_point_and_breaks_at_gaps() {
        // 10 Hz for 100 s, a 30 s hole, 10 Hz for 100 s; one interval's spread is wide.
        let mut s: Vec<(f64, f64, f64)> = (0..1000).map(|i| (i as f64 / 10.0, 1.0, 2.0)).collect();
        s[517] = (51.7, 0.5, 90.0);
        s.extend((0..1000).map(|i| (130.0 + i as f64 / 10.0, 3.0, 4.0)));
        let pieces = envelope(&s, 100);
        assert_eq!(pieces.len(), 2, "one hole, two pieces");
        assert!(pieces.iter().map(Vec::len).sum::<usize>() <= 2 * 100 + 4);
        let widest = pieces[0].iter().find(|p| p.2 == 90.0).unwrap();
        assert_eq!(
            widest.1, 0.5,
            "the bucket's lowest low beside its highest high"
        );
        for &(x, lo, hi) in &s {
            let piece = if x < 115.0 { &pieces[0] } else { &pieces[1] };
            let over = piece.windows(2).find(|w| w[0].0 <= x && x <= w[1].0);
            let (a, b) = over.map_or((piece[0], piece[0]), |w| (w[0], w[1]));
            assert!(a.1.min(b.1) <= lo && a.2.max(b.2) >= hi, "{x} not covered");
        }
        assert!(envelope(&[], 10).is_empty());
    }

    #[test]
    fn lines_break_at_gaps() {
        let s = [(0.0, 1.0), (0.1, 1.0), (0.2, 1.0), (5.0, 1.0), (5.1, 1.0)];
        let gap = typical_gap(&s);
        assert!((gap - 0.3).abs() < 1e-9, "{gap}");
        let parts = segments(&s, gap);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 3);
        assert_eq!(parts[1].len(), 2);
        assert_eq!(segments(&[], 1.0).len(), 0);
        assert_eq!(typical_gap(&[(1.0, 1.0)]), f64::INFINITY);
    }
}
