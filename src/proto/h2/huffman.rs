//! HPACK's Huffman code (RFC 7541 Appendix B). The code is canonical — codes of one length are
//! consecutive, shorter codes come first, and symbols of one length are in order — so the
//! table is its code lengths alone; the codes and the decoder's per-length ranges are derived
//! from them at compile time (and checked against the RFC's codes in the tests).

/// Code length in bits of each symbol: the 256 octets, then EOS (256).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28,
    28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6,
    6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7,
    8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7,
    15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24,
    23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23,
    23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26,
    26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20,
    21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27,
    27, 27, 26, 30,
];

/// The longest code.
const MAX_LEN: usize = 30;
/// End of string: never in a string; its first bits pad the last octet.
const EOS: u16 = 256;

/// Per code length: the first code, how many codes, and where its symbols start in
/// [`Canonical::symbols`].
struct Canonical {
    codes: [u32; 257],
    first: [u32; MAX_LEN + 1],
    count: [u16; MAX_LEN + 1],
    offset: [u16; MAX_LEN + 1],
    /// The symbols ordered by (length, symbol).
    symbols: [u16; 257],
}

const fn canonical() -> Canonical {
    let mut c = Canonical {
        codes: [0; 257],
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        symbols: [0; 257],
    };
    let mut i = 0;
    while i < 257 {
        c.count[LENGTHS[i] as usize] += 1;
        i += 1;
    }
    // Codes of each length follow those of the length before, shifted one bit.
    let (mut code, mut at, mut len) = (0u32, 0u16, 1);
    while len <= MAX_LEN {
        code <<= 1;
        c.first[len] = code;
        c.offset[len] = at;
        code += c.count[len] as u32;
        at += c.count[len];
        len += 1;
    }
    let mut next = c.first;
    let mut placed = c.offset;
    let mut sym = 0;
    while sym < 257 {
        let len = LENGTHS[sym] as usize;
        c.codes[sym] = next[len];
        next[len] += 1;
        c.symbols[placed[len] as usize] = sym as u16;
        placed[len] += 1;
        sym += 1;
    }
    c
}

static CODE: Canonical = canonical();

/// Bytes `input` takes Huffman-coded.
pub fn encoded_len(input: &[u8]) -> usize {
    let bits: usize = input.iter().map(|&b| LENGTHS[b as usize] as usize).sum();
    bits.div_ceil(8)
}

/// Append `input` Huffman-coded, the last octet padded with EOS's first bits (ones).
pub fn encode(input: &[u8], out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u32);
    for &b in input {
        let len = LENGTHS[b as usize] as u32;
        acc = (acc << len) | CODE.codes[b as usize] as u64;
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
    }
}

/// Decode a Huffman-coded string a bit at a time, as RFC 7541 defines it: what [`decode`] is
/// tested against.
#[cfg(test)]
fn decode_bitwise(input: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in input {
        for shift in (0..8).rev() {
            code = (code << 1) | ((byte >> shift) & 1) as u32;
            len += 1;
            let first = CODE.first[len];
            let count = CODE.count[len] as u32;
            if code >= first && code - first < count {
                let sym = CODE.symbols[(CODE.offset[len] as u32 + code - first) as usize];
                if sym == EOS {
                    return None;
                }
                out.push(sym as u8);
                (code, len) = (0, 0);
            } else if len == MAX_LEN {
                return None;
            }
        }
    }
    (len <= 7 && code == (1 << len) - 1).then_some(())
}

/// Per 8-bit prefix, the symbol and length of the code of at most 8 bits it starts with
/// (length 0: the code is longer).
const fn lut8() -> [(u8, u8); 256] {
    let codes = canonical().codes;
    let mut t = [(0u8, 0u8); 256];
    let mut sym = 0;
    while sym < 256 {
        let len = LENGTHS[sym] as usize;
        if len <= 8 {
            let code = codes[sym] << (8 - len);
            let mut k = 0;
            while k < (1 << (8 - len)) {
                t[(code as usize) | k] = (sym as u8, len as u8);
                k += 1;
            }
        }
        sym += 1;
    }
    t
}
static LUT8: [(u8, u8); 256] = lut8();

/// Decode a Huffman-coded string: `None` when it holds EOS, a code that is not one, or padding
/// longer than 7 bits or not all ones (each a decoding error, RFC 7541 §5.2). A symbol of at
/// most 8 bits (the common ones) per table look-up; a longer one by its length, as canonical
/// codes allow.
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.reserve(input.len() * 8 / 5 + 1);
    let (mut acc, mut bits, mut i) = (0u64, 0u32, 0usize);
    loop {
        while bits <= 56 && i < input.len() {
            acc = (acc << 8) | input[i] as u64;
            bits += 8;
            i += 1;
        }
        if bits == 0 {
            return Some(());
        }
        // The next 8 bits, padded with ones past the end (EOS's prefix).
        let peek = if bits >= 8 {
            (acc >> (bits - 8)) as usize & 0xff
        } else {
            (((acc << (8 - bits)) as usize) | ((1 << (8 - bits)) - 1)) & 0xff
        };
        let (sym, len) = LUT8[peek];
        if len != 0 && u32::from(len) <= bits {
            out.push(sym);
            bits -= u32::from(len);
            acc &= (1u64 << bits) - 1;
            continue;
        }
        if len != 0 || bits < 8 {
            // Past the last whole code: at most 7 bits, all ones.
            return (bits <= 7 && acc == (1u64 << bits) - 1 && i == input.len()).then_some(());
        }
        // A code longer than 8 bits: by length, from 9.
        let mut l = 9usize;
        loop {
            if l as u32 > bits {
                return (bits <= 7 && acc == (1u64 << bits) - 1 && i == input.len()).then_some(());
            }
            let code = (acc >> (bits - l as u32)) as u32;
            let first = CODE.first[l];
            if code >= first && code - first < CODE.count[l] as u32 {
                let sym = CODE.symbols[(CODE.offset[l] as u32 + code - first) as usize];
                if sym == EOS {
                    return None;
                }
                out.push(sym as u8);
                bits -= l as u32;
                acc &= (1u64 << bits) - 1;
                break;
            }
            if l == MAX_LEN {
                return None;
            }
            l += 1;
        }
    }
}

