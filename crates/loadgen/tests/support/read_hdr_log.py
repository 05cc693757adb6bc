"""Reads an HdrHistogram interval log with HdrHistogram_py (an independent implementation)
and prints, per tag, the merged histogram's figures as JSON. Used by tests/it/hdr_log.rs."""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

path = sys.argv[1]
# Showdown's histograms: nanoseconds, 1 µs resolution, 3 significant digits.
LOWEST, HIGHEST, DIGITS = 1000, 24 * 3600 * 10**9, 3
reader = HistogramLogReader(path, HdrHistogram(LOWEST, HIGHEST, DIGITS))
merged = {}
intervals = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    tag = h.get_tag() or ""
    if tag not in merged:
        merged[tag] = HdrHistogram(LOWEST, HIGHEST, DIGITS)
        intervals[tag] = 0
    merged[tag].add(h)
    intervals[tag] += 1
out = {}
for tag, h in merged.items():
    out[tag] = {
        "intervals": intervals[tag],
        "count": h.get_total_count(),
        "min": h.get_min_value(),
        "max": h.get_max_value(),
        "p50": h.get_value_at_percentile(50),
        "p90": h.get_value_at_percentile(90),
        "p99": h.get_value_at_percentile(99),
        "p999": h.get_value_at_percentile(99.9),
    }
print(json.dumps({"start_time": reader.get_start_time_sec(), "tags": out}))
