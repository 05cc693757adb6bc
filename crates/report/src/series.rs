//! A named series of points: what every chart draws, and every figure over time holds.

/// A named series of (x, y) points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub(crate) fn new(name: &str) -> Self {
        Series {
            name: name.to_string(),
            points: Vec::new(),
        }
    }

    pub fn max_y(&self) -> Option<f64> {
        self.points.iter().map(|p| p.1).reduce(f64::max)
    }
}