/// The last few Huffman-coded strings a decoder met, and what they decode to: servers send the
/// same coded octets again and again (`server`, `content-type`, a `date` that changes once a
/// second), and the same octets decode the same way (the first decoding checked them). Found
/// by the profile of the h2c client against nginx: decoding its answers' three coded strings a
/// bit at a time was more than half the client's user-space instructions per request.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// (as sent, decoded), at most [`DECODED_KEPT`], the oldest replaced first.
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    next: usize,
}

/// Strings kept, and the longest kept (a longer one is decoded each time).
const DECODED_KEPT: usize = 8;
const DECODED_LONGEST: usize = 64;

impl Decoded {
    /// [`decode`] `raw` into `out` (emptied first), from what was kept when it was met before.
    pub fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
        out.clear();
        let keep = raw.len() <= DECODED_LONGEST;
        if let Some((_, plain)) = self.entries.iter().find(|(r, _)| keep && r.as_slice() == raw) {
            out.extend_from_slice(plain);
            return Some(());
        }
        decode(raw, out)?;
        if keep && self.entries.len() < DECODED_KEPT {
            self.entries.push((raw.to_vec(), out.clone()));
        } else if keep {
            let (r, plain) = &mut self.entries[self.next];
            r.clear();
            r.extend_from_slice(raw);
            plain.clear();
            plain.extend_from_slice(out);
            self.next = (self.next + 1) % DECODED_KEPT;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_codes_are_the_rfcs() {
        // A few of Appendix B's codes, of every length class.
        for (sym, code, len) in [
            (b'0' as usize, 0x0, 5),
            (b'a' as usize, 0x3, 5),
            (b' ' as usize, 0x14, 6),
            (b':' as usize, 0x5c, 7),
            (b'&' as usize, 0xf8, 8),
            (b'?' as usize, 0x3fc, 10),
            (0, 0x1ff8, 13),
            (b'\\' as usize, 0x7fff0, 19),
            (1, 0x7fffd8, 23),
            (10, 0x3ffffffc, 30),
            (255, 0x3ffffee, 26),
            (256, 0x3fffffff, 30),
        ] {
            assert_eq!((CODE.codes[sym], LENGTHS[sym]), (code, len), "symbol {sym}");
        }
        // The lengths make a complete prefix code (Kraft's sum is exactly 1).
        let kraft: u64 = LENGTHS.iter().map(|&l| 1u64 << (MAX_LEN - l as usize)).sum();
        assert_eq!(kraft, 1 << MAX_LEN);
    }

    #[test]
    fn every_octet_and_random_strings_come_back() {
        let all: Vec<u8> = (0..=255).collect();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut inputs = vec![all, b"www.example.com".to_vec(), vec![]];
        inputs.extend((0..500).map(|_| (0..rng.usize(0..64)).map(|_| rng.u8(..)).collect()));
        for input in inputs {
            let mut coded = Vec::new();
            encode(&input, &mut coded);
            assert_eq!(coded.len(), encoded_len(&input));
            let mut back = Vec::new();
            assert_eq!(decode(&coded, &mut back), Some(()), "{input:?}");
            assert_eq!(back, input);
        }
    }

    /// The table decoder against the bitwise one on 200,000 inputs: Huffman codes of random
    /// text (a quarter of them with a bit flipped) and random octets (half of them all ones:
    /// padding and EOS): the same strings, and the same refusals.
    #[test]
    fn the_table_decoder_agrees_with_the_bitwise_one() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..200_000 {
            let input: Vec<u8> = if rng.bool() {
                let text: Vec<u8> = (0..rng.usize(0..40))
                    .map(|_| if rng.u8(0..4) == 0 { rng.u8(..) } else { rng.u8(32..127) })
                    .collect();
                let mut coded = Vec::new();
                encode(&text, &mut coded);
                if rng.u8(0..4) == 0 && !coded.is_empty() {
                    let k = rng.usize(0..coded.len());
                    coded[k] ^= 1 << rng.u8(0..8);
                }
                coded
            } else {
                (0..rng.usize(0..12)).map(|_| if rng.bool() { 0xff } else { rng.u8(..) }).collect()
            };
            let (mut bitwise, mut table) = (Vec::new(), Vec::new());
            let said = decode_bitwise(&input, &mut bitwise);
            assert_eq!(decode(&input, &mut table), said, "{input:x?}");
            if said.is_some() {
                assert_eq!(table, bitwise, "{input:x?}");
            }
        }
    }

    #[test]
    fn the_rfcs_strings_and_bad_codes() {
        let mut coded = Vec::new();
        encode(b"www.example.com", &mut coded);
        assert_eq!(coded, [0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff]);
        let mut out = Vec::new();
        // EOS itself (30 ones, padded): an error.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut out), None);
        // Padding of 8 bits or more, and padding that is not ones.
        assert_eq!(decode(&[0x1f, 0xff], &mut out), None); // 'a' (00011) then 11 ones
        out.clear();
        assert_eq!(decode(&[0x1f], &mut out), Some(()));
        assert_eq!(out, b"a");
        assert_eq!(decode(&[0x18], &mut out), None); // 'a' then 000
    }
}
