//! HPACK (RFC 7541), HTTP/2's header compression, by hand: the [`Encoder`] a client writes its
//! requests with, and a full [`Decoder`] (dynamic table, Huffman, size updates) for what
//! servers answer. Both sides keep the same dynamic table, so the bytes of a request depend on
//! what went before on its connection: the first request inserts its headers, the next ones
//! name them by index — which is why HTTP/2's cost per request is reported first request and
//! steady state apart.
//!
//! The encoder does what common clients do (nghttp2, Go's): a header found whole in a table is
//! one index; otherwise it is a literal *with incremental indexing* naming a table's entry for
//! its name when one has it, the static table's first; strings are Huffman-coded when that is
//! no longer (and `huffman` is on). It reproduces the RFC's Appendix C examples byte for byte.

use super::huffman;

/// A header block that breaks RFC 7541: a `COMPRESSION_ERROR` for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("HPACK: header block cut short")]
    Truncated,
    #[error("HPACK: integer too large")]
    Integer,
    #[error("HPACK: index {0} is in neither table")]
    Index(u64),
    #[error("HPACK: invalid Huffman string")]
    Huffman,
    #[error("HPACK: dynamic table size update above the size allowed")]
    TableSize,
    #[error("HPACK: dynamic table size update after a header field")]
    LateSizeUpdate,
    #[error("HPACK: header list larger than the limit")]
    TooLarge,
}

/// The static table (Appendix A): index i is `STATIC[i - 1]`.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// SETTINGS_HEADER_TABLE_SIZE's initial value: each side's dynamic table until told otherwise.
pub const DEFAULT_TABLE_SIZE: usize = 4096;
/// What an entry costs in a table beyond its name and value (§4.1).
const ENTRY_OVERHEAD: usize = 32;

/// A table entry: where its name starts in the table's arena (counted from the arena's first
/// octet ever), the name's length and the value's (the value follows the name).
type Entry = (usize, u32, u32);

/// A dynamic table (§2.3.2): newest first, evicted oldest first to stay within `max` bytes.
/// The entries, oldest first, and their octets live in two vectors that grow at the end and
/// drop from the front: evicting moves an index, and the dead fronts are cut off together once
/// they are the larger part — so inserting and evicting allocate nothing once they have grown
/// (a `Box` for each name and value cost eight allocations and eight frees per nginx answer),
/// and neither wraps around as a ring would.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Oldest first; those before `first` are evicted.
    entries: Vec<Entry>,
    first: usize,
    arena: Vec<u8>,
    /// Octets dropped from the arena's front (an entry at `start` is at `start - dropped`), and
    /// those of the evicted entries still at its front.
    dropped: usize,
    dead: usize,
    size: usize,
    max: usize,
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.size == other.size
            && self.max == other.max
            && self.len() == other.len()
            && (0..self.len()).all(|i| self.entry(i) == other.entry(i))
    }
}
impl Eq for Table {}

/// The fewest dead entries cut off at once.
const COMPACT_ENTRIES: usize = 64;

impl Table {
    pub fn new(max: usize) -> Table {
        Table { max, ..Table::default() }
    }

    /// Its size as the RFC counts it: each entry's name and value plus 32.
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn len(&self) -> usize {
        self.entries.len() - self.first
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict(0);
    }

    /// The entry `i` places from the newest (0).
    #[inline]
    fn entry(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let k = self.entries.len().checked_sub(i + 1).filter(|&k| k >= self.first)?;
        let (start, n, v) = self.entries[k];
        let at = start - self.dropped;
        let (n, v) = (n as usize, v as usize);
        Some((&self.arena[at..at + n], &self.arena[at + n..at + n + v]))
    }

    /// Make room for `n` bytes.
    #[inline]
    fn evict(&mut self, n: usize) {
        if self.size + n > self.max {
            self.evict_more(n);
        }
    }

