//! Byte and substring search that never asks the CPU what it supports.
//!
//! `memchr`'s top-level functions pick AVX2 or SSE2 at their first call, through the
//! standard library's feature detection, which runs `cpuid` about ten times. In the
//! virtual machines agents run in, every `cpuid` traps to the hypervisor, a cost every `abcd`
//! process (every hook) would pay (docs/decisions.md, "Measurements"). SSE2 is part of
//! x86_64 itself, so its searcher needs no detection; substrings use the Two-Way searcher
//! (linear time, no SIMD). The lines and values searched are short, where the wider
//! vectors gain nothing measurable. `clippy.toml` refuses the detecting functions.

#[cfg(target_arch = "x86_64")]
fn one(byte: u8) -> memchr::arch::x86_64::sse2::memchr::One {
    memchr::arch::x86_64::sse2::memchr::One::new(byte).expect("SSE2 is part of every x86_64 CPU")
}

/// The first position of `byte` in `haystack`.
#[allow(clippy::disallowed_methods)]
pub fn find_byte(byte: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return one(byte).find(haystack);
    #[cfg(not(target_arch = "x86_64"))]
    return memchr::memchr(byte, haystack);
}

/// The last position of `byte` in `haystack`.
#[allow(clippy::disallowed_methods)]
pub fn rfind_byte(byte: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    return one(byte).rfind(haystack);
    #[cfg(not(target_arch = "x86_64"))]
    return memchr::memrchr(byte, haystack);
}

/// Every position of `byte` in `haystack`, in order.
#[allow(clippy::disallowed_methods)]
pub fn byte_positions(byte: u8, haystack: &[u8]) -> impl Iterator<Item = usize> + '_ {
    #[cfg(target_arch = "x86_64")]
    return Positions { one: one(byte), haystack, at: 0 };
    #[cfg(not(target_arch = "x86_64"))]
    return memchr::memchr_iter(byte, haystack);
}

#[cfg(target_arch = "x86_64")]
struct Positions<'h> {
    one: memchr::arch::x86_64::sse2::memchr::One,
    haystack: &'h [u8],
    at: usize,
}

#[cfg(target_arch = "x86_64")]
impl Iterator for Positions<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let found = self.at + self.one.find(&self.haystack[self.at..])?;
        self.at = found + 1;
        Some(found)
    }
}

/// The first position of `needle` in `haystack` (0 for an empty needle).
pub fn find_sub(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::arch::all::twoway::Finder::new(needle).find(haystack, needle)
}

/// Every position where `needle` (not empty) starts in `haystack`, left to right, each
/// match starting after the end of the one before (as `memchr::memmem::find_iter`).
pub fn sub_positions<'h, 'n>(haystack: &'h [u8], needle: &'n [u8]) -> impl Iterator<Item = usize> + use<'h, 'n> {
    assert!(!needle.is_empty(), "an empty needle matches everywhere");
    let finder = memchr::arch::all::twoway::Finder::new(needle);
    let mut at = 0;
    std::iter::from_fn(move || {
        let found = at + finder.find(haystack.get(at..)?, needle)?;
        at = found + needle.len();
        Some(found)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    fn naive_sub(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = 0;
        while at + needle.len() <= haystack.len() {
            if &haystack[at..at + needle.len()] == needle {
                out.push(at);
                at += needle.len();
            } else {
                at += 1;
            }
        }
        out
    }

    quickcheck! {
        // Small alphabets, so that matches are common.
        fn bytes_agree_with_a_plain_scan(raw: Vec<u8>, byte: u8) -> bool {
            let haystack: Vec<u8> = raw.iter().map(|b| b % 4).collect();
            let byte = byte % 4;
            let all: Vec<usize> = (0..haystack.len()).filter(|&i| haystack[i] == byte).collect();
            byte_positions(byte, &haystack).collect::<Vec<_>>() == all
                && find_byte(byte, &haystack) == all.first().copied()
                && rfind_byte(byte, &haystack) == all.last().copied()
        }

        fn substrings_agree_with_a_plain_scan(raw: Vec<u8>, needle: Vec<u8>) -> bool {
            let haystack: Vec<u8> = raw.iter().map(|b| b % 3).collect();
            let needle: Vec<u8> = needle.iter().take(4).map(|b| b % 3).collect();
            if needle.is_empty() {
                return find_sub(&haystack, &needle) == Some(0);
            }
            let all = naive_sub(&haystack, &needle);
            sub_positions(&haystack, &needle).collect::<Vec<_>>() == all && find_sub(&haystack, &needle) == all.first().copied()
        }
    }

    #[test]
    fn long_haystacks_cross_the_vector_width() {
        let mut haystack = vec![b'a'; 300];
        haystack[17] = b'\n';
        haystack[64] = b'\n';
        haystack[299] = b'\n';
        assert_eq!(byte_positions(b'\n', &haystack).collect::<Vec<_>>(), [17, 64, 299]);
        assert_eq!(rfind_byte(b'\n', &haystack[..299]), Some(64));
        assert_eq!(find_sub(&haystack, b"a\na"), Some(16));
        assert_eq!(sub_positions(&haystack, b"a\n").collect::<Vec<_>>(), [16, 63, 298]);
    }
}
