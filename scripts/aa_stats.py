"""What the A/A benchmark's figures are read with (scripts/bench-aa.sh's summary and
scripts/aa-replay.py): Student's t at any df, and the standard error behind a kept sitting's
interval, as loadgen read it."""
import math


def t_cdf(t, df):
    """Student's t distribution function at t on df degrees of freedom (any df > 0)."""
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2, 0.5, x)
    return 1 - tail if t > 0 else tail


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x > (a + 1) / (a + b + 2):
        return 1 - betainc(b, a, 1 - x)
    c, d, f = 1.0, 1 - (a + b) * x / (a + 1), 0.0
    d = 1 / (d if abs(d) > 1e-300 else 1e-300)
    f = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1 + num / c
            c = c if abs(c) > 1e-300 else 1e-300
            f *= c * d
        if abs(c * d - 1) < 1e-12:
            break
    return front * f / a


def t975(df):
    """The t quantile a 95 % two-sided interval reads, by bisection on t_cdf."""
    low, high = 0.0, 100.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < 0.975 else (low, mid)
    return (low + high) / 2


def se_of(r):
    """The standard error of ln r behind a sitting's interval. As read: its half-width in ln
    over t on rounds - 1 df. Widened: loadgen read it at t on Satterthwaite's df, the total
    variance s^2 + 2 sigma^2 (sigma the spread between processes, read from k sittings, on its
    own df where the row keeps it), so the
    own s is the one whose widened half-width is the interval's (bisection), and the se is the
    total's."""
    half = math.log(r["high"] / r["low"]) / 2
    own_df = max(r["rounds"] - 1, 1)
    if r.get("spread") != "allowed" or not r.get("between_sd"):
        return half / t975(own_df)
    spread, k = 2 * r["between_sd"] ** 2, r["between_sittings"]
    spread_df = r.get("between_df") or 0

    def widened_half(s):
        own = s * s
        total = own + spread
        if spread_df > 0:
            # Since the spread's own df is kept: each part on its own df.
            df = total**2 / (spread**2 / spread_df + own**2 / own_df)
        else:
            # Sittings kept before it: the whole variance on the sittings' count.
            df = total**2 / (total**2 / k + own**2 * (1 + 1 / k) / own_df)
        return t975(df) * math.sqrt(total)

    low, high = 0.0, half
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if widened_half(mid) < half else (low, mid)
    s = (low + high) / 2
    return math.sqrt(s * s + spread)