    #[inline(never)]
    fn evict_more(&mut self, n: usize) {
        while self.size + n > self.max && self.first < self.entries.len() {
            let (_, name, value) = self.entries[self.first];
            self.first += 1;
            self.size -= ENTRY_OVERHEAD + name as usize + value as usize;
            self.dead += name as usize + value as usize;
        }
        // Cut the dead fronts off once they are the larger part (64 entries, or the table's
        // size in octets, at least): each vector holds about twice what is live at most.
        if self.first >= self.len().max(COMPACT_ENTRIES) || self.dead >= self.max.max(1024) || self.is_empty()
        {
            self.entries.drain(..self.first);
            self.first = 0;
            self.arena.drain(..self.dead);
            self.dropped += self.dead;
            self.dead = 0;
        }
    }

    /// Add an entry; one larger than the whole table empties it and is not kept (§4.4).
    #[inline]
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        self.append(&[name, value], name.len());
    }

    /// [`insert`](Self::insert) a name and its value that lie together: `field[..name]`, and
    /// the rest.
    #[inline]
    fn insert_joined(&mut self, field: &[u8], name: usize) {
        self.append(&[field], name);
    }

    /// Add the entry whose octets are `parts` in order, its name their first `name`.
    #[inline]
    fn append(&mut self, parts: &[&[u8]], name: usize) {
        let octets: usize = parts.iter().map(|p| p.len()).sum();
        let n = ENTRY_OVERHEAD + octets;
        self.evict(n);
        if n <= self.max {
            let start = self.dropped + self.arena.len();
            for part in parts {
                self.arena.extend_from_slice(part);
            }
            self.entries.push((start, name as u32, (octets - name) as u32));
            self.size += n;
        }
    }

    /// The field at `index` of the two tables (static first, from 1).
    fn get(&self, index: u64) -> Result<(&[u8], &[u8]), Error> {
        match index {
            1..=61 => {
                let (n, v) = STATIC[index as usize - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => index
                .checked_sub(62)
                .and_then(|i| self.entry(usize::try_from(i).ok()?))
                .ok_or(Error::Index(index)),
        }
    }

    /// The index of `name: value` whole, or else of an entry with `name`, static table first.
    fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut by_name = None;
        for (i, (n, v)) in STATIC.iter().enumerate() {
            if n.as_bytes() == name {
                if v.as_bytes() == value {
                    return (Some(i + 1), None);
                }
                by_name.get_or_insert(i + 1);
            }
        }
        for i in 0..self.len() {
            let (n, v) = self.entry(i).expect("in range");
            if n == name {
                if v == value {
                    return (Some(i + 62), None);
                }
                by_name.get_or_insert(i + 62);
            }
        }
        (None, by_name)
    }
}

