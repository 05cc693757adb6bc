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

/// Anything drawn along x: a line's point, a band's (x, low, high).
trait AlongX: Copy {
    fn x(&self) -> f64;
}

impl AlongX for (f64, f64) {
    fn x(&self) -> f64 {
        self.0
    }
}

impl AlongX for (f64, f64, f64) {
    fn x(&self) -> f64 {
        self.0
    }
}

/// `points` (sorted by x, at least one) in runs falling in the same of `buckets` equal slices
/// of their x range.
fn by_bucket<T: AlongX>(points: &[T], buckets: usize) -> Vec<&[T]> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let (x0, width) = (first.x(), (last.x() - first.x()).max(f64::MIN_POSITIVE));
    let bucket_of = |x: f64| (((x - x0) / width * buckets as f64) as usize).min(buckets - 1);
    let mut out = Vec::with_capacity(buckets);
    let mut start = 0;
    while start < points.len() {
        let bucket = bucket_of(points[start].x());
        let mut end = start + 1;
        while end < points.len() && bucket_of(points[end].x()) == bucket {
            end += 1;
        }
        out.push(&points[start..end]);
        start = end;
    }
    out
}

/// At most `2 × buckets` points of `points` (sorted by x): the minimum and maximum of each bucket.
pub fn min_max(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    let buckets = buckets.max(1);
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(2 * buckets);
    for slice in by_bucket(points, buckets) {
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
    }
    out
}

/// At most `2 × buckets` points of a band (sorted by x): each bucket's lowest low and highest
/// high at its first and last x, so that the drawn band covers every point it stands for.
fn low_high(points: &[(f64, f64, f64)], buckets: usize) -> Vec<(f64, f64, f64)> {
    let buckets = buckets.max(1);
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(2 * buckets);
    for slice in by_bucket(points, buckets) {
        let low = slice.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let high = slice.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
        out.push((slice[0].0, low, high));
        if slice.len() > 1 {
            out.push((slice[slice.len() - 1].0, low, high));
        }
    }
    out
}

/// `points` cut at their gaps (judged on the whole series, before any point is dropped), each
/// piece with its share of `buckets`.
fn pieces<T: AlongX>(points: &[T], buckets: usize) -> Vec<(&[T], usize)> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let width = (last.x() - first.x()).max(f64::MIN_POSITIVE);
    segments(points, typical_gap(points))
        .into_iter()
        .map(|piece| {
            let share = (piece[piece.len() - 1].x() - piece[0].x()) / width;
            (piece, ((buckets as f64 * share).ceil() as usize).max(1))
        })
        .collect()
}

/// The pieces of a line to draw: `points` cut at its gaps, each piece reduced to its share of
/// `buckets`.
pub fn for_drawing(points: &[(f64, f64)], buckets: usize) -> Vec<Vec<(f64, f64)>> {
    pieces(points, buckets)
        .into_iter()
        .map(|(piece, n)| min_max(piece, n))
        .collect()
}

/// The pieces of a band to draw (x, low, high): cut at its gaps, each piece reduced to its
/// share of `buckets` without narrowing the band anywhere.
pub fn envelope(points: &[(f64, f64, f64)], buckets: usize) -> Vec<Vec<(f64, f64, f64)>> {
    pieces(points, buckets)
        .into_iter()
        .map(|(piece, n)| low_high(piece, n))
        .collect()
}

/// `points` split into runs with no gap wider than `max_gap` between neighbours.
fn segments<T: AlongX>(points: &[T], max_gap: f64) -> Vec<&[T]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=points.len() {
        if i == points.len() || points[i].x() - points[i - 1].x() > max_gap {
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
fn typical_gap<T: AlongX>(points: &[T]) -> f64 {
    let mut steps: Vec<f64> = points.windows(2).map(|w| w[1].x() - w[0].x()).collect();
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
        assert_eq!(segments::<(f64, f64)>(&[], 1.0).len(), 0);
        assert_eq!(typical_gap(&[(1.0, 1.0)]), f64::INFINITY);
    }
}
