//! Python's `random.Random` (MT19937) from its `getstate()`, reproducing `randrange(n)` exactly:
//! `_randbelow_with_getrandbits` draws k = n.bit_length() bits and rejects r >= n.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

#[derive(Clone, Debug)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    /// `words` and `index` are the first 624 and the last element of getstate()[1].
    pub fn from_state(words: &[u32], index: usize) -> Result<PyRandom, String> {
        if words.len() != N {
            return Err(format!("random state needs {N} words, got {}", words.len()));
        }
        if index > N {
            return Err(format!("random state index {index} is beyond {N}"));
        }
        let mut mt = [0u32; N];
        mt.copy_from_slice(words);
        Ok(PyRandom { mt, index })
    }

    /// CPython's init_genrand (used by tests; Python seeds through init_by_array).
    pub fn from_init_genrand(s: u32) -> PyRandom {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1_812_433_253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        PyRandom { mt, index: N }
    }

    pub fn genrand_uint32(&mut self) -> u32 {
        if self.index >= N {
            let mag = |y: u32| if y & 1 != 0 { MATRIX_A } else { 0 };
            for kk in 0..N - M {
                let y = (self.mt[kk] & UPPER_MASK) | (self.mt[kk + 1] & LOWER_MASK);
                self.mt[kk] = self.mt[kk + M] ^ (y >> 1) ^ mag(y);
            }
            for kk in N - M..N - 1 {
                let y = (self.mt[kk] & UPPER_MASK) | (self.mt[kk + 1] & LOWER_MASK);
                self.mt[kk] = self.mt[kk + M - N] ^ (y >> 1) ^ mag(y);
            }
            let y = (self.mt[N - 1] & UPPER_MASK) | (self.mt[0] & LOWER_MASK);
            self.mt[N - 1] = self.mt[M - 1] ^ (y >> 1) ^ mag(y);
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// getrandbits(k) for 0 <= k <= 64: 32-bit words low word first, the last one shifted.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!(k <= 64, "getrandbits({k}) beyond 64 bits");
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return u64::from(self.genrand_uint32() >> (32 - k));
        }
        let low = u64::from(self.genrand_uint32());
        let rest = k - 32;
        let high = u64::from(self.genrand_uint32() >> (32 - rest));
        low | (high << 32)
    }

    /// random(): a double in [0, 1) from two 32-bit draws (CPython's genrand_res53).
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.genrand_uint32() >> 5);
        let b = f64::from(self.genrand_uint32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// randrange(n) for n > 0.
    pub fn randrange(&mut self, n: u64) -> u64 {
        assert!(n > 0, "empty range for randrange()");
        let k = 64 - n.leading_zeros();
        let mut r = self.getrandbits(k);
        while r >= n {
            r = self.getrandbits(k);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_mt19937_output() {
        // The reference implementation's first outputs for init_genrand(5489).
        let mut r = PyRandom::from_init_genrand(5489);
        assert_eq!(r.genrand_uint32(), 3_499_211_612);
        assert_eq!(r.genrand_uint32(), 581_869_302);
        assert_eq!(r.genrand_uint32(), 3_890_346_734);
    }

    #[test]
    fn random_is_in_the_unit_interval() {
        let mut r = PyRandom::from_init_genrand(7);
        for _ in 0..1000 {
            let x = r.random();
            assert!((0.0..1.0).contains(&x));
        }
    }

    #[test]
    fn randrange_stays_below_n_and_rejects() {
        let mut r = PyRandom::from_init_genrand(1);
        for n in [1u64, 2, 3, 1000, 1 << 32, 1_000_000_001, (1 << 40) + 7] {
            for _ in 0..200 {
                assert!(r.randrange(n) < n);
            }
        }
    }
}