/// Append `value` with an N-bit prefix (§5.1), the first octet's other bits being `first`.
pub fn encode_int(out: &mut Vec<u8>, first: u8, prefix: u8, value: u64) {
    let max = (1u64 << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push(0x80 | (rest % 128) as u8);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// An integer with an N-bit prefix at the start of `input`, and the octets it took. Values
/// past 2^32 are refused (no length or index of a real block comes near).
pub fn decode_int(input: &[u8], prefix: u8) -> Result<(u64, usize), Error> {
    let max = (1u64 << prefix) - 1;
    let first = u64::from(*input.first().ok_or(Error::Truncated)?) & max;
    if first < max {
        return Ok((first, 1));
    }
    let mut value = max;
    for (i, &b) in input[1..].iter().enumerate() {
        let shift = 7 * i as u32;
        if shift > 28 {
            return Err(Error::Integer);
        }
        value += u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return if value > u64::from(u32::MAX) { Err(Error::Integer) } else { Ok((value, i + 2)) };
        }
    }
    Err(Error::Truncated)
}

/// Append a string literal (§5.2): Huffman-coded when `huffman` and that is no longer (as the
/// RFC's examples do: `307` is three octets either way, and coded).
fn encode_str(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
    encode_str_prefixed(out, 0, 7, s, huffman);
}

/// The same with the length's prefix `prefix` bits long, the Huffman flag the bit above it, and
/// the first octet's bits above that `first` (QPACK's literal names: a 3-bit prefix).
pub fn encode_str_prefixed(out: &mut Vec<u8>, first: u8, prefix: u8, s: &[u8], huffman: bool) {
    let coded = huffman::encoded_len(s);
    if huffman && coded <= s.len() {
        encode_int(out, first | 1 << prefix, prefix, coded as u64);
        huffman::encode(s, out);
    } else {
        encode_int(out, first, prefix, s.len() as u64);
        out.extend_from_slice(s);
    }
}

/// The string literal at the start of `input`, its length's prefix `prefix` bits long and the
/// Huffman flag the bit above it: whether it is Huffman-coded, its octets as sent, and the
/// octets it took in all.
fn literal(input: &[u8], prefix: u8) -> Result<(bool, &[u8], usize), Error> {
    let huffman = input.first().is_some_and(|b| b & (1 << prefix) != 0);
    let (len, at) = decode_int(input, prefix)?;
    let end = at.checked_add(len as usize).filter(|&e| e <= input.len()).ok_or(Error::Truncated)?;
    Ok((huffman, &input[at..end], end))
}

/// A string literal at the start of `input` (its prefix as [`literal`]'s) decoded into `out`,
/// and the octets it took.
pub fn decode_str_prefixed(input: &[u8], prefix: u8, out: &mut Vec<u8>) -> Result<usize, Error> {
    let (huffman, raw, end) = literal(input, prefix)?;
    out.clear();
    if huffman {
        huffman::decode(raw, out).ok_or(Error::Huffman)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(end)
}

/// A client's header compression for one connection.
#[derive(Debug, Clone)]
pub struct Encoder {
    table: Table,
    huffman: bool,
    /// Table sizes the peer asked for (its SETTINGS_HEADER_TABLE_SIZE) since the last block:
    /// the smallest and the last, announced at the start of the next block (§4.2: the
    /// smallest first, when it was lower than the last).
    resize: Option<(usize, usize)>,
    /// Changes to the table so far (inserts, resizes): a block encoded without any, while
    /// none happened since, would be encoded again octet for octet ([`Encoder::state`]).
    changes: u64,
}

impl Encoder {
    pub fn new(huffman: bool) -> Encoder {
        Encoder { table: Table::new(DEFAULT_TABLE_SIZE), huffman, resize: None, changes: 0 }
    }

    /// The state the next block depends on: equal before two blocks of the same fields, and
    /// unchanged by the first, means the second is the first's octets again (a caller may
    /// keep them). `None` while a size update waits to be announced.
    pub fn state(&self) -> Option<u64> {
        self.resize.is_none().then_some(self.changes)
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the table never grows past it (it may only
    /// shrink below the default; a larger one is not used).
    pub fn peer_table_size(&mut self, max: usize) {
        let max = max.min(DEFAULT_TABLE_SIZE);
        if max != self.table.max || self.resize.is_some() {
            self.changes += 1;
            self.table.set_max(max);
            let least = self.resize.map_or(max, |(least, _)| least.min(max));
            self.resize = Some((least, max));
        }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Append the header block of `fields` (names in lower case, as HTTP/2 requires).
    pub fn encode<'a>(&mut self, fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) {
        if let Some((least, last)) = self.resize.take() {
            if least < last {
                encode_int(out, 0x20, 5, least as u64);
            }
            encode_int(out, 0x20, 5, last as u64);
        }
        for (name, value) in fields {
            // A field larger than the whole table would empty it and stay in it alone, so
            // the next request finds nothing indexed (§4.4): it goes as a literal without
            // indexing (0000xxxx), the table kept for the others.
            let fits = ENTRY_OVERHEAD + name.len() + value.len() <= self.table.max;
            match self.table.find(name, value) {
                (Some(index), _) => encode_int(out, 0x80, 7, index as u64),
                (None, Some(index)) if !fits => {
                    encode_int(out, 0x00, 4, index as u64);
                    encode_str(out, value, self.huffman);
                }
                (None, None) if !fits => {
                    out.push(0x00);
                    encode_str(out, name, self.huffman);
                    encode_str(out, value, self.huffman);
                }
                (None, Some(index)) => {
                    encode_int(out, 0x40, 6, index as u64);
                    encode_str(out, value, self.huffman);
                    self.table.insert(name, value);
                    self.changes += 1;
                }
                (None, None) => {
                    out.push(0x40);
                    encode_str(out, name, self.huffman);
                    encode_str(out, value, self.huffman);
                    self.table.insert(name, value);
                    self.changes += 1;
                }
            }
        }
    }
}

/// The last header block an [`Encoder`] made without changing its table, with the fields it
/// encodes and the encoder's state then: the same fields in the same state are the same
/// octets, copied instead of encoded (a server's answers repeat their fields; finding each in
/// the tables was a quarter of `serve h2`'s instructions). Kept in place: nothing allocated
/// once warm, and nothing kept past [`KEPT_MAX`] octets.
#[derive(Debug, Clone, Default)]
pub struct LastBlock {
    state: Option<u64>,
    /// Each name and value after its length (two octets).
    fields: Vec<u8>,
    block: Vec<u8>,
}

/// The most a [`LastBlock`] keeps of fields and block together, octets.
pub const KEPT_MAX: usize = 512;

impl LastBlock {
    /// The block of `fields` if it is the one kept and the encoder is still in its state.
    pub fn get<'a>(&self, state: Option<u64>, fields: &[(&'a [u8], &'a [u8])]) -> Option<&[u8]> {
        if state.is_none() || state != self.state {
            return None;
        }
        let mut rest = &self.fields[..];
        for s in fields.iter().flat_map(|&(name, value)| [name, value]) {
            let (len, tail) = rest.split_first_chunk::<2>()?;
            let (kept, tail) = tail.split_at_checked(usize::from(u16::from_be_bytes(*len)))?;
            if kept != s {
                return None;
            }
            rest = tail;
        }
        rest.is_empty().then_some(&self.block[..])
    }

    /// Keep `block`, encoded from `fields` in state `before`, if encoding it left the encoder
    /// in the same state (`after`); otherwise keep nothing.
    pub fn keep(&mut self, before: Option<u64>, after: Option<u64>, fields: &[(&[u8], &[u8])], block: &[u8]) {
        self.state = None;
        let size = block.len() + fields.iter().map(|(n, v)| 4 + n.len() + v.len()).sum::<usize>();
        if before.is_none() || before != after || size > KEPT_MAX {
            return;
        }
        self.fields.clear();
        for s in fields.iter().flat_map(|&(name, value)| [name, value]) {
            self.fields.extend_from_slice(&(s.len() as u16).to_be_bytes()); // ≤ KEPT_MAX
            self.fields.extend_from_slice(s);
        }
        self.block.clear();
        self.block.extend_from_slice(block);
        self.state = before;
    }
}

/// The other side of a connection's header compression: every representation (§6).
#[derive(Debug, Clone)]
pub struct Decoder {
    table: Table,
    /// The table size this side allows (its own SETTINGS_HEADER_TABLE_SIZE).
    allowed: usize,
    /// The most a decoded header list may hold, counted as the RFC counts table entries (the
    /// SETTINGS_MAX_HEADER_LIST_SIZE this side announces).
    max_list: usize,
    /// A literal's name and value, kept between blocks: nothing allocated per block.
    scratch: (Vec<u8>, Vec<u8>),
    decoded: huffman::Decoded,
    replay: Replay,
    /// Whether blocks are replayed ([`Decoder::without_replay`]: each decoded in full).
    replays: bool,
}

/// The most the decoder's scratch vectors keep between blocks, octets.
const SCRATCH_KEPT: usize = 4096;

/// The last header block, with what it decoded to, if it named nothing in the dynamic table
/// or inserted nothing: the same octets again decode to the same fields and insert the same
/// entries — whatever the dynamic table holds, or, for a block that names its entries, while
/// nothing but that block came since (it leaves them where they were) — so they are replayed,
/// not decoded. A server's answers repeat their block (nginx's changes with its `date`, once a
/// second), and a client's requests theirs (each naming the entries the first one inserted):
/// the Huffman strings, the integers and the list's bound included.
#[derive(Debug, Clone, Default)]
struct Replay {
    block: Vec<u8>,
    /// The fields' octets (each name, then its value), and per field the two lengths and
    /// whether it went into the dynamic table.
    octets: Vec<u8>,
    fields: Vec<(u32, u32, bool)>,
    /// The table size of the entries it inserts, and of all it inserted since it was
    /// recorded (the recording's included).
    inserted: usize,
    repeated: usize,
    /// `block` decoded whole and may be replayed.
    valid: bool,
    /// Which record this is: each new one takes the next number, from 1.
    serial: u64,
}

/// The largest block, and the most field octets, a decoder keeps to replay.
const REPLAY_BLOCK: usize = 512;
const REPLAY_OCTETS: usize = 2048;

impl Replay {
    /// Start recording `block` (when it is small enough to keep).
    fn start(&mut self, block: &[u8]) -> bool {
        self.valid = false;
        self.octets.clear();
        self.fields.clear();
        self.inserted = 0;
        block.len() <= REPLAY_BLOCK
    }

    /// One decoded field; `false` once the record grew past its bound.
    fn push(&mut self, name: &[u8], value: &[u8], inserted: bool) -> bool {
        if self.octets.len() + name.len() + value.len() > REPLAY_OCTETS {
            return false;
        }
        self.octets.extend_from_slice(name);
        self.octets.extend_from_slice(value);
        self.fields.push((name.len() as u32, value.len() as u32, inserted));
        if inserted {
            self.inserted += ENTRY_OVERHEAD + name.len() + value.len();
        }
        true
    }

    fn finish(&mut self, block: &[u8]) {
        self.block.clear();
        self.block.extend_from_slice(block);
        self.valid = true;
        self.repeated = self.inserted;
        self.serial += 1;
    }

    /// The recorded block's fields, each given to `field` (when there is one) and inserted
    /// where it was.
    fn run(&mut self, table: &mut Table, mut field: Option<&mut impl FnMut(&[u8], &[u8])>) {
        // A table holds the newest entries that fit together (each insert evicts the oldest
        // until the new one fits), whatever came before them. Once this block's inserts since
        // it was recorded (nothing else touched the table: any other block ends the record)
        // are more than the table holds, it holds only those — the same entries in the same
        // order after one more round of them: the table is left as it is.
        let steady = self.repeated > table.max;
        self.repeated = self.repeated.saturating_add(self.inserted);
        if steady && field.is_none() {
            return;
        }
        // Room for all its entries at once: evicting the oldest until they fit together is what
        // inserting them one by one does, when they fit together at all (the newest are not
        // evicted then; `inserted` counts them as the table does).
        if self.inserted <= table.max && !steady {
            table.evict(self.inserted);
        }
        let mut at = 0;
        for &(n, v, inserted) in &self.fields {
            let (n, v) = (n as usize, v as usize);
            let (name, value) = (&self.octets[at..at + n], &self.octets[at + n..at + n + v]);
            if let Some(field) = field.as_mut() {
                field(name, value);
            }
            if inserted && !steady {
                table.insert_joined(&self.octets[at..at + n + v], n);
            }
            at += n + v;
        }
    }
}

impl Decoder {
    /// The string literal at the start of `input` decoded into `out`; the octets it took.
    fn string(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let (huffman, raw, end) = literal(input, 7)?;
        out.clear();
        match huffman {
            true => self.decoded.decode(raw, out).ok_or(Error::Huffman)?,
            false => out.extend_from_slice(raw),
        }
        Ok(end)
    }

    pub fn new(allowed: usize, max_list: usize) -> Decoder {
        Decoder {
            table: Table::new(allowed),
            allowed,
            max_list,
            scratch: Default::default(),
            decoded: huffman::Decoded::default(),
            replay: Replay::default(),
            replays: true,
        }
    }

    /// A decoder that decodes every block in full, to check the replay against.
    #[doc(hidden)]
    pub fn without_replay(mut self) -> Decoder {
        self.replays = false;
        self
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Decode one whole header block, calling `field` with each name and value in order.
    pub fn decode(&mut self, block: &[u8], field: impl FnMut(&[u8], &[u8])) -> Result<(), Error> {
        self.decode_known(block, 0, field).map(|_| ())
    }

    /// [`decode`](Self::decode), except that a block that replays the record numbered `known`
    /// gives no fields: the caller kept what it made of them the last time. The number of the
    /// record whose fields the block holds (given or not), or `None` when it is not one a
    /// record keeps: a caller keeps what it makes of `Some(n)`'s fields, to know them again.
    pub fn decode_known(
        &mut self,
        block: &[u8],
        known: u64,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<Option<u64>, Error> {
        if self.replay.valid && self.replay.block == block {
            let serial = self.replay.serial;
            let field = (serial != known).then_some(&mut field);
            self.replay.run(&mut self.table, field);
            return Ok(Some(serial));
        }
        let (mut name, mut value) = std::mem::take(&mut self.scratch);
        let decoded = self.decode_with(block, &mut field, &mut name, &mut value);
        // Kept for the next block unless a large literal grew them: a connection does not hold
        // the largest it ever met.
        if name.capacity() + value.capacity() <= SCRATCH_KEPT {
            self.scratch = (name, value);
        }
        decoded.map(|()| self.replay.valid.then_some(self.replay.serial))
    }

    /// [`decode`](Self::decode) with the scratch vectors lent.
    fn decode_with(
        &mut self,
        block: &[u8],
        field: &mut impl FnMut(&[u8], &[u8]),
        name: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let (mut at, mut fields, mut list) = (0, 0usize, 0usize);
        // Recorded to replay while it changes no size, and kept unless it both names entries of
        // the dynamic table and inserts some: only a block that inserts nothing leaves the
        // entries it names where they were (nothing else touches the table before its replay:
        // any other block ends the record).
        let mut recording = self.replay.start(block) && self.replays;
        let mut names_dynamic = false;
        while at < block.len() {
            let rest = &block[at..];
            let b = rest[0];
            if b & 0xe0 == 0x20 {
                // A dynamic table size update: only before the first field.
                let (size, n) = decode_int(rest, 5)?;
                if fields > 0 {
                    return Err(Error::LateSizeUpdate);
                }
                if size > self.allowed as u64 {
                    return Err(Error::TableSize);
                }
                self.table.set_max(size as usize);
                recording = false;
                at += n;
                continue;
            }
            let indexing = b & 0xc0 == 0x40;
            if b & 0x80 != 0 {
                let (index, n) = decode_int(rest, 7)?;
                let (n_, v_) = self.table.get(index)?;
                list += ENTRY_OVERHEAD + n_.len() + v_.len();
                if list > self.max_list {
                    return Err(Error::TooLarge);
                }
                field(n_, v_);
                names_dynamic |= index > STATIC.len() as u64;
                recording = recording && self.replay.push(n_, v_, false);
                at += n;
            } else {
                // A literal: with incremental indexing (6-bit name index), or without indexing
                // or never indexed (4-bit).
                let (index, mut n) = decode_int(rest, if indexing { 6 } else { 4 })?;
                if index == 0 {
                    n += self.string(&rest[n..], name)?;
                } else {
                    let (known, _) = self.table.get(index)?;
                    name.clear();
                    name.extend_from_slice(known);
                }
                n += self.string(&rest[n..], value)?;
                list += ENTRY_OVERHEAD + name.len() + value.len();
                if list > self.max_list {
                    return Err(Error::TooLarge);
                }
                field(name, value);
                if indexing {
                    self.table.insert(name, value);
                }
                names_dynamic |= index > STATIC.len() as u64;
                recording = recording && self.replay.push(name, value, indexing);
                at += n;
            }
            fields += 1;
        }
        if recording && !(names_dynamic && self.replay.inserted > 0) {
            self.replay.finish(block);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
