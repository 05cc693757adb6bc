//! A seeded, dependency-free generator (xorshift64*): the up-and-down rule's coin, which a
//! resumed search must replay exactly, and the simulations that prove the intervals.

/// A seed from an id (FNV-1a of its bytes): a search's coin, replayed from its id when it is
/// resumed; a comparison's order of rounds.
pub fn seed_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// xorshift64* from a seed (any; 0 is moved off the generator's one fixed point).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// Uniform on (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Exponential of rate `rate`.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -self.uniform().ln() / rate
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A fresh seed drawn from this generator (for a sub-simulation).
    pub fn seed(&mut self) -> u64 {
        self.uniform().to_bits() ^ self.0
    }
}
